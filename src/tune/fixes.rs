//! The fixes `jitterlab tune` measures: one row each in [`FIXES`], as the wake methods and
//! doctor's checks are. A row says what the fix changes and why it may help, which doctor
//! check advises it, and how to find, on this machine, whether it applies and what it would
//! change ([`Probe`]). A fix that needs a reboot is listed with the way to measure it.
//!
//! What a fix changes is either kernel files, written for its arm through the journalled
//! settings of session/settings.rs, or one of the run's own options ([`PlanChange`]), which the
//! session already restores on every exit path. Nothing here writes anything.

use crate::cpulist::format_cpu_list;
use crate::session::settings::{Setting, read_value};
use std::path::{Path, PathBuf};

/// What the probes read: the system (or a fixture tree) and the CPUs.
#[derive(Debug, Clone)]
pub(crate) struct Ctx {
    /// `/` on a real system.
    pub root: PathBuf,
    /// The measured CPUs.
    pub measured: Vec<usize>,
    /// The online CPUs.
    pub online: Vec<usize>,
    /// A PM QoS request of another process in force now, in words (its value and holders):
    /// the pm-qos fix cannot be measured then, as every arm would run with it (S1).
    pub(crate) pm_qos_elsewhere: Option<String>,
}

impl Ctx {
    /// The online CPUs that are not measured: where the fixes move work to.
    pub(crate) fn housekeeping(&self) -> Vec<usize> {
        self.online
            .iter()
            .copied()
            .filter(|c| !self.measured.contains(c))
            .collect()
    }

    fn read(&self, file: &str) -> Option<String> {
        read_value(&self.root, file).ok()
    }
}

/// One of the run's options that a fix turns on for its arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PlanChange {
    /// `--pm-qos 0`: the CPUs kept out of deep idle states through /dev/cpu_dma_latency.
    PmQos,
    /// `--cpuset-partition` on cgroup v2: the measured CPUs taken from every other cgroup.
    CpusetPartition,
}

/// What a fix changes in its arm.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Change {
    Settings(Vec<Setting>),
    Plan(PlanChange),
}

/// What a probe found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Probe {
    /// The fix can be measured here: what it changes, and what it is now (for the table).
    Applies { change: Change, now: String },
    /// Nothing to change here, and why (already done, no such thing on this machine).
    NotApplicable(String),
    /// Needs a reboot or another kernel: how to measure it instead.
    NeedsReboot(String),
}

/// One fix.
#[derive(Debug)]
pub(crate) struct Fix {
    /// Its name on the command line (`--fixes`) and in the table.
    pub name: &'static str,
    /// What it changes and why that may lower latency.
    pub what: &'static str,
    /// The doctor check that advises it ("" for none).
    #[cfg_attr(
        not(test),
        expect(
            dead_code,
            reason = "dead since pub(crate) (issue 41 sweep): read by unit tests only; tune's owner removes it or reads it"
        )
    )]
    pub(crate) doctor_check: &'static str,
    pub probe: fn(&Ctx) -> Probe,
}

/// Every fix, in the order the table lists them.
pub(crate) const FIXES: &[Fix] = &[
    Fix {
        name: "irq-affinity",
        what: "device interrupts moved to the CPUs not measured: a handler run on a measured CPU delays its thread by the handler's time",
        doctor_check: "irq.affinity",
        probe: irq_affinity,
    },
    Fix {
        name: "rt-throttling",
        what: "RT throttling off (kernel.sched_rt_runtime_us = -1): real-time tasks are not stopped for the rest of each period after 95 % of it",
        doctor_check: "scheduling.rt_throttling",
        probe: rt_throttling,
    },
    Fix {
        name: "pm-qos",
        what: "the CPUs kept out of deep idle states (PM QoS 0 us through /dev/cpu_dma_latency): waking from one takes up to its exit latency",
        doctor_check: "cpu.idle_states",
        probe: pm_qos,
    },
    Fix {
        name: "timer-migration",
        what: "timer migration off (kernel.timer_migration = 0): a timer armed on a CPU expires there, not on a CPU that may be busy",
        doctor_check: "kernel.timer_migration",
        probe: timer_migration,
    },
    Fix {
        name: "workqueues",
        what: "unbound workqueues and writeback kept to the CPUs not measured (their cpumask): kernel work items no longer run on a measured CPU",
        doctor_check: "",
        probe: workqueues,
    },
    Fix {
        name: "cpuset",
        what: "the measured CPUs taken from every other task (a cgroup v2 isolated partition, `--cpuset-partition`)",
        doctor_check: "",
        probe: cpuset,
    },
    Fix {
        name: "nmi-watchdog",
        what: "the NMI (hard-lockup) watchdog off (kernel.nmi_watchdog = 0): its perf-counter NMI fires on every CPU every few seconds, whatever runs there",
        doctor_check: "kernel.watchdogs",
        probe: nmi_watchdog,
    },
    Fix {
        name: "soft-watchdog",
        what: "the soft-lockup watchdog off (kernel.soft_watchdog = 0): its hrtimer and stopper work run on every CPU every few seconds",
        doctor_check: "kernel.watchdogs",
        probe: soft_watchdog,
    },
    Fix {
        name: "thp",
        what: "transparent huge page defragmentation off (defrag = never): a page fault no longer compacts memory to build a huge page",
        doctor_check: "memory.thp",
        probe: thp,
    },
    Fix {
        name: "ksm",
        what: "KSM stopped and its pages unmerged (ksm/run = 2): ksmd no longer scans, and no write to a merged page faults",
        doctor_check: "memory.ksm",
        probe: ksm,
    },
    Fix {
        name: "vmstat",
        what: "the per-CPU VM statistics folded every 10 s instead of every second (vm.stat_interval = 10): vmstat_update runs less often on each CPU",
        doctor_check: "",
        probe: vmstat,
    },
    Fix {
        name: "isolation",
        what: "the measured CPUs isolated at boot (isolcpus=, nohz_full=, rcu_nocbs=): no scheduler balancing, no tick, no RCU callbacks there",
        doctor_check: "kernel.isolation",
        probe: isolation,
    },
    Fix {
        name: "preempt-rt",
        what: "a PREEMPT_RT kernel: interrupt handlers and softirqs in threads, sleeping spinlocks, priority inheritance",
        doctor_check: "kernel.preemption",
        probe: preempt_rt,
    },
];

/// The fix named `name`.
pub(crate) fn find(name: &str) -> Option<&'static Fix> {
    FIXES.iter().find(|f| f.name == name)
}

fn settings(settings: Vec<Setting>, now: String) -> Probe {
    Probe::Applies {
        change: Change::Settings(settings),
        now,
    }
}

/// A sysctl that is set to `value` by the fix: applicable when it is there and not already so.
fn sysctl(ctx: &Ctx, file: &str, value: &str, already: &str) -> Probe {
    match ctx.read(file) {
        None => Probe::NotApplicable(format!("this kernel has no /{file}")),
        Some(now) if now == value => Probe::NotApplicable(already.to_string()),
        Some(now) => settings(vec![Setting::new(file, value)], format!("/{file} = {now}")),
    }
}

fn irq_affinity(ctx: &Ctx) -> Probe {
    let housekeeping = ctx.housekeeping();
    if housekeeping.is_empty() {
        return Probe::NotApplicable(
            "every online CPU is measured: there is no CPU to move interrupts to".into(),
        );
    }
    let Ok(entries) = std::fs::read_dir(ctx.root.join("proc/irq")) else {
        return Probe::NotApplicable("no /proc/irq".into());
    };
    let mut irqs: Vec<u32> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    irqs.sort_unstable();
    let target = format_cpu_list(&housekeeping);
    let mut moved = Vec::new();
    let cpus_of = |file: String| {
        ctx.read(&file)
            .filter(|t| !t.is_empty())
            .and_then(|t| crate::cpulist::parse_cpu_list(&t).ok())
    };
    let measured = |cpus: &[usize]| cpus.iter().any(|c| ctx.measured.contains(c));
    for irq in irqs {
        let requested = cpus_of(format!("proc/irq/{irq}/smp_affinity_list"));
        let effective = cpus_of(format!("proc/irq/{irq}/effective_affinity_list"));
        let pinned_here = requested
            .as_deref()
            .is_some_and(|r| r.iter().all(|c| ctx.measured.contains(c)));
        match (effective, requested) {
            (Some(e), _) if measured(&e) => moved.push((irq, format_cpu_list(&e))),
            // x86 applies a new affinity at the interrupt's next arrival: one just pinned to
            // measured CPUs shows its old CPU as effective until it fires, and goes there.
            (_, Some(r)) if pinned_here => {
                moved.push((
                    irq,
                    format!("{} (pinned, not yet moved)", format_cpu_list(&r)),
                ));
            }
            (None, Some(r)) if measured(&r) => moved.push((irq, format_cpu_list(&r))),
            _ => {}
        }
    }
    if moved.is_empty() {
        return Probe::NotApplicable(format!(
            "no device interrupt is delivered to CPUs {}",
            format_cpu_list(&ctx.measured)
        ));
    }
    let now = moved
        .iter()
        .map(|(irq, cpus)| format!("{irq} on {cpus}"))
        .collect::<Vec<_>>()
        .join(", ");
    // A per-CPU or managed interrupt refuses a new affinity: that is the kernel's to keep.
    let change = moved
        .iter()
        .map(|(irq, _)| Setting {
            may_refuse: true,
            ..Setting::new(format!("proc/irq/{irq}/smp_affinity_list"), target.clone())
        })
        .collect();
    settings(change, format!("interrupts {now}"))
}

fn rt_throttling(ctx: &Ctx) -> Probe {
    sysctl(
        ctx,
        "proc/sys/kernel/sched_rt_runtime_us",
        "-1",
        "RT throttling is already off (sched_rt_runtime_us = -1)",
    )
}

fn pm_qos(ctx: &Ctx) -> Probe {
    let driver = ctx.read("sys/devices/system/cpu/cpuidle/current_driver");
    if let Some(held) = &ctx.pm_qos_elsewhere {
        return Probe::NotApplicable(format!(
            "{held}: every arm, the baseline's too, would be measured with it in force (PM QoS is the whole machine's), so the fix's effect cannot be; measure it when no other process holds {}",
            crate::session::pmqos::DEVICE
        ));
    }
    match driver.as_deref() {
        None | Some("none") | Some("") => Probe::NotApplicable(
            "no cpuidle driver: the CPUs have no idle states for PM QoS to keep them out of".into(),
        ),
        Some(driver) => Probe::Applies {
            change: Change::Plan(PlanChange::PmQos),
            now: format!("cpuidle driver {driver}, PM QoS not held"),
        },
    }
}

fn timer_migration(ctx: &Ctx) -> Probe {
    sysctl(
        ctx,
        "proc/sys/kernel/timer_migration",
        "0",
        "timer migration is already off",
    )
}

fn workqueues(ctx: &Ctx) -> Probe {
    let housekeeping = ctx.housekeeping();
    if housekeeping.is_empty() {
        return Probe::NotApplicable("every online CPU is measured".into());
    }
    let mask = hex_mask(&housekeeping);
    let mut change = Vec::new();
    let mut now = Vec::new();
    for file in [
        "sys/devices/virtual/workqueue/cpumask",
        "sys/devices/virtual/workqueue/writeback/cpumask",
    ] {
        let Some(value) = ctx.read(file) else {
            continue;
        };
        let covers_measured =
            parse_hex_mask(&value).is_none_or(|cpus| cpus.iter().any(|c| ctx.measured.contains(c)));
        if covers_measured {
            now.push(format!("/{file} = {value}"));
            change.push(Setting::new(file, mask.clone()));
        }
    }
    match change.is_empty() {
        true => Probe::NotApplicable(
            "the workqueues' cpumasks already leave the measured CPUs out (or are not there)"
                .into(),
        ),
        false => settings(change, now.join(", ")),
    }
}

fn cpuset(ctx: &Ctx) -> Probe {
    let v2 = ctx
        .read("sys/fs/cgroup/cgroup.controllers")
        .is_some_and(|c| c.split_whitespace().any(|w| w == "cpuset"));
    match v2 {
        true => Probe::Applies {
            change: Change::Plan(PlanChange::CpusetPartition),
            now: "the measured CPUs shared with every cgroup".into(),
        },
        false => Probe::NotApplicable(
            "no cgroup v2 cpuset controller: a v1 cpuset does not take the CPUs from other tasks (move them yourself, or boot with isolcpus=)".into(),
        ),
    }
}

/// A watchdog, each its own row: measured apart, each one's cost is its own; one that is
/// already off is not applicable.
fn watchdog(ctx: &Ctx, file: &str, which: &str) -> Probe {
    match ctx.read(file) {
        None => Probe::NotApplicable(format!("this kernel has no /{file}")),
        Some(v) if v == "0" => {
            Probe::NotApplicable(format!("the {which} watchdog is already off (/{file} = 0)"))
        }
        Some(v) => settings(vec![Setting::new(file, "0")], format!("/{file} = {v}")),
    }
}

fn nmi_watchdog(ctx: &Ctx) -> Probe {
    watchdog(ctx, "proc/sys/kernel/nmi_watchdog", "NMI")
}

fn soft_watchdog(ctx: &Ctx) -> Probe {
    watchdog(ctx, "proc/sys/kernel/soft_watchdog", "soft-lockup")
}

fn thp(ctx: &Ctx) -> Probe {
    sysctl(
        ctx,
        "sys/kernel/mm/transparent_hugepage/defrag",
        "never",
        "transparent huge page defragmentation is already off",
    )
}

fn ksm(ctx: &Ctx) -> Probe {
    match ctx.read("sys/kernel/mm/ksm/run") {
        None => Probe::NotApplicable("this kernel has no KSM".into()),
        Some(v) if v == "0" || v == "2" => {
            Probe::NotApplicable(format!("KSM is not running (ksm/run = {v})"))
        }
        Some(v) => settings(
            vec![Setting::new("sys/kernel/mm/ksm/run", "2")],
            format!("/sys/kernel/mm/ksm/run = {v}"),
        ),
    }
}

fn vmstat(ctx: &Ctx) -> Probe {
    let file = "proc/sys/vm/stat_interval";
    match ctx.read(file).and_then(|v| v.parse::<u64>().ok()) {
        None => Probe::NotApplicable(format!("this kernel has no /{file}")),
        Some(s) if s >= 10 => Probe::NotApplicable(format!("vm.stat_interval is already {s} s")),
        Some(s) => settings(vec![Setting::new(file, "10")], format!("/{file} = {s}")),
    }
}

fn isolation(ctx: &Ctx) -> Probe {
    let cmdline = ctx.read("proc/cmdline").unwrap_or_default();
    let has = |p: &str| cmdline.split_whitespace().any(|w| w.starts_with(p));
    match has("isolcpus=") && has("nohz_full=") && has("rcu_nocbs=") {
        true => Probe::NotApplicable("booted with isolcpus=, nohz_full= and rcu_nocbs=".into()),
        false => Probe::NeedsReboot(format!(
            "boot with `isolcpus=domain,managed_irq,{list} nohz_full={list} rcu_nocbs={list}`, run the same `jitterlab run` before and after, and `jitterlab compare` the two (or the lab, docs/lab.md, check 5)",
            list = format_cpu_list(&ctx.measured)
        )),
    }
}

fn preempt_rt(ctx: &Ctx) -> Probe {
    let rt = ctx.read("sys/kernel/realtime").is_some_and(|v| v == "1")
        || ctx
            .read("proc/sys/kernel/osrelease")
            .is_some_and(|v| v.contains("-rt"));
    match rt {
        true => Probe::NotApplicable("this kernel is PREEMPT_RT".into()),
        false => Probe::NeedsReboot(
            "boot a PREEMPT_RT kernel (Debian: linux-image-rt-amd64), run the same `jitterlab run` on both kernels and `jitterlab compare` the two (docs/lab.md, check 6, does it under qemu)".into(),
        ),
    }
}

/// A CPU mask as the kernel's cpumask files take it: hexadecimal, comma-separated groups of
/// 32 CPUs, highest first.
pub(crate) fn hex_mask(cpus: &[usize]) -> String {
    let words = cpus.iter().max().map_or(1, |m| m / 32 + 1);
    let mut mask = vec![0u32; words];
    for &c in cpus {
        mask[c / 32] |= 1 << (c % 32);
    }
    let mut groups: Vec<String> = mask.iter().rev().map(|w| format!("{w:08x}")).collect();
    // The highest group without its leading zeros, as the kernel prints it.
    groups[0] = format!("{:x}", mask[words - 1]);
    groups.join(",")
}

/// The CPUs of a cpumask file's text; None when it is not one.
pub(crate) fn parse_hex_mask(text: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    let groups: Vec<&str> = text.trim().split(',').collect();
    for (k, g) in groups.iter().rev().enumerate() {
        let word = u32::from_str_radix(g, 16).ok()?;
        cpus.extend((0..32).filter(|b| word & (1 << b) != 0).map(|b| k * 32 + b));
    }
    Some(cpus)
}

/// The context of this system for `cpus`.
pub(crate) fn system_ctx(measured: &[usize]) -> Result<Ctx, String> {
    Ok(Ctx {
        root: Path::new(crate::session::settings::SYSTEM_ROOT).to_path_buf(),
        measured: measured.to_vec(),
        online: crate::cpulist::online_cpus()?,
        pm_qos_elsewhere: crate::session::pmqos::held_elsewhere(),
    })
}

#[cfg(test)]
mod tests;

//! The system snapshot stored in every run's run.json (`system`) and shown by doctor.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::checks::{self, Ctx, kernel, virt};
use super::probes::{MemoryLockCheck, TraceBackendCheck};
use super::verdict::{Check, Verdict};
use super::{host, probes, root};
use crate::cpulist::parse_cpu_list;

/// The areas in display order; checks are sorted into this order.
pub(crate) const AREAS: &[&str] = &[
    "kernel",
    "scheduling",
    "cpu",
    "irq",
    "memory",
    "virtualization",
    "posix",
    "tracing",
];

/// The conditions a run was measured under: facts about the machine and kernel, and the
/// verdict of every readiness check. Schema in docs/doctor.md.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct SystemSnapshot {
    pub(crate) hostname: String,
    /// `uname -r`.
    pub(crate) kernel_release: String,
    /// `uname -v`, which names the preemption model (`#1 SMP PREEMPT_RT ...`).
    pub(crate) kernel_version: String,
    /// `uname -m`.
    pub machine: String,
    /// CPUs present (online or not).
    pub(crate) cpu_count: usize,
    pub online_cpus: Vec<usize>,
    /// The CPUs the run measures (doctor: `--cpus`, or every online CPU).
    pub(crate) measured_cpus: Vec<usize>,
    /// `PREEMPT_RT`, `PREEMPT_DYNAMIC (full)`, `voluntary`, ... or `unknown`.
    pub(crate) preemption_model: String,
    /// The kernel tick rate, if known.
    pub(crate) hz: Option<u32>,
    pub(crate) clocksource: Option<String>,
    /// The hypervisor's name (`KVM`, `unknown`), or null on bare metal.
    pub(crate) hypervisor: Option<String>,
    /// Share of CPU time stolen by the hypervisor since boot, in percent.
    pub(crate) steal_since_boot_percent: Option<f64>,
    /// Share stolen during a short window while the snapshot was taken, in percent.
    pub(crate) steal_recent_percent: Option<f64>,
    /// /proc/cmdline.
    pub(crate) kernel_cmdline: String,
    pub checks: Vec<Check>,
    /// When each step of taking it ended (CLOCK_MONOTONIC, ns), for a run's start-up timeline
    /// (run.json `startup`); not part of the snapshot stored.
    #[serde(skip)]
    pub(crate) step_ends: probes::ProbeEnds,
}

/// Live snapshot for `doctor`: every check, including the live probes. Takes about a tenth
/// of a second (the steal-time window); never fails, never panics on missing files (they
/// become `unknown` checks), and leaves the system as it found it.
pub(crate) fn snapshot(measured_cpus: &[usize]) -> SystemSnapshot {
    snapshot_in(
        &Ctx::new(Path::new("/"), measured_cpus, true),
        TraceBackendCheck::Probe,
        MemoryLockCheck::Probe,
    )
}

/// Live snapshot for a run's run.json `system` field: as [`snapshot`] without the steal-time
/// window (`steal_recent_percent` is null), so it does not delay the start: a run measures
/// steal over its own measurement instead (run.json `steal`). `trace` is the back end the
/// run's trace set up, if it traces: `tracing.backend` then says what it used, and an
/// untraced run has no such check; neither loads the BPF object again (doctor's probe of it
/// cost every run about a quarter of a second of start-up). `locks_memory`: the run locks its
/// memory itself, and `posix.mlockall` says so instead of trying it.
pub(crate) fn snapshot_for_run(
    measured_cpus: &[usize],
    trace: Option<&crate::trace::BackendChoice>,
    locks_memory: bool,
) -> SystemSnapshot {
    let mut ctx = Ctx::new(Path::new("/"), measured_cpus, true);
    ctx.steal_window = false;
    snapshot_in(
        &ctx,
        trace.map_or(TraceBackendCheck::NotTraced, TraceBackendCheck::Used),
        match locks_memory {
            true => MemoryLockCheck::LockedByRun,
            false => MemoryLockCheck::Probe,
        },
    )
}

/// A snapshot of the system below `root`. Live probes and system calls run only with `live`:
/// for the fixture trees' tests.
#[cfg(test)]
pub(crate) fn snapshot_at(root_dir: &Path, measured_cpus: &[usize], live: bool) -> SystemSnapshot {
    snapshot_in(
        &Ctx::new(root_dir, measured_cpus, live),
        TraceBackendCheck::Probe,
        MemoryLockCheck::Probe,
    )
}

fn snapshot_in(
    ctx: &Ctx,
    trace_backend: TraceBackendCheck,
    memory_lock: MemoryLockCheck,
) -> SystemSnapshot {
    let (root_dir, live) = (ctx.root, ctx.live);
    let now = crate::measure::clock::monotonic_ns;
    // The probes run on their own thread while this one reads the files (each waits on
    // different things: the probes on timers and system calls, the checks on /proc and /sys);
    // their checks follow the file checks' as before, and the steps' ends are in time order.
    let probes = live.then(|| probes::start_all(trace_backend, memory_lock));
    let mut checks = checks::all(ctx);
    let mut step_ends = vec![("snapshot: file checks", now())];
    if let Some(probes) = probes {
        let (probed, ends) = probes.join();
        checks.extend(probed);
        step_ends.extend(ends);
        step_ends.sort_by_key(|&(_, end)| end);
    }
    checks.sort_by_key(|c| {
        AREAS
            .iter()
            .position(|a| *a == c.area)
            .unwrap_or(AREAS.len())
    });

    let read = |rel: &str| root::read_trim(root_dir, rel).unwrap_or_default();
    let (hostname, kernel_release, kernel_version, machine) = if live {
        let u = host::uname();
        (host::hostname(), u.release, u.version, u.machine)
    } else {
        // /proc/version is "Linux version RELEASE (builder) #1 SMP ..."; uname -v is from '#'.
        let version = read("proc/version");
        let uts = version
            .find('#')
            .map(|i| version[i..].to_string())
            .unwrap_or(version);
        (
            read("proc/sys/kernel/hostname"),
            read("proc/sys/kernel/osrelease"),
            uts,
            String::new(),
        )
    };
    let present = root::read(root_dir, "sys/devices/system/cpu/present")
        .ok()
        .and_then(|t| parse_cpu_list(&t).ok());
    let steal = ctx.steal().as_ref().ok();
    SystemSnapshot {
        hostname,
        kernel_release,
        kernel_version,
        machine,
        cpu_count: present.map_or(ctx.online.len(), |p| p.len()),
        online_cpus: ctx.online.clone(),
        measured_cpus: ctx.cpus.clone(),
        preemption_model: kernel::read_preemption(ctx).label(),
        hz: kernel::tick_hz(ctx).map(|(hz, _)| hz),
        clocksource: root::read_trim(
            root_dir,
            "sys/devices/system/clocksource/clocksource0/current_clocksource",
        )
        .ok(),
        hypervisor: virt::hypervisor_name(ctx),
        steal_since_boot_percent: steal.map(|s| s.0),
        steal_recent_percent: steal.and_then(|s| s.1),
        kernel_cmdline: read("proc/cmdline"),
        checks,
        step_ends: {
            step_ends.push(("snapshot: the rest", now()));
            step_ends
        },
    }
}

impl SystemSnapshot {
    /// The check with this id, if it ran.
    pub(crate) fn check(&self, id: &str) -> Option<&Check> {
        self.checks.iter().find(|c| c.id == id)
    }

    /// Whether any check failed (doctor exits 1 then).
    pub(crate) fn any_fail(&self) -> bool {
        self.checks.iter().any(|c| c.verdict == Verdict::Fail)
    }

    /// One-line warnings printed before a run's summary about conditions that make results
    /// unrepresentative: a VM or steal time, RT throttling, a non-PREEMPT_RT kernel, a
    /// container, and
    /// measuring without real-time priority (`measuring_without_rt_priority`: the run uses
    /// SCHED_OTHER, SCHED_BATCH or SCHED_IDLE).
    pub(crate) fn representativeness_warnings(
        &self,
        measuring_without_rt_priority: bool,
    ) -> Vec<String> {
        let mut out = Vec::new();
        let steal = match (self.steal_since_boot_percent, self.steal_recent_percent) {
            (_, Some(r)) if r > 0.0 => {
                format!("; {r:.2}% of CPU time was stolen by the host just now")
            }
            (Some(b), _) if b > 0.0 => format!("; steal time so far {b:.2}%"),
            _ => String::new(),
        };
        if let Some(h) = &self.hypervisor {
            out.push(format!(
                "measured in a virtual machine (hypervisor: {h}){steal}: latencies include the host's \
                 scheduling of the virtual CPUs and say little about the hardware"
            ));
        } else if !steal.is_empty() {
            out.push(format!(
                "the hypervisor takes CPU time from this system{steal}: latencies include it"
            ));
        }
        if let Some(c) = self
            .check("scheduling.rt_throttling")
            .filter(|c| c.verdict == Verdict::Warn)
        {
            out.push(format!("RT throttling is on ({}): real-time load can be stopped for the rest of each period", c.evidence));
        }
        if self
            .check("kernel.preemption")
            .is_some_and(|c| c.verdict == Verdict::Warn)
        {
            out.push(format!(
                "the kernel is not PREEMPT_RT (preemption: {}): worst cases are those of a non-real-time kernel",
                self.preemption_model
            ));
        }
        if let Some(c) = self
            .check("virtualization.container")
            .filter(|c| c.verdict == Verdict::Warn)
        {
            out.push(format!(
                "measured {}: the container's CPU, memory and scheduling limits are part of the result",
                c.evidence.split(':').next().unwrap_or("inside a container")
            ));
        }
        if measuring_without_rt_priority {
            out.push(
                "measured without real-time priority (SCHED_OTHER/BATCH/IDLE): latencies include ordinary \
                 scheduling and are not those of a real-time task"
                    .into(),
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The live snapshot on whatever machine runs the tests: it must complete, cover every
    /// area, and leave no named POSIX objects behind.
    #[test]
    fn live_snapshot_is_complete_and_leaves_nothing_behind() {
        let snap = snapshot(&[]);
        for area in AREAS {
            assert!(
                snap.checks.iter().any(|c| c.area == *area),
                "no check in area {area}"
            );
        }
        let mut ids: Vec<&str> = snap.checks.iter().map(|c| c.id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), snap.checks.len(), "check ids are unique");
        assert_eq!(snap.measured_cpus, snap.online_cpus);
        for dir in ["/dev/shm", "/dev/mqueue"] {
            let leftovers: Vec<String> = std::fs::read_dir(dir)
                .map(|d| {
                    d.filter_map(|e| e.ok())
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            let pid = std::process::id().to_string();
            assert!(
                !leftovers
                    .iter()
                    .any(|n| n.starts_with("jitterlab-doctor") && n.contains(&pid)),
                "{dir}: {leftovers:?}"
            );
        }
        // The probe thread restored everything it changed on itself; the calling thread was
        // never touched.
        let policy = crate::sys::sched::scheduler(0).unwrap();
        assert_eq!(policy, crate::sys::sched::SCHED_OTHER);
    }
}

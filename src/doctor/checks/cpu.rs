//! CPU checks over the measured CPUs: frequency governor, idle states, SMT siblings, NUMA.

use std::collections::BTreeMap;

use super::Ctx;
use crate::cpulist::{format_cpu_list, parse_cpu_list};
use crate::doctor::root;
use crate::doctor::verdict::{Check, Spec};

/// Groups CPUs by a per-CPU value, for evidence like `performance on 0-3, powersave on 4-7`.
fn by_value(pairs: impl IntoIterator<Item = (usize, String)>) -> String {
    let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (cpu, value) in pairs {
        groups.entry(value).or_default().push(cpu);
    }
    groups
        .iter()
        .map(|(v, cpus)| format!("{v} on CPU {}", format_cpu_list(cpus)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn cpu_dir(cpu: usize) -> String {
    format!("sys/devices/system/cpu/cpu{cpu}")
}

const GOVERNOR: Spec = Spec {
    id: "cpu.governor",
    area: "cpu",
    why: "A governor other than performance lowers the clock when the CPU looks idle, and a \
          latency test is mostly idle: every wakeup then runs slower and waits for the clock \
          to ramp up.",
};

pub(crate) fn governor(ctx: &Ctx) -> Check {
    let governors: Vec<(usize, Option<String>)> = ctx
        .cpus
        .iter()
        .map(|&c| {
            (
                c,
                root::read_trim(
                    ctx.root,
                    &format!("{}/cpufreq/scaling_governor", cpu_dir(c)),
                )
                .ok(),
            )
        })
        .collect();
    if governors.iter().all(|(_, g)| g.is_none()) {
        return GOVERNOR.unknown(
            "no cpufreq on the measured CPUs (no .../cpufreq/scaling_governor): the kernel does not \
             control their frequency; firmware or a hypervisor may",
            "check the firmware's power settings (disable P-state/turbo scaling for stable results)",
        );
    }
    let evidence = by_value(
        governors
            .iter()
            .map(|(c, g)| (*c, g.clone().unwrap_or_else(|| "no cpufreq".into()))),
    );
    if governors
        .iter()
        .all(|(_, g)| g.as_deref().is_none_or(|g| g == "performance"))
    {
        GOVERNOR.ok(evidence)
    } else {
        GOVERNOR.warn(
            evidence,
            "`cpupower frequency-set -g performance`, or write performance to \
             /sys/devices/system/cpu/cpuN/cpufreq/scaling_governor for the measured CPUs",
        )
    }
}

const IDLE_STATES: Spec = Spec {
    id: "cpu.idle_states",
    area: "cpu",
    why: "Waking a CPU from a deep idle state takes its exit latency (up to hundreds of \
          microseconds) before the woken task can run.",
};

/// Idle states with an exit latency above this are counted as deep.
const DEEP_IDLE_US: u64 = 10;

pub(crate) fn idle_states(ctx: &Ctx) -> Check {
    let mut deep = Vec::new();
    let mut shallow_only = true;
    let mut listed = None;
    for &cpu in &ctx.cpus {
        let dir = format!("{}/cpuidle", cpu_dir(cpu));
        let Ok(names) = root::list(ctx.root, &dir) else {
            continue;
        };
        let mut states = Vec::new();
        for n in root::numbered(&names, "state") {
            let s = format!("{dir}/state{n}");
            let name = root::read_trim(ctx.root, &format!("{s}/name"))
                .unwrap_or_else(|_| format!("state{n}"));
            let latency = root::read_i64(ctx.root, &format!("{s}/latency")).unwrap_or(0) as u64;
            let disabled = root::read_i64(ctx.root, &format!("{s}/disable")).unwrap_or(0) != 0;
            states.push(format!(
                "{name} {latency} us{}",
                if disabled { " (disabled)" } else { "" }
            ));
            if latency > DEEP_IDLE_US && !disabled {
                shallow_only = false;
                deep.push((cpu, format!("{name} ({latency} us)")));
            }
        }
        listed.get_or_insert_with(|| format!("CPU {cpu}: {}", states.join(", ")));
    }
    let driver = root::read_trim(ctx.root, "sys/devices/system/cpu/cpuidle/current_driver").ok();
    let Some(listed) = listed else {
        return IDLE_STATES.ok(format!(
            "no cpuidle states on the measured CPUs{}: idle is the architecture's default wait",
            driver.map(|d| format!(" (driver {d})")).unwrap_or_default()
        ));
    };
    let evidence = format!(
        "{}{listed}",
        driver.map(|d| format!("driver {d}; ")).unwrap_or_default()
    );
    if shallow_only {
        IDLE_STATES.ok(evidence)
    } else {
        IDLE_STATES.warn(
            format!("{evidence}; enabled states deeper than {DEEP_IDLE_US} us: {}", by_value(deep)),
            "`jitterlab run` holds /dev/cpu_dma_latency at 0 while measuring, which keeps CPUs out of \
             them; `--idle-state-max N` disables the states deeper than N on the measured CPUs \
             only, for the run; to disable them for other work: `cpupower idle-set -D 10`, or \
             boot with processor.max_cstate=1 intel_idle.max_cstate=0",
        )
    }
}

const SMT: Spec = Spec {
    id: "cpu.smt",
    area: "cpu",
    why: "SMT siblings share one core's execution units and caches: work on the sibling slows the \
          measured thread by a varying amount.",
};

pub(crate) fn smt(ctx: &Ctx) -> Check {
    let control = root::read_trim(ctx.root, "sys/devices/system/cpu/smt/control").ok();
    let mut shared = Vec::new();
    let mut read_any = false;
    for &cpu in &ctx.cpus {
        let Ok(list) = root::read_trim(
            ctx.root,
            &format!("{}/topology/thread_siblings_list", cpu_dir(cpu)),
        ) else {
            continue;
        };
        read_any = true;
        let siblings: Vec<usize> = parse_cpu_list(&list)
            .unwrap_or_default()
            .into_iter()
            .filter(|&s| s != cpu)
            .collect();
        if !siblings.is_empty() {
            shared.push(format!("CPU {cpu} with {}", format_cpu_list(&siblings)));
        }
    }
    let control_note = control
        .map(|c| format!("smt/control = {c}; "))
        .unwrap_or_default();
    if !read_any {
        return SMT.unknown(
            format!("{control_note}no topology/thread_siblings_list for the measured CPUs"),
            "check that sysfs is mounted",
        );
    }
    if shared.is_empty() {
        SMT.ok(format!("{control_note}no measured CPU shares its core"))
    } else {
        SMT.warn(
            format!("{control_note}sharing a core: {}", shared.join("; ")),
            "turn SMT off (`echo off > /sys/devices/system/cpu/smt/control` or boot with nosmt), or keep \
             the siblings of measured CPUs idle (isolate them too)",
        )
    }
}

const NUMA: Spec = Spec {
    id: "cpu.numa",
    area: "cpu",
    why: "On a NUMA machine, memory on another node is slower, and automatic NUMA balancing \
          unmaps pages to sample them, causing page faults in running tasks.",
};

pub(crate) fn numa(ctx: &Ctx) -> Check {
    let nodes = match root::read_trim(ctx.root, "sys/devices/system/node/online") {
        Ok(t) => parse_cpu_list(&t).unwrap_or_default(),
        // Kernels without CONFIG_NUMA have no node directory: one node.
        Err(_) => return NUMA.ok("no /sys/devices/system/node: a single memory node"),
    };
    let balancing = root::read_i64(ctx.root, "proc/sys/kernel/numa_balancing").ok();
    let measured_nodes: Vec<usize> = nodes
        .iter()
        .copied()
        .filter(|n| {
            root::read_trim(
                ctx.root,
                &format!("sys/devices/system/node/node{n}/cpulist"),
            )
            .ok()
            .and_then(|l| parse_cpu_list(&l).ok())
            .is_some_and(|cpus| cpus.iter().any(|c| ctx.cpus.contains(c)))
        })
        .collect();
    let evidence = format!(
        "{} node(s) online ({}); measured CPUs on node(s) {}; numa_balancing = {}",
        nodes.len(),
        format_cpu_list(&nodes),
        if measured_nodes.is_empty() {
            "?".into()
        } else {
            format_cpu_list(&measured_nodes)
        },
        balancing.map_or("unreadable".into(), |b| b.to_string())
    );
    if nodes.len() <= 1 {
        NUMA.ok(evidence)
    } else if measured_nodes.len() > 1 || balancing.is_some_and(|b| b != 0) {
        NUMA.warn(
            evidence,
            "`sysctl kernel.numa_balancing=0`, and measure CPUs of one node (pin loads and memory with numactl)",
        )
    } else {
        NUMA.ok(evidence)
    }
}

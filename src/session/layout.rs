//! What `--housekeeping` warns of before a run: measured CPUs sharing a core with housekeeping
//! CPUs (SMT siblings), and measured and housekeeping CPUs on different NUMA nodes. Apart from
//! start.rs because it reads the CPU topology, not the session's parts.

use crate::cpulist::{format_cpu_list, parse_cpu_list};

/// The NUMA node of `cpu` (its `nodeK` entry in sysfs); None on a kernel without NUMA.
pub(super) fn numa_node_of(cpu: usize) -> Option<usize> {
    std::fs::read_dir(format!("/sys/devices/system/cpu/cpu{cpu}"))
        .ok()?
        .flatten()
        .find_map(|e| e.file_name().to_str()?.strip_prefix("node")?.parse().ok())
}

/// With `--housekeeping`: a warning when the measured CPUs (`measured`) and the housekeeping CPUs (where
/// the drain side and `cpus=housekeeping` loads run) are on different NUMA nodes: the loads
/// then stress another node's memory and caches than the measured threads use, which a
/// production layout with loads beside its real-time work would not.
pub(super) fn numa_apart_from_housekeeping(
    measured: &[usize],
    housekeeping: &[usize],
    node_of: &dyn Fn(usize) -> Option<usize>,
) -> Vec<String> {
    let nodes = |cpus: &[usize]| -> std::collections::BTreeSet<usize> {
        cpus.iter().filter_map(|&c| node_of(c)).collect()
    };
    let (measured, kept) = (nodes(measured), nodes(housekeeping));
    if measured.is_empty() || kept.is_empty() || !measured.is_disjoint(&kept) {
        return Vec::new();
    }
    let list = |n: &std::collections::BTreeSet<usize>| {
        format_cpu_list(&n.iter().copied().collect::<Vec<_>>())
    };
    vec![format!(
        "--housekeeping: the measured CPUs are on NUMA node {}, the housekeeping CPUs (the drain side, cpus=housekeeping loads) on node {}: those loads stress another node's memory than the measured threads use; pick housekeeping CPUs on the measured node to load it",
        list(&measured),
        list(&kept)
    )]
}

/// A warning per measured CPU that shares its core with a housekeeping CPU (`--housekeeping`):
/// the drain side and the loads there slow the measured thread by a varying amount.
pub(super) fn smt_shared_with_housekeeping(
    measured: &[usize],
    housekeeping: &[usize],
) -> Vec<String> {
    measured
        .iter()
        .filter_map(|&cpu| {
            let path = format!("/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list");
            let siblings = parse_cpu_list(std::fs::read_to_string(path).ok()?.trim()).ok()?;
            let shared: Vec<usize> = siblings
                .into_iter()
                .filter(|s| *s != cpu && housekeeping.contains(s))
                .collect();
            (!shared.is_empty()).then(|| {
                format!(
                    "--housekeeping: measured CPU {cpu} shares its core with housekeeping CPU {} (SMT siblings): the drain side and the loads there slow it by a varying amount; choose housekeeping CPUs on other cores, or turn SMT off",
                    format_cpu_list(&shared)
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numa_nodes_apart_warn_and_shared_do_not() {
        // CPUs 0-1 on node 0, 2-3 on node 1.
        let node = |c: usize| Some(c / 2);
        let apart = numa_apart_from_housekeeping(&[2, 3], &[0], &node);
        assert_eq!(apart.len(), 1);
        assert!(
            apart[0].contains("NUMA node 1, the housekeeping CPUs"),
            "{}",
            apart[0]
        );
        assert!(apart[0].contains("on node 0"), "{}", apart[0]);
        assert!(numa_apart_from_housekeeping(&[3], &[0, 2], &node).is_empty());
        assert!(numa_apart_from_housekeeping(&[1], &[0], &node).is_empty());
        // No NUMA in the kernel: nothing to say.
        assert!(numa_apart_from_housekeeping(&[2, 3], &[0], &|_| None).is_empty());
    }
}

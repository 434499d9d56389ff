//! run.json `environment`: what jitterlab itself changed on the system for a run (memory
//! locking, PM QoS, cpuidle states), each undone when the run ends. Specified in
//! docs/result-format.md.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EnvironmentRecord {
    /// mlockall(MCL_CURRENT|MCL_FUTURE) succeeded.
    pub(crate) memory_locked: bool,
    /// Bytes of each measuring thread's stack touched before measuring.
    pub(crate) stack_prefaulted_bytes: usize,
    pub(crate) pm_qos: PmQosRecord,
    /// `--idle-state-max`: the cpuidle states disabled for the run; None when not asked (and
    /// in files written before the option).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) idle_states: Option<IdleStatesRecord>,
    /// `--cpuset-partition`: the cgroup the measuring threads ran in; None without the option
    /// (and in files written before cgroup v2 partitions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cpuset_partition: Option<CpusetPartitionRecord>,
}

/// The cpuset of `--cpuset-partition`, removed when the run ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CpusetPartitionRecord {
    /// The cgroup version it was made on: `v1` (an exclusive cpuset without load balancing)
    /// or `v2` (a threaded cgroup with `cpuset.cpus.partition`).
    pub cgroup: String,
    /// Its directory.
    pub path: String,
    /// v2: what `cpuset.cpus.partition` read back (`isolated`, or `root` where the kernel
    /// refused `isolated`); None on v1.
    pub(crate) partition: Option<String>,
    /// v2: `+cpuset` was written to the parent's `cgroup.subtree_control` for the run (it was
    /// not enabled there before) and taken back after it; false on v1.
    pub(crate) enabled_in_parent: bool,
}

/// What was done with /dev/cpu_dma_latency. The default: left alone.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct PmQosRecord {
    /// The value held for the run, us; None when left alone.
    pub(crate) held_us: Option<u32>,
    /// The value in force before the run, when readable, us.
    pub(crate) previous_us: Option<u32>,
    /// Why it was not held, when it was requested and could not be.
    pub error: Option<String>,
    /// The lowest value in force read during the run (when its request was made, every
    /// second, and at its end), us: the whole machine's, the lowest request of any process
    /// (2000000000: none). None where it could not be read (a user other than root, no device)
    /// and in files written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) in_force_us: Option<u32>,
    /// The other processes found holding a PM QoS request when a value below this run's own
    /// (or, left alone, any value) was in force; at most 8. Empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) held_by_others: Vec<PmQosHolderRecord>,
    /// The search of /proc for those holders stopped at its time limit before it had looked at
    /// every process that could hold the device: others may hold it too. Absent when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) holders_not_all_searched: bool,
}

/// A process holding /dev/cpu_dma_latency open while a run measured (seventh hostile re-run,
/// S1: a run left PM QoS alone beside another run holding it at 0, and recorded "left alone").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PmQosHolderRecord {
    pub pid: u32,
    /// Its real uid, when /proc says.
    pub uid: Option<u32>,
    /// Its command line.
    pub command: String,
    /// The same executable as the run's (another jitterlab).
    pub jitterlab: bool,
    /// For another jitterlab: the CPUs whose locks it held (the CPUs it measured).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<usize>,
    /// All of it in words, as the warning names it.
    pub text: String,
}

/// `--idle-state-max N`: the cpuidle states deeper than N that were enabled on a measured CPU
/// and were disabled for the run (states already disabled are left alone and not listed).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct IdleStatesRecord {
    /// The deepest state index left enabled (rtla's `--deepest-idle-state`).
    pub max: u32,
    /// Every state disabled for the run, restored when it ended.
    pub(crate) disabled: Vec<IdleStateRecord>,
}

/// One cpuidle state of one CPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct IdleStateRecord {
    pub cpu: usize,
    /// Its index: `/sys/devices/system/cpu/cpuN/cpuidle/stateK`.
    pub state: u32,
    /// Its `name` (e.g. `C6`).
    pub name: String,
    /// Its exit latency (`latency`), us.
    pub latency_us: u64,
}

//! run.json `plan`: what a run was asked to do, as resolved from its options. Specified in
//! docs/result-format.md; every quantity carries its unit in its name.

use serde::{Deserialize, Serialize};

/// The resolved plan: every option's effective value.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlanRecord {
    pub cpus: Vec<usize>,
    pub policy: String,
    pub priority: i32,
    /// For SCHED_DEADLINE: the runtime reserved for the first thread, ns. Each further thread's
    /// is derived the same way from its own interval (interval / 10, within [10 us, interval]).
    pub(crate) deadline_runtime_ns: Option<u64>,
    pub wake: String,
    pub clock: String,
    pub interval_ns: u64,
    pub(crate) distance_ns: u64,
    pub interval_step_ns: u64,
    pub duration_ns: Option<u64>,
    pub loops: Option<u64>,
    /// Explicit --deadline; when None each thread's deadline is its interval.
    pub deadline_ns: Option<u64>,
    pub log_interval_ns: u64,
    pub loads: Vec<String>,
    pub samples: bool,
    /// The layout samples.bin was written in (1 or 2, `--samples-format`); None without
    /// `--samples` (and in files written before this field).
    #[serde(default)]
    pub samples_format: Option<u32>,
    /// `--summary-every`: samples per `wakeup_summary` event; absent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) summary_every: Option<u64>,
    pub ring_size: usize,
    /// The drain side's SCHED_FIFO priority (`--drain-priority`); None: normal scheduling
    /// (and in files written before this field).
    #[serde(default)]
    pub(crate) drain_priority: Option<i32>,
    /// `--housekeeping`: the CPUs of the drain side, the load supervisor and the
    /// `cpus=housekeeping` loads; None: not given (and in files written before this field).
    #[serde(default)]
    pub(crate) housekeeping: Option<Vec<usize>>,
    /// `--cpuset-partition`: the measuring threads ran in a cpuset of the measured CPUs
    /// (false in files written before this field).
    #[serde(default)]
    pub(crate) cpuset_partition: bool,
    /// `--load-cpus`: where a generator load that names no `cpus=` runs: `all`, `measured`
    /// or `housekeeping` (`all` in files written before this field).
    #[serde(default = "all_cpus")]
    pub(crate) load_cpus: String,
    pub(crate) mlock: bool,
    /// Requested /dev/cpu_dma_latency value in us; None for --pm-qos off.
    pub(crate) pm_qos_us: Option<u32>,
    /// `--trace` was given.
    #[serde(default)]
    pub trace: bool,
    /// `--explain-above`; None: each thread's deadline.
    #[serde(default)]
    pub explain_above_ns: Option<u64>,
    /// Noise runs: a gap longer than this is a noise event, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) noise_threshold_ns: Option<u64>,
    /// IPC wake methods: the mechanism and the roles of the thread pairs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipc: Option<IpcRecord>,
}

/// The roles of an IPC run: each measuring thread (the receiver) is woken by a sender thread
/// of its own through `mechanism` (the `--wake` name).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IpcRecord {
    pub(crate) mechanism: String,
    /// `--sender-cpu` as given: `same`, `other`, or a CPU number.
    pub sender_cpu: String,
    /// The CPU of each sender, in the order of `cpus` (the receivers').
    pub(crate) sender_cpus: Vec<usize>,
    /// The senders' scheduling policy (the run's) and priority.
    pub(crate) sender_policy: String,
    pub(crate) sender_priority: i32,
    /// `threads` (the pair shares one address space) or `processes` (each sender is a process
    /// forked by its receiver's thread).
    pub between: String,
    /// `sender-timer` (each sender sleeps to the due time on its own timer) or `receiver` (the
    /// receiver sleeps to it and wakes its sender, as rt-tests). Absent in runs made before
    /// the option: those are `sender-timer`.
    #[serde(default = "sender_timer")]
    pub pace: String,
    /// The kernel thread id of each sender, in the order of `cpus` (0 for one that had not
    /// started when the first wakeup was due): what a trace names the senders by. Absent in
    /// files of versions before it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) sender_tids: Vec<i32>,
}

fn sender_timer() -> String {
    "sender-timer".into()
}

fn all_cpus() -> String {
    "all".into()
}

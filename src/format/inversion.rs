//! run.json's `inversion`: the roles and findings of a `--wake pi-mutex` run, priority
//! inversion with or without inheritance (docs/result-format.md, docs/user-guide.md).

use serde::{Deserialize, Serialize};

/// The scenario and what each measuring thread met in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InversionRecord {
    /// `pthread_mutex PTHREAD_PRIO_INHERIT` or `pthread_mutex PTHREAD_PRIO_NONE` (`--no-pi`).
    pub(crate) mechanism: String,
    pub(crate) priority_inheritance: bool,
    /// CPU time the holder keeps the mutex for each cycle (`--hold`), ns.
    pub(crate) hold_ns: u64,
    /// Wall time the hog spins from each due time (`--hog`), ns.
    pub(crate) hog_ns: u64,
    /// A wakeup later than this, while the hog ran inside the holder's hold, is an inversion.
    pub(crate) inversion_above_ns: u64,
    /// The three threads of each measuring thread, all on its CPU (`cpu` of `threads`).
    pub roles: Vec<RoleRecord>,
    /// Per measuring thread, in the order of run.json's `threads`.
    pub threads: Vec<InversionCount>,
}

/// One role of the scenario.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleRecord {
    /// `measuring` (high: sleeps to each due time, then takes the mutex), `hog` (medium: spins
    /// from each due time), or `holder` (low: holds the mutex across each due time).
    pub(crate) role: String,
    pub policy: String,
    pub priority: i32,
}

/// The inversions one measuring thread met.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct InversionCount {
    pub cpu: usize,
    pub inversions: u64,
    /// The latency of the worst inversion, ns (0 without one).
    pub(crate) worst_inversion_ns: u64,
}

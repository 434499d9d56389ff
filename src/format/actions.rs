//! `--on-threshold` and `--on-end` in the results: one `action` event per firing (or per
//! attempt that failed) in events.jsonl, and run.json's `actions` with each action's counts
//! (docs/result-format.md).

use serde::{Deserialize, Serialize};

/// The version in the first line of a snapshot's `spike-NNNN.csv` (`# jitterlab snapshot 1:`).
/// Its columns are named by its second line; with `--trace` it has the four split columns
/// more, at the end.
pub const SNAPSHOT_CSV_VERSION: u32 = 1;
/// The version in the first line of a snapshot's `spike-NNNN.trace`
/// (`# jitterlab snapshot trace 1:`).
pub const SNAPSHOT_TRACE_VERSION: u32 = 1;

/// One action fired (events.jsonl `"type": "action"`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionEvent {
    /// When it fired (CLOCK_MONOTONIC), ns.
    pub time_ns: u64,
    /// `threshold` (a spike started) or `end` (the run ended).
    pub trigger: String,
    /// The action as run.json `actions` spells it, e.g. `signal:USR1,parent`.
    pub action: String,
    /// The spike that set it off: its CPU, its first late wakeup's due time (the run's clock)
    /// and latency, ns. None for `end`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub due_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ns: Option<i64>,
    /// Spikes since this action's previous firing that the rate limit (`--action-gap`) let
    /// pass without firing it.
    #[serde(default)]
    pub suppressed_before: u64,
    /// `ok` or `failed`.
    pub outcome: String,
    /// What happened: `sent SIGUSR1 to 1234`, `started pid 5678`, `pid 5678 exited with 0`,
    /// `wrote snapshots/spike-0001.csv (3001 samples)` (with `--trace` followed by
    /// `, snapshots/spike-0001.trace (N trace events)` and
    /// `, snapshots/spike-0001.explanations.jsonl (N explanations)`: every file written),
    /// `stopped the run`, or the error.
    pub detail: String,
}

/// run.json `actions`: what was asked and what each did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionsRecord {
    /// The least time between two firings of one threshold action, ns.
    pub gap_ns: u64,
    pub on_threshold: Vec<ActionCount>,
    pub on_end: Vec<ActionCount>,
}

/// One action's counts over the run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionCount {
    pub action: String,
    /// Times it fired (successfully or not).
    pub fired: u64,
    /// Spikes the rate limit let pass without firing it (0 for `--on-end`).
    pub suppressed: u64,
    /// Firings that failed (their events say why).
    pub failed: u64,
}

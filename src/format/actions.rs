//! `--on-threshold` and `--on-end` in the results: one `action` event per firing (or per
//! attempt that failed) in events.jsonl, and run.json's `actions` with each action's counts
//! (docs/result-format.md).

use serde::{Deserialize, Serialize};

/// The version in the first line of a snapshot's `spike-NNNN.csv` (`# jitterlab snapshot 1:`).
/// Its columns are named by its second line; with `--trace` it has the four split columns
/// more, at the end.
pub(crate) const SNAPSHOT_CSV_VERSION: u32 = 1;
/// The version in the first line of a snapshot's `spike-NNNN.trace`
/// (`# jitterlab snapshot trace 1:`).
pub(crate) const SNAPSHOT_TRACE_VERSION: u32 = 1;

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
    pub(crate) suppressed_before: u64,
    /// Spikes since this action's previous firing on which it was not started because the
    /// bound was full ([`ActionsRecord::max_programs`] programs running, or
    /// [`ActionsRecord::max_snapshots`] snapshots pending).
    #[serde(default)]
    pub(crate) refused_before: u64,
    /// With [`OUTCOME_OVER_LIMIT`]: the spikes on which a snapshot was not made because the
    /// run's snapshots had reached their limit.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub over_limit: u64,
    /// `ok` or `failed`; [`OUTCOME_OVER_LIMIT`] for the count of spikes not snapshotted past
    /// the limit (written once, at the end, `over_limit` holding it).
    pub outcome: String,
    /// An `exec:` program's pid, in its start event and in its outcome's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// An `exec:` program's step: [`PROGRAM_STARTED`], or how it ended: [`PROGRAM_EXITED`]
    /// (`exit_code`), [`PROGRAM_SIGNALLED`] (`signal`: a signal jitterlab did not send),
    /// [`PROGRAM_KILLED`] (by jitterlab: still running when the end's wait was over or was
    /// cut short by SIGINT/SIGTERM), [`PROGRAM_ABANDONED`] (still running after jitterlab's
    /// kill: it was given up on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) exit_code: Option<i32>,
    /// The signal that ended it, e.g. `SIGKILL`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
    /// What happened: `sent SIGUSR1 to 1234`, `started pid 5678`, `pid 5678 exited with 0`,
    /// `wrote snapshots/spike-0001.csv (3001 samples)` (with `--trace` followed by
    /// `, snapshots/spike-0001.trace (N trace events)` and
    /// `, snapshots/spike-0001.explanations.jsonl (N explanations)`: every file written),
    /// `stopped the run`, or the error.
    pub detail: String,
}

/// [`ActionEvent::outcome`] of the end's count of the spikes not snapshotted because the
/// run's snapshots had reached `--snapshot-limit` (or 10 000 snapshots).
pub(crate) const OUTCOME_OVER_LIMIT: &str = "over_limit";

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// [`ActionEvent::program`]: an `exec:` program was started.
pub(crate) const PROGRAM_STARTED: &str = "started";
/// It exited by itself (`exit_code`).
pub(crate) const PROGRAM_EXITED: &str = "exited";
/// A signal jitterlab did not send ended it (`signal`).
pub(crate) const PROGRAM_SIGNALLED: &str = "signalled";
/// jitterlab killed it (SIGKILL to its process group and containment).
pub(crate) const PROGRAM_KILLED: &str = "killed";
/// It was still running after jitterlab's kill, and was given up on.
pub(crate) const PROGRAM_ABANDONED: &str = "abandoned";

/// run.json `actions`: what was asked and what each did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionsRecord {
    /// The least time between two firings of one threshold action, ns.
    pub(crate) gap_ns: u64,
    /// `--action-wait`: the most the end waits for the programs still running, and then for
    /// each `--on-end` program, ns (0 in results written before it existed).
    #[serde(default)]
    pub(crate) wait_ns: u64,
    /// The most `exec:` programs running at once (0 in older results).
    #[serde(default)]
    pub(crate) max_programs: u64,
    /// The most snapshots waiting for their window at once (0 in older results).
    #[serde(default)]
    pub(crate) max_snapshots: u64,
    /// `--snapshot-limit`: the most bytes the run's snapshots write in all (0 in older
    /// results, which had no bound).
    #[serde(default)]
    pub(crate) snapshot_limit_bytes: u64,
    /// The snapshots written, and their files' bytes in all.
    #[serde(default)]
    pub(crate) snapshots_written: u64,
    #[serde(default)]
    pub(crate) snapshot_bytes: u64,
    /// Why no more snapshots were made, once the limit (bytes, or 10 000 snapshots,
    /// plan/actions.rs `MAX_SNAPSHOTS`) was reached; absent while it was not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) snapshot_limit_reached: Option<String>,
    pub(crate) on_threshold: Vec<ActionCount>,
    pub(crate) on_end: Vec<ActionCount>,
}

/// What an `exec:` action's programs did, counted over the run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ProgramCounts {
    pub started: u64,
    /// Exited with 0.
    pub(crate) exited_zero: u64,
    /// Exited with another code.
    pub(crate) exited_nonzero: u64,
    /// Ended by a signal jitterlab did not send.
    pub signalled: u64,
    /// Killed by jitterlab (the end's wait over, or SIGINT/SIGTERM during it).
    pub killed: u64,
    /// Still running after jitterlab's kill, given up on.
    pub(crate) abandoned: u64,
}

/// One action's counts over the run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ActionCount {
    pub action: String,
    /// Times it fired (successfully or not).
    pub fired: u64,
    /// Spikes the rate limit let pass without firing it (0 for `--on-end`).
    pub(crate) suppressed: u64,
    /// Firings that failed (their events say why).
    pub failed: u64,
    /// Spikes on which it was not started because the bound was full (programs running,
    /// snapshots pending); not counted in `fired`.
    #[serde(default)]
    pub refused: u64,
    /// Spikes on which it was not fired because the run's snapshots had reached their limit
    /// (`snapshot` only); not counted in `fired`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub over_limit: u64,
    /// `exec:` only: its programs' starts and ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub programs: Option<ProgramCounts>,
}

//! What passes between the load supervisor and a worker process: the report pipe, its
//! messages, and the marker every load process carries. A leaf module, so that neither side
//! depends on the other's internals.

use serde::{Deserialize, Serialize};

/// The descriptor the worker reports on.
pub(crate) const REPORT_FD: i32 = 3;
/// Set in every load process's environment (value: jitterlab's pid and the load's index), so
/// that they can be recognised in /proc; inherited by everything a load starts.
pub(crate) const MARKER_ENV: &str = "JITTERLAB_LOAD";

/// One line on the report pipe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub(crate) enum WorkerMessage {
    /// Set up (affinity, policy) and about to start working.
    Ready,
    /// The counters so far, after `elapsed_ns` of work.
    Counters { elapsed_ns: u64, values: Vec<u64> },
    /// The last counters: the generator finished (hackbench once) or was told to stop.
    Done { elapsed_ns: u64, values: Vec<u64> },
    /// The generator could not start or failed; `code` is the exit code it means (3: the
    /// system refused, 4: failure while running).
    Failed { message: String, code: u8 },
}

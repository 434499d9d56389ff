//! run.json's `cpu_time`: what jitterlab's own process cost, per measuring thread, for the
//! recorder and in total (docs/result-format.md).

use serde::{Deserialize, Serialize};

/// What jitterlab's own process cost, ns. The measuring threads are listed one by one; the
/// rest of the process (the trace reader, the spike injector, the load supervisor's threads)
/// is the process total less them and the recorder thread. Load generators run in child
/// processes and are in none of these (their CPU time is in `loads[].throughput`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuTimeRecord {
    /// User time of every thread of the process, ended ones included (getrusage RUSAGE_SELF).
    pub(crate) process_user_ns: u64,
    /// System time of every thread of the process, ended ones included.
    pub(crate) process_system_ns: u64,
    /// The thread that drained the measuring threads' rings and wrote the results
    /// (CLOCK_THREAD_CPUTIME_ID), up to the end of the run.
    pub(crate) recorder_thread_ns: u64,
    /// Each measuring thread's CPU time over its whole life (set-up included), in the order of
    /// `threads`.
    pub measuring_threads: Vec<ThreadCpuTime>,
}

/// One measuring thread's CPU time: CLOCK_THREAD_CPUTIME_ID read by the thread itself as its
/// last act, ns. Per wakeup: `cpu_time_ns / (samples + dropped_records)` of its `threads` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadCpuTime {
    pub cpu: usize,
    pub(crate) thread_index: usize,
    pub(crate) cpu_time_ns: u64,
}

impl CpuTimeRecord {
    /// The measuring thread on `cpu`'s CPU time, ns.
    pub(crate) fn of_cpu(&self, cpu: usize) -> Option<u64> {
        self.measuring_threads
            .iter()
            .find(|t| t.cpu == cpu)
            .map(|t| t.cpu_time_ns)
    }
}

//! What a measuring thread gives back: its [`Sample`]s (through the ring), the
//! [`ThreadCounters`] it publishes while it runs, and how its loop ended ([`ThreadEnd`]). At the
//! bottom of `measure/`: the loops (`cycle.rs`, `noise.rs`), the wake methods and the thread's
//! setup all name these, and this file names nothing of theirs.

use std::sync::atomic::{AtomicI32, AtomicU64};

/// One wakeup, as pushed by a measuring thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sample {
    /// Wakeup number within the thread, from 0. A gap means the ring was full (a dropped record).
    pub seq: u64,
    /// When the wakeup was due, in ns on the run's clock.
    pub expected_ns: u64,
    /// Clock read after waking minus `expected_ns`. Negative only if the clock stepped back or
    /// the wake method woke early (see docs/user-guide.md, "Wake methods").
    pub latency_ns: i64,
    /// Periods whose due time had already passed when this wakeup happened: they were not
    /// served and are counted as missed periods.
    pub missed: u32,
}

/// What a measuring thread publishes while it runs. Written only by that thread, with relaxed
/// stores (a plain store instruction, no lock, no read-modify-write), and only when a record
/// is dropped or a period missed, and once at its end: the common cycle touches no shared line
/// but the ring's.
#[derive(Debug, Default)]
pub struct ThreadCounters {
    /// Kernel thread id, once the thread has started (0 before).
    pub tid: AtomicI32,
    /// IPC wake methods only: the kernel thread id of the thread's sender, once started.
    pub(crate) sender_tid: AtomicI32,
    /// `--ipc-between processes` only: the pid of the thread's sender process while it runs
    /// (0 before it starts and once it is being reaped), for the stop's interrupt.
    pub(crate) sender_process: AtomicI32,
    /// IPC wake methods only: the sender's CPU time over its life, ns, stored once it has been
    /// joined; added to `cpu_time_ns`.
    pub(crate) sender_cpu_time_ns: AtomicU64,
    /// `--wake pi-mutex` only: priority inversions so far, and the worst one's latency, ns
    /// ([`super::wake::inversion`]); stored at each inversion.
    pub inversions: AtomicU64,
    pub(crate) worst_inversion_ns: AtomicU64,
    /// Samples that found the ring full and were not recorded.
    pub dropped_records: AtomicU64,
    /// Missed periods so far, including those of dropped records.
    pub missed_periods: AtomicU64,
    /// The thread's CPU time over its whole life, ns: stored once, when its loop has ended (0
    /// before). Read it after joining the thread.
    pub(crate) cpu_time_ns: AtomicU64,
    /// Noise loop only ([`super::noise`]): the sum of the gaps above the threshold so far, ns.
    pub noise_ns: AtomicU64,
    /// Noise loop only: loop iterations (clock reads) so far, published every
    /// [`super::noise::PUBLISH_EVERY`].
    pub(crate) iterations: AtomicU64,
    /// Noise loop only: the time from the loop's first read to its last published one, ns.
    pub(crate) span_ns: AtomicU64,
    /// Noise loop only: gaps taken for real-time throttling (not pushed), and their sum, ns.
    pub(crate) throttled_gaps: AtomicU64,
    pub(crate) throttled_ns: AtomicU64,
    /// Latency loop only: the times it gave its CPU up to jitterlab's own threads (the
    /// starvation guard, [`super::guard`]), and for how long in all, ns; stored at each.
    pub(crate) guard_yields: AtomicU64,
    pub(crate) guard_yielded_ns: AtomicU64,
    /// Noise loop only: its clock's calibration ([`super::noise_clock`]).
    pub clock: CalibrationCounters,
}

/// A noise loop's calibration as it publishes it (run.json `threads[].noise.clock`).
#[derive(Debug, Default)]
pub struct CalibrationCounters {
    /// The clock's ticks per second (1e9 for CLOCK_MONOTONIC).
    pub(crate) ticks_per_s: AtomicU64,
    /// Recalibrations done in the loop.
    pub(crate) recalibrations: AtomicU64,
    /// The largest conversion error a recalibration corrected, ns.
    pub(crate) largest_correction_ns: AtomicU64,
}

/// How a measuring thread's loop ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ThreadEnd {
    /// It reached its duration or loop count.
    Completed,
    /// The stop flag was raised (SIGINT, SIGTERM, or another thread's failure).
    Stopped,
    /// The sleep syscall failed; the message names it and the error.
    Failed(String),
}

//! The real-time hot path: measuring-thread setup, wake methods and the cycle loop.
//!
//! This module depends on nothing else of jitterlab's. It is handed a [`ThreadPlan`] and gives
//! back a stream of [`Sample`]s through a wait-free single-producer ring, plus a few counters
//! that the thread publishes with relaxed atomic stores. The loop in [`cycle`] performs one sleep
//! syscall and one vDSO clock read per wakeup and never allocates, locks, prints or blocks on
//! the consumer. The noise loop ([`noise`]) is the other kind of measuring thread: it never
//! sleeps, and pushes the gaps it sees through the same ring.

pub mod clock;
pub mod cycle;
pub(crate) mod guard;
pub mod noise;
pub(crate) mod noise_clock;
pub mod sched;
pub mod thread;
pub mod wake;
pub mod waker;

pub use clock::Clock;
pub use sched::{Policy, PolicyKind};
pub(crate) use thread::{MeasuringThread, SetupError, StartGate, ThreadPlan, spawn_measuring_thread};
pub use wake::WakeMethod;

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
    /// ([`wake::inversion`]); stored at each inversion.
    pub inversions: AtomicU64,
    pub(crate) worst_inversion_ns: AtomicU64,
    /// Samples that found the ring full and were not recorded.
    pub dropped_records: AtomicU64,
    /// Missed periods so far, including those of dropped records.
    pub missed_periods: AtomicU64,
    /// The thread's CPU time over its whole life, ns: stored once, when its loop has ended (0
    /// before). Read it after joining the thread.
    pub(crate) cpu_time_ns: AtomicU64,
    /// Noise loop only ([`noise`]): the sum of the gaps above the threshold so far, ns.
    pub noise_ns: AtomicU64,
    /// Noise loop only: loop iterations (clock reads) so far, published every
    /// [`noise::PUBLISH_EVERY`].
    pub(crate) iterations: AtomicU64,
    /// Noise loop only: the time from the loop's first read to its last published one, ns.
    pub(crate) span_ns: AtomicU64,
    /// Noise loop only: gaps taken for real-time throttling (not pushed), and their sum, ns.
    pub(crate) throttled_gaps: AtomicU64,
    pub(crate) throttled_ns: AtomicU64,
    /// Latency loop only: the times it gave its CPU up to jitterlab's own threads (the
    /// starvation guard, [`guard`]), and for how long in all, ns; stored at each.
    pub(crate) guard_yields: AtomicU64,
    pub(crate) guard_yielded_ns: AtomicU64,
    /// Noise loop only: its clock's calibration ([`noise_clock`]).
    pub clock: CalibrationCounters,
}

/// A noise loop's calibration as it publishes it (run.json `threads[].noise.clock`).
#[derive(Debug, Default)]
pub(crate) struct CalibrationCounters {
    /// The clock's ticks per second (1e9 for CLOCK_MONOTONIC).
    pub(crate) ticks_per_s: AtomicU64,
    /// Recalibrations done in the loop.
    pub(crate) recalibrations: AtomicU64,
    /// The largest conversion error a recalibration corrected, ns.
    pub(crate) largest_correction_ns: AtomicU64,
}

/// What a measuring thread measures, with what only that kind needs. A new kind of
/// measurement is one variant here with its plan type, and one branch in `thread::measure`.
#[derive(Debug, Clone)]
pub(crate) enum MeasureKind {
    /// `jitterlab run`: how late each wakeup of a wake method comes.
    Latency(WakeupPlan),
    /// `jitterlab noise`: the gaps in a loop that never sleeps.
    Noise(NoiseSpec),
}

/// A latency thread's wakeups: how it sleeps, on which clock, how often, and for how long.
#[derive(Debug, Clone)]
pub(crate) struct WakeupPlan {
    pub wake: &'static WakeMethod,
    pub clock: Clock,
    /// The thread's period (cyclictest -i plus its -d share).
    pub interval_ns: u64,
    /// Added to the period after every wakeup (`--interval-step`).
    pub interval_step_ns: u64,
    /// Stop after this many wakeups; otherwise at the gate's end time.
    pub loops: Option<u64>,
    /// Where the sender runs, for wake methods woken by another thread.
    pub sender: Option<wake::ipc::SenderPlan>,
    /// The holder and the hog of `--wake pi-mutex`.
    pub inversion: Option<wake::inversion::InversionPlan>,
}

/// A noise loop's settings (`jitterlab noise`), the same for every thread of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NoiseSpec {
    /// A gap between two clock reads longer than this is a noise event, ns.
    pub threshold_ns: u64,
    /// A gap at least this long is counted as real-time throttling instead (`u64::MAX`: none
    /// expected).
    pub(crate) throttle_min_ns: u64,
    /// What the loop reads.
    pub clock: noise_clock::NoiseClock,
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

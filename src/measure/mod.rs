//! The real-time hot path: measuring-thread setup, wake methods and the cycle loop.
//!
//! This module depends on nothing else of jitterlab's. It is handed a [`ThreadPlan`] and gives
//! back a stream of [`Sample`]s through a wait-free single-producer ring, plus a few counters
//! that the thread publishes with relaxed atomic stores. The loop in [`cycle`] performs one sleep
//! syscall and one vDSO clock read per wakeup and never allocates, locks, prints or blocks on
//! the consumer. Each kind of measuring thread is one `MeasuringLoop` in its own file: the
//! wakeups of a wake method (`wakeups.rs`), and the noise loop ([`noise`]), which never
//! sleeps and pushes the gaps it sees through the same ring.

pub mod clock;
pub mod cycle;
pub(crate) mod guard;
pub mod noise;
pub(crate) mod noise_clock;
pub(crate) mod sample;
pub mod sched;
pub mod thread;
pub mod wake;
pub mod waker;
pub(crate) mod wakeups;

pub use clock::Clock;
pub use noise::NoiseSpec;
pub use sample::{Sample, ThreadCounters, ThreadEnd};
pub use sched::Policy;
pub use sched::PolicyKind;
pub(crate) use thread::{
    MeasuringLoop, MeasuringThread, SetupError, StartGate, ThreadPlan, spawn_measuring_thread,
};
pub use wake::WakeMethod;
pub(crate) use wakeups::WakeupPlan;

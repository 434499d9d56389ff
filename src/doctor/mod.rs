//! The system as jitterlab sees it: the snapshot of the conditions a run was measured under
//! (run.json `system`), and the readiness checks of `jitterlab doctor` (commands/doctor.rs).
//!
//! Every check is a plain function over a [`checks::Ctx`], whose root path is `/` on the live
//! machine and a fixture tree in tests, so the same code judges both. What cannot be read
//! from files (can this process get SCHED_FIFO? do POSIX message queues work?) is probed live
//! in [`probes`], which undoes everything it changes.

pub mod checks;
pub mod host;
pub(crate) mod kconfig;
pub(crate) mod probes;
pub mod render;
pub mod root;
pub mod snapshot;
mod verdict;

pub use snapshot::snapshot;
pub(crate) use snapshot::SystemSnapshot;
pub use verdict::Verdict;

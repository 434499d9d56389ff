//! The system as jitterlab sees it: the snapshot of the conditions a run was measured under
//! (run.json `system`), and the readiness checks of `jitterlab doctor` (commands/doctor.rs).
//!
//! Every check is a plain function over a [`checks::Ctx`], whose root path is `/` on the live
//! machine and a fixture tree in tests, so the same code judges both. What cannot be read
//! from files (can this process get SCHED_FIFO? do POSIX message queues work?) is probed live
//! in [`probes`], which undoes everything it changes.

pub(crate) mod checks;
pub(crate) mod host;
pub(crate) mod kconfig;
pub(crate) mod probes;
pub(crate) mod render;
pub(crate) mod root;
pub(crate) mod snapshot;
mod verdict;

pub(crate) use snapshot::SystemSnapshot;
pub(crate) use snapshot::snapshot;
pub(crate) use verdict::Verdict;

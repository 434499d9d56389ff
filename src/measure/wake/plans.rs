//! What the wake methods that are more than one thread need besides the loop, as `Cycles`
//! (driver.rs) carries it to their drivers: where an IPC method's sender runs ([`SenderPlan`],
//! `ipc/`) and the helpers of `--wake pi-mutex` ([`InversionPlan`], `inversion.rs`). Plain
//! settings, below the driver and the methods that read them, so that neither reaches back up.

use super::ipc::options::{Between, Pace};
use crate::measure::sched::Policy;

/// Where and how a receiver's sender runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SenderPlan {
    /// The CPU to pin the sender to; None leaves it to the scheduler.
    pub cpu: Option<usize>,
    pub policy: Policy,
    pub between: Between,
    pub pace: Pace,
    /// A sender process locks its memory, as the run's mlockall locks a sender thread's
    /// (`--no-mlock`: neither).
    pub(crate) lock_memory: bool,
}

/// A wakeup later than the hold plus this, while the hog ran inside the hold, is an inversion.
/// With inheritance the measuring thread waits at most the rest of one hold; the margin covers
/// the wake itself and the priority hand-over on a loaded virtual machine.
pub(crate) const INVERSION_MARGIN_NS: u64 = 100_000;

/// The scenario of one measuring thread: its two helpers, all on its CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InversionPlan {
    /// The CPU the helpers are pinned to (the measuring thread's); None leaves them to the
    /// scheduler (tests that lend the waker).
    pub cpu: Option<usize>,
    /// The low-priority thread that holds the mutex.
    pub holder: Policy,
    /// The medium-priority CPU hog.
    pub hog: Policy,
    /// CPU time the holder keeps the mutex for, ns.
    pub(crate) hold_ns: u64,
    /// Wall time the hog spins from each due time, ns.
    pub(crate) hog_ns: u64,
    /// PTHREAD_PRIO_INHERIT (true) or PTHREAD_PRIO_NONE (`--no-pi`).
    pub inherit: bool,
}

impl InversionPlan {
    /// Latencies above this, with the hog inside the hold, are inversions.
    pub(crate) fn inversion_above_ns(&self) -> u64 {
        self.hold_ns + INVERSION_MARGIN_NS
    }
}

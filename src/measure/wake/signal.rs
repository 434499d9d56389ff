//! The signals of the timer wake methods (`itimer`, `itimer-periodic`, `posix-timer`): which
//! they are, blocking them process-wide, and waiting for them.

use super::syscall::retry_interrupted;
use crate::sys::signal::{self as sig, Signal, SignalSet};
use std::io;
use std::sync::atomic::AtomicBool;

/// The signal that setitimer(ITIMER_REAL) delivers.
pub(crate) const ITIMER_SIGNAL: Signal = sig::SIGALRM;

/// The signal of the per-thread POSIX timers: the first real-time signal, which queues.
pub(crate) fn posix_timer_signal() -> Signal {
    sig::rt_min()
}

/// Blocks the timer signals in the calling thread, and so in every thread it creates later.
///
/// Must run in the main thread before any other thread exists: the timer signals are then
/// delivered only through sigwaitinfo in the measuring thread, never to a default handler
/// that would end the process.
pub fn block_timer_signals() {
    SignalSet::of(&[ITIMER_SIGNAL, posix_timer_signal()]).block_in_this_thread();
}

/// Waits for one of the signals of `set`, which every thread blocks (see
/// [`block_timer_signals`]).
pub(super) fn wait_for_signal(set: &SignalSet, stop: &AtomicBool) -> io::Result<()> {
    retry_interrupted(stop, || set.wait_raw() as isize)
}

/// Takes every pending signal of `set` without waiting.
pub(super) fn drain_signal(set: &SignalSet) {
    set.drain();
}

/// The set holding just `signal`.
pub(super) fn signal_set(signal: Signal) -> SignalSet {
    SignalSet::of(&[signal])
}

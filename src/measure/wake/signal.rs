//! The signals of the timer wake methods (`itimer`, `itimer-periodic`, `posix-timer`): which
//! they are, blocking them process-wide, and waiting for them.

use super::retry_interrupted;
use std::io;
use std::sync::atomic::AtomicBool;

/// The signal that setitimer(ITIMER_REAL) delivers.
pub const ITIMER_SIGNAL: libc::c_int = libc::SIGALRM;

/// The signal of the per-thread POSIX timers: the first real-time signal, which queues.
pub fn posix_timer_signal() -> libc::c_int {
    libc::SIGRTMIN()
}

/// Blocks the timer signals in the calling thread, and so in every thread it creates later.
///
/// Must run in the main thread before any other thread exists: the timer signals are then
/// delivered only through sigwaitinfo in the measuring thread, never to a default handler
/// that would end the process.
pub fn block_timer_signals() {
    // SAFETY: sigset operations on a local set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, ITIMER_SIGNAL);
        libc::sigaddset(&mut set, posix_timer_signal());
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// Waits for one of the signals of `set`, which every thread blocks (see
/// [`block_timer_signals`]).
pub(super) fn wait_for_signal(set: &libc::sigset_t, stop: &AtomicBool) -> io::Result<()> {
    // SAFETY: valid set; the siginfo is not needed.
    retry_interrupted(stop, || unsafe {
        libc::sigwaitinfo(set, std::ptr::null_mut()) as isize
    })
}

/// Takes every pending signal of `set` without waiting.
pub(super) fn drain_signal(set: &libc::sigset_t) {
    let zero = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid set and timeout; the siginfo is not needed. Returns -1 (EAGAIN) once none
    // is pending.
    while unsafe { libc::sigtimedwait(set, std::ptr::null_mut(), &zero) } >= 0 {}
}

/// The set holding just `signal`.
pub(super) fn signal_set(signal: libc::c_int) -> libc::sigset_t {
    // SAFETY: sigset operations on a local set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signal);
        set
    }
}

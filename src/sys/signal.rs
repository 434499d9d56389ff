//! Signals: sets, per-thread masks, waiting for a signal, handlers, and sending one to a
//! thread. `sigset_t` differs in size between glibc (128 bytes) and musl; it never leaves
//! this file except inside [`SignalSet`].

use std::io;

/// A signal number.
pub type Signal = libc::c_int;

pub const SIGALRM: Signal = libc::SIGALRM;
pub const SIGINT: Signal = libc::SIGINT;
pub const SIGTERM: Signal = libc::SIGTERM;

/// The first real-time signal (SIGRTMIN: the C library reserves the ones below it, and glibc
/// and musl reserve different numbers, so it is asked for at run time).
pub fn rt_min() -> Signal {
    libc::SIGRTMIN()
}

/// A set of signals.
#[derive(Clone, Copy)]
pub struct SignalSet(libc::sigset_t);

impl SignalSet {
    /// The set holding `signals`.
    pub fn of(signals: &[Signal]) -> SignalSet {
        // SAFETY: sigset operations on a local set; all-zero is a valid starting value.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for &s in signals {
                libc::sigaddset(&mut set, s);
            }
            SignalSet(set)
        }
    }

    /// Whether `signal` is in the set.
    pub fn contains(&self, signal: Signal) -> bool {
        // SAFETY: valid set.
        unsafe { libc::sigismember(&self.0, signal) == 1 }
    }

    /// Blocks the set's signals in the calling thread (and so in threads it creates later).
    pub fn block_in_this_thread(&self) {
        // SAFETY: valid set; the old mask is not needed.
        unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &self.0, std::ptr::null_mut()) };
    }

    /// Waits for one of the set's signals, which the calling thread must block: the raw return
    /// of sigwaitinfo (the signal, or -1 with errno set, EINTR included).
    #[inline(always)]
    pub fn wait_raw(&self) -> libc::c_int {
        // SAFETY: valid set; the siginfo is not needed.
        unsafe { libc::sigwaitinfo(&self.0, std::ptr::null_mut()) }
    }

    /// Takes every pending signal of the set without waiting; how many were taken.
    pub fn drain(&self) -> usize {
        let zero = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let mut taken = 0;
        // SAFETY: valid set and timeout; returns -1 (EAGAIN) once none is pending.
        while unsafe { libc::sigtimedwait(&self.0, std::ptr::null_mut(), &zero) } >= 0 {
            taken += 1;
        }
        taken
    }
}

/// Installs a do-nothing handler for `signal` without SA_RESTART, so that a blocking call it
/// interrupts returns EINTR (and the default action, often ending the process, is gone).
pub fn install_interrupting_handler(signal: Signal) -> io::Result<()> {
    extern "C" fn ignore(_: libc::c_int) {}
    // SAFETY: sigaction with a handler that touches nothing; flags without SA_RESTART.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = ignore as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::sigemptyset(&mut action.sa_mask);
        action.sa_flags = 0;
        if libc::sigaction(signal, &action, std::ptr::null_mut()) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The kernel's id of the calling thread.
pub fn thread_id() -> libc::pid_t {
    // SAFETY: no arguments; cannot fail.
    unsafe { libc::gettid() }
}

/// Sends `signal` to thread `tid` of this process (tgkill).
pub fn send_to_thread(tid: libc::pid_t, signal: Signal) -> io::Result<()> {
    // SAFETY: plain syscall with integer arguments.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_tgkill,
            libc::getpid() as libc::c_long,
            tid as libc::c_long,
            signal as libc::c_long,
        )
    };
    if ret != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blocked_signal_sent_to_this_thread_is_waited_for_and_drained() {
        // On a thread of its own: the mask change must not leak into other tests.
        std::thread::spawn(|| {
            let signal = rt_min() + 5;
            let set = SignalSet::of(&[signal]);
            assert!(set.contains(signal) && !set.contains(SIGINT));
            set.block_in_this_thread();
            send_to_thread(thread_id(), signal).unwrap();
            assert_eq!(set.wait_raw(), signal);
            // A real-time signal queues: two sent, two drained.
            send_to_thread(thread_id(), signal).unwrap();
            send_to_thread(thread_id(), signal).unwrap();
            assert_eq!(set.drain(), 2);
            assert_eq!(set.drain(), 0);
        })
        .join()
        .unwrap();
    }
}

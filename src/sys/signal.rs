//! Signals: sets, per-thread masks, waiting for a signal, handlers, and sending one to a
//! thread. `sigset_t` differs in size between glibc (128 bytes) and musl; it never leaves
//! this file except inside [`SignalSet`].

use std::io;

/// A signal number.
pub(crate) type Signal = libc::c_int;

pub(crate) const SIGHUP: Signal = libc::SIGHUP;
pub const SIGINT: Signal = libc::SIGINT;
pub(crate) const SIGQUIT: Signal = libc::SIGQUIT;
pub(crate) const SIGILL: Signal = libc::SIGILL;
pub(crate) const SIGABRT: Signal = libc::SIGABRT;
pub(crate) const SIGBUS: Signal = libc::SIGBUS;
pub(crate) const SIGFPE: Signal = libc::SIGFPE;
pub const SIGKILL: Signal = libc::SIGKILL;
pub(crate) const SIGUSR1: Signal = libc::SIGUSR1;
pub(crate) const SIGSEGV: Signal = libc::SIGSEGV;
pub(crate) const SIGUSR2: Signal = libc::SIGUSR2;
pub(crate) const SIGPIPE: Signal = libc::SIGPIPE;
pub(crate) const SIGALRM: Signal = libc::SIGALRM;
pub const SIGTERM: Signal = libc::SIGTERM;
pub(crate) const SIGXCPU: Signal = libc::SIGXCPU;
pub(crate) const SIGSYS: Signal = libc::SIGSYS;
pub(crate) const SIGCONT: Signal = libc::SIGCONT;
pub(crate) const SIGSTOP: Signal = libc::SIGSTOP;
pub(crate) const SIGWINCH: Signal = libc::SIGWINCH;

/// How many SIGINTs and SIGTERMs asked this process to stop so far (counted by the handlers
/// of `session::signals`): what a wait that no one else can end looks at (the writer of a
/// user's FIFO whose reader does not read, `results::dir`), so that it ends at the next
/// request instead of holding the process.
static STOP_REQUESTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Counts a stop request. Async-signal-safe (one atomic add): called from the handlers.
pub(crate) fn note_stop_request() {
    STOP_REQUESTS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
}

/// How many stop requests came so far ([`note_stop_request`]).
pub(crate) fn stop_requests() -> u64 {
    STOP_REQUESTS.load(std::sync::atomic::Ordering::SeqCst)
}

/// The name of `signal` (`SIGKILL`), for those a load can die of; None for others.
pub fn name(signal: Signal) -> Option<&'static str> {
    Some(match signal {
        SIGHUP => "SIGHUP",
        SIGINT => "SIGINT",
        SIGQUIT => "SIGQUIT",
        SIGILL => "SIGILL",
        SIGABRT => "SIGABRT",
        SIGBUS => "SIGBUS",
        SIGFPE => "SIGFPE",
        SIGKILL => "SIGKILL",
        SIGUSR1 => "SIGUSR1",
        SIGSEGV => "SIGSEGV",
        SIGUSR2 => "SIGUSR2",
        SIGPIPE => "SIGPIPE",
        SIGALRM => "SIGALRM",
        SIGTERM => "SIGTERM",
        SIGXCPU => "SIGXCPU",
        SIGSYS => "SIGSYS",
        SIGCONT => "SIGCONT",
        SIGSTOP => "SIGSTOP",
        SIGWINCH => "SIGWINCH",
        _ => return None,
    })
}

/// The first real-time signal (SIGRTMIN: the C library reserves the ones below it, and glibc
/// and musl reserve different numbers, so it is asked for at run time).
pub(crate) fn rt_min() -> Signal {
    libc::SIGRTMIN()
}

/// The last real-time signal (SIGRTMAX).
pub(crate) fn rt_max() -> Signal {
    libc::SIGRTMAX()
}

/// A set of signals.
#[derive(Clone, Copy)]
pub(crate) struct SignalSet(libc::sigset_t);

impl SignalSet {
    /// The set holding `signals`.
    pub(crate) fn of(signals: &[Signal]) -> SignalSet {
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
    pub(crate) fn contains(&self, signal: Signal) -> bool {
        // SAFETY: valid set.
        unsafe { libc::sigismember(&self.0, signal) == 1 }
    }

    /// Blocks the set's signals in the calling thread (and so in threads it creates later).
    pub(crate) fn block_in_this_thread(&self) {
        // SAFETY: valid set; the old mask is not needed.
        unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &self.0, std::ptr::null_mut()) };
    }

    /// Blocks the set's signals in the calling thread; the mask it had before, for
    /// [`SignalSet::set_as_mask_of_this_thread`].
    pub(crate) fn block_in_this_thread_saving(&self) -> SignalSet {
        let mut old = SignalSet::of(&[]);
        // SAFETY: valid sets.
        unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &self.0, &mut old.0) };
        old
    }

    /// Unblocks the set's signals in the calling thread: a signal of the set that came while
    /// they were blocked is delivered now, before this returns.
    pub(crate) fn unblock_in_this_thread(&self) {
        // SAFETY: valid set; the old mask is not needed.
        unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &self.0, std::ptr::null_mut()) };
    }

    /// Makes the set the calling thread's signal mask (restoring a saved one).
    pub(crate) fn set_as_mask_of_this_thread(&self) {
        // SAFETY: valid set; the old mask is not needed.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.0, std::ptr::null_mut()) };
    }

    /// Blocks the set's signals in the whole (single-threaded: a forked child's) process with
    /// sigprocmask. Async-signal-safe.
    pub(crate) fn block_in_this_process(&self) {
        // SAFETY: valid set; the old mask is not needed.
        unsafe { libc::sigprocmask(libc::SIG_BLOCK, &self.0, std::ptr::null_mut()) };
    }

    /// The signals pending for the calling thread or its process.
    pub(crate) fn pending() -> SignalSet {
        let mut set = SignalSet::of(&[]);
        // SAFETY: valid out-pointer.
        unsafe { libc::sigpending(&mut set.0) };
        set
    }

    /// Takes one pending signal of the set without waiting, with the value it was queued with
    /// (sigqueue's `sival_ptr`); None when none is pending.
    pub(crate) fn take_with_value(&self) -> Option<(Signal, usize)> {
        let zero = super::time::ns_to_timespec(0);
        // SAFETY: siginfo_t is plain data; all-zero is valid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: valid set, out-pointer and timeout.
        let sig = unsafe { libc::sigtimedwait(&self.0, &mut info, &zero) };
        // SAFETY: a signal sigtimedwait returned has a filled-in siginfo.
        (sig > 0).then(|| (sig, unsafe { info.si_value() }.sival_ptr as usize))
    }

    /// Waits for one of the set's signals, which the calling thread must block: the raw return
    /// of sigwaitinfo (the signal, or -1 with errno set, EINTR included).
    #[inline(always)]
    pub(crate) fn wait_raw(&self) -> libc::c_int {
        // SAFETY: valid set; the siginfo is not needed.
        unsafe { libc::sigwaitinfo(&self.0, std::ptr::null_mut()) }
    }

    /// Takes every pending signal of the set without waiting; how many were taken.
    pub(crate) fn drain(&self) -> usize {
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
pub(crate) fn install_interrupting_handler(signal: Signal) -> io::Result<()> {
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

/// Whether `signal`'s action is to ignore it (SIG_IGN): what `nohup` sets for SIGHUP, and a
/// process started so keeps.
pub(crate) fn is_ignored(signal: Signal) -> bool {
    // SAFETY: sigaction with a null new action only reads the current one into `old`.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &mut old) == 0
            && old.sa_sigaction == libc::SIG_IGN
    }
}

/// Sets `signal`'s action to ignore it (SIG_IGN).
pub(crate) fn ignore(signal: Signal) {
    // SAFETY: plain syscall with a constant disposition.
    unsafe { libc::signal(signal, libc::SIG_IGN) };
}

/// Sets `signal`'s action back to the default (SIG_DFL). Async-signal-safe.
pub(crate) fn set_default_action(signal: Signal) {
    // SAFETY: plain syscall with a constant disposition.
    unsafe { libc::signal(signal, libc::SIG_DFL) };
}

/// The head of siginfo_t for a queued signal: si_signo, si_errno, si_code, then the `_rt`
/// member of the union; the rest of the 128 bytes stays zero.
#[repr(C)]
struct QueuedInfo {
    signo: libc::c_int,
    errno: libc::c_int,
    code: libc::c_int,
    // A struct of its own because the kernel's union is pointer-aligned: on 64-bit targets it
    // starts at offset 16, not 12.
    rt: QueuedRt,
}

#[repr(C)]
struct QueuedRt {
    pid: libc::pid_t,
    uid: libc::uid_t,
    value: libc::sigval,
}

/// Queues `signal` with `value` (as sigqueue's `sival_ptr`) to the calling thread only.
/// rt_tgsigqueueinfo is sigqueue(3) aimed at one thread (what pthread_sigqueue uses): a
/// process-directed sigqueue could be delivered to another thread that does not block the
/// signal.
pub(crate) fn queue_to_this_thread(signal: Signal, value: usize) -> io::Result<()> {
    // SAFETY: siginfo_t is plain data, all-zero is valid, and QueuedInfo is a prefix of it.
    let ret = unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let head = &mut info as *mut libc::siginfo_t as *mut QueuedInfo;
        (*head).signo = signal;
        (*head).code = libc::SI_QUEUE;
        (*head).rt = QueuedRt {
            pid: libc::getpid(),
            uid: libc::getuid(),
            value: libc::sigval {
                sival_ptr: value as *mut libc::c_void,
            },
        };
        libc::syscall(
            libc::SYS_rt_tgsigqueueinfo,
            libc::getpid(),
            libc::gettid(),
            signal,
            &info,
        )
    };
    if ret != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The kernel's id of the calling thread.
pub(crate) fn thread_id() -> libc::pid_t {
    // SAFETY: no arguments; cannot fail.
    unsafe { libc::gettid() }
}

/// Sends `signal` to thread `tid` of this process (tgkill).
pub(crate) fn send_to_thread(tid: libc::pid_t, signal: Signal) -> io::Result<()> {
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

    #[test]
    fn values_queued_to_this_thread_come_back_in_order() {
        std::thread::spawn(|| {
            // A real-time signal jitterlab itself does not use. Not SIGRTMAX: qemu-user keeps
            // the last real-time signals for itself (rt_tgsigqueueinfo gives EINVAL under
            // qemu-arm 7.2), and ci/cross.sh runs these tests there.
            let signal = rt_min() + 3;
            let set = SignalSet::of(&[signal]);
            let old = set.block_in_this_thread_saving();
            assert!(!old.contains(signal));
            assert!(!SignalSet::pending().contains(signal));
            for v in [11, 22, 33] {
                queue_to_this_thread(signal, v).unwrap();
            }
            assert!(SignalSet::pending().contains(signal));
            let got: Vec<_> = std::iter::from_fn(|| set.take_with_value()).collect();
            assert_eq!(got, [(signal, 11), (signal, 22), (signal, 33)]);
            old.set_as_mask_of_this_thread();
            assert_eq!(name(SIGKILL), Some("SIGKILL"));
            assert_eq!(name(signal), None);
        })
        .join()
        .unwrap();
    }
}

//! Queued real-time signals between the threads of a pair (the `signal` and `sigwait` wake
//! methods): the sender's side ([`ThreadSignal`]) and the receiver's ([`SignalWaiter`]).
//!
//! glibc/musl differences: `sival_ptr` is pointer-sized, so a signal carries a 64-bit value only
//! on 64-bit targets ([`SIGNAL_VALUE_CARRIES_U64`]).

use super::errno_result;
use std::io;

/// Whether a queued signal's value (`sival_ptr`, pointer-sized) holds a whole u64.
pub(crate) const SIGNAL_VALUE_CARRIES_U64: bool = usize::BITS >= 64;

/// A signal aimed at one thread of this process, with everything the send needs looked up
/// once: the process id and user id are syscalls (glibc no longer caches getpid), and a sender
/// that paid for them per wake would put two or three syscalls between its stamp and the wake.
pub(crate) struct ThreadSignal {
    pid: libc::pid_t,
    uid: libc::uid_t,
    tid: libc::pid_t,
    signal: libc::c_int,
}

impl ThreadSignal {
    /// `signal` to thread `tid` of this process.
    pub(crate) fn to_thread(tid: libc::pid_t, signal: libc::c_int) -> ThreadSignal {
        // SAFETY: plain syscalls without arguments; they cannot fail.
        let (pid, uid) = unsafe { (libc::getpid(), libc::getuid()) };
        ThreadSignal {
            pid,
            uid,
            tid,
            signal,
        }
    }

    /// `signal` to thread `tid` of process `pid` (which may be another process, e.g. a forked
    /// sender), sent by user `uid`: no syscall, so that it can be made in a forked child.
    pub(crate) fn to_thread_of(
        pid: libc::pid_t,
        tid: libc::pid_t,
        uid: libc::uid_t,
        signal: libc::c_int,
    ) -> ThreadSignal {
        ThreadSignal {
            pid,
            uid,
            tid,
            signal,
        }
    }

    /// Sends the plain signal (tgkill): one syscall.
    pub(crate) fn send(&self) -> io::Result<()> {
        // SAFETY: plain syscall with integer arguments.
        let ret = unsafe {
            libc::syscall(
                libc::SYS_tgkill,
                self.pid as libc::c_long,
                self.tid as libc::c_long,
                self.signal as libc::c_long,
            )
        };
        if ret != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Queues the signal with `value` (truncated to a pointer's width): rt_tgsigqueueinfo with
    /// SI_QUEUE, as sigqueue() but aimed at one thread; one syscall.
    pub(crate) fn queue(&self, value: u64) -> io::Result<()> {
        // SAFETY: all-zero siginfo is valid; the fields written are those of SI_QUEUE.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        info.si_signo = self.signal;
        info.si_code = libc::SI_QUEUE;
        // The SI_QUEUE member of the union (si_pid, si_uid, si_value) follows the three ints at
        // the union's alignment, a pointer's; libc exposes no setter, so it is written through
        // structs of that layout.
        #[repr(C)]
        struct Queued {
            signo: libc::c_int,
            errno: libc::c_int,
            code: libc::c_int,
            rt: Rt,
        }
        #[repr(C)]
        struct Rt {
            pid: libc::pid_t,
            uid: libc::uid_t,
            value: libc::sigval,
        }
        const _: () = assert!(size_of::<Queued>() <= size_of::<libc::siginfo_t>());
        // SAFETY: siginfo_t is larger than Queued and starts with this layout for SI_QUEUE.
        unsafe {
            let queued = &mut *(&mut info as *mut libc::siginfo_t).cast::<Queued>();
            queued.rt.pid = self.pid;
            queued.rt.uid = self.uid;
            queued.rt.value = libc::sigval {
                sival_ptr: value as usize as *mut libc::c_void,
            };
        }
        // SAFETY: plain syscall with a valid siginfo.
        let ret = unsafe {
            libc::syscall(
                libc::SYS_rt_tgsigqueueinfo,
                self.pid,
                self.tid,
                self.signal,
                &info as *const libc::siginfo_t,
            )
        };
        if ret < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// The calling thread's process id and kernel thread id. Async-signal-safe (two syscalls).
pub(crate) fn calling_thread_ids() -> (libc::pid_t, libc::pid_t) {
    // SAFETY: plain syscalls without arguments; they cannot fail.
    unsafe { (libc::getpid(), libc::gettid()) }
}

/// The calling process's real user id: the origin a queued signal names.
pub(crate) fn user_id() -> libc::uid_t {
    // SAFETY: plain syscall without arguments; it cannot fail.
    unsafe { libc::getuid() }
}

/// One signal that the calling thread blocks and waits for without a handler.
pub(crate) struct SignalWaiter {
    set: libc::sigset_t,
    signal: libc::c_int,
}

// SAFETY: a sigset_t is plain data.
unsafe impl Send for SignalWaiter {}
unsafe impl Sync for SignalWaiter {}

impl SignalWaiter {
    /// Blocks `signal` in the calling thread (it then stays pending until waited for).
    pub(crate) fn block_in_this_thread(signal: libc::c_int) -> SignalWaiter {
        let waiter = SignalWaiter::for_signal(signal);
        waiter.block_in_calling_thread();
        waiter
    }

    /// A waiter for `signal` that blocks it nowhere yet: the thread that will wait calls
    /// [`SignalWaiter::block_in_calling_thread`] (e.g. a sender, in its own thread or process).
    pub(crate) fn for_signal(signal: libc::c_int) -> SignalWaiter {
        // SAFETY: sigset operations on a local set.
        let set = unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, signal);
            set
        };
        SignalWaiter { set, signal }
    }

    /// Blocks the signal in the calling thread. Async-signal-safe (one rt_sigprocmask).
    pub(crate) fn block_in_calling_thread(&self) {
        // SAFETY: a valid set; no old set wanted.
        unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &self.set, std::ptr::null_mut()) };
    }

    /// sigwaitinfo without the signal's information (the call glibc's sigwait makes): returns
    /// once the signal was taken, or the error (EINTR included, unlike sigwait).
    /// Async-signal-safe.
    pub(crate) fn wait_once(&self) -> io::Result<()> {
        // SAFETY: a valid set; sigwaitinfo takes a null info.
        if unsafe { libc::sigwaitinfo(&self.set, std::ptr::null_mut()) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// sigwaitinfo: the value the signal was queued with, or the error (EINTR included).
    pub(crate) fn wait_value(&self) -> io::Result<u64> {
        // SAFETY: all-zero siginfo is valid output storage.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: valid set and output.
        if unsafe { libc::sigwaitinfo(&self.set, &mut info) } < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the signal was queued with SI_QUEUE, so si_value is the member in use.
        Ok(unsafe { info.si_value().sival_ptr } as usize as u64)
    }

    /// Plain sigwait, as sigwaittest: no value. glibc resumes it after EINTR itself.
    pub(crate) fn wait(&self) -> io::Result<()> {
        let mut got = 0;
        // SAFETY: valid set and output.
        errno_result(unsafe { libc::sigwait(&self.set, &mut got) })?;
        debug_assert_eq!(got, self.signal);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queued_signal_carries_its_value_to_the_thread() {
        std::thread::spawn(|| {
            let signal = libc::SIGRTMIN() + 6;
            let waiter = SignalWaiter::block_in_this_thread(signal);
            let value = if SIGNAL_VALUE_CARRIES_U64 {
                0x1234_5678_9abc_def0
            } else {
                0x9abc_def0
            };
            ThreadSignal::to_thread(crate::sys::signal::thread_id(), signal)
                .queue(value)
                .unwrap();
            assert_eq!(waiter.wait_value().unwrap(), value);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_plain_signal_reaches_the_thread_it_was_aimed_at() {
        std::thread::spawn(|| {
            let signal = libc::SIGRTMIN() + 7;
            let waiter = SignalWaiter::block_in_this_thread(signal);
            let me = ThreadSignal::to_thread(crate::sys::signal::thread_id(), signal);
            me.send().unwrap();
            waiter.wait().unwrap();
            // A thread of another process id gets nothing (ESRCH): the pid is this process's.
            let nobody = ThreadSignal {
                pid: 0x7fff_fff0,
                ..me
            };
            assert_eq!(nobody.send().unwrap_err().raw_os_error(), Some(libc::ESRCH));
        })
        .join()
        .unwrap();
    }
}

//! How a receiver paced by its own sleep (`--ipc-pace receiver`) wakes its sender for each
//! due time: rt-tests' "sync" object.
//!
//! rt-tests' receiver wakes its sender through a second object of the mechanism under test
//! (pmqtest: a second queue; sigwaittest: a signal the sender takes with sigwait; ptsematest,
//! svsematest: a second mutex or semaphore). That matters for the number although the
//! handover is outside the span timed: on the shared CPU the receiver's handover runs the
//! kernel's send path (its code, its slab objects, the signal queue) a few microseconds before
//! the sender's timed send runs it again, so the timed send finds it in the caches. A futex
//! handover leaves it as cold as the other work of the last interval left it: on a busy 2-CPU
//! VM that put 3 us more into every `mq` send (ftrace: mq_timedsend's entry to its
//! sched_wakeup, 4 us after a futex handover, 1 us after pmqtest's queue handover) and made
//! `mq`, `sigwait` and `signal` 1.4-1.7 times rt-tests' mean. So each mechanism that carries
//! its wake through a kernel path of its own hands over through the same path
//! ([`QueueHandover`], [`SignalHandover`]); the others use [`FutexHandover`], whose path is
//! theirs (pthread mutexes, POSIX semaphores, condition variables and futexes block in a
//! futex) or close to it.
//!
//! The default pace (`sender-timer`) does not use this: its sender sleeps on its own timer and
//! is handed each due time through the pair's futex word (mod.rs).

use crate::sys::ipc::{
    MessageQueue, Scope, SignalWaiter, ThreadSignal, calling_thread_ids, user_id,
};
use crate::sys::ipc::{futex_wait_in, futex_wake_one_in};
use crate::sys::signal;
use std::io;
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering::*};

/// The signal both methods use: the third real-time signal (the first is the POSIX timer's,
/// the second the stop's interrupt, see measure/thread.rs).
pub(crate) fn ipc_signal() -> signal::Signal {
    signal::rt_min() + 2
}

/// The receiver-to-sender wake of `--ipc-pace receiver`. Made in the receiving thread before
/// the sender starts; with [`Scope::Shared`] it also works from a child forked afterwards,
/// whose calls must then be async-signal-safe.
pub(crate) trait Handover: Send + Sync + Sized + 'static {
    fn open(scope: Scope) -> io::Result<Self>;

    /// In the sender (thread or forked process) during its setup, before it says it is ready:
    /// whatever the wake needs from the sender's side.
    fn attach_sender(&self) -> io::Result<()>;

    /// Receiver side: wakes the sender (which then stamps and sends at once).
    fn wake_sender(&self) -> io::Result<()>;

    /// Sender side: blocks until woken; EINTR when a signal with a handler (the stop's
    /// interrupt) arrives first.
    fn await_receiver(&self) -> io::Result<()>;
}

/// A futex word counting the wakes handed over.
pub(crate) struct FutexHandover {
    scope: Scope,
    posted: AtomicU32,
    /// Written by the sender only.
    taken: AtomicU32,
}

impl Handover for FutexHandover {
    fn open(scope: Scope) -> io::Result<Self> {
        Ok(FutexHandover {
            scope,
            posted: AtomicU32::new(0),
            taken: AtomicU32::new(0),
        })
    }

    fn attach_sender(&self) -> io::Result<()> {
        Ok(())
    }

    fn wake_sender(&self) -> io::Result<()> {
        self.posted.fetch_add(1, Release);
        futex_wake_one_in(self.scope, &self.posted);
        Ok(())
    }

    fn await_receiver(&self) -> io::Result<()> {
        let taken = self.taken.load(Relaxed);
        loop {
            let posted = self.posted.load(Acquire);
            if posted != taken {
                self.taken.store(taken.wrapping_add(1), Relaxed);
                return Ok(());
            }
            match futex_wait_in(self.scope, &self.posted, posted) {
                Err(e) if e.raw_os_error() == Some(crate::sys::errno::EAGAIN) => {}
                other => other?,
            }
        }
    }
}

/// A second POSIX message queue, as pmqtest's sync queue: mq_send / mq_receive of 8 bytes.
pub(crate) struct QueueHandover(MessageQueue);

impl Handover for QueueHandover {
    fn open(_scope: Scope) -> io::Result<Self> {
        // One wake in flight, plus the closing wake.
        MessageQueue::new(2).map(QueueHandover)
    }

    fn attach_sender(&self) -> io::Result<()> {
        Ok(())
    }

    fn wake_sender(&self) -> io::Result<()> {
        self.0.send(0)
    }

    fn await_receiver(&self) -> io::Result<()> {
        self.0.receive().map(drop)
    }
}

/// A real-time signal aimed at the sender's thread, taken there without a handler: sigwaitinfo
/// (the call behind sigwait, as sigwaittest's sender). `QUEUED` sends it as the `signal`
/// method does (rt_tgsigqueueinfo), else as `sigwait` does (tgkill).
pub(crate) struct SignalHandover<const QUEUED: bool> {
    waiter: SignalWaiter,
    signal: signal::Signal,
    /// The receiver's user id: the signal's origin, looked up once.
    uid: u32,
    /// Where the sender runs, written by it before it says it is ready (0: not yet).
    sender_pid: AtomicI32,
    sender_tid: AtomicI32,
}

impl<const QUEUED: bool> Handover for SignalHandover<QUEUED> {
    fn open(_scope: Scope) -> io::Result<Self> {
        let signal = ipc_signal();
        Ok(SignalHandover {
            waiter: SignalWaiter::for_signal(signal),
            signal,
            uid: user_id(),
            sender_pid: AtomicI32::new(0),
            sender_tid: AtomicI32::new(0),
        })
    }

    fn attach_sender(&self) -> io::Result<()> {
        self.waiter.block_in_calling_thread();
        let (pid, tid) = calling_thread_ids();
        self.sender_pid.store(pid, Relaxed);
        self.sender_tid.store(tid, Relaxed);
        Ok(())
    }

    fn wake_sender(&self) -> io::Result<()> {
        let sender = ThreadSignal::to_thread_of(
            self.sender_pid.load(Relaxed),
            self.sender_tid.load(Relaxed),
            self.uid,
            self.signal,
        );
        if QUEUED {
            sender.queue(0)
        } else {
            sender.send()
        }
    }

    fn await_receiver(&self) -> io::Result<()> {
        self.waiter.wait_once()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::ipc::SharedCell;
    use crate::sys::process::{self, fork_child, wait_for};
    use std::time::{Duration, Instant};

    struct Shared<H> {
        handover: H,
        /// 1 once the child attached, 2 once its wait returned.
        state: AtomicU32,
    }

    /// A handover opened for processes wakes a sender forked afterwards, and only when woken:
    /// the child attaches, says so, and waits; 50 ms later it must still be waiting; after the
    /// wake it must have returned without error.
    fn wakes_a_forked_sender_when_woken<H: Handover>(name: &str) {
        let cell = SharedCell::new(Shared {
            handover: H::open(Scope::Shared).unwrap(),
            state: AtomicU32::new(0),
        })
        .unwrap();
        let shared: &Shared<H> = &cell;
        // SAFETY: the child only attaches, makes futex calls and waits: async-signal-safe.
        let pid = unsafe {
            fork_child(|| {
                if shared.handover.attach_sender().is_err() {
                    return 1;
                }
                shared.state.store(1, Release);
                futex_wake_one_in(Scope::Shared, &shared.state);
                if shared.handover.await_receiver().is_err() {
                    return 2;
                }
                shared.state.store(2, Release);
                0
            })
        }
        .unwrap();
        while shared.state.load(Acquire) == 0 {
            let _ = futex_wait_in(Scope::Shared, &shared.state, 0);
        }
        std::thread::sleep(Duration::from_millis(50));
        let early = shared.state.load(Acquire);
        shared.handover.wake_sender().unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let reaped = loop {
            if let Some(reaped) = wait_for(pid, false).unwrap() {
                break Some(reaped);
            }
            if Instant::now() > deadline {
                let _ = process::kill(pid, signal::SIGKILL);
                let _ = wait_for(pid, true);
                break None;
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        assert_eq!(early, 1, "{name}: the sender returned before it was woken");
        let reaped = reaped.unwrap_or_else(|| panic!("{name}: the wake did not reach the sender"));
        assert_eq!(
            (reaped.status, shared.state.load(Acquire)),
            (0, 2),
            "{name}"
        );
    }

    #[test]
    fn every_handover_wakes_a_forked_sender_only_when_woken() {
        // In a thread of its own: the signal handovers' signal must not be blocked in the test
        // harness's threads for the child to inherit (the child blocks it itself).
        std::thread::spawn(|| {
            wakes_a_forked_sender_when_woken::<FutexHandover>("futex");
            wakes_a_forked_sender_when_woken::<QueueHandover>("queue");
            wakes_a_forked_sender_when_woken::<SignalHandover<false>>("signal (tgkill)");
            wakes_a_forked_sender_when_woken::<SignalHandover<true>>("signal (queued)");
        })
        .join()
        .unwrap();
    }
}

//! `signal` (a queued real-time signal carrying the stamp, taken with sigwaitinfo, as
//! signaltest) and `sigwait` (a plain real-time signal taken with sigwait, as sigwaittest).
//! Neither installs a handler: the receiver blocks the signal and waits for it. A sender
//! process aims at the receiving thread of jitterlab (its process and thread ids are looked up
//! before the fork); SI_QUEUE signals may be queued to another process.

use super::channel::{Channel, resume_after_signal};
use super::handover::{SignalHandover, ipc_signal};
use crate::sys::ipc::{SIGNAL_VALUE_CARRIES_U64, Scope, SignalWaiter, ThreadSignal};
use crate::sys::signal;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering::*};

/// rt_tgsigqueueinfo to the receiving thread; sigwaitinfo there.
pub(crate) struct QueuedSignal {
    receiver: ThreadSignal,
    waiter: SignalWaiter,
    /// Where the stamp goes on 32-bit targets, whose signal value is 32 bits.
    stamp: AtomicU64,
}

impl Channel for QueuedSignal {
    type Handover = SignalHandover<true>;

    fn open(_scope: Scope) -> io::Result<Self> {
        Ok(QueuedSignal {
            receiver: ThreadSignal::to_thread(signal::thread_id(), ipc_signal()),
            waiter: SignalWaiter::block_in_this_thread(ipc_signal()),
            stamp: AtomicU64::new(0),
        })
    }

    fn send(&self, stamp_ns: u64) -> io::Result<()> {
        if !SIGNAL_VALUE_CARRIES_U64 {
            self.stamp.store(stamp_ns, Release);
        }
        self.receiver.queue(stamp_ns)
    }

    #[inline(always)]
    fn receive(&self, end: impl Fn() -> bool) -> io::Result<u64> {
        let value = resume_after_signal(&end, || self.waiter.wait_value())?;
        Ok(if SIGNAL_VALUE_CARRIES_U64 {
            value
        } else {
            self.stamp.load(Acquire)
        })
    }
}

/// tgkill to the receiving thread; sigwait there. The signal carries nothing: the stamp is
/// written before it is sent.
pub(crate) struct PlainSignal {
    receiver: ThreadSignal,
    waiter: SignalWaiter,
    stamp: AtomicU64,
}

impl Channel for PlainSignal {
    type Handover = SignalHandover<false>;

    fn open(_scope: Scope) -> io::Result<Self> {
        Ok(PlainSignal {
            receiver: ThreadSignal::to_thread(signal::thread_id(), ipc_signal()),
            waiter: SignalWaiter::block_in_this_thread(ipc_signal()),
            stamp: AtomicU64::new(0),
        })
    }

    fn send(&self, stamp_ns: u64) -> io::Result<()> {
        self.stamp.store(stamp_ns, Release);
        self.receiver.send()
    }

    /// sigwait resumes itself after a signal's handler ran (glibc and musl): a stop reaches it
    /// through the sender's closing wake.
    #[inline(always)]
    fn receive(&self, _end: impl Fn() -> bool) -> io::Result<u64> {
        self.waiter.wait()?;
        Ok(self.stamp.load(Acquire))
    }
}

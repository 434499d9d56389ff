//! What an IPC mechanism is to the pair ([`Channel`]: open, send, receive, and its handover)
//! and how a receive resumes after a signal. Below every mechanism's file (`locks.rs`,
//! `queues.rs`, `signals.rs`) and the pair (`mod.rs`, `sender.rs`) that use it.

use super::handover::Handover;
use crate::sys::errno;
use crate::sys::ipc::Scope;
use std::io;

/// One IPC mechanism: how the sender wakes the receiver, handing it the stamp.
pub(crate) trait Channel: Send + Sync + Sized + 'static {
    /// Made in the receiving (measuring) thread: signals are aimed at the thread that makes it.
    /// With [`Scope::Shared`] it also works from a child forked afterwards, whose `send` must
    /// then be async-signal-safe (no allocation, no lock of this process).
    fn open(scope: Scope) -> io::Result<Self>;

    /// Sender side: wakes the receiver, handing it `stamp_ns`.
    fn send(&self, stamp_ns: u64) -> io::Result<()>;

    /// Receiver side: blocks until woken; the stamp. After a signal interrupts the call it is
    /// resumed, unless `end()` says to give up: then [`io::ErrorKind::Interrupted`].
    fn receive(&self, end: impl Fn() -> bool) -> io::Result<u64>;

    /// How a receiver paced by its own sleep ([`super::Pace::Receiver`]) wakes this mechanism's
    /// sender: rt-tests' "sync" object (handover.rs says which and why).
    type Handover: Handover;
}

/// Calls a blocking receive until it returns something other than EINTR; after EINTR, gives
/// up with [`io::ErrorKind::Interrupted`] if `end()` says so.
#[inline(always)]
pub(super) fn resume_after_signal<T>(
    end: &impl Fn() -> bool,
    mut call: impl FnMut() -> io::Result<T>,
) -> io::Result<T> {
    loop {
        match call() {
            Err(e) if e.raw_os_error() == Some(errno::EINTR) => {
                if end() {
                    return Err(io::ErrorKind::Interrupted.into());
                }
            }
            other => return other,
        }
    }
}

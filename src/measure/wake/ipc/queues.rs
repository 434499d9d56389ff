//! Mechanisms that carry the stamp as data: `mq` (a POSIX message queue, as pmqtest), `pipe`,
//! and `eventfd` (an 8-byte counter; one wake is in flight at a time, so the counter holds
//! exactly the stamp when it is read). All three are file descriptors, which a forked sender
//! inherits: they need nothing more to work between processes.

use super::channel::{Channel, resume_after_signal};
use super::handover::{FutexHandover, QueueHandover};
use crate::sys::ipc::{MessageQueue, Scope, ValueFds};
use std::io;

/// One wake in flight, plus the closing wake: two would do; four leave room.
const QUEUE_CAPACITY: i64 = 4;

/// mq_send / mq_receive of an 8-byte message holding the stamp.
pub(crate) struct PosixQueue(MessageQueue);

impl Channel for PosixQueue {
    type Handover = QueueHandover;

    fn open(_scope: Scope) -> io::Result<Self> {
        MessageQueue::new(QUEUE_CAPACITY).map(PosixQueue)
    }

    fn send(&self, stamp_ns: u64) -> io::Result<()> {
        self.0.send(stamp_ns)
    }

    #[inline(always)]
    fn receive(&self, end: impl Fn() -> bool) -> io::Result<u64> {
        resume_after_signal(&end, || self.0.receive())
    }
}

/// write / read of 8 bytes on a pipe.
pub(crate) struct Pipe(ValueFds);

impl Channel for Pipe {
    type Handover = FutexHandover;

    fn open(_scope: Scope) -> io::Result<Self> {
        ValueFds::pipe().map(Pipe)
    }

    fn send(&self, stamp_ns: u64) -> io::Result<()> {
        self.0.write(stamp_ns)
    }

    #[inline(always)]
    fn receive(&self, end: impl Fn() -> bool) -> io::Result<u64> {
        resume_after_signal(&end, || self.0.read())
    }
}

/// write / read on an eventfd; the value written is the stamp.
pub(crate) struct EventFd(ValueFds);

impl Channel for EventFd {
    type Handover = FutexHandover;

    fn open(_scope: Scope) -> io::Result<Self> {
        ValueFds::eventfd().map(EventFd)
    }

    fn send(&self, stamp_ns: u64) -> io::Result<()> {
        self.0.write(stamp_ns)
    }

    #[inline(always)]
    fn receive(&self, end: impl Fn() -> bool) -> io::Result<u64> {
        resume_after_signal(&end, || self.0.read())
    }
}

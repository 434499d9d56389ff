//! Sleeping in a wait for descriptors, with none: `select` and `poll` (relative).

use super::syscall::retry_interrupted;
use crate::measure::clock::Clock;
use crate::measure::waker::{MakeWaker, Waker};
use crate::sys::timer;
use std::io;
use std::sync::atomic::AtomicBool;

/// select() with no descriptors: the classic portable sleep, microsecond resolution.
pub(crate) struct SelectSleep;

impl MakeWaker for SelectSleep {
    fn make(_clock: Clock, _interval_ns: u64) -> Result<Self, String> {
        Ok(SelectSleep)
    }
}

impl Waker for SelectSleep {
    fn wait(&mut self, _due_ns: u64, interval_ns: u64, stop: &AtomicBool) -> io::Result<()> {
        // Linux updates the time left on EINTR, and select_sleep passes it back.
        let mut left_ns = interval_ns;
        retry_interrupted(stop, || timer::select_sleep(&mut left_ns))
    }
}

/// ppoll() with no descriptors: poll(2)'s timeout with a timespec, so sub-millisecond
/// intervals are honoured (plain poll rounds up to whole milliseconds).
pub(crate) struct PollSleep;

impl MakeWaker for PollSleep {
    fn make(_clock: Clock, _interval_ns: u64) -> Result<Self, String> {
        Ok(PollSleep)
    }
}

impl Waker for PollSleep {
    fn wait(&mut self, _due_ns: u64, interval_ns: u64, stop: &AtomicBool) -> io::Result<()> {
        retry_interrupted(stop, || timer::ppoll_sleep(interval_ns))
    }
}

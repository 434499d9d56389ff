//! Sleeping in a wait for descriptors, with none: `select` and `poll` (relative).

use super::{MakeWaker, Waker, retry_interrupted};
use crate::measure::clock::Clock;
use crate::sys::time::{ns_to_timespec, ns_to_timeval};
use std::io;
use std::sync::atomic::AtomicBool;

/// select() with no descriptors: the classic portable sleep, microsecond resolution.
pub struct SelectSleep;

impl MakeWaker for SelectSleep {
    fn make(_clock: Clock, _interval_ns: u64) -> Result<Self, String> {
        Ok(SelectSleep)
    }
}

impl Waker for SelectSleep {
    fn wait(&mut self, _due_ns: u64, interval_ns: u64, stop: &AtomicBool) -> io::Result<()> {
        let mut tv = ns_to_timeval(interval_ns);
        // SAFETY: no descriptor sets; Linux updates tv to the time left on EINTR.
        retry_interrupted(stop, || unsafe {
            libc::select(
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                &mut tv,
            ) as isize
        })
    }
}

/// ppoll() with no descriptors: poll(2)'s timeout with a timespec, so sub-millisecond
/// intervals are honoured (plain poll rounds up to whole milliseconds).
pub struct PollSleep;

impl MakeWaker for PollSleep {
    fn make(_clock: Clock, _interval_ns: u64) -> Result<Self, String> {
        Ok(PollSleep)
    }
}

impl Waker for PollSleep {
    fn wait(&mut self, _due_ns: u64, interval_ns: u64, stop: &AtomicBool) -> io::Result<()> {
        let ts = ns_to_timespec(interval_ns);
        // SAFETY: zero descriptors; valid timespec; no signal mask change.
        retry_interrupted(stop, || unsafe {
            libc::ppoll(std::ptr::null_mut(), 0, &ts, std::ptr::null()) as isize
        })
    }
}

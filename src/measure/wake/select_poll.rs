//! Sleeping in a wait for descriptors, with none: `select` and `poll` (relative).

use super::{MakeWaker, Waker, retry_interrupted};
use crate::measure::clock::{Clock, ns_to_timespec};
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
        let us = interval_ns / 1_000;
        let mut tv = libc::timeval {
            tv_sec: (us / 1_000_000) as libc::time_t,
            tv_usec: (us % 1_000_000) as libc::suseconds_t,
        };
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

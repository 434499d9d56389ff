//! `timerfd`: a timerfd firing periodically at absolute times.

use super::{MakeWaker, Waker, absolute_spec, check, periodic_spec, retry_interrupted};
use crate::measure::clock::Clock;
use std::io;
use std::sync::atomic::AtomicBool;

/// A timerfd firing periodically at absolute times; read() blocks until an expiry.
pub struct TimerFd {
    fd: libc::c_int,
    clock: Clock,
    interval_ns: u64,
}

impl TimerFd {
    pub fn new(clock: Clock, interval_ns: u64) -> io::Result<Self> {
        // SAFETY: plain syscall.
        let fd = check(unsafe { libc::timerfd_create(clock.id(), libc::TFD_CLOEXEC) })?;
        Ok(TimerFd {
            fd,
            clock,
            interval_ns,
        })
    }

    /// Arms the timer; this also discards the expirations not yet read.
    fn settime(&self, spec: &libc::itimerspec) -> io::Result<()> {
        // SAFETY: valid fd and itimerspec.
        check(unsafe {
            libc::timerfd_settime(self.fd, libc::TFD_TIMER_ABSTIME, spec, std::ptr::null_mut())
        })
        .map(drop)
    }
}

impl MakeWaker for TimerFd {
    fn make(clock: Clock, interval_ns: u64) -> Result<Self, String> {
        TimerFd::new(clock, interval_ns).map_err(|e| format!("timerfd_create failed: {e}"))
    }
}

impl Waker for TimerFd {
    fn first_due_ns(&mut self, planned_ns: u64) -> io::Result<u64> {
        let (first, spec) = periodic_spec(self.clock, planned_ns, self.interval_ns);
        self.settime(&spec)?;
        Ok(first)
    }

    /// The kernel moves a timerfd on in read(): read before a grid point that the loop then
    /// skips, the timer still expires at it. Re-arming at the loop's next due time discards
    /// that expiration (absolute: a time that passed meanwhile fires at once and is measured
    /// against that time).
    fn skipped_to(&mut self, next_due_ns: u64) -> io::Result<()> {
        self.settime(&absolute_spec(next_due_ns, self.interval_ns))
    }

    fn wait(&mut self, _due_ns: u64, _interval_ns: u64, stop: &AtomicBool) -> io::Result<()> {
        let mut expirations = 0u64;
        // SAFETY: reads 8 bytes into a u64 (a timerfd read returns 8 or fails).
        retry_interrupted(stop, || unsafe {
            libc::read(
                self.fd,
                &mut expirations as *mut u64 as *mut libc::c_void,
                8,
            )
        })
    }
}

impl Drop for TimerFd {
    fn drop(&mut self) {
        // SAFETY: fd is owned.
        unsafe { libc::close(self.fd) };
    }
}

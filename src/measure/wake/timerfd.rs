//! `timerfd`: a timerfd firing periodically at absolute times.

use super::syscall::{absolute_spec, periodic_spec, retry_interrupted};
use crate::measure::clock::Clock;
use crate::measure::waker::{MakeWaker, Waker};
use crate::sys::timer::{self, Arming};
use std::io;
use std::sync::atomic::AtomicBool;

/// A timerfd firing periodically at absolute times; read() blocks until an expiry.
pub(crate) struct TimerFd {
    timer: timer::TimerFd,
    clock: Clock,
    interval_ns: u64,
}

impl TimerFd {
    pub(crate) fn new(clock: Clock, interval_ns: u64) -> io::Result<Self> {
        Ok(TimerFd {
            timer: timer::TimerFd::new(clock.id())?,
            clock,
            interval_ns,
        })
    }

    /// Arms the timer; this also discards the expirations not yet read.
    fn settime(&self, spec: &Arming) -> io::Result<()> {
        self.timer.set_absolute(spec)
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
        retry_interrupted(stop, || self.timer.read_raw())
    }
}

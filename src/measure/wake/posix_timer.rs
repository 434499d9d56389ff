//! `posix-timer`: a timer_create timer firing periodically at absolute times.

use super::signal::{drain_signal, posix_timer_signal, signal_set, wait_for_signal};
use super::syscall::{absolute_spec, periodic_spec};
use crate::measure::clock::Clock;
use crate::measure::waker::{MakeWaker, Waker};
use crate::sys::timer::{self, Arming};
use std::io;
use std::sync::atomic::AtomicBool;

/// A POSIX timer (timer_create) firing periodically at absolute times, signalling this thread
/// only (SIGEV_THREAD_ID), awaited with sigwaitinfo.
pub(crate) struct PosixTimer {
    timer: timer::PosixTimer,
    set: crate::sys::signal::SignalSet,
    clock: Clock,
    interval_ns: u64,
}

impl PosixTimer {
    /// Creates the timer, directed at the calling thread.
    pub(crate) fn new(clock: Clock, interval_ns: u64) -> io::Result<Self> {
        let signal = posix_timer_signal();
        let timer =
            timer::PosixTimer::to_thread(clock.id(), signal, crate::sys::signal::thread_id())?;
        Ok(PosixTimer {
            timer,
            set: signal_set(signal),
            clock,
            interval_ns,
        })
    }

    fn settime(&self, spec: &Arming) -> io::Result<()> {
        self.timer.set_absolute(spec)
    }
}

impl MakeWaker for PosixTimer {
    fn make(clock: Clock, interval_ns: u64) -> Result<Self, String> {
        PosixTimer::new(clock, interval_ns).map_err(|e| format!("timer_create failed: {e}"))
    }
}

impl Waker for PosixTimer {
    fn first_due_ns(&mut self, planned_ns: u64) -> io::Result<u64> {
        let (first, spec) = periodic_spec(self.clock, planned_ns, self.interval_ns);
        self.settime(&spec)?;
        Ok(first)
    }

    fn wait(&mut self, _due_ns: u64, _interval_ns: u64, stop: &AtomicBool) -> io::Result<()> {
        wait_for_signal(&self.set, stop)
    }

    /// The kernel moves a POSIX timer on when its signal is taken: taken before a grid point
    /// that the loop then skips, the timer still fires for it. Stop the timer, drop a signal it
    /// may have queued, and arm it at the loop's next due time (absolute: a time that passed
    /// meanwhile fires at once and is measured against that time).
    fn skipped_to(&mut self, next_due_ns: u64) -> io::Result<()> {
        self.settime(&Arming::disarmed())?;
        drain_signal(&self.set);
        self.settime(&absolute_spec(next_due_ns, self.interval_ns))
    }
}

//! `posix-timer`: a timer_create timer firing periodically at absolute times.

use super::signal::{drain_signal, posix_timer_signal, signal_set, wait_for_signal};
use super::{MakeWaker, Waker, absolute_spec, check, periodic_spec};
use crate::measure::clock::Clock;
use std::io;
use std::sync::atomic::AtomicBool;

/// A POSIX timer (timer_create) firing periodically at absolute times, signalling this thread
/// only (SIGEV_THREAD_ID), awaited with sigwaitinfo.
pub struct PosixTimer {
    timer: libc::timer_t,
    set: crate::sys::signal::SignalSet,
    clock: Clock,
    interval_ns: u64,
}

impl PosixTimer {
    /// Creates the timer, directed at the calling thread.
    pub fn new(clock: Clock, interval_ns: u64) -> io::Result<Self> {
        let signal = posix_timer_signal();
        // SAFETY: sigevent is plain data; the kernel reads the fields set here.
        let mut sev: libc::sigevent = unsafe { std::mem::zeroed() };
        sev.sigev_notify = libc::SIGEV_THREAD_ID;
        sev.sigev_signo = signal;
        // SAFETY: gettid has no failure mode.
        sev.sigev_notify_thread_id = unsafe { libc::gettid() };
        let mut timer: libc::timer_t = std::ptr::null_mut();
        // SAFETY: valid pointers.
        check(unsafe { libc::timer_create(clock.id(), &mut sev, &mut timer) })?;
        Ok(PosixTimer {
            timer,
            set: signal_set(signal),
            clock,
            interval_ns,
        })
    }

    fn settime(&self, spec: &libc::itimerspec) -> io::Result<()> {
        // SAFETY: valid timer and itimerspec.
        check(unsafe {
            libc::timer_settime(self.timer, libc::TIMER_ABSTIME, spec, std::ptr::null_mut())
        })
        .map(drop)
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
        // SAFETY: itimerspec is plain data; all zero disarms the timer.
        self.settime(&unsafe { std::mem::zeroed() })?;
        drain_signal(&self.set);
        self.settime(&absolute_spec(next_due_ns, self.interval_ns))
    }
}

impl Drop for PosixTimer {
    fn drop(&mut self) {
        // SAFETY: the timer was created by timer_create and is deleted once.
        unsafe { libc::timer_delete(self.timer) };
    }
}

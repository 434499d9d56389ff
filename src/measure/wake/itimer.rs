//! setitimer(ITIMER_REAL): `itimer` (one-shot, re-armed every cycle, relative) and
//! `itimer-periodic`. The process has one ITIMER_REAL, so each serves one measuring thread.

use super::signal::{ITIMER_SIGNAL, drain_signal, signal_set, wait_for_signal};
use crate::measure::clock::Clock;
use crate::measure::waker::{MakeWaker, Waker};
use crate::sys::timer;
use std::io;
use std::sync::atomic::AtomicBool;

fn set_itimer(value_ns: u64, interval_ns: u64) -> io::Result<()> {
    // Rounded up to whole us: an itimer never fires before the time asked.
    let us = |ns: u64| ns.div_ceil(1_000) * 1_000;
    timer::set_real_itimer(us(value_ns), us(interval_ns))
}

/// setitimer(ITIMER_REAL) one-shot, re-armed every cycle, then sigwaitinfo for SIGALRM.
pub(crate) struct ItimerOneShot {
    set: crate::sys::signal::SignalSet,
}

impl Default for ItimerOneShot {
    fn default() -> Self {
        ItimerOneShot {
            set: signal_set(ITIMER_SIGNAL),
        }
    }
}

impl MakeWaker for ItimerOneShot {
    fn make(_clock: Clock, _interval_ns: u64) -> Result<Self, String> {
        Ok(ItimerOneShot::default())
    }
}

impl Waker for ItimerOneShot {
    fn wait(&mut self, _due_ns: u64, interval_ns: u64, stop: &AtomicBool) -> io::Result<()> {
        set_itimer(interval_ns, 0)?;
        wait_for_signal(&self.set, stop)
    }
}

/// setitimer(ITIMER_REAL) periodic, armed once, then sigwaitinfo for each SIGALRM.
pub(crate) struct ItimerPeriodic {
    set: crate::sys::signal::SignalSet,
    clock: Clock,
    interval_ns: u64,
}

impl ItimerPeriodic {
    pub(crate) fn new(clock: Clock, interval_ns: u64) -> Self {
        ItimerPeriodic {
            set: signal_set(ITIMER_SIGNAL),
            clock,
            interval_ns,
        }
    }
}

impl MakeWaker for ItimerPeriodic {
    fn make(clock: Clock, interval_ns: u64) -> Result<Self, String> {
        Ok(ItimerPeriodic::new(clock, interval_ns))
    }
}

impl Waker for ItimerPeriodic {
    fn first_due_ns(&mut self, planned_ns: u64) -> io::Result<u64> {
        // setitimer takes only a relative first expiry: arm it to land on the planned time.
        let now = self.clock.now_ns();
        let first = planned_ns.max(now + 1_000);
        set_itimer(first - now, self.interval_ns)?;
        Ok(first)
    }

    fn wait(&mut self, _due_ns: u64, _interval_ns: u64, stop: &AtomicBool) -> io::Result<()> {
        wait_for_signal(&self.set, stop)
    }

    /// setitimer's timer moves on in the interrupt (it_real_fn forwards it past the expiry), not
    /// when the thread takes the signal: after a late wakeup, a grid point between the expiry and
    /// the thread running has fired or is about to. Stop the timer, drop that signal, and aim
    /// the timer at the loop's next due time.
    fn skipped_to(&mut self, next_due_ns: u64) -> io::Result<()> {
        set_itimer(0, 0)?;
        drain_signal(&self.set);
        let now = self.clock.now_ns();
        set_itimer(next_due_ns.saturating_sub(now).max(1_000), self.interval_ns)
    }
}

impl Drop for ItimerPeriodic {
    fn drop(&mut self) {
        let _ = set_itimer(0, 0);
    }
}

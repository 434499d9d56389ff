//! The row type of [`WAKE_METHODS`]: what a wake method is made of, and the questions the rest
//! of jitterlab asks of a row. The rows themselves stay in the table in `wake/mod.rs`, the one
//! place each method is described.

use super::driver::{Cycles, Driver};
use crate::measure::clock::Clock;
use crate::measure::sample::ThreadEnd;
use crate::measure::waker::{Schedule, Waker};

/// One wake method: everything jitterlab knows about it. Held as `&'static WakeMethod`, a row
/// of [`WAKE_METHODS`](super::WAKE_METHODS).
pub struct WakeMethod {
    /// The name used on the command line (`--wake`) and in run.json.
    pub name: &'static str,
    /// Its line in `jitterlab run --help`.
    pub help: &'static str,
    pub schedule: Schedule,
    pub(crate) clocks: ClockUse,
    /// The per-process resource the method is built on (`ITIMER_REAL`, the one `/dev/rtc`), if
    /// any: such a method can serve only one measuring thread.
    pub per_process: Option<&'static str>,
    /// It takes a `timeval`: the interval, distance and step must be whole microseconds.
    pub(crate) whole_microseconds: bool,
    /// A further rule on the interval; the error names the value and what is accepted.
    pub interval_rule: Option<fn(u64) -> Result<(), String>>,
    pub trace: TraceJoin,
    pub(crate) requires: Requirement,
    pub(crate) driver: Driver,
}

/// The clocks a method sleeps on, and so the clocks due times and wakeups are read from.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ClockUse {
    /// The clock `--clock` names, which must be one of these. nanosleep, select, poll and
    /// setitimer always measure their sleep on the monotonic clock.
    OneOf(&'static [Clock]),
    /// Always this clock, one that `--clock` does not offer; `--clock` stays at its default.
    Own(Clock),
}

/// How `--trace` finds the timer expiry behind each sample (trace/split.rs).
#[derive(Debug, Clone, Copy)]
pub struct TraceJoin {
    pub(crate) expiry: Expiry,
    /// The kernel callbacks of the timers the method sleeps on: expiries of other timers on
    /// the measured CPUs are filtered out.
    pub(crate) timer_functions: &'static [&'static str],
}

/// Where the soft expiry of the timer that wakes a sample lies, relative to its due time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expiry {
    /// Exactly at it: absolute and periodic methods sleep until exactly the due time.
    AtDue,
    /// Within half an interval after it: relative methods arm the timer from the kernel's own
    /// clock read, a little after the thread's. Half an interval is far more than that gap and
    /// far less than the next period.
    NearDue,
}

impl TraceJoin {
    /// The hrtimer_sleeper of nanosleep, and of the timeouts of select and poll.
    const HRTIMER: &'static [&'static str] = &["hrtimer_wakeup"];
    pub(super) const HRTIMER_AT_DUE: TraceJoin = TraceJoin {
        expiry: Expiry::AtDue,
        timer_functions: Self::HRTIMER,
    };
    pub(super) const HRTIMER_NEAR_DUE: TraceJoin = TraceJoin {
        expiry: Expiry::NearDue,
        timer_functions: Self::HRTIMER,
    };
}

/// What the system must have for a method, checked before the run starts (exit 3).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Requirement {
    Nothing,
    /// A device file that must exist; `absent_means` says what its absence tells.
    Device {
        path: &'static str,
        absent_means: &'static str,
    },
}

impl WakeMethod {
    /// The clock the method measures on when `--clock` names `chosen`, if it can.
    pub fn clock(&self, chosen: Clock) -> Option<Clock> {
        match self.clocks {
            ClockUse::OneOf(clocks) => clocks.contains(&chosen).then_some(chosen),
            ClockUse::Own(own) => (chosen == Clock::DEFAULT).then_some(own),
        }
    }

    /// The system requirement, checked on this system; the error is the message for exit 3.
    pub fn check_system(&self) -> Result<(), String> {
        match self.requires {
            Requirement::Nothing => Ok(()),
            Requirement::Device { path, absent_means } => {
                if std::path::Path::new(path).exists() {
                    Ok(())
                } else {
                    Err(format!(
                        "--wake {}: no {path} on this system ({absent_means}); use another --wake method, e.g. clock-nanosleep or timerfd",
                        self.name
                    ))
                }
            }
        }
    }

    /// Makes the method's waker in the calling (measuring) thread and runs the loop with it.
    pub(crate) fn run(&self, cycles: Cycles<'_>) -> ThreadEnd {
        (self.driver.run)(cycles)
    }

    /// Makes the method's waker and lends it to `with`, for tests that run the loop with a
    /// clock of their own. Not for measuring: the waker is called through a vtable.
    pub fn lend_waker(
        &self,
        clock: Clock,
        interval_ns: u64,
        with: &mut dyn FnMut(&mut dyn Waker) -> ThreadEnd,
    ) -> ThreadEnd {
        (self.driver.lend)(clock, interval_ns, with)
    }
}

impl PartialEq for WakeMethod {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for WakeMethod {}

impl std::fmt::Debug for WakeMethod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

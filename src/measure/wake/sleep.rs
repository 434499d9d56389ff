//! The sleep family: `clock-nanosleep` (absolute), `clock-nanosleep-rel` and `nanosleep`
//! (relative).

use super::syscall::resume_unless_stopped;
use crate::measure::clock::Clock;
use crate::measure::waker::{MakeWaker, Waker};
use crate::sys::errno::EINTR;
use crate::sys::timer;
use std::io;
use std::sync::atomic::AtomicBool;

/// clock_nanosleep(TIMER_ABSTIME) to the due time; the cyclictest default.
pub(crate) struct AbsoluteSleep {
    pub clock: Clock,
}

impl MakeWaker for AbsoluteSleep {
    fn make(clock: Clock, _interval_ns: u64) -> Result<Self, String> {
        Ok(AbsoluteSleep { clock })
    }
}

impl Waker for AbsoluteSleep {
    fn wait(&mut self, due_ns: u64, _interval_ns: u64, stop: &AtomicBool) -> io::Result<()> {
        loop {
            match timer::sleep_until(self.clock.id(), due_ns) {
                0 => return Ok(()),
                // Same absolute target: simply sleep again.
                EINTR => resume_unless_stopped(stop)?,
                e => return Err(io::Error::from_raw_os_error(e)),
            }
        }
    }
}

/// clock_nanosleep for the interval, relative to the clock read before sleeping.
pub(crate) struct RelativeClockNanosleep {
    pub clock: Clock,
}

impl MakeWaker for RelativeClockNanosleep {
    fn make(clock: Clock, _interval_ns: u64) -> Result<Self, String> {
        Ok(RelativeClockNanosleep { clock })
    }
}

impl Waker for RelativeClockNanosleep {
    fn wait(&mut self, _due_ns: u64, interval_ns: u64, stop: &AtomicBool) -> io::Result<()> {
        let clock = self.clock.id();
        sleep_relative(interval_ns, stop, |ns| timer::clock_sleep_for(clock, ns))
    }
}

/// nanosleep(2) for the interval; the kernel measures it on CLOCK_MONOTONIC.
pub(crate) struct Nanosleep;

impl MakeWaker for Nanosleep {
    fn make(_clock: Clock, _interval_ns: u64) -> Result<Self, String> {
        Ok(Nanosleep)
    }
}

impl Waker for Nanosleep {
    fn wait(&mut self, _due_ns: u64, interval_ns: u64, stop: &AtomicBool) -> io::Result<()> {
        sleep_relative(interval_ns, stop, timer::nanosleep_for)
    }
}

/// Sleeps `interval_ns` with `sleep` (returning Ok, or an errno and the time left). On EINTR
/// the remainder is slept, so that the requested sleep is honoured as a whole.
#[inline(always)]
fn sleep_relative(
    interval_ns: u64,
    stop: &AtomicBool,
    mut sleep: impl FnMut(u64) -> Result<(), (i32, u64)>,
) -> io::Result<()> {
    let mut left_ns = interval_ns;
    loop {
        match sleep(left_ns) {
            Ok(()) => return Ok(()),
            Err((EINTR, rem_ns)) => {
                resume_unless_stopped(stop)?;
                left_ns = rem_ns;
            }
            Err((e, _)) => return Err(io::Error::from_raw_os_error(e)),
        }
    }
}

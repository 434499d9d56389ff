//! The sleep family: `clock-nanosleep` (absolute), `clock-nanosleep-rel` and `nanosleep`
//! (relative).

use super::{MakeWaker, Waker, resume_unless_stopped};
use crate::measure::clock::Clock;
use crate::sys::time::ns_to_timespec;
use std::io;
use std::sync::atomic::AtomicBool;

/// clock_nanosleep(TIMER_ABSTIME) to the due time; the cyclictest default.
pub struct AbsoluteSleep {
    pub clock: Clock,
}

impl MakeWaker for AbsoluteSleep {
    fn make(clock: Clock, _interval_ns: u64) -> Result<Self, String> {
        Ok(AbsoluteSleep { clock })
    }
}

impl Waker for AbsoluteSleep {
    fn wait(&mut self, due_ns: u64, _interval_ns: u64, stop: &AtomicBool) -> io::Result<()> {
        let ts = ns_to_timespec(due_ns);
        loop {
            // SAFETY: valid timespec; no remainder is needed for absolute sleeps.
            let rc = unsafe {
                libc::clock_nanosleep(
                    self.clock.id(),
                    libc::TIMER_ABSTIME,
                    &ts,
                    std::ptr::null_mut(),
                )
            };
            match rc {
                0 => return Ok(()),
                // Same absolute target: simply sleep again.
                libc::EINTR => resume_unless_stopped(stop)?,
                e => return Err(io::Error::from_raw_os_error(e)),
            }
        }
    }
}

/// clock_nanosleep for the interval, relative to the clock read before sleeping.
pub struct RelativeClockNanosleep {
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
        // SAFETY: valid timespecs.
        sleep_relative(interval_ns, stop, |req, rem| unsafe {
            libc::clock_nanosleep(clock, 0, req, rem)
        })
    }
}

/// nanosleep(2) for the interval; the kernel measures it on CLOCK_MONOTONIC.
pub struct Nanosleep;

impl MakeWaker for Nanosleep {
    fn make(_clock: Clock, _interval_ns: u64) -> Result<Self, String> {
        Ok(Nanosleep)
    }
}

impl Waker for Nanosleep {
    fn wait(&mut self, _due_ns: u64, interval_ns: u64, stop: &AtomicBool) -> io::Result<()> {
        sleep_relative(interval_ns, stop, |req, rem| {
            // SAFETY: valid timespecs.
            if unsafe { libc::nanosleep(req, rem) } == 0 {
                0
            } else {
                io::Error::last_os_error().raw_os_error().unwrap_or(0)
            }
        })
    }
}

/// Sleeps `interval_ns` with `sleep` (returning 0 or an errno). On EINTR the remainder is
/// slept, so that the requested sleep is honoured as a whole.
#[inline(always)]
fn sleep_relative(
    interval_ns: u64,
    stop: &AtomicBool,
    mut sleep: impl FnMut(&libc::timespec, &mut libc::timespec) -> libc::c_int,
) -> io::Result<()> {
    let mut req = ns_to_timespec(interval_ns);
    let mut rem = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    loop {
        match sleep(&req, &mut rem) {
            0 => return Ok(()),
            libc::EINTR => {
                resume_unless_stopped(stop)?;
                req = rem;
            }
            e => return Err(io::Error::from_raw_os_error(e)),
        }
    }
}

//! Timers and sleeps: timerfd, POSIX timers (timer_create), the process's ITIMER_REAL, and the
//! sleeping calls (clock_nanosleep, nanosleep, select, ppoll). Times cross this module's edge
//! as `u64` nanoseconds; the `timespec`/`timeval` conversions (32-bit `time_t` on armv7 glibc)
//! are in [`super::time`].
//!
//! The measuring loop calls the sleeps and the timer reads once per cycle: those are
//! `#[inline(always)]` and make exactly one syscall each, as a direct libc call would.

use super::signal::Signal;
use super::time::{ClockId, ns_to_timespec, ns_to_timeval, timespec_to_ns};
use std::io;
use std::os::fd::RawFd;

/// An arming of a timer: the first expiry, then every interval (0: once).
#[derive(Clone, Copy)]
pub(crate) struct Arming(libc::itimerspec);

impl Arming {
    /// First expiry at `first_ns` (absolute or relative, as the call that takes it says), then
    /// every `interval_ns`.
    #[inline]
    pub(crate) fn new(first_ns: u64, interval_ns: u64) -> Arming {
        Arming(libc::itimerspec {
            it_interval: ns_to_timespec(interval_ns),
            it_value: ns_to_timespec(first_ns),
        })
    }

    /// No expiry: arming with it stops the timer.
    pub(crate) fn disarmed() -> Arming {
        Arming::new(0, 0)
    }
}

/// A timerfd: a timer whose expirations are read from a descriptor.
pub(crate) struct TimerFd(RawFd);

impl TimerFd {
    /// A timerfd on `clock`, close-on-exec, not armed.
    pub(crate) fn new(clock: ClockId) -> io::Result<TimerFd> {
        // SAFETY: plain syscall.
        super::check(unsafe { libc::timerfd_create(clock, libc::TFD_CLOEXEC) }).map(TimerFd)
    }

    /// Arms it at absolute times (TFD_TIMER_ABSTIME); this also discards the expirations not
    /// yet read.
    pub(crate) fn set_absolute(&self, arming: &Arming) -> io::Result<()> {
        // SAFETY: valid descriptor and itimerspec.
        super::check(unsafe {
            libc::timerfd_settime(
                self.0,
                libc::TFD_TIMER_ABSTIME,
                &arming.0,
                std::ptr::null_mut(),
            )
        })
        .map(drop)
    }

    /// Blocks until an expiry and reads the count: the raw read(2) result (8, or -1 with errno
    /// set, EINTR included).
    #[inline(always)]
    pub(crate) fn read_raw(&self) -> isize {
        let mut expirations = [0u8; 8];
        super::file::read_raw(self.0, &mut expirations)
    }
}

impl Drop for TimerFd {
    fn drop(&mut self) {
        super::file::close(self.0);
    }
}

/// A POSIX timer (timer_create).
pub(crate) struct PosixTimer(libc::timer_t);

impl PosixTimer {
    /// A timer on `clock` that sends `signal` to thread `tid` of this process at each expiry
    /// (SIGEV_THREAD_ID: no other thread takes it).
    pub(crate) fn to_thread(
        clock: ClockId,
        signal: Signal,
        tid: libc::pid_t,
    ) -> io::Result<PosixTimer> {
        // SAFETY: sigevent is plain data; the kernel reads the fields set here.
        let mut sev: libc::sigevent = unsafe { std::mem::zeroed() };
        sev.sigev_notify = libc::SIGEV_THREAD_ID;
        sev.sigev_signo = signal;
        sev.sigev_notify_thread_id = tid;
        PosixTimer::create(clock, sev)
    }

    /// A timer on `clock` that notifies no one (SIGEV_NONE): only its time left can be read.
    pub(crate) fn silent(clock: ClockId) -> io::Result<PosixTimer> {
        // SAFETY: sigevent is plain data; all-zero with SIGEV_NONE is valid.
        let mut sev: libc::sigevent = unsafe { std::mem::zeroed() };
        sev.sigev_notify = libc::SIGEV_NONE;
        PosixTimer::create(clock, sev)
    }

    fn create(clock: ClockId, mut sev: libc::sigevent) -> io::Result<PosixTimer> {
        // SAFETY: timer_t is an integer or pointer the kernel fills in.
        let mut timer: libc::timer_t = unsafe { std::mem::zeroed() };
        // SAFETY: valid pointers.
        super::check(unsafe { libc::timer_create(clock, &mut sev, &mut timer) })?;
        Ok(PosixTimer(timer))
    }

    /// Arms it at absolute times (TIMER_ABSTIME).
    pub(crate) fn set_absolute(&self, arming: &Arming) -> io::Result<()> {
        // SAFETY: valid timer and itimerspec.
        super::check(unsafe {
            libc::timer_settime(self.0, libc::TIMER_ABSTIME, &arming.0, std::ptr::null_mut())
        })
        .map(drop)
    }

    /// Arms it relative to now.
    pub(crate) fn set_relative(&self, arming: &Arming) -> io::Result<()> {
        // SAFETY: valid timer and itimerspec.
        super::check(unsafe { libc::timer_settime(self.0, 0, &arming.0, std::ptr::null_mut()) })
            .map(drop)
    }

    /// The time to its next expiry, ns (0: expired and not re-armed, or disarmed).
    pub(crate) fn remaining_ns(&self) -> io::Result<u64> {
        let mut left = Arming::disarmed();
        // SAFETY: valid timer and out-pointer.
        super::check(unsafe { libc::timer_gettime(self.0, &mut left.0) })?;
        Ok(timespec_to_ns(&left.0.it_value))
    }
}

impl Drop for PosixTimer {
    fn drop(&mut self) {
        // SAFETY: the timer was created by timer_create and is deleted once.
        unsafe { libc::timer_delete(self.0) };
    }
}

/// Arms the process's ITIMER_REAL (SIGALRM): first in `value_ns`, then every `interval_ns`
/// (0: once; both 0: stop), each rounded down to whole microseconds.
pub(crate) fn set_real_itimer(value_ns: u64, interval_ns: u64) -> io::Result<()> {
    let it = libc::itimerval {
        it_interval: ns_to_timeval(interval_ns),
        it_value: ns_to_timeval(value_ns),
    };
    // SAFETY: valid itimerval.
    super::check(unsafe { libc::setitimer(libc::ITIMER_REAL, &it, std::ptr::null_mut()) }).map(drop)
}

/// clock_nanosleep to the absolute time `due_ns` of `clock`: 0, or the errno (EINTR when a
/// signal interrupted it; the same target can simply be slept to again).
#[inline(always)]
pub(crate) fn sleep_until(clock: ClockId, due_ns: u64) -> i32 {
    let ts = ns_to_timespec(due_ns);
    // SAFETY: valid timespec; no remainder is needed for absolute sleeps.
    unsafe { libc::clock_nanosleep(clock, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) }
}

/// clock_nanosleep for `ns` of `clock`: Ok, or the errno and the time left (EINTR).
#[inline(always)]
pub(crate) fn clock_sleep_for(clock: ClockId, ns: u64) -> Result<(), (i32, u64)> {
    let req = ns_to_timespec(ns);
    let mut rem = ns_to_timespec(0);
    // SAFETY: valid timespecs.
    match unsafe { libc::clock_nanosleep(clock, 0, &req, &mut rem) } {
        0 => Ok(()),
        e => Err((e, timespec_to_ns(&rem))),
    }
}

/// nanosleep(2) for `ns` (CLOCK_MONOTONIC): Ok, or the errno and the time left (EINTR).
#[inline(always)]
pub(crate) fn nanosleep_for(ns: u64) -> Result<(), (i32, u64)> {
    let req = ns_to_timespec(ns);
    let mut rem = ns_to_timespec(0);
    // SAFETY: valid timespecs.
    if unsafe { libc::nanosleep(&req, &mut rem) } == 0 {
        Ok(())
    } else {
        let errno = io::Error::last_os_error().raw_os_error().unwrap_or(0);
        Err((errno, timespec_to_ns(&rem)))
    }
}

/// select() with no descriptors for `left_ns` (rounded down to whole microseconds): the raw
/// result (0, or -1 with errno set). Linux writes the time left back on EINTR; so does this,
/// into `left_ns`, so that calling again sleeps the rest.
#[inline(always)]
pub(crate) fn select_sleep(left_ns: &mut u64) -> isize {
    let mut tv = ns_to_timeval(*left_ns);
    // SAFETY: no descriptor sets; valid timeval.
    let r = unsafe {
        libc::select(
            0,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &mut tv,
        )
    };
    *left_ns = super::time::timeval_to_ns(&tv);
    r as isize
}

/// ppoll() with no descriptors for `ns`: the raw result (0, or -1 with errno set).
#[inline(always)]
pub(crate) fn ppoll_sleep(ns: u64) -> isize {
    let ts = ns_to_timespec(ns);
    // SAFETY: zero descriptors; valid timespec; no signal mask change.
    unsafe { libc::ppoll(std::ptr::null_mut(), 0, &ts, std::ptr::null()) as isize }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::time::{MONOTONIC, now_ns};

    #[test]
    fn a_silent_posix_timer_counts_down_and_expires() {
        let timer = PosixTimer::silent(MONOTONIC).unwrap();
        assert_eq!(timer.remaining_ns().unwrap(), 0, "not armed");
        timer.set_relative(&Arming::new(500_000_000, 0)).unwrap();
        let left = timer.remaining_ns().unwrap();
        assert!((1..=500_000_000).contains(&left), "{left}");
        timer.set_relative(&Arming::new(1_000_000, 0)).unwrap();
        assert_eq!(clock_sleep_for(MONOTONIC, 3_000_000), Ok(()));
        assert_eq!(timer.remaining_ns().unwrap(), 0, "expired");
    }

    #[test]
    fn a_timerfd_fires_at_the_absolute_time_it_was_armed_for() {
        let timer = TimerFd::new(MONOTONIC).unwrap();
        let due = now_ns(MONOTONIC) + 2_000_000;
        timer.set_absolute(&Arming::new(due, 0)).unwrap();
        assert_eq!(timer.read_raw(), 8);
        assert!(now_ns(MONOTONIC) >= due);
    }

    #[test]
    fn the_sleeps_last_at_least_what_was_asked() {
        let sleeps: [(&str, &dyn Fn(u64) -> bool); 5] = [
            ("sleep_until", &|ns| {
                sleep_until(MONOTONIC, now_ns(MONOTONIC) + ns) == 0
            }),
            ("clock_sleep_for", &|ns| {
                clock_sleep_for(MONOTONIC, ns).is_ok()
            }),
            ("nanosleep_for", &|ns| nanosleep_for(ns).is_ok()),
            ("select_sleep", &|ns| select_sleep(&mut { ns }) == 0),
            ("ppoll_sleep", &|ns| ppoll_sleep(ns) == 0),
        ];
        for (name, sleep) in sleeps {
            let start = now_ns(MONOTONIC);
            assert!(sleep(2_000_000), "{name}");
            let slept = now_ns(MONOTONIC) - start;
            assert!(slept >= 2_000_000, "{name}: {slept} ns");
        }
    }
}

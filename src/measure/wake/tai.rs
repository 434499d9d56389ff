//! `clock-nanosleep-tai`: clock_nanosleep(TIMER_ABSTIME) to due times on CLOCK_TAI, the clock of
//! time-sensitive networking (SO_TXTIME launch times, the etf and taprio qdiscs, PTP).
//!
//! CLOCK_TAI is CLOCK_REALTIME plus the kernel's TAI offset (adjtimex ADJ_TAI, set by e.g.
//! phc2sys or chrony). The offset is 0 until something sets it, and TAI then equals REALTIME, so
//! the method works on every system. The latency has the makeup of `clock-nanosleep`'s, on the
//! kernel's TAI hrtimer base: a step of the realtime clock or of the offset moves pending
//! timers and appears as a latency of the step's size, as with `--clock realtime`; a leap
//! second does not, TAI having none.

use super::sleep::AbsoluteSleep;
use crate::measure::clock::Clock;
use crate::measure::waker::{MakeWaker, Waker};
use std::io;
use std::sync::atomic::AtomicBool;

/// clock_nanosleep(CLOCK_TAI, TIMER_ABSTIME) to the due time. Its row's
/// `ClockUse::Own(Clock::Tai)` makes the loop read due times and wakeups on the same clock.
pub(crate) struct TaiSleep(AbsoluteSleep);

impl MakeWaker for TaiSleep {
    fn make(_clock: Clock, _interval_ns: u64) -> Result<Self, String> {
        Ok(TaiSleep(AbsoluteSleep { clock: Clock::Tai }))
    }
}

impl Waker for TaiSleep {
    #[inline(always)]
    fn wait(&mut self, due_ns: u64, interval_ns: u64, stop: &AtomicBool) -> io::Result<()> {
        self.0.wait(due_ns, interval_ns, stop)
    }
}

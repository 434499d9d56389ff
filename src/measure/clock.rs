//! Clocks: the table of the clocks jitterlab measures on, and clock reads. On Linux
//! `clock_gettime` is served by the vDSO: no syscall, a few tens of nanoseconds.

use crate::sys::time::{self, ClockId};

/// The clock due times and wakeups are read from. Its name and id are its row in [`CLOCKS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    Monotonic,
    Realtime,
    Tai,
}

/// What jitterlab knows about one clock.
#[derive(Debug)]
pub struct ClockRow {
    pub clock: Clock,
    /// The name on the command line (`--clock`) and in run.json.
    pub name: &'static str,
    pub id: ClockId,
    /// Offered by `--clock`. A clock that only a wake method of its own sleeps on (that method's
    /// row names it, see [`super::wake::ClockUse::Own`]) is not.
    pub(crate) on_command_line: bool,
}

/// Every clock, in the order of [`Clock`]'s variants (a row is found by its variant's index).
pub(crate) const CLOCKS: &[ClockRow] = &[
    ClockRow {
        clock: Clock::Monotonic,
        name: "monotonic",
        id: time::MONOTONIC,
        on_command_line: true,
    },
    ClockRow {
        clock: Clock::Realtime,
        name: "realtime",
        id: time::REALTIME,
        on_command_line: true,
    },
    // Only `--wake clock-nanosleep-tai` sleeps on it.
    ClockRow {
        clock: Clock::Tai,
        name: "tai",
        id: time::TAI,
        on_command_line: false,
    },
];

impl Clock {
    /// `--clock`'s default, and the time base of events, loads and tracing.
    pub const DEFAULT: Clock = Clock::Monotonic;

    #[inline(always)]
    pub const fn row(self) -> &'static ClockRow {
        &CLOCKS[self as usize]
    }

    #[inline(always)]
    pub const fn id(self) -> ClockId {
        self.row().id
    }

    pub const fn name(self) -> &'static str {
        self.row().name
    }

    /// The clock named `name` on the command line or in run.json.
    pub fn named(name: &str) -> Option<Clock> {
        CLOCKS.iter().find(|r| r.name == name).map(|r| r.clock)
    }

    /// Reads the clock in nanoseconds.
    #[inline(always)]
    pub fn now_ns(self) -> u64 {
        time::now_ns(self.id())
    }
}

/// CLOCK_MONOTONIC now, in ns: the time base of events.jsonl and of the recorder.
pub(crate) fn monotonic_ns() -> u64 {
    Clock::Monotonic.now_ns()
}

/// CPU time the calling thread has used so far (CLOCK_THREAD_CPUTIME_ID: the scheduler's
/// run time of the thread, the figure of /proc/self/task/TID/schedstat), ns.
pub(crate) fn thread_cpu_time_ns() -> u64 {
    time::now_ns(time::THREAD_CPUTIME)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_is_found_by_its_variant_and_its_name() {
        for (index, row) in CLOCKS.iter().enumerate() {
            assert_eq!(row.clock as usize, index, "{}: out of order", row.name);
            assert_eq!(Clock::named(row.name), Some(row.clock));
            assert!(row.clock.now_ns() > 0, "{}: cannot be read", row.name);
        }
    }
}

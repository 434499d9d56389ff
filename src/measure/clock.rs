//! Clock reads. On Linux `clock_gettime` for MONOTONIC and REALTIME is served by the vDSO:
//! no syscall, a few tens of nanoseconds.

/// The clock due times and wakeups are read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    Monotonic,
    Realtime,
}

impl Clock {
    pub fn id(self) -> libc::clockid_t {
        match self {
            Clock::Monotonic => libc::CLOCK_MONOTONIC,
            Clock::Realtime => libc::CLOCK_REALTIME,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Clock::Monotonic => "monotonic",
            Clock::Realtime => "realtime",
        }
    }

    /// Reads the clock in nanoseconds.
    #[inline(always)]
    pub fn now_ns(self) -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: ts is a valid out-pointer; both clock ids always exist on Linux.
        unsafe { libc::clock_gettime(self.id(), &mut ts) };
        timespec_to_ns(&ts)
    }
}

/// CLOCK_MONOTONIC now, in ns: the time base of events.jsonl and of the recorder.
pub fn monotonic_ns() -> u64 {
    Clock::Monotonic.now_ns()
}

#[inline(always)]
pub fn timespec_to_ns(ts: &libc::timespec) -> u64 {
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[inline(always)]
pub fn ns_to_timespec(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

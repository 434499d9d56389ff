//! Clocks and time conversions. Nanoseconds are `u64` everywhere outside this file: a
//! day-long run is 8.64e13 ns, far beyond 32 bits, and `time_t`/`c_long` are 32 bits on armv7
//! glibc, so every conversion widens to 64 bits before multiplying.

/// A clock id as the kernel knows it (`clockid_t`).
pub(crate) type ClockId = libc::clockid_t;

pub(crate) const MONOTONIC: ClockId = libc::CLOCK_MONOTONIC;
pub(crate) const MONOTONIC_COARSE: ClockId = libc::CLOCK_MONOTONIC_COARSE;
pub(crate) const REALTIME: ClockId = libc::CLOCK_REALTIME;
pub(crate) const TAI: ClockId = libc::CLOCK_TAI;
pub(crate) const THREAD_CPUTIME: ClockId = libc::CLOCK_THREAD_CPUTIME_ID;

const NS_PER_S: u64 = 1_000_000_000;

// This target's time_t and suseconds_t: 32 bits on armv7 glibc, 64 on the others. libc marks
// musl's as deprecated because 32-bit musl moved to 64 bits in musl 1.2; on the 64-bit musl
// targets jitterlab builds for they are 64 bits already.
#[allow(deprecated)]
type TimeT = libc::time_t;
#[allow(deprecated)]
type SusecondsT = libc::suseconds_t;

/// Reads `clock` in nanoseconds (vDSO: no syscall on the clocks jitterlab measures with).
#[inline(always)]
pub fn now_ns(clock: ClockId) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer; callers pass clocks that exist on Linux.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    timespec_to_ns(&ts)
}

/// clock_getres(2) in nanoseconds, or None when the clock is not supported.
// i64::from widens time_t and c_long on 32-bit targets; on 64-bit ones it is the identity.
#[allow(clippy::useless_conversion)]
pub(crate) fn resolution_ns(clock: ClockId) -> Option<i64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_getres writes one timespec into the pointer we pass.
    (unsafe { libc::clock_getres(clock, &mut ts) } == 0)
        .then(|| i64::from(ts.tv_sec) * NS_PER_S as i64 + i64::from(ts.tv_nsec))
}

/// The CPU time thread `tid` of this process has used so far, ns (its per-thread CPU clock,
/// which another thread of the process can read while `tid` is inside a system call); None
/// once the kernel has released the thread. That is a little after `join` returns: join wakes
/// when the exiting thread clears its id, before the kernel releases it (under qemu-user,
/// whole milliseconds later). The clock id is the kernel's for a thread's scheduler clock
/// (`MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)` of include/linux/posix-timers.h), what
/// glibc's pthread_getcpuclockid returns, built from the id because Rust threads give none.
pub(crate) fn thread_cpu_time_ns(tid: libc::pid_t) -> Option<u64> {
    const CPUCLOCK_PERTHREAD: ClockId = 4;
    const CPUCLOCK_SCHED: ClockId = 2;
    let clock = (!tid << 3) | CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer; a clock of a thread that is gone gives EINVAL.
    (unsafe { libc::clock_gettime(clock, &mut ts) } == 0).then(|| timespec_to_ns(&ts))
}

/// User and system CPU time of the whole process so far (getrusage RUSAGE_SELF: every thread,
/// ended ones included; child processes not), ns, in that order.
pub(crate) fn process_cpu_time_ns() -> (u64, u64) {
    // SAFETY: an all-zero rusage is valid; getrusage fills it and cannot fail for RUSAGE_SELF.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    (
        timeval_to_ns(&usage.ru_utime),
        timeval_to_ns(&usage.ru_stime),
    )
}

/// The tick of the kernel's user-visible time counters (/proc/stat, clock_t), per second:
/// USER_HZ, 100 on every Linux architecture; 100 if sysconf cannot say.
pub(crate) fn user_hz() -> u64 {
    // SAFETY: plain sysconf.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 { hz as u64 } else { 100 }
}

/// A timespec (non-negative, as clocks and durations give them) in nanoseconds.
#[inline(always)]
pub(crate) fn timespec_to_ns(ts: &libc::timespec) -> u64 {
    // `as u64` widens before the multiplication: 32-bit time_t cannot overflow here.
    ts.tv_sec as u64 * NS_PER_S + ts.tv_nsec as u64
}

/// Nanoseconds as a timespec. On a 32-bit time_t (armv7 glibc) seconds beyond 2^31 cannot be
/// represented; they saturate rather than wrap (CLOCK_MONOTONIC is far from it: 68 years of
/// uptime; CLOCK_REALTIME reaches it in 2038).
#[inline(always)]
pub(crate) fn ns_to_timespec(ns: u64) -> libc::timespec {
    let secs = ns / NS_PER_S;
    libc::timespec {
        tv_sec: TimeT::try_from(secs).unwrap_or(TimeT::MAX),
        // Below 1e9: fits a 32-bit c_long.
        tv_nsec: (ns % NS_PER_S) as libc::c_long,
    }
}

/// A timeval (rusage, itimers) in nanoseconds.
#[inline(always)]
pub(crate) fn timeval_to_ns(tv: &libc::timeval) -> u64 {
    tv.tv_sec as u64 * NS_PER_S + tv.tv_usec as u64 * 1_000
}

/// Nanoseconds as a timeval, rounded down to whole microseconds (saturating like
/// [`ns_to_timespec`]).
#[inline(always)]
pub(crate) fn ns_to_timeval(ns: u64) -> libc::timeval {
    let us = ns / 1_000;
    libc::timeval {
        tv_sec: TimeT::try_from(us / 1_000_000).unwrap_or(TimeT::MAX),
        // Below 1e6: fits every suseconds_t.
        tv_usec: (us % 1_000_000) as SusecondsT,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_threads_cpu_time_is_read_while_it_runs_and_none_once_it_is_gone() {
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let spinner = std::thread::spawn(move || {
            tid_tx.send(unsafe { libc::gettid() }).unwrap();
            // Spin 30 ms of this thread's own CPU time, then wait to be let go.
            let start = now_ns(THREAD_CPUTIME);
            while now_ns(THREAD_CPUTIME) - start < 30_000_000 {}
            go_rx.recv().unwrap();
        });
        let tid = tid_rx.recv().unwrap();
        let mut used = 0;
        while used < 30_000_000 {
            used = thread_cpu_time_ns(tid).expect("the thread's CPU clock");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        // Not this thread's clock: this one slept.
        assert!(now_ns(THREAD_CPUTIME) < used);
        go_tx.send(()).unwrap();
        spinner.join().unwrap();
        // Join returns when the thread has cleared its id; the kernel releases it a moment
        // later (CI saw it still readable right after join under qemu-arm), so wait for that
        // within a bound far beyond any scheduling delay.
        let deadline = now_ns(MONOTONIC) + 10 * NS_PER_S;
        while thread_cpu_time_ns(tid).is_some() && now_ns(MONOTONIC) < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(thread_cpu_time_ns(tid), None);
    }

    /// A day and a bit in ns: beyond 32 bits in ns, and its seconds beyond 16 bits.
    const DAY_NS: u64 = 86_400 * NS_PER_S + 123_456_789;

    #[test]
    #[allow(clippy::useless_conversion)] // i64::from widens on 32-bit targets
    fn a_day_long_timestamp_round_trips_exactly_through_timespec_and_timeval() {
        for ns in [
            0,
            1,
            999_999_999,
            NS_PER_S,
            DAY_NS,
            30 * DAY_NS,
            u32::MAX as u64 + 7,
        ] {
            assert_eq!(timespec_to_ns(&ns_to_timespec(ns)), ns, "{ns}");
            assert_eq!(
                timeval_to_ns(&ns_to_timeval(ns)),
                ns / 1_000 * 1_000,
                "{ns}"
            );
        }
        let ts = ns_to_timespec(DAY_NS);
        assert_eq!(
            (i64::from(ts.tv_sec), i64::from(ts.tv_nsec)),
            (86_400, 123_456_789)
        );
    }

    #[test]
    fn seconds_beyond_time_t_saturate_instead_of_wrapping() {
        let secs_max = TimeT::MAX as u64;
        if secs_max >= u64::MAX / NS_PER_S {
            // 64-bit time_t: every u64 of ns fits; the largest converts exactly.
            let ts = ns_to_timespec(u64::MAX);
            assert_eq!(ts.tv_sec as u64, u64::MAX / NS_PER_S);
            return;
        }
        let far = (secs_max + 10) * NS_PER_S;
        assert_eq!(ns_to_timespec(far).tv_sec, TimeT::MAX);
    }

    #[test]
    fn clocks_read_and_resolve() {
        let a = now_ns(MONOTONIC);
        let b = now_ns(MONOTONIC);
        assert!(a > 0 && b >= a);
        let res = resolution_ns(MONOTONIC).expect("CLOCK_MONOTONIC exists");
        assert!((1..=10_000_000).contains(&res), "{res}");
    }
}

//! The measuring loop's own starvation guard (issue 39, N24).
//!
//! jitterlab's own threads (the runner, which drains the rings and serves SIGINT/SIGTERM) run
//! one priority below the measuring threads. A measuring thread that never sleeps (`-i 1us` on
//! a machine whose wakeup costs more than that) keeps its CPU busy for ever; on every CPU, the
//! runner never runs and a stop request is never served. So the runner publishes a heartbeat
//! ([`beat`]) at the end of each poll, and the loop looks at it at most every [`CHECK_EVERY_NS`]
//! of its own clock reads (one compare of a value it already has, on the normal path): when the
//! heartbeat has not moved for [`STARVED_AFTER_NS`], the thread gives its CPU up in short sleeps
//! until the heartbeat moves, at most [`YIELD_AT_MOST`] of its clock, and counts it.
//!
//! Only a thread that kept its CPU busy gives it up: one that used less than half of the
//! standstill's time on the CPU (its own CPU-time clock, read when the beat is seen moving and
//! at the standstill) slept the rest, when the runner could have run there; giving the CPU up
//! cannot help a runner that is slow, or held off by something else, and only loses periods.
//! In the lab's guest of 16 emulated CPUs on 2 host cores (stop 59), the runner's rounds took
//! seconds while every measuring thread slept 99% of its 10 ms periods: each thread gave its
//! CPU up for 3-5 s of a 5 s run (the 1 ms slices took 30-50 ms each there, so the bound of
//! 100 slices was seconds: it is now also a bound on the clock).

use super::sample::ThreadCounters;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// How often, on its own clock, a measuring thread looks at the heartbeat.
pub(crate) const CHECK_EVERY_NS: u64 = 100_000_000;
/// How long the heartbeat may stand still before a measuring thread gives its CPU up.
pub(crate) const STARVED_AFTER_NS: u64 = 1_000_000_000;
/// The longest a measuring thread gives its CPU up at once.
pub(crate) const YIELD_AT_MOST: Duration = Duration::from_millis(100);
/// One sleep of a yield: the heartbeat and the stop flag are looked at between them.
const YIELD_SLICE: Duration = Duration::from_millis(1);

/// The runner's heartbeat: moved by [`beat`] at the end of each poll (one run per process),
/// and by a thread that waits for a reader to make room (`sys::stop_aware`: blocked on a
/// stalled stderr, not starved, it gains nothing from a yield; sixth hostile re-run, G1).
pub(crate) use crate::sys::stop_aware::OWN_THREADS_BEAT;

/// Called by the runner once per poll, once its round is done (the stop served, the rings
/// drained): a measuring thread that gave its CPU up resumes then, not in the middle of it.
pub(crate) fn beat() {
    OWN_THREADS_BEAT.fetch_add(1, Relaxed);
}

/// One thread's view of the heartbeat.
#[derive(Debug)]
pub(crate) struct Guard<'a> {
    beat: &'a AtomicU64,
    /// The clock read at or after which the heartbeat is looked at next.
    pub(crate) next_check_ns: u64,
    seen: u64,
    seen_at_ns: u64,
    /// The thread's CPU time (ns) when the beat was last seen moving.
    seen_cpu_ns: u64,
    yields: u64,
    yielded_ns: u64,
}

impl<'a> Guard<'a> {
    /// A guard that never checks: for loops without a runner (the simulated tests), with no
    /// clock read to make it.
    pub(crate) fn off(beat: &'a AtomicU64) -> Self {
        Guard {
            next_check_ns: u64::MAX,
            ..Guard::new(beat, 0)
        }
    }

    pub(crate) fn new(beat: &'a AtomicU64, now_ns: u64) -> Self {
        Guard {
            beat,
            next_check_ns: now_ns.saturating_add(CHECK_EVERY_NS),
            seen: beat.load(Relaxed),
            seen_at_ns: now_ns,
            // Read at the first standstill: until then, the thread's whole CPU time counts
            // against the time since the guard began (no clock read when there is no guard).
            seen_cpu_ns: 0,
            yields: 0,
            yielded_ns: 0,
        }
    }

    /// Called when the clock read `now_ns` has reached [`Guard::next_check_ns`]. Returns
    /// the clock read when it resumed, when the thread gave its CPU up (it slept); None when not.
    /// `read_cpu` is the thread's own CPU time, ns (CLOCK_THREAD_CPUTIME_ID): read here only,
    /// once per check at most (every 100 ms), never on the measuring loop's path.
    #[cold]
    #[inline(never)]
    pub(crate) fn check(
        &mut self,
        now_ns: u64,
        counters: &ThreadCounters,
        stop: &AtomicBool,
        read_clock: impl Fn() -> u64,
        read_cpu: impl Fn() -> u64,
        sleep: impl Fn(Duration),
    ) -> Option<u64> {
        self.next_check_ns = now_ns.saturating_add(CHECK_EVERY_NS);
        let beat = self.beat.load(Relaxed);
        if beat != self.seen {
            self.seen = beat;
            self.seen_at_ns = now_ns;
            self.seen_cpu_ns = read_cpu();
            return None;
        }
        let still_ns = now_ns.saturating_sub(self.seen_at_ns);
        if still_ns < STARVED_AFTER_NS {
            return None;
        }
        // Asleep more than half the standstill: not this thread's doing (see the top).
        let busy_ns = read_cpu().saturating_sub(self.seen_cpu_ns);
        if busy_ns.saturating_mul(2) < still_ns {
            return None;
        }
        let slices = (YIELD_AT_MOST.as_nanos() / YIELD_SLICE.as_nanos()) as u32;
        let bound = now_ns.saturating_add(YIELD_AT_MOST.as_nanos() as u64);
        let mut resumed = now_ns;
        for _ in 0..slices {
            sleep(YIELD_SLICE);
            resumed = read_clock();
            if self.beat.load(Relaxed) != beat || stop.load(Relaxed) || resumed >= bound {
                break;
            }
        }
        self.yields += 1;
        self.yielded_ns += resumed.saturating_sub(now_ns);
        counters.guard_yields.store(self.yields, Relaxed);
        counters.guard_yielded_ns.store(self.yielded_ns, Relaxed);
        self.seen = self.beat.load(Relaxed);
        self.seen_at_ns = resumed;
        self.seen_cpu_ns = read_cpu();
        self.next_check_ns = resumed.saturating_add(CHECK_EVERY_NS);
        Some(resumed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// A heartbeat that moves keeps the thread going; one that stands still 1 s makes it give
    /// its CPU up (slept until the beat moves), counted; it is looked at only every 100 ms.
    #[test]
    fn gives_the_cpu_up_only_when_the_beat_stands_still_for_a_second() {
        let beat = AtomicU64::new(0);
        let counters = ThreadCounters::default();
        let stop = AtomicBool::new(false);
        let now = Cell::new(0u64);
        let slept = Cell::new(0u32);
        let mut g = Guard::new(&beat, 0);
        assert_eq!(g.next_check_ns, CHECK_EVERY_NS);
        let sleep = |_d: Duration| {
            slept.set(slept.get() + 1);
            now.set(now.get() + 1_000_000);
            if slept.get() == 3 {
                beat.fetch_add(1, Relaxed);
            }
        };
        // The beat moves every 100 ms: never a yield.
        for i in 1..=20u64 {
            beat.fetch_add(1, Relaxed);
            now.set(i * CHECK_EVERY_NS);
            assert!(
                g.check(
                    now.get(),
                    &counters,
                    &stop,
                    || now.get(),
                    || now.get(),
                    sleep
                )
                .is_none()
            );
        }
        // It stands still: no yield before 1 s, one at 1 s, which ends when it moves.
        let still_from = now.get();
        let mut yielded = false;
        for i in 1..=10u64 {
            now.set(still_from + i * CHECK_EVERY_NS);
            yielded = g
                .check(
                    now.get(),
                    &counters,
                    &stop,
                    || now.get(),
                    || now.get(),
                    sleep,
                )
                .is_some();
            assert_eq!(yielded, i == 10, "check {i}");
        }
        assert!(yielded);
        assert_eq!(slept.get(), 3, "slept until the beat moved");
        assert_eq!(counters.guard_yields.load(Relaxed), 1);
        assert_eq!(counters.guard_yielded_ns.load(Relaxed), 3_000_000);
        assert_eq!(g.next_check_ns, now.get() + CHECK_EVERY_NS);
    }

    /// A thread that slept most of the standstill keeps its CPU: the runner could have run
    /// there, so the standstill is not its doing; at half its time on the CPU it gives it up.
    #[test]
    fn a_thread_that_slept_most_of_the_standstill_keeps_its_cpu() {
        let beat = AtomicU64::new(0);
        let counters = ThreadCounters::default();
        let stop = AtomicBool::new(false);
        let cpu = Cell::new(0u64);
        let slept = Cell::new(0u32);
        let sleep = |_d: Duration| slept.set(slept.get() + 1);
        let mut g = Guard::new(&beat, 0);
        // The beat moves at 100 ms (CPU time read then: 1 ms), then stands still.
        beat.fetch_add(1, Relaxed);
        cpu.set(1_000_000);
        assert!(
            g.check(CHECK_EVERY_NS, &counters, &stop, || 0, || cpu.get(), sleep)
                .is_none()
        );
        // 2 s later, 0.9 s of it on the CPU: asleep more than half of it, no yield.
        let at = CHECK_EVERY_NS + 2 * STARVED_AFTER_NS;
        cpu.set(1_000_000 + 900_000_000);
        assert!(
            g.check(at, &counters, &stop, || at, || cpu.get(), sleep)
                .is_none()
        );
        assert_eq!(slept.get(), 0);
        assert_eq!(counters.guard_yields.load(Relaxed), 0);
        // 100 ms later, 1.05 s on the CPU of the 2.1 s: half of it, it gives its CPU up.
        cpu.set(1_000_000 + 1_050_000_000);
        let at = at + CHECK_EVERY_NS;
        assert!(
            g.check(at, &counters, &stop, || at, || cpu.get(), sleep)
                .is_some()
        );
        assert_eq!(counters.guard_yields.load(Relaxed), 1);
    }

    /// A yield ends at [`YIELD_AT_MOST`] of the clock even when its slices sleep longer than
    /// asked (an emulated CPU: each 1 ms sleep took 30-50 ms in the lab's 16-CPU guest).
    #[test]
    fn a_yield_is_bounded_by_the_clock_too() {
        let beat = AtomicU64::new(0);
        let counters = ThreadCounters::default();
        let stop = AtomicBool::new(false);
        let now = Cell::new(STARVED_AFTER_NS);
        let slept = Cell::new(0u32);
        let mut g = Guard::new(&beat, 0);
        let sleep = |_d: Duration| {
            slept.set(slept.get() + 1);
            now.set(now.get() + 40_000_000);
        };
        let resumed = g
            .check(
                now.get(),
                &counters,
                &stop,
                || now.get(),
                || now.get(),
                sleep,
            )
            .expect("a busy thread gives its CPU up");
        assert_eq!(slept.get(), 3, "40 ms slices: the third passes 100 ms");
        assert_eq!(resumed, STARVED_AFTER_NS + 120_000_000);
    }

    /// A heartbeat that never moves again: each yield is bounded (100 slices), one per second.
    #[test]
    fn a_yield_is_bounded() {
        let beat = AtomicU64::new(0);
        let counters = ThreadCounters::default();
        let stop = AtomicBool::new(false);
        let now = Cell::new(0u64);
        let mut g = Guard::new(&beat, 0);
        let sleep = |d: Duration| now.set(now.get() + d.as_nanos() as u64);
        now.set(STARVED_AFTER_NS);
        // It slept its whole bound, and says when it resumed.
        let resumed = STARVED_AFTER_NS + YIELD_AT_MOST.as_nanos() as u64;
        assert_eq!(
            g.check(
                now.get(),
                &counters,
                &stop,
                || now.get(),
                || now.get(),
                sleep
            ),
            Some(resumed)
        );
        assert_eq!(now.get(), resumed);
        let at = now.get() + CHECK_EVERY_NS;
        assert!(
            g.check(at, &counters, &stop, || at, || at, sleep).is_none(),
            "not again before 1 s"
        );
    }
}

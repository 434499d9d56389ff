//! The measuring loop: sleep, read the clock, push a sample. Nothing else.
//!
//! One concern, one file (issue 41's near-limit files): the loop is its first 180 lines; the rest
//! is its unit tests on a simulated clock, which drive the same function.

use super::clock::Clock;
use super::guard::Guard;
use super::sample::{Sample, ThreadCounters, ThreadEnd};
use super::waker::{Schedule, Waker};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

/// When a thread stops measuring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopAt {
    /// After this many wakeups.
    Loops(u64),
    /// Before sleeping towards a due time at or after this clock time (ns).
    ClockTime(u64),
}

/// A source of the current time. [`Clock`] in production; a scripted clock in tests, so the
/// loop's accounting can be checked on simulated sequences.
pub trait TimeSource {
    fn now_ns(&self) -> u64;
    /// The calling thread's CPU time, ns, for the starvation guard's check (cold: at most every
    /// 100 ms of the clock). A simulated clock gives its own, so that a test's simulated second
    /// is not judged against the real thread's few microseconds.
    fn thread_cpu_ns(&self) -> u64 {
        crate::sys::time::now_ns(crate::sys::time::THREAD_CPUTIME)
    }
}

impl TimeSource for Clock {
    #[inline(always)]
    fn now_ns(&self) -> u64 {
        Clock::now_ns(*self)
    }
}

/// The per-thread parameters of the loop.
#[derive(Debug, Clone, Copy)]
pub struct CyclePlan<T = Clock> {
    pub clock: T,
    pub schedule: Schedule,
    /// The first period, ns.
    pub interval_ns: u64,
    /// Added to the period after every wakeup (FirmTimers -i), ns.
    pub interval_step_ns: u64,
    /// Due time of the first wakeup for absolute and periodic schedules.
    pub first_due_ns: u64,
    pub stop_at: StopAt,
    /// The runner's heartbeat for the starvation guard ([`super::guard`]); `None`: no guard
    /// (the loop's simulated tests).
    pub beat: Option<&'static AtomicU64>,
}

/// Of `passed` due times on the grid after `due_ns` (`from_next`: from the next one on; else
/// from `due_ns` itself), those before the run's end: a period past the end is no period of
/// the run, so a wakeup late across the end, or a CPU given up across it, counts only the due
/// times before it. Without this a traced run under hackbench 40 counted 7910 samples and 92
/// missed periods in 8 s at 1 ms (8002 periods). Called only when periods were missed.
#[cold]
fn within_run(passed: u64, due_ns: u64, interval_ns: u64, stop_at: StopAt, from_next: bool) -> u64 {
    match stop_at {
        StopAt::Loops(_) => passed,
        StopAt::ClockTime(end) => {
            let first = if from_next {
                due_ns + interval_ns
            } else {
                due_ns
            };
            if first >= end {
                0
            } else {
                passed.min((end - first - 1) / interval_ns + 1)
            }
        }
    }
}

/// Number of periods whose due time had passed at a wakeup `latency_ns` late: with a period of
/// 1 ms, a wakeup 2.5 ms late let 2 further periods pass unserved.
#[inline(always)]
pub(crate) fn periods_missed(latency_ns: i64, interval_ns: u64) -> u64 {
    if latency_ns <= 0 {
        0
    } else {
        latency_ns as u64 / interval_ns
    }
}

/// Anything that takes samples without blocking: the ring's producer, or a Vec in tests.
pub trait SampleSink {
    /// Returns false when the sample could not be taken (ring full).
    fn try_push(&mut self, sample: Sample) -> bool;
}

impl SampleSink for rtrb::Producer<Sample> {
    #[inline(always)]
    fn try_push(&mut self, sample: Sample) -> bool {
        self.push(sample).is_ok()
    }
}

/// Runs the loop until `plan.stop_at`, `stop`, or a failing sleep.
///
/// Per wakeup: one blocking syscall (the waker), one vDSO clock read, one push into a
/// wait-free ring, one compare for the starvation guard; a relaxed counter store only when a
/// record is dropped or a period missed. No allocation, lock, or I/O. Every
/// [`super::guard::CHECK_EVERY_NS`] of its clock the loop looks at the runner's heartbeat, and
/// gives its CPU up for a bounded time when the runner has not run for a second
/// ([`super::guard`]): the periods that pass meanwhile are skipped and counted missed.
pub fn run_cycles<W: Waker, S: SampleSink, T: TimeSource>(
    waker: &mut W,
    plan: &CyclePlan<T>,
    sink: &mut S,
    counters: &ThreadCounters,
    stop: &AtomicBool,
) -> ThreadEnd {
    let clock = &plan.clock;
    let mut interval = plan.interval_ns;
    let mut due = match plan.schedule {
        Schedule::Relative => clock.now_ns() + interval,
        Schedule::Absolute | Schedule::Periodic | Schedule::Sender => plan.first_due_ns,
    };
    let (mut seq, mut dropped, mut missed_total) = (0u64, 0u64, 0u64);
    static NO_BEAT: AtomicU64 = AtomicU64::new(0);
    let mut guard = match plan.beat {
        Some(beat) => Guard::new(beat, clock.now_ns()),
        // No clock read without a guard: the simulated clocks count them.
        None => Guard::off(&NO_BEAT),
    };
    loop {
        if stop.load(Relaxed) {
            return ThreadEnd::Stopped;
        }
        let done = match plan.stop_at {
            StopAt::Loops(n) => seq >= n,
            StopAt::ClockTime(end) => due >= end,
        };
        if done {
            return ThreadEnd::Completed;
        }
        if let Err(e) = waker.wait(due, interval, stop) {
            // A stop interrupts a sleep that may be long (see thread::interrupt).
            if e.kind() == std::io::ErrorKind::Interrupted && stop.load(Relaxed) {
                return ThreadEnd::Stopped;
            }
            return ThreadEnd::Failed(format!("the sleep before wakeup {seq} failed: {e}"));
        }
        let now = clock.now_ns();
        let latency = now as i64 - waker.reference_ns(due) as i64;
        waker.woke(latency);
        // Periods pass by the due time, not by the latency's reference: a sender's stamp
        // (IPC methods) is its own, so a sender held off for seconds woke the receiver with a
        // small latency, the loop then served every passed due time at once and counted none
        // missed (issue 39, N6). For every other method the reference is the due time and the
        // two are the same number.
        let mut missed = periods_missed(now as i64 - due as i64, interval);
        if missed > 0 {
            missed = within_run(missed, due, interval, plan.stop_at, true);
        }
        if !sink.try_push(Sample {
            seq,
            expected_ns: due,
            latency_ns: latency,
            missed: missed.min(u32::MAX as u64) as u32,
        }) {
            dropped += 1;
            counters.dropped_records.store(dropped, Relaxed);
        }
        seq += 1;
        due = match plan.schedule {
            // The wake read doubles as the next sleep's start, keeping one clock read per cycle.
            Schedule::Relative => now + interval + plan.interval_step_ns,
            // Skip the grid points that passed unserved; they are counted as missed.
            Schedule::Absolute | Schedule::Periodic | Schedule::Sender => {
                due + interval * (missed + 1) + plan.interval_step_ns
            }
        };
        interval += plan.interval_step_ns;
        // The guard's one compare; its check is cold (see super::guard).
        if now >= guard.next_check_ns
            && let Some(resumed) = guard.check(
                now,
                counters,
                stop,
                || clock.now_ns(),
                || clock.thread_cpu_ns(),
                std::thread::sleep,
            )
        {
            // The due times that passed while the CPU was given up are skipped and counted
            // missed: served now, they would be latencies of jitterlab's own making.
            if resumed > due {
                let skipped = (resumed - due) / interval + 1;
                missed += within_run(skipped, due, interval, plan.stop_at, false);
                due += skipped * interval;
            }
        }
        if missed > 0 {
            missed_total += missed;
            counters.missed_periods.store(missed_total, Relaxed);
            if plan.schedule == Schedule::Periodic
                && let Err(e) = waker.skipped_to(due)
            {
                return ThreadEnd::Failed(format!(
                    "re-aiming the timer after wakeup {} failed: {e}",
                    seq - 1
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::io;
    use std::rc::Rc;

    /// Simulated time shared by the scripted waker and clock.
    #[derive(Clone, Default)]
    struct FakeTime(Rc<Cell<u64>>);

    impl TimeSource for FakeTime {
        fn now_ns(&self) -> u64 {
            self.0.get()
        }
    }

    /// Wakes each sleep a scripted latency after its due time (relative methods: after the
    /// interval) by moving the simulated clock there.
    struct ScriptedWaker {
        time: FakeTime,
        schedule: Schedule,
        latencies: Vec<u64>,
        next: usize,
        skipped_to: Vec<u64>,
    }

    impl Waker for ScriptedWaker {
        fn wait(&mut self, due_ns: u64, interval_ns: u64, _stop: &AtomicBool) -> io::Result<()> {
            let target = match self.schedule {
                Schedule::Relative => self.time.0.get() + interval_ns,
                _ => due_ns,
            };
            self.time.0.set(target + self.latencies[self.next]);
            self.next += 1;
            Ok(())
        }

        fn skipped_to(&mut self, next_due_ns: u64) -> io::Result<()> {
            self.skipped_to.push(next_due_ns);
            Ok(())
        }
    }

    impl SampleSink for Vec<Sample> {
        fn try_push(&mut self, sample: Sample) -> bool {
            self.push(sample);
            true
        }
    }

    /// A simulated absolute-grid loop with a 1 us period, starting at 0.
    fn absolute_plan(
        time: &FakeTime,
        stop_at: StopAt,
        latency: u64,
        wakeups: usize,
    ) -> (CyclePlan<FakeTime>, ScriptedWaker) {
        let plan = CyclePlan {
            clock: time.clone(),
            schedule: Schedule::Absolute,
            interval_ns: 1_000,
            interval_step_ns: 0,
            first_due_ns: 0,
            stop_at,
            beat: None,
        };
        let waker = ScriptedWaker {
            time: time.clone(),
            schedule: Schedule::Absolute,
            latencies: vec![latency; wakeups],
            next: 0,
            skipped_to: Vec::new(),
        };
        (plan, waker)
    }

    fn simulate(schedule: Schedule, latencies: &[u64], step: u64) -> (Vec<Sample>, ThreadCounters) {
        let (samples, counters, _) = simulate_with_waker(schedule, latencies, step);
        (samples, counters)
    }

    /// As [`simulate`], also returning the next due times the waker was re-aimed at.
    fn simulate_with_waker(
        schedule: Schedule,
        latencies: &[u64],
        step: u64,
    ) -> (Vec<Sample>, ThreadCounters, Vec<u64>) {
        let time = FakeTime::default();
        time.0.set(10_000_000);
        let plan = CyclePlan {
            clock: time.clone(),
            schedule,
            interval_ns: 1_000_000,
            interval_step_ns: step,
            first_due_ns: 10_000_000,
            stop_at: StopAt::Loops(latencies.len() as u64),
            beat: None,
        };
        let mut waker = ScriptedWaker {
            time,
            schedule,
            latencies: latencies.to_vec(),
            next: 0,
            skipped_to: Vec::new(),
        };
        let (samples, counters) = run_to_completion(&mut waker, &plan);
        (samples, counters, waker.skipped_to)
    }

    /// Runs the loop with `waker` to its planned end (never stopped); its samples and
    /// counters.
    fn run_to_completion(
        waker: &mut ScriptedWaker,
        plan: &CyclePlan<FakeTime>,
    ) -> (Vec<Sample>, ThreadCounters) {
        let (mut samples, counters) = (Vec::new(), ThreadCounters::default());
        let end = run_cycles(
            waker,
            plan,
            &mut samples,
            &counters,
            &AtomicBool::new(false),
        );
        assert_eq!(end, ThreadEnd::Completed);
        (samples, counters)
    }

    /// A wakeup late across the run's end counts only the due times before the end: in a run
    /// of 10 periods (due times 0..9 us) the wakeup due at 8 us comes 3.5 us late, so the due
    /// time at 9 us passed (missed) and those at 10 and 11 us are past the end (none of the
    /// run's). Samples and missed periods add up to the run's 10 periods.
    #[test]
    fn periods_past_the_end_are_not_missed() {
        // `wakeups` on time in a run of 10 us, the last one 3.5 us late: the samples and the
        // missed periods counted.
        let last_late = |wakeups: usize| {
            let time = FakeTime::default();
            let (plan, mut waker) = absolute_plan(&time, StopAt::ClockTime(10_000), 0, wakeups);
            waker.latencies[wakeups - 1] = 3_500;
            let (samples, counters) = run_to_completion(&mut waker, &plan);
            (samples, counters.missed_periods.load(Relaxed))
        };
        let (samples, missed) = last_late(9);
        assert_eq!((samples.len(), samples[8].missed, missed), (9, 1, 1));
        // The last period's wakeup that late: nothing missed, 10 samples.
        let (samples, missed) = last_late(10);
        assert_eq!((samples.len(), samples[9].missed, missed), (10, 0, 0));
        // A long run: every passed period is the run's.
        assert_eq!(
            within_run(3, 0, 1_000, StopAt::ClockTime(1_000_000), true),
            3
        );
        assert_eq!(within_run(3, 0, 1_000, StopAt::Loops(5), true), 3);
        // From the due time itself (the guard's count): 9 us is the run's, 10 us not.
        assert_eq!(
            within_run(4, 9_000, 1_000, StopAt::ClockTime(10_000), false),
            1
        );
    }

    #[test]
    fn missed_periods_follow_the_latency() {
        assert_eq!(periods_missed(-5, 1_000), 0);
        assert_eq!(periods_missed(999, 1_000), 0);
        assert_eq!(periods_missed(1_000, 1_000), 1);
        assert_eq!(periods_missed(2_500, 1_000), 2);
    }

    /// On the absolute grid a wakeup 2.5 periods late counts 2 missed periods and the next due
    /// time moves past them, so no grid point is served late twice.
    #[test]
    fn absolute_grid_skips_and_counts_passed_periods() {
        let (samples, counters) = simulate(
            Schedule::Absolute,
            &[10_000, 2_500_000, 20_000, 1_000_000, 5_000],
            0,
        );
        let dues: Vec<u64> = samples.iter().map(|s| s.expected_ns - 10_000_000).collect();
        assert_eq!(dues, vec![0, 1_000_000, 4_000_000, 5_000_000, 7_000_000]);
        let lat: Vec<i64> = samples.iter().map(|s| s.latency_ns).collect();
        assert_eq!(lat, vec![10_000, 2_500_000, 20_000, 1_000_000, 5_000]);
        let missed: Vec<u32> = samples.iter().map(|s| s.missed).collect();
        assert_eq!(missed, vec![0, 2, 0, 1, 0]);
        assert_eq!(counters.missed_periods.load(Relaxed), 3);
        assert_eq!(counters.dropped_records.load(Relaxed), 0);
    }

    /// N6: a sender (IPC methods: the latency's reference is the sender's stamp) held off for
    /// 2.5 periods wakes the receiver 20 us after its stamp. The latency is those 20 us, and the
    /// periods that passed by the due time are missed and skipped, not served in a burst.
    #[test]
    fn a_late_senders_passed_periods_are_missed_not_served_at_once() {
        struct LateSender {
            time: FakeTime,
            held_ns: Vec<u64>,
            next: usize,
            stamp_ns: u64,
        }
        impl Waker for LateSender {
            fn wait(&mut self, due_ns: u64, _: u64, _: &AtomicBool) -> io::Result<()> {
                // The sender sends once it runs, at the due time or when released.
                self.stamp_ns = due_ns.max(self.time.0.get()) + self.held_ns[self.next];
                self.time.0.set(self.stamp_ns + 20_000);
                self.next += 1;
                Ok(())
            }
            fn reference_ns(&self, _: u64) -> u64 {
                self.stamp_ns
            }
        }
        let time = FakeTime::default();
        time.0.set(10_000_000);
        let plan = CyclePlan {
            clock: time.clone(),
            schedule: Schedule::Sender,
            interval_ns: 1_000_000,
            interval_step_ns: 0,
            first_due_ns: 10_000_000,
            stop_at: StopAt::Loops(4),
            beat: None,
        };
        let mut waker = LateSender {
            time,
            held_ns: vec![0, 2_500_000, 0, 0],
            next: 0,
            stamp_ns: 0,
        };
        let (mut samples, counters) = (Vec::new(), ThreadCounters::default());
        run_cycles(
            &mut waker,
            &plan,
            &mut samples,
            &counters,
            &AtomicBool::new(false),
        );
        let lat: Vec<i64> = samples.iter().map(|s| s.latency_ns).collect();
        assert_eq!(lat, vec![20_000; 4]);
        let dues: Vec<u64> = samples.iter().map(|s| s.expected_ns - 10_000_000).collect();
        assert_eq!(dues, vec![0, 1_000_000, 4_000_000, 5_000_000]);
        let missed: Vec<u32> = samples.iter().map(|s| s.missed).collect();
        assert_eq!(missed, vec![0, 2, 0, 0]);
        assert_eq!(counters.missed_periods.load(Relaxed), 2);
    }

    /// A periodic timer is re-aimed at the loop's next due time after each late wakeup, and
    /// only then; absolute methods need no re-aiming (they sleep to the due time given).
    #[test]
    fn periodic_timers_are_re_aimed_after_skipped_periods_only() {
        let late = [10_000, 2_500_000, 20_000, 1_000_000, 5_000];
        let (_, _, aimed) = simulate_with_waker(Schedule::Periodic, &late, 0);
        assert_eq!(aimed, vec![10_000_000 + 4_000_000, 10_000_000 + 7_000_000]);
        let (_, _, aimed) = simulate_with_waker(Schedule::Absolute, &late, 0);
        assert!(aimed.is_empty());
    }

    /// Relative methods restart from the wake read; the due time is that read plus the interval.
    #[test]
    fn relative_due_time_is_last_read_plus_interval() {
        let (samples, counters) = simulate(Schedule::Relative, &[30_000, 1_200_000, 40_000], 0);
        let dues: Vec<u64> = samples.iter().map(|s| s.expected_ns).collect();
        assert_eq!(dues, vec![11_000_000, 12_030_000, 14_230_000]);
        assert_eq!(samples[1].missed, 1);
        assert_eq!(counters.missed_periods.load(Relaxed), 1);
    }

    /// --interval-step grows the period after every wakeup.
    #[test]
    fn interval_step_grows_the_period() {
        let (samples, _) = simulate(Schedule::Absolute, &[0, 0, 0, 0], 100_000);
        let gaps: Vec<u64> = samples
            .windows(2)
            .map(|w| w[1].expected_ns - w[0].expected_ns)
            .collect();
        assert_eq!(gaps, vec![1_100_000, 1_200_000, 1_300_000]);
    }

    /// A sink that refuses every other sample: the dropped count equals the refusals, and seq
    /// still numbers every wakeup, so the gaps show where records were lost.
    #[test]
    fn counts_dropped_records_and_numbers_every_wakeup() {
        struct Alternating(Vec<Sample>, bool);
        impl SampleSink for Alternating {
            fn try_push(&mut self, s: Sample) -> bool {
                self.1 = !self.1;
                if self.1 {
                    self.0.push(s)
                }
                self.1
            }
        }
        let (plan, mut waker) = absolute_plan(&FakeTime::default(), StopAt::Loops(10), 1, 10);
        let counters = ThreadCounters::default();
        let mut sink = Alternating(Vec::new(), false);
        run_cycles(
            &mut waker,
            &plan,
            &mut sink,
            &counters,
            &AtomicBool::new(false),
        );
        assert_eq!(counters.dropped_records.load(Relaxed), 5);
        let seqs: Vec<u64> = sink.0.iter().map(|s| s.seq).collect();
        assert_eq!(seqs, vec![0, 2, 4, 6, 8]);
    }

    #[test]
    fn stops_before_the_end_time_and_on_the_flag() {
        let (plan, mut waker) =
            absolute_plan(&FakeTime::default(), StopAt::ClockTime(10_000), 0, 20);
        let (mut samples, counters) = (Vec::new(), ThreadCounters::default());
        assert_eq!(
            run_cycles(
                &mut waker,
                &plan,
                &mut samples,
                &counters,
                &AtomicBool::new(false)
            ),
            ThreadEnd::Completed
        );
        assert_eq!(
            samples.len(),
            10,
            "due times 0..9000 lie before the end at 10000"
        );
        let stopped = run_cycles(
            &mut waker,
            &plan,
            &mut samples,
            &counters,
            &AtomicBool::new(true),
        );
        assert_eq!(stopped, ThreadEnd::Stopped);
    }

    /// A day at 1 s on a machine up 30 days: due times reach 2.6e15 ns, far beyond 32 bits, and
    /// must stay exact on 32-bit boards (run under qemu-arm by ci/cross.sh's unit-test step).
    #[test]
    fn a_day_long_run_has_exact_timestamps_on_every_target() {
        const S: u64 = 1_000_000_000;
        let start = 30 * 86_400 * S + 123;
        let time = FakeTime::default();
        time.0.set(start - S);
        let wakeups = 86_400;
        // Latencies of i * 7 ns (under 1 s), and one wakeup an hour late at 12:00.
        let mut latencies: Vec<u64> = (0..wakeups as u64).map(|i| i * 7).collect();
        latencies[43_200] = 3_600 * S + 5;
        let plan = CyclePlan {
            clock: time.clone(),
            schedule: Schedule::Absolute,
            interval_ns: S,
            interval_step_ns: 0,
            first_due_ns: start,
            stop_at: StopAt::ClockTime(start + 86_400 * S),
            beat: None,
        };
        let mut waker = ScriptedWaker {
            time: time.clone(),
            schedule: Schedule::Absolute,
            latencies,
            next: 0,
            skipped_to: Vec::new(),
        };
        let counters = ThreadCounters::default();
        let mut samples = Vec::new();
        let end = run_cycles(
            &mut waker,
            &plan,
            &mut samples,
            &counters,
            &AtomicBool::new(false),
        );
        assert_eq!(end, ThreadEnd::Completed);
        // The hour-late wakeup let 3600 grid points pass: 86_400 - 3_600 samples.
        assert_eq!(samples.len(), 86_400 - 3_600);
        assert_eq!(counters.missed_periods.load(Relaxed), 3_600);
        for (i, s) in samples.iter().enumerate() {
            let i = i as u64;
            // Grid point of sample i: after 12:00, shifted by the 3600 skipped points.
            let grid = if i <= 43_200 { i } else { i + 3_600 };
            assert_eq!(s.seq, i);
            assert_eq!(s.expected_ns, start + grid * S, "sample {i}");
            let latency = if i == 43_200 { 3_600 * S + 5 } else { i * 7 };
            assert_eq!(s.latency_ns, latency as i64, "sample {i}");
        }
        let last = samples.last().unwrap();
        assert_eq!(last.expected_ns, start + 86_399 * S);
        assert_eq!(samples[43_200].missed, 3_600);
    }

    /// The guard's yield (its runner had not run for a second): the due times that passed while
    /// the thread gave its CPU up are skipped and counted missed, the next one served is the
    /// first grid point after it resumed, and a periodic timer is re-aimed there. Simulated: the
    /// heartbeat never moves, and the clock read that follows the yield (the only read with no
    /// wakeup before it) is 355 ms on. The yield itself sleeps for real, 100 x 1 ms.
    #[test]
    fn the_due_times_passed_during_a_guard_yield_are_skipped_and_counted_missed() {
        /// The simulated time, and whether a wakeup came since the last clock read.
        #[derive(Default)]
        struct Sim {
            now: Cell<u64>,
            woke: Cell<bool>,
        }
        #[derive(Clone)]
        struct YieldClock(Rc<Sim>);
        impl TimeSource for YieldClock {
            fn now_ns(&self) -> u64 {
                if !self.0.woke.replace(false) {
                    self.0.now.set(self.0.now.get() + YIELD_NS);
                }
                self.0.now.get()
            }
            /// Busy all along: the guard's standstill is the thread's doing.
            fn thread_cpu_ns(&self) -> u64 {
                self.0.now.get()
            }
        }
        /// Wakes on time, every time.
        struct OnTime(Rc<Sim>, Vec<u64>);
        impl Waker for OnTime {
            fn wait(&mut self, due_ns: u64, _: u64, _: &AtomicBool) -> io::Result<()> {
                self.0.now.set(self.0.now.get().max(due_ns));
                self.0.woke.set(true);
                Ok(())
            }
            fn skipped_to(&mut self, next_due_ns: u64) -> io::Result<()> {
                self.1.push(next_due_ns);
                Ok(())
            }
        }
        const S: u64 = 1_000_000_000;
        const MS: u64 = 1_000_000;
        const YIELD_NS: u64 = 355 * MS;
        static NEVER_MOVES: AtomicU64 = AtomicU64::new(0);
        for schedule in [Schedule::Absolute, Schedule::Periodic] {
            let sim = Rc::new(Sim::default());
            // The loop's first read (the guard's start) comes before any wakeup.
            sim.now.set(10 * S - 10 * MS);
            sim.woke.set(true);
            let plan = CyclePlan {
                clock: YieldClock(Rc::clone(&sim)),
                schedule,
                interval_ns: 10 * MS,
                interval_step_ns: 0,
                first_due_ns: 10 * S,
                stop_at: StopAt::Loops(110),
                beat: Some(&NEVER_MOVES),
            };
            let mut waker = OnTime(Rc::clone(&sim), Vec::new());
            let (mut samples, counters) = (Vec::new(), ThreadCounters::default());
            let end = run_cycles(
                &mut waker,
                &plan,
                &mut samples,
                &counters,
                &AtomicBool::new(false),
            );
            assert_eq!(end, ThreadEnd::Completed, "{schedule:?}");
            // The heartbeat stood still from the start (9.99 s): the check at the wakeup due
            // at 10.99 s, 1 s on, gave the CPU up; it resumed at 11.345 s.
            assert_eq!(counters.guard_yields.load(Relaxed), 1, "{schedule:?}");
            let dues: Vec<u64> = samples.iter().map(|s| s.expected_ns).collect();
            let expected: Vec<u64> = (0..100)
                .map(|k| 10 * S + k * 10 * MS)
                .chain((0..10).map(|k| 11 * S + 350 * MS + k * 10 * MS))
                .collect();
            assert_eq!(dues, expected, "{schedule:?}");
            // 11.00 to 11.34 s: 35 due times passed during the yield, none served late.
            assert_eq!(counters.missed_periods.load(Relaxed), 35, "{schedule:?}");
            assert!(samples.iter().all(|s| s.latency_ns == 0), "{schedule:?}");
            let aimed = match schedule {
                Schedule::Periodic => vec![11 * S + 350 * MS],
                _ => vec![],
            };
            assert_eq!(waker.1, aimed, "{schedule:?}");
        }
    }
}

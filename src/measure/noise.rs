//! The noise loop (`jitterlab noise`): a thread that never sleeps reads the clock in a tight
//! loop, and every gap between two consecutive reads longer than the threshold is time the
//! system took the CPU away (an IRQ, a softirq, another task, a hypervisor stall). The gap is
//! pushed through the same ring as a wakeup [`Sample`] would be, so the recorder, the interval
//! log and the statistics need nothing new: `expected_ns` is the read before the gap (when it
//! began), `latency_ns` its length, `missed` 0 (or [`THROTTLED`]).
//!
//! Per iteration: one clock read (the CPU's counter, or CLOCK_MONOTONIC through the vDSO:
//! [`super::noise_clock`]), a subtraction and a compare, all in the clock's ticks. A gap (the
//! cold path) is converted to CLOCK_MONOTONIC ns, pushed into the wait-free ring, and added to
//! the running noise total; every [`PUBLISH_EVERY`] iterations the loop stores its iteration
//! count and span, checks the end and the stop flag, and recalibrates the counter when due. No
//! syscall, allocation, lock or I/O.

use super::cycle::SampleSink;
use super::noise_clock::{
    Calibration, CounterTicks, MonotonicTicks, NoiseClock, TickSource, calibrate,
};
use super::sample::{Sample, ThreadCounters, ThreadEnd};
use super::thread::MeasuringLoop;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// Iterations between two publications of the counters and checks of the stop flag and the
/// end time: about 20-100 us of loop at 5-25 ns an iteration, so a stop is seen at once, while
/// the loop's common iteration touches no shared cache line.
pub(crate) const PUBLISH_EVERY: u64 = 4096;

/// The `missed` mark of a gap taken for real-time throttling: the recorder keeps it out of the
/// statistics and the interval log, and the sample log has it where it happened.
pub const THROTTLED: u32 = 1;

/// What one noise thread needs to know.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NoiseLoopPlan<T> {
    /// What the loop reads.
    pub source: T,
    /// Its ticks to CLOCK_MONOTONIC ns ([`Calibration::IDENTITY`] for a source in ns).
    pub(crate) calibration: Calibration,
    /// A gap between two reads longer than this is a noise event, ns.
    pub threshold_ns: u64,
    /// A gap at least this long is real-time throttling, not noise: counted apart and not
    /// pushed (`u64::MAX`: no throttling to expect). See docs/noise.md.
    pub(crate) throttle_min_ns: u64,
    /// The loop starts at its first read at or after this CLOCK_MONOTONIC time (it spins
    /// until then).
    pub start_ns: u64,
    /// The loop ends at its first read at or after this CLOCK_MONOTONIC time (`u64::MAX`: on
    /// stop only).
    pub end_ns: u64,
}

impl NoiseLoopPlan<()> {
    /// The same plan reading `source`: one plan for every clock, the loop monomorphised per
    /// source so that its read is inlined.
    pub(crate) fn reading<T: TickSource>(self, source: T) -> NoiseLoopPlan<T> {
        NoiseLoopPlan {
            source,
            calibration: self.calibration,
            threshold_ns: self.threshold_ns,
            throttle_min_ns: self.throttle_min_ns,
            start_ns: self.start_ns,
            end_ns: self.end_ns,
        }
    }
}

/// The plan's times in the current calibration's ticks: converted once, and again after each
/// recalibration, so the loop compares ticks only.
#[derive(Debug, Clone, Copy)]
struct TickBounds {
    threshold: u64,
    end: u64,
}

impl TickBounds {
    fn of<T>(plan: &NoiseLoopPlan<T>, calibration: &Calibration) -> TickBounds {
        TickBounds {
            threshold: calibration.scale.len_ticks(plan.threshold_ns),
            end: calibration.scale.ticks_at(plan.end_ns),
        }
    }
}

/// Spins until `plan.end_ns` or `stop`, pushing every gap above the threshold into `sink`.
///
/// The counters it publishes: `iterations` (clock reads since the start, minus one),
/// `span_ns` (last read minus the first), `noise_ns` (the sum of the gaps above the threshold,
/// including those whose record was dropped), `dropped_records`, and for gaps of at least
/// `throttle_min_ns` `throttled_gaps` and `throttled_ns` instead (those are pushed marked
/// [`THROTTLED`]); the calibration's rate, recalibrations and largest correction.
pub(crate) fn run_noise<S: SampleSink, T: TickSource>(
    plan: &NoiseLoopPlan<T>,
    sink: &mut S,
    counters: &ThreadCounters,
    stop: &AtomicBool,
) -> ThreadEnd {
    let source = &plan.source;
    let mut calibration = plan.calibration;
    publish_calibration(&calibration, counters);
    let mut bounds = TickBounds::of(plan, &calibration);
    // The wait for the common start is a spin too: the thread holds its CPU as it will while
    // measuring, and the first gap is not a wakeup latency.
    let start = calibration.scale.ticks_at(plan.start_ns);
    let mut prev = source.ticks();
    while prev < start {
        if stop.load(Relaxed) {
            return ThreadEnd::Stopped;
        }
        prev = source.ticks();
    }
    let first_ns = calibration.scale.ns_at(prev);
    let (mut seq, mut iterations, mut noise, mut dropped) = (0u64, 0u64, 0u64, 0u64);
    let mut throttled = (0u64, 0u64);
    loop {
        for _ in 0..PUBLISH_EVERY {
            let now = source.ticks();
            let gap_ticks = now.wrapping_sub(prev);
            if gap_ticks > bounds.threshold {
                // Cold: a gap, in CLOCK_MONOTONIC ns from here on.
                let gap = calibration.scale.len_ns(gap_ticks);
                let is_throttling = gap >= plan.throttle_min_ns;
                if is_throttling {
                    throttled.0 += 1;
                    throttled.1 += gap;
                    counters.throttled_gaps.store(throttled.0, Relaxed);
                    counters.throttled_ns.store(throttled.1, Relaxed);
                } else {
                    noise += gap;
                    counters.noise_ns.store(noise, Relaxed);
                }
                if !sink.try_push(Sample {
                    seq,
                    expected_ns: calibration.scale.ns_at(prev),
                    latency_ns: gap.min(i64::MAX as u64) as i64,
                    missed: if is_throttling { THROTTLED } else { 0 },
                }) {
                    dropped += 1;
                    counters.dropped_records.store(dropped, Relaxed);
                }
                seq += 1;
            }
            prev = now;
        }
        iterations += PUBLISH_EVERY;
        counters.iterations.store(iterations, Relaxed);
        if calibration.maybe_recalibrate(prev, source) {
            bounds = TickBounds::of(plan, &calibration);
            publish_calibration(&calibration, counters);
        }
        counters.span_ns.store(
            calibration.scale.ns_at(prev).saturating_sub(first_ns),
            Relaxed,
        );
        if prev >= bounds.end {
            return ThreadEnd::Completed;
        }
        if stop.load(Relaxed) {
            return ThreadEnd::Stopped;
        }
    }
}

/// The calibration as run.json reports it, for the recorder to read.
fn publish_calibration(calibration: &Calibration, counters: &ThreadCounters) {
    let c = &counters.clock;
    c.ticks_per_s
        .store(calibration.scale.ticks_per_s().round() as u64, Relaxed);
    c.recalibrations.store(calibration.recalibrations, Relaxed);
    c.largest_correction_ns
        .store(calibration.largest_correction_ns, Relaxed);
}

/// A noise loop's settings (`jitterlab noise`), the same for every thread of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoiseSpec {
    /// A gap between two clock reads longer than this is a noise event, ns.
    pub threshold_ns: u64,
    /// A gap at least this long is counted as real-time throttling instead (`u64::MAX`: none
    /// expected).
    pub(crate) throttle_min_ns: u64,
    /// What the loop reads.
    pub clock: NoiseClock,
}

impl NoiseSpec {
    /// The loop one thread runs with these settings (its counter not yet calibrated).
    pub(crate) fn noise_thread(self) -> NoiseThread {
        NoiseThread {
            spec: self,
            calibration: Calibration::IDENTITY,
        }
    }
}

/// A noise thread's loop: its settings and its counter's calibration, made on its own CPU.
#[derive(Debug)]
pub(crate) struct NoiseThread {
    spec: NoiseSpec,
    calibration: Calibration,
}

impl MeasuringLoop for NoiseThread {
    /// The counter is calibrated on the thread's own CPU, under its policy, before it reports
    /// ready: the start is not delayed by it.
    fn prepare(&mut self) {
        if self.spec.clock == NoiseClock::Counter {
            self.calibration = calibrate(&CounterTicks);
        }
    }

    fn run(
        self: Box<Self>,
        start_ns: u64,
        end_ns: u64,
        producer: &mut rtrb::Producer<Sample>,
        counters: &ThreadCounters,
        stop: &AtomicBool,
    ) -> ThreadEnd {
        let plan = NoiseLoopPlan {
            source: (),
            calibration: self.calibration,
            threshold_ns: self.spec.threshold_ns,
            throttle_min_ns: self.spec.throttle_min_ns,
            start_ns,
            end_ns,
        };
        // Monomorphised per clock: the loop's read is inlined, no dispatch per iteration.
        match self.spec.clock {
            NoiseClock::Counter => run_noise(&plan.reading(CounterTicks), producer, counters, stop),
            NoiseClock::Monotonic => {
                run_noise(&plan.reading(MonotonicTicks), producer, counters, stop)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// A clock that advances by a fixed step per read, with scripted extra delays before given
    /// reads (the gaps an interruption would make).
    struct ScriptedClock {
        now: Cell<u64>,
        reads: Cell<u64>,
        step: u64,
        /// (read number, extra ns before that read)
        delays: Vec<(u64, u64)>,
    }

    impl TickSource for ScriptedClock {
        fn anchor(&self) -> Option<super::super::noise_clock::Anchor> {
            None
        }
        fn ticks(&self) -> u64 {
            let n = self.reads.get();
            self.reads.set(n + 1);
            let extra = self.delays.iter().find(|(k, _)| *k == n).map_or(0, |d| d.1);
            self.now.set(self.now.get() + self.step + extra);
            self.now.get()
        }
    }

    fn run(delays: Vec<(u64, u64)>, end_ns: u64) -> (Vec<Sample>, ThreadCounters, ThreadEnd) {
        let plan = NoiseLoopPlan {
            calibration: Calibration::IDENTITY,
            source: ScriptedClock {
                now: Cell::new(0),
                reads: Cell::new(0),
                step: 20,
                delays,
            },
            threshold_ns: 1_000,
            throttle_min_ns: 40_000,
            start_ns: 1_000,
            end_ns,
        };
        let (mut samples, counters) = (Vec::new(), ThreadCounters::default());
        let end = run_noise(&plan, &mut samples, &counters, &AtomicBool::new(false));
        (samples, counters, end)
    }

    /// Known gaps of 5 us and 6 us in a 20 ns loop are found with their start and length; the
    /// noise total is their sum, iterations and span follow the loop, a delay of exactly the
    /// threshold minus the loop's own step is not a gap, and a 50 us gap (above the throttling
    /// bound of 40 us) is counted as throttling, not noise.
    #[test]
    fn gaps_above_the_threshold_are_found_with_their_length() {
        // Reads 0..49 reach the start at 1000 ns (read 49 returns 1000).
        let (samples, counters, end) = run(
            vec![(100, 5_000), (3_000, 6_000), (5_000, 50_000), (7_000, 980)],
            1_000_000,
        );
        assert_eq!(end, ThreadEnd::Completed);
        let gaps: Vec<(u64, i64, u32)> = samples
            .iter()
            .map(|s| (s.seq, s.latency_ns, s.missed))
            .collect();
        assert_eq!(
            gaps,
            vec![(0, 5_020, 0), (1, 6_020, 0), (2, 50_020, THROTTLED)]
        );
        // The gap starts at the read before it: read 99 at 100 x 20 ns.
        assert_eq!(samples[0].expected_ns, 2_000);
        assert_eq!(counters.noise_ns.load(Relaxed), 11_040);
        assert_eq!(counters.throttled_gaps.load(Relaxed), 1);
        assert_eq!(counters.throttled_ns.load(Relaxed), 50_020);
        let iterations = counters.iterations.load(Relaxed);
        assert_eq!(iterations % PUBLISH_EVERY, 0);
        // 20 ns a read plus the delays: the span is every step after the first read.
        assert_eq!(
            counters.span_ns.load(Relaxed),
            iterations * 20 + 5_000 + 6_000 + 50_000 + 980
        );
        assert!(counters.span_ns.load(Relaxed) + 1_000 >= 1_000_000);
    }

    #[test]
    fn stops_on_the_flag_before_and_while_measuring() {
        let plan = NoiseLoopPlan {
            calibration: Calibration::IDENTITY,
            source: ScriptedClock {
                now: Cell::new(0),
                reads: Cell::new(0),
                step: 20,
                delays: Vec::new(),
            },
            threshold_ns: 1_000,
            throttle_min_ns: 40_000,
            start_ns: u64::MAX,
            end_ns: u64::MAX,
        };
        let (mut samples, counters) = (Vec::new(), ThreadCounters::default());
        let stop = AtomicBool::new(true);
        assert_eq!(
            run_noise(&plan, &mut samples, &counters, &stop),
            ThreadEnd::Stopped
        );
        let plan = NoiseLoopPlan {
            start_ns: 0,
            ..plan
        };
        assert_eq!(
            run_noise(&plan, &mut samples, &counters, &stop),
            ThreadEnd::Stopped
        );
        assert_eq!(counters.iterations.load(Relaxed), PUBLISH_EVERY);
    }

    /// A counter at 2 ticks per ns: the loop compares ticks against the threshold converted
    /// once (1 us = 2000 ticks) and writes each gap's start and length in ns.
    #[test]
    fn counter_ticks_are_converted_for_a_gap_only() {
        use super::super::noise_clock::Anchor;
        let calibration = Calibration::from_anchors(
            Anchor { ticks: 0, ns: 0 },
            Anchor {
                ticks: 2_000_000_000,
                ns: 1_000_000_000,
            },
        )
        .unwrap();
        let plan = NoiseLoopPlan {
            calibration,
            source: ScriptedClock {
                now: Cell::new(0),
                reads: Cell::new(0),
                step: 40,
                // 10 000 ticks (5 us) before read 100; 1 940 ticks (a 990 ns gap) before 3 000.
                delays: vec![(100, 10_000), (3_000, 1_940)],
            },
            threshold_ns: 1_000,
            throttle_min_ns: u64::MAX,
            start_ns: 1_000,
            end_ns: 1_000_000,
        };
        let (mut samples, counters) = (Vec::new(), ThreadCounters::default());
        run_noise(&plan, &mut samples, &counters, &AtomicBool::new(false));
        let gaps: Vec<(u64, i64)> = samples
            .iter()
            .map(|s| (s.expected_ns, s.latency_ns))
            .collect();
        // Read 99 is at 4 000 ticks: 2 us; the gap is 10 040 ticks.
        assert_eq!(gaps, vec![(2_000, 5_020)]);
        assert_eq!(counters.noise_ns.load(Relaxed), 5_020);
        assert_eq!(counters.clock.ticks_per_s.load(Relaxed), 2_000_000_000);
        let iterations = counters.iterations.load(Relaxed);
        assert_eq!(
            counters.span_ns.load(Relaxed),
            (iterations * 40 + 10_000 + 1_940) / 2
        );
    }

    /// A full ring drops the record but not the noise: the total still counts the gap.
    #[test]
    fn a_dropped_gap_still_counts_as_noise() {
        struct Full;
        impl SampleSink for Full {
            fn try_push(&mut self, _: Sample) -> bool {
                false
            }
        }
        let plan = NoiseLoopPlan {
            calibration: Calibration::IDENTITY,
            source: ScriptedClock {
                now: Cell::new(0),
                reads: Cell::new(0),
                step: 20,
                delays: vec![(10, 3_000)],
            },
            threshold_ns: 1_000,
            throttle_min_ns: 40_000,
            start_ns: 0,
            end_ns: 10_000,
        };
        let counters = ThreadCounters::default();
        run_noise(&plan, &mut Full, &counters, &AtomicBool::new(false));
        assert_eq!(counters.dropped_records.load(Relaxed), 1);
        assert_eq!(counters.noise_ns.load(Relaxed), 3_020);
    }
}

//! One measuring thread as the recorder keeps it: its statistics of the whole run and of the
//! current log interval, its deadline misses, and its queue of samples waiting for the trace.
//! Separate from the recorder because the interval bookkeeping (which interval a sample
//! belongs to, writing empty intervals so the timeline has no holes) is per thread and does
//! not depend on how the rings are drained.

use super::files::Files;
use super::run_stats::RunAndInterval;
use super::summaries::SummaryBlocks;
use super::tails::TailState;
use super::trace_join::{SampleTrace, ThreadTraceState};
use super::{LiveRow, LoopCounts, ThreadFeed, ThreadResult};
use crate::format::noise::NoiseInterval;
use crate::format::samplelog::SampleRecord;
use crate::measure::Sample;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

/// The last completed interval of a thread, for live views.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct IntervalFigures {
    #[expect(
        dead_code,
        reason = "dead since pub(crate) (issue 41 sweep): read by no code"
    )]
    pub samples: u64,
    pub min_ns: Option<i64>,
    pub mean_ns: Option<f64>,
    pub max_ns: Option<i64>,
}

/// Where recorded samples go, and the interval grid they are sorted into: interval k covers
/// due times in [start + k*len, start + (k+1)*len).
pub(super) struct Sink<'a> {
    pub files: &'a mut Files,
    pub start_ns: u64,
    pub log_interval_ns: u64,
    /// Set when an interval was closed, so the caller flushes the sample log once.
    pub(crate) closed_any: &'a mut bool,
}

pub(super) struct ThreadState {
    pub(crate) feed: ThreadFeed,
    tag: String,
    irq_tag: String,
    /// With `--trace`: the samples waiting for it, and the trace statistics.
    pub trace: Option<ThreadTraceState>,
    /// The latency of the run and of the current interval.
    latency: RunAndInterval,
    interval_index: u64,
    /// Where interval `interval_index` ends (the due time of the next one's first sample),
    /// ns; 0 until the first sample, which computes it.
    interval_end_ns: u64,
    last_interval: IntervalFigures,
    deadline_misses: u64,
    tails: TailState,
    /// When interval 0 starts (CLOCK_MONOTONIC), ns.
    start_ns: u64,
    /// A noise thread's exact noise time in the current interval (the histogram's sum is
    /// rounded), ns.
    interval_noise_ns: u64,
    /// The end of a noise thread's latest gap, ns (the last interval reaches at least there).
    last_gap_end_ns: u64,
    /// A noise thread's closed intervals, until the recorder's owner takes them for
    /// events.jsonl (one per log interval; empty for wakeup threads).
    pub noise_intervals: Vec<NoiseInterval>,
    /// With `--summary-every`: the thread's blocks of samples.
    pub summaries: Option<SummaryBlocks>,
    /// With `--on-threshold`: spike starts and recent samples.
    pub(crate) watch: Option<super::watch::SpikeWatch>,
}

/// Where interval `index` ends on the grid of `start_ns` and `log_interval_ns`: the first due
/// time of interval `index + 1` (saturating: a grid that far out has no end).
fn interval_end(start_ns: u64, log_interval_ns: u64, index: u64) -> u64 {
    index
        .saturating_add(1)
        .saturating_mul(log_interval_ns)
        .saturating_add(start_ns)
}

impl ThreadState {
    pub(super) fn new(feed: ThreadFeed, start_ns: u64) -> Self {
        ThreadState {
            tails: TailState::new(feed.tails.clone(), feed.deadline_ns, start_ns),
            tag: format!("cpu{}", feed.cpu),
            irq_tag: format!("cpu{}.irq", feed.cpu),
            trace: None,
            feed,
            latency: RunAndInterval::default(),
            interval_index: 0,
            interval_end_ns: 0,
            last_interval: IntervalFigures::default(),
            deadline_misses: 0,
            start_ns,
            interval_noise_ns: 0,
            last_gap_end_ns: 0,
            noise_intervals: Vec::new(),
            summaries: None,
            watch: None,
        }
    }

    /// Records one sample (and its trace, when traced) in the statistics and files, closing
    /// the intervals it moves past.
    pub(super) fn record(&mut self, sample: &Sample, traced: Option<&SampleTrace>, out: &mut Sink) {
        // At or past the current interval's end (one compare per sample; the division only
        // then, and after an interval closed elsewhere, which leaves the end behind).
        if sample.expected_ns >= self.interval_end_ns {
            let index = sample.expected_ns.saturating_sub(out.start_ns) / out.log_interval_ns;
            while index > self.interval_index {
                self.close_interval(out.files, out.log_interval_ns, out.log_interval_ns);
                *out.closed_any = true;
            }
            self.interval_end_ns =
                interval_end(out.start_ns, out.log_interval_ns, self.interval_index);
        }
        // A noise thread's throttled gap: in the sample log only (its thread counted it), not
        // noise, so not in the gap counts of the tails either.
        let throttled = self.feed.kind.spec().missed_marks_throttling
            && sample.missed == crate::measure::noise::THROTTLED;
        if !throttled {
            self.record_statistics(sample, traced);
            if let Some(blocks) = &mut self.summaries {
                blocks.record(sample);
            }
            self.tails.record(sample);
            if let Some(w) = &mut self.watch {
                w.record(sample, traced);
            }
        }
        let irq = traced.and_then(|x| x.irq_latency_ns);
        let record = SampleRecord {
            cpu: self.feed.cpu as u32,
            missed: sample.missed,
            seq: sample.seq,
            expected_ns: sample.expected_ns,
            latency_ns: sample.latency_ns,
            irq_latency_ns: irq,
        };
        out.files
            .write(|_, samples| samples.as_mut().map_or(Ok(()), |l| l.write(&record)));
    }

    fn record_statistics(&mut self, sample: &Sample, traced: Option<&SampleTrace>) {
        self.latency.record(sample.latency_ns);
        if self.feed.kind.spec().time_lost {
            self.interval_noise_ns += sample.latency_ns.max(0) as u64;
            self.last_gap_end_ns = self
                .last_gap_end_ns
                .max(sample.expected_ns + sample.latency_ns.max(0) as u64);
        }
        if sample.latency_ns > self.feed.deadline_ns as i64 {
            self.deadline_misses += 1;
        }
        if let (Some(tr), Some(x)) = (&mut self.trace, traced) {
            tr.record(x);
        }
    }

    /// Writes the last (possibly partial) interval, cut at `end_ns`, unless the run ended
    /// exactly where it starts with nothing in it.
    pub(super) fn close_last_interval(
        &mut self,
        files: &mut Files,
        start_ns: u64,
        log_interval_ns: u64,
        end_ns: u64,
    ) {
        // A noise loop checks for the end only every `PUBLISH_EVERY` iterations, so it reads
        // past `end_ns` (by up to about 0.1 ms) and may log gaps there: its last interval ends
        // at its last read (its first read is at `start_ns`, give or take an iteration), so
        // that every gap it logged lies in an interval.
        let end_ns = if self.feed.kind.spec().reads_past_end {
            end_ns
                .max(start_ns + self.feed.counters.span_ns.load(Relaxed))
                .max(self.last_gap_end_ns)
        } else {
            end_ns
        };
        let interval_start = start_ns + self.interval_index * log_interval_ns;
        let length = end_ns
            .saturating_sub(interval_start)
            .clamp(1, log_interval_ns);
        if self.latency.interval.count() > 0 || end_ns > interval_start {
            self.close_interval(files, log_interval_ns, length);
        }
    }

    /// Writes the thread's current interval to the log (even when empty, so the timeline has
    /// no holes) and starts the next one.
    fn close_interval(&mut self, files: &mut Files, log_interval_ns: u64, length_ns: u64) {
        let start = Duration::from_nanos(self.interval_index * log_interval_ns);
        let length = Duration::from_nanos(length_ns);
        files.write(|hlog, _| {
            hlog.write_interval(&self.tag, start, length, &self.latency.interval.histogram)?;
            // The IRQ latency of the same interval, under its own tag (a noise gap has none;
            // `session/files.rs` counts the tags by the same question).
            match &self.trace {
                Some(tr) if self.feed.kind.spec().irq_split => {
                    hlog.write_interval(&self.irq_tag, start, length, &tr.irq.interval.histogram)
                }
                _ => Ok(()),
            }
        });
        if let Some(tr) = &mut self.trace {
            tr.irq.close_interval();
        }
        if self.feed.kind.spec().time_lost {
            let offset_ns = self.interval_index * log_interval_ns;
            self.noise_intervals.push(NoiseInterval {
                time_ns: self.start_ns + offset_ns + length_ns,
                cpu: self.feed.cpu,
                offset_ns,
                length_ns,
                gaps: self.latency.interval.count(),
                noise_ns: self.interval_noise_ns,
            });
            self.interval_noise_ns = 0;
        }
        self.last_interval = IntervalFigures {
            samples: self.latency.interval.count(),
            min_ns: self.latency.interval.min_ns(),
            mean_ns: self.latency.interval.mean_ns(),
            max_ns: self.latency.interval.max_ns(),
        };
        self.latency.close_interval();
        self.interval_index += 1;
    }

    /// The thread as the live view shows it.
    /// The latency histogram since the start.
    pub(super) fn cumulative_histogram(&self) -> &hdrhistogram::Histogram<u64> {
        &self.latency.run().histogram
    }

    /// The timer IRQ latency since the start, with `--trace`.
    pub(super) fn irq_histogram(&self) -> Option<&hdrhistogram::Histogram<u64>> {
        self.trace.as_ref().map(|t| t.irq_histogram())
    }

    pub(super) fn live_row(&self) -> LiveRow {
        LiveRow {
            cpu: self.feed.cpu,
            last_interval: self.last_interval,
            // The exact figures: the run's histogram is not needed (nor merged) for them.
            samples: self.latency.exact().count(),
            max_ns: self.latency.exact().max_ns(),
            missed_periods: self.feed.counters.missed_periods.load(Relaxed),
            deadline_misses: self.deadline_misses,
            dropped_records: self.feed.counters.dropped_records.load(Relaxed),
            interval_ns: self.feed.tails.interval_ns,
            run_length: self.tails.run_length_exceedances(),
        }
    }

    /// The thread's figures at the end of the run.
    pub(super) fn result(&self) -> ThreadResult {
        let run = self.latency.run();
        ThreadResult {
            cpu: self.feed.cpu,
            index: self.feed.index,
            latency: run.summary(),
            // From the thread itself: includes periods missed by records that were dropped.
            missed_periods: self.feed.counters.missed_periods.load(Relaxed),
            dropped_records: self.feed.counters.dropped_records.load(Relaxed),
            deadline_misses: self.deadline_misses,
            early_wakeups: run.early,
            trace: self.trace.as_ref().map(ThreadTraceState::result),
            tails: self.tails.result(
                &run.histogram,
                Some(self.feed.counters.span_ns.load(Relaxed)),
            ),
            loop_counts: {
                let c = &self.feed.counters;
                LoopCounts {
                    iterations: c.iterations.load(Relaxed),
                    span_ns: c.span_ns.load(Relaxed),
                    noise_ns: c.noise_ns.load(Relaxed),
                    throttled_gaps: c.throttled_gaps.load(Relaxed),
                    throttled_ns: c.throttled_ns.load(Relaxed),
                    inversions: c.inversions.load(Relaxed),
                    worst_inversion_ns: c.worst_inversion_ns.load(Relaxed),
                    calibration: (
                        c.clock.ticks_per_s.load(Relaxed),
                        c.clock.recalibrations.load(Relaxed),
                        c.clock.largest_correction_ns.load(Relaxed),
                    ),
                }
            },
        }
    }
}

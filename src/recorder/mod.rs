//! The drain side (a non-real-time thread): empties the measuring threads' rings, keeps the
//! histograms of the whole run and of the current interval per thread, writes latency.hlog as
//! each interval completes and the sample log when asked, and counts deadline misses.
//!
//! With `--trace` ([`Recorder::with_trace`]) each sample also gets its timer IRQ latency from
//! the kernel trace. The trace arrives later than the samples (it is read asynchronously), so
//! samples wait in a bounded per-thread queue until the trace of their CPU is complete past
//! their wakeup, then are joined and recorded in order; a sample whose trace does not come
//! within [`TRACE_WAIT_NS`] is recorded without IRQ latency and counted. Without `--trace`
//! samples are recorded as they are drained, as before.
//!
//! This file drains the rings and decides when a traced sample may be recorded; what
//! recording a sample means for its thread (statistics, log intervals, deadline misses) is in
//! `thread_state.rs`, and the rule that the first write error stops every file in `files.rs`.

pub(crate) mod counters;
mod files;
pub mod live;
mod pace;
mod run_stats;
pub mod scale;
pub mod segments;
mod summaries;
pub mod tails;
mod thread_state;
mod trace_join;
mod watch;
#[cfg(test)]
pub(crate) use watch::{EXPLANATIONS_KEPT, SplitParts};
pub(crate) use watch::{SnapshotWindow, SpikeStart};

pub(crate) use thread_state::IntervalFigures;
pub(crate) use trace_join::TraceJoin;
#[cfg(test)]
pub(crate) use trace_join::WORST_KEPT;
pub(crate) use trace_join::{CpuTraceWindow, SampleTrace, TRACE_WAIT_NS, ThreadTraceResult};
use trace_join::{ThreadTraceState, keep_worst};

use crate::format::events::SpikeExplanation;
use crate::format::hlog::HlogWriter;
use crate::format::noise::NoiseInterval;
use crate::format::samplelog::SampleLogWriter;
use crate::format::stats::LatencySummary;
use crate::format::wakeup_summary::WakeupSummary;
use crate::measure::clock::monotonic_ns;
use crate::measure::{Sample, ThreadCounters};
use files::Files;
pub(crate) use pace::{DrainPace, MAX_DRAIN_WAIT, TURN};
use std::io;
use std::sync::Arc;
use thread_state::{Sink, ThreadState};

/// What the recorder needs to know about one measuring thread.
pub(crate) struct ThreadFeed {
    pub cpu: usize,
    pub index: usize,
    pub deadline_ns: u64,
    pub counters: Arc<ThreadCounters>,
    pub(crate) consumer: rtrb::Consumer<Sample>,
    /// What to count for the tail figures (docs/tails.md).
    pub tails: crate::plan::TailPlan,
    /// Wakeups or noise gaps (a noise thread's throttled gaps stay out of the statistics).
    pub kind: crate::format::run_record::RunKind,
}

/// A thread's figures at the end of the run.
#[derive(Debug, Clone)]
pub(crate) struct ThreadResult {
    pub cpu: usize,
    pub index: usize,
    pub latency: LatencySummary,
    pub missed_periods: u64,
    pub dropped_records: u64,
    pub(crate) deadline_misses: u64,
    pub(crate) early_wakeups: u64,
    /// The trace side, with `--trace`.
    pub trace: Option<ThreadTraceResult>,
    /// Shares within thresholds, spikes, firm windows, the extrapolated worst case.
    pub tails: crate::format::tails::ThreadTails,
    /// What the thread counted itself (noise, inversions; 0 where it counts none).
    pub(crate) loop_counts: LoopCounts,
}

/// A thread's own counters at its end: a noise thread's (see [`crate::measure::noise`]), and
/// the inversions of `--wake pi-mutex` ([`crate::measure::wake::inversion`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct LoopCounts {
    pub(crate) iterations: u64,
    pub(crate) span_ns: u64,
    pub noise_ns: u64,
    pub(crate) throttled_gaps: u64,
    pub(crate) throttled_ns: u64,
    pub inversions: u64,
    pub(crate) worst_inversion_ns: u64,
    /// Noise loop: its clock's calibration (ticks per second, recalibrations, the largest
    /// correction in ns), as [`crate::measure::CalibrationCounters`].
    pub(crate) calibration: (u64, u64, u64),
}

/// A thread's state as the live view shows it.
#[derive(Debug, Clone)]
pub struct LiveRow {
    pub cpu: usize,
    pub(crate) last_interval: IntervalFigures,
    pub samples: u64,
    pub max_ns: Option<i64>,
    pub missed_periods: u64,
    pub(crate) deadline_misses: u64,
    pub dropped_records: u64,
    /// The thread's period.
    pub interval_ns: u64,
    /// For the "how long to run" line: the limit it answers for (the smallest `max<` budget
    /// limit, else the deadline), the wakeups over it so far, and all wakeups so far.
    pub(crate) run_length: Option<(u64, u64, u64)>,
}

/// Drains rings into histograms and files.
pub(crate) struct Recorder {
    threads: Vec<ThreadState>,
    files: Files,
    start_ns: u64,
    log_interval_ns: u64,
    trace: Option<Box<dyn TraceJoin>>,
    /// The explanations made (to take, the worst, how many).
    explained: Explained,
    /// A queue longer than this is joined without waiting (bounded memory).
    pending_cap: usize,
    /// Set once the last intervals are written ([`Recorder::close_intervals`]).
    closed: bool,
    /// When to drain next, from how fast the rings fill.
    pace: DrainPace,
    /// A scenario's phases of `wakeups = N`: thread 0's samples counted as they are taken.
    wakeup_counter: Option<crate::load::scenario_count::WakeupCounter>,
}

impl Recorder {
    /// `start_ns` is when the first wakeups are due; interval k covers due times in
    /// [start + k*len, start + (k+1)*len).
    pub(crate) fn new(
        feeds: Vec<ThreadFeed>,
        hlog: HlogWriter,
        samples: Option<SampleLogWriter>,
        start_ns: u64,
        log_interval_ns: u64,
    ) -> Self {
        Recorder {
            threads: feeds
                .into_iter()
                .map(|f| ThreadState::new(f, start_ns))
                .collect(),
            files: Files::new(hlog, samples),
            start_ns,
            log_interval_ns,
            trace: None,
            explained: Explained::default(),
            pending_cap: 0,
            closed: false,
            pace: DrainPace::new(),
            wakeup_counter: None,
        }
    }

    /// Counts thread 0's samples for a scenario's phases of `wakeups = N`, as they are taken
    /// from its ring (in due-time order), by due time from the run's first.
    pub(crate) fn with_wakeup_count(
        mut self,
        count: std::sync::Arc<crate::load::scenario_count::WakeupCount>,
    ) -> Self {
        self.wakeup_counter = Some(crate::load::scenario_count::WakeupCounter::new(count));
        self
    }

    /// Joins every sample with the kernel trace (`run --trace`). Samples of a thread wait in a
    /// queue of at most `pending_cap` for their trace.
    pub(crate) fn with_trace(mut self, join: Box<dyn TraceJoin>, pending_cap: usize) -> Self {
        for t in &mut self.threads {
            // Time lost is joined by attributing what ran during it, a wakeup by its timer.
            t.trace = Some(ThreadTraceState::new(t.feed.kind.spec().time_lost));
        }
        self.trace = Some(join);
        self.pending_cap = pending_cap.max(16);
        self
    }

    /// Summarises every block of `every` consecutive recorded samples of each thread
    /// (`--summary-every`; [`Recorder::take_wakeup_summaries`]).
    pub(crate) fn with_summaries(mut self, every: u64) -> Self {
        for t in &mut self.threads {
            t.summaries = Some(summaries::SummaryBlocks::new(t.feed.cpu, every));
        }
        self
    }

    /// Watches every thread for spike starts (`--on-threshold`), keeping `history_ns` of each
    /// thread's samples for snapshots ([`Recorder::take_spike_starts`],
    /// [`Recorder::snapshot_window`]), and with `--trace` (given before) the measured CPUs'
    /// trace events.
    pub(crate) fn with_spike_watch(mut self, history_ns: u64) -> Self {
        for t in &mut self.threads {
            t.watch = Some(watch::SpikeWatch::new(
                t.feed.cpu,
                t.feed.deadline_ns,
                history_ns,
            ));
        }
        if let Some(j) = &mut self.trace
            && history_ns > 0
        {
            // The trace is received ahead of the samples recorded (samples wait for it, up to
            // TRACE_WAIT_NS): its events are kept that much longer than the samples.
            j.keep_recent(history_ns + TRACE_WAIT_NS);
        }
        self
    }

    /// The spikes started since the last call, in due-time order, and how many more started
    /// than were kept (a storm between two drains).
    pub(crate) fn take_spike_starts(&mut self) -> (Vec<SpikeStart>, u64) {
        let mut starts = Vec::new();
        let mut overflowed = 0;
        for w in self.threads.iter_mut().filter_map(|t| t.watch.as_mut()) {
            starts.append(&mut w.starts);
            overflowed += std::mem::take(&mut w.overflowed);
        }
        starts.sort_by_key(|s| s.due_ns);
        (starts, overflowed)
    }

    /// The due time every watched thread has been recorded up to, ns: a snapshot window
    /// ending before it is complete.
    pub(crate) fn recorded_through_ns(&self) -> u64 {
        self.threads
            .iter()
            .filter_map(|t| t.watch.as_ref())
            .map(|w| w.last_due_ns)
            .min()
            .unwrap_or(0)
    }

    /// What is kept of the window [from_ns, to_ns] (due times, and trace times: the same
    /// clock): every watched thread's samples, and with `--trace` their explanations and the
    /// measured CPUs' trace events.
    pub(crate) fn snapshot_window(&self, from_ns: u64, to_ns: u64) -> SnapshotWindow {
        let watches = || {
            self.threads
                .iter()
                .filter_map(|t| t.watch.as_ref().map(|w| (t.feed.cpu, w)))
        };
        let mut window = SnapshotWindow {
            samples: watches()
                .flat_map(|(cpu, w)| w.window(from_ns, to_ns).map(move |(s, x)| (cpu, s, x)))
                .collect(),
            traced: self.trace.is_some(),
            ..SnapshotWindow::default()
        };
        for (_, w) in watches() {
            let (mut kept, dropped) = w.explanations(from_ns, to_ns);
            window.explanations.append(&mut kept);
            window.explanations_not_kept_through_ns =
                window.explanations_not_kept_through_ns.max(dropped);
        }
        window.explanations.sort_by_key(|x| (x.due_ns, x.cpu));
        if let Some(j) = &self.trace {
            window.trace = j.recent_window(from_ns, to_ns);
        }
        window
    }

    /// The blocks of samples closed since the last call (`--summary-every`), per thread in the
    /// order they closed, for events.jsonl. Taken like [`Recorder::take_noise_intervals`]: after
    /// every drain and after [`Recorder::close_intervals`], which closes each thread's last,
    /// shorter block.
    pub(crate) fn take_wakeup_summaries(&mut self) -> Vec<WakeupSummary> {
        self.threads
            .iter_mut()
            .filter_map(|t| t.summaries.as_mut())
            .flat_map(|b| b.take())
            .collect()
    }

    /// The explanations made since the last call, for events.jsonl.
    pub(crate) fn take_explanations(&mut self) -> Vec<SpikeExplanation> {
        std::mem::take(&mut self.explained.new)
    }

    /// The worst explanations of the run (at most [`WORST_KEPT`], worst first) and how many
    /// were made in all.
    pub(crate) fn worst_explanations(&self) -> (&[SpikeExplanation], u64) {
        (&self.explained.worst, self.explained.count)
    }

    /// Takes every sample waiting in the rings. Completed intervals go to latency.hlog at once;
    /// the sample log is flushed whenever an interval completes. Returns the samples taken, or
    /// the write error that stopped the files in this drain (the samples are still counted).
    pub(crate) fn drain(&mut self) -> io::Result<usize> {
        let taken = self.drain_until(false);
        self.files.new_error().map_or(Ok(taken), Err)
    }

    /// The last drain, once the trace (if any) has been read to its end: samples still waiting
    /// for their trace are recorded without it. [`Recorder::finish`] does it too; calling it
    /// first lets the caller take the last explanations.
    pub(crate) fn drain_last(&mut self) -> io::Result<usize> {
        let taken = self.drain_until(true);
        self.files.new_error().map_or(Ok(taken), Err)
    }

    /// [`Recorder::drain`]; with `last`, samples still waiting for their trace are recorded
    /// without it (the trace has been read to its end).
    ///
    /// The rings are emptied turn by turn, at most [`TURN`] samples from each per turn, and
    /// each only of what it held when the drain began: one full ring (a hundred CPUs' worth of
    /// joins behind it) is never emptied to its end while the others fill, and a drain ends
    /// even when producers outpace it.
    fn drain_until(&mut self, last: bool) -> usize {
        let now = monotonic_ns();
        self.pace.observe(
            now,
            self.threads.iter().map(|t| {
                let c = &t.feed.consumer;
                (c.slots(), c.buffer().capacity())
            }),
        );
        let mut left: Vec<usize> = self
            .threads
            .iter()
            .map(|t| t.feed.consumer.slots())
            .collect();
        let mut taken = 0;
        let mut closed_any = false;
        if let Some(j) = &mut self.trace {
            j.receive();
        }
        loop {
            let mut this_turn = 0;
            for (index, t) in self.threads.iter_mut().enumerate() {
                let mut out = Sink {
                    files: &mut self.files,
                    start_ns: self.start_ns,
                    log_interval_ns: self.log_interval_ns,
                    closed_any: &mut closed_any,
                };
                let turn = left[index].min(TURN);
                left[index] -= turn;
                this_turn += turn;
                // The trace of this thread's CPU is complete up to here: it changes only in
                // `receive`, above.
                let complete = self
                    .trace
                    .as_ref()
                    .map_or(0, |j| j.complete_until_ns(t.feed.cpu));
                for _ in 0..turn {
                    let Ok(sample) = t.feed.consumer.pop() else {
                        break;
                    };
                    if index == 0
                        && let Some(c) = &mut self.wakeup_counter
                    {
                        c.see(sample.expected_ns.saturating_sub(self.start_ns));
                    }
                    let waiting = t.trace.as_ref().map(|tr| !tr.pending.is_empty());
                    match (&mut self.trace, waiting) {
                        (_, None) => t.record(&sample, None, &mut out),
                        // Nothing waits before it and its trace is complete: joined and
                        // recorded now, as `join_pending` would at the end of the turn (in
                        // the same order), without the queue.
                        (Some(join), Some(false)) if wake_ns(&sample) < complete => {
                            let joined = join.join(index, &sample);
                            t.record(&sample, Some(&joined), &mut out);
                            if let Some(x) = joined.explanation {
                                self.explained.keep(x);
                            }
                        }
                        (_, Some(_)) => {
                            if let Some(tr) = &mut t.trace {
                                tr.pending.push_back(sample);
                            }
                        }
                    }
                }
                if let Some(join) = &mut self.trace {
                    join_pending(
                        t,
                        index,
                        join.as_mut(),
                        (now, complete),
                        last,
                        self.pending_cap,
                        &mut out,
                        &mut self.explained,
                    );
                }
            }
            taken += this_turn;
            if this_turn == 0 {
                break;
            }
        }
        if closed_any {
            self.files.flush_samples();
        }
        taken
    }

    /// How long the caller may wait before the next drain: [`DrainPace::next_wait`].
    pub(crate) fn next_drain_in(&self) -> std::time::Duration {
        self.pace.next_wait()
    }

    /// The noise intervals closed since the last call (`jitterlab noise`), in the order they
    /// closed per CPU, for events.jsonl. The caller takes them after every drain and after
    /// [`Recorder::close_intervals`]; they wait here until then (one per CPU per log interval).
    pub(crate) fn take_noise_intervals(&mut self) -> Vec<NoiseInterval> {
        self.threads
            .iter_mut()
            .flat_map(|t| std::mem::take(&mut t.noise_intervals))
            .collect()
    }

    /// Drains what is left and writes each thread's last (possibly partial) interval ending
    /// at `end_ns`, and closes its last block of samples (`--summary-every`), so that the last
    /// noise intervals and summaries can be taken before
    /// [`Recorder::finish`] (which does it itself when not done). Once only.
    pub(crate) fn close_intervals(&mut self, end_ns: u64) {
        if self.closed {
            return;
        }
        self.closed = true;
        self.drain_until(true);
        for t in &mut self.threads {
            t.close_last_interval(&mut self.files, self.start_ns, self.log_interval_ns, end_ns);
            if let Some(blocks) = &mut t.summaries {
                blocks.close();
            }
        }
    }

    /// The live view's figures.
    pub(crate) fn live_rows(&self) -> Vec<LiveRow> {
        self.threads.iter().map(ThreadState::live_row).collect()
    }

    /// Each thread's figures so far, as [`Recorder::finish`] would return them now without the
    /// last partial interval: what a continuous run writes into run.json at each segment, so
    /// that a run killed later still says what it measured up to then.
    pub(crate) fn results_so_far(&self) -> Vec<ThreadResult> {
        self.threads.iter().map(ThreadState::result).collect()
    }

    /// Each thread's latency histogram since the start, with its CPU, in plan order: borrowed,
    /// so that a caller reading them after every drain (a monitor) copies only what it needs.
    pub(crate) fn cumulative_histograms(
        &self,
    ) -> impl Iterator<Item = (usize, &hdrhistogram::Histogram<u64>)> {
        self.threads
            .iter()
            .map(|t| (t.feed.cpu, t.cumulative_histogram()))
    }

    /// Each thread's timer IRQ latency histogram since the start (`--trace`; None without),
    /// in plan order, borrowed like [`Recorder::cumulative_histograms`].
    pub(crate) fn cumulative_irq_histograms(
        &self,
    ) -> impl Iterator<Item = Option<&hdrhistogram::Histogram<u64>>> {
        self.threads.iter().map(ThreadState::irq_histogram)
    }

    /// Drains what is left, writes each thread's last (possibly partial) interval ending at
    /// `end_ns`, flushes the files and returns the per-thread figures, with the write error
    /// not yet returned by a drain, if any (the figures are complete even then).
    pub(crate) fn finish(mut self, end_ns: u64) -> (Vec<ThreadResult>, Option<io::Error>) {
        self.close_intervals(end_ns);
        self.files.flush_samples();
        let error = self.files.new_error();
        (
            self.threads.iter().map(ThreadState::result).collect(),
            error,
        )
    }
}

/// When a sample's wakeup happened (its due time plus its latency), ns: the trace must be
/// complete past it before the sample is joined.
fn wake_ns(s: &Sample) -> u64 {
    (s.expected_ns as i64 + s.latency_ns).max(0) as u64
}

/// The explanations the recorder made: the ones not yet taken, the worst of the run, and how
/// many in all.
#[derive(Default)]
struct Explained {
    /// Not yet taken by [`Recorder::take_explanations`].
    new: Vec<SpikeExplanation>,
    /// The worst of the run, by latency, worst first.
    worst: Vec<SpikeExplanation>,
    count: u64,
}

impl Explained {
    fn keep(&mut self, x: SpikeExplanation) {
        self.count += 1;
        keep_worst(&mut self.worst, &x);
        self.new.push(x);
    }
}

/// Records the samples of thread `t` (number `index`) waiting in its queue whose trace is
/// complete (the trace of its CPU is received up to `complete`, at `now`: `(now, complete)`),
/// and those that can wait no longer (`last`, waited [`TRACE_WAIT_NS`], or more than
/// `pending_cap` waiting) without it; keeps the explanations made in `explained`.
#[expect(
    clippy::too_many_arguments,
    reason = "the drain's state, borrowed field by field beside the thread it iterates"
)]
fn join_pending(
    t: &mut ThreadState,
    index: usize,
    join: &mut dyn TraceJoin,
    (now, complete): (u64, u64),
    last: bool,
    pending_cap: usize,
    out: &mut Sink,
    explained: &mut Explained,
) {
    while let Some(tr) = &mut t.trace
        && let Some(&sample) = tr.pending.front()
    {
        let wake = wake_ns(&sample);
        let joined = if wake < complete {
            Some(join.join(index, &sample))
        } else if last || now.saturating_sub(wake) > TRACE_WAIT_NS || tr.pending.len() > pending_cap
        {
            tr.timed_out += 1;
            None
        } else {
            break;
        };
        tr.pending.pop_front();
        t.record(&sample, joined.as_ref(), out);
        if let Some(x) = joined.and_then(|j| j.explanation) {
            explained.keep(x);
        }
    }
}

#[cfg(test)]
mod tests;

//! The trace side of the recorder (`run --trace`): what the kernel trace adds to each sample,
//! the per-thread trace statistics, and the worst explanations kept for the summary.

use super::run_stats::RunAndInterval;
use crate::format::events::{Contributor, SpikeExplanation};
use crate::format::run_record::NoiseCause;
use crate::format::stats::{LatencyStats, LatencySummary};
use crate::measure::Sample;
use std::collections::{HashMap, VecDeque};

/// How long a sample waits for its CPU's trace before it is recorded without IRQ latency.
pub(crate) const TRACE_WAIT_NS: u64 = 2_000_000_000;
/// How many explanations the run keeps for the summary (the worst by latency).
pub(crate) const WORST_KEPT: usize = 5;

/// What the trace adds to one sample.
#[derive(Debug, Clone, Default)]
pub(crate) struct SampleTrace {
    /// Timer IRQ latency, thread latency and its two parts (see trace::split), ns.
    pub irq_latency_ns: Option<i64>,
    pub thread_latency_ns: Option<i64>,
    pub(crate) wake_to_switch_ns: Option<i64>,
    pub(crate) switch_to_user_ns: Option<i64>,
    /// For samples above the explanation threshold.
    pub explanation: Option<SpikeExplanation>,
    /// A noise gap above the explanation threshold: its whole length by cause (sums to the
    /// gap; see `trace::explain::gap`).
    pub(crate) gap_attribution: Option<Vec<Contributor>>,
}

/// The trace as the recorder sees it (implemented by `trace::Joiner`).
pub(crate) trait TraceJoin {
    /// Takes in whatever the trace reader has delivered.
    fn receive(&mut self);
    /// Every trace event of `cpu` before this CLOCK_MONOTONIC time has been received.
    fn complete_until_ns(&self, cpu: usize) -> u64;
    /// Joins a sample of the thread at `thread_index` (whose wakeup lies before
    /// `complete_until_ns` of its CPU) with the trace. Called in sample order per thread.
    fn join(&mut self, thread_index: usize, sample: &Sample) -> SampleTrace;
    /// Keeps the events received of the measured CPUs for `keep_ns` behind each CPU's newest
    /// (for `--on-threshold snapshot`; nothing is kept unless asked).
    fn keep_recent(&mut self, _keep_ns: u64) {}
    /// The kept events of the measured CPUs in [from_ns, to_ns], one text line each (empty
    /// when nothing is kept).
    fn recent_window(&self, _from_ns: u64, _to_ns: u64) -> Vec<CpuTraceWindow> {
        Vec::new()
    }
}

/// One CPU's trace events in a snapshot's window (`snapshots/spike-NNNN.trace`): what the
/// trace back end delivered, and what of the window is missing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CpuTraceWindow {
    pub cpu: usize,
    /// The events, one line each in the trace file's format (docs/result-format.md), in time
    /// order.
    pub lines: Vec<String>,
    /// Events of this CPU at or before this time were no longer kept (the ring's bounds),
    /// when that reaches into the window, ns.
    pub(crate) not_kept_through_ns: Option<u64>,
    /// `lost` events in the window (the kernel or the back end dropped events there) and the
    /// events they say were lost, where they say (`unknown_counts` marks that did not).
    pub(crate) lost_marks: u64,
    pub(crate) lost_events: u64,
    pub(crate) unknown_counts: u64,
    /// Every event of this CPU before this time had arrived when the window was taken, ns.
    pub(crate) complete_until_ns: u64,
}

/// A thread's trace figures at the end of the run.
#[derive(Debug, Clone, Default)]
pub(crate) struct ThreadTraceResult {
    pub irq_latency: LatencySummary,
    pub thread_latency: LatencySummary,
    pub wake_to_switch: LatencySummary,
    pub switch_to_user: LatencySummary,
    /// Samples that got their IRQ latency from the trace.
    pub joined: u64,
    /// Samples whose trace was complete but had no timer chain for them.
    pub(crate) unmatched: u64,
    /// Samples recorded without waiting for their trace (it came too late).
    pub(crate) timed_out: u64,
    /// A noise thread's explained gaps by cause, most time first (empty for wakeup threads).
    pub noise_causes: Vec<NoiseCause>,
}

/// Per-thread trace state of the recorder.
#[derive(Default)]
pub(super) struct ThreadTraceState {
    pub(super) pending: VecDeque<Sample>,
    /// The timer IRQ latency of the run and of the current interval.
    pub(super) irq: RunAndInterval,
    thread_latency: LatencyStats,
    wake_to_switch: LatencyStats,
    switch_to_user: LatencyStats,
    joined: u64,
    unmatched: u64,
    pub(super) timed_out: u64,
    /// A noise thread: samples are gaps, joined by attribution, not by a timer.
    pub(super) gaps: bool,
    noise_causes: NoiseCauses,
}

impl ThreadTraceState {
    /// The state of a wakeup thread, or with `gaps` of a noise thread.
    pub(super) fn new(gaps: bool) -> Self {
        ThreadTraceState {
            gaps,
            ..Default::default()
        }
    }

    /// Adds one joined sample's trace figures.
    pub(super) fn record(&mut self, x: &SampleTrace) {
        if self.gaps {
            // A gap below the explanation threshold is not attributed, and not missing
            // anything either.
            if let Some(a) = &x.gap_attribution {
                self.joined += 1;
                self.noise_causes.add(a);
            }
            return;
        }
        match x.irq_latency_ns {
            Some(irq) => {
                self.joined += 1;
                self.irq.record(irq);
            }
            None => self.unmatched += 1,
        }
        let parts = [
            (&mut self.thread_latency, x.thread_latency_ns),
            (&mut self.wake_to_switch, x.wake_to_switch_ns),
            (&mut self.switch_to_user, x.switch_to_user_ns),
        ];
        for (stats, v) in parts {
            if let Some(v) = v {
                stats.record(v);
            }
        }
    }

    /// The timer IRQ latency since the start (a monitor's cumulative histogram).
    pub(super) fn irq_histogram(&self) -> &hdrhistogram::Histogram<u64> {
        &self.irq.run().histogram
    }

    /// The thread's trace figures at the end of the run.
    pub(super) fn result(&self) -> ThreadTraceResult {
        ThreadTraceResult {
            irq_latency: self.irq.run().summary(),
            thread_latency: self.thread_latency.summary(),
            wake_to_switch: self.wake_to_switch.summary(),
            switch_to_user: self.switch_to_user.summary(),
            joined: self.joined,
            unmatched: self.unmatched,
            timed_out: self.timed_out,
            noise_causes: self.noise_causes.result(),
        }
    }
}

/// A noise thread's gaps summed by cause: a cause is its kind, name and pid (a task's policy
/// and priority as first seen).
#[derive(Default)]
struct NoiseCauses {
    by_cause: HashMap<(String, String, Option<i32>), NoiseCause>,
}

impl NoiseCauses {
    /// Adds one gap's attribution.
    fn add(&mut self, attribution: &[Contributor]) {
        for c in attribution {
            let cause = self
                .by_cause
                .entry((c.kind.clone(), c.name.clone(), c.pid))
                .or_insert_with(|| NoiseCause {
                    kind: c.kind.clone(),
                    name: c.name.clone(),
                    pid: c.pid,
                    policy: c.policy.clone(),
                    prio: c.prio,
                    time_ns: 0,
                    count: 0,
                    max_ns: 0,
                });
            cause.time_ns += c.duration_ns;
            cause.count += 1;
            cause.max_ns = cause.max_ns.max(c.duration_ns);
        }
    }

    /// The causes, most time first (ties by name).
    fn result(&self) -> Vec<NoiseCause> {
        let mut v: Vec<NoiseCause> = self.by_cause.values().cloned().collect();
        v.sort_by(|a, b| b.time_ns.cmp(&a.time_ns).then(a.name.cmp(&b.name)));
        v
    }
}

/// Keeps `worst` the [`WORST_KEPT`] explanations of highest latency, worst first.
pub(super) fn keep_worst(worst: &mut Vec<SpikeExplanation>, x: &SpikeExplanation) {
    let at = worst.partition_point(|w| w.latency_ns >= x.latency_ns);
    if at < WORST_KEPT {
        worst.insert(at, x.clone());
        worst.truncate(WORST_KEPT);
    }
}

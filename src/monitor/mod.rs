//! Continuous mode (`jitterlab monitor`): a run without end whose figures are served as
//! Prometheus metrics.
//!
//! The run itself is a [`crate::session::Session`]; the command (`commands/monitor.rs`) polls it.
//! Here: [`LiveMetrics`] turns the session's per-CPU state into the exposition of
//! `report::openmetrics` (the one place of the metric families, shared with `export --format
//! openmetrics`), with the windowed figures from `window.rs`; the endpoint is `http.rs`.
//!
//! Cost and freshness: the exposition is rendered only when a scrape asks for it (`http.rs`),
//! from the state after the last drain (at most 100 ms old); the windows slide once per
//! [`UPDATE_EVERY_NS`]. Both take in what the recorder's cumulative histograms gained since the
//! last look (`cumulative.rs`: one walk of each), so the cumulative buckets are never rebuilt
//! from a whole histogram. All of it on the recorder's thread, never on a measuring thread.

pub(crate) mod cumulative;
pub(crate) mod http;
pub(crate) mod window;

use crate::analysis::budget::Budget;
use crate::format::run_record::ThreadSummary;
use crate::format::stats::LatencySummary;
use crate::plan::RunPlan;
use crate::report::openmetrics::{CpuFigures, Exposition, Identity};
use crate::session::CpuState;
use cumulative::Cumulative;
use window::{Counters, CpuWindow, WindowFigures};

/// How often the windows slide (and the shortest `--window`).
pub(crate) const UPDATE_EVERY_NS: u64 = 1_000_000_000;
/// The most slots a window is kept in: longer windows get longer slots, so that memory stays
/// bounded whatever the window (a 5 m window slides by 1 s, a 1 h window by 6 s).
pub(crate) const MAX_SLOTS: u64 = 600;
/// The longest `--window`.
pub(crate) const MAX_WINDOW_NS: u64 = 7 * 86_400_000_000_000;

/// The slot length of a window: [`UPDATE_EVERY_NS`], or longer to keep [`MAX_SLOTS`].
pub(crate) fn slot_ns(window_ns: u64) -> u64 {
    window_ns
        .div_ceil(MAX_SLOTS)
        .next_multiple_of(UPDATE_EVERY_NS)
        .max(UPDATE_EVERY_NS)
}

/// The metrics of a monitor: per CPU its window, and what every exposition repeats.
pub(crate) struct LiveMetrics {
    identity: Identity,
    budget: Option<Budget>,
    /// Per measured CPU in plan order.
    cpus: Vec<CpuMetrics>,
    /// When the windows slide next, ns since the start.
    next_slide_ns: u64,
    /// The budget's verdict on the windows as of their last slide: (clause, holds).
    budget_verdict: Vec<(String, bool)>,
}

/// One CPU's part of [`LiveMetrics`].
struct CpuMetrics {
    cpu: usize,
    interval_ns: u64,
    deadline_ns: u64,
    window: CpuWindow,
    latency: Cumulative,
    /// With `--trace`: the timer IRQ latency.
    irq: Option<Cumulative>,
    /// The window's figures as of its last slide.
    windowed: WindowFigures,
    /// The counters as of the last take-in.
    samples: u64,
    counters: Counters,
    late_wakeups: Vec<(&'static str, u64)>,
    /// The context counters as of the last [`LiveMetrics::take_counters`].
    context: Vec<(String, bool, i64)>,
}

impl LiveMetrics {
    pub(crate) fn new(plan: &RunPlan, window_ns: u64, identity: Identity) -> Self {
        let slot = slot_ns(window_ns);
        LiveMetrics {
            identity,
            budget: plan.budget.clone(),
            cpus: plan
                .cpus
                .iter()
                .enumerate()
                .map(|(i, &cpu)| CpuMetrics {
                    cpu,
                    interval_ns: plan.thread_interval_ns(i),
                    deadline_ns: plan.thread_deadline_ns(i),
                    window: CpuWindow::new(window_ns, slot),
                    latency: Cumulative::default(),
                    irq: None,
                    windowed: WindowFigures::default(),
                    samples: 0,
                    counters: Counters::default(),
                    late_wakeups: Vec::new(),
                    context: Vec::new(),
                })
                .collect(),
            next_slide_ns: 0,
            budget_verdict: Vec::new(),
        }
    }

    /// Whether the windows are due to slide at `elapsed_ns` since the start: a
    /// [`LiveMetrics::take_in`] is then due even without a scrape.
    pub(crate) fn slide_due(&self, elapsed_ns: u64) -> bool {
        elapsed_ns >= self.next_slide_ns
    }

    /// Takes in the session's state at `elapsed_ns` since the start: what the cumulative
    /// histograms gained (into the windows' current slots and the cumulative buckets) and the
    /// counters; the windows' figures and the budget are recomputed when they are due to slide
    /// (every [`UPDATE_EVERY_NS`], and on the first call).
    pub(crate) fn take_in<'a>(
        &mut self,
        elapsed_ns: u64,
        states: impl Iterator<Item = CpuState<'a>>,
    ) {
        let slide = self.slide_due(elapsed_ns);
        if slide {
            self.next_slide_ns = (elapsed_ns / UPDATE_EVERY_NS + 1) * UPDATE_EVERY_NS;
        }
        let mut judged = Vec::new();
        for (m, state) in self.cpus.iter_mut().zip(states) {
            let row = &state.row;
            m.counters = Counters {
                missed_periods: row.missed_periods,
                dropped_records: row.dropped_records,
                deadline_misses: row.deadline_misses,
            };
            m.samples = row.samples;
            m.late_wakeups.clear();
            m.late_wakeups.extend_from_slice(state.late_wakeups);
            m.window.advance(elapsed_ns, m.counters);
            let window = &mut m.window;
            m.latency
                .take_in(state.cumulative, |value, count| window.record(value, count));
            if let Some(h) = state.irq {
                m.irq
                    .get_or_insert_with(Cumulative::default)
                    .take_in(h, |_, _| {});
            }
            if slide {
                m.windowed = m.window.figures();
                if self.budget.is_some() {
                    let counts = m.window.counters(m.counters);
                    judged.push(window_summary(m, m.window.summary(), counts));
                }
            }
        }
        if slide && let Some(b) = &self.budget {
            self.budget_verdict = b
                .evaluate_threads(&judged, &[])
                .clauses
                .into_iter()
                .map(|c| (c.clause, c.passed))
                .collect();
        }
    }

    /// Takes in the session's context counters since the start ([`crate::session::Session::counter_totals`]):
    /// (cpu, name, kind, value).
    pub(crate) fn take_counters<'a>(
        &mut self,
        totals: impl Iterator<Item = (usize, &'a str, crate::format::counters::Kind, i64)>,
    ) {
        for m in &mut self.cpus {
            m.context.clear();
        }
        for (cpu, name, kind, value) in totals {
            if let Some(m) = self.cpus.iter_mut().find(|m| m.cpu == cpu) {
                let gauge = kind == crate::format::counters::Kind::Gauge;
                m.context.push((name.to_string(), gauge, value));
            }
        }
    }

    /// The exposition as of the last [`LiveMetrics::take_in`]: cumulative histograms and
    /// counters as they were then; max, quantiles and the budget over the window as of its
    /// last slide.
    pub(crate) fn exposition(&self) -> Exposition {
        Exposition {
            kind: crate::format::run_record::RunKind::Latency,
            identity: self.identity.clone(),
            cpus: self
                .cpus
                .iter()
                .map(|m| CpuFigures {
                    cpu: m.cpu,
                    latency: Some(m.latency.buckets().clone()),
                    max_ns: m.windowed.max_ns,
                    quantiles_ns: m.windowed.quantiles_ns,
                    samples: Some(m.samples),
                    missed_periods: Some(m.counters.missed_periods),
                    dropped_records: Some(m.counters.dropped_records),
                    deadline_misses: Some(m.counters.deadline_misses),
                    irq_latency: m.irq.as_ref().map(|c| c.buckets().clone()),
                    late_wakeups: m.late_wakeups.clone(),
                    noise: None,
                    context: m.context.clone(),
                })
                .collect(),
            budget: self.budget_verdict.clone(),
        }
    }
}

/// One CPU's window as the budget judges it: its figures, and its counters' growth over it.
fn window_summary(m: &CpuMetrics, latency: LatencySummary, counts: Counters) -> ThreadSummary {
    ThreadSummary {
        cpu: m.cpu,
        thread_index: 0,
        tid: 0,
        interval_ns: m.interval_ns,
        deadline_ns: m.deadline_ns,
        latency,
        missed_periods: counts.missed_periods,
        dropped_records: counts.dropped_records,
        deadline_misses: counts.deadline_misses,
        early_wakeups: 0,
        end: "running".into(),
        irq_latency: None,
        // The tail counts are the whole run's (run.json), not a window's: a budget clause on them
        // (under, firm) reads "not counted" here.
        tails: Default::default(),
        noise: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_stay_bounded() {
        assert_eq!(slot_ns(300_000_000_000), 1_000_000_000, "5m: 1 s slots");
        assert_eq!(slot_ns(3_600_000_000_000), 6_000_000_000, "1h: 6 s slots");
        assert_eq!(slot_ns(1_000_000_000), 1_000_000_000);
        assert!(MAX_WINDOW_NS / slot_ns(MAX_WINDOW_NS) <= MAX_SLOTS);
    }
}

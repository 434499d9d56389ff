//! Continuous mode (`jitterlab monitor`): a run without end whose figures are served as
//! Prometheus metrics.
//!
//! The run itself is a [`crate::runner::Session`]; the command (`commands/monitor.rs`) polls it.
//! Here: [`LiveMetrics`] turns the session's per-CPU state into the exposition of
//! `report::openmetrics` (the one place of the metric families, shared with `export --format
//! openmetrics`), with the windowed figures from `window.rs`; the endpoint is `http.rs`.
//!
//! Cost and freshness: the counters and cumulative histograms are rendered after every drain
//! (every 100 ms), so that a scrape every second sees them move by a tenth of a second's
//! samples at most, not by whole seconds (which would alias with the scrape interval and make
//! `increase()` and `rate()` jump); the windows slide once per [`UPDATE_EVERY_NS`], the costlier
//! part. All of it on the recorder's thread, never on a measuring thread; a scrape only copies
//! a pointer.

pub mod http;
pub mod window;

use crate::analysis::budget::Budget;
use crate::plan::RunPlan;
use crate::record::stats::LatencySummary;
use crate::report::openmetrics::{CpuFigures, Exposition, Identity, LatencyBuckets};
use crate::results::run_record::ThreadSummary;
use crate::runner::CpuState;
use window::{Counters, CpuWindow};

/// How often the windows slide (and the shortest `--window`).
pub const UPDATE_EVERY_NS: u64 = 1_000_000_000;
/// The most slots a window is kept in: longer windows get longer slots, so that memory stays
/// bounded whatever the window (a 5 m window slides by 1 s, a 1 h window by 6 s).
pub const MAX_SLOTS: u64 = 600;
/// The longest `--window`.
pub const MAX_WINDOW_NS: u64 = 7 * 86_400_000_000_000;

/// The slot length of a window: [`UPDATE_EVERY_NS`], or longer to keep [`MAX_SLOTS`].
pub fn slot_ns(window_ns: u64) -> u64 {
    window_ns
        .div_ceil(MAX_SLOTS)
        .next_multiple_of(UPDATE_EVERY_NS)
        .max(UPDATE_EVERY_NS)
}

/// The metrics of a monitor: per CPU its window, and what every exposition repeats.
pub struct LiveMetrics {
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
    /// The window's figures as of its last slide.
    windowed: LatencySummary,
}

impl LiveMetrics {
    pub fn new(plan: &RunPlan, window_ns: u64, identity: Identity) -> Self {
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
                    windowed: LatencySummary::default(),
                })
                .collect(),
            next_slide_ns: 0,
            budget_verdict: Vec::new(),
        }
    }

    /// Takes in the session's state at `elapsed_ns` since the start and returns the
    /// exposition: cumulative histograms and counters as they are now; max, quantiles and the
    /// budget over the window, which slides when [`UPDATE_EVERY_NS`] has passed since its last
    /// slide (on the first call too).
    pub fn update<'a>(
        &mut self,
        elapsed_ns: u64,
        states: impl Iterator<Item = CpuState<'a>>,
    ) -> Exposition {
        let slide = elapsed_ns >= self.next_slide_ns;
        if slide {
            self.next_slide_ns = (elapsed_ns / UPDATE_EVERY_NS + 1) * UPDATE_EVERY_NS;
        }
        let mut figures = Vec::with_capacity(self.cpus.len());
        let mut judged = Vec::new();
        for (m, state) in self.cpus.iter_mut().zip(states) {
            let row = &state.row;
            let now = Counters {
                missed_periods: row.missed_periods,
                dropped_records: row.dropped_records,
                deadline_misses: row.deadline_misses,
            };
            if slide {
                m.window.update(elapsed_ns, state.cumulative, now);
                m.windowed = m.window.summary();
                if self.budget.is_some() {
                    judged.push(window_summary(m, m.window.counters(now)));
                }
            }
            figures.push(CpuFigures {
                cpu: m.cpu,
                latency: Some(buckets(state.cumulative)),
                max_ns: m.windowed.max_ns,
                quantiles_ns: [m.windowed.p99_ns, m.windowed.p999_ns, m.windowed.p9999_ns],
                samples: Some(row.samples),
                missed_periods: Some(row.missed_periods),
                dropped_records: Some(row.dropped_records),
                deadline_misses: Some(row.deadline_misses),
                irq_latency: state.irq.map(buckets),
                late_wakeups: state.late_wakeups.to_vec(),
            });
        }
        if slide && let Some(b) = &self.budget {
            self.budget_verdict = b
                .evaluate_threads(&judged, &[])
                .clauses
                .into_iter()
                .map(|c| (c.clause, c.passed))
                .collect();
        }
        Exposition {
            identity: self.identity.clone(),
            cpus: figures,
            budget: self.budget_verdict.clone(),
        }
    }
}

/// A cumulative histogram in the families' buckets; the sum at the histogram's precision.
fn buckets(h: &hdrhistogram::Histogram<u64>) -> LatencyBuckets {
    LatencyBuckets::from_histogram(h, h.mean() * h.len() as f64)
}

/// One CPU's window as the budget judges it: its figures, and its counters' growth over it.
fn window_summary(m: &CpuMetrics, counts: Counters) -> ThreadSummary {
    ThreadSummary {
        cpu: m.cpu,
        thread_index: 0,
        tid: 0,
        interval_ns: m.interval_ns,
        deadline_ns: m.deadline_ns,
        latency: m.windowed.clone(),
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

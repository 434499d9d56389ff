//! Continuous mode (`jitterlab monitor`): a run without end whose figures are served as
//! Prometheus metrics.
//!
//! The run itself is a [`crate::runner::Session`]; the command (`commands/monitor.rs`) polls it.
//! Here: [`LiveMetrics`] turns the session's per-CPU state into the exposition of
//! `report::openmetrics` (the one place of the metric families, shared with `export --format
//! openmetrics`), with the windowed figures from `window.rs`; the endpoint is `http.rs`.
//!
//! Cost: the metrics are brought up to date once per [`UPDATE_EVERY_NS`], on the recorder's
//! thread after a drain, never on a measuring thread; a scrape only copies a pointer.

pub mod http;
pub mod window;

use crate::analysis::budget::Budget;
use crate::plan::RunPlan;
use crate::record::stats::LatencySummary;
use crate::report::openmetrics::{CpuFigures, Exposition, Identity, LatencyBuckets};
use crate::results::run_record::ThreadSummary;
use crate::runner::CpuState;
use window::{Counters, CpuWindow};

/// How often the metrics are brought up to date (and the shortest `--window`).
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
    /// Per measured CPU in plan order: (cpu, interval ns, deadline ns, window).
    cpus: Vec<(usize, u64, u64, CpuWindow)>,
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
                .map(|(i, &cpu)| {
                    (
                        cpu,
                        plan.thread_interval_ns(i),
                        plan.thread_deadline_ns(i),
                        CpuWindow::new(window_ns, slot),
                    )
                })
                .collect(),
        }
    }

    /// Takes in the session's state at `elapsed_ns` since the start and returns the
    /// exposition: cumulative histograms and counters as they are, max and quantiles over the
    /// window, the budget judged on the window.
    pub fn update<'a>(
        &mut self,
        elapsed_ns: u64,
        states: impl Iterator<Item = CpuState<'a>>,
    ) -> Exposition {
        let mut figures = Vec::with_capacity(self.cpus.len());
        let mut judged = Vec::with_capacity(self.cpus.len());
        for ((cpu, interval_ns, deadline_ns, window), state) in self.cpus.iter_mut().zip(states) {
            let row = &state.row;
            let now = Counters {
                missed_periods: row.missed_periods,
                dropped_records: row.dropped_records,
                deadline_misses: row.deadline_misses,
            };
            window.update(elapsed_ns, state.cumulative, now);
            let windowed = window.summary();
            let in_window = window.counters(now);
            figures.push(CpuFigures {
                cpu: *cpu,
                latency: Some(buckets(state.cumulative)),
                max_ns: windowed.max_ns,
                quantiles_ns: [windowed.p99_ns, windowed.p999_ns, windowed.p9999_ns],
                samples: Some(row.samples),
                missed_periods: Some(row.missed_periods),
                dropped_records: Some(row.dropped_records),
                deadline_misses: Some(row.deadline_misses),
                irq_latency: state.irq.map(buckets),
                late_wakeups: state.late_wakeups.to_vec(),
            });
            if self.budget.is_some() {
                judged.push(window_summary(
                    *cpu,
                    *interval_ns,
                    *deadline_ns,
                    windowed,
                    in_window,
                ));
            }
        }
        let budget = self.budget.as_ref().map_or_else(Vec::new, |b| {
            b.evaluate_threads(&judged, &[])
                .clauses
                .into_iter()
                .map(|c| (c.clause, c.passed))
                .collect()
        });
        Exposition {
            identity: self.identity.clone(),
            cpus: figures,
            budget,
        }
    }
}

/// A cumulative histogram in the families' buckets; the sum at the histogram's precision.
fn buckets(h: &hdrhistogram::Histogram<u64>) -> LatencyBuckets {
    LatencyBuckets::from_histogram(h, h.mean() * h.len() as f64)
}

/// One CPU's window as the budget judges it.
fn window_summary(
    cpu: usize,
    interval_ns: u64,
    deadline_ns: u64,
    latency: LatencySummary,
    counts: Counters,
) -> ThreadSummary {
    ThreadSummary {
        cpu,
        thread_index: 0,
        tid: 0,
        interval_ns,
        deadline_ns,
        latency,
        missed_periods: counts.missed_periods,
        dropped_records: counts.dropped_records,
        deadline_misses: counts.deadline_misses,
        early_wakeups: 0,
        end: "running".into(),
        irq_latency: None,
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

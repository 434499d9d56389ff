//! The tail figures of several runs against the first (docs/tails.md, docs/compare.md): per
//! CPU, the share within each threshold both runs counted, with the difference and Newcombe's
//! 95 % interval of it, and the spike rates over the deadline with their Poisson intervals
//! (estimated from the interval maxima for runs without a spike record).

use super::tails::exceedance::{Exceedance, share_difference};
use super::tails::interval_spikes::{self, IntervalMax};
use crate::format::hlog::parse_tag;
use crate::format::run_record::RunRecord;
use crate::format::tails::{SpikeRecord, WithinRecord};
use crate::results::loaded::LoadedRun;
use serde::Serialize;

/// Confidence of every interval here.
pub(crate) const CONFIDENCE: f64 = 0.95;

/// One threshold on one CPU, in every run.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct WithinRow {
    pub cpu: usize,
    pub threshold_ns: u64,
    /// Per run: the percentage within (undecided counted as above); None when the run did not
    /// count this threshold on this CPU.
    pub(crate) percent: Vec<Option<f64>>,
    /// Per run after the first: the difference (B − A, percentage points) and its interval.
    pub difference: Vec<Option<(f64, f64, f64)>>,
}

/// The spike rate over the deadline (a noise run: the gaps over its threshold) on one CPU, in
/// every run.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct SpikeRow {
    pub cpu: usize,
    /// Per run; None when not counted.
    pub rates: Vec<Option<RunSpikeRate>>,
}

/// One run's spikes over its deadline.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub(crate) struct RunSpikeRate {
    pub threshold_ns: u64,
    pub count: u64,
    /// Estimated from the interval maxima (the run has no spike record): at least `count`.
    pub(crate) count_is_lower_bound: bool,
    /// The spike times are known to within this.
    pub(crate) resolution_ns: u64,
    pub per_hour: f64,
    /// 95 % exact Poisson interval.
    pub per_hour_low: f64,
    pub per_hour_high: f64,
}

/// The tail comparison of `runs` against the first.
#[derive(Debug, Clone, Serialize, PartialEq, Default)]
pub(crate) struct TailComparison {
    pub within: Vec<WithinRow>,
    pub spikes: Vec<SpikeRow>,
}

fn exceedance(w: &WithinRecord) -> Exceedance {
    Exceedance {
        threshold_ns: w.threshold_ns,
        total: w.total(),
        within: w.within,
        above: w.above,
        undecided: w.undecided,
    }
}

/// Compares the runs' tail figures; thresholds are matched exactly, so a row appears for each
/// threshold the first run counted.
pub(crate) fn compare_tails(runs: &[LoadedRun]) -> TailComparison {
    let Some(first) = runs.first() else {
        return TailComparison::default();
    };
    let find = |r: &LoadedRun, cpu: usize, threshold: u64| {
        r.record
            .threads
            .iter()
            .find(|t| t.cpu == cpu)
            .and_then(|t| t.tails.within.iter().find(|w| w.threshold_ns == threshold))
            .copied()
    };
    let records: Vec<RunRecord> = runs.iter().map(with_interval_spikes).collect();
    let mut out = TailComparison::default();
    for t in &first.record.threads {
        for w in &t.tails.within {
            let found: Vec<Option<WithinRecord>> = runs
                .iter()
                .map(|r| find(r, t.cpu, w.threshold_ns))
                .collect();
            let a = exceedance(w);
            out.within.push(WithinRow {
                cpu: t.cpu,
                threshold_ns: w.threshold_ns,
                percent: found
                    .iter()
                    .map(|f| f.and_then(|f| f.percent_within()))
                    .collect(),
                difference: found[1..]
                    .iter()
                    .map(|b| {
                        let b = exceedance(b.as_ref()?);
                        let (low, high) = share_difference(&a, &b, CONFIDENCE)?;
                        let d = b.share_within()? - a.share_within()?;
                        Some((100.0 * d, 100.0 * low, 100.0 * high))
                    })
                    .collect(),
            });
        }
        let deadline_rate = |r: &RunRecord| {
            r.threads
                .iter()
                .find(|x| x.cpu == t.cpu)?
                .tails
                .spikes
                .iter()
                // The thread's own limit: a wakeup thread's deadline, a noise thread's
                // threshold (its gaps over it, issue 23).
                .find(|s| {
                    matches!(s.basis.as_str(), "deadline" | "threshold") && s.not_counted.is_none()
                })
                .map(|s: &SpikeRecord| RunSpikeRate {
                    threshold_ns: s.threshold_ns,
                    count: s.count,
                    count_is_lower_bound: s.count_is_lower_bound,
                    resolution_ns: s.resolution_ns,
                    per_hour: s.rate_per_hour,
                    per_hour_low: s.rate_per_hour_low,
                    per_hour_high: s.rate_per_hour_high,
                })
        };
        if deadline_rate(&records[0]).is_some() {
            out.spikes.push(SpikeRow {
                cpu: t.cpu,
                rates: records.iter().map(deadline_rate).collect(),
            });
        }
    }
    out
}

/// The run's record, with spikes estimated from its (coarsened) interval maxima on every CPU
/// the recorder did not count them on.
fn with_interval_spikes(run: &LoadedRun) -> RunRecord {
    let mut record = run.record.clone();
    interval_spikes::fill_missing_spikes(&mut record, |cpu| {
        run.intervals
            .iter()
            .filter(|i| parse_tag(&i.tag) == (Some(cpu), false))
            .map(|i| IntervalMax {
                start_ns: (i.start_s * 1e9).round() as u64,
                length_ns: (i.length_s * 1e9).round() as u64,
                max_ns: i.counts.last().map(|&(v, _)| v),
            })
            .collect()
    });
    record
}

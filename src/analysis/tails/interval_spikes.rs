//! Spikes of runs that have no spike record (imported runs, files written before the recorder
//! counted spikes): estimated from the interval log, where each interval keeps its maximum.
//! An interval whose maximum is over a threshold holds at least one spike; several spikes in
//! one interval count as one, so the count is a lower bound and the times are known only to
//! the log interval (docs/tails.md, "Spikes from interval maxima").

use super::spikes::{self, SpikeTimes};
use crate::format::run_record::{RunRecord, ThreadSummary};
use crate::format::tails::{SPIKE_TIMES_KEPT, SpikeRecord};

/// Confidence of the rate intervals.
const CONFIDENCE: f64 = 0.95;

/// One interval of one CPU's log: where it lies in the run and its largest latency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IntervalMax {
    /// From the run's start (the log's base time), ns.
    pub start_ns: u64,
    pub length_ns: u64,
    /// None for an interval without samples.
    pub max_ns: Option<u64>,
}

/// A spike count with its rate, MTBF and period (from `times`, whose resolution and lower-bound
/// flag carry over), the one way every spike record is made.
pub(crate) fn spike_record(
    basis: &str,
    threshold_ns: u64,
    count: u64,
    times: SpikeTimes,
    exposure_ns: u64,
) -> SpikeRecord {
    let rate = spikes::spike_rate(count, exposure_ns.max(1), CONFIDENCE);
    // The period is found from the kept times; past SPIKE_TIMES_KEPT it describes the first ones.
    let period = spikes::dominant_period(&times);
    let mut times_ns = times.times_ns;
    times_ns.truncate(SPIKE_TIMES_KEPT);
    SpikeRecord {
        threshold_ns,
        basis: basis.into(),
        count,
        count_is_lower_bound: times.count_is_lower_bound,
        resolution_ns: times.resolution_ns,
        exposure_ns,
        rate_per_hour: rate.per_hour,
        rate_per_hour_low: rate.per_hour_low,
        rate_per_hour_high: rate.per_hour_high,
        mtbf_ns: rate.mtbf_ns,
        period_ns: period.map(|p| p.period_ns),
        period_share: period.map(|p| p.share_on_grid()),
        times_ns,
        times_omitted: 0,
        not_counted: None,
    }
}

/// The spikes of one thread over its deadline and over 10x its median, from its interval
/// maxima; none when there are no intervals. The log interval is the longest interval (the
/// resolution of the times); the exposure is the sum of the intervals' lengths.
pub(crate) fn spikes_from_interval_maxima(
    t: &ThreadSummary,
    intervals: &[IntervalMax],
) -> Vec<SpikeRecord> {
    let exposure_ns: u64 = intervals.iter().map(|i| i.length_ns).sum();
    let log_interval_ns = intervals.iter().map(|i| i.length_ns).max().unwrap_or(0);
    if intervals.is_empty() || exposure_ns == 0 {
        return Vec::new();
    }
    let pairs: Vec<(u64, u64)> = intervals
        .iter()
        .filter_map(|i| Some((i.start_ns, i.max_ns?)))
        .collect();
    let mut thresholds = vec![("deadline", t.deadline_ns)];
    if let Some(median) = t.latency.p50_ns.filter(|&m| m > 0)
        && 10 * median != t.deadline_ns
    {
        thresholds.push(("10x median", 10 * median));
    }
    let mut out: Vec<SpikeRecord> = thresholds
        .into_iter()
        .filter(|&(_, threshold)| threshold > 0)
        .map(|(basis, threshold)| {
            let times = SpikeTimes::from_interval_maxima(&pairs, log_interval_ns, threshold);
            let count = times.times_ns.len() as u64;
            spike_record(basis, threshold, count, times, exposure_ns)
        })
        .collect();
    out.sort_by_key(|s| s.threshold_ns);
    out
}

/// Gives every thread of `record` without spike figures the estimate from its interval
/// maxima; `maxima(cpu)` gives that CPU's wakeup-latency intervals in time order. Threads with
/// the recorder's own spike record are left as they are.
pub(crate) fn fill_missing_spikes(
    record: &mut RunRecord,
    maxima: impl Fn(usize) -> Vec<IntervalMax>,
) {
    for t in &mut record.threads {
        if t.tails.spikes.is_empty() {
            t.tails.spikes = spikes_from_interval_maxima(t, &maxima(t.cpu));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread(deadline_ns: u64, p50_ns: u64) -> ThreadSummary {
        ThreadSummary {
            cpu: 0,
            thread_index: 0,
            tid: 1,
            interval_ns: 1_000_000,
            deadline_ns,
            latency: crate::format::stats::LatencySummary {
                samples: 600_000,
                p50_ns: Some(p50_ns),
                ..Default::default()
            },
            missed_periods: 0,
            dropped_records: 0,
            deadline_misses: 0,
            early_wakeups: 0,
            end: "completed".into(),
            irq_latency: None,
            tails: Default::default(),
            noise: None,
        }
    }

    /// Ten minutes of 1 s intervals with spikes in known intervals: every 7th (a 7 s tick), two
    /// over the deadline at once in interval 100 (counted once: a lower bound), and one below
    /// the deadline but over 10x the median.
    #[test]
    fn known_spike_intervals_are_counted_as_a_lower_bound() {
        let second = 1_000_000_000;
        let intervals: Vec<IntervalMax> = (0..600u64)
            .map(|i| IntervalMax {
                start_ns: i * second,
                length_ns: second,
                max_ns: Some(match i {
                    _ if i % 7 == 3 => 2_000_000,
                    100 => 5_000_000,
                    200 => 300_000,
                    _ => 40_000,
                }),
            })
            .collect();
        let t = thread(1_000_000, 20_000);
        let s = spikes_from_interval_maxima(&t, &intervals);
        assert_eq!(s.len(), 2);
        let (tenfold, deadline) = (&s[0], &s[1]);
        let ticks = (0..600).filter(|i| i % 7 == 3).count() as u64;
        assert_eq!(
            (deadline.basis.as_str(), deadline.threshold_ns),
            ("deadline", 1_000_000)
        );
        assert_eq!(deadline.count, ticks + 1);
        assert_eq!(
            (tenfold.basis.as_str(), tenfold.threshold_ns),
            ("10x median", 200_000)
        );
        assert_eq!(tenfold.count, ticks + 2);
        for r in &s {
            assert!(r.count_is_lower_bound);
            assert_eq!(r.resolution_ns, second);
            assert_eq!(r.exposure_ns, 600 * second);
            assert_eq!(r.times_ns.len() as u64, r.count);
            assert!((r.rate_per_hour - r.count as f64 * 6.0).abs() < 1e-9);
        }
        assert_eq!(deadline.times_ns[0], 3 * second);
        let period = deadline.period_ns.expect("a 7 s period");
        assert!((period - 7e9).abs() < 0.01 * 7e9, "{period}");
    }

    #[test]
    fn no_intervals_no_spikes() {
        assert!(spikes_from_interval_maxima(&thread(1_000_000, 20_000), &[]).is_empty());
    }
}

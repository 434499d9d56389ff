//! Latency statistics: an HDR histogram for percentiles plus exact min, max, mean and
//! standard deviation, so that the extremes a real-time engineer cares most about are never
//! rounded to a histogram bucket.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Significant digits of every latency histogram: values within 0.1%.
pub(crate) const HISTOGRAM_DIGITS: u8 = 3;

/// A fresh auto-resizing histogram: no value is ever out of range.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new(HISTOGRAM_DIGITS).expect("3 significant digits is a valid precision")
}

/// Accumulates latencies (ns).
#[derive(Debug, Clone)]
pub(crate) struct LatencyStats {
    pub histogram: Histogram<u64>,
    count: u64,
    min: i64,
    max: i64,
    sum: i128,
    sum_squares: f64,
    /// Samples with a negative latency, recorded in the histogram as 0 (which cannot hold them).
    pub early: u64,
}

impl Default for LatencyStats {
    fn default() -> Self {
        LatencyStats {
            histogram: new_histogram(),
            count: 0,
            min: i64::MAX,
            max: i64::MIN,
            sum: 0,
            sum_squares: 0.0,
            early: 0,
        }
    }
}

impl LatencyStats {
    pub(crate) fn record(&mut self, latency_ns: i64) {
        self.record_exact(latency_ns);
        // Auto-resizing: recording cannot fail for a non-negative value.
        self.histogram
            .record(latency_ns.max(0) as u64)
            .expect("auto-resizing histogram");
    }

    /// Counts a latency in the exact figures only (count, min, max, sum, sum of squares,
    /// early), not in the histogram: for a caller that adds the same samples to the histogram
    /// later, in bulk ([`LatencyStats::add_histogram`]), the exact figures summed sample by
    /// sample as [`LatencyStats::record`] sums them.
    pub(crate) fn record_exact(&mut self, latency_ns: i64) {
        self.count += 1;
        self.min = self.min.min(latency_ns);
        self.max = self.max.max(latency_ns);
        self.sum += latency_ns as i128;
        self.sum_squares += (latency_ns as f64) * (latency_ns as f64);
        if latency_ns < 0 {
            self.early += 1;
        }
    }

    /// Adds the histogram of samples already counted by [`LatencyStats::record_exact`]: the
    /// histogram then holds the same counts as if each had been recorded.
    pub(crate) fn add_histogram(&mut self, h: &Histogram<u64>) {
        // Auto-resizing: adding cannot fail.
        self.histogram.add(h).expect("auto-resizing histogram");
    }

    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    /// Forgets everything, keeping the histogram's allocation.
    pub(crate) fn reset(&mut self) {
        self.histogram.reset();
        self.count = 0;
        self.min = i64::MAX;
        self.max = i64::MIN;
        self.sum = 0;
        self.sum_squares = 0.0;
        self.early = 0;
    }

    /// Exact minimum, or None before any sample.
    pub(crate) fn min_ns(&self) -> Option<i64> {
        (self.count > 0).then_some(self.min)
    }

    /// Exact maximum, or None before any sample.
    pub(crate) fn max_ns(&self) -> Option<i64> {
        (self.count > 0).then_some(self.max)
    }

    /// Exact mean, or None before any sample.
    pub(crate) fn mean_ns(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum as f64 / self.count as f64)
    }

    /// The summary of everything recorded so far.
    pub(crate) fn summary(&self) -> LatencySummary {
        if self.count == 0 {
            return LatencySummary::default();
        }
        let n = self.count as f64;
        let mean = self.sum as f64 / n;
        let variance = (self.sum_squares / n - mean * mean).max(0.0);
        let q = |quantile: f64| Some(self.histogram.value_at_quantile(quantile));
        let mut summary = LatencySummary {
            samples: self.count,
            min_ns: Some(self.min),
            mean_ns: Some(mean),
            stddev_ns: Some(variance.sqrt()),
            p50_ns: q(0.50),
            p90_ns: q(0.90),
            p99_ns: q(0.99),
            p999_ns: q(0.999),
            p9999_ns: q(0.9999),
            max_ns: Some(self.max),
        };
        // The histogram reports the top of a bucket, which can lie above the exact maximum.
        summary.clamp_into(self.min, self.max);
        summary
    }
}

/// The latency figures of run.json. Percentiles are HDR histogram values (3 significant
/// digits: the top of the bucket holding the nearest-rank value, at most 1/1024 above it),
/// clamped into the exact [min, max]; min, max, mean and standard deviation are exact. All
/// None when there were no samples.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub samples: u64,
    pub min_ns: Option<i64>,
    pub mean_ns: Option<f64>,
    pub stddev_ns: Option<f64>,
    pub p50_ns: Option<u64>,
    pub p90_ns: Option<u64>,
    pub p99_ns: Option<u64>,
    pub p999_ns: Option<u64>,
    pub p9999_ns: Option<u64>,
    pub max_ns: Option<i64>,
}

impl LatencySummary {
    /// The summary of a histogram alone (when the exact samples are gone, e.g. a phase's
    /// intervals merged): percentiles as usual, and min, max, mean and standard deviation at the
    /// histogram's precision (3 significant digits).
    pub fn from_histogram(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return LatencySummary::default();
        }
        let q = |quantile: f64| Some(h.value_at_quantile(quantile));
        LatencySummary {
            samples: h.len(),
            min_ns: Some(h.min() as i64),
            mean_ns: Some(h.mean()),
            stddev_ns: Some(h.stdev()),
            p50_ns: q(0.50),
            p90_ns: q(0.90),
            p99_ns: q(0.99),
            p999_ns: q(0.999),
            p9999_ns: q(0.9999),
            max_ns: Some(h.max() as i64),
        }
    }

    /// Every figure read from a histogram brought into the exact range [`min_ns`, `max_ns`]
    /// known for the same samples (a bucket's top can lie above the true maximum, its bottom
    /// below the true minimum): the percentiles, the mean, and min and max themselves when they
    /// came from a histogram. The true value lies inside the range and inside the bucket, so
    /// the clamped figure stays within the histogram's precision of it. Percentiles cannot be
    /// negative (negative latencies count as 0), so they are brought into [max(min, 0),
    /// max(max, 0)].
    pub(crate) fn clamp_into(&mut self, min_ns: i64, max_ns: i64) {
        if self.samples == 0 || min_ns > max_ns {
            return;
        }
        let within = |v: i64| v.clamp(min_ns, max_ns);
        self.min_ns = self.min_ns.map(within);
        self.max_ns = self.max_ns.map(within);
        self.mean_ns = self.mean_ns.map(|m| m.clamp(min_ns as f64, max_ns as f64));
        for p in [
            &mut self.p50_ns,
            &mut self.p90_ns,
            &mut self.p99_ns,
            &mut self.p999_ns,
            &mut self.p9999_ns,
        ] {
            *p = p.map(|v| clamp_percentile(v, min_ns, max_ns));
        }
    }
}

/// A value read from a histogram (a percentile, or a bucket's value that percentiles are read
/// from) brought into the exact range [`min_ns`, `max_ns`] of the same samples, as
/// [`LatencySummary::clamp_into`] does for run.json: percentiles cannot be negative (negative
/// latencies count as 0), so the range is [max(min, 0), max(max, 0)]. The one rule for every
/// figure read from a histogram (run.json, phases, imports, `compare`'s estimates and
/// intervals).
pub(crate) fn clamp_percentile(v: u64, min_ns: i64, max_ns: i64) -> u64 {
    if min_ns > max_ns {
        return v;
    }
    v.clamp(min_ns.max(0) as u64, max_ns.max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nearest-rank percentile of a sorted slice: the smallest value with at least q of the
    /// samples at or below it.
    fn nearest_rank(sorted: &[i64], q: f64) -> i64 {
        let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
        sorted[rank - 1]
    }

    #[test]
    fn summary_matches_a_sorted_reference() {
        // A deterministic, skewed sample set: mostly tens of us, a tail up to several ms.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut values = Vec::new();
        for i in 0..200_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let base = 5_000 + (x % 40_000) as i64;
            values.push(if i % 997 == 0 { base * 100 } else { base });
        }
        let mut stats = LatencyStats::default();
        values.iter().for_each(|&v| stats.record(v));
        let s = stats.summary();
        values.sort_unstable();
        assert_eq!(s.samples, values.len() as u64);
        assert_eq!(s.min_ns, Some(values[0]));
        assert_eq!(s.max_ns, Some(*values.last().unwrap()));
        let mean = values.iter().map(|&v| v as f64).sum::<f64>() / values.len() as f64;
        assert!((s.mean_ns.unwrap() - mean).abs() < 1e-6 * mean);
        let var = values
            .iter()
            .map(|&v| (v as f64 - mean).powi(2))
            .sum::<f64>()
            / values.len() as f64;
        assert!((s.stddev_ns.unwrap() - var.sqrt()).abs() < 1e-6 * var.sqrt());
        for (got, q) in [
            (s.p50_ns, 0.5),
            (s.p90_ns, 0.9),
            (s.p99_ns, 0.99),
            (s.p999_ns, 0.999),
            (s.p9999_ns, 0.9999),
        ] {
            let want = nearest_rank(&values, q) as f64;
            let got = got.unwrap() as f64;
            assert!(
                (got - want).abs() <= want * 0.001 + 1.0,
                "p{q}: histogram {got} vs sorted {want}"
            );
        }
    }

    /// issue 23: a 1.55 ms maximum whose bucket reaches 1.5564 ms gave a p99.99 of 1.56 ms,
    /// above the maximum. Every percentile now lies within the exact [min, max].
    #[test]
    fn percentiles_never_leave_the_exact_range() {
        let mut stats = LatencyStats::default();
        for _ in 0..3_999 {
            stats.record(20_001);
        }
        stats.record(1_550_123);
        // The histogram alone puts the p99.99 above the maximum.
        assert!(stats.histogram.value_at_quantile(0.9999) > 1_550_123);
        let s = stats.summary();
        assert_eq!(s.p9999_ns, Some(1_550_123));
        assert_eq!(s.max_ns, Some(1_550_123));
        // The p50 stays its bucket's top, 20 015 ns for samples of 20 001 ns: inside [min, max]
        // and within the stated 1/1024.
        assert_eq!(s.p50_ns, Some(20_015));
        for p in [s.p50_ns, s.p90_ns, s.p99_ns, s.p999_ns, s.p9999_ns] {
            let p = p.unwrap() as i64;
            assert!(s.min_ns.unwrap() <= p && p <= s.max_ns.unwrap(), "{s:?}");
        }
    }

    /// A summary made from a histogram alone (a phase) is brought into the run's exact range:
    /// a phase max can no longer exceed the run's max.
    #[test]
    fn a_histogram_summary_is_clamped_into_the_exact_range() {
        let mut h = new_histogram();
        for v in [42_080_123u64, 30_001, 31_000] {
            h.record(v).unwrap();
        }
        let mut s = LatencySummary::from_histogram(&h);
        assert!(s.max_ns.unwrap() > 42_080_123, "{s:?}");
        assert!(s.min_ns.unwrap() < 30_001, "{s:?}");
        s.clamp_into(30_001, 42_080_123);
        assert_eq!((s.min_ns, s.max_ns), (Some(30_001), Some(42_080_123)));
        assert_eq!(s.p9999_ns, Some(42_080_123));
        assert!(s.mean_ns.unwrap() <= 42_080_123.0);
        // Early wakeups: percentiles (counted as 0) stay at 0, min stays negative.
        let mut stats = LatencyStats::default();
        stats.record(-500);
        stats.record(-100);
        let s = stats.summary();
        assert_eq!(
            (s.min_ns, s.p50_ns, s.max_ns),
            (Some(-500), Some(0), Some(-100))
        );
    }

    #[test]
    fn negative_latencies_are_counted_not_lost() {
        let mut stats = LatencyStats::default();
        stats.record(-300);
        stats.record(1_000);
        let s = stats.summary();
        assert_eq!(s.samples, 2);
        assert_eq!(s.min_ns, Some(-300));
        assert_eq!(stats.early, 1);
        assert_eq!(stats.histogram.len(), 2);
    }

    #[test]
    fn huge_values_fit() {
        let mut stats = LatencyStats::default();
        stats.record(3_600_000_000_000); // an hour
        assert_eq!(stats.summary().max_ns, Some(3_600_000_000_000));
        assert_eq!(stats.histogram.len(), 1);
    }

    #[test]
    fn empty_summary_has_no_numbers() {
        assert_eq!(LatencyStats::default().summary(), LatencySummary::default());
    }

    /// A day of samples whose sum (3.7e15 ns) is far beyond 32 bits: count, sum, mean, min and
    /// max stay exact on 32-bit boards (run under qemu-arm by ci/cross.sh's unit-test step).
    #[test]
    fn a_day_long_runs_sums_are_exact_on_every_target() {
        let n: u64 = 86_400;
        let mut stats = LatencyStats::default();
        for i in 0..n {
            stats.record((i * 1_000_003) as i64);
        }
        assert_eq!(stats.count(), n);
        assert_eq!(stats.sum, 1_000_003 * (n as i128) * (n as i128 - 1) / 2);
        assert_eq!(stats.min_ns(), Some(0));
        assert_eq!(stats.max_ns(), Some(((n - 1) * 1_000_003) as i64));
        // (n - 1) * 1_000_003 / 2 = 43_199_629_598.5: exact in f64.
        assert_eq!(stats.mean_ns(), Some(43_199_629_598.5));
        assert_eq!(stats.summary().samples, n);
    }
}

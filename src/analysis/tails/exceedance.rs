//! "x % of wakeups within y": the share of samples at or below a threshold, with the exact
//! counts behind it (the MontaVista "98.998 % < 2 us" statement, made checkable).

use hdrhistogram::Histogram;

/// How many samples lie at or below `threshold_ns` and how many above it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exceedance {
    pub threshold_ns: u64,
    pub total: u64,
    /// Samples ≤ threshold, known to be so.
    pub within: u64,
    /// Samples > threshold, known to be so.
    pub above: u64,
    /// Samples whose side is unknown: from a histogram, the ones in the bucket that straddles
    /// the threshold (HDR buckets hold a range of values). Always 0 from exact samples.
    pub undecided: u64,
}

impl Exceedance {
    /// Exact counts from the samples themselves.
    pub fn from_samples(samples: &[u64], threshold_ns: u64) -> Exceedance {
        let within = samples.iter().filter(|&&s| s <= threshold_ns).count() as u64;
        Exceedance {
            threshold_ns,
            total: samples.len() as u64,
            within,
            above: samples.len() as u64 - within,
            undecided: 0,
        }
    }

    /// Counts from an HDR histogram. Exact when the threshold is the top of its bucket (every
    /// value up to 2048 at the usual 3 significant digits, and any threshold an HDR bucket ends
    /// at); otherwise the samples of the straddling bucket are reported as `undecided`, so a
    /// statement made from it can say "between" instead of guessing.
    pub fn from_histogram(h: &Histogram<u64>, threshold_ns: u64) -> Exceedance {
        let total = h.len();
        if total == 0 {
            return Exceedance {
                threshold_ns,
                total,
                within: 0,
                above: 0,
                undecided: 0,
            };
        }
        // Every sample at most its bucket's top (`max`), or at least its bucket's bottom
        // (`min`): decided whole, also beyond the histogram's range.
        if threshold_ns >= h.max() || threshold_ns < h.min() {
            let within = if threshold_ns >= h.max() { total } else { 0 };
            return Exceedance {
                threshold_ns,
                total,
                within,
                above: total - within,
                undecided: 0,
            };
        }
        let bucket_low = h.lowest_equivalent(threshold_ns);
        let bucket_high = h.highest_equivalent(threshold_ns);
        // count_between(a, b) counts the buckets of a through b, whole.
        let through_bucket = h.count_between(0, threshold_ns);
        let below_bucket = if bucket_low == 0 {
            0
        } else {
            h.count_between(0, bucket_low - 1)
        };
        let straddling = through_bucket - below_bucket;
        let (within, undecided) = if bucket_high == threshold_ns {
            (through_bucket, 0)
        } else {
            (below_bucket, straddling)
        };
        Exceedance {
            threshold_ns,
            total,
            within,
            above: total - within - undecided,
            undecided,
        }
    }

    /// The share within the threshold as a fraction, counting undecided samples as above (the
    /// conservative side); None without samples.
    pub(crate) fn share_within(&self) -> Option<f64> {
        (self.total > 0).then(|| self.within as f64 / self.total as f64)
    }

    /// A 95 % (or `confidence`) Wilson score interval of the share within, for the population
    /// the samples stand for (used by `compare` for the difference between runs).
    pub fn share_interval(&self, confidence: f64) -> Option<(f64, f64)> {
        let n = self.total as f64;
        let p = self.share_within()?;
        let z = super::special::normal_quantile(0.5 + confidence / 2.0);
        let centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
        let half = z / (1.0 + z * z / n) * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
        Some(((centre - half).max(0.0), (centre + half).min(1.0)))
    }
}

/// Newcombe's hybrid score interval for the difference of two shares (`b − a`), from the Wilson
/// intervals of each: the interval `compare` shows for `under(x)`.
pub fn share_difference(a: &Exceedance, b: &Exceedance, confidence: f64) -> Option<(f64, f64)> {
    let (pa, pb) = (a.share_within()?, b.share_within()?);
    let (la, ua) = a.share_interval(confidence)?;
    let (lb, ub) = b.share_interval(confidence)?;
    let d = pb - pa;
    let low = d - ((pb - lb).powi(2) + (ua - pa).powi(2)).sqrt();
    let high = d + ((ub - pb).powi(2) + (pa - la).powi(2)).sqrt();
    Some((low, high))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_counts_from_samples_and_histogram() {
        // Samples 1..=10_000 ns: 2 500 at or below 2 500.
        let samples: Vec<u64> = (1..=10_000).collect();
        let e = Exceedance::from_samples(&samples, 2_500);
        assert_eq!((e.within, e.above, e.undecided), (2_500, 7_500, 0));
        let mut h = Histogram::<u64>::new(3).unwrap();
        for &s in &samples {
            h.record(s).unwrap();
        }
        // 2 047 ends a bucket (values below 2048 are exact at 3 digits): exact.
        let exact = Exceedance::from_histogram(&h, 2_047);
        assert_eq!(
            (exact.within, exact.above, exact.undecided),
            (2_047, 7_953, 0)
        );
        // 2 500 lies inside a 2-ns bucket [2 500, 2 501]: that bucket is undecided, and the
        // truth (2 500 within) lies between the known counts.
        let straddle = Exceedance::from_histogram(&h, 2_500);
        assert_eq!(straddle.undecided, 2);
        assert!(straddle.within <= e.within && e.within <= straddle.within + 2);
        assert_eq!(
            straddle.within + straddle.above + straddle.undecided,
            10_000
        );
    }

    #[test]
    fn newcombe_interval_covers_the_true_difference() {
        // Two runs drawn with shares 0.990 and 0.995 (n = 20 000 each); the 95 % interval of
        // the difference must contain 0.005 in about 95 % of 400 repetitions.
        let mut rng = crate::random::SplitMix64::new(7);
        let mut covered = 0;
        for _ in 0..400 {
            let mut count = |p: f64| (0..20_000).filter(|_| rng.uniform() < p).count() as u64;
            let (wa, wb) = (count(0.990), count(0.995));
            let mk = |within| Exceedance {
                threshold_ns: 1,
                total: 20_000,
                within,
                above: 20_000 - within,
                undecided: 0,
            };
            let (low, high) = share_difference(&mk(wa), &mk(wb), 0.95).unwrap();
            covered += usize::from(low <= 0.005 && 0.005 <= high);
        }
        assert!((368..=396).contains(&covered), "covered {covered} of 400");
    }
}

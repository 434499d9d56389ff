//! What a cumulative histogram of the recorder gained since the monitor last looked, and the
//! exposition's buckets of it kept up to date from those gains.
//!
//! Why incremental: the recorder's histograms only grow, and walking one whole (an HDR
//! histogram of 3 digits up to 1 ms is some 11 000 counters) costs far more than the few
//! hundred distinct values a second of samples holds. So each look walks the cumulative
//! histogram once, hands each gain (value, count) to the caller (the window's current slot),
//! and folds it into the exposition's buckets here; nothing else walks it.

use crate::format::stats::new_histogram;
use crate::report::openmetrics::LatencyBuckets;
use hdrhistogram::Histogram;

/// One cumulative histogram as last seen, and its exposition buckets.
pub(crate) struct Cumulative {
    /// The counts as of the last [`Cumulative::take_in`].
    seen: Histogram<u64>,
    buckets: LatencyBuckets,
}

impl Default for Cumulative {
    fn default() -> Self {
        Cumulative {
            seen: new_histogram(),
            buckets: LatencyBuckets::default(),
        }
    }
}

impl Cumulative {
    /// Takes in what `now` gained since the last call, calling `gained(value, count)` for each
    /// HDR bucket that grew (its highest value, as percentiles report), in value order.
    pub(crate) fn take_in(&mut self, now: &Histogram<u64>, mut gained: impl FnMut(u64, u64)) {
        if now.len() == self.seen.len() {
            return;
        }
        for v in now.iter_recorded() {
            let value = v.value_iterated_to();
            let before = self.seen.count_at(value);
            let count = v.count_at_value().saturating_sub(before);
            if count == 0 {
                continue;
            }
            self.seen
                .record_n(value, count)
                .expect("auto-resizing histogram");
            self.buckets.add(value, count);
            // As the histogram's own mean counts a sample: at its bucket's middle.
            self.buckets.sum_ns += now.median_equivalent(value) as f64 * count as f64;
            gained(value, count);
        }
    }

    /// The exposition buckets of everything taken in.
    pub(crate) fn buckets(&self) -> &LatencyBuckets {
        &self.buckets
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Known samples taken in over three looks: each gain is reported once, the buckets equal
    /// those of the whole histogram, and the sum is the histogram's mean times its count.
    #[test]
    fn gains_are_reported_once_and_buckets_match_the_whole() {
        let mut h = new_histogram();
        let mut c = Cumulative::default();
        let mut gains = Vec::new();
        h.record_n(1_500, 10).unwrap();
        h.record_n(30_000, 5).unwrap();
        c.take_in(&h, |v, n| gains.push((v, n)));
        c.take_in(&h, |v, n| gains.push((v, n)));
        h.record_n(30_000, 2).unwrap();
        h.record(3_000_000).unwrap();
        c.take_in(&h, |v, n| gains.push((v, n)));
        let at = |v: u64| h.highest_equivalent(v);
        assert_eq!(
            gains,
            [
                (at(1_500), 10),
                (at(30_000), 5),
                (at(30_000), 2),
                (at(3_000_000), 1)
            ]
        );
        let whole = LatencyBuckets::from_histogram(&h, h.mean() * h.len() as f64);
        assert_eq!(c.buckets().at_or_below, whole.at_or_below);
        assert_eq!(c.buckets().count, 18);
        assert!((c.buckets().sum_ns - whole.sum_ns).abs() < 1e-6 * whole.sum_ns);
    }
}

//! The intervals the scanner hands out, as sparse (value, count) pairs: borrowed while scanning
//! ([`SparseInterval`]) or owned by readers that keep them ([`StoredInterval`]), and the one
//! way such pairs go back into a histogram ([`add_counts`]).

use hdrhistogram::Histogram;

/// One interval as the scanner hands it out. The slices live until the next interval.
#[derive(Debug)]
pub struct SparseInterval<'a> {
    pub tag: &'a str,
    /// Seconds from the log's base time (the run's first due time).
    pub start_s: f64,
    pub length_s: f64,
    /// (value, count) for each non-empty histogram slot, values ascending. The value is the
    /// highest value the slot stands for, as `Histogram::value_at_quantile` and `max` report it.
    pub counts: &'a [(u64, u64)],
    /// The sum of the counts.
    pub total: u64,
}

impl SparseInterval<'_> {
    /// The smallest recorded value v with at least `quantile` of the counts at or below it (the
    /// definition of `Histogram::value_at_quantile`); None for an empty interval.
    pub(crate) fn value_at_quantile(&self, quantile: f64) -> Option<u64> {
        if self.total == 0 {
            return None;
        }
        let wanted = ((quantile * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0;
        for &(value, count) in self.counts {
            seen += count;
            if seen >= wanted {
                return Some(value);
            }
        }
        self.counts.last().map(|&(v, _)| v)
    }

    /// The highest recorded value; None for an empty interval.
    pub fn max(&self) -> Option<u64> {
        self.counts.last().map(|&(v, _)| v)
    }

    /// A copy that owns its pairs (tests that keep what they scanned).
    #[cfg(test)]
    pub(crate) fn to_stored(&self) -> StoredInterval {
        StoredInterval {
            tag: self.tag.to_string(),
            start_s: self.start_s,
            length_s: self.length_s,
            counts: self.counts.to_vec(),
        }
    }
}

/// One interval kept in memory as its non-empty (value, count) pairs: a few KiB where a decoded
/// `Histogram` takes about 100 KiB.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredInterval {
    pub tag: String,
    /// Seconds from the log's base time (the run's first due time).
    pub start_s: f64,
    pub length_s: f64,
    /// (value, count) for each non-empty slot, values ascending (see [`SparseInterval`]).
    pub counts: Vec<(u64, u64)>,
}

/// Adds (value, count) pairs into a histogram of the crate's configuration.
pub(crate) fn add_counts(histogram: &mut Histogram<u64>, counts: &[(u64, u64)]) {
    for &(value, count) in counts {
        histogram
            .record_n(value, count)
            .expect("latency histograms resize automatically");
    }
}

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

/// Writes into `out` (cleared first) the (value, count) pairs of `a` and `b` added together,
/// both ascending: one linear merge, one pair per distinct value, the counts of a value in
/// both summed. The one merge of sparse histograms: a reader's cells (results/cells.rs) and the
/// bootstrap's resamples (analysis/quantile.rs).
pub(crate) fn merge_counts(a: &[(u64, u64)], b: &[(u64, u64)], out: &mut Vec<(u64, u64)>) {
    out.clear();
    out.reserve(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let ((va, ca), (vb, cb)) = (a[i], b[j]);
        if va < vb {
            out.push((va, ca));
            i += 1;
        } else if vb < va {
            out.push((vb, cb));
            j += 1;
        } else {
            out.push((va, ca + cb));
            i += 1;
            j += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
}

/// Adds (value, count) pairs into a histogram of the crate's configuration.
pub(crate) fn add_counts(histogram: &mut Histogram<u64>, counts: &[(u64, u64)]) {
    for &(value, count) in counts {
        histogram
            .record_n(value, count)
            .expect("latency histograms resize automatically");
    }
}

#[cfg(test)]
mod tests {
    use super::merge_counts;

    #[test]
    fn a_merge_sums_shared_values_and_keeps_the_order() {
        let mut out = vec![(99, 99)];
        merge_counts(
            &[(1, 2), (5, 1), (9, 4)],
            &[(0, 7), (5, 3), (10, 1)],
            &mut out,
        );
        assert_eq!(out, [(0, 7), (1, 2), (5, 4), (9, 4), (10, 1)]);
        merge_counts(&[], &[(3, 1)], &mut out);
        assert_eq!(out, [(3, 1)]);
        merge_counts(&[(3, 1), (4, 2)], &[], &mut out);
        assert_eq!(out, [(3, 1), (4, 2)]);
    }
}

//! The report's plots. Each kind has its own file with two steps kept apart: preparing plot
//! data (pure functions of a run's digest, unit-tested) and drawing it as SVG on the shared
//! [`chart::Frame`]. Every plot is a [`Figure`] with a stable name, which is its SVG id in
//! the HTML report and its file name under `--plots DIR`.

pub mod axis;
pub(crate) mod chart;
pub(crate) mod counter_labels;
pub(crate) mod counters_timeline;
pub mod exceedance;
pub(crate) mod heatmap;
pub mod histogram;
pub(crate) mod noise_timeline;
pub(crate) mod phase_pdf;
pub mod phases;
pub(crate) mod scatter;
pub mod sweep;
pub mod timeline;
pub mod zoom;

use chart::Style;

/// A finished plot.
#[derive(Debug, Clone)]
pub(crate) struct Figure {
    /// Stable name: the SVG's id and the file stem under --plots (e.g. `run1-histogram`).
    pub name: String,
    pub title: String,
    /// Sentences that read the plot for the reader (e.g. "99.9% of wakeups within 42.0 us").
    pub(crate) statements: Vec<String>,
    pub svg: String,
}

/// The Okabe-Ito palette (colour-blind safe), in the order series take it; yellow, which is
/// hard to see on white, comes last.
pub(crate) const PALETTE: &[&str] = &[
    "#0072B2", // blue
    "#D55E00", // vermillion
    "#009E73", // bluish green
    "#CC79A7", // reddish purple
    "#E69F00", // orange
    "#56B4E9", // sky blue
    "#000000", // black
    "#F0E442", // yellow
];

/// Dash patterns that tell series apart once the colours repeat (more than 8 series).
const DASHES: &[Option<&str>] = &[None, Some("7 3"), Some("2 2"), Some("9 3 2 3")];

/// The line style of the `index`-th series.
pub(crate) fn series_style(index: usize) -> Style {
    Style {
        colour: PALETTE[index % PALETTE.len()],
        dash: DASHES[(index / PALETTE.len()) % DASHES.len()],
        width: 1.8,
    }
}

/// One named distribution of latencies for the histogram and exceedance plots: one CPU of
/// one run, or every CPU of a run merged for overlays.
pub(crate) struct Distribution<'a> {
    pub(crate) label: String,
    pub(crate) histogram: &'a hdrhistogram::Histogram<u64>,
    /// The exact maximum from run.json when known (the histogram rounds up by < 0.1%).
    pub(crate) exact_max_ns: Option<i64>,
    /// Drawn dashed (timer IRQ latency next to wakeup latency).
    pub(crate) secondary: bool,
    /// Where an imported histogram's overflows begin, ns: a quantile at or above it is only a
    /// lower bound, never stated as "within" (ninth hostile re-run, X1).
    pub(crate) overflow_from_ns: Option<u64>,
}

/// Drops points that land on the same pixel as their neighbours without changing the line:
/// keeps the first and last point of each pixel column and its extremes.
pub(crate) fn thin_polyline(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(points.len().min(4096));
    let mut i = 0;
    while i < points.len() {
        let column = points[i].0.round();
        // A point with no position (NaN: a scale of no width) has no pixel column to share;
        // it is not drawn, and the scan below must move on from it.
        if !column.is_finite() || !points[i].1.is_finite() {
            i += 1;
            continue;
        }
        let mut j = i;
        let (mut lo, mut hi) = (i, i);
        while j < points.len() && points[j].0.round() == column {
            if points[j].1 < points[lo].1 {
                lo = j;
            }
            if points[j].1 > points[hi].1 {
                hi = j;
            }
            j += 1;
        }
        let mut keep = vec![i, lo, hi, j - 1];
        keep.sort_unstable();
        keep.dedup();
        out.extend(keep.into_iter().map(|k| points[k]));
        i = j;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinning_keeps_the_shape() {
        let pts: Vec<(f64, f64)> = (0..1000)
            .map(|i| (i as f64 / 100.0, (i % 7) as f64))
            .collect();
        let thin = thin_polyline(&pts);
        assert!(thin.len() <= 4 * 11, "{}", thin.len());
        assert_eq!(thin.first(), pts.first());
        assert_eq!(thin.last(), pts.last());
        assert!(thin.iter().any(|p| p.1 == 6.0) && thin.iter().any(|p| p.1 == 0.0));
    }

    #[test]
    fn thinning_skips_points_without_a_position() {
        // A scale of no width gives NaN positions: they used to underflow the scan (Z1).
        let pts = [
            (f64::NAN, 1.0),
            (1.0, 2.0),
            (f64::NAN, f64::NAN),
            (2.0, f64::NAN),
        ];
        assert_eq!(thin_polyline(&pts), vec![(1.0, 2.0)]);
        assert!(thin_polyline(&[(f64::NAN, 0.0)]).is_empty());
    }
}

//! The latency histogram: how many wakeups had each latency, one line per CPU (or per run in
//! an overlay), count on a log axis as OSADL and cyclictest's gnuplot scripts draw it. The
//! latency axis is logarithmic too, with bins of equal width on it (1/40 of a decade, 5.9%),
//! so that a body of tens of microseconds and a tail of milliseconds are both readable.

use super::axis::{Quantity, Scale, ScaleKind};
use super::chart::{Axis, Frame, LegendEntry};
use super::zoom::Range;
use super::{Distribution, Figure, series_style};
use crate::format::kind::Vocabulary;
use crate::units::format_ns;

pub(crate) const BINS_PER_DECADE: f64 = 40.0;

/// One distribution binned: (bin index, count) for the non-empty bins, ascending. Bin k covers
/// [10^(k/40), 10^((k+1)/40)) ns; a latency of 0 ns (an early wakeup) counts in bin 0.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Binned {
    pub(crate) label: String,
    pub(crate) bins: Vec<(i32, u64)>,
    pub(crate) total: u64,
    pub(crate) secondary: bool,
}

pub(crate) fn bin_edge_ns(k: i32) -> f64 {
    10f64.powf(k as f64 / BINS_PER_DECADE)
}

/// Bins each distribution.
pub(crate) fn prepare(distributions: &[Distribution]) -> Vec<Binned> {
    distributions
        .iter()
        .map(|d| {
            let mut bins: Vec<(i32, u64)> = Vec::new();
            for v in d.histogram.iter_recorded() {
                let value = v.value_iterated_to().max(1) as f64;
                let k = (value.log10() * BINS_PER_DECADE).floor() as i32;
                match bins.last_mut() {
                    Some((last, c)) if *last == k => *c += v.count_at_value(),
                    _ => bins.push((k, v.count_at_value())),
                }
            }
            Binned {
                label: d.label.clone(),
                bins,
                total: d.histogram.len(),
                secondary: d.secondary,
            }
        })
        .collect()
}

/// Draws the binned distributions.
/// The plot without a zoom: for the tests (the report draws every plot zoomed).
#[cfg(test)]
pub(crate) fn draw(name: &str, title: &str, binned: &[Binned], samples: Vocabulary) -> Figure {
    draw_zoomed(name, title, binned, samples, &Range::default(), &[])
}

/// Draws the binned distributions on the latency axis `latency` (`report --latency-range`);
/// `notes` say what it cut off (`zoom::distribution_notes`), on the plot and under it.
pub(crate) fn draw_zoomed(
    name: &str,
    title: &str,
    binned: &[Binned],
    samples: Vocabulary,
    latency: &Range,
    notes: &[String],
) -> Figure {
    draw_inner(name, title, binned, samples, latency, notes, false)
}

/// [`draw_zoomed`] with each bin the share of its distribution's wakeups (log axis), so that
/// runs of different lengths compare (the Cortex-A8 study's standard and RT kernels on one
/// graph).
pub(crate) fn draw_shares(
    name: &str,
    title: &str,
    binned: &[Binned],
    samples: Vocabulary,
    latency: &Range,
    notes: &[String],
) -> Figure {
    draw_inner(name, title, binned, samples, latency, notes, true)
}

fn draw_inner(
    name: &str,
    title: &str,
    binned: &[Binned],
    samples: Vocabulary,
    latency: &Range,
    notes: &[String],
    share: bool,
) -> Figure {
    // A bin's height: its count, or its share of its distribution's wakeups.
    let height = |b: &Binned, count: u64| match share {
        true => count as f64 / b.total.max(1) as f64,
        false => count as f64,
    };
    let lo = binned
        .iter()
        .filter_map(|b| b.bins.first())
        .map(|b| b.0)
        .min();
    let hi = binned
        .iter()
        .filter_map(|b| b.bins.last())
        .map(|b| b.0)
        .max();
    let max_count = binned
        .iter()
        .flat_map(|b| b.bins.iter().map(|x| x.1))
        .max()
        .unwrap_or(1);
    let (lo, hi) = (lo.unwrap_or(0), hi.unwrap_or(40));
    let x = Axis {
        scale: latency
            .apply(Scale::new(ScaleKind::Log, bin_edge_ns(lo), bin_edge_ns(hi + 1)).rounded_out()),
        quantity: Quantity::LatencyNs,
        title: format!("{} (log scale; bins of 1/40 decade)", samples.sample_value),
    };
    let smallest_share = binned
        .iter()
        .flat_map(|b| {
            b.bins
                .iter()
                .map(move |x| x.1 as f64 / b.total.max(1) as f64)
        })
        .fold(1.0f64, f64::min);
    let y = match share {
        // From half the smallest share, so that its bins stand clear of the axis.
        true => Axis {
            scale: Scale::new(
                ScaleKind::Log,
                10f64.powf((smallest_share / 2.0).log10().floor()),
                1.0,
            ),
            quantity: Quantity::Fraction,
            title: format!("share of the run's {} per bin (log scale)", samples.plural),
        },
        // From half a wakeup, so that bins of one wakeup stand clear of the axis.
        false => Axis {
            scale: Scale::new(
                ScaleKind::Log,
                0.5,
                10f64.powf((max_count as f64 * 2.0).log10().ceil()),
            ),
            quantity: Quantity::Count,
            title: format!("{} per bin (log scale)", samples.plural),
        },
    };
    let legend: Vec<LegendEntry> = binned
        .iter()
        .enumerate()
        .map(|(i, b)| LegendEntry {
            label: b.label.clone(),
            style: style_of(i, b),
            filled: false,
        })
        .collect();
    let mut frame = Frame::begin(name, title, x, y, &legend);
    let bottom = frame.area.3 + 2.0;
    for (i, b) in binned.iter().enumerate() {
        let mut points = Vec::with_capacity(b.bins.len() * 4);
        let mut previous: Option<i32> = None;
        for &(k, count) in &b.bins {
            let x0 = frame.x.scale.px(bin_edge_ns(k));
            let x1 = frame.x.scale.px(bin_edge_ns(k + 1));
            let y = frame.y.scale.px(height(b, count));
            if previous != Some(k - 1) {
                // Empty bins before this one: the line runs along the bottom.
                points.push((x0, bottom));
            }
            points.push((x0, y));
            points.push((x1, y));
            if b.bins.last().map(|l| l.0) == Some(k) || !b.bins.iter().any(|o| o.0 == k + 1) {
                points.push((x1, bottom));
            }
            previous = Some(k);
        }
        frame.svg.group(&format!(
            r#"class="series" data-label="{}""#,
            crate::report::svg::escape(&b.label)
        ));
        frame.svg.polyline(&points, &style_of(i, b).stroke());
        frame.svg.end_group();
    }
    super::zoom::draw_notes(&mut frame, notes);
    let statements = binned
        .iter()
        .filter(|b| !b.bins.is_empty())
        .map(|b| {
            let (mode_bin, most) = b.bins.iter().max_by_key(|x| x.1).copied().unwrap_or((0, 0));
            format!(
                "{}: {} {}; the fullest bin is {} to {}{}",
                b.label,
                b.total,
                samples.plural,
                format_ns(bin_edge_ns(mode_bin).round() as u64),
                format_ns(bin_edge_ns(mode_bin + 1).round() as u64),
                match share {
                    true => format!(", {:.1}% of them", 100.0 * height(b, most)),
                    false => String::new(),
                }
            )
        })
        .chain(notes.iter().cloned())
        .collect();
    Figure {
        name: name.into(),
        title: title.into(),
        statements,
        svg: frame.finish(),
    }
}

fn style_of(i: usize, b: &Binned) -> super::chart::Style {
    let mut s = series_style(i);
    if b.secondary {
        s.dash = Some("5 3");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::stats::new_histogram;

    #[test]
    fn bins_on_a_log_grid() {
        let mut h = new_histogram();
        h.record_n(10_000, 90).unwrap(); // 10^4 exactly: bin 160
        h.record_n(10_500, 5).unwrap(); // log10 = 4.0212: bin 160
        h.record_n(1_000_000, 5).unwrap(); // bin 240
        let b = prepare(&[Distribution {
            label: "CPU 0".into(),
            histogram: &h,
            exact_max_ns: None,
            secondary: false,
            overflow_from_ns: None,
        }]);
        assert_eq!(b[0].bins, vec![(160, 95), (240, 5)]);
        assert_eq!(b[0].total, 100);
        let f = draw(
            "run1-histogram",
            "Latency histogram",
            &b,
            *crate::format::run_record::RunKind::Latency.words(),
        );
        assert!(f.svg.contains(r#"id="run1-histogram""#));
        assert!(f.svg.contains("<polyline"));
        assert!(
            f.statements[0].contains("100 wakeups"),
            "{:?}",
            f.statements
        );
    }
}

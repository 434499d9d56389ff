//! The exceedance curve: for each latency x, the fraction of wakeups later than x, both axes
//! logarithmic. A budget reads straight off it ("how often is a wakeup later than 100 us?"),
//! and so do the statements under it: "99.9% of wakeups within 42.0 us".

use super::axis::{Quantity, Scale, ScaleKind};
use super::chart::{Axis, Frame, LegendEntry};
use super::zoom::Range;
use super::{Distribution, Figure, series_style, thin_polyline};
use crate::format::kind::Vocabulary;
use crate::report::svg::escape;
use crate::units::format_ns;

/// The quantiles stated under the plot, when the run has enough wakeups to show them (at
/// least 1/(1-q): a p99.999 from 1000 samples would only be the maximum again).
pub(crate) const STATED_QUANTILES: &[(f64, &str)] = &[
    (0.99, "99%"),
    (0.999, "99.9%"),
    (0.9999, "99.99%"),
    (0.99999, "99.999%"),
];

/// One curve: steps (x, fraction later than x) for x from the smallest latency on, and the
/// marked quantiles.
#[derive(Debug, Clone)]
pub(crate) struct Curve {
    pub(crate) label: String,
    pub(crate) total: u64,
    /// (latency ns, fraction of wakeups later than any x in [previous latency, this latency)).
    pub(crate) steps: Vec<(f64, f64)>,
    /// (share, its label, latency within which that share of wakeups came).
    pub(crate) marks: Vec<(f64, &'static str, u64)>,
    /// The largest latency (exact from run.json when known), ns.
    pub(crate) max_ns: Option<i64>,
    pub(crate) secondary: bool,
    /// The stated shares whose quantile lies among an imported histogram's overflows, and
    /// where those begin (ns): said as unknown above it, not marked.
    pub(crate) bounded: (Vec<&'static str>, Option<u64>),
}

/// The exceedance curve of each distribution.
pub(crate) fn prepare(distributions: &[Distribution]) -> Vec<Curve> {
    distributions
        .iter()
        .map(|d| {
            let n = d.histogram.len();
            let mut steps = Vec::new();
            let mut below = 0u64;
            for v in d.histogram.iter_recorded() {
                // For x in [previous value, this value): later than x = this value and above.
                steps.push((
                    v.value_iterated_to().max(1) as f64,
                    (n - below) as f64 / n as f64,
                ));
                below += v.count_at_value();
            }
            let is_bound = |v: u64| d.overflow_from_ns.is_some_and(|from| v >= from);
            let (marks, bounded): (Vec<_>, Vec<_>) = STATED_QUANTILES
                .iter()
                .filter(|(q, _)| n as f64 >= 1.0 / (1.0 - q) - 1e-6)
                .map(|&(q, text)| (q, text, d.histogram.value_at_quantile(q)))
                .partition(|&(_, _, v)| !is_bound(v));
            Curve {
                label: d.label.clone(),
                total: n,
                steps,
                marks,
                max_ns: d
                    .exact_max_ns
                    .or_else(|| (n > 0).then(|| d.histogram.max() as i64)),
                secondary: d.secondary,
                bounded: (
                    bounded.into_iter().map(|(_, text, _)| text).collect(),
                    d.overflow_from_ns,
                ),
            }
        })
        .collect()
}

/// The sentences under the plot, one per curve.
pub(crate) fn statements(curves: &[Curve], samples: Vocabulary) -> Vec<String> {
    curves
        .iter()
        .filter(|c| c.total > 0)
        .map(|c| {
            let mut parts: Vec<String> = c
                .marks
                .iter()
                .map(|(_, share, v)| {
                    format!("{share} of {} within {}", samples.plural, format_ns(*v))
                })
                .collect();
            if let (shares @ [_, ..], Some(from)) = (&c.bounded.0[..], c.bounded.1) {
                parts.push(format!(
                    "{} of {}: not known, among the imported histogram's overflows (at or above {})",
                    shares.join(", "),
                    samples.plural,
                    format_ns(from)
                ));
            }
            if let Some(max) = c.max_ns {
                parts.push(format!(
                    "all {} within {}",
                    c.total,
                    if max < 0 {
                        format!("-{}", format_ns(max.unsigned_abs()))
                    } else {
                        format_ns(max as u64)
                    }
                ));
            }
            format!("{}: {}", c.label, parts.join("; "))
        })
        .collect()
}

/// The plot without a zoom: for the tests (the report draws every plot zoomed).
#[cfg(test)]
pub(crate) fn draw(name: &str, title: &str, curves: &[Curve], samples: Vocabulary) -> Figure {
    draw_zoomed(name, title, curves, samples, &Range::default(), &[])
}

/// Draws the curves on the latency axis `latency` (`report --latency-range`); `notes` say
/// what it cut off (`zoom::distribution_notes`), on the plot and under it.
pub(crate) fn draw_zoomed(
    name: &str,
    title: &str,
    curves: &[Curve],
    samples: Vocabulary,
    latency: &Range,
    notes: &[String],
) -> Figure {
    let lo = curves
        .iter()
        .filter_map(|c| c.steps.first())
        .map(|s| s.0)
        .fold(f64::INFINITY, f64::min);
    let hi = curves
        .iter()
        .filter_map(|c| c.steps.last())
        .map(|s| s.0)
        .fold(0.0, f64::max);
    let n_max = curves.iter().map(|c| c.total).max().unwrap_or(1).max(1);
    let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (1e3, 1e6) };
    let x = Axis {
        scale: latency.apply(Scale::new(ScaleKind::Log, lo, hi).rounded_out()),
        quantity: Quantity::LatencyNs,
        title: format!("{} x (log scale)", samples.value),
    };
    let y = Axis {
        scale: Scale::new(ScaleKind::Log, 0.5 / n_max as f64, 1.0).rounded_out(),
        quantity: Quantity::Fraction,
        title: format!("{} {} than x (log scale)", samples.plural, samples.exceeds),
    };
    let legend: Vec<LegendEntry> = curves
        .iter()
        .enumerate()
        .map(|(i, c)| LegendEntry {
            label: c.label.clone(),
            style: style_of(i, c),
            filled: false,
        })
        .collect();
    let mut frame = Frame::begin(name, title, x, y, &legend);
    for (i, c) in curves.iter().enumerate() {
        let style = style_of(i, c);
        let mut points = Vec::with_capacity(c.steps.len() * 2);
        let mut from = frame.x.scale.px(c.steps.first().map_or(lo, |s| s.0));
        for &(v, fraction) in &c.steps {
            let x = frame.x.scale.px(v);
            let y = frame.y.scale.px(fraction);
            points.push((from, y));
            points.push((x, y));
            from = x;
        }
        // Past the largest latency no wakeup is later: the curve drops out of the plot.
        if let Some(&(v, _)) = c.steps.last() {
            let x = frame.x.scale.px(v);
            points.push((x, frame.area.3 + 2.0));
        }
        frame.svg.group(&format!(
            r#"class="series" data-label="{}""#,
            escape(&c.label)
        ));
        frame.svg.polyline(&thin_polyline(&points), &style.stroke());
        for &(q, share, v) in &c.marks {
            let tip = format!(
                "{}: {share} of {} within {}",
                c.label,
                samples.plural,
                format_ns(v)
            );
            frame.svg.circle(
                frame.x.scale.px(v as f64),
                frame.y.scale.px(1.0 - q),
                4.0,
                &format!(
                    r#"fill="white" stroke="{}" stroke-width="1.5""#,
                    style.colour
                ),
                Some(&tip),
            );
        }
        frame.svg.end_group();
    }
    super::zoom::draw_notes(&mut frame, notes);
    let mut statements = statements(curves, samples);
    statements.extend(notes.iter().cloned());
    Figure {
        name: name.into(),
        title: title.into(),
        statements,
        svg: frame.finish(),
    }
}

fn style_of(i: usize, c: &Curve) -> super::chart::Style {
    let mut s = series_style(i);
    if c.secondary {
        s.dash = Some("5 3");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::stats::new_histogram;

    #[test]
    fn fractions_and_statements() {
        let mut h = new_histogram();
        h.record_n(10_000, 9_990).unwrap();
        h.record_n(50_000, 9).unwrap();
        h.record_n(2_000_000, 1).unwrap();
        let curves = prepare(&[Distribution {
            label: "CPU 0".into(),
            histogram: &h,
            exact_max_ns: Some(2_000_100),
            secondary: false,
            overflow_from_ns: None,
        }]);
        let c = &curves[0];
        assert_eq!(c.steps.len(), 3);
        assert_eq!(c.steps[0].1, 1.0);
        assert!((c.steps[1].1 - 10.0 / 10_000.0).abs() < 1e-12);
        assert!((c.steps[2].1 - 1.0 / 10_000.0).abs() < 1e-12);
        // 10 000 wakeups state p99, p99.9 and p99.99, not p99.999.
        assert_eq!(c.marks.len(), 3);
        let s = statements(&curves, *crate::format::kind::RunKind::default().words());
        assert_eq!(
            s[0],
            "CPU 0: 99% of wakeups within 10.0 us; 99.9% of wakeups within 10.0 us; \
             99.99% of wakeups within 50.0 us; all 10000 within 2.00 ms"
        );
        let f = draw(
            "run1-exceedance",
            "Exceedance",
            &curves,
            *crate::format::run_record::RunKind::Latency.words(),
        );
        assert!(f.svg.contains("<circle"));
    }
}

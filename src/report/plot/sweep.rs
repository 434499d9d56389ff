//! A sweep's two views (as in the hackbench studies): each CPU's p99 and max latency (and timer
//! IRQ latency when traced) against the level, and the swept load's throughput against its
//! level; and both views of several sweeps overlaid ("with RT" vs "without RT"). The report
//! shows them in that order, latency first (`html::sweep::figures`). Levels that are all numbers are
//! placed at their values; otherwise at their positions 1, 2, 3...

use super::axis::{Quantity, Scale, ScaleKind};
use super::chart::{Axis, Frame, LegendEntry, Style};
use super::zoom::{Cut, Range, latency_end};
use super::{Figure, series_style};
use crate::format::throughput::{throughput_label, throughput_phrase};
use crate::report::svg::escape;
use crate::results::sweep::{SweepRecord, SweepRow, SweepThread};
use crate::units::format_ns;

/// A line of points (x, y) with its label.
#[derive(Debug, Clone)]
pub(crate) struct Line {
    pub label: String,
    pub(crate) points: Vec<(f64, f64)>,
    pub(crate) style: Style,
}

/// Where each level goes on the x axis, and the axis title.
pub(crate) fn level_positions(sweep: &SweepRecord) -> (Vec<f64>, String) {
    let numbers: Option<Vec<f64>> = sweep
        .rows
        .iter()
        .map(|r| r.level.trim().parse::<f64>().ok())
        .collect();
    match numbers {
        Some(n) => (n, format!("load level ({})", sweep.load_template)),
        None => (
            (1..=sweep.rows.len()).map(|i| i as f64).collect(),
            format!(
                "load level, by position ({})",
                sweep
                    .rows
                    .iter()
                    .enumerate()
                    .map(|(i, r)| format!("{}={}", i + 1, r.level))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
    }
}

/// One line per throughput figure (name and unit) found in the rows.
pub(crate) fn throughput_lines(sweep: &SweepRecord) -> Vec<(String, String, Line)> {
    let (xs, _) = level_positions(sweep);
    sweep
        .throughput_metrics()
        .into_iter()
        .enumerate()
        .map(|(i, (name, unit))| {
            let points = sweep
                .rows
                .iter()
                .zip(&xs)
                .filter_map(|(r, &x)| {
                    r.throughput
                        .iter()
                        .find(|t| t.name == name && t.unit == unit)
                        // A level without a value (no hackbench exchange finished) has no
                        // point, never a point at 0.
                        .and_then(|t| t.value)
                        .map(|v| (x, v))
                })
                .collect();
            (
                name.clone(),
                unit.clone(),
                Line {
                    label: throughput_label(&name, &unit),
                    points,
                    style: series_style(i),
                },
            )
        })
        .collect()
}

/// The latencies of one thread that the latency plots draw: name, dash, value in ns (at least
/// 1, for the log axis). The timer IRQ latency is there only for levels run with `--trace`.
type Pick = fn(&SweepThread) -> Option<f64>;
const LATENCY_FIGURES: [(&str, Option<&str>, Pick); 3] = [
    ("max", None, |t| t.max_ns.map(|v| v.max(1) as f64)),
    ("p99", Some("4 3"), |t| t.p99_ns.map(|v| v.max(1) as f64)),
    ("IRQ max", Some("1 3"), |t| {
        t.irq_max_ns.map(|v| v.max(1) as f64)
    }),
];

/// A line through the levels where `value` has a figure; None when it has none at any level.
fn line_over_levels(
    sweep: &SweepRecord,
    label: String,
    style: Style,
    value: impl Fn(&SweepRow) -> Option<f64>,
) -> Option<Line> {
    let (xs, _) = level_positions(sweep);
    let points: Vec<(f64, f64)> = sweep
        .rows
        .iter()
        .zip(&xs)
        .filter_map(|(r, &x)| value(r).map(|v| (x, v)))
        .collect();
    (!points.is_empty()).then_some(Line {
        label,
        points,
        style,
    })
}

/// Per CPU, a max line (solid), a p99 line (dashed) and, when traced, a timer IRQ max line
/// (dotted), in ns.
pub(crate) fn latency_lines(sweep: &SweepRecord) -> Vec<Line> {
    let mut cpus: Vec<usize> = sweep
        .rows
        .iter()
        .flat_map(|r| r.threads.iter().map(|t| t.cpu))
        .collect();
    cpus.sort_unstable();
    cpus.dedup();
    let mut out = Vec::new();
    for (i, &cpu) in cpus.iter().enumerate() {
        for (figure, dash, pick) in LATENCY_FIGURES {
            let mut style = series_style(i);
            style.dash = dash;
            out.extend(line_over_levels(
                sweep,
                format!("CPU {cpu} {figure}"),
                style,
                |r| r.threads.iter().find(|t| t.cpu == cpu).and_then(pick),
            ));
        }
    }
    out
}

/// For sweeps overlaid (e.g. "with RT" and "without RT"): per sweep, in its own colour, the
/// worst CPU's max (solid), p99 (dashed) and, when traced, timer IRQ max (dotted) per level.
pub(crate) fn overlay_latency_lines(sweeps: &[(String, &SweepRecord)]) -> Vec<Line> {
    let mut out = Vec::new();
    for (i, (label, sweep)) in sweeps.iter().enumerate() {
        for (figure, dash, pick) in LATENCY_FIGURES {
            let mut style = series_style(i);
            style.dash = dash;
            out.extend(line_over_levels(
                sweep,
                format!("{label} {figure}"),
                style,
                |r| r.threads.iter().filter_map(pick).reduce(f64::max),
            ));
        }
    }
    out
}

/// For sweeps overlaid: per throughput figure (name, unit) of any of them, one line per sweep
/// that has it.
pub(crate) fn overlay_throughput_lines(
    sweeps: &[(String, &SweepRecord)],
) -> Vec<(String, String, Vec<Line>)> {
    let mut metrics: Vec<(String, String)> = Vec::new();
    for m in sweeps.iter().flat_map(|(_, s)| s.throughput_metrics()) {
        if !metrics.contains(&m) {
            metrics.push(m);
        }
    }
    metrics
        .into_iter()
        .map(|(name, unit)| {
            let lines = sweeps
                .iter()
                .enumerate()
                .filter_map(|(i, (label, sweep))| {
                    line_over_levels(sweep, label.clone(), series_style(i), |r| {
                        r.throughput
                            .iter()
                            .find(|t| t.name == name && t.unit == unit)
                            .and_then(|t| t.value)
                    })
                })
                .collect();
            (name, unit, lines)
        })
        .collect()
}

/// The x-axis title of sweeps overlaid: their own titles, once each.
fn overlay_x_title(sweeps: &[(String, &SweepRecord)]) -> String {
    let mut titles: Vec<String> = Vec::new();
    for (_, s) in sweeps {
        let t = level_positions(s).1;
        if !titles.contains(&t) {
            titles.push(t);
        }
    }
    titles.join(" / ")
}

/// Draws lines with a dot at each level.
fn draw_lines(
    name: &str,
    title: &str,
    x_title: String,
    y: Axis,
    lines: &[Line],
    notes: &[String],
) -> String {
    let xs: Vec<f64> = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.0))
        .collect();
    let (lo, hi) = xs
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
            (a.min(x), b.max(x))
        });
    let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
    let pad = ((hi - lo) * 0.05).max(0.5);
    let x = Axis {
        scale: Scale::new(ScaleKind::Linear, lo - pad, hi + pad),
        quantity: Quantity::Plain(String::new()),
        title: x_title,
    };
    let legend: Vec<LegendEntry> = lines
        .iter()
        .map(|l| LegendEntry {
            label: l.label.clone(),
            style: l.style.clone(),
            filled: false,
        })
        .collect();
    let mut frame = Frame::begin(name, title, x, y, &legend);
    for l in lines {
        let pts: Vec<(f64, f64)> = l
            .points
            .iter()
            .map(|&(x, y)| (frame.x.scale.px(x), frame.y.scale.px(y)))
            .collect();
        frame.svg.group(&format!(
            r#"class="series" data-label="{}""#,
            escape(&l.label)
        ));
        frame.svg.polyline(&pts, &l.style.stroke());
        for (&(px, py), &(x, y)) in pts.iter().zip(&l.points) {
            frame.svg.circle(
                px,
                py,
                3.5,
                &format!(r#"fill="{}""#, l.style.colour),
                Some(&format!("{}: level {x}: {}", l.label, y)),
            );
        }
        frame.svg.end_group();
    }
    super::zoom::draw_notes(&mut frame, notes);
    frame.finish()
}

/// What `latency` (`report --latency-range`) cuts off each line: its levels whose figure lies
/// below FROM or above TO ("CPU 0 max: 2 levels above 1.00 ms not shown").
pub(crate) fn cut_notes(lines: &[Line], latency: &Range) -> Vec<String> {
    lines
        .iter()
        .filter_map(|l| {
            let mut cut = Cut::default();
            for &(_, y) in &l.points {
                cut.add(latency, y, 1);
            }
            cut.sentence(&l.label, "levels", latency, latency_end)
        })
        .collect()
}

/// The throughput plot of one figure (name, unit).
pub(crate) fn draw_throughput(
    name: &str,
    sweep: &SweepRecord,
    metric: &(String, String, Line),
) -> Figure {
    let (_, x_title) = level_positions(sweep);
    let (metric_name, unit, line) = metric;
    let top = line.points.iter().map(|p| p.1).fold(0.0, f64::max);
    let y = Axis {
        scale: Scale::new(
            ScaleKind::Linear,
            0.0,
            if top > 0.0 { top * 1.05 } else { 1.0 },
        )
        .rounded_out(),
        quantity: Quantity::Plain(unit.clone()),
        title: throughput_label(metric_name, unit),
    };
    let title = format!("Load throughput vs level: {metric_name}");
    let svg = draw_lines(name, &title, x_title, y, std::slice::from_ref(line), &[]);
    // Per level, from the rows (a level without a value has no point, so the points do not
    // line up with the rows).
    let statements = sweep
        .rows
        .iter()
        .filter_map(|r| {
            let t = r
                .throughput
                .iter()
                .find(|t| &t.name == metric_name && &t.unit == unit)?;
            Some(match t.value {
                Some(v) => format!(
                    "level {}: {}",
                    r.level,
                    throughput_phrase(metric_name, &rate(v), unit)
                ),
                None => format!(
                    "level {}: no {metric_name} ({}; not drawn)",
                    r.level,
                    t.no_value.as_deref().unwrap_or("the load reported none")
                ),
            })
        })
        .collect();
    Figure {
        name: name.into(),
        title,
        statements,
        svg,
    }
}

/// Counts as integers, rates with two decimals (as the terminal summary prints them).
fn rate(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v}")
    } else {
        format!("{v:.2}")
    }
}

/// The latency plot: p99 and max per CPU against the level, on the latency axis of `latency`
/// (`report --latency-range`), saying what it cut ([`cut_notes`]).
pub(crate) fn draw_latency(name: &str, sweep: &SweepRecord, latency: &Range) -> Figure {
    let (_, x_title) = level_positions(sweep);
    let lines = latency_lines(sweep);
    let traced = sweep.rows.iter().any(traced);
    let title = if traced {
        "Wakeup and timer IRQ latency vs load level: p99 and max per CPU"
    } else {
        "Wakeup latency vs load level: p99 and max per CPU"
    }
    .to_string();
    let notes = cut_notes(&lines, latency);
    let svg = draw_lines(
        name,
        &title,
        x_title,
        latency_axis(&lines, latency),
        &lines,
        &notes,
    );
    let statements = notes
        .into_iter()
        .chain(sweep.rows.iter().map(|r| level_statement("", r)))
        .collect();
    Figure {
        name: name.into(),
        title,
        statements,
        svg,
    }
}

/// Whether a level's run was traced (has timer IRQ latencies).
fn traced(row: &SweepRow) -> bool {
    row.threads.iter().any(|t| t.irq_max_ns.is_some())
}

/// The log-scale latency axis that holds every point of `lines`, or `latency`'s range.
fn latency_axis(lines: &[Line], latency: &Range) -> Axis {
    let ys = lines.iter().flat_map(|l| l.points.iter().map(|p| p.1));
    let (lo, hi) = ys.fold((f64::INFINITY, 0.0f64), |(a, b), y| (a.min(y), b.max(y)));
    let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (1e3, 1e6) };
    Axis {
        scale: latency.apply(Scale::new(ScaleKind::Log, lo, hi).rounded_out()),
        quantity: Quantity::LatencyNs,
        title: "latency (log scale)".into(),
    }
}

/// `level 8: worst p99 80.0 us, worst max 80.0 us[, worst IRQ max 12.0 us]`, after `prefix`.
fn level_statement(prefix: &str, r: &SweepRow) -> String {
    let worst = r.threads.iter().filter_map(|t| t.max_ns).max();
    let worst_p99 = r.threads.iter().filter_map(|t| t.p99_ns).max();
    let worst_irq = r.threads.iter().filter_map(|t| t.irq_max_ns).max();
    let signed = |v: i64| format_ns(v.max(0) as u64);
    let mut text = format!(
        "{prefix}level {}: worst p99 {}, worst max {}",
        r.level,
        worst_p99.map_or("-".into(), format_ns),
        worst.map_or("-".into(), signed)
    );
    if let Some(irq) = worst_irq {
        text += &format!(", worst IRQ max {}", signed(irq));
    }
    text
}

/// Sweeps overlaid ("with RT" vs "without RT", SH7780 Figs. 2-5): the worst CPU's latency of
/// each against the level.
pub(crate) fn draw_latency_overlay(
    name: &str,
    sweeps: &[(String, &SweepRecord)],
    latency: &Range,
) -> Figure {
    let lines = overlay_latency_lines(sweeps);
    let title = "Sweeps overlaid: worst CPU's latency vs load level".to_string();
    let notes = cut_notes(&lines, latency);
    let svg = draw_lines(
        name,
        &title,
        overlay_x_title(sweeps),
        latency_axis(&lines, latency),
        &lines,
        &notes,
    );
    let statements = notes
        .into_iter()
        .chain(sweeps.iter().flat_map(|(label, s)| {
            s.rows
                .iter()
                .map(move |r| level_statement(&format!("{label}: "), r))
        }))
        .collect();
    Figure {
        name: name.into(),
        title,
        statements,
        svg,
    }
}

/// Sweeps overlaid: one throughput figure (name, unit) of each against the level.
pub(crate) fn draw_throughput_overlay(
    name: &str,
    sweeps: &[(String, &SweepRecord)],
    metric: &(String, String, Vec<Line>),
) -> Figure {
    let (metric_name, unit, lines) = metric;
    let top = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    let y = Axis {
        scale: Scale::new(
            ScaleKind::Linear,
            0.0,
            if top > 0.0 { top * 1.05 } else { 1.0 },
        )
        .rounded_out(),
        quantity: Quantity::Plain(unit.clone()),
        title: throughput_label(metric_name, unit),
    };
    let title = format!("Sweeps overlaid: {metric_name} vs load level");
    let svg = draw_lines(name, &title, overlay_x_title(sweeps), y, lines, &[]);
    let statements = lines
        .iter()
        .flat_map(|l| {
            l.points.iter().map(move |p| {
                format!(
                    "{}: level {}: {}",
                    l.label,
                    p.0,
                    throughput_phrase(metric_name, &rate(p.1), unit)
                )
            })
        })
        .collect();
    Figure {
        name: name.into(),
        title,
        statements,
        svg,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sweep of CPU 0 over levels 1, 2, 4 with max 50 us, 500 us, 5 ms and p99 20 us, 40 us,
    /// 80 us.
    fn sweep() -> SweepRecord {
        let row = |level: &str, max_ns: i64, p99_ns: u64| SweepRow {
            level: level.into(),
            run_dir: format!("level-{level}"),
            throughput: Vec::new(),
            threads: vec![SweepThread {
                cpu: 0,
                samples: 1000,
                min_ns: Some(5_000),
                p99_ns: Some(p99_ns),
                max_ns: Some(max_ns),
                missed_periods: 0,
                dropped_records: 0,
                irq_p99_ns: None,
                irq_max_ns: None,
            }],
        };
        SweepRecord {
            format: 1,
            load_template: "cpu:workers={}".into(),
            levels: vec!["1".into(), "2".into(), "4".into()],
            load_only: false,
            rows: vec![
                row("1", 50_000, 20_000),
                row("2", 500_000, 40_000),
                row("4", 5_000_000, 80_000),
            ],
            warnings: Vec::new(),
            ended: None,
            end_reason: None,
        }
    }

    /// Issue 42: `report --latency-range` zooms the sweep's latency plot and says, per line,
    /// how many levels it cut.
    #[test]
    fn the_latency_range_zooms_the_sweep_and_says_what_it_cut() {
        let s = sweep();
        let zoom = Range {
            from: Some(30_000.0),
            to: Some(1_000_000.0),
        };
        let notes = cut_notes(&latency_lines(&s), &zoom);
        assert_eq!(
            notes,
            [
                "CPU 0 max: 1 levels above 1.00 ms not shown",
                "CPU 0 p99: 1 levels below 30.0 us not shown"
            ]
        );
        let f = draw_latency("sweep1-latency", &s, &zoom);
        assert!(
            f.svg
                .contains("CPU 0 max: 1 levels above 1.00 ms not shown")
        );
        assert_eq!(f.statements[..2], notes[..]);
        // Unzoomed: nothing cut, nothing said, the levels' statements only.
        let f = draw_latency("sweep1-latency", &s, &Range::default());
        assert_eq!(f.statements.len(), 3);
        assert!(!f.svg.contains("zoom-cut"));
    }
}

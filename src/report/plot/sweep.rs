//! A sweep's two views (as in the hackbench studies): the swept load's throughput against its
//! level, and each CPU's p99 and max latency against the level. Levels that are all numbers are
//! placed at their values; otherwise at their positions 1, 2, 3...

use super::axis::{Quantity, Scale, ScaleKind};
use super::chart::{Axis, Frame, LegendEntry, Style};
use super::{Figure, series_style};
use crate::report::svg::escape;
use crate::results::sweep::SweepRecord;
use crate::units::format_ns;

/// A line of points (x, y) with its label.
#[derive(Debug, Clone)]
pub struct Line {
    pub label: String,
    pub points: Vec<(f64, f64)>,
    pub style: Style,
}

/// Where each level goes on the x axis, and the axis title.
pub fn level_positions(sweep: &SweepRecord) -> (Vec<f64>, String) {
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
pub fn throughput_lines(sweep: &SweepRecord) -> Vec<(String, String, Line)> {
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
                        .map(|t| (x, t.value))
                })
                .collect();
            (
                name.clone(),
                unit.clone(),
                Line {
                    label: format!("{name} ({unit})"),
                    points,
                    style: series_style(i),
                },
            )
        })
        .collect()
}

/// Per CPU, a max line (solid) and a p99 line (dashed), in ns.
pub fn latency_lines(sweep: &SweepRecord) -> Vec<Line> {
    let (xs, _) = level_positions(sweep);
    let mut cpus: Vec<usize> = sweep
        .rows
        .iter()
        .flat_map(|r| r.threads.iter().map(|t| t.cpu))
        .collect();
    cpus.sort_unstable();
    cpus.dedup();
    let mut out = Vec::new();
    for (i, &cpu) in cpus.iter().enumerate() {
        let pick = |f: &dyn Fn(&crate::results::sweep::SweepThread) -> Option<f64>| {
            sweep
                .rows
                .iter()
                .zip(&xs)
                .filter_map(|(r, &x)| {
                    r.threads
                        .iter()
                        .find(|t| t.cpu == cpu)
                        .and_then(f)
                        .map(|v| (x, v))
                })
                .collect::<Vec<_>>()
        };
        out.push(Line {
            label: format!("CPU {cpu} max"),
            points: pick(&|t| t.max_ns.map(|v| v.max(1) as f64)),
            style: series_style(i),
        });
        let mut dashed = series_style(i);
        dashed.dash = Some("4 3");
        out.push(Line {
            label: format!("CPU {cpu} p99"),
            points: pick(&|t| t.p99_ns.map(|v| v.max(1) as f64)),
            style: dashed,
        });
    }
    out
}

/// Draws lines with a dot at each level.
fn draw_lines(name: &str, title: &str, x_title: String, y: Axis, lines: &[Line]) -> String {
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
    frame.finish()
}

/// The throughput plot of one figure (name, unit).
pub fn draw_throughput(name: &str, sweep: &SweepRecord, metric: &(String, String, Line)) -> Figure {
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
        title: format!("{metric_name} ({unit})"),
    };
    let title = format!("Load throughput vs level: {metric_name}");
    let svg = draw_lines(name, &title, x_title, y, std::slice::from_ref(line));
    let statements = line
        .points
        .iter()
        .zip(&sweep.rows)
        .map(|(p, r)| format!("level {}: {metric_name} {} {unit}", r.level, rate(p.1)))
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

/// The latency plot: p99 and max per CPU against the level.
pub fn draw_latency(name: &str, sweep: &SweepRecord) -> Figure {
    let (_, x_title) = level_positions(sweep);
    let lines = latency_lines(sweep);
    let ys = lines.iter().flat_map(|l| l.points.iter().map(|p| p.1));
    let (lo, hi) = ys.fold((f64::INFINITY, 0.0f64), |(a, b), y| (a.min(y), b.max(y)));
    let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (1e3, 1e6) };
    let y = Axis {
        scale: Scale::new(ScaleKind::Log, lo, hi).rounded_out(),
        quantity: Quantity::LatencyNs,
        title: "latency (log scale)".into(),
    };
    let title = "Wakeup latency vs load level: p99 and max per CPU".to_string();
    let svg = draw_lines(name, &title, x_title, y, &lines);
    let statements = sweep
        .rows
        .iter()
        .map(|r| {
            let worst = r.threads.iter().filter_map(|t| t.max_ns).max();
            let worst_p99 = r.threads.iter().filter_map(|t| t.p99_ns).max();
            format!(
                "level {}: worst p99 {}, worst max {}",
                r.level,
                worst_p99.map_or("-".into(), format_ns),
                worst.map_or("-".into(), |v| format_ns(v.max(0) as u64))
            )
        })
        .collect();
    Figure {
        name: name.into(),
        title,
        statements,
        svg,
    }
}

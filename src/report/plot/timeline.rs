//! Latency over time: per interval the largest and the 99th-percentile latency of each CPU,
//! with the scenario's load phases shaded and labelled and explained spikes marked. A long run
//! has more intervals than the plot has pixels: each pixel column then shows the largest
//! per-interval max and the largest per-interval p99 among the intervals it covers, so no
//! spike is averaged away.

use super::axis::{Quantity, Scale, ScaleKind, time_unit};
use super::chart::{Axis, Frame, LegendEntry, Style};
use super::{Figure, series_style};
use crate::report::digest::SeriesDigest;
use crate::report::svg::{Anchor, escape};
use crate::units::format_ns;

/// Columns of the plot area (about one per pixel).
pub const COLUMNS: usize = 800;

/// One CPU's curves: per column (max, p99) in ns, None where no interval falls.
#[derive(Debug, Clone)]
pub struct Track {
    pub label: String,
    pub columns: Vec<Option<(u64, u64)>>,
    /// The worst interval: (start s, max ns).
    pub worst: Option<(f64, u64)>,
}

/// A marked late wakeup (from a `--trace` explanation).
#[derive(Debug, Clone)]
pub struct Marker {
    pub time_s: f64,
    pub latency_ns: u64,
    pub cpu: usize,
    pub text: String,
}

#[derive(Debug, Clone)]
pub struct Timeline {
    pub extent_s: f64,
    pub tracks: Vec<Track>,
    pub phases: Vec<(String, f64, f64)>,
    pub markers: Vec<Marker>,
    /// Seconds of run per column.
    pub column_s: f64,
}

/// Reduces each series' intervals to `COLUMNS` columns over [0, extent_s].
pub fn prepare(
    series: &[&SeriesDigest],
    extent_s: f64,
    phases: Vec<(String, f64, f64)>,
    markers: Vec<Marker>,
) -> Timeline {
    let extent_s = if extent_s > 0.0 { extent_s } else { 1.0 };
    let column_s = extent_s / COLUMNS as f64;
    let tracks = series
        .iter()
        .map(|s| {
            let mut columns: Vec<Option<(u64, u64)>> = vec![None; COLUMNS];
            let mut worst: Option<(f64, u64)> = None;
            for p in &s.intervals {
                let (Some(max), Some(p99)) = (p.max_ns, p.p99_ns) else {
                    continue;
                };
                let mid = p.start_s + p.length_s / 2.0;
                let c = ((mid / column_s) as usize).min(COLUMNS - 1);
                let cell = columns[c].get_or_insert((0, 0));
                cell.0 = cell.0.max(max);
                cell.1 = cell.1.max(p99);
                if worst.is_none_or(|w| max > w.1) {
                    worst = Some((p.start_s, max));
                }
            }
            Track {
                label: s.label.clone(),
                columns,
                worst,
            }
        })
        .collect();
    Timeline {
        extent_s,
        tracks,
        phases,
        markers,
        column_s,
    }
}

/// Phase bands alternate these fills.
const PHASE_FILLS: &[&str] = &["#e8eef7", "#f6eedf"];

pub fn draw(name: &str, title: &str, t: &Timeline) -> Figure {
    let values = t
        .tracks
        .iter()
        .flat_map(|tr| tr.columns.iter().flatten().flat_map(|&(a, b)| [a, b]));
    let (lo, hi) = values.fold((u64::MAX, 0u64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (lo, hi) = if hi == 0 {
        (1_000, 1_000_000)
    } else {
        (lo.max(1), hi)
    };
    let (_, unit) = time_unit(t.extent_s);
    let x = Axis {
        scale: Scale::new(ScaleKind::Linear, 0.0, t.extent_s),
        quantity: Quantity::TimeS,
        title: format!("time since the start ({unit})"),
    };
    let y = Axis {
        scale: Scale::new(ScaleKind::Log, lo as f64, hi as f64).rounded_out(),
        quantity: Quantity::LatencyNs,
        title: "latency per interval (log scale)".into(),
    };
    let mut legend = Vec::new();
    for (i, tr) in t.tracks.iter().enumerate() {
        legend.push(LegendEntry {
            label: format!("{} max", tr.label),
            style: max_style(i),
            filled: false,
        });
        legend.push(LegendEntry {
            label: format!("{} p99", tr.label),
            style: p99_style(i),
            filled: false,
        });
    }
    if !t.markers.is_empty() {
        legend.push(LegendEntry {
            label: "explained spike".into(),
            style: Style {
                colour: "#000000",
                dash: None,
                width: 1.5,
            },
            filled: true,
        });
    }
    let mut frame = Frame::begin(name, title, x, y, &legend);
    let (left, top, _, bottom) = frame.area;
    frame.svg.group(r#"class="phases""#);
    for (k, (label, from, to)) in t.phases.iter().enumerate() {
        let x0 = frame.x.scale.px(*from).max(left);
        let x1 = frame.x.scale.px(*to);
        frame.svg.rect_titled(
            x0,
            top,
            x1 - x0,
            bottom - top,
            &format!(r#"fill="{}""#, PHASE_FILLS[k % PHASE_FILLS.len()]),
            &format!(
                "phase {label}: {} to {}",
                crate::units::format_elapsed((from * 1e9) as u64),
                crate::units::format_elapsed((to * 1e9) as u64)
            ),
        );
        frame.svg.line(
            x0,
            top,
            x0,
            bottom,
            r##"stroke="#8a8a8a" stroke-dasharray="3 3""##,
        );
        frame.svg.text(
            x0 + 4.0,
            top + 14.0,
            Anchor::Start,
            r##"class="phase-label" font-size="12" fill="#333""##,
            label,
        );
    }
    frame.svg.end_group();
    let col_px = (frame.area.2 - frame.area.0) / COLUMNS as f64;
    for (i, tr) in t.tracks.iter().enumerate() {
        frame.svg.group(&format!(
            r#"class="series" data-label="{}""#,
            escape(&tr.label)
        ));
        for (pick, style) in [(0usize, p99_style(i)), (1, max_style(i))] {
            // Lines break where no interval falls (a gap in the log).
            let mut run: Vec<(f64, f64)> = Vec::new();
            for (c, cell) in tr.columns.iter().enumerate() {
                match cell {
                    Some((max, p99)) => {
                        let v = if pick == 1 { *max } else { *p99 };
                        run.push((left + (c as f64 + 0.5) * col_px, frame.y.scale.px(v as f64)));
                    }
                    None => {
                        flush(&mut frame, &mut run, &style);
                    }
                }
            }
            flush(&mut frame, &mut run, &style);
        }
        frame.svg.end_group();
    }
    frame.svg.group(r#"class="markers""#);
    for m in &t.markers {
        frame.svg.circle(
            frame.x.scale.px(m.time_s),
            frame.y.scale.px(m.latency_ns as f64),
            4.5,
            r##"fill="none" stroke="#000" stroke-width="1.5""##,
            Some(&m.text),
        );
    }
    frame.svg.end_group();
    let mut statements = vec![if t.column_s >= 1.0 {
        format!(
            "Each point covers {} of the run: the largest max and the largest p99 of the intervals in it.",
            crate::units::format_elapsed((t.column_s * 1e9) as u64)
        )
    } else {
        "One point per interval: its max and its p99.".to_string()
    }];
    for tr in &t.tracks {
        if let Some((at, max)) = tr.worst {
            statements.push(format!(
                "{}: worst interval at {} after the start, max {}",
                tr.label,
                crate::units::format_elapsed((at * 1e9) as u64),
                format_ns(max)
            ));
        }
    }
    Figure {
        name: name.into(),
        title: title.into(),
        statements,
        svg: frame.finish(),
    }
}

fn flush(frame: &mut Frame, run: &mut Vec<(f64, f64)>, style: &Style) {
    if run.len() == 1 {
        let (x, y) = run[0];
        frame
            .svg
            .circle(x, y, 1.5, &format!(r#"fill="{}""#, style.colour), None);
    } else {
        frame.svg.polyline(run, &style.stroke());
    }
    run.clear();
}

fn max_style(i: usize) -> Style {
    series_style(i)
}

fn p99_style(i: usize) -> Style {
    let mut s = series_style(i);
    s.dash = Some("4 3");
    s.width = 1.2;
    s
}

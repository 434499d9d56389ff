//! Latency over time: per interval the largest and the 99th-percentile latency of each CPU
//! (and the timer IRQ latency's largest when the run was traced), drawn as lines, with the
//! scenario's load phases shaded and labelled and explained spikes marked. A run with no more
//! intervals (time cells, `report::digest`) than the plot has columns gets one point per
//! interval; a longer run gets one point per column of whole cells holding the largest
//! per-interval max and the largest per-interval p99 among the intervals it covers, so no spike
//! is averaged away. Lines break only where the log has a gap.

use super::axis::{Quantity, Scale, ScaleKind, time_unit};
use super::chart::{Axis, Frame, LegendEntry, Style};
use super::zoom::{Cut, Zoom, latency_end};
use super::{Figure, phases, series_style};
use crate::format::kind::Vocabulary;
use crate::report::digest::SeriesDigest;
use crate::report::svg::escape;
use crate::units::format_ns;

/// Columns of the plot area (about one per pixel): the most points a line gets.
pub(crate) const COLUMNS: usize = 800;

/// One point of a line: an interval, or the intervals of one column.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Point {
    /// The middle of the interval (of the column for a column's intervals), s from the start.
    pub(crate) time_s: f64,
    pub max_ns: u64,
    pub p99_ns: u64,
    /// The log has a gap before this point: the line breaks here.
    pub(crate) after_gap: bool,
}

/// One series' curves.
#[derive(Debug, Clone)]
pub(crate) struct Track {
    pub label: String,
    /// Timer IRQ latency (drawn dotted, max only) rather than wakeup latency.
    pub irq: bool,
    /// The CPU's index among the wakeup series: the colour it shares with its IRQ series.
    pub(crate) style_index: usize,
    pub(crate) points: Vec<Point>,
    /// The worst interval: (start s, max ns).
    pub worst: Option<(f64, u64)>,
}

/// A marked late wakeup (from a `--trace` explanation).
#[derive(Debug, Clone)]
pub(crate) struct Marker {
    pub(crate) time_s: f64,
    pub(crate) latency_ns: u64,
    pub(crate) text: String,
}

#[derive(Debug, Clone)]
pub(crate) struct Timeline {
    pub(crate) extent_s: f64,
    pub(crate) tracks: Vec<Track>,
    pub(crate) phases: Vec<(String, f64, f64)>,
    pub(crate) markers: Vec<Marker>,
    /// The explanations of the run when the markers are only the worst of them
    /// (`report::events_digest::MAX_EXPLANATIONS_KEPT`): the legend says "of N".
    pub(crate) markers_of: Option<u64>,
    /// Seconds of run per point when intervals were merged into columns; None: one point per
    /// interval.
    pub(crate) column_s: Option<f64>,
}

/// Reduces each series' intervals to at most `COLUMNS` points over [0, extent_s]. `series`
/// holds the wakeup series and, when traced, the timer IRQ series.
pub(crate) fn prepare(
    series: &[&SeriesDigest],
    extent_s: f64,
    phases: Vec<(String, f64, f64)>,
    markers: Vec<Marker>,
) -> Timeline {
    let extent_s = if extent_s > 0.0 { extent_s } else { 1.0 };
    let most = series.iter().map(|s| s.intervals.len()).max().unwrap_or(0);
    // Columns of whole cells (the series share one grid): each cell's intervals in one column.
    let grid = series.first().map(|s| s.grid);
    let per_column = grid.map_or(1, |g| g.cells_per_column(COLUMNS));
    let column_s = grid
        .filter(|_| most > COLUMNS)
        .map(|g| g.cell_s * per_column as f64);
    let wakeup_cpus: Vec<Option<usize>> = series.iter().filter(|s| !s.irq).map(|s| s.cpu).collect();
    let tracks = series
        .iter()
        .enumerate()
        .map(|(i, s)| {
            // An IRQ series takes the colour of its CPU's wakeup series.
            let style_index = wakeup_cpus.iter().position(|&c| c == s.cpu).unwrap_or(i);
            let mut points: Vec<Point> = Vec::new();
            let mut worst: Option<(f64, u64)> = None;
            let mut last_column = usize::MAX;
            let mut previous_end: Option<f64> = None;
            for p in &s.intervals {
                let (Some(max), Some(p99)) = (p.max_ns, p.p99_ns) else {
                    continue;
                };
                // A gap: this interval starts more than half an interval after the last ended.
                let after_gap = previous_end.is_some_and(|end| p.start_s > end + p.length_s / 2.0);
                previous_end = Some(p.start_s + p.length_s);
                if worst.is_none_or(|w| max > w.1) {
                    worst = Some((p.start_s, max));
                }
                let mid = p.start_s + p.length_s / 2.0;
                match column_s {
                    None => points.push(Point {
                        time_s: mid,
                        max_ns: max,
                        p99_ns: p99,
                        after_gap,
                    }),
                    Some(w) => {
                        let c = p.cell / per_column;
                        match points.last_mut() {
                            Some(last) if c == last_column => {
                                last.max_ns = last.max_ns.max(max);
                                last.p99_ns = last.p99_ns.max(p99);
                            }
                            _ => points.push(Point {
                                time_s: (c as f64 + 0.5) * w,
                                max_ns: max,
                                p99_ns: p99,
                                after_gap,
                            }),
                        }
                        last_column = c;
                    }
                }
            }
            Track {
                label: s.label.clone(),
                irq: s.irq,
                style_index,
                points,
                worst,
            }
        })
        .collect();
    Timeline {
        extent_s,
        tracks,
        phases,
        markers,
        markers_of: None,
        column_s,
    }
}

/// The plot without a zoom: for the tests (the report draws every plot zoomed).
#[cfg(test)]
pub(crate) fn draw(name: &str, title: &str, t: &Timeline, samples: Vocabulary) -> Figure {
    draw_zoomed(name, title, t, samples, &Zoom::default())
}

/// Draws the timeline on the time axis and the latency axis of `zoom` (`report --time-range`,
/// `--latency-range`), saying on the plot and under it how many points each cut off: the
/// points outside the time range, then per track the points in it whose max is beyond the
/// latency range. The latency axis fits the points in the time range.
pub(crate) fn draw_zoomed(
    name: &str,
    title: &str,
    t: &Timeline,
    samples: Vocabulary,
    zoom: &Zoom,
) -> Figure {
    let in_time = |p: &&Point| zoom.time.place(p.time_s) == std::cmp::Ordering::Equal;
    let values = t.tracks.iter().flat_map(|tr| {
        tr.points
            .iter()
            .filter(in_time)
            .flat_map(|p| [p.max_ns, p.p99_ns])
    });
    let (lo, hi) = values.fold((u64::MAX, 0u64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (lo, hi) = if hi == 0 {
        (1_000, 1_000_000)
    } else {
        (lo.max(1), hi)
    };
    let (_, unit) = time_unit(t.extent_s);
    let x = Axis {
        scale: zoom
            .time
            .apply(Scale::new(ScaleKind::Linear, 0.0, t.extent_s)),
        quantity: Quantity::TimeS,
        title: format!("time since the start ({unit})"),
    };
    let y = Axis {
        scale: zoom
            .latency
            .apply(Scale::new(ScaleKind::Log, lo as f64, hi as f64).rounded_out()),
        quantity: Quantity::LatencyNs,
        title: format!("{} per interval (log scale)", samples.value),
    };
    let mut legend = Vec::new();
    for tr in &t.tracks {
        for (kind, style) in lines_of(tr) {
            legend.push(LegendEntry {
                label: format!("{} {kind}", tr.label),
                style,
                filled: false,
            });
        }
    }
    if !t.markers.is_empty() {
        legend.push(LegendEntry {
            label: match t.markers_of {
                Some(all) => format!("explained spike (the worst {} of {all})", t.markers.len()),
                None => "explained spike".into(),
            },
            style: Style {
                colour: "#000000",
                dash: None,
                width: 1.5,
            },
            filled: true,
        });
    }
    let mut frame = Frame::begin(name, title, x, y, &legend);
    phases::draw_bands(&mut frame, &t.phases);
    for tr in &t.tracks {
        frame.svg.group(&format!(
            r#"class="series" data-label="{}""#,
            escape(&tr.label)
        ));
        for (kind, style) in lines_of(tr) {
            let mut run: Vec<(f64, f64)> = Vec::new();
            for p in &tr.points {
                if p.after_gap {
                    flush(&mut frame, &mut run, &style, kind);
                }
                let v = if kind == "p99" { p.p99_ns } else { p.max_ns };
                run.push((frame.x.scale.px(p.time_s), frame.y.scale.px(v as f64)));
            }
            flush(&mut frame, &mut run, &style, kind);
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
    phases::draw_labels(&mut frame, &t.phases);
    let notes = cut_notes(t, zoom);
    super::zoom::draw_notes(&mut frame, &notes);
    let mut statements = statements(t);
    statements.extend(notes);
    Figure {
        name: name.into(),
        title: title.into(),
        statements,
        svg: frame.finish(),
    }
}

/// What a zoom cut off the timeline, counted on its points: those outside the time range
/// (the track with the most points; every track has a point per interval or column it has
/// data for), then per track the points in the time range whose max is above (or below) the
/// latency range.
fn cut_notes(t: &Timeline, zoom: &Zoom) -> Vec<String> {
    let what = match t.column_s {
        None => "intervals",
        Some(_) => "points",
    };
    let mut notes = Vec::new();
    if let Some(most) = t.tracks.iter().max_by_key(|tr| tr.points.len()) {
        let mut cut = Cut::default();
        for p in &most.points {
            cut.add(&zoom.time, p.time_s, 1);
        }
        notes.extend(cut.time_sentence("time axis", what, &zoom.time));
    }
    let maxima = match t.column_s {
        None => "interval maxima",
        Some(_) => "point maxima",
    };
    for tr in &t.tracks {
        let mut cut = Cut::default();
        for p in &tr.points {
            if zoom.time.place(p.time_s) == std::cmp::Ordering::Equal {
                cut.add(&zoom.latency, p.max_ns as f64, 1);
            }
        }
        notes.extend(cut.sentence(&tr.label, maxima, &zoom.latency, latency_end));
    }
    notes
}

/// What the timeline says in words: what a point is, what the dotted line is, the phases, and
/// each CPU's worst interval.
fn statements(t: &Timeline) -> Vec<String> {
    let mut statements = vec![match t.column_s {
        Some(w) => format!(
            "Each point covers {} of the run: the largest max and the largest p99 of the intervals in it.",
            crate::units::format_elapsed((w * 1e9) as u64)
        ),
        None => "One point per interval: its max (solid) and its p99 (dashed).".to_string(),
    }];
    if t.tracks.iter().any(|tr| tr.irq) {
        statements.push(
            "Dotted: the largest timer IRQ latency per interval (from the kernel trace); the gap \
             between it and the solid max is thread latency."
                .into(),
        );
    }
    statements.extend(phases::statement(&t.phases));
    for tr in t.tracks.iter().filter(|tr| !tr.irq) {
        if let Some((at, max)) = tr.worst {
            statements.push(format!(
                "{}: worst interval at {} after the start, max {}",
                tr.label,
                crate::units::format_elapsed((at * 1e9) as u64),
                format_ns(max)
            ));
        }
    }
    statements
}

/// The lines of a track by name (`max`, `p99`, as the legend and the SVG's `data-line` call
/// them): a wakeup series has its max (solid) and p99 (dashed), an IRQ series its max (dotted).
fn lines_of(tr: &Track) -> Vec<(&'static str, Style)> {
    let base = series_style(tr.style_index);
    if tr.irq {
        vec![(
            "max",
            Style {
                dash: Some("1.5 2.5"),
                width: 1.4,
                ..base
            },
        )]
    } else {
        vec![
            ("max", base.clone()),
            (
                "p99",
                Style {
                    dash: Some("5 3"),
                    width: 1.2,
                    ..base
                },
            ),
        ]
    }
}

/// Draws one unbroken stretch of a line; a lone point (an interval between two gaps) as a dot.
fn flush(frame: &mut Frame, run: &mut Vec<(f64, f64)>, style: &Style, kind: &str) {
    if run.len() == 1 {
        let (x, y) = run[0];
        frame
            .svg
            .circle(x, y, 1.5, &format!(r#"fill="{}""#, style.colour), None);
    } else if run.len() > 1 {
        frame
            .svg
            .polyline(run, &format!(r#"data-line="{kind}" {}"#, style.stroke()));
    }
    run.clear();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::digest::read_run;
    use crate::results::synthetic::{SyntheticRun, write_run};

    /// A 2-CPU run of `seconds` with 1 s log intervals; CPU 0 has a 3 ms spike at 7 s.
    fn digest(seconds: u64) -> crate::report::digest::RunDigest {
        let dir = tempfile::tempdir().unwrap();
        let run = SyntheticRun {
            cpus: vec![0, 1],
            interval_ns: 100_000_000,
            log_interval_ns: 1_000_000_000,
            duration_ns: seconds * 1_000_000_000,
            phases: vec![],
            loads: vec![],
            warnings: vec![],
            seed: 5,
        };
        write_run(&dir.path().join("run"), &run, |cpu, t, rng| {
            if cpu == 0 && t == 7_000_000_000 {
                3_000_000
            } else {
                10_000 + (rng.uniform() * 5_000.0) as i64
            }
        })
        .unwrap();
        read_run(&dir.path().join("run"), &|_, _| {}).unwrap()
    }

    /// The points of each `<polyline>` with `data-line="kind"`.
    fn polylines(svg: &str, kind: &str) -> Vec<usize> {
        let tag = format!(r#"data-line="{kind}""#);
        svg.split("<polyline points=\"")
            .skip(1)
            .filter(|p| p.contains(&tag) && p.find(&tag) < p.find("/>"))
            .map(|p| p[..p.find('"').unwrap()].split(' ').count())
            .collect()
    }

    #[test]
    fn a_short_run_is_one_line_per_series_with_a_point_per_interval() {
        let d = digest(120);
        let series: Vec<_> = d.series.iter().collect();
        let t = prepare(&series, d.extent_s(), vec![], vec![]);
        assert_eq!(t.column_s, None);
        assert!(t.tracks.iter().all(|tr| tr.points.len() == 120));
        let svg = draw(
            "t",
            "t",
            &t,
            *crate::format::run_record::RunKind::Latency.words(),
        )
        .svg;
        assert_eq!(polylines(&svg, "max"), vec![120, 120]);
        assert_eq!(polylines(&svg, "p99"), vec![120, 120]);
        assert!(!svg.contains("<circle"), "no dots");
        // The max line is solid and the p99 line dashed, as the legend draws them.
        let p99 = &svg[svg.find(r#"data-line="p99""#).unwrap()..];
        assert!(p99[..p99.find("/>").unwrap()].contains("stroke-dasharray=\"5 3\""));
        let max = &svg[svg.find(r#"data-line="max""#).unwrap()..];
        assert!(!max[..max.find("/>").unwrap()].contains("stroke-dasharray"));
    }

    #[test]
    fn a_long_run_is_resampled_to_the_columns_keeping_the_spike() {
        let d = digest(1500);
        let series: Vec<_> = d.series.iter().collect();
        let t = prepare(&series, d.extent_s(), vec![], vec![]);
        assert_eq!(t.column_s, Some(1500.0 / COLUMNS as f64));
        for tr in &t.tracks {
            assert_eq!(tr.points.len(), COLUMNS, "{}", tr.label);
        }
        let spike = t.tracks[0].points.iter().map(|p| p.max_ns).max().unwrap();
        assert!(spike.abs_diff(3_000_000) < 3_000, "{spike}");
        assert_eq!(
            polylines(
                &draw(
                    "t",
                    "t",
                    &t,
                    *crate::format::run_record::RunKind::Latency.words()
                )
                .svg,
                "max"
            ),
            vec![800, 800]
        );
    }
}

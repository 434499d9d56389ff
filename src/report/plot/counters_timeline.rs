//! The context counters that moved with the late wakeups, drawn beneath latency over time: one
//! figure per CPU where the correlation (run.json `counters.correlation`, docs/counters.md)
//! found counters that moved. On top, the CPU's largest latency per interval, the very points
//! of the latency-over-time chart ([`super::timeline`]); beneath it one strip per moved counter
//! (the smallest p first, at most [`MAX_STRIPS`]; the others are named) with its value in each
//! interval from counters.log. Every panel shares the timeline's x axis: the same time range
//! over the same pixels ([`super::chart::LEFT`] to `WIDTH - RIGHT`), so a point of a strip is
//! drawn at the pixel of the latency point of its interval. The intervals holding a wakeup over
//! the correlation's threshold are shaded across every panel.
//!
//! Bounded like the timeline: a run of no more intervals than the timeline has columns gets one
//! point per interval; a longer one gets one point per timeline column holding the largest and
//! the smallest interval value in it. counters.log is read line by line ([`Gather::add`]) and
//! only these points are kept.

use super::axis::{Quantity, Scale, ScaleKind, Tick, format_value, ticks, time_unit};
use super::chart::{LEFT, RIGHT, Style, WIDTH};
pub(crate) use super::counter_labels::comparison;
use super::counter_labels::quantity_of;
pub(crate) use super::counter_labels::strip_label;
use super::timeline::{COLUMNS, Point, Timeline};
use super::zoom::{Cut, Range};
use super::{Figure, series_style};
use crate::format::counters::kind_of;
use crate::format::counters::{CounterInterval, CounterShift, CpuCorrelation, Kind};
use crate::report::digest::SeriesDigest;
use crate::report::svg::{Anchor, Svg, escape};
use crate::results::cells::Grid;
use crate::units::format_ns;
use std::collections::BTreeMap;

/// The most counters drawn per CPU; the others that moved are named under the figure.
pub(crate) const MAX_STRIPS: usize = 6;

const TITLE_BAND: f64 = 34.0;
const LEGEND_ROW: f64 = 22.0;
const LATENCY_HEIGHT: f64 = 170.0;
const STRIP_LABEL: f64 = 20.0;
const STRIP_HEIGHT: f64 = 56.0;
const STRIP_GAP: f64 = 8.0;
const BOTTOM: f64 = 56.0;
/// The shade of a late interval, across every panel.
const LATE_FILL: &str = r##"fill="#D55E00" fill-opacity="0.16""##;

/// One point of a strip: the value of one interval, or the extremes of a column's intervals.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct StripPoint {
    /// The interval (or the timeline column) it stands for.
    pub key: u64,
    /// Where the latency-over-time chart draws the same interval (column), s.
    pub(crate) time_s: f64,
    pub min: i64,
    pub max: i64,
}

/// One moved counter: its figures from the correlation and its values over time.
#[derive(Debug, Clone)]
pub(crate) struct Strip {
    pub shift: CounterShift,
    pub(crate) points: Vec<StripPoint>,
    /// Intervals where the counter's change is unknown (`?` in counters.log): not drawn.
    pub unknown: u64,
}

/// One CPU's figure.
#[derive(Debug, Clone)]
pub(crate) struct CpuChart {
    pub(crate) correlation: CpuCorrelation,
    /// "CPU 1", and the colour of its series in the latency-over-time chart.
    pub label: String,
    pub(crate) style_index: usize,
    /// The CPU's points of the latency-over-time chart.
    pub latency: Vec<Point>,
    /// The late intervals (columns) as spans of time, s.
    pub late: Vec<(f64, f64)>,
    pub(crate) strips: Vec<Strip>,
    /// Moved counters beyond [`MAX_STRIPS`].
    pub(crate) not_drawn: Vec<String>,
}

/// The figures being gathered from counters.log, line by line.
pub(crate) struct Gather {
    extent_s: f64,
    interval_s: f64,
    /// When the timeline merges intervals into columns: its column length, the grid of cells
    /// and the cells per column.
    columns: Option<(f64, Grid, usize)>,
    charts: Vec<CpuChart>,
    /// Per chart, per strip: the points by key.
    points: Vec<Vec<BTreeMap<u64, StripPoint>>>,
    /// Per chart: the interval → time of its latency points (one point per interval).
    times: Vec<BTreeMap<u64, f64>>,
}

impl Gather {
    /// The charts of the CPUs of `correlation` with moved counters, with the latency points
    /// of `timeline` (prepared from `series`, in the same order) and log intervals of
    /// `interval_ns`.
    pub(crate) fn new(
        timeline: &Timeline,
        series: &[&SeriesDigest],
        correlation: &[CpuCorrelation],
        interval_ns: u64,
    ) -> Gather {
        let interval_s = interval_ns.max(1) as f64 / 1e9;
        let extent_s = timeline.extent_s;
        let columns = match (timeline.column_s, series.first()) {
            (Some(w), Some(s)) => Some((w, s.grid, s.grid.cells_per_column(COLUMNS))),
            _ => None,
        };
        let mut gather = Gather {
            extent_s,
            interval_s,
            columns,
            charts: Vec::new(),
            points: Vec::new(),
            times: Vec::new(),
        };
        for c in correlation.iter().filter(|c| !c.moved.is_empty()) {
            let Some(i) = series.iter().position(|s| s.cpu == Some(c.cpu) && !s.irq) else {
                continue;
            };
            let track = &timeline.tracks[i];
            let columns = gather.columns;
            let span_of = |p: &Point| match columns {
                Some((w, ..)) => (p.time_s - w / 2.0, p.time_s + w / 2.0),
                None => {
                    let from = (p.time_s / interval_s).floor() * interval_s;
                    (from, (from + interval_s).min(extent_s))
                }
            };
            let mut late: Vec<(f64, f64)> = Vec::new();
            for p in track.points.iter().filter(|p| p.max_ns > c.threshold_ns) {
                let (from, to) = span_of(p);
                match late.last_mut() {
                    Some(last) if last.1 >= from - 1e-9 => last.1 = to,
                    _ => late.push((from, to)),
                }
            }
            let drawn = c.moved.len().min(MAX_STRIPS);
            gather.times.push(
                track
                    .points
                    .iter()
                    .map(|p| ((p.time_s / interval_s).floor() as u64, p.time_s))
                    .collect(),
            );
            gather.points.push(vec![BTreeMap::new(); drawn]);
            gather.charts.push(CpuChart {
                correlation: c.clone(),
                label: track.label.clone(),
                style_index: track.style_index,
                latency: track.points.clone(),
                late,
                strips: c.moved[..drawn]
                    .iter()
                    .map(|shift| Strip {
                        shift: shift.clone(),
                        points: Vec::new(),
                        unknown: 0,
                    })
                    .collect(),
                not_drawn: c.moved[drawn..].iter().map(|m| m.counter.clone()).collect(),
            });
        }
        gather
    }

    /// Whether any CPU has a chart (else counters.log need not be read).
    pub(crate) fn is_empty(&self) -> bool {
        self.charts.is_empty()
    }

    /// Where the timeline draws log interval `interval`: its key (the interval, or the column)
    /// and time. None past the run's end (a log that ran on).
    fn place(&self, chart: usize, interval: u64) -> Option<(u64, f64)> {
        let start = interval as f64 * self.interval_s;
        if start >= self.extent_s {
            return None;
        }
        let length = self.interval_s.min(self.extent_s - start);
        Some(match self.columns {
            // The column of the cell the interval's middle falls in, as the digest puts it.
            Some((w, grid, per_column)) => {
                let c = (grid.cell_of(start, length) / per_column) as u64;
                (c, (c as f64 + 0.5) * w)
            }
            // The time of the interval's own latency point (from latency.hlog), else its middle.
            None => {
                let t = self.times[chart].get(&interval).copied();
                (interval, t.unwrap_or(start + length / 2.0))
            }
        })
    }

    /// Takes one line of counters.log.
    pub(crate) fn add(&mut self, line: &CounterInterval) {
        let Some(chart) = self
            .charts
            .iter()
            .position(|c| c.correlation.cpu == line.cpu)
        else {
            return;
        };
        let Some((key, time_s)) = self.place(chart, line.interval) else {
            return;
        };
        for (k, strip) in self.charts[chart].strips.iter_mut().enumerate() {
            let value = line
                .values
                .iter()
                .find(|(n, _)| **n == *strip.shift.counter)
                .and_then(|(_, v)| *v);
            let Some(v) = value else {
                // Not on the line at all: not read in this interval (declared later); `?`:
                // unknown. Either way nothing is drawn for it.
                strip.unknown +=
                    u64::from(line.values.iter().any(|(n, _)| **n == *strip.shift.counter));
                continue;
            };
            self.points[chart][k]
                .entry(key)
                .and_modify(|p| {
                    p.min = p.min.min(v);
                    p.max = p.max.max(v);
                })
                .or_insert(StripPoint {
                    key,
                    time_s,
                    min: v,
                    max: v,
                });
        }
    }

    /// The charts, their strips' points in time order.
    pub(crate) fn finish(mut self) -> Vec<CpuChart> {
        for (chart, points) in self.charts.iter_mut().zip(self.points) {
            for (strip, p) in chart.strips.iter_mut().zip(points) {
                strip.points = p.into_values().collect();
            }
        }
        self.charts
    }

    /// Seconds per point when intervals are merged into columns.
    pub(crate) fn column_s(&self) -> Option<f64> {
        self.columns.map(|c| c.0)
    }
}

/// The figure of one CPU (`column_s`: seconds per point when intervals were merged) on the
/// time axis of `time` (`report --time-range`, the latency-over-time chart's):
/// the points and late intervals outside it are left out, and the figure says on the plot and
/// in its statements how many intervals (columns) it cut ([`cut_notes`]).
pub(crate) fn draw_zoomed(
    name: &str,
    title: &str,
    c: &CpuChart,
    extent_s: f64,
    column_s: Option<f64>,
    time: &Range,
) -> Figure {
    let extent_s = if extent_s > 0.0 { extent_s } else { 1.0 };
    let from = time.from.unwrap_or(0.0);
    let to = time.to.unwrap_or(extent_s);
    let to = if to > from { to } else { from + 1.0 };
    let inside = |t: f64| time.place(t) == std::cmp::Ordering::Equal;
    let shown = CpuChart {
        latency: c
            .latency
            .iter()
            .filter(|p| inside(p.time_s))
            .cloned()
            .collect(),
        late: c
            .late
            .iter()
            .filter(|&&(a, b)| b >= from && a <= to)
            .map(|&(a, b)| (a.max(from), b.min(to)))
            .collect(),
        strips: c
            .strips
            .iter()
            .map(|s| Strip {
                points: s
                    .points
                    .iter()
                    .filter(|p| inside(p.time_s))
                    .cloned()
                    .collect(),
                ..s.clone()
            })
            .collect(),
        ..c.clone()
    };
    let notes = cut_notes(c, time);
    let mut f = draw_span(name, title, &shown, (from, to), &notes);
    f.statements = notes.into_iter().chain(statements(c, column_s)).collect();
    f
}

/// What `time` cuts off the chart: its intervals (columns) before FROM and after TO, counted
/// on its latency points, one per interval.
pub(crate) fn cut_notes(c: &CpuChart, time: &Range) -> Vec<String> {
    let mut cut = Cut::default();
    for p in &c.latency {
        cut.add(time, p.time_s, 1);
    }
    cut.time_sentence("time axis", "intervals", time)
        .into_iter()
        .collect()
}

/// The figure of `c` over the time span `(from, to)` s, with `notes` drawn at the top right
/// of the latency panel; its statements are set by the caller.
fn draw_span(
    name: &str,
    title: &str,
    c: &CpuChart,
    (from, to): (f64, f64),
    notes: &[String],
) -> Figure {
    let extent_s = to;
    let right = WIDTH - RIGHT;
    let strips_top = TITLE_BAND + LEGEND_ROW + LATENCY_HEIGHT;
    let per_strip = STRIP_LABEL + STRIP_HEIGHT + STRIP_GAP;
    let bottom_of_strips = strips_top + per_strip * c.strips.len() as f64;
    let height = bottom_of_strips + BOTTOM;
    // The timeline's x axis: the same range over the same pixels.
    let x = Scale::new(ScaleKind::Linear, from, to).with_pixels(LEFT, right);
    let x_ticks: Vec<Tick> = ticks(&x, &Quantity::TimeS)
        .into_iter()
        .filter(|t| t.label.is_some())
        .collect();
    let mut svg = Svg::new(name, WIDTH, height, title);
    svg.text(
        WIDTH / 2.0,
        22.0,
        Anchor::Middle,
        r##"font-size="16" font-weight="bold" fill="#222""##,
        title,
    );
    let line = series_style(c.style_index);
    legend(&mut svg, c, &line);

    // Latency: the CPU's max per interval (log scale) and the threshold.
    let (top, bottom) = (TITLE_BAND + LEGEND_ROW + 6.0, strips_top - 12.0);
    let threshold = c.correlation.threshold_ns;
    let (lo, hi) = c
        .latency
        .iter()
        .fold((threshold, threshold), |(lo, hi), p| {
            (lo.min(p.max_ns), hi.max(p.max_ns))
        });
    let y = Scale::new(ScaleKind::Log, lo.max(1) as f64, hi.max(1) as f64)
        .rounded_out()
        .with_pixels(bottom, top);
    panel(&mut svg, &x, &x_ticks, &c.late, top, bottom);
    svg.group(r##"class="ticks" fill="#333" font-size="12""##);
    for t in ticks(&y, &Quantity::LatencyNs)
        .iter()
        .filter(|t| t.label.is_some())
    {
        let py = y.px(t.value);
        svg.line(LEFT, py, right, py, r##"stroke="#e4e4e4""##);
        let label = t.label.as_deref().unwrap_or("");
        svg.text(LEFT - 8.0, py + 4.0, Anchor::End, "", label);
    }
    svg.end_group();
    svg.vertical_text(
        18.0,
        (top + bottom) / 2.0,
        r##"class="axis-title" fill="#222""##,
        "max per interval (log scale)",
    );
    let ty = y.px(threshold as f64);
    svg.line(
        LEFT,
        ty,
        right,
        ty,
        r##"class="threshold" stroke="#555" stroke-dasharray="4 3""##,
    );
    svg.group(&format!(
        r#"class="latency" data-label="{}""#,
        escape(&c.label)
    ));
    let points: Vec<(f64, f64, bool)> = c
        .latency
        .iter()
        .map(|p| (x.px(p.time_s), y.px(p.max_ns as f64), p.after_gap))
        .collect();
    polylines(&mut svg, &points, &line.stroke(), line.colour);
    svg.end_group();
    if !notes.is_empty() {
        svg.group(
            r##"class="zoom-cut" font-size="12" fill="#7a1f00" stroke="#fbfbfb" stroke-width="3" paint-order="stroke""##,
        );
        for (i, n) in notes.iter().enumerate() {
            svg.text(
                right - 8.0,
                top + 16.0 + 15.0 * i as f64,
                Anchor::End,
                "",
                n,
            );
        }
        svg.end_group();
    }

    // One strip per moved counter.
    for (k, s) in c.strips.iter().enumerate() {
        let label_y = strips_top + per_strip * k as f64;
        let (top, bottom) = (label_y + STRIP_LABEL, label_y + STRIP_LABEL + STRIP_HEIGHT);
        svg.text(
            LEFT,
            label_y + 14.0,
            Anchor::Start,
            r##"class="strip-label" font-size="12" fill="#222""##,
            &strip_label(&s.shift),
        );
        let quantity = quantity_of(&s.shift.counter);
        let (lo, hi) = s.points.iter().fold((i64::MAX, i64::MIN), |(lo, hi), p| {
            (lo.min(p.min), hi.max(p.max))
        });
        let (lo, hi) = if s.points.is_empty() {
            (0, 1)
        } else {
            (lo, hi)
        };
        // A change from 0 up; a gauge (or a negative change) over its own range.
        let lo = if kind_of(&s.shift.counter) == Kind::Delta {
            lo.min(0)
        } else {
            lo
        };
        let y = Scale::new(ScaleKind::Linear, lo as f64, hi as f64).with_pixels(bottom, top);
        panel(&mut svg, &x, &x_ticks, &c.late, top, bottom);
        svg.group(r##"class="ticks" fill="#333" font-size="11""##);
        for v in [y.min, y.max] {
            let text = format_value(v, &quantity, y.max.abs().max(y.min.abs()));
            svg.text(LEFT - 8.0, y.px(v) + 4.0, Anchor::End, "", &text);
        }
        svg.end_group();
        svg.group(&format!(
            r#"class="strip" data-counter="{}""#,
            escape(&s.shift.counter)
        ));
        let at = |v: i64| y.px(v as f64);
        // Consecutive keys join; a missing interval (column) breaks the line.
        let gap = |i: usize| i > 0 && s.points[i].key > s.points[i - 1].key + 1;
        let max: Vec<(f64, f64, bool)> = (0..s.points.len())
            .map(|i| (x.px(s.points[i].time_s), at(s.points[i].max), gap(i)))
            .collect();
        let style = Style {
            width: 1.4,
            ..line.clone()
        };
        polylines(
            &mut svg,
            &max,
            &format!(r#"data-line="max" {}"#, style.stroke()),
            line.colour,
        );
        if s.points.iter().any(|p| p.min != p.max) {
            let min: Vec<(f64, f64, bool)> = (0..s.points.len())
                .map(|i| (x.px(s.points[i].time_s), at(s.points[i].min), gap(i)))
                .collect();
            let dashed = Style {
                dash: Some("4 2"),
                width: 1.0,
                ..line.clone()
            };
            polylines(
                &mut svg,
                &min,
                &format!(r#"data-line="min" {}"#, dashed.stroke()),
                line.colour,
            );
        }
        svg.end_group();
    }

    // The shared x axis, under the last panel.
    let axis_y = bottom_of_strips.max(strips_top) - STRIP_GAP;
    svg.group(r##"class="ticks" fill="#333" font-size="12""##);
    for t in &x_ticks {
        let px = x.px(t.value);
        svg.line(px, axis_y, px, axis_y + 5.0, r##"stroke="#666""##);
        svg.text(
            px,
            axis_y + 19.0,
            Anchor::Middle,
            "",
            t.label.as_deref().unwrap_or(""),
        );
    }
    svg.end_group();
    let (_, unit) = time_unit(extent_s);
    svg.text(
        (LEFT + right) / 2.0,
        height - 12.0,
        Anchor::Middle,
        r##"class="axis-title" fill="#222""##,
        &format!("time since the start ({unit})"),
    );
    Figure {
        name: name.into(),
        title: title.into(),
        statements: Vec::new(),
        svg: svg.finish(),
    }
}

/// The legend row: the latency line, the threshold, the shade of a late interval.
fn legend(svg: &mut Svg, c: &CpuChart, line: &Style) {
    let y = TITLE_BAND + 10.0;
    svg.group(r##"class="legend" font-size="12" fill="#222""##);
    svg.line(LEFT, y, LEFT + 22.0, y, &line.stroke());
    let first = format!("{} max per interval", c.label);
    svg.text(LEFT + 28.0, y + 4.0, Anchor::Start, "", &first);
    let mut at = LEFT + 40.0 + 7.2 * first.len() as f64;
    svg.line(
        at,
        y,
        at + 22.0,
        y,
        r##"stroke="#555" stroke-dasharray="4 3""##,
    );
    let threshold = format!(
        "late above {} ({})",
        format_ns(c.correlation.threshold_ns),
        c.correlation.threshold_basis
    );
    svg.text(at + 28.0, y + 4.0, Anchor::Start, "", &threshold);
    at += 40.0 + 7.2 * threshold.len() as f64;
    svg.rect(at, y - 6.0, 22.0, 12.0, LATE_FILL);
    svg.text(at + 28.0, y + 4.0, Anchor::Start, "", "late interval");
    svg.end_group();
}

/// A panel's frame, its vertical grid at the time ticks, and the late intervals shaded.
fn panel(svg: &mut Svg, x: &Scale, x_ticks: &[Tick], late: &[(f64, f64)], top: f64, bottom: f64) {
    let right = x.to_px;
    svg.rect(
        LEFT,
        top,
        right - LEFT,
        bottom - top,
        r##"fill="#fbfbfb" stroke="#999""##,
    );
    for t in x_ticks {
        let px = x.px(t.value);
        svg.line(px, top, px, bottom, r##"stroke="#e4e4e4""##);
    }
    for &(from, to) in late {
        let (x0, x1) = (x.px(from).clamp(LEFT, right), x.px(to).clamp(LEFT, right));
        svg.rect(
            x0,
            top,
            (x1 - x0).max(1.0),
            bottom - top,
            &format!(r#"class="late" {LATE_FILL}"#),
        );
    }
}

/// Lines through `points` (x, y, after a gap), broken at gaps; a lone point as a dot.
fn polylines(svg: &mut Svg, points: &[(f64, f64, bool)], stroke: &str, colour: &str) {
    let mut run: Vec<(f64, f64)> = Vec::new();
    let flush = |svg: &mut Svg, run: &mut Vec<(f64, f64)>| {
        match run.as_slice() {
            [(x, y)] => svg.circle(*x, *y, 1.8, &format!(r#"fill="{colour}""#), None),
            _ => svg.polyline(run, stroke),
        }
        run.clear();
    };
    for &(x, y, gap) in points {
        if gap {
            flush(svg, &mut run);
        }
        run.push((x, y));
    }
    flush(svg, &mut run);
}

/// What the figure says in words.
fn statements(c: &CpuChart, column_s: Option<f64>) -> Vec<String> {
    let k = &c.correlation;
    let mut out = vec![format!(
        "{}: {} intervals with a wakeup over {} ({}) against the other {}{}; {} counters tested, each held to p < {} / {} (Mann-Whitney, Bonferroni; docs/counters.md). Shaded on every panel: the intervals whose largest latency in latency.hlog is over the threshold.",
        c.label,
        k.late_intervals,
        format_ns(k.threshold_ns),
        k.threshold_basis,
        k.other_intervals,
        if k.left_out_intervals > 0 {
            format!(
                " ({} left out of the test: counters read off the interval's boundaries, or no histogram)",
                k.left_out_intervals
            )
        } else {
            String::new()
        },
        k.tested,
        k.alpha,
        k.tested
    )];
    out.push(match column_s {
        Some(w) => format!(
            "Each point covers {} of the run: the largest (solid) and smallest (dashed) value of its intervals in counters.log.",
            crate::units::format_elapsed((w * 1e9) as u64)
        ),
        None => "One point per log interval: the counter's change over it (a gauge's reading at its end) in counters.log.".into(),
    });
    for s in &c.strips {
        let mut text = format!("{} ({})", strip_label(&s.shift), s.shift.method);
        if s.unknown > 0 {
            text.push_str(&format!("; unknown in {} intervals, not drawn", s.unknown));
        }
        out.push(text);
    }
    if !c.not_drawn.is_empty() {
        out.push(format!(
            "Also moved, not drawn: {} (their figures are in run.json, counters.correlation).",
            c.not_drawn.join(", ")
        ));
    }
    out
}

#[cfg(test)]
mod tests;

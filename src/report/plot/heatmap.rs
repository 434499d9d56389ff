//! The heat map of a CPU's interval histograms: time across, latency up (log), the colour of
//! each cell the number of wakeups with that latency in that stretch of time. It is the
//! long-run view OSADL draws in 3D, flattened: a steady body shows as a band, a periodic
//! disturbance as dots at a fixed height, a change of load as a step of the band.

use super::Figure;
use super::axis::{Quantity, Scale, ScaleKind, format_value, time_unit};
use super::chart::{Axis, Frame, LegendEntry, Style};
use super::zoom::{Cut, Zoom, latency_end};
use crate::format::kind::Vocabulary;
use crate::report::digest::{ROWS, SeriesDigest, row_floor_ns};

/// Time columns of the grid (fewer when the run has fewer intervals).
pub(crate) const COLUMNS: usize = 240;

/// A fixed grid: `cells[column * ROWS + row]` wakeups.
#[derive(Debug, Clone)]
pub(crate) struct HeatGrid {
    pub label: String,
    pub columns: usize,
    pub(crate) extent_s: f64,
    pub cells: Vec<u64>,
}

impl HeatGrid {
    pub(crate) fn at(&self, column: usize, row: usize) -> u64 {
        self.cells[column * ROWS + row]
    }

    /// The rows holding any wakeup: (lowest, highest).
    pub(crate) fn row_span(&self) -> Option<(usize, usize)> {
        let mut span: Option<(usize, usize)> = None;
        for c in 0..self.columns {
            for r in 0..ROWS {
                if self.at(c, r) > 0 {
                    span = Some(span.map_or((r, r), |(lo, hi)| (lo.min(r), hi.max(r))));
                }
            }
        }
        span
    }
}

/// Adds each interval's row counts to its column: the column its middle falls in when the run
/// has no more intervals than columns, else the column of whole time cells (`report::digest`)
/// its cell is in, the grid then reaching to the end of the last column.
pub(crate) fn prepare(series: &SeriesDigest, extent_s: f64) -> HeatGrid {
    let extent_s = if extent_s > 0.0 { extent_s } else { 1.0 };
    let per_column = series.grid.cells_per_column(COLUMNS);
    let by_cells = series.intervals.len() > COLUMNS;
    let (columns, extent_s) = if by_cells {
        let columns = series.grid.cells.div_ceil(per_column);
        let reach_s = (columns * per_column) as f64 * series.grid.cell_s;
        (columns, reach_s.max(extent_s))
    } else {
        (series.intervals.len().max(1), extent_s)
    };
    let mut cells = vec![0u64; columns * ROWS];
    for p in &series.intervals {
        let mid = p.start_s + p.length_s / 2.0;
        let c = if by_cells {
            (p.cell / per_column).min(columns - 1)
        } else {
            ((mid / extent_s * columns as f64) as usize).min(columns - 1)
        };
        for &(row, count) in series.rows_of(p) {
            cells[c * ROWS + row as usize] += count as u64;
        }
    }
    HeatGrid {
        label: series.label.clone(),
        columns,
        extent_s,
        cells,
    }
}

/// Viridis (perceptually uniform and colour-blind safe) at 12 even steps, from few wakeups
/// (light yellow) to many (dark violet), so empty cells stay white and the dense body stands
/// out. Each colour class gets its own step.
const RAMP: &[&str] = &[
    "#fde725", "#c2df23", "#86d549", "#52c569", "#2ab07f", "#1e9b8a", "#25858e", "#2d708e",
    "#38588c", "#433e85", "#482173", "#440154",
];

/// The smallest count of each colour class: 1, 3, 10, 30, 100... up to the largest cell; whole
/// decades (or coarser) when that would make more classes than the ramp has colours.
fn class_floors(max: u64) -> Vec<u64> {
    let floors = half_decades(max);
    let step = floors.len().div_ceil(RAMP.len());
    floors.into_iter().step_by(step).collect()
}

fn half_decades(max: u64) -> Vec<u64> {
    let mut floors = vec![1u64];
    let mut next = 3u64;
    while next <= max {
        floors.push(next);
        next = if next.to_string().starts_with('3') {
            next / 3 * 10
        } else {
            next * 3
        };
    }
    floors
}

/// The colour class of `count` (at least 1) among `floors`.
fn class_of(count: u64, floors: &[u64]) -> usize {
    floors.iter().rposition(|&f| count >= f).unwrap_or(0)
}

/// The ramp colour of class `k` of `n`, spread over the whole ramp.
fn class_colour(k: usize, n: usize) -> &'static str {
    if n <= 1 {
        return RAMP[RAMP.len() / 2];
    }
    RAMP[(k * (RAMP.len() - 1) + (n - 1) / 2) / (n - 1)]
}

/// Draws the grid, with the scenario's phases (label, from s, to s) shaded where no wakeup
/// falls and named above the cells, on the time and latency axes of `zoom` (`report --time-range`, `--latency-range`),
/// saying on the plot and under it the wakeups of the cells wholly outside them: the columns
/// wholly before or after the time range, then in the others the rows wholly below or above
/// the latency range (a cell across an end is drawn, cut at the axis).
pub(crate) fn draw_zoomed(
    name: &str,
    title: &str,
    grid: &HeatGrid,
    phases: &[(String, f64, f64)],
    samples: Vocabulary,
    zoom: &Zoom,
) -> Figure {
    let (lo_row, hi_row) = grid.row_span().unwrap_or((30, 60));
    let column_s = grid.extent_s / grid.columns as f64;
    let (mut time_cut, mut latency_cut) = (Cut::default(), Cut::default());
    for c in 0..grid.columns {
        let (from, to) = (c as f64 * column_s, (c + 1) as f64 * column_s);
        let wakeups: u64 = (0..ROWS).map(|r| grid.at(c, r)).sum();
        if zoom.time.to.is_some_and(|t| from >= t) {
            time_cut.above += wakeups;
        } else if zoom.time.from.is_some_and(|f| to <= f) {
            time_cut.below += wakeups;
        } else {
            for r in 0..ROWS {
                if zoom.latency.to.is_some_and(|t| row_floor_ns(r) >= t) {
                    latency_cut.above += grid.at(c, r);
                } else if zoom.latency.from.is_some_and(|f| row_floor_ns(r + 1) <= f) {
                    latency_cut.below += grid.at(c, r);
                }
            }
        }
    }
    let max = grid.cells.iter().copied().max().unwrap_or(0);
    let (_, unit) = time_unit(grid.extent_s);
    let x = Axis {
        scale: zoom
            .time
            .apply(Scale::new(ScaleKind::Linear, 0.0, grid.extent_s)),
        quantity: Quantity::TimeS,
        title: format!("time since the start ({unit})"),
    };
    let y = Axis {
        scale: zoom.latency.apply(Scale::new(
            ScaleKind::Log,
            row_floor_ns(lo_row),
            row_floor_ns(hi_row + 1),
        )),
        quantity: Quantity::LatencyNs,
        title: format!("{} (log scale)", samples.value),
    };
    // The legend is the colour scale: each class's smallest count.
    let floors = class_floors(max);
    let legend: Vec<LegendEntry> = floors
        .iter()
        .enumerate()
        .map(|(k, &from)| LegendEntry {
            label: format!(
                "{}{}≥{}",
                if k == 0 { samples.plural } else { "" },
                if k == 0 { " per cell: " } else { "" },
                format_value(from as f64, &Quantity::Count, from as f64)
            ),
            style: Style {
                colour: class_colour(k, floors.len()),
                dash: None,
                width: 1.0,
            },
            filled: true,
        })
        .collect();
    let mut frame = Frame::begin(name, title, x, y, &legend);
    // A column's left edge on the (possibly zoomed) time axis.
    let x_scale = frame.x.scale.clone();
    let column_px = |c: usize| x_scale.px(c as f64 * column_s);
    super::phases::draw_bands(&mut frame, phases);
    frame
        .svg
        .group(r#"class="cells" shape-rendering="crispEdges""#);
    for row in lo_row..=hi_row {
        let y_top = frame.y.scale.px(row_floor_ns(row + 1));
        let y_bottom = frame.y.scale.px(row_floor_ns(row));
        // Neighbouring cells of one colour are drawn as one rectangle.
        let mut c = 0;
        while c < grid.columns {
            let count = grid.at(c, row);
            if count == 0 {
                c += 1;
                continue;
            }
            let class = class_of(count, &floors);
            let mut end = c + 1;
            while end < grid.columns
                && grid.at(end, row) > 0
                && class_of(grid.at(end, row), &floors) == class
            {
                end += 1;
            }
            let x0 = column_px(c);
            frame.svg.rect(
                x0,
                y_top,
                column_px(end) - x0 + 0.3,
                y_bottom - y_top + 0.3,
                &format!(r#"fill="{}""#, class_colour(class, floors.len())),
            );
            c = end;
        }
    }
    frame.svg.end_group();
    super::phases::draw_labels(&mut frame, phases);
    let mut statements = vec![format!(
        "{}: {} columns of {} each, rows of 1/10 decade of {}; the darkest cells hold up to {} {}.",
        grid.label,
        grid.columns,
        crate::units::format_elapsed((grid.extent_s / grid.columns as f64 * 1e9) as u64),
        samples.value,
        max,
        samples.plural
    )];
    statements.extend(super::phases::statement(phases));
    let notes: Vec<String> = [
        time_cut.time_sentence(&grid.label, samples.plural, &zoom.time),
        latency_cut.sentence(
            &grid.label,
            &format!("{} in rows", samples.plural),
            &zoom.latency,
            latency_end,
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    super::zoom::draw_notes(&mut frame, &notes);
    statements.extend(notes);
    Figure {
        name: name.into(),
        title: title.into(),
        statements,
        svg: frame.finish(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_are_log_spaced() {
        assert_eq!(class_floors(1), vec![1]);
        assert_eq!(
            class_floors(36_000),
            vec![1, 3, 10, 30, 100, 300, 1000, 3000, 10_000, 30_000]
        );
        let f = class_floors(1000);
        assert_eq!(class_of(1, &f), 0);
        assert_eq!(class_of(29, &f), 2);
        assert_eq!(class_of(1000, &f), 6);
        assert_eq!(class_colour(0, 7), RAMP[0]);
        assert_eq!(class_colour(6, 7), RAMP[RAMP.len() - 1]);
        // Every class its own colour.
        for max in [1, 10, 36_000, 400_000, 10_000_000, u64::MAX / 4] {
            let n = class_floors(max).len();
            let colours: std::collections::BTreeSet<_> =
                (0..n).map(|k| class_colour(k, n)).collect();
            assert_eq!(colours.len(), n, "max {max}");
        }
        assert_eq!(class_floors(10_000_000)[..3], [1, 10, 100]);
    }
}

//! Every latency over time (the SH7780 study's Fig. 6): one plot per CPU of a run made with
//! `--samples`, a dot per wakeup's latency against its due time, from samples.bin, with the
//! timer IRQ latency of traced runs in a second colour. Beside the per-interval timeline (its
//! max and p99), this shows each wakeup.
//!
//! Thinned for drawing, keeping every maximum: the plot area is a grid of [`COLUMNS`] time
//! columns by [`ROWS_PER_DECADE`] rows per decade of latency; a cell holding any wakeup gets
//! one dot (at the cell's middle), and each column's largest latency is drawn apart, as a
//! circle at its exact time and value. So no wakeup's latency lies more than half a cell from a
//! dot, and the worst wakeup of every column is exactly where it was. samples.bin is read once,
//! streamed, in memory that does not grow with it.

use super::axis::{Quantity, Scale, ScaleKind, time_unit};
use super::chart::{Axis, Frame, LegendEntry, Style};
use super::zoom::{Cut, Zoom, latency_end};
use super::{Figure, PALETTE};
use crate::format::kind::Vocabulary;
use crate::format::samplelog::SampleRecord;
use crate::units::{format_ns_signed, format_span, group_digits};
use std::collections::BTreeMap;

/// Time columns of the grid.
pub(crate) const COLUMNS: usize = 800;
/// Latency rows per decade (a row is 5.9% of latency high).
pub(crate) const ROWS_PER_DECADE: f64 = 40.0;
/// Rows from 1 ns to 100 s.
const ROWS: usize = 11 * ROWS_PER_DECADE as usize;

/// The row of a latency (an early wakeup, 0 ns or less, in the first row).
fn row_of(latency_ns: i64) -> usize {
    let v = latency_ns.max(1) as f64;
    ((v.log10() * ROWS_PER_DECADE).floor() as usize).min(ROWS - 1)
}

/// The latency at the middle of a row, ns.
fn row_middle_ns(row: usize) -> f64 {
    10f64.powf((row as f64 + 0.5) / ROWS_PER_DECADE)
}

/// One CPU's wakeups, thinned.
#[derive(Debug, Clone)]
pub(crate) struct Scatter {
    pub(crate) cpu: u32,
    /// The time the grid spans, s since the run's start.
    pub(crate) from_s: f64,
    pub(crate) to_s: f64,
    /// Wakeups drawn (in the time and latency ranges).
    pub(crate) samples: u64,
    /// Occupied cells of wakeup latency, `column * ROWS + row`.
    cells: Vec<bool>,
    /// Occupied cells of timer IRQ latency (traced runs).
    irq_cells: Vec<bool>,
    pub(crate) irq_samples: u64,
    /// Each column's largest wakeup latency: (time s, latency ns).
    pub(crate) column_max: Vec<Option<(f64, i64)>>,
    /// Wakeups before and after the time range.
    pub(crate) time_cut: Cut,
    /// Wakeups in the time range beyond the latency range; and timer IRQ latencies.
    pub(crate) latency_cut: Cut,
    pub(crate) irq_cut: Cut,
}

impl Scatter {
    fn new(cpu: u32, from_s: f64, to_s: f64) -> Self {
        Scatter {
            cpu,
            from_s,
            to_s,
            samples: 0,
            cells: vec![false; COLUMNS * ROWS],
            irq_cells: vec![false; COLUMNS * ROWS],
            irq_samples: 0,
            column_max: vec![None; COLUMNS],
            time_cut: Cut::default(),
            latency_cut: Cut::default(),
            irq_cut: Cut::default(),
        }
    }

    /// The dots drawn: occupied wakeup cells.
    pub(crate) fn dots(&self) -> usize {
        self.cells.iter().filter(|&&c| c).count()
    }

    /// The largest latency drawn and its time.
    pub(crate) fn max(&self) -> Option<(f64, i64)> {
        self.column_max
            .iter()
            .flatten()
            .copied()
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.total_cmp(&a.0)))
    }

    fn add(&mut self, s: &SampleRecord, time_s: f64, zoom: &Zoom) {
        use std::cmp::Ordering::Equal;
        // Without a time range every wakeup is drawn: one due after the run's length (from
        // run.json) goes in the last column.
        if zoom.time.place(time_s) != Equal {
            self.time_cut.add(&zoom.time, time_s, 1);
            return;
        }
        let span = (self.to_s - self.from_s).max(1e-12);
        let column =
            (((time_s - self.from_s).max(0.0) / span * COLUMNS as f64) as usize).min(COLUMNS - 1);
        if let Some(irq) = s.irq_latency_ns {
            if zoom.latency.place(irq as f64) == Equal {
                self.irq_cells[column * ROWS + row_of(irq)] = true;
                self.irq_samples += 1;
            } else {
                self.irq_cut.add(&zoom.latency, irq as f64, 1);
            }
        }
        if zoom.latency.place(s.latency_ns as f64) != Equal {
            self.latency_cut.add(&zoom.latency, s.latency_ns as f64, 1);
            return;
        }
        self.samples += 1;
        self.cells[column * ROWS + row_of(s.latency_ns)] = true;
        let max = &mut self.column_max[column];
        if max.is_none_or(|(_, m)| s.latency_ns > m) {
            *max = Some((time_s, s.latency_ns));
        }
    }
}

/// Reads `samples` (samples.bin's records, `start_ns` its time base) into one [`Scatter`] per
/// CPU over [0, `extent_s`] or the zoom's time range.
pub(crate) fn prepare(
    samples: impl Iterator<Item = std::io::Result<SampleRecord>>,
    start_ns: u64,
    extent_s: f64,
    zoom: &Zoom,
) -> std::io::Result<Vec<Scatter>> {
    let from_s = zoom.time.from.unwrap_or(0.0);
    let to_s = zoom.time.to.unwrap_or(extent_s).max(from_s + 1e-6);
    let mut by_cpu: BTreeMap<u32, Scatter> = BTreeMap::new();
    for s in samples {
        let s = s?;
        let time_s = s.expected_ns.saturating_sub(start_ns) as f64 / 1e9;
        by_cpu
            .entry(s.cpu)
            .or_insert_with(|| Scatter::new(s.cpu, from_s, to_s))
            .add(&s, time_s, zoom);
    }
    Ok(by_cpu.into_values().collect())
}

/// Draws one CPU's scatter, with the run's phases (label, from s, to s) shaded.
pub(crate) fn draw(
    name: &str,
    title: &str,
    s: &Scatter,
    phases: &[(String, f64, f64)],
    samples: Vocabulary,
    zoom: &Zoom,
) -> Figure {
    let rows = |cells: &[bool]| {
        (0..COLUMNS * ROWS)
            .filter(|&i| cells[i])
            .map(|i| i % ROWS)
            .fold(None, |span: Option<(usize, usize)>, r| {
                Some(span.map_or((r, r), |(lo, hi)| (lo.min(r), hi.max(r))))
            })
    };
    let span = [rows(&s.cells), rows(&s.irq_cells)]
        .into_iter()
        .flatten()
        .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)));
    let (lo, hi) = span.map_or((1e3, 1e6), |(lo, hi)| {
        (
            10f64.powf(lo as f64 / ROWS_PER_DECADE),
            10f64.powf((hi + 1) as f64 / ROWS_PER_DECADE),
        )
    });
    let (_, unit) = time_unit(s.to_s - s.from_s);
    let x = Axis {
        scale: Scale::new(ScaleKind::Linear, s.from_s, s.to_s),
        quantity: Quantity::TimeS,
        title: format!("time since the start ({unit})"),
    };
    let y = Axis {
        scale: zoom
            .latency
            .apply(Scale::new(ScaleKind::Log, lo, hi).rounded_out()),
        quantity: Quantity::LatencyNs,
        title: format!("{} of each wakeup (log scale)", samples.value),
    };
    let (wakeup, irq, max) = (PALETTE[0], PALETTE[1], "#000000");
    let entry = |label: String, colour: &'static str| LegendEntry {
        label,
        style: Style {
            colour,
            dash: None,
            width: 1.0,
        },
        filled: true,
    };
    let mut legend = vec![entry(
        format!("{} (a dot per occupied cell)", samples.sample_value),
        wakeup,
    )];
    if s.irq_samples > 0 {
        legend.push(entry("timer IRQ latency".into(), irq));
    }
    legend.push(entry("largest of each column (exact)".into(), max));
    let mut frame = Frame::begin(name, title, x, y, &legend);
    super::phases::draw_bands(&mut frame, phases);
    let col_px = (frame.area.2 - frame.area.0) / COLUMNS as f64;
    let dot = col_px.max(1.6);
    for (cells, colour, class) in [(&s.irq_cells, irq, "irq"), (&s.cells, wakeup, "samples")] {
        frame.svg.group(&format!(
            r#"class="{class}" fill="{colour}" shape-rendering="crispEdges""#
        ));
        for i in (0..COLUMNS * ROWS).filter(|&i| cells[i]) {
            let (column, row) = (i / ROWS, i % ROWS);
            let x = frame.area.0 + (column as f64 + 0.5) * col_px;
            let y = frame.y.scale.px(row_middle_ns(row));
            frame.svg.rect(x - dot / 2.0, y - dot / 2.0, dot, dot, "");
        }
        frame.svg.end_group();
    }
    frame.svg.group(r#"class="maxima""#);
    for &(t, latency) in s.column_max.iter().flatten() {
        frame.svg.circle(
            frame.x.scale.px(t),
            frame.y.scale.px(latency.max(1) as f64),
            1.8,
            &format!(r#"fill="{max}""#),
            Some(&format!(
                "{}: {} at {t:.6} s",
                cpu_label(s.cpu),
                format_ns_signed(latency),
            )),
        );
    }
    frame.svg.end_group();
    super::phases::draw_labels(&mut frame, phases);
    let notes = cut_notes(s, zoom, samples.plural);
    super::zoom::draw_notes(&mut frame, &notes);
    let mut statements = vec![format!(
        "{}: {} {} drawn as {} dots, one per occupied cell of {COLUMNS} columns of {} by 1/{} decade of {}; each column's largest is a circle at its exact time and value, so every maximum is kept.",
        cpu_label(s.cpu),
        group_digits(s.samples),
        samples.plural,
        group_digits(s.dots() as u64),
        format_span(((s.to_s - s.from_s) / COLUMNS as f64 * 1e9) as u64),
        ROWS_PER_DECADE,
        samples.value,
    )];
    if let Some((t, latency)) = s.max() {
        statements.push(format!(
            "{}: the largest is {} at {t:.6} s after the start",
            cpu_label(s.cpu),
            format_ns_signed(latency),
        ));
    }
    statements.extend(notes);
    Figure {
        name: name.into(),
        title: title.into(),
        statements,
        svg: frame.finish(),
    }
}

fn cpu_label(cpu: u32) -> String {
    format!("CPU {cpu}")
}

/// What the zoom cut off: wakeups outside the time range, then those in it beyond the latency
/// range, and the timer IRQ latencies beyond it.
fn cut_notes(s: &Scatter, zoom: &Zoom, plural: &str) -> Vec<String> {
    let label = cpu_label(s.cpu);
    [
        s.time_cut.time_sentence(&label, plural, &zoom.time),
        s.latency_cut
            .sentence(&label, plural, &zoom.latency, latency_end),
        s.irq_cut.sentence(
            &format!("{label} timer IRQ"),
            "latencies",
            &zoom.latency,
            latency_end,
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::plot::zoom::Range;

    fn sample(cpu: u32, ms: u64, latency_ns: i64) -> std::io::Result<SampleRecord> {
        Ok(SampleRecord {
            cpu,
            missed: 0,
            seq: ms,
            expected_ns: 1_000_000_000 + ms * 1_000_000,
            latency_ns,
            irq_latency_ns: None,
        })
    }

    /// A second of 1 ms wakeups at 20 us with one of 4 ms: 1000 samples in at most a dot per
    /// cell, the 4 ms one the largest at its exact time; zoomed to 2 ms, it is counted cut.
    #[test]
    fn every_maximum_is_kept_and_cuts_are_counted() {
        let samples = (0..1000).map(|ms| sample(0, ms, if ms == 617 { 4_000_000 } else { 20_000 }));
        let s = &prepare(samples, 1_000_000_000, 1.0, &Zoom::default()).unwrap()[0];
        assert_eq!(s.samples, 1000);
        assert_eq!(s.max(), Some((0.617, 4_000_000)));
        // 800 columns of 1.25 ms, each with a wakeup: one dot each at 20 us, but the spike's
        // column (616.25-617.5 ms) holds the spike alone.
        assert_eq!(s.dots(), 800);
        let zoom = Zoom {
            latency: Range {
                from: None,
                to: Some(2_000_000.0),
            },
            time: Range {
                from: Some(0.5),
                to: None,
            },
        };
        let samples = (0..1000).map(|ms| sample(0, ms, if ms == 617 { 4_000_000 } else { 20_000 }));
        let s = &prepare(samples, 1_000_000_000, 1.0, &zoom).unwrap()[0];
        assert_eq!(
            s.time_cut,
            Cut {
                below: 500,
                above: 0
            }
        );
        assert_eq!(s.latency_cut, Cut { below: 0, above: 1 });
        assert_eq!(s.samples, 499);
        let f = draw(
            "run1-samples-cpu0",
            "t",
            s,
            &[],
            *crate::format::run_record::RunKind::Latency.words(),
            &zoom,
        );
        assert!(
            f.statements
                .iter()
                .any(|x| x == "CPU 0: 1 wakeups above 2.00 ms not shown"),
            "{:?}",
            f.statements
        );
        assert!(
            f.statements
                .iter()
                .any(|x| x == "CPU 0: 500 wakeups before 500.00 ms not shown"),
            "{:?}",
            f.statements
        );
        assert!(f.svg.contains("1 wakeups above 2.00 ms not shown"));
    }
}

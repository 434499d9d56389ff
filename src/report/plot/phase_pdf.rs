//! Latency distribution per phase (the OCERA study's per-phase PDFs): for one CPU, one line per
//! scenario phase, each the share of that phase's wakeups per 1/10 decade of latency, so that
//! phases of different length compare. A phase counts the log intervals wholly inside it, as
//! run.json's per-phase statistics do.

use super::axis::{Quantity, Scale, ScaleKind};
use super::chart::{Axis, Frame, LegendEntry};
use super::zoom::{Cut, Range, latency_end};
use super::{Figure, series_style};
use crate::analysis::phase::{inside, phase_window};
use crate::format::kind::Vocabulary;
use crate::report::digest::{ROWS, SeriesDigest, row_floor_ns};
use crate::report::svg::escape;

/// One phase's distribution on one CPU.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PhasePdf {
    pub label: String,
    /// Wakeups of the phase on this CPU.
    pub samples: u64,
    /// (heat-map row, share of the phase's wakeups) for the non-empty rows, ascending; the
    /// shares sum to 1.
    pub rows: Vec<(usize, f64)>,
}

/// The distribution of each phase (label, from s, to s) on one CPU's series.
pub(crate) fn prepare(series: &SeriesDigest, phases: &[(String, f64, f64)]) -> Vec<PhasePdf> {
    phases
        .iter()
        .map(|(label, from, to)| merged(&[series], label, *from, *to))
        .collect()
}

/// The distribution, named `label`, of the wakeups of every series in `series` (the CPUs of
/// one run) in the phase from `from` to `to` s: for one phase compared across runs.
pub(crate) fn merged(series: &[&SeriesDigest], label: &str, from: f64, to: f64) -> PhasePdf {
    let window = phase_window(from, to);
    let mut counts = vec![0u64; ROWS];
    for series in series {
        for p in series
            .intervals
            .iter()
            .filter(|p| inside(window, p.start_s, p.length_s))
        {
            for &(row, count) in series.rows_of(p) {
                counts[row as usize] += count as u64;
            }
        }
    }
    let samples: u64 = counts.iter().sum();
    let rows = counts
        .iter()
        .enumerate()
        .filter(|(_, c)| **c > 0)
        .map(|(r, &c)| (r, c as f64 / samples as f64))
        .collect();
    PhasePdf {
        label: label.to_string(),
        samples,
        rows,
    }
}

/// The plot without a zoom: for the tests (the report draws every plot zoomed).
#[cfg(test)]
pub(crate) fn draw(name: &str, title: &str, pdfs: &[PhasePdf], samples: Vocabulary) -> Figure {
    draw_zoomed(name, title, pdfs, samples, &Range::default())
}

/// What `latency` (`report --latency-range`) cuts off each phase: its wakeups in the bins
/// wholly below FROM or wholly above TO (a bin across an end is drawn, clipped at it).
pub(crate) fn cut_notes(pdfs: &[PhasePdf], latency: &Range, plural: &str) -> Vec<String> {
    pdfs.iter()
        .filter_map(|p| {
            let mut cut = Cut::default();
            for &(row, share) in &p.rows {
                let count = (share * p.samples as f64).round() as u64;
                let (floor, top) = (row_floor_ns(row), row_floor_ns(row + 1));
                if latency.from.is_some_and(|f| top <= f) {
                    cut.below += count;
                } else if latency.to.is_some_and(|t| floor >= t) {
                    cut.above += count;
                }
            }
            cut.sentence(&p.label, plural, latency, latency_end)
        })
        .collect()
}

/// Draws the distributions on the latency axis of `latency` (`report --latency-range`),
/// saying on the plot what it cut off each phase ([`cut_notes`]).
pub(crate) fn draw_zoomed(
    name: &str,
    title: &str,
    pdfs: &[PhasePdf],
    samples: Vocabulary,
    latency: &Range,
) -> Figure {
    let rows = pdfs.iter().flat_map(|p| p.rows.iter());
    let (lo, hi) = rows
        .clone()
        .fold((ROWS, 0), |(lo, hi), &(r, _)| (lo.min(r), hi.max(r)));
    let (lo, hi) = if lo > hi { (30, 60) } else { (lo, hi) };
    let smallest = pdfs
        .iter()
        .flat_map(|p| p.rows.iter().map(|r| r.1))
        .fold(1.0f64, f64::min);
    let x = Axis {
        scale: latency.apply(
            Scale::new(ScaleKind::Log, row_floor_ns(lo), row_floor_ns(hi + 1)).rounded_out(),
        ),
        quantity: Quantity::LatencyNs,
        title: format!("{} (log scale; bins of 1/10 decade)", samples.sample_value),
    };
    let y = Axis {
        scale: Scale::new(
            ScaleKind::Log,
            10f64.powf((smallest / 2.0).log10().floor()),
            1.0,
        ),
        quantity: Quantity::Fraction,
        title: format!(
            "share of the phase's {} per bin (log scale)",
            samples.plural
        ),
    };
    let legend: Vec<LegendEntry> = pdfs
        .iter()
        .enumerate()
        .map(|(i, p)| LegendEntry {
            label: p.label.clone(),
            style: series_style(i),
            filled: false,
        })
        .collect();
    let mut frame = Frame::begin(name, title, x, y, &legend);
    let bottom = frame.area.3 + 2.0;
    for (i, p) in pdfs.iter().enumerate() {
        // Steps, running along the bottom through empty bins.
        let mut points = Vec::with_capacity(p.rows.len() * 4);
        for (k, &(row, share)) in p.rows.iter().enumerate() {
            let x0 = frame.x.scale.px(row_floor_ns(row));
            let x1 = frame.x.scale.px(row_floor_ns(row + 1));
            let y = frame.y.scale.px(share);
            if k == 0 || p.rows[k - 1].0 + 1 != row {
                points.push((x0, bottom));
            }
            points.push((x0, y));
            points.push((x1, y));
            if p.rows.get(k + 1).is_none_or(|next| next.0 != row + 1) {
                points.push((x1, bottom));
            }
        }
        frame.svg.group(&format!(
            r#"class="series" data-label="{}""#,
            escape(&p.label)
        ));
        frame.svg.polyline(&points, &series_style(i).stroke());
        frame.svg.end_group();
    }
    let notes = cut_notes(pdfs, latency, samples.plural);
    super::zoom::draw_notes(&mut frame, &notes);
    let statements = notes
        .iter()
        .cloned()
        .chain(pdfs.iter()
        .map(|p| match p.rows.iter().max_by(|a, b| a.1.total_cmp(&b.1)) {
            Some(&(row, share)) => format!(
                "{}: {} {} in whole log intervals; the fullest bin, {} to {}, holds {:.1} % of them",
                p.label,
                p.samples,
                samples.plural,
                crate::units::format_ns(row_floor_ns(row).round() as u64),
                crate::units::format_ns(row_floor_ns(row + 1).round() as u64),
                share * 100.0
            ),
            None => format!(
                "{}: no whole log interval inside the phase, so no distribution",
                p.label
            ),
        }))
        .collect();
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
    use crate::report::digest::read_run;
    use crate::results::synthetic::{SyntheticPhase, SyntheticRun, write_run};

    #[test]
    fn each_phase_sums_to_one_and_holds_its_own_latencies() {
        let dir = tempfile::tempdir().unwrap();
        let phase = SyntheticPhase::seconds;
        let run = SyntheticRun {
            cpus: vec![0],
            interval_ns: 1_000_000,
            log_interval_ns: 1_000_000_000,
            duration_ns: 30_000_000_000,
            // Phases of different length: 20 s and 10 s.
            phases: vec![phase("idle", 0, 20), phase("memory", 20, 30)],
            loads: vec![],
            warnings: vec![],
            seed: 2,
        };
        // idle: 10 us; memory: a quarter at 1 ms, the rest at 20 us.
        write_run(&dir.path().join("r"), &run, |_, t, _| {
            if t < 20_000_000_000 {
                10_000
            } else if (t / 1_000_000) % 4 == 0 {
                1_000_000
            } else {
                20_000
            }
        })
        .unwrap();
        let d = read_run(&dir.path().join("r"), &|_, _| {}).unwrap();
        let pdfs = prepare(&d.series[0], &d.phase_spans());
        assert_eq!(pdfs.len(), 2);
        assert_eq!((pdfs[0].samples, pdfs[1].samples), (20_000, 10_000));
        for p in &pdfs {
            let sum: f64 = p.rows.iter().map(|r| r.1).sum();
            assert!((sum - 1.0).abs() < 1e-12, "{}: {sum}", p.label);
        }
        // 10 us is row 40 (10^4.0); 20 us row 43; 1 ms row 60.
        assert_eq!(pdfs[0].rows, vec![(40, 1.0)]);
        assert_eq!(pdfs[1].rows, vec![(43, 0.75), (60, 0.25)]);
        let f = draw(
            "run1-phases-cpu0",
            "t",
            &pdfs,
            *crate::format::run_record::RunKind::Latency.words(),
        );
        assert_eq!(f.svg.matches("<polyline").count(), 2);
        assert!(f.svg.contains(r#"data-label="memory""#));
        // Zoomed to 15 us - 100 us: idle's 20 000 wakeups at 10 us (row 40, 10.0-12.6 us)
        // lie wholly below, memory's 2 500 at 1 ms (row 60) wholly above; 20 us is kept.
        let zoom = Range {
            from: Some(15_000.0),
            to: Some(100_000.0),
        };
        let notes = cut_notes(&pdfs, &zoom, "wakeups");
        assert_eq!(
            notes,
            [
                "idle: 20 000 wakeups below 15.0 us not shown",
                "memory: 2 500 wakeups above 100.0 us not shown"
            ]
        );
        let f = draw_zoomed(
            "z",
            "t",
            &pdfs,
            *crate::format::run_record::RunKind::Latency.words(),
            &zoom,
        );
        assert!(
            f.svg
                .contains("idle: 20 000 wakeups below 15.0 us not shown")
        );
        assert_eq!(f.statements[1], notes[1]);
        // Nothing cut, nothing said.
        assert!(cut_notes(&pdfs, &Range::default(), "wakeups").is_empty());
    }
}

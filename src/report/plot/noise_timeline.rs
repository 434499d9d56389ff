//! Noise over time (`jitterlab noise`): per log interval the share of each CPU the system took
//! away, from the exact per-interval noise time in events.jsonl (`noise_interval`), with the
//! scenario's load phases shaded. A long run has more intervals than the plot has pixels:
//! each pixel column then shows the largest share among the intervals it covers, so a burst
//! of noise is not averaged away (the statements give the run's mean per CPU).

use super::axis::{Quantity, Scale, ScaleKind, time_unit};
use super::chart::{Axis, Frame, LegendEntry, Style};
use super::{Figure, series_style};
use crate::format::noise::NoiseInterval;
use crate::report::svg::{Anchor, escape};
use crate::units::{format_elapsed, format_ns};

/// Columns of the plot area (about one per pixel).
pub(crate) const COLUMNS: usize = 800;

/// One CPU's curve: per column the largest noise share (percent), None where no interval falls.
#[derive(Debug, Clone)]
pub(crate) struct NoiseTrack {
    pub cpu: usize,
    pub columns: Vec<Option<f64>>,
    /// The interval with the most noise: (start s, share %, noise ns).
    pub worst: Option<(f64, f64, u64)>,
    /// Noise time and time covered by the intervals, ns: the run's mean share.
    pub noise_ns: u64,
    pub(crate) covered_ns: u64,
}

#[derive(Debug, Clone)]
pub(crate) struct NoiseTimeline {
    pub(crate) extent_s: f64,
    pub(crate) tracks: Vec<NoiseTrack>,
    pub phases: Vec<(String, f64, f64)>,
    /// Seconds of run per column.
    pub(crate) column_s: f64,
}

/// CPUs given a curve at most: the rest's intervals are counted ([`NoiseTally::left_out`])
/// and drawn nowhere, so that a forged events.jsonl naming a million CPUs cannot take a
/// million curves' memory. Far more CPUs than a machine has.
pub(crate) const MAX_TRACKS: usize = 1024;

/// The intervals as they are read, reduced at once to `COLUMNS` columns per CPU over
/// [0, extent_s]: memory bounded by the columns, not by the run's intervals. Each CPU's last
/// two intervals wait, for a last stub to be merged into the one before it (see
/// [`NoiseTally::finish`]).
#[derive(Debug, Clone)]
pub(crate) struct NoiseTally {
    extent_s: f64,
    column_s: f64,
    tracks: std::collections::BTreeMap<usize, (NoiseTrack, Vec<NoiseInterval>)>,
    /// Intervals of CPUs past [`MAX_TRACKS`].
    pub(crate) left_out: u64,
}

impl NoiseTally {
    pub(crate) fn new(extent_s: f64) -> Self {
        let extent_s = if extent_s > 0.0 { extent_s } else { 1.0 };
        NoiseTally {
            extent_s,
            column_s: extent_s / COLUMNS as f64,
            tracks: Default::default(),
            left_out: 0,
        }
    }

    /// Whether any interval was added.
    pub(crate) fn is_empty(&self) -> bool {
        self.tracks.is_empty()
    }

    pub(crate) fn add(&mut self, i: NoiseInterval) {
        if !self.tracks.contains_key(&i.cpu) && self.tracks.len() >= MAX_TRACKS {
            self.left_out += 1;
            return;
        }
        let column_s = self.column_s;
        let (track, last) = self.tracks.entry(i.cpu).or_insert_with(|| {
            let track = NoiseTrack {
                cpu: i.cpu,
                columns: vec![None; COLUMNS],
                worst: None,
                noise_ns: 0,
                covered_ns: 0,
            };
            (track, Vec::with_capacity(3))
        });
        last.push(i);
        if last.len() > 2 {
            put(track, &last.remove(0), column_s);
        }
    }

    /// The curves, in CPU order, each CPU's last interval shorter than a tenth of the one
    /// before it merged into that one: the noise loop reads on past the run's end for up to
    /// about 0.1 ms and logs that stub as an interval of its own (docs/noise.md), whose share
    /// of a few us would stand out of the plot as if it were a burst.
    pub(crate) fn finish(self, phases: Vec<(String, f64, f64)>) -> NoiseTimeline {
        let column_s = self.column_s;
        let tracks = self
            .tracks
            .into_values()
            .map(|(mut track, mut last)| {
                if let [before, stub] = last.as_mut_slice()
                    && stub.length_ns * 10 < before.length_ns
                {
                    before.length_ns = (stub.offset_ns.saturating_add(stub.length_ns))
                        .saturating_sub(before.offset_ns);
                    before.gaps = before.gaps.saturating_add(stub.gaps);
                    before.noise_ns = before.noise_ns.saturating_add(stub.noise_ns);
                    before.time_ns = stub.time_ns;
                    last.pop();
                }
                for i in &last {
                    put(&mut track, i, column_s);
                }
                track
            })
            .collect();
        NoiseTimeline {
            extent_s: self.extent_s,
            tracks,
            phases,
            column_s,
        }
    }
}

/// One interval into its CPU's curve: the largest share of its column, the worst, the sums.
fn put(track: &mut NoiseTrack, i: &NoiseInterval, column_s: f64) {
    let (start_s, pct) = (i.offset_ns as f64 / 1e9, i.noise_pct());
    let mid = start_s + i.length_ns as f64 / 2e9;
    let c = ((mid / column_s) as usize).min(COLUMNS - 1);
    let cell = track.columns[c].get_or_insert(0.0);
    *cell = cell.max(pct);
    if track.worst.is_none_or(|w| pct > w.1) {
        track.worst = Some((start_s, pct, i.noise_ns));
    }
    track.noise_ns = track.noise_ns.saturating_add(i.noise_ns);
    track.covered_ns = track.covered_ns.saturating_add(i.length_ns);
}

/// The intervals reduced by a [`NoiseTally`]: grouped by CPU (in CPU order), `COLUMNS`
/// columns each over [0, extent_s].
#[cfg(test)]
pub(crate) fn prepare(
    intervals: &[NoiseInterval],
    extent_s: f64,
    phases: Vec<(String, f64, f64)>,
) -> NoiseTimeline {
    let mut tally = NoiseTally::new(extent_s);
    intervals.iter().for_each(|i| tally.add(*i));
    tally.finish(phases)
}

/// Phase bands alternate these fills (as on the latency timeline).
const PHASE_FILLS: &[&str] = &["#e8eef7", "#f6eedf"];

pub(crate) fn draw(name: &str, title: &str, t: &NoiseTimeline) -> Figure {
    let hi = t
        .tracks
        .iter()
        .flat_map(|tr| tr.columns.iter().flatten().copied())
        .fold(0.0f64, f64::max);
    let (_, unit) = time_unit(t.extent_s);
    let x = Axis {
        scale: Scale::new(ScaleKind::Linear, 0.0, t.extent_s),
        quantity: Quantity::TimeS,
        title: format!("time since the start ({unit})"),
    };
    let y = Axis {
        // A quiet run still gets a readable axis (0 to 0.001 %).
        scale: Scale::new(ScaleKind::Linear, 0.0, hi.max(1e-3)).rounded_out(),
        quantity: Quantity::Plain("%".into()),
        title: "noise per interval (% of the CPU)".into(),
    };
    let legend: Vec<LegendEntry> = t
        .tracks
        .iter()
        .enumerate()
        .map(|(i, tr)| LegendEntry {
            label: format!("CPU {}", tr.cpu),
            style: series_style(i),
            filled: false,
        })
        .collect();
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
                format_elapsed((from * 1e9) as u64),
                format_elapsed((to * 1e9) as u64)
            ),
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
        let style = series_style(i);
        frame.svg.group(&format!(
            r#"class="series" data-label="CPU {}""#,
            escape(&tr.cpu.to_string())
        ));
        // Lines break where no interval falls (a gap in the log).
        let mut run: Vec<(f64, f64)> = Vec::new();
        for (c, cell) in tr.columns.iter().enumerate() {
            match cell {
                Some(pct) => run.push((left + (c as f64 + 0.5) * col_px, frame.y.scale.px(*pct))),
                None => flush(&mut frame, &mut run, &style),
            }
        }
        flush(&mut frame, &mut run, &style);
        frame.svg.end_group();
    }
    let mut statements = vec![if t.column_s >= 1.0 {
        format!(
            "Each point covers {} of the run: the largest noise share of the intervals in it.",
            format_elapsed((t.column_s * 1e9) as u64)
        )
    } else {
        "One point per interval: the share of the CPU lost to gaps that began in it.".to_string()
    }];
    for tr in &t.tracks {
        let mean = 100.0 * tr.noise_ns as f64 / tr.covered_ns.max(1) as f64;
        let mut s = format!("CPU {}: {mean:.4} % noise over the run", tr.cpu);
        if let Some((at, pct, ns)) = tr.worst {
            s.push_str(&format!(
                "; most in the interval at {}: {pct:.4} % ({})",
                format_elapsed((at * 1e9) as u64),
                format_ns(ns)
            ));
        }
        statements.push(s);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn interval(cpu: usize, k: u64, noise_ns: u64) -> NoiseInterval {
        NoiseInterval {
            time_ns: (k + 1) * 1_000_000_000,
            cpu,
            offset_ns: k * 1_000_000_000,
            length_ns: 1_000_000_000,
            gaps: 1,
            noise_ns,
        }
    }

    /// Shares per interval from the exact noise time; the worst interval and the run's mean
    /// per CPU; CPUs apart, in order.
    #[test]
    fn shares_follow_the_interval_noise() {
        let intervals = [
            interval(1, 0, 1_000_000),
            interval(0, 0, 10_000),
            interval(0, 1, 20_000_000),
            interval(0, 2, 0),
            // The loop's read past the end: 50 us with a 5 us gap, folded into interval 2.
            NoiseInterval {
                time_ns: 3_000_050_000,
                cpu: 0,
                offset_ns: 3_000_000_000,
                length_ns: 50_000,
                gaps: 1,
                noise_ns: 5_000,
            },
        ];
        let t = prepare(&intervals, 3.0, Vec::new());
        assert_eq!(t.tracks.len(), 2);
        let cpu0 = &t.tracks[0];
        assert_eq!(cpu0.cpu, 0);
        let shares: Vec<f64> = cpu0.columns.iter().flatten().copied().collect();
        assert_eq!(shares, vec![0.001, 2.0, 100.0 * 5_000.0 / 1_000_050_000.0]);
        assert_eq!(cpu0.worst, Some((1.0, 2.0, 20_000_000)));
        assert_eq!(
            (cpu0.noise_ns, cpu0.covered_ns),
            (20_015_000, 3_000_050_000)
        );
        let f = draw("n", "Noise over time", &t);
        assert!(f.svg.contains("CPU 1"), "{}", f.svg);
        assert!(
            f.statements
                .iter()
                .any(|s| s
                    .starts_with("CPU 0: 0.6672 % noise over the run; most in the interval at 1")),
            "{:?}",
            f.statements
        );
    }
}

//! The stretches of a run whose tails are compared for stationarity: the scenario's phases
//! when the run had them (a tail that changes in one phase is named by it), else the run's two
//! halves.

use super::{Segment, halves};

/// A scenario phase on the run's timeline: label, start and end offsets from the run's start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PhaseSpan {
    pub label: String,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// The segments of a run of `wakeups` at `interval_ns` cut at every phase boundary (a phase's
/// times become wakeup numbers at the interval; periods skipped by late wakeups shift that by
/// their count, which is negligible unless most periods are missed): each piece
/// is labelled by the phases active in it ("phase io", "phases io+cpu", or "outside the
/// phases"), neighbours with the same label joined. Without phases, or when they leave fewer
/// than two segments, the run's halves.
pub(crate) fn phase_segments(wakeups: u64, interval_ns: u64, phases: &[PhaseSpan]) -> Vec<Segment> {
    let interval_ns = interval_ns.max(1);
    let wakeup_at = |ns: u64| (ns / interval_ns).min(wakeups);
    let ranges: Vec<(&str, u64, u64)> = phases
        .iter()
        .map(|p| (p.label.as_str(), wakeup_at(p.start_ns), wakeup_at(p.end_ns)))
        .filter(|&(_, first, end)| first < end)
        .collect();
    let mut cuts: Vec<u64> = vec![0, wakeups];
    cuts.extend(ranges.iter().flat_map(|&(_, first, end)| [first, end]));
    cuts.sort_unstable();
    cuts.dedup();
    let mut segments: Vec<Segment> = Vec::new();
    for piece in cuts.windows(2) {
        let (first, end) = (piece[0], piece[1]);
        let active: Vec<&str> = ranges
            .iter()
            .filter(|&&(_, a, b)| a <= first && first < b)
            .map(|&(label, _, _)| label)
            .collect();
        let label = match active.len() {
            0 => "outside the phases".to_string(),
            1 => format!("phase {}", active[0]),
            _ => format!("phases {}", active.join("+")),
        };
        match segments.last_mut() {
            Some(last) if last.label == label => last.end_wakeup = end,
            _ => segments.push(Segment {
                label,
                first_wakeup: first,
                end_wakeup: end,
            }),
        }
    }
    if segments.len() < 2 {
        return halves(wakeups);
    }
    segments
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(label: &str, start_s: u64, end_s: u64) -> PhaseSpan {
        PhaseSpan {
            label: label.into(),
            start_ns: start_s * 1_000_000_000,
            end_ns: end_s * 1_000_000_000,
        }
    }

    fn cut(segments: &[Segment]) -> Vec<(&str, u64, u64)> {
        segments
            .iter()
            .map(|s| (s.label.as_str(), s.first_wakeup, s.end_wakeup))
            .collect()
    }

    #[test]
    fn phases_gaps_and_overlaps_become_segments() {
        // 100 s at 1 ms: idle 0-30 s, io 30-60 s, cpu 50-80 s (overlapping io), nothing after.
        let phases = [span("idle", 0, 30), span("io", 30, 60), span("cpu", 50, 80)];
        assert_eq!(
            cut(&phase_segments(100_000, 1_000_000, &phases)),
            [
                ("phase idle", 0, 30_000),
                ("phase io", 30_000, 50_000),
                ("phases io+cpu", 50_000, 60_000),
                ("phase cpu", 60_000, 80_000),
                ("outside the phases", 80_000, 100_000),
            ]
        );
        // A phase past the run's end is cut at the end.
        assert_eq!(
            cut(&phase_segments(40_000, 1_000_000, &phases)),
            [("phase idle", 0, 30_000), ("phase io", 30_000, 40_000)]
        );
    }

    #[test]
    fn without_phases_the_halves() {
        assert_eq!(phase_segments(1000, 1_000_000, &[]), halves(1000));
        // One phase over the whole run is one segment: nothing to compare, so the halves.
        let whole = [span("load", 0, 10)];
        assert_eq!(phase_segments(10_000, 1_000_000, &whole), halves(10_000));
    }

    /// A synthetic run of 200 s at 1 ms: a uniform body of 5-30 us, 1 % of wakeups in a
    /// generalized Pareto tail over 30 us (scale 5 us), whose shape is 0.6 in phase io
    /// (100-150 s) and 0 elsewhere. With the scenario's phases the refusal names phase io.
    #[test]
    fn a_tail_that_changes_in_a_phase_is_refused_by_name() {
        use super::super::{Check, fit_tail, peaks_above};
        use crate::random::SplitMix64;
        let phases = [
            span("idle", 0, 100),
            span("io", 100, 150),
            span("cpu", 150, 200),
        ];
        for seed in 0..3 {
            let mut rng = SplitMix64::new(40 + seed);
            let latencies: Vec<u64> = (0..200_000u64)
                .map(|i| {
                    if rng.uniform() >= 0.01 {
                        return 5_000 + (rng.uniform() * 25_000.0) as u64;
                    }
                    let shape: f64 = if (100_000..150_000).contains(&i) {
                        0.6
                    } else {
                        0.0
                    };
                    let u = 1.0 - rng.uniform();
                    let excess = if shape == 0.0 {
                        -5_000.0 * u.ln()
                    } else {
                        5_000.0 / shape * (u.powf(-shape) - 1.0)
                    };
                    30_000 + excess as u64
                })
                .collect();
            let peaks = peaks_above(&latencies, 25_000);
            let segments = phase_segments(200_000, 1_000_000, &phases);
            let refusal = fit_tail(200_000, &peaks, &segments, 0.95).expect_err("refused");
            assert_eq!(refusal.check, Check::StationaryTail, "{refusal:?}");
            assert!(
                refusal.reason.starts_with(
                    "not extrapolated: the tail changes over the run (phase io: shape"
                ),
                "{}",
                refusal.reason
            );
        }
    }
}

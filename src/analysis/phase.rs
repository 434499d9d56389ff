//! One scenario phase of a run on its own: which log intervals belong to a phase (the same rule
//! as run.json's per-phase statistics: intervals wholly inside the phase's recorded window,
//! with 1 ms of slack for the log's millisecond timestamps), and a run cut down to one phase so
//! that `compare --phase NAME` compares that phase across runs with the ordinary comparison.

use crate::format::hlog_scan::{self, StoredInterval};
use crate::format::run_record::{PhaseRecord, RunRecord};
use crate::format::stats::{LatencySummary, new_histogram};
use crate::results::loaded::LoadedRun;

/// Slack for the hlog's millisecond timestamps (as `session::loads` matches intervals).
const EDGE_SLACK_S: f64 = 0.001;

/// A phase's span in s from the run's start (`start_monotonic_ns`, the base of the log's
/// interval times): the window run.json's per-phase statistics cover
/// (`window_start_ns`/`window_end_ns`, the planned one, cut where `loops=` ended it early).
/// Files written before those fields have only the times the phase's loads were ready and
/// reaped, which lie a little inside or outside the planned window; they are the best there is
/// for such files.
pub(crate) fn span_s(record: &RunRecord, phase: &PhaseRecord) -> (f64, f64) {
    let offset = |ns: u64| ns.saturating_sub(record.start_monotonic_ns) as f64 / 1e9;
    let (from, to) = match (phase.window_start_ns, phase.window_end_ns) {
        (Some(from), Some(to)) => (from, to),
        _ => (phase.start_ns, phase.end_ns),
    };
    (offset(from), offset(to))
}

/// The window of log intervals that belong to a phase spanning `from_s` to `to_s` (s from the
/// run's start): the span widened by the edge slack. The one definition of a phase's window:
/// run.json's per-phase statistics (`session::loads`), the Phases tables, the per-phase plots,
/// `export --per-phase` and `compare --phase` all select intervals with it and [`inside`]
/// (issue 23 defect 8: plots and exports once used the loads-ready times).
pub(crate) fn phase_window(from_s: f64, to_s: f64) -> (f64, f64) {
    (from_s - EDGE_SLACK_S, to_s + EDGE_SLACK_S)
}

/// [`phase_window`] of a phase of run.json ([`span_s`]).
pub(crate) fn window_s(record: &RunRecord, phase: &PhaseRecord) -> (f64, f64) {
    let (from, to) = span_s(record, phase);
    phase_window(from, to)
}

/// Whether the interval [start_s, start_s + length_s] lies wholly inside `window`.
pub fn inside(window: (f64, f64), start_s: f64, length_s: f64) -> bool {
    start_s >= window.0 && start_s + length_s <= window.1
}

/// The run restricted to the phase labelled `name`: its intervals inside the phase; its
/// threads' latency figures those of run.json's per-phase statistics, which cover the same
/// intervals (for files without the phase's window, computed from the intervals kept, so that
/// every figure and every interval of the comparison comes from the same samples); missed
/// periods and deadline misses counted from the phase's interval histograms (within their
/// 0.1% precision); its length the time its intervals cover. Figures that exist only for the
/// whole run (CPU time, tail statistics, dropped records) are left out. An error names the
/// phases there are.
pub(crate) fn restrict(mut run: LoadedRun, name: &str) -> Result<LoadedRun, String> {
    let Some(phase) = run.record.phases.iter().find(|p| p.label == name).cloned() else {
        let names: Vec<&str> = run.record.phases.iter().map(|p| p.label.as_str()).collect();
        return Err(format!(
            "{} has no phase named {name:?}: {}",
            run.path.display(),
            if names.is_empty() {
                "it was not a scenario run (no phases); --phase needs runs made with --scenario"
                    .to_string()
            } else {
                format!("its phases are {}", names.join(", "))
            }
        ));
    };
    let window = window_s(&run.record, &phase);
    let same_window = phase.window_start_ns.is_some() && phase.window_end_ns.is_some();
    run.intervals
        .retain(|i| inside(window, i.start_s, i.length_s));
    let mut covered_ns = 0u64;
    for t in &mut run.record.threads {
        let tag = format!("cpu{}", t.cpu);
        let kept: Vec<&StoredInterval> = run.intervals.iter().filter(|i| i.tag == tag).collect();
        let counted = |over: &dyn Fn(u64) -> u64| -> u64 {
            kept.iter()
                .flat_map(|i| i.counts.iter())
                .map(|&(value, count)| over(value) * count)
                .sum()
        };
        let interval = t.interval_ns.max(1);
        let deadline = t.deadline_ns;
        t.missed_periods = counted(&|v| v / interval);
        t.deadline_misses = counted(&|v| u64::from(deadline > 0 && v > deadline));
        let run_range = t.latency.min_ns.zip(t.latency.max_ns);
        t.latency = if same_window {
            phase
                .threads
                .iter()
                .find(|p| p.cpu == t.cpu)
                .map(|p| p.latency.clone())
                .unwrap_or_default()
        } else {
            let mut merged = new_histogram();
            kept.iter()
                .for_each(|i| hlog_scan::add_counts(&mut merged, &i.counts));
            LatencySummary::from_histogram(&merged)
        };
        // Bucket ends, brought into the run's exact range for the CPU (as run.json's own
        // per-phase figures are since issue 23; older files and the figures computed here
        // are not): no phase figure lies beyond the run's.
        if let Some((min, max)) = run_range {
            t.latency.clamp_into(min, max);
        }
        // The log's times have millisecond resolution.
        let span: f64 = kept.iter().map(|i| i.length_s).sum();
        covered_ns = covered_ns.max(((span * 1e3).round() as u64) * 1_000_000);
        t.dropped_records = 0;
        t.tails = Default::default();
        t.irq_latency = None;
    }
    run.record.cpu_time = None;
    run.record.duration_ns = Some(covered_ns);
    run.record.phases = vec![phase];
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::loaded;
    use crate::results::synthetic::{SyntheticPhase, SyntheticRun, write_run};

    #[test]
    fn a_run_cut_to_one_phase_holds_only_that_phase() {
        let dir = tempfile::tempdir().unwrap();
        let phase = SyntheticPhase::seconds;
        let run = SyntheticRun {
            cpus: vec![0],
            interval_ns: 1_000_000,
            log_interval_ns: 1_000_000_000,
            duration_ns: 20_000_000_000,
            phases: vec![phase("idle", 0, 10), phase("io", 10, 20)],
            loads: vec![],
            warnings: vec![],
            seed: 1,
        };
        // idle: 10 us; io: 50 us and one 2.5 ms wakeup at 15 s (two missed 1 ms periods).
        write_run(&dir.path().join("r"), &run, |_, t, _| {
            if t == 15_000_000_000 {
                2_500_000
            } else if t >= 10_000_000_000 {
                50_000
            } else {
                10_000
            }
        })
        .unwrap();
        let whole = loaded::load(&dir.path().join("r")).unwrap();
        let io = restrict(whole.clone(), "io").unwrap();
        assert_eq!(io.intervals.len(), 10);
        let t = &io.record.threads[0];
        assert_eq!(t.latency.samples, 10_000);
        assert_eq!(t.latency.min_ns, Some(50_000));
        assert_eq!(t.latency.max_ns, Some(2_500_000));
        assert_eq!(t.missed_periods, 2);
        assert_eq!(io.record.duration_ns, Some(10_000_000_000));
        let idle = restrict(whole.clone(), "idle").unwrap();
        assert_eq!(idle.record.threads[0].latency.max_ns, Some(10_000));
        assert_eq!(idle.record.threads[0].missed_periods, 0);
        let e = restrict(whole, "memory").unwrap_err();
        assert!(e.contains("its phases are idle, io"), "{e}");
    }
}

//! The first line of a run's terminal summary: what was measured, how, and how it ended
//! (`jitterlab run: FIFO 95 on CPUs 0-1, wake ..., completed after 30.00 s`, or a noise run's
//! `jitterlab noise: ... threshold 1.0 us, ...`), with why a run ended when it did not complete.
//! A leaf below the terminal summary (terminal.rs) and the kinds' own views.

use crate::format::run_record::{Ended, RunRecord};
use crate::units::format_ns;
use std::fmt::Write;

/// "jitterlab noise: FIFO 95 on CPUs 0-1, threshold 1.0 us, completed after 5.00 s".
pub(crate) fn noise(record: &RunRecord) -> String {
    let plan = &record.plan;
    let policy = match plan.priority {
        0 => plan.policy.to_uppercase(),
        p => format!("{} {p}", plan.policy.to_uppercase()),
    };
    format!(
        "jitterlab noise: {policy} on CPUs {}, threshold {}, {}",
        crate::cpulist::format_cpu_list(&plan.cpus),
        plan.noise_threshold_ns.map_or("-".into(), format_ns),
        ended_text(record)
    )
}

/// `jitterlab run: FIFO 95 on CPUs 0-1, wake ..., interval ..., completed after ...` (a kind
/// taken by no wake method names its own way instead, `Vocabulary::taken_by`), and why the run
/// ended when it did not complete.
pub(crate) fn latency(record: &RunRecord) -> String {
    let mut out = String::new();
    let plan = &record.plan;
    // An imported run's placeholders are unknowns (imported.absent): `-`.
    let known = |field: &str, shown: String| {
        if record.is_absent(field) {
            "-".to_string()
        } else {
            shown
        }
    };
    // How the samples were taken: the wake method run.json names, or the kind's own way (a
    // kind that sleeps on no wake method stores the default method's name there).
    let taken_by = match record.kind.words().taken_by {
        Some(way) => way.to_string(),
        None => format!("wake {}", known("plan.wake", plan.wake.clone())),
    };
    let _ = writeln!(
        out,
        "jitterlab run: {} {} on CPUs {}, {taken_by} ({} clock), interval {}, {}",
        known("plan.policy", plan.policy.to_uppercase()),
        known("plan.priority", plan.priority.to_string()),
        crate::cpulist::format_cpu_list(&plan.cpus),
        known("plan.clock", plan.clock.clone()),
        known("plan.interval_ns", interval_text(plan)),
        ended_text(record)
    );
    if let Some(why) = stepped_end(record) {
        let _ = writeln!(out, "  {why}");
    }
    if let Some(reason) = &record.end_reason {
        let _ = writeln!(out, "  ended: {reason}");
    }
    out
}

/// The interval as the run paced it: `1.00 ms`, or with `--interval-step`
/// `1.00 ms +400 ms a wakeup` (issue 39 L4-d: the step was not shown).
fn interval_text(plan: &crate::format::run_record::PlanRecord) -> String {
    if plan.interval_step_ns == 0 {
        return format_ns(plan.interval_ns);
    }
    format!(
        "{} +{} a wakeup",
        format_ns(plan.interval_ns),
        format_ns(plan.interval_step_ns)
    )
}

/// Why a completed `--interval-step` run ended before its `--duration`: it stops at its last
/// wakeup whose due time fits, and its sleeps grow (issue 39 L4-d: "completed after 2.51 s"
/// for `-D 3s` was unexplained). None when it ended at its duration or had no step.
fn stepped_end(record: &RunRecord) -> Option<String> {
    let plan = &record.plan;
    let (Some(asked), Some(ran)) = (plan.duration_ns, record.duration_ns) else {
        return None;
    };
    if plan.interval_step_ns == 0 || record.ended != Ended::Completed || ran >= asked {
        return None;
    }
    Some(format!(
        "ended before --duration {}: with --interval-step {} each sleep is longer than the one before, and a thread stops at its last wakeup due within the duration",
        format_ns(asked),
        format_ns(plan.interval_step_ns)
    ))
}

/// How the run ended and after how long: `completed after 30.00 s`.
fn ended_text(record: &RunRecord) -> String {
    match (record.ended, record.duration_ns) {
        (Ended::Completed, Some(d)) => format!("completed after {}", format_ns(d)),
        (e, Some(d)) => format!("{} after {}", e.as_str(), format_ns(d)),
        (e, None) => e.as_str().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::synthetic::{SyntheticRun, write_run};

    /// A synthetic 2 s run at 1 ms on 2 CPUs, completed.
    fn synthetic() -> (tempfile::TempDir, RunRecord) {
        let dir = tempfile::tempdir().unwrap();
        let run = SyntheticRun {
            cpus: vec![0, 1],
            interval_ns: 1_000_000,
            log_interval_ns: 1_000_000_000,
            duration_ns: 2_000_000_000,
            phases: vec![],
            loads: vec![],
            warnings: vec![],
            seed: 2,
        };
        let record = write_run(&dir.path().join("run"), &run, |_, _, _| 10_000).unwrap();
        (dir, record)
    }

    /// L4-d (issue 39): `run -D 3s --interval-step 400ms` said "interval 1.00 ms" and
    /// "completed after 2.51 s" unexplained; the heading shows the step and why it ended early.
    #[test]
    fn a_stepped_runs_heading_shows_the_step_and_why_it_ended_before_its_duration() {
        let (_dir, mut record) = synthetic();
        let plain = latency(&record);
        assert!(plain.contains("interval 1.00 ms,"), "{plain}");
        assert!(!plain.contains("ended before"), "{plain}");
        record.plan.interval_step_ns = 400_000_000;
        record.plan.duration_ns = Some(3_000_000_000);
        record.duration_ns = Some(2_510_000_000);
        record.ended = Ended::Completed;
        let text = latency(&record);
        assert!(
            text.contains("interval 1.00 ms +400.00 ms a wakeup, completed after 2.51 s"),
            "{text}"
        );
        assert!(
            text.contains("ended before --duration 3.00 s: with --interval-step 400.00 ms"),
            "{text}"
        );
        // Interrupted: its end reason says why; no word about the step.
        record.ended = Ended::Interrupted;
        assert!(!latency(&record).contains("ended before --duration"));
    }

    /// The heading names how the samples were taken as the kind says it: `wake <method>` for a
    /// kind woken by the wake method run.json names, the kind's own way for any other (which
    /// stores the default method there: naming it would say a wake method it never used).
    #[test]
    fn the_heading_names_the_kinds_way_of_taking_samples() {
        let (_dir, mut record) = synthetic();
        for &kind in crate::format::kind::RunKind::ALL {
            record.kind = kind;
            let text = latency(&record);
            match kind.words().taken_by {
                None => assert!(
                    text.contains(&format!(", wake {} (", record.plan.wake)),
                    "{text}"
                ),
                Some(way) => {
                    assert!(text.contains(&format!(", {way} (")), "{text}");
                    assert!(!text.contains(", wake "), "{text}");
                }
            }
        }
    }
}

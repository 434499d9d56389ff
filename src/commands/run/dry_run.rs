//! `jitterlab run --dry-run`: the checks of a real run's start, without starting anything, and
//! what the run would do: which CPUs, policy and wake method, for how long, with which loads
//! and phases, the budget, and the files it would write. A long plan (a day, a week) is checked
//! in a second instead of failing after its first hour.
//!
//! The checks and their exit codes are a real run's: the options (`resolve`, exit 2), the
//! output directory not taken (exit 2), what the wake method needs of the system, real-time
//! scheduling and memory locking (every permission missing named at once: session/permissions.rs),
//! tracefs with `--trace`, and the CPU locks (exit 3). Nothing is created or
//! changed: no directory, no file, no load, no trace instance.

use crate::error::{Failure, Result};
use crate::plan::{RunLength, RunPlan};
use crate::results::dir::ResultDir;
use crate::units::{format_elapsed, format_ns};
use std::fmt::Write;

/// Checks `plan` as a real run's start would and returns what it would do, as text for stdout.
pub fn check(plan: &RunPlan) -> Result<String> {
    // The real run's own check of its result directory, nothing made.
    match &plan.out {
        Some(out) if plan.out_is_default => ResultDir::check_new_default(out, plan.out_option)?,
        Some(out) => ResultDir::check_new(out, plan.out_option)?,
        None => ResultDir::check_new_default(
            &crate::results::dir::default_path(
                std::time::SystemTime::now(),
                &crate::doctor::host::hostname(),
            ),
            plan.out_option,
        )?,
    }
    check_all_but_output(plan)
}

/// [`check`] without its check of the result directory: for a run whose directory is made
/// inside a container that the caller checked (a tune's arms), named by `plan.out`.
pub(crate) fn check_all_but_output(plan: &RunPlan) -> Result<String> {
    plan.wake_method().check_system().map_err(Failure::system)?;
    // Every permission missing said at once, as the real start says it.
    crate::session::permissions::check(plan)?;
    let backend = match plan.trace {
        true => Some(crate::trace::check(plan.trace_backend).map_err(Failure::system)?),
        false => None,
    };
    // The states --idle-state-max would disable, read as the run would, nothing written.
    let idle = plan
        .idle_state_max
        .map(|max| crate::session::idle_states::check(&plan.cpus, max))
        .transpose()
        .map_err(Failure::system)?;
    // Taken and released at once: a CPU that another run measures is refused as it would be.
    let (locks, mut lock_warnings) =
        crate::session::cpulock::take(&plan.cpus, plan.allow_shared_cpus)?;
    drop(locks);
    if !plan.mlock {
        lock_warnings.push(crate::session::permissions::NO_MLOCK_WARNING.to_string());
    }
    // A SIGINT/SIGTERM during the checks (or the start-up before them): the plan is not
    // printed as checked, and the command ends as interrupted (L11-b).
    crate::session::signals::stopped_before_a_session("--dry-run's checks were done")?;
    Ok(describe(
        plan,
        backend.as_ref(),
        idle.as_deref(),
        &lock_warnings,
    ))
}

/// The plan in words: what would run, for how long, and what it would write.
pub(crate) fn describe(
    plan: &RunPlan,
    backend: Option<&crate::trace::BackendChoice>,
    idle: Option<&[crate::format::run_record::IdleStateRecord]>,
    warnings: &[String],
) -> String {
    let mut t = String::from("jitterlab run --dry-run: every check passed; nothing was started.\n");
    describe_measurement(&mut t, plan);
    describe_length(&mut t, plan);
    describe_loads(&mut t, plan);
    describe_actions(&mut t, plan);
    let _ = writeln!(
        t,
        "  budget: {}",
        plan.budget
            .as_ref()
            .map_or("none".into(), |b| b.expression.clone())
    );
    let _ = writeln!(
        t,
        "  trace: {}",
        match backend {
            Some(b) => format!(
                "on (timer IRQ latency and explanations of late wakeups), back end {} ({})",
                b.backend, b.reason
            ),
            None => "off".into(),
        }
    );
    if let (Some(max), Some(idle)) = (plan.idle_state_max, idle) {
        let states: Vec<String> = idle
            .iter()
            .map(|s| format!("CPU {} {} ({} us)", s.cpu, s.name, s.latency_us))
            .collect();
        let _ = writeln!(
            t,
            "  idle states: deeper than state {max} disabled for the run: {}",
            if states.is_empty() {
                "none enabled now".into()
            } else {
                states.join(", ")
            }
        );
    }
    describe_output(&mut t, plan);
    for w in warnings {
        let _ = writeln!(t, "  warning: {w}");
    }
    t
}

/// The CPUs, scheduling, wake method and periods.
fn describe_measurement(t: &mut String, plan: &RunPlan) {
    // cyclictest -d: how much longer each thread's period is than the one before (0 for noise).
    let distance_ns = plan
        .thread_interval_ns(1)
        .saturating_sub(plan.thread_interval_ns(0));
    let _ = writeln!(
        t,
        "  measure: CPUs {}, {} {}, wake {} ({} clock), interval {}{}",
        crate::cpulist::format_cpu_list(&plan.cpus),
        plan.policy.name(),
        plan.priority,
        plan.wake_method().name,
        plan.clock().name(),
        format_ns(plan.thread_interval_ns(0)),
        if distance_ns > 0 {
            format!(" + {} per further thread", format_ns(distance_ns))
        } else {
            String::new()
        }
    );
}

/// How long the run would last, and the wakeups it would make.
fn describe_length(t: &mut String, plan: &RunPlan) {
    let wakeups = wakeups_per_thread(plan);
    let length = match plan.length {
        RunLength::Duration(ns) => format!("{} (until stopped early)", format_elapsed(ns)),
        RunLength::Loops(n) => format!(
            "{n} wakeups per thread, about {} at the {}{}",
            format_elapsed(expected_ns(plan).unwrap_or(u64::MAX)),
            match plan.cpus.len() > 1 && plan.thread_interval_ns(1) != plan.thread_interval_ns(0) {
                true => "longest thread's interval",
                false => "interval",
            },
            match plan.interval_step_ns() {
                0 => String::new(),
                step => format!(
                    " growing by --interval-step {} a wakeup",
                    crate::units::format_ns(step)
                ),
            }
        ),
        RunLength::Endless => "until stopped".into(),
    };
    let _ = match plan.length {
        // No count of wakeups to give for a run without end (`monitor`).
        RunLength::Endless => writeln!(t, "  length: {length} (SIGINT or SIGTERM)"),
        _ => writeln!(
            t,
            "  length: {length}; about {} wakeups per thread, {} in all",
            per_thread_words(&wakeups),
            total(&wakeups)
        ),
    };
}

/// The loads of the whole run, and the scenario's phases with theirs.
fn describe_loads(t: &mut String, plan: &RunPlan) {
    for load in &plan.load_texts {
        let _ = writeln!(t, "  load for the whole run: {load}");
    }
    let Some(s) = &plan.scenario else {
        return;
    };
    let counted = if s.counts_wakeups() {
        format!(
            "about, as planned at thread 0's interval; the run ends with its last phase, at most {}",
            match plan.length {
                RunLength::Duration(ns) => format_elapsed(ns),
                _ => "when stopped".into(),
            }
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        t,
        "  scenario {} ({}{}{counted}):",
        s.path.display(),
        format_elapsed(s.length_ns),
        if counted.is_empty() { "" } else { " " },
    );
    let thread0 = plan.cpus.first().copied().unwrap_or(0);
    for p in &s.phases {
        let loads: Vec<&str> = p.loads.iter().map(|l| l.text.as_str()).collect();
        let label = match p.wakeups {
            Some(n) => format!(
                "{} (ends after {n} wakeups of thread 0, CPU {thread0})",
                p.label
            ),
            None => p.label.clone(),
        };
        let _ = writeln!(
            t,
            "    {:>9} - {:>9}  {}: {}",
            format_elapsed(p.start_ns),
            format_elapsed(p.end_ns),
            label,
            if loads.is_empty() {
                "no load".into()
            } else {
                loads.join(", ")
            }
        );
    }
}

/// `--on-threshold` and `--on-end`, as run.json `actions` will name them.
fn describe_actions(t: &mut String, plan: &RunPlan) {
    let a = &plan.actions;
    for action in &a.on_threshold {
        let _ = writeln!(
            t,
            "  on each spike (over the deadline; at most once per {}): {}",
            format_ns(a.gap_ns),
            action.describe()
        );
    }
    for action in &a.on_end {
        let _ = writeln!(t, "  at the end: {}", action.describe());
    }
    let execs = a
        .on_threshold
        .iter()
        .chain(&a.on_end)
        .any(|a| matches!(a, crate::plan::actions::Action::Exec { .. }));
    if a.on_threshold
        .iter()
        .any(|a| matches!(a, crate::plan::actions::Action::Snapshot { .. }))
    {
        let _ = writeln!(
            t,
            "  snapshots: at most {} waiting at once; at most {} and {} snapshots in all (--snapshot-limit)",
            crate::plan::actions::MAX_PENDING_SNAPSHOTS,
            crate::input::format_bytes(a.snapshot_limit_bytes),
            crate::units::group_digits(crate::plan::actions::MAX_SNAPSHOTS)
        );
    }
    if execs {
        let _ = writeln!(
            t,
            "  exec: programs: at most {} running at once; at the end waited for at most {} (then killed)",
            crate::plan::actions::MAX_PROGRAMS,
            format_ns(a.wait_ns)
        );
    }
}

/// The result directory and the files the run would write in it.
fn describe_output(t: &mut String, plan: &RunPlan) {
    let out = plan.out.as_ref().map_or_else(
        || "./jitterlab-results/<UTC time>-<host>-<pid> (new)".to_string(),
        |o| format!("{} (new)", o.display()),
    );
    let _ = writeln!(t, "  output: {out}");
    let intervals = match expected_ns(plan) {
        Some(ns) => ns.div_ceil(plan.log_interval_ns.max(1)).to_string(),
        None => "open-ended:".into(),
    };
    // A segmented run (`monitor`) writes its log in segments (the monitor says which).
    let (log, events) = match plan.segments {
        Some(_) => ("latency-NNNNNN.hlog", "events-NNNNNN.jsonl"),
        None => ("latency.hlog", "events.jsonl"),
    };
    let _ = writeln!(
        t,
        "    run.json, {log} ({intervals} intervals of {} per thread), {events}",
        format_ns(plan.log_interval_ns)
    );
    let wakeups = wakeups_per_thread(plan);
    if plan.samples {
        let _ = writeln!(
            t,
            "    samples.bin: every sample, {} in all (docs/result-format.md gives its size per sample)",
            total(&wakeups)
        );
    }
    if let Some(every) = plan.summary_every {
        let _ = writeln!(
            t,
            "    events.jsonl: a wakeup_summary every {every} samples per thread, about {} per thread",
            per_thread_words(
                &wakeups
                    .iter()
                    .map(|w| w.div_ceil(every))
                    .collect::<Vec<_>>()
            )
        );
    }
}

/// How long the run is expected to last: its duration, or with `--loops` its longest thread's
/// loops (each thread's own interval, `--distance` and `--interval-step` included: the run
/// ends when its last thread has done them).
fn expected_ns(plan: &RunPlan) -> Option<u64> {
    (0..plan.cpus.len().max(1))
        .map(|i| plan.thread_expected_ns(i))
        .try_fold(0, |longest: u64, ns| ns.map(|ns| longest.max(ns)))
}

/// The wakeups each thread would make, in plan order: its loops, or the most whose stepped
/// intervals (its own, `--distance` included) fit in the duration.
fn wakeups_per_thread(plan: &RunPlan) -> Vec<u64> {
    (0..plan.cpus.len().max(1))
        .map(|i| thread_wakeups(plan, i))
        .collect()
}

/// [`wakeups_per_thread`] of the thread at `index` (0 for an endless run).
fn thread_wakeups(plan: &RunPlan, index: usize) -> u64 {
    plan.thread_wakeups(index).unwrap_or(0)
}

/// Per-thread counts in words: one number when every thread's is the same, else each
/// thread's ("27-76: 76, 27").
fn per_thread_words(counts: &[u64]) -> String {
    let (low, high) = (
        counts.iter().min().copied().unwrap_or(0),
        counts.iter().max().copied().unwrap_or(0),
    );
    match low == high {
        true => low.to_string(),
        false => format!(
            "{low}-{high} (in plan order {})",
            counts
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The wakeups of every thread together.
fn total(counts: &[u64]) -> u64 {
    counts.iter().fold(0, |sum, &w| sum.saturating_add(w))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::options::{LatencyRunOptions, LengthOptions};

    /// A plan on CPUs 0 and 1 at 1 ms, thread 1 `distance` later, stepped by `step`.
    fn plan(length: LengthOptions, distance: &str, step: &str) -> RunPlan {
        let mut o = LatencyRunOptions::default();
        o.shared.cpus.cpus = Some("0,1".into());
        o.shared.length = Some(length);
        o.latency.interval = "1ms".into();
        o.latency.distance = distance.into();
        o.latency.interval_step = Some(step.into());
        crate::plan::build::latency(&o, &[0, 1]).expect("the plan resolves")
    }

    /// Issue 42: the length and the wakeups of a stepped run are each thread's own: thread 1's
    /// longer interval makes the loops last longer and a duration hold fewer wakeups.
    #[test]
    fn the_stepped_length_and_wakeups_are_each_threads_own() {
        // 100 loops: thread 0 100 x 1 ms + 1 ms x 100 x 99 / 2 = 5.05 s; thread 1 (11 ms)
        // 1.1 s + 4.95 s = 6.05 s, the run's length.
        let loops = plan(
            LengthOptions {
                loops: Some(100),
                ..LengthOptions::default()
            },
            "10ms",
            "1ms",
        );
        assert_eq!(expected_ns(&loops), Some(6_050_000_000));
        assert_eq!(wakeups_per_thread(&loops), [100, 100]);
        // 3 s: thread 0 fits 76 (76 ms + 2.85 s = 2.926 s; 77 would be 3.003 s), thread 1
        // (101 ms) 26 (2.626 s + 0.325 s = 2.951 s; 27 would be 2.727 s + 0.351 s = 3.078 s).
        let duration = plan(
            LengthOptions {
                duration: Some("3s".into()),
                ..LengthOptions::default()
            },
            "100ms",
            "1ms",
        );
        assert_eq!(wakeups_per_thread(&duration), [76, 26]);
        let text = {
            let mut t = String::new();
            describe_length(&mut t, &duration);
            t
        };
        assert!(
            text.contains("about 26-76 (in plan order 76, 26) wakeups per thread, 102 in all"),
            "{text}"
        );
        let text = {
            let mut t = String::new();
            describe_length(&mut t, &loops);
            describe_output(&mut t, &loops);
            t
        };
        assert!(text.contains("about 6."), "{text}");
        // 6.05 s of 1 s log intervals: 7.
        assert!(
            text.contains("(7 intervals of 1.00 s per thread)"),
            "{text}"
        );
    }
}

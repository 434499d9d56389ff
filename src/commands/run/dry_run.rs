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
            "{n} wakeups per thread, about {} at the interval{}",
            format_elapsed(plan.thread_expected_ns(0).unwrap_or(u64::MAX)),
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
            wakeups,
            wakeups.saturating_mul(plan.cpus.len() as u64)
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
    let _ = writeln!(
        t,
        "  scenario {} ({}):",
        s.path.display(),
        format_elapsed(s.length_ns)
    );
    for p in &s.phases {
        let loads: Vec<&str> = p.loads.iter().map(|l| l.text.as_str()).collect();
        let _ = writeln!(
            t,
            "    {:>9} - {:>9}  {}: {}",
            format_elapsed(p.start_ns),
            format_elapsed(p.end_ns),
            p.label,
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
    let intervals = match plan.thread_expected_ns(0) {
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
            wakeups.saturating_mul(plan.cpus.len() as u64)
        );
    }
    if let Some(every) = plan.summary_every {
        let _ = writeln!(
            t,
            "    events.jsonl: a wakeup_summary every {every} samples per thread, about {} per thread",
            wakeups.div_ceil(every)
        );
    }
}

/// The wakeups each thread would make: its loops, or its length over the interval.
fn wakeups_per_thread(plan: &RunPlan) -> u64 {
    plan.thread_wakeups(0).unwrap_or(0)
}

//! `jitterlab tune [run options] [--fixes LIST] [--rounds N]`: what each tuning fix buys on
//! this machine (docs/tune.md). The arms, the settings they change and set back, and the
//! comparison are `tune`'s; this file makes the plan from the command line, the tune
//! directory, and prints the table.

use crate::cli::TuneArgs;
use crate::error::{ExitCode, Failure, Result};
use crate::results::{ResultDir, dir};
use crate::tune::fixes::Change;
use crate::tune::{self, TunePlan};
use std::path::PathBuf;
use std::time::SystemTime;

/// A tune whose arms (with the worthwhile fixes' arms together) would last longer than the
/// longest run, 3650 days, is refused at once: its total was a saturated sum printed as exact
/// (`about 5124095h34m33s` for `-D 3650d --rounds 1000`; thirteenth hostile re-run, L13-h).
fn refuse_a_tune_past_the_longest_run(plan: &TunePlan) -> Result<()> {
    let Some(length) = plan.base.length.duration_ns() else {
        return Ok(());
    };
    let arms = plan.rounds * (plan.measured.len() + 1) + 2 * plan.rounds;
    let total = u64::try_from(arms)
        .ok()
        .and_then(|arms| length.checked_mul(arms))
        .filter(|&t| t <= crate::plan::MAX_DURATION_NS);
    match total {
        Some(_) => Ok(()),
        None => Err(Failure::usage(format!(
            "a tune of {arms} arms (with the worthwhile fixes' together) of {} each lasts longer than the longest run, 3650d: give a shorter --duration or fewer --rounds or --fixes",
            crate::units::format_elapsed(length)
        ))),
    }
}

pub fn run(args: &TuneArgs) -> Result<i32> {
    // Bounded before anything is probed or planned (the schedule holds every arm).
    let rounds = usize::try_from(args.rounds)
        .ok()
        .filter(|r| tune::ROUNDS.contains(r))
        .ok_or_else(|| {
            Failure::usage(format!(
                "--rounds {}: give {} to {} (at least 2 for an interval that can tell a fix from the noise; each round is one arm per fix)",
                args.rounds,
                tune::ROUNDS.start(),
                tune::ROUNDS.end()
            ))
        })?;
    let online = crate::plan::build::online()?;
    let base = crate::plan::build::latency(&args.run.options(None), &online)?;
    let ctx = tune::fixes::system_ctx(&base.cpus).map_err(Failure::system)?;
    let plan = tune::plan(base, &args.fixes, rounds, &ctx)?;
    refuse_a_tune_past_the_longest_run(&plan)?;
    if args.run.check.dry_run {
        // The real tune's own refusal, first, as it comes first there (eighth hostile
        // re-run, P1: a user's dry run passed what the tune refused at once).
        if !plan.measured.is_empty() {
            refuse_kernel_settings_without_root(&plan)?;
        }
        return dry_run(args, &plan);
    }
    let json = args.run.samples_and_json.json;
    if plan.measured.is_empty() {
        // Nothing is run, so no tune directory is made: the record of what was probed.
        if json {
            let mut record = crate::format::tune::TuneRecord::new(&plan);
            record.end(
                crate::format::tune::TuneEnded::Completed,
                Some("no fix to measure on this machine; nothing was run".into()),
            );
            crate::stdout::line(&record.json())?;
        } else {
            crate::stdout::write(&nothing_to_measure(&plan, false))?;
        }
        return Ok(0);
    }
    refuse_kernel_settings_without_root(&plan)?;
    let claim = match &args.run.output.out {
        Some(out) => ResultDir::create(out, "--out")?,
        None => ResultDir::create_unique(&default_tune_dir(), "--out")?,
    };
    let tune_dir = claim.keep();
    // Held across the arms, so that no other run takes the CPUs between two of them.
    let (_cpu_locks, lock_warnings) =
        crate::session::cpulock::take(&plan.base.cpus, args.run.cpus.allow_shared_cpus)?;
    lock_warnings
        .iter()
        .for_each(|w| eprintln!("jitterlab: warning: {w}"));
    let quiet = args.run.output.quiet;
    let outcome = tune::run(&plan, &tune_dir, true, &|line| {
        if !quiet {
            eprintln!("{line}");
        }
    })?;
    if json {
        crate::stdout::line(&outcome.record.json())?;
    } else {
        crate::stdout::write(&tune::view::table(&outcome.record))?;
        crate::stdout::line(&format!("Tune: {}", tune_dir.path.display()))?;
    }
    if outcome.interrupted {
        eprintln!(
            "tune: interrupted after {} arm(s); their results are in {}",
            outcome.record.arms.len(),
            tune_dir.path.display()
        );
    }
    let failed = outcome.record.arms.iter().any(|a| a.ended == "failed");
    Ok(if failed { ExitCode::Run as i32 } else { 0 })
}

/// A tune whose fixes change kernel settings needs root (exit 3); the dry run refuses as the
/// tune does.
fn refuse_kernel_settings_without_root(plan: &TunePlan) -> Result<()> {
    let writes_kernel = plan
        .measured
        .iter()
        .any(|m| matches!(m.change, Change::Settings(_)));
    if writes_kernel && crate::sys::process::effective_user_id() != 0 {
        return Err(Failure::system(
            "tune: the fixes measured here change kernel settings (/proc/sys, /proc/irq, /sys), which needs root; run it as root, or name only --fixes pm-qos,cpuset",
        ));
    }
    Ok(())
}

/// Where a tune without `--out` is made: a run's default path with `-tune` after it.
fn default_tune_dir() -> PathBuf {
    let mut p =
        dir::default_path(SystemTime::now(), &crate::doctor::host::hostname()).into_os_string();
    p.push("-tune");
    PathBuf::from(p)
}

/// What a tune with no fix to measure says, or its dry run (`dry`): the fixes not measured
/// and why, and that nothing is (or would be) run and no tune directory made.
fn nothing_to_measure(plan: &TunePlan, dry: bool) -> String {
    let mut text = match dry {
        true => String::from("Not measured:\n"),
        false => String::new(),
    };
    text += &not_measured(plan);
    text += match dry {
        false => "tune: no fix to measure on this machine; nothing was run\n",
        true => {
            "tune: no fix to measure on this machine; the tune would measure nothing: no arm run, no tune directory made (exit 0)\n"
        }
    };
    text
}

/// The fixes not measured, and why.
fn not_measured(plan: &TunePlan) -> String {
    let mut text = String::new();
    for u in &plan.unmeasured {
        let kind = if u.needs_reboot {
            "needs a reboot"
        } else {
            "not applicable"
        };
        text += &format!("  {:<16} {kind}: {}\n", u.fix.name, u.why);
    }
    text
}

/// `tune --dry-run`: the fixes that would be measured and what each arm would change, those
/// that would not and why, the arms and their time, and the arm's run checked as `run
/// --dry-run` checks it; nothing is changed or started.
fn dry_run(args: &TuneArgs, plan: &TunePlan) -> Result<i32> {
    if plan.measured.is_empty() {
        // What the tune would do: nothing (no arm, no tune directory), and its exit code, 0
        // (ninth hostile re-run, L9-c: the dry run planned baseline arms and a tune directory).
        crate::stdout::write(&nothing_to_measure(plan, true))?;
        return Ok(0);
    }
    match &args.run.output.out {
        Some(out) => ResultDir::check_new(out, "--out")?,
        None => ResultDir::check_new_default(&default_tune_dir(), "--out")?,
    }
    let mut text = String::from("Fixes measured, and what an arm with each changes:\n");
    for m in &plan.measured {
        text += &format!("  {:<16} now: {}\n", m.fix.name, m.now);
        for line in tune::record::change_lines(&m.change) {
            text += &format!("  {:<16}   sets {line}\n", "");
        }
    }
    if plan.measured.is_empty() {
        text += "  (none)\n";
    }
    text += "Not measured:\n";
    text += &not_measured(plan);
    let arms = plan.rounds * (plan.measured.len() + 1);
    let length = plan.base.length.duration_ns();
    text += &format!(
        "{arms} arms ({} rounds of the baseline and {} fix(es)){}, then the worthwhile fixes together against none ({} more arms) when two or more are worth applying\n",
        plan.rounds,
        plan.measured.len(),
        length
            .map(|d| format!(
                " of {} each: about {}",
                crate::units::format_elapsed(d),
                crate::units::format_elapsed(d.saturating_mul(arms as u64))
            ))
            .unwrap_or_default(),
        2 * plan.rounds
    );
    // The arms are made inside the tune directory, as `tune::run` names them.
    let tune_dir = args
        .run
        .output
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("./jitterlab-results/<UTC time>-<host>-<pid>-tune"));
    text += &format!(
        "Tune directory: {} (new); each arm's run in it as <round>-<arm>, e.g. 01-baseline\n",
        tune_dir.display()
    );
    text += "Each arm's run:\n";
    let mut arm = plan.base.clone();
    arm.out = Some(tune_dir.join("01-baseline"));
    text += &crate::commands::run::dry_run::check_all_but_output(&arm)?;
    crate::stdout::write(&text)?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// L9-c (ninth hostile re-run): with no fix to measure, the dry run says that nothing
    /// would be measured, as the tune then runs nothing, instead of planning baseline arms and
    /// a tune directory.
    #[test]
    fn a_dry_run_with_no_fix_to_measure_says_nothing_would_be_measured() {
        let mut options = crate::plan::options::LatencyRunOptions::default();
        options.shared.cpus.cpus = Some("0".into());
        let plan = TunePlan {
            base: crate::plan::build::latency(&options, &[0, 1]).expect("the plan resolves"),
            rounds: 2,
            measured: Vec::new(),
            unmeasured: vec![tune::Unmeasured {
                fix: tune::fixes::FIXES
                    .iter()
                    .find(|f| f.name == "pm-qos")
                    .expect("a fix"),
                why: "no cpuidle driver".into(),
                needs_reboot: false,
            }],
        };
        let dry = nothing_to_measure(&plan, true);
        assert!(dry.contains("pm-qos") && dry.contains("not applicable: no cpuidle driver"));
        assert!(dry.contains("the tune would measure nothing: no arm run, no tune directory"));
        assert!(
            !dry.contains("arms (") && !dry.contains("Tune directory"),
            "{dry}"
        );
        let real = nothing_to_measure(&plan, false);
        assert!(real.ends_with("tune: no fix to measure on this machine; nothing was run\n"));
    }

    /// L13-h (thirteenth hostile re-run): `-D 3650d --rounds 1000` was accepted, its dry run's
    /// total a saturated sum shown as exact; a tune past the longest run is refused (exit 2)
    /// with its arms and their length, and one within it is not.
    #[test]
    fn a_tune_longer_than_the_longest_run_is_refused() {
        let plan_of = |duration: &str, rounds: usize| {
            let mut options = crate::plan::options::LatencyRunOptions::default();
            options.shared.cpus.cpus = Some("0".into());
            options.shared.length = Some(crate::plan::options::LengthOptions {
                duration: Some(duration.into()),
                ..Default::default()
            });
            TunePlan {
                base: crate::plan::build::latency(&options, &[0, 1]).expect("the plan resolves"),
                rounds,
                measured: Vec::new(),
                unmeasured: Vec::new(),
            }
        };
        let e = refuse_a_tune_past_the_longest_run(&plan_of("3650d", 1000))
            .expect_err("3000 arms of 3650 days");
        assert_eq!(e.code, ExitCode::Usage, "{}", e.message);
        assert!(
            e.message.contains("a tune of 3000 arms") && e.message.contains("3650d"),
            "{}",
            e.message
        );
        // 6 arms of 600 days: 3600 days, within; 6 of 700: 4200, past it.
        assert!(refuse_a_tune_past_the_longest_run(&plan_of("600d", 2)).is_ok());
        assert!(refuse_a_tune_past_the_longest_run(&plan_of("700d", 2)).is_err());
    }
}

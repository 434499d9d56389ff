//! `jitterlab tune`: what each fix of an RT tuning guide buys on this machine, measured before
//! anyone applies it. Every fix that doctor would advise and that can be changed at run time
//! and set back (fixes.rs, one row each) is measured in arms: runs of the same plan with and
//! without it, in rounds whose order rotates (schedule.rs) so that the machine's drift falls
//! on every fix alike; each fix's arms are pooled against the baseline's (effect.rs), and the
//! worthwhile fixes are then measured together against none. What each arm changes in the
//! kernel is journalled and set back on every exit path (session/settings.rs); what the run's
//! own options change (PM QoS, a cpuset) the session sets back as it always does. The files
//! people deploy are written for the worthwhile fixes (deploy.rs), never applied.
//!
//! Layer: above the session and the views (it runs sessions and compares their results),
//! below the commands.

pub(crate) mod deploy;
pub mod effect;
pub(crate) mod fixes;
pub mod record;
pub(crate) mod schedule;
pub(crate) mod view;

use crate::error::{Failure, Result};
use crate::format::run_record::Ended;
use crate::format::tune::{ArmRecord, Effect, TuneEnded, TuneRecord, Verdict};
use crate::plan::RunPlan;
use crate::results::ResultDir;
use crate::results::loaded::LoadedRun;
use crate::session::settings::{ChangedSettings, SYSTEM_ROOT, Setting};
use fixes::{Change, Ctx, Fix, PlanChange, Probe};
use schedule::{Arm, Treatment};
use std::path::Path;

/// A fix that will be measured: what it changes here, and what it is now.
#[derive(Debug, Clone)]
pub(crate) struct Measured {
    pub(crate) fix: &'static Fix,
    pub(crate) change: Change,
    pub now: String,
}

/// A fix that will not be measured, and why.
#[derive(Debug, Clone)]
pub(crate) struct Unmeasured {
    pub(crate) fix: &'static Fix,
    pub why: String,
    /// It needs a reboot or another kernel; `why` says how to measure it instead.
    pub(crate) needs_reboot: bool,
}

/// A validated tune.
#[derive(Debug, Clone)]
pub(crate) struct TunePlan {
    /// Every arm's run (its `out` set per arm): the user's run options, with PM QoS and the
    /// cpuset partition off, since they are fixes measured here, not the machine as it is.
    pub base: RunPlan,
    pub(crate) rounds: usize,
    pub measured: Vec<Measured>,
    pub(crate) unmeasured: Vec<Unmeasured>,
}

/// The rounds a tune may have (`--rounds`): two for an interval at all; a thousand is already
/// a thousand arms per fix, and the schedule of every arm is made at the start.
pub(crate) const ROUNDS: std::ops::RangeInclusive<usize> = 2..=1000;

/// The shortest log interval an arm is given (`--log-interval`'s own floor).
const MIN_LOG_INTERVAL_NS: u64 = 10_000_000;

/// Probes the fixes named in `chosen` (every fix when empty) on `ctx`, and plans `rounds`
/// rounds of arms of `base`. A name that is not a fix is refused, listing them.
pub(crate) fn plan(base: RunPlan, chosen: &[String], rounds: usize, ctx: &Ctx) -> Result<TunePlan> {
    if !ROUNDS.contains(&rounds) {
        return Err(Failure::usage(format!(
            "--rounds {rounds}: give {} to {}",
            ROUNDS.start(),
            ROUNDS.end()
        )));
    }
    for name in chosen {
        if fixes::find(name).is_none() {
            return Err(Failure::usage(format!(
                "--fixes: no fix is called '{name}'; the fixes: {}",
                fixes::FIXES
                    .iter()
                    .map(|f| f.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }
    let mut measured = Vec::new();
    let mut unmeasured = Vec::new();
    for fix in fixes::FIXES {
        if !chosen.is_empty() && !chosen.iter().any(|c| c == fix.name) {
            continue;
        }
        match (fix.probe)(ctx) {
            Probe::Applies { change, now } => measured.push(Measured { fix, change, now }),
            Probe::NotApplicable(why) => unmeasured.push(Unmeasured {
                fix,
                why,
                needs_reboot: false,
            }),
            Probe::NeedsReboot(why) => unmeasured.push(Unmeasured {
                fix,
                why,
                needs_reboot: true,
            }),
        }
    }
    // Each arm logs at least 20 intervals, so that a fix's pooled arms have the blocks the
    // bootstrap resamples (compare.md) rather than falling back on order statistics, which
    // take the samples as independent and so ignore how the arms differ.
    // An arm's length is its expected time, `--duration` or `--loops` at the interval alike
    // (with `--loops` the log interval once stayed 1 s: arms of 2 s logged 3 intervals).
    let log_interval_ns = match base.thread_expected_ns(0) {
        Some(d) if d / 20 < MIN_LOG_INTERVAL_NS => {
            return Err(Failure::usage(format!(
                "tune: an arm of about {} would log fewer than 20 intervals of at least {} (the blocks the comparison resamples): give each arm {} or more (--duration, or --loops at the interval)",
                crate::units::format_ns(d),
                crate::units::format_ns(MIN_LOG_INTERVAL_NS),
                crate::units::format_ns(20 * MIN_LOG_INTERVAL_NS)
            )));
        }
        Some(d) => (d / 20).clamp(
            MIN_LOG_INTERVAL_NS,
            base.log_interval_ns.max(MIN_LOG_INTERVAL_NS),
        ),
        None => base.log_interval_ns,
    };
    let base = RunPlan {
        pm_qos_us: None,
        cpuset_partition: false,
        out: None,
        log_interval_ns,
        ..base
    };
    Ok(TunePlan {
        base,
        rounds,
        measured,
        unmeasured,
    })
}

impl TunePlan {
    /// The names of the measured fixes, in order.
    pub(crate) fn names(&self) -> Vec<&'static str> {
        self.measured.iter().map(|m| m.fix.name).collect()
    }

    /// The changes of a treatment: the measured fixes' (one, or the worthwhile ones together).
    fn changes<'a>(&'a self, treatment: Treatment, together: &[usize]) -> Vec<&'a Change> {
        match treatment {
            Treatment::Baseline => Vec::new(),
            Treatment::Fix(i) => vec![&self.measured[i].change],
            Treatment::Together => together.iter().map(|&i| &self.measured[i].change).collect(),
        }
    }

    /// An arm's run plan, writing into `out`, and the kernel settings to make for it.
    fn arm(&self, changes: &[&Change], out: &Path) -> (RunPlan, Vec<Setting>) {
        let mut plan = RunPlan {
            out: Some(out.to_path_buf()),
            ..self.base.clone()
        };
        let mut settings = Vec::new();
        for change in changes {
            match change {
                Change::Settings(s) => settings.extend(s.iter().cloned()),
                Change::Plan(PlanChange::PmQos) => plan.pm_qos_us = Some(0),
                Change::Plan(PlanChange::CpusetPartition) => plan.cpuset_partition = true,
            }
        }
        (plan, settings)
    }
}

/// How a tune ended.
pub(crate) struct TuneOutcome {
    pub record: TuneRecord,
    /// Stopped by SIGINT/SIGTERM before every arm ran.
    pub(crate) interrupted: bool,
}

/// Runs the arms of `plan` into the tune directory `dir` (made, with its tune.json written
/// after each arm), the worthwhile fixes together after the rounds, and writes the deploy
/// files. `say`: a progress line (stderr).
pub(crate) fn run(
    plan: &TunePlan,
    dir: &ResultDir,
    quiet: bool,
    say: &dyn Fn(&str),
) -> Result<TuneOutcome> {
    let mut record = TuneRecord::new(plan);
    match measure(plan, dir, quiet, say, &mut record) {
        Ok(Some(reason)) => {
            record.end(TuneEnded::Interrupted, Some(reason));
            record.write(dir)?;
            Ok(TuneOutcome {
                record,
                interrupted: true,
            })
        }
        Ok(None) => {
            let failed: Vec<&str> = record
                .arms
                .iter()
                .filter(|a| a.ended == Ended::Failed.as_str())
                .map(|a| a.dir.as_str())
                .collect();
            let reason = (!failed.is_empty()).then(|| {
                format!(
                    "arm(s) failed: {} (their run.json says why)",
                    failed.join(", ")
                )
            });
            let ended = match reason {
                Some(_) => TuneEnded::Failed,
                None => TuneEnded::Completed,
            };
            record.end(ended, reason);
            record.write(dir)?;
            Ok(TuneOutcome {
                record,
                interrupted: false,
            })
        }
        Err(failure) => {
            // The file says so too (a script reading it after exit 3 or 4); the failure
            // itself is what is reported, so a write failing now adds nothing to it.
            record.end(TuneEnded::Failed, Some(failure.message.clone()));
            let _ = record.write(dir);
            Err(failure)
        }
    }
}

/// The arms of [`run`], recorded into `record` (written after each): None when every arm ran,
/// or why the tune was interrupted.
fn measure(
    plan: &TunePlan,
    dir: &ResultDir,
    quiet: bool,
    say: &dyn Fn(&str),
    record: &mut TuneRecord,
) -> Result<Option<String>> {
    let stop = crate::session::signals::stop_flag()?;
    let journal_dir = crate::journal::TrustedDir::for_this_user(true).map_err(|why| {
        Failure::system(format!(
            "tune: cannot open the directory of journals{}: without a journal a killed tune could not set the kernel's settings back",
            why.map(|w| format!(" ({w})")).unwrap_or_default()
        ))
    })?;
    // Held to the end, across the arms: no other tune changes a setting meanwhile.
    let settings_lock = crate::session::settings::SettingsLock::take(&journal_dir)
        .map_err(|e| Failure::system(format!("tune: {e}")))?;
    let names = plan.names();
    let mut runs: Vec<Vec<LoadedRun>> = vec![Vec::new(); names.len() + 2];
    let slot = |t: Treatment| match t {
        Treatment::Baseline => 0,
        Treatment::Fix(i) => i + 1,
        Treatment::Together => names.len() + 1,
    };
    let first = schedule::rounds(names.len(), plan.rounds);
    let command_line: Vec<String> = std::env::args().collect();
    // `prefix` keeps the arms of the second phase (the worthwhile fixes together against none)
    // apart from the first's: both have a round-1 baseline, and a result directory is never
    // written twice (the second phase's `01-baseline` was refused as existing).
    let run_arms = |arms: &[Arm],
                    together: &[usize],
                    prefix: &str,
                    record: &mut TuneRecord,
                    runs: &mut Vec<Vec<LoadedRun>>|
     -> Result<bool> {
        for (k, arm) in arms.iter().enumerate() {
            if stop.load(std::sync::atomic::Ordering::SeqCst) {
                return Ok(true);
            }
            let name = format!(
                "{prefix}{:02}-{}",
                arm.round + 1,
                arm.treatment.name(&names)
            );
            say(&format!(
                "tune: arm {}/{} (round {} of {}): {}",
                k + 1,
                arms.len(),
                arm.round + 1,
                plan.rounds,
                arm.treatment.name(&names)
            ));
            let out = dir.file(&name);
            let (arm_plan, settings) = plan.arm(&plan.changes(arm.treatment, together), &out);
            let mut changed = ChangedSettings::apply(
                &settings_lock,
                Path::new(SYSTEM_ROOT),
                &journal_dir,
                &settings,
            )
            .map_err(|e| Failure::system(format!("tune: arm {name}: {e}")))?;
            let outcome = crate::session::run(&arm_plan, quiet, command_line.clone());
            let failed_restores = changed.restore();
            for w in &failed_restores {
                eprintln!("jitterlab: warning: tune: {w}");
            }
            let outcome = outcome?;
            let ended = outcome.record.ended;
            let warnings: Vec<String> = pm_qos_elsewhere(&arm_plan, &outcome.record)
                .into_iter()
                .collect();
            for w in &warnings {
                eprintln!("jitterlab: warning: tune: arm {name}: {w}");
            }
            record.arms.push(ArmRecord {
                round: arm.round + 1,
                treatment: arm.treatment.name(&names),
                dir: name.clone(),
                ended: ended.as_str().to_string(),
                settings: changed.record.clone(),
                warnings,
            });
            if ended == Ended::Interrupted {
                record.write(dir)?;
                return Ok(true);
            }
            let loaded = crate::results::loaded::load(&outcome.dir.path)
                .map_err(|e| Failure::run(format!("tune: cannot read arm {name} back: {e}")))?;
            runs[slot(arm.treatment)].push(loaded);
            record.write(dir)?;
        }
        Ok(false)
    };
    let interrupted = |record: &TuneRecord, during: &str| {
        Some(format!(
            "{} {during}, after {} arm(s)",
            crate::session::signals::stop_reason(),
            record.arms.len()
        ))
    };
    if run_arms(&first, &[], "", &mut *record, &mut runs)? {
        return Ok(interrupted(
            record,
            &format!("during the rounds ({} arms): no fix judged", first.len()),
        ));
    }
    let effects: Vec<Effect> = (0..names.len())
        .map(|i| effect::effect(&runs[0], &runs[i + 1]))
        .collect();
    let worthwhile: Vec<usize> = (0..names.len())
        .filter(|&i| effects[i].verdict == Verdict::Worthwhile)
        .collect();
    record.fixes = record::ranked(&names, effects);
    if worthwhile.len() >= 2 {
        say(&format!(
            "tune: the {} worthwhile fixes together against none, {} rounds",
            worthwhile.len(),
            plan.rounds
        ));
        runs[0].clear();
        let arms = schedule::together(plan.rounds);
        if run_arms(&arms, &worthwhile, "together-", &mut *record, &mut runs)? {
            return Ok(interrupted(
                record,
                "during the worthwhile fixes together against none (the fixes are judged; `together` is not)",
            ));
        }
        record.together = Some(effect::effect(&runs[0], &runs[names.len() + 1]));
    }
    record.deploy = deploy::write(dir, plan, &worthwhile)?;
    Ok(None)
}

/// Another process's PM QoS request in force during an arm, below the arm's own (the arms
/// leave PM QoS alone but for the pm-qos fix's): said in its record, as the whole machine's
/// setting makes its figures other than its treatment's alone (S1). None when none was.
fn pm_qos_elsewhere(arm: &RunPlan, run: &crate::format::run_record::RunRecord) -> Option<String> {
    let pm = &run.environment.pm_qos;
    let own = arm
        .pm_qos_us
        .unwrap_or(crate::session::pmqos::NO_REQUEST_US);
    let in_force = pm.in_force_us.filter(|&us| us < own)?;
    let by: Vec<&str> = pm.held_by_others.iter().map(|h| h.text.as_str()).collect();
    Some(format!(
        "PM QoS {in_force} us was in force during this arm, held by {}: its figures are not its treatment's alone (PM QoS is the whole machine's); see its run.json",
        match by.is_empty() {
            true => "a process this user cannot see".to_string(),
            false => by.join("; "),
        }
    ))
}

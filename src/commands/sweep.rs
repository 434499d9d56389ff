//! `jitterlab sweep --load 'hackbench:groups={}' --levels 1,2,4 [run options]`: one
//! `jitterlab run` per level, each into `<sweep dir>/level-<value>/`, and a summary of all
//! levels (load throughput, per-CPU latency) as sweep.json and sweep.csv: the data behind
//! "hackbench time and max latency vs load" figures. The rules of levels are `load::sweep`'s,
//! the summary's format `results::sweep`'s.

use crate::cli::SweepArgs;
use crate::error::{ExitCode, Failure, Result};
use crate::format::run_record::{Ended, FORMAT};
use crate::load::GeneratorSpec;
use crate::load::supervisor::Outcome;
use crate::load::sweep::{level_spec, levels, swept_load};
use crate::plan::RunPlan;
use crate::report::terminal::{sweep_row, sweep_table};
use crate::results::sweep::{self, SweepRecord, SweepRow};
use crate::results::{ResultDir, dir};
use std::path::PathBuf;
use std::time::SystemTime;

/// A validated sweep: the plan of every level, in order.
struct SweepPlan {
    template: String,
    levels: Vec<String>,
    /// The CPUs every level measures.
    cpus: Vec<usize>,
    runs: Vec<RunPlan>,
    /// The level's load text, per level.
    specs: Vec<String>,
}

/// Checks everything before the first run: the levels, the template, and every level's whole
/// run plan (a level that makes a bad load fails here, naming the level).
fn plan(args: &SweepArgs) -> Result<SweepPlan> {
    let levels = levels(&args.levels)?;
    let swept = swept_load(&args.run.loads.load)?;
    let template = args.run.loads.load[swept].clone();
    let online = crate::plan::build::online()?;
    let actions = crate::plan::build::actions(&(&args.actions).into())?;
    let options = args.run.options(None);
    let mut runs = Vec::new();
    let mut specs = Vec::new();
    for level in &levels {
        let mut run = options.clone();
        let spec = level_spec(&template, level);
        run.shared.loads.load[swept] = spec.clone();
        let resolved = crate::plan::build::latency(&run, &online).map_err(|f| Failure {
            code: f.code,
            message: format!("sweep level {level}: {}", f.message),
        })?;
        runs.push(RunPlan {
            actions: actions.clone(),
            ..resolved
        });
        specs.push(spec);
    }
    Ok(SweepPlan {
        template,
        levels,
        cpus: runs.last().map(|r| r.cpus.clone()).unwrap_or_default(),
        runs,
        specs,
    })
}

/// The sweep directory, made (new) before anything starts, like a run's; dropping the claim
/// removes it again (a first level refused before it did anything).
fn claim_sweep_dir(args: &SweepArgs) -> Result<dir::Claim> {
    Ok(match &args.run.output.out {
        Some(out) => ResultDir::create(out, "--out")?,
        None => {
            let mut p = dir::default_path(SystemTime::now(), &crate::doctor::host::hostname())
                .into_os_string();
            p.push("-sweep");
            ResultDir::create_unique(&PathBuf::from(p), "--out")?
        }
    })
}

pub fn run(args: &SweepArgs) -> Result<i32> {
    if args.no_measure {
        return run_load_only(args);
    }
    let mut plan = plan(args)?;
    if args.run.check.dry_run {
        return dry_run(args, &mut plan);
    }
    let claim = claim_sweep_dir(args)?;
    let sweep_dir = claim.dir().clone();
    for (run, level) in plan.runs.iter_mut().zip(&plan.levels) {
        run.out = Some(sweep_dir.file(&format!("level-{level}")));
    }
    // Held across the levels, so that no other run takes the CPUs between two of them.
    let (_cpu_locks, lock_warnings) =
        crate::session::cpulock::take(&plan.cpus, args.run.cpus.allow_shared_cpus)?;
    lock_warnings
        .iter()
        .for_each(|w| eprintln!("jitterlab: warning: {w}"));
    let (record, failed) = measure_levels(&plan, claim, args.run.output.quiet)?;
    print_sweep(args, &record, &sweep_dir)?;
    Ok(if failed { ExitCode::Run as i32 } else { 0 })
}

/// Runs each level in turn, writing sweep.json and sweep.csv after each; the sweep directory is
/// kept once a level has measured. Returns the record and whether a level failed.
fn measure_levels(plan: &SweepPlan, claim: dir::Claim, quiet: bool) -> Result<(SweepRecord, bool)> {
    let sweep_dir = claim.dir().clone();
    let mut claim = Some(claim);
    let command_line: Vec<String> = std::env::args().collect();
    let mut record = SweepRecord {
        format: FORMAT,
        load_template: plan.template.clone(),
        levels: plan.levels.clone(),
        load_only: false,
        rows: Vec::new(),
        warnings: Vec::new(),
        ended: Some("running".into()),
        end_reason: None,
    };
    let n = plan.levels.len();
    let started = std::time::Instant::now();
    let mut failed = false;
    for (k, level) in plan.levels.iter().enumerate() {
        let eta = if k > 0 {
            let per = started.elapsed().as_secs_f64() / k as f64;
            format!(
                ", about {} left",
                crate::units::format_elapsed(((n - k) as f64 * per * 1e9) as u64)
            )
        } else {
            String::new()
        };
        eprintln!(
            "sweep: level {level} ({}/{n}): {}{eta}",
            k + 1,
            plan.specs[k]
        );
        let outcome = crate::session::run(&plan.runs[k], quiet, command_line.clone())?;
        // A level has measured: the sweep directory holds results and stays.
        if let Some(c) = claim.take() {
            c.keep();
        }
        let row = SweepRow::new(level, &plan.specs[k], &outcome.record);
        eprintln!("sweep: level {level} done: {}", sweep_row(&row));
        record.push_row(row);
        let interrupted = outcome.record.ended == Ended::Interrupted;
        failed |= outcome.record.ended == Ended::Failed;
        if interrupted || k + 1 == n {
            end_sweep(&mut record, interrupted, failed, k, level);
        }
        sweep::write(&sweep_dir, &record)?;
        if interrupted {
            eprintln!(
                "sweep: interrupted at level {level}; the levels done so far are in {}",
                sweep_dir.path.display()
            );
            break;
        }
    }
    Ok((record, failed))
}

/// `sweep --dry-run`: every level checked as its run's start would check it, and what each
/// would run and write; nothing is started or made.
fn dry_run(args: &SweepArgs, plan: &mut SweepPlan) -> Result<i32> {
    if let Some(out) = &args.run.output.out {
        // The sweep directory is made new as a run's is: the same check.
        ResultDir::check_new(out, "--out")?;
        for (run, level) in plan.runs.iter_mut().zip(&plan.levels) {
            run.out = Some(out.join(format!("level-{level}")));
        }
    }
    let mut text = String::new();
    for (k, level) in plan.levels.iter().enumerate() {
        text += &format!(
            "sweep level {level} ({}/{}): {}\n",
            k + 1,
            plan.levels.len(),
            plan.specs[k]
        );
        text += &crate::commands::run::dry_run::check(&plan.runs[k]).map_err(|f| Failure {
            code: f.code,
            message: format!("sweep level {level}: {}", f.message),
        })?;
    }
    crate::stdout::write(&text)?;
    Ok(0)
}

/// `sweep --no-measure`'s plan: every level's loads, parsed and checked before the first starts.
struct LoadOnlyPlan {
    template: String,
    levels: Vec<String>,
    duration_ns: u64,
    online: Vec<usize>,
    /// Per level: the swept load's text and every load of the level.
    per_level: Vec<(String, Vec<GeneratorSpec>)>,
}

/// `sweep --no-measure`: per level, the level's loads alone for `--duration` (no measuring
/// thread, no level directory), and their throughput in sweep.json and sweep.csv. Every level's
/// loads are checked before the first starts; clap refuses the options that apply only to a
/// measurement (--loops, --trace, --budget, --samples).
fn run_load_only(args: &SweepArgs) -> Result<i32> {
    let plan = plan_load_only(args)?;
    if args.run.check.dry_run {
        print_load_only_dry_run(&plan)?;
        return Ok(0);
    }
    let claim = claim_sweep_dir(args)?;
    let sweep_dir = claim.dir().clone();
    let (record, failed) = run_levels_alone(&plan, claim)?;
    print_sweep(args, &record, &sweep_dir)?;
    Ok(if failed { ExitCode::Run as i32 } else { 0 })
}

fn plan_load_only(args: &SweepArgs) -> Result<LoadOnlyPlan> {
    let levels = levels(&args.levels)?;
    let swept = swept_load(&args.run.loads.load)?;
    let template = args.run.loads.load[swept].clone();
    let duration_ns = match &args.run.length.duration {
        None => crate::plan::DEFAULT_DURATION_NS,
        Some(d) => crate::units::parse_duration_ns(d)
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| {
                Failure::usage(format!(
                    "--duration {d}: expected a duration above zero with a unit (e.g. 30s, 10m)"
                ))
            })?,
    };
    let online = crate::cpulist::online_cpus().map_err(Failure::system)?;
    let mut per_level = Vec::new();
    for level in &levels {
        let mut texts = args.run.loads.load.clone();
        texts[swept] = level_spec(&template, level);
        let loads = crate::commands::load::parse_alone(&texts, &online).map_err(|f| Failure {
            code: f.code,
            message: format!("sweep level {level}: {}", f.message),
        })?;
        per_level.push((texts[swept].clone(), loads));
    }
    Ok(LoadOnlyPlan {
        template,
        levels,
        duration_ns,
        online,
        per_level,
    })
}

fn print_load_only_dry_run(plan: &LoadOnlyPlan) -> Result<()> {
    let for_how_long = crate::units::format_elapsed(plan.duration_ns);
    let n = plan.levels.len();
    for (k, (level, (spec, loads))) in plan.levels.iter().zip(&plan.per_level).enumerate() {
        let texts: Vec<&str> = loads.iter().map(|g| g.text.as_str()).collect();
        crate::stdout::line(&format!(
            "sweep level {level} ({}/{n}): {spec}: the loads alone for {for_how_long}, not measured: {}",
            k + 1,
            texts.join(", ")
        ))?;
    }
    crate::stdout::line("nothing was started; sweep.json and sweep.csv would be written")
}

/// Runs each level's loads alone in turn, writing sweep.json and sweep.csv after each; the
/// sweep directory is kept once a level has run. Returns the record and whether a level failed.
fn run_levels_alone(plan: &LoadOnlyPlan, claim: dir::Claim) -> Result<(SweepRecord, bool)> {
    let sweep_dir = claim.dir().clone();
    let mut claim = Some(claim);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let interrupted = crate::session::signals::catch()?;
    let mut record = SweepRecord {
        format: FORMAT,
        load_template: plan.template.clone(),
        levels: plan.levels.clone(),
        load_only: true,
        rows: Vec::new(),
        warnings: Vec::new(),
        ended: Some("running".into()),
        end_reason: None,
    };
    let (n, for_how_long) = (
        plan.levels.len(),
        crate::units::format_elapsed(plan.duration_ns),
    );
    let mut failed = false;
    for (k, (level, (spec, loads))) in plan.levels.iter().zip(&plan.per_level).enumerate() {
        eprintln!(
            "sweep: level {level} ({}/{n}): {spec}, alone for {for_how_long}",
            k + 1
        );
        let outcome = crate::commands::load::run_alone(
            loads,
            plan.online.clone(),
            Some(plan.duration_ns),
            false,
            &interrupted,
            &stop,
        )?;
        if let Some(c) = claim.take() {
            c.keep();
        }
        outcome
            .warnings
            .iter()
            .for_each(|w| eprintln!("jitterlab: warning: {w}"));
        let row = load_only_row(level, spec, &outcome);
        eprintln!("sweep: level {level} done: {}", sweep_row(&row));
        record.push_row(row);
        if let Some(f) = &outcome.failure {
            eprintln!("jitterlab: sweep level {level}: {f}");
            failed = true;
        }
        let stopped = interrupted.load(std::sync::atomic::Ordering::SeqCst);
        if stopped || k + 1 == n {
            end_sweep(&mut record, stopped, failed, k, level);
        }
        sweep::write(&sweep_dir, &record)?;
        if stopped {
            eprintln!(
                "sweep: interrupted at level {level}; the levels done so far are in {}",
                sweep_dir.path.display()
            );
            break;
        }
    }
    Ok((record, failed))
}

/// sweep.json's end, once its last level has run or a stop request ended level `k` (`level`):
/// `interrupted` naming the signal, the level cut short and the levels not run; else `failed`
/// when a level failed, else `completed` (L10-e).
fn end_sweep(record: &mut SweepRecord, interrupted: bool, failed: bool, k: usize, level: &str) {
    let not_run = &record.levels[k + 1..];
    let (ended, reason) = if interrupted {
        let rest = match not_run.len() {
            0 => "every level had started".to_string(),
            _ => format!("level(s) {} not run", not_run.join(", ")),
        };
        (
            "interrupted",
            Some(format!(
                "{} at level {level} ({} of {}): its row holds what it measured before the stop; {rest}",
                crate::session::signals::stop_reason(),
                k + 1,
                record.levels.len()
            )),
        )
    } else if failed {
        (
            "failed",
            Some("a level failed: its run's end_reason says why".to_string()),
        )
    } else {
        ("completed", None)
    };
    record.ended = Some(ended.to_string());
    record.end_reason = reason;
}

/// A level of loads alone: the swept load's throughput, no latency.
fn load_only_row(level: &str, spec: &str, outcome: &Outcome) -> SweepRow {
    SweepRow {
        level: level.to_string(),
        run_dir: String::new(),
        throughput: outcome
            .loads
            .iter()
            .find(|l| l.spec.text == spec)
            .map(|l| l.record().throughput)
            .unwrap_or_default(),
        threads: Vec::new(),
    }
}

/// The sweep's record on stdout: sweep.json with `--json`, else the table and where it is.
fn print_sweep(args: &SweepArgs, record: &SweepRecord, sweep_dir: &ResultDir) -> Result<()> {
    if args.run.samples_and_json.json {
        crate::stdout::line(
            &serde_json::to_string_pretty(record).expect("sweep records serialise"),
        )?;
    } else {
        crate::stdout::write(&sweep_table(record))?;
        crate::stdout::line(&format!("Sweep: {}", sweep_dir.path.display()))?;
    }
    Ok(())
}

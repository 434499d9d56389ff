//! `jitterlab compare`: checks the options, reads the runs, and prints the comparison
//! (`report::compare_view`) as a terminal table, Markdown or JSON. Exit codes: 0; 1 when the
//! regression check or a budget fails; 2 for bad input.

use crate::analysis::budget::Budget;
use crate::analysis::compare;
use crate::analysis::phase;
use crate::analysis::regression::RegressionCheck;
use crate::cli::CompareArgs;
use crate::error::{ExitCode, Failure, Result, escape_controls};
use crate::report::compare_view::{evaluate, markdown, terminal};
use crate::report::sweep_tables::{comparison_table, throughput_comparison_table};
use crate::report::table::{Markdown, Markup, Terminal};
use crate::results::{loaded, sweep};

/// Runs of two kinds measure different quantities (a noise run's samples are gaps in a loop
/// that never sleeps, a latency run's are wakeup latencies): their ratios would compare
/// different things, so such a pair is refused.
fn refuse_mixed_kinds(paths: &[std::path::PathBuf], runs: &[loaded::LoadedRun]) -> Result<()> {
    let Some(first) = runs.first() else {
        return Ok(());
    };
    let what = |kind: crate::format::kind::RunKind| kind.words().run;
    match runs.iter().position(|r| r.record.kind != first.record.kind) {
        None => Ok(()),
        Some(k) => Err(Failure::usage(format!(
            "cannot compare {} ({}) with {} ({}): {} is {}, {} is {}; they measure different things. Compare {} runs with {} runs and {} runs with {} runs",
            compare::label(0),
            paths[0].display(),
            compare::label(k),
            paths[k].display(),
            compare::label(0),
            what(first.record.kind),
            compare::label(k),
            what(runs[k].record.kind),
            first.record.kind.name(),
            first.record.kind.name(),
            runs[k].record.kind.name(),
            runs[k].record.kind.name(),
        ))),
    }
}

pub fn run(args: &CompareArgs) -> Result<i32> {
    if args.runs.iter().any(|p| sweep::is_sweep_dir(p)) {
        return compare_sweeps(args);
    }
    // Every argument is checked before any run is read.
    let budget = Budget::from_option(args.budget.as_deref())?;
    let check = args
        .fail_if_worse
        .as_deref()
        .map(|m| RegressionCheck::parse(m, args.at.as_deref()))
        .transpose()
        .map_err(Failure::usage)?;

    let progress = indicatif::ProgressBar::new_spinner();
    progress.set_message(format!(
        "reading {}",
        (0..args.runs.len())
            .map(compare::label)
            .collect::<Vec<_>>()
            .join(", ")
    ));
    progress.enable_steady_tick(std::time::Duration::from_millis(200));
    let runs = read_runs(&args.runs, args.phase.as_deref())?;
    progress.finish_and_clear();
    refuse_mixed_kinds(&args.runs, &runs)?;
    progress.set_message("comparing (bootstrap intervals)");
    progress.tick();
    let output = evaluate(&runs, budget.as_ref(), check);
    progress.finish_and_clear();

    if args.json {
        crate::stdout::line(
            &serde_json::to_string_pretty(&output).expect("comparisons serialise"),
        )?;
    } else if args.markdown {
        crate::stdout::write(&markdown(&output))?;
    } else {
        crate::stdout::write(&terminal(&output))?;
    }
    Ok(if output.passed {
        0
    } else {
        ExitCode::CheckFailed as i32
    })
}

/// Reads the runs (each cut to `phase` when given) on as many threads as there are CPUs, one
/// run at a time per thread: each run is one streaming pass over its log or summary, and on a
/// month-long pair those passes are most of the time (issue 44: two 30-day runs). The first run
/// (in the order given) whose reading fails is the error, as if they were read in turn.
fn read_runs(paths: &[std::path::PathBuf], phase: Option<&str>) -> Result<Vec<loaded::LoadedRun>> {
    compare::in_parallel(paths, |_, path| {
        let run = loaded::load(path)?;
        match phase {
            Some(name) => phase::restrict(run, name),
            None => Ok(run),
        }
    })
    .into_iter()
    .map(|run| run.map_err(Failure::usage))
    .collect()
}

/// Sweep directories side by side ("with RT" vs "without RT"): per level the worst CPU's
/// latency of each, with each later sweep's max as a ratio to the first's, then the loads'
/// throughput. Every argument must be a sweep directory; the run checks (--budget,
/// --fail-if-worse) judge runs, not sweeps, and are refused.
fn compare_sweeps(args: &CompareArgs) -> Result<i32> {
    if let Some(p) = args.runs.iter().find(|p| !sweep::is_sweep_dir(p)) {
        return Err(Failure::usage(format!(
            "{} is not a sweep directory (no {}), and the others given are; compare sweeps with sweeps, or runs with runs (a level's run is <sweep>/level-<value>)",
            p.display(),
            sweep::FILE_NAME
        )));
    }
    if args.budget.is_some() || args.fail_if_worse.is_some() {
        return Err(Failure::usage(
            "--budget and --fail-if-worse judge runs, not sweeps; compare the levels' runs (<sweep>/level-<value>) to check them",
        ));
    }
    let records = args
        .runs
        .iter()
        .map(|p| sweep::read(p))
        .collect::<Result<Vec<_>>>()?;
    let sweeps: Vec<(String, &sweep::SweepRecord)> = args
        .runs
        .iter()
        .zip(&records)
        .enumerate()
        .map(|(i, (_, r))| (compare::label(i), r))
        .collect();
    if args.json {
        let list: Vec<serde_json::Value> = args
            .runs
            .iter()
            .zip(&sweeps)
            .map(|(path, (label, record))| {
                serde_json::json!({"label": label, "path": path, "sweep": record})
            })
            .collect();
        crate::stdout::line(
            &serde_json::to_string_pretty(&serde_json::json!({ "sweeps": list }))
                .expect("sweep records serialise"),
        )?;
        return Ok(0);
    }
    let markup: &dyn Markup = if args.markdown { &Markdown } else { &Terminal };
    let mut out = String::new();
    for (i, (label, record)) in sweeps.iter().enumerate() {
        out += &format!(
            "{label}: {} ({}){}\n",
            args.runs[i].display(),
            record.load_template,
            if i == 0 { ", the reference" } else { "" }
        );
    }
    out += "\nWorst CPU's latency per level (max as a multiple of A's):\n";
    out += &markup.render(&comparison_table(&sweeps));
    if let Some(t) = throughput_comparison_table(&sweeps) {
        out += "\nLoad throughput per level:\n";
        out += &markup.render(&t);
    }
    // sweep.json and the paths are input: no control character reaches the terminal raw.
    crate::stdout::write(&escape_controls(&out))?;
    Ok(0)
}

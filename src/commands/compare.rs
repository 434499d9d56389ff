//! `jitterlab compare`: checks the options, reads the runs, and prints the comparison
//! (`report::compare_view`) as a terminal table, Markdown or JSON. Exit codes: 0; 1 when the
//! regression check or a budget fails; 2 for bad input.

use crate::analysis::budget::Budget;
use crate::analysis::compare;
use crate::analysis::regression::RegressionCheck;
use crate::cli::CompareArgs;
use crate::error::{ExitCode, Failure, Result};
use crate::report::compare_view::{evaluate, markdown, terminal};
use crate::results::loaded;

/// A noise run's samples are gaps in a loop that never sleeps, a latency run's are wakeup
/// latencies: their ratios would compare different quantities, so such a pair is refused.
fn refuse_mixed_kinds(paths: &[std::path::PathBuf], runs: &[loaded::LoadedRun]) -> Result<()> {
    let Some(first) = runs.first() else {
        return Ok(());
    };
    let what = |kind: crate::results::format::noise::RunKind| {
        if kind.is_noise() {
            "a noise run (jitterlab noise: its figures are gap lengths in a loop that never sleeps)"
        } else {
            "a latency run (its figures are wakeup latencies)"
        }
    };
    match runs.iter().position(|r| r.record.kind != first.record.kind) {
        None => Ok(()),
        Some(k) => Err(Failure::usage(format!(
            "cannot compare {} ({}) with {} ({}): {} is {}, {} is {}; they measure different things. Compare noise runs with noise runs and latency runs with latency runs",
            compare::label(0),
            paths[0].display(),
            compare::label(k),
            paths[k].display(),
            compare::label(0),
            what(first.record.kind),
            compare::label(k),
            what(runs[k].record.kind),
        ))),
    }
}

pub fn run(args: &CompareArgs) -> Result<i32> {
    // Every argument is checked before any run is read.
    let budget = Budget::from_option(args.budget.as_deref())?;
    let check = args
        .fail_if_worse
        .as_deref()
        .map(|m| RegressionCheck::parse(m, args.at.as_deref()))
        .transpose()
        .map_err(Failure::usage)?;

    let progress = indicatif::ProgressBar::new_spinner();
    let mut runs = Vec::new();
    for (i, path) in args.runs.iter().enumerate() {
        progress.set_message(format!(
            "reading {} ({})",
            compare::label(i),
            path.display()
        ));
        progress.tick();
        runs.push(loaded::load(path).map_err(Failure::usage)?);
    }
    progress.finish_and_clear();
    refuse_mixed_kinds(&args.runs, &runs)?;
    progress.set_message("comparing (bootstrap intervals)");
    progress.tick();
    let output = evaluate(&runs, budget.as_ref(), check);
    progress.finish_and_clear();

    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&output).expect("comparisons serialise")
        );
    } else if args.markdown {
        print!("{}", markdown(&output));
    } else {
        print!("{}", terminal(&output));
    }
    Ok(if output.passed {
        0
    } else {
        ExitCode::CheckFailed as i32
    })
}

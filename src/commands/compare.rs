//! `jitterlab compare`: checks the options, reads the runs, and prints the comparison
//! (`report::compare_view`) as a terminal table, Markdown or JSON. Exit codes: 0; 1 when the
//! regression check or a budget fails; 2 for bad input.

use crate::analysis::budget::Budget;
use crate::analysis::compare;
use crate::analysis::phase;
use crate::analysis::regression::RegressionCheck;
use crate::cli::CompareArgs;
use crate::error::{ExitCode, Failure, Result};
use crate::report::compare_view::{evaluate, markdown, terminal};
use crate::results::loaded;

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
        let run = loaded::load(path).map_err(Failure::usage)?;
        runs.push(match &args.phase {
            Some(name) => phase::restrict(run, name).map_err(Failure::usage)?,
            None => run,
        });
    }
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

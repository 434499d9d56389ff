//! `jitterlab run`: the options to a [`RunPlan`](crate::plan::RunPlan) (`resolve`), the run
//! (`session`), then run.json or the summary on stdout and the exit code.

pub mod dry_run;
pub mod inversion;
pub mod resolve;
pub mod sender;
pub mod shared;

use crate::cli::RunArgs;
use crate::error::{ExitCode, Result};
use crate::format::run_record::Ended;
use crate::report;

pub fn run(args: &RunArgs) -> Result<i32> {
    let plan = resolve::resolve(args)?;
    if args.run.check.dry_run {
        print!("{}", dry_run::check(&plan)?);
        return Ok(0);
    }
    let outcome = crate::session::run(&plan, args.run.output.quiet, std::env::args().collect())?;
    Ok(print_outcome(
        &outcome,
        args.run.samples_and_json.json,
        args.run.output.verbose,
    ))
}

/// Prints a finished run (run.json with `json`, else the summary) and returns its exit code:
/// 4 for a failed run, 1 for a failed budget, else 0. Shared with `jitterlab noise`.
pub(crate) fn print_outcome(
    outcome: &crate::session::RunOutcome,
    json: bool,
    verbose: bool,
) -> i32 {
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&outcome.record).expect("run records serialise")
        );
    } else {
        print!(
            "{}",
            report::terminal::summary(&outcome.record, &outcome.dir.path, verbose)
        );
    }
    match outcome.record.ended {
        Ended::Failed => ExitCode::Run as i32,
        _ if outcome.record.budget.as_ref().is_some_and(|b| !b.passed) => {
            ExitCode::CheckFailed as i32
        }
        _ => 0,
    }
}

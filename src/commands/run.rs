//! `jitterlab run`: the options to a [`RunPlan`](crate::plan::RunPlan) (`resolve`), the run
//! (`runner`), then run.json or the summary on stdout and the exit code.

pub mod resolve;

use crate::cli::RunArgs;
use crate::error::{ExitCode, Result};
use crate::report;
use crate::results::run_record::Ended;

pub fn run(args: &RunArgs) -> Result<i32> {
    let plan = resolve::resolve(args)?;
    let outcome = crate::runner::run(&plan, args.quiet, std::env::args().collect())?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&outcome.record).expect("run records serialise")
        );
    } else {
        print!(
            "{}",
            report::terminal::summary(&outcome.record, &outcome.dir.path)
        );
    }
    Ok(match outcome.record.ended {
        Ended::Failed => ExitCode::Run as i32,
        _ if outcome.record.budget.as_ref().is_some_and(|b| !b.passed) => {
            ExitCode::CheckFailed as i32
        }
        _ => 0,
    })
}

//! `jitterlab run`: the options to a [`RunPlan`] (`plan::build`), the run (`session`), then
//! run.json or the summary on stdout and the exit code. `dry_run.rs` is `--dry-run`'s check of a
//! plan against the system, shared with `sweep` and `monitor`.

pub mod dry_run;

use crate::cli::RunArgs;
use crate::error::{ExitCode, Result};
use crate::format::run_record::{Ended, RunRecord};
use crate::plan::RunPlan;
use crate::report;
use std::path::Path;

/// `run`'s plan: its option groups built on this system's online CPUs.
pub fn resolve(args: &RunArgs) -> Result<RunPlan> {
    let online = crate::plan::build::online()?;
    crate::plan::build::run(&args.options(), &args.action_options(), &online)
}

pub fn run(args: &RunArgs) -> Result<i32> {
    let plan = resolve(args)?;
    if args.run.check.dry_run {
        crate::stdout::write(&dry_run::check(&plan)?)?;
        return Ok(0);
    }
    let outcome = crate::session::run(&plan, args.run.output.quiet, std::env::args().collect())?;
    print_outcome(
        &outcome,
        args.run.samples_and_json.json,
        args.run.output.verbose,
    )
}

/// Prints a finished run (run.json with `json`, else the summary) and returns its exit code:
/// 4 for a failed run, 1 for a failed budget, else 0. Shared with `jitterlab noise`.
pub(crate) fn print_outcome(
    outcome: &crate::session::RunOutcome,
    json: bool,
    verbose: bool,
) -> Result<i32> {
    // The results are whole on disk whatever becomes of stdout (a full disk): say where.
    let printed = if json {
        crate::stdout::line(
            &serde_json::to_string_pretty(&outcome.record).expect("run records serialise"),
        )
    } else {
        crate::stdout::write(&report::terminal::summary(
            &outcome.record,
            &outcome.dir.path,
            verbose,
        ))
    };
    // Said on stderr whatever --quiet, as every error is: with stdout elsewhere (a CI log
    // of stderr only) the summary's reason would be lost (issue 39 L-a).
    if let Some(line) = failure_line(&outcome.record, &outcome.dir.path) {
        eprintln!("{}", crate::error::escape_controls(&line));
    }
    printed.map_err(|e| {
        crate::error::Failure::run(format!(
            "{}; the results are whole in {}",
            e.message,
            outcome.dir.path.display()
        ))
    })?;
    Ok(match outcome.record.ended {
        Ended::Failed => ExitCode::Run as i32,
        _ if outcome.record.budget.as_ref().is_some_and(|b| !b.passed) => {
            ExitCode::CheckFailed as i32
        }
        _ => 0,
    })
}

/// The one line on stderr of a run that failed (exit 4) or failed its budget (exit 1): what
/// failed and where the results are; None for a run that exits 0. Shared with `monitor`.
pub(crate) fn failure_line(record: &RunRecord, dir: &Path) -> Option<String> {
    let what = match (&record.ended, &record.budget) {
        (Ended::Failed, _) => format!(
            "the run failed: {}",
            record.end_reason.as_deref().unwrap_or("no reason recorded")
        ),
        (_, Some(b)) if !b.passed => {
            let failed: Vec<String> = b
                .clauses
                .iter()
                .filter(|c| !c.passed)
                .map(|c| format!("{} ({})", c.clause, c.actual))
                .collect();
            format!(
                "the budget failed: {} of {} clauses violated: {}",
                failed.len(),
                b.clauses.len(),
                failed.join(", ")
            )
        }
        _ => return None,
    };
    Some(format!(
        "jitterlab: {what}; the results are in {}",
        dir.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::run_record::{BudgetVerdict, ClauseVerdict};
    use crate::results::synthetic::{SyntheticRun, write_run};

    /// Issue 39 L-a: with -q a failed run and a failed budget said nothing on stderr; the line
    /// names what failed and where the results are, and a run that exits 0 has none.
    #[test]
    fn a_failed_run_or_budget_has_its_line_for_stderr() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run");
        let run = SyntheticRun {
            cpus: vec![0],
            interval_ns: 1_000_000,
            log_interval_ns: 1_000_000_000,
            duration_ns: 1_000_000_000,
            phases: vec![],
            loads: vec![],
            warnings: vec![],
            seed: 1,
        };
        let mut record = write_run(&out, &run, |_, _, _| 10_000).unwrap();
        assert_eq!(failure_line(&record, &out), None);
        record.budget = Some(BudgetVerdict {
            expression: "max<1us,max<1s".into(),
            passed: false,
            clauses: vec![
                ClauseVerdict {
                    clause: "max<1us".into(),
                    passed: false,
                    actual: "cpu0: 10.0 us".into(),
                },
                ClauseVerdict {
                    clause: "max<1s".into(),
                    passed: true,
                    actual: "cpu0: 10.0 us".into(),
                },
            ],
        });
        assert_eq!(
            failure_line(&record, &out).unwrap(),
            format!(
                "jitterlab: the budget failed: 1 of 2 clauses violated: max<1us (cpu0: 10.0 us); the results are in {}",
                out.display()
            )
        );
        record.ended = Ended::Failed;
        record.end_reason = Some("measuring thread on CPU 1 failed: EPERM".into());
        assert_eq!(
            failure_line(&record, &out).unwrap(),
            format!(
                "jitterlab: the run failed: measuring thread on CPU 1 failed: EPERM; the results are in {}",
                out.display()
            )
        );
    }
}

//! What every rt-tests drop-in (`cyclictest`, `oslat`, `timerlat`) does once its tool's
//! output is printed: name the result directory on stderr (stdout belongs to the tool's own
//! format, which scripts parse) and turn the run's end into the tool's exit code.

use crate::error::ExitCode;
use crate::format::run_record::Ended;
use crate::session::RunOutcome;

/// Prints where the results are and returns the exit code: 4 for a failed run (its reason on
/// stderr), else 0, as the tools exit 0 after a completed or interrupted run.
pub(crate) fn finish(outcome: &RunOutcome) -> i32 {
    eprintln!(
        "jitterlab: result directory {} (jitterlab report, compare and export read it)",
        outcome.dir.path.display()
    );
    match outcome.record.ended {
        Ended::Failed => {
            let why = outcome.record.end_reason.as_deref().unwrap_or("a failure");
            eprintln!("jitterlab: the run failed: {why}");
            ExitCode::Run as i32
        }
        _ => 0,
    }
}

//! `jitterlab export`: a run in another format (`report::export`, one file per format).

use crate::cli::ExportArgs;
use crate::error::Result;

pub fn run(args: &ExportArgs) -> Result<i32> {
    crate::report::export::export(
        &args.run_dir,
        args.format,
        args.output.as_deref(),
        args.budget.as_deref(),
        args.per_phase,
        args.cpus.as_deref(),
        args.latency_range.as_deref(),
    )
    .map(|_| 0)
}

//! `jitterlab report`: the HTML report (`report::html`) of result directories and sweeps.

use crate::cli::ReportArgs;
use crate::error::Result;
use crate::report::html::{self, ReportRequest};
use crate::report::plot::zoom::Zoom;

pub fn run(args: &ReportArgs) -> Result<i32> {
    html::write(&ReportRequest {
        run_dirs: &args.run_dirs,
        output: &args.output,
        plots: args.plots.as_deref(),
        budget: args.budget.as_deref(),
        zoom: Zoom::parse(args.latency_range.as_deref(), args.time_range.as_deref())
            .map_err(crate::error::Failure::usage)?,
    })
}

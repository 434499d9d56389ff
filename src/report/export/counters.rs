//! `--format counters`: counters.log as CSV, `time_s,cpu,counter,value`, one row per interval,
//! CPU and counter read on it (zeros included), in file order. `time_s` is the interval's start
//! from the run's first due time; `value` is the interval's change, or a gauge's reading, in
//! the counter's unit (docs/counters.md); empty where it is unknown (the counter went
//! backwards).

use super::{RunExporter, write_text};
use crate::error::{Failure, Result};
use crate::format::counters;
use crate::results::loaded::LoadedRun;
use std::fmt::Write as _;
use std::path::Path;

pub(crate) struct Counters;

/// The header row.
pub(crate) const HEADER: &str = "time_s,cpu,counter,value";

impl RunExporter for Counters {
    fn write(&self, run: &LoadedRun, output: Option<&Path>) -> Result<()> {
        let path = run.path.join(counters::FILE_NAME);
        if !path.is_file() {
            return Err(Failure::usage(format!(
                "{} has no {}: the run was made with --no-counters, by a version before the counters, as a segmented (monitor) run, or imported",
                run.path.display(),
                counters::FILE_NAME
            )));
        }
        let file = counters::read(&path).map_err(Failure::usage)?;
        for d in &file.damage {
            eprintln!("jitterlab: warning: {}: {d}", path.display());
        }
        let len_s = file.interval_ns as f64 / 1e9;
        let mut text = format!("{HEADER}\n");
        for line in &file.intervals {
            let time_s = line.interval as f64 * len_s;
            for (name, value) in &line.values {
                let _ = match value {
                    Some(v) => writeln!(text, "{time_s},{},{name},{v}", line.cpu),
                    None => writeln!(text, "{time_s},{},{name},", line.cpu),
                };
            }
        }
        write_text(output, &text)
    }
}

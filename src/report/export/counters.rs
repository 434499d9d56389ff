//! `--format counters`: counters.log as CSV, `time_s,cpu,counter,value`, one row per interval,
//! CPU and counter read on it (zeros included), in file order. `time_s` is the interval's start
//! from the run's first due time; `value` is the interval's change, or a gauge's reading, in
//! the counter's unit (docs/counters.md); empty where it is unknown (the counter went
//! backwards). The file is checked first (its caps, counting its values and keeping none),
//! then written row by row as it is read again: memory does not grow with it (issue 39 L-b: a
//! 507 MB file took 2.4 GB and 35 s before it was refused).

use super::exporter::RunExporter;
use super::output::write_streamed;
use crate::error::{Failure, Result};
use crate::format::counters;
use crate::results::loaded::LoadedRun;
use std::io;
use std::path::Path;

pub(crate) struct Counters;

/// The header row.
pub(crate) const HEADER: &str = "time_s,cpu,counter,value";

impl RunExporter for Counters {
    fn write(&self, run: &LoadedRun, output: Option<&Path>) -> Result<()> {
        let path = run.path.join(counters::FILE_NAME);
        if !crate::input::result_entry_exists(&path) {
            return Err(Failure::usage(format!(
                "{} has no {}: the run was made with --no-counters, by a version before the counters, as a segmented (monitor) run, or imported",
                run.path.display(),
                counters::FILE_NAME
            )));
        }
        // Refused (exit 2) before a row is written: the caps, counted without keeping.
        let (checked, _) = counters::count(&path, counters::MAX_VALUES).map_err(Failure::usage)?;
        for d in &checked.damage {
            eprintln!("jitterlab: warning: {}: {d}", path.display());
        }
        let len_s = checked.interval_ns as f64 / 1e9;
        write_streamed(output, |out| {
            writeln!(out, "{HEADER}")?;
            let mut failed: Option<io::Error> = None;
            let scanned = counters::scan(&path, |line| {
                if failed.is_some() {
                    return;
                }
                let time_s = line.interval as f64 * len_s;
                for (name, value) in &line.values {
                    let r = match value {
                        Some(v) => writeln!(out, "{time_s},{},{name},{v}", line.cpu),
                        None => writeln!(out, "{time_s},{},{name},", line.cpu),
                    };
                    if let Err(e) = r {
                        failed = Some(e);
                        return;
                    }
                }
            });
            if let Some(e) = failed {
                return Err(e);
            }
            // Checked a moment ago: only a file changed since fails here.
            scanned.map(drop).map_err(io::Error::other)
        })
    }
}

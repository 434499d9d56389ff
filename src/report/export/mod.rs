//! `jitterlab export`: the sample log in other shapes. One file per format, each implementing
//! [`SampleExporter`].

mod columns;
mod csv;

use crate::cli::ExportFormat;
use crate::error::{Failure, OrFailure, Result};
use crate::record::samplelog::{self, SampleLogReader, SampleRecord};
use crate::results::ResultDir;
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// Writes samples in one output format.
pub trait SampleExporter {
    /// Writes what comes before the first row.
    fn header(&mut self, out: &mut dyn Write) -> io::Result<()>;
    /// Writes one sample; `start_ns` is the run's first due time on the same clock.
    fn row(&mut self, out: &mut dyn Write, sample: &SampleRecord, start_ns: u64) -> io::Result<()>;
}

fn exporter(format: ExportFormat) -> Box<dyn SampleExporter> {
    match format {
        ExportFormat::Csv => Box::new(csv::Csv),
        ExportFormat::Columns => Box::new(columns::Columns),
    }
}

/// Exports the sample log of `run_dir` to `output` (stdout when None).
pub fn export(run_dir: &Path, format: ExportFormat, output: Option<&Path>) -> Result<()> {
    let dir = ResultDir::open(run_dir).map_err(Failure::usage)?;
    let path = dir.file(samplelog::FILE_NAME);
    if !path.exists() {
        return Err(Failure::usage(format!(
            "{} has no sample log ({}): the run was made without --samples; run again with --samples to keep every sample",
            run_dir.display(),
            samplelog::FILE_NAME
        )));
    }
    let reader = SampleLogReader::open(&path).map_err(|e| Failure::usage(e.to_string()))?;
    // Times count from the run's start, the due time of the first wakeups.
    let start_ns = reader.header.start_ns;
    let mut exporter = exporter(format);
    // Streamed record by record: a day-long sample log does not fit in memory.
    let write_all = |out: &mut dyn Write| -> io::Result<()> {
        exporter.header(out)?;
        for sample in reader {
            exporter.row(out, &sample?, start_ns)?;
        }
        out.flush()
    };
    match output {
        None => {
            let stdout = io::stdout();
            let mut out = BufWriter::new(stdout.lock());
            match write_all(&mut out) {
                // A closed pipe (| head) is the reader's choice, not a failure.
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
                r => r.or_run(|| "writing the export to stdout".into()),
            }
        }
        Some(file) => {
            let f = std::fs::File::create(file)
                .or_usage(|| format!("cannot create {}", file.display()))?;
            write_all(&mut BufWriter::new(f)).or_run(|| format!("writing {}", file.display()))
        }
    }
}

//! `--format summaries`: the `wakeup_summary` events of a `run --summary-every N` as CSV, one
//! row per block of N samples of one thread (FirmTimers `measure_latency -w N`'s min/avg/max
//! lines), in the order written, units in the header names. Each row is written as its line is
//! read (N9, issue 39: holding them all to sort them took 0.73 times the file), so the memory is
//! one line of events.jsonl and the output's buffer, whatever the file's size.

use super::exporter::RunExporter;
use crate::error::{Failure, OrFailure, Result};
use crate::format::events::Event;
use crate::format::wakeup_summary::WakeupSummary;
use crate::results::loaded::{self, LoadedRun};
use std::io::{self, BufWriter, Write};
use std::path::Path;

pub(crate) struct Summaries;

/// The header row; `mean_ns` is the mean of the block's latencies from their exact sum.
pub(crate) const HEADER: &str = "cpu,first_seq,last_seq,samples,dropped_records,first_due_ns,last_due_ns,span_ns,min_ns,mean_ns,max_ns,sum_ns,missed_periods";

impl RunExporter for Summaries {
    fn write(&self, run: &LoadedRun, output: Option<&Path>) -> Result<()> {
        // Why the events could not be read (exit 2), kept apart from a failed write (exit 4).
        let mut unreadable = None;
        let mut fill = |out: &mut dyn Write| -> io::Result<()> {
            // The header goes with the first row, or at the end: a run without summaries is
            // refused without a byte written.
            let mut rows = 0u64;
            // A write that failed (a closed pipe: `| head`) ends the parsing; the rest of the
            // file is passed over.
            let failed = std::cell::RefCell::new(None);
            let wants = |kind: &str| kind == "wakeup_summary" && failed.borrow().is_none();
            let scanned = loaded::scan_events(&run.path, &wants, &mut |e| {
                let Event::WakeupSummary(s) = e else { return };
                let header = if rows == 0 {
                    writeln!(out, "{HEADER}")
                } else {
                    Ok(())
                };
                match header.and_then(|_| row(out, &s)) {
                    Ok(()) => rows += 1,
                    Err(e) => *failed.borrow_mut() = Some(e),
                }
            });
            if let Some(e) = failed.into_inner() {
                return Err(e);
            }
            let scanned = match scanned {
                Ok(scanned) => scanned,
                Err(why) => {
                    unreadable = Some(why);
                    return Err(io::Error::other("the events are unreadable"));
                }
            };
            for warning in loaded::events_warnings(&run.path, &run.record, &scanned) {
                eprintln!("jitterlab: warning: {warning}");
            }
            if rows == 0 && run.record.plan.summary_every.is_none() {
                unreadable = Some(format!(
                    "{} has no wakeup summaries: the run was made without --summary-every; run again with --summary-every N (e.g. 1000) to get the min, mean and max of every N wakeups",
                    run.path.display()
                ));
                return Err(io::Error::other("no summaries"));
            }
            if rows == 0 {
                writeln!(out, "{HEADER}")?;
            }
            out.flush()
        };
        let written = match output {
            None => {
                let mut out = BufWriter::new(io::stdout().lock());
                match fill(&mut out) {
                    // A closed pipe (| head) is the reader's choice, not a failure.
                    Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
                    r => r,
                }
            }
            Some(file) => crate::results::dir::write_output(file, fill),
        };
        if let Some(why) = unreadable {
            return Err(Failure::usage(why));
        }
        written.or_run(|| match output {
            None => "writing the export to stdout".into(),
            Some(file) => format!("writing {}", file.display()),
        })
    }
}

/// One block as a CSV row.
fn row(out: &mut dyn Write, s: &WakeupSummary) -> io::Result<()> {
    // `{}` of an f64 prints the shortest text that reads back as the same number.
    writeln!(
        out,
        "{},{},{},{},{},{},{},{},{},{},{},{},{}",
        s.cpu,
        s.first_seq,
        s.last_seq,
        s.samples,
        s.dropped_records,
        s.first_due_ns,
        s.last_due_ns,
        s.span_ns(),
        s.min_ns,
        s.mean(),
        s.max_ns,
        s.sum_ns,
        s.missed_periods
    )
}

//! `--format summaries`: the `wakeup_summary` events of a `run --summary-every N` as CSV, one
//! row per block of N samples of one thread (FirmTimers `measure_latency -w N`'s min/avg/max
//! lines), sorted by CPU and sequence number, units in the header names.

use super::{RunExporter, write_text};
use crate::error::{Failure, Result};
use crate::format::events::Event;
use crate::format::wakeup_summary::WakeupSummary;
use crate::results::loaded::{self, LoadedRun};
use std::fmt::Write as _;
use std::path::Path;

pub(crate) struct Summaries;

/// The header row; `mean_ns` is the mean of the block's latencies from their exact sum.
pub(crate) const HEADER: &str = "cpu,first_seq,last_seq,samples,dropped_records,first_due_ns,last_due_ns,span_ns,min_ns,mean_ns,max_ns,sum_ns,missed_periods";

impl RunExporter for Summaries {
    fn write(&self, run: &LoadedRun, output: Option<&Path>) -> Result<()> {
        // Only the summaries are parsed and kept (the export is all of them): the events are
        // streamed, the other types counted and passed over.
        let mut blocks: Vec<WakeupSummary> = Vec::new();
        let scanned = loaded::scan_events(&run.path, &|kind| kind == "wakeup_summary", &mut |e| {
            if let Event::WakeupSummary(s) = e {
                blocks.push(s)
            }
        })
        .map_err(Failure::usage)?;
        if let Some(warning) = loaded::long_lines_warning(&run.path, &scanned) {
            eprintln!("jitterlab: warning: {warning}");
        }
        if blocks.is_empty() && run.record.plan.summary_every.is_none() {
            return Err(Failure::usage(format!(
                "{} has no wakeup summaries: the run was made without --summary-every; run again with --summary-every N (e.g. 1000) to get the min, mean and max of every N wakeups",
                run.path.display()
            )));
        }
        blocks.sort_by_key(|s| (s.cpu, s.first_seq));
        let mut text = format!("{HEADER}\n");
        for s in blocks {
            // `{}` of an f64 prints the shortest text that reads back as the same number.
            let _ = writeln!(
                text,
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
            );
        }
        write_text(output, &text)
    }
}

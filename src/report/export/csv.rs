//! CSV: one row per sample, units in the header names. A noise run's rows are gaps: `start_ns`
//! (the read before the gap), `gap_ns`, and `throttled` (1 for a gap taken as RT throttling).

use super::SampleExporter;
use crate::format::kind::RunKind;
use crate::format::samplelog::SampleRecord;
use std::io::{self, Write};

pub(crate) struct Csv;

impl SampleExporter for Csv {
    fn header(&mut self, out: &mut dyn Write, kind: RunKind) -> io::Result<()> {
        writeln!(out, "{}", kind.words().csv_header)
    }

    fn row(&mut self, out: &mut dyn Write, s: &SampleRecord, start_ns: u64) -> io::Result<()> {
        let irq = s.irq_latency_ns.map_or(String::new(), |v| v.to_string());
        let t = s.expected_ns.saturating_sub(start_ns) as f64 / 1e9;
        writeln!(
            out,
            "{},{},{},{:.9},{},{},{}",
            s.cpu, s.seq, s.expected_ns, t, s.latency_ns, irq, s.missed
        )
    }
}

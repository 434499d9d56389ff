//! The three-column text of the SH7780 study (003_dbbdb0080eeeabdc.txt, 1.3):
//! `time_s latency_us irq_latency_us`, time from the run's start, `-` where the IRQ latency was
//! not traced. Rows of all CPUs interleave; export one CPU's run for the paper's exact shape.

use super::SampleExporter;
use crate::format::kind::RunKind;
use crate::format::samplelog::SampleRecord;
use std::io::{self, Write};

pub(crate) struct Columns;

impl SampleExporter for Columns {
    fn header(&mut self, out: &mut dyn Write, kind: RunKind) -> io::Result<()> {
        writeln!(out, "{}", kind.words().columns_header)
    }

    fn row(&mut self, out: &mut dyn Write, s: &SampleRecord, start_ns: u64) -> io::Result<()> {
        let t = s.expected_ns.saturating_sub(start_ns) as f64 / 1e9;
        let lat = s.latency_ns as f64 / 1e3;
        match s.irq_latency_ns {
            Some(irq) => writeln!(out, "{t:.6} {lat:.6} {:.6}", irq as f64 / 1e3),
            None => writeln!(out, "{t:.6} {lat:.6} -"),
        }
    }
}

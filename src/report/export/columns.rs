//! The three-column text of the SH7780 study (003_dbbdb0080eeeabdc.txt, 1.3):
//! `time_s latency_us irq_latency_us`, time from the run's start, `-` where the IRQ latency was
//! not traced, then the CPU as a fourth column (the paper measured one CPU; a script reading
//! its three columns reads these rows unchanged). Rows of all CPUs interleave in the sample
//! log's order; `--cpus 1` keeps one CPU's rows, the paper's file for that CPU.

use super::exporter::{SampleExporter, SampleRun};
use crate::format::samplelog::SampleRecord;
use std::io::{self, Write};

pub(crate) struct Columns;

impl SampleExporter for Columns {
    fn header(&mut self, out: &mut dyn Write, run: &SampleRun) -> io::Result<()> {
        writeln!(out, "{} cpu", run.kind.words().columns_header)
    }

    fn row(&mut self, out: &mut dyn Write, s: &SampleRecord, start_ns: u64) -> io::Result<()> {
        let t = s.expected_ns.saturating_sub(start_ns) as f64 / 1e9;
        let lat = s.latency_ns as f64 / 1e3;
        match s.irq_latency_ns {
            Some(irq) => writeln!(out, "{t:.6} {lat:.6} {:.6} {}", irq as f64 / 1e3, s.cpu),
            None => writeln!(out, "{t:.6} {lat:.6} - {}", s.cpu),
        }
    }
}

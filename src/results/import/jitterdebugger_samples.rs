//! jitterdebugger's raw samples file (`jitterdebugger -o DIR -s`, DIR/samples.raw): every
//! sample as a packed record, as jitterdebugger.h declares it and jittersamples reads it:
//!
//! ```text
//! struct latency_sample {
//!     uint32_t cpuid;          thread number (thread i runs on the i-th CPU of its affinity)
//!     struct timespec ts;      CLOCK_MONOTONIC time of the wakeup: tv_sec, tv_nsec
//!     uint64_t val;            latency, in the run's resolution (us; ns with --nanosec)
//! } __attribute__((packed));
//! ```
//!
//! Native byte order and `time_t` size: 28-byte records on 64-bit systems (and 32-bit ones
//! with a 64-bit time_t), 20 on older 32-bit ones; little-endian (x86, Arm, RISC-V). The layout
//! is told from the file: a whole number of records, each with `tv_nsec` below 10⁹ and time
//! stamps that do not go backwards per thread. The unit is not in the file: it is
//! `sysinfo.resolution_in_ns` of the results.json jitterdebugger writes into the same
//! directory, or us (jitterdebugger's default) without one. Every sample is there, so the
//! histograms are exact: one bucket per distinct value, count, min, max and mean exact.

use super::Recognise;
use super::{Imported, Parser, SourceFormat, SourceHistogram, SourceThread, parse_json};
use std::collections::BTreeMap;
use std::path::Path;

pub(crate) static FORMAT: SourceFormat = SourceFormat {
    name: "jitterdebugger-samples",
    help: "jitterdebugger's raw samples file (samples.raw of jitterdebugger -o DIR -s)",
    parse: Parser::Bytes(parse),
    recognise: Recognise::Binary(recognise),
    no_header: None,
};

fn recognise(bytes: &[u8]) -> Result<(), String> {
    layout(bytes).map(drop)
}

/// The record layouts, by `time_t` size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// 4 + 8 + 8 + 8 bytes.
    Time64,
    /// 4 + 4 + 4 + 8 bytes.
    Time32,
}

impl Layout {
    pub(crate) fn record_bytes(self) -> usize {
        match self {
            Layout::Time64 => 28,
            Layout::Time32 => 20,
        }
    }

    /// One record: (thread, wakeup time in ns, value).
    fn record(self, r: &[u8]) -> (u32, Option<u64>, u64) {
        let u32_at = |at: usize| u32::from_le_bytes(r[at..at + 4].try_into().expect("4 bytes"));
        let u64_at = |at: usize| u64::from_le_bytes(r[at..at + 8].try_into().expect("8 bytes"));
        let (sec, nsec, val) = match self {
            Layout::Time64 => (u64_at(4) as i64, u64_at(12) as i64, u64_at(20)),
            Layout::Time32 => (u32_at(4) as i32 as i64, u32_at(8) as i32 as i64, u64_at(12)),
        };
        let time = (0..1_000_000_000)
            .contains(&nsec)
            .then(|| {
                u64::try_from(sec)
                    .ok()?
                    .checked_mul(1_000_000_000)?
                    .checked_add(nsec as u64)
            })
            .flatten();
        (u32_at(0), time, val)
    }

    /// Whether every record reads as a sample: a valid time, not going backwards per thread.
    fn fits(self, bytes: &[u8]) -> bool {
        if bytes.is_empty() || !bytes.len().is_multiple_of(self.record_bytes()) {
            return false;
        }
        let mut last: BTreeMap<u32, u64> = BTreeMap::new();
        bytes.chunks_exact(self.record_bytes()).all(|r| {
            let (thread, time, _) = self.record(r);
            let Some(time) = time else { return false };
            let previous = last.insert(thread, time);
            previous.is_none_or(|p| p <= time)
        })
    }
}

/// The layout the file is written in, or why it is in none.
pub(crate) fn layout(bytes: &[u8]) -> Result<Layout, String> {
    if bytes.is_empty() {
        return Err("the file is empty: jitterdebugger wrote no sample".into());
    }
    [Layout::Time64, Layout::Time32]
        .into_iter()
        .find(|l| l.fits(bytes))
        .ok_or_else(|| {
            format!(
                "its {} bytes are not jitterdebugger sample records (28 bytes each, or 20 from a 32-bit system, little-endian, each with a valid time stamp in order per thread): it is another file, cut short, or from a big-endian system",
                bytes.len()
            )
        })
}

/// The resolution of the run from the results.json beside the file: (ns per unit, where it
/// came from).
fn resolution(source: &Path) -> Result<(u64, String), String> {
    let results = source.with_file_name("results.json");
    let Ok(text) = crate::input::read_user_file(&results, super::MAX_FILE_BYTES) else {
        return Ok((1000, "no results.json beside it: values read as us, jitterdebugger's default (a run with --nanosec recorded ns, 1000 times less)".into()));
    };
    let v = parse_json(&text).map_err(|e| format!("results.json beside it: {e}"))?;
    match v.pointer("/sysinfo/resolution_in_ns") {
        None => Ok((
            1000,
            "results.json beside it has no resolution_in_ns (version 1 or 2): values are us".into(),
        )),
        Some(r) => match r.as_u64() {
            Some(r @ (1 | 1000)) => Ok((
                r,
                format!(
                    "values are in {} (resolution_in_ns {r} of results.json beside it)",
                    if r == 1 { "ns" } else { "us" }
                ),
            )),
            _ => Err(format!(
                "results.json beside it gives resolution_in_ns {r}; jitterdebugger measures in 1 or 1000 ns"
            )),
        },
    }
}

pub(crate) fn parse(bytes: &[u8], source: &Path) -> Result<Imported, String> {
    let layout = layout(bytes)?;
    let (unit_ns, unit_note) = resolution(source)?;
    // Per thread: value -> count, and the sum for the exact mean.
    let mut values: BTreeMap<u32, (BTreeMap<u64, u64>, u128)> = BTreeMap::new();
    let (mut first, mut last) = (u64::MAX, 0);
    for r in bytes.chunks_exact(layout.record_bytes()) {
        let (thread, time, value) = layout.record(r);
        let time = time.expect("checked by layout()");
        first = first.min(time);
        last = last.max(time);
        let (counts, sum) = values.entry(thread).or_default();
        *counts.entry(value).or_default() += 1;
        *sum += value as u128;
    }
    let threads = values
        .into_iter()
        .map(|(thread, (counts, sum))| {
            let n: u64 = counts.values().sum();
            let (&min, &max) = (
                counts.keys().next().expect("a sample"),
                counts.keys().next_back().expect("a sample"),
            );
            SourceThread::new(
                thread as usize,
                SourceHistogram {
                    unit_ns,
                    buckets: counts.into_iter().collect(),
                    overflow: 0,
                    overflow_from: max.saturating_add(1),
                    count: Some(n),
                    min: Some(min as f64),
                    mean: Some(sum as f64 / n as f64),
                    max: Some(max as f64),
                    quantiles: Vec::new(),
                    stddev: None,
                },
            )
        })
        .collect();
    Ok(Imported {
        duration_ns: Some(last - first),
        warnings: vec![
            "jitterdebugger numbers its threads, not CPUs: thread i is reported as CPU i (true with the default affinity, all online CPUs)".into(),
            unit_note,
            "the duration is from the first sample's wakeup to the last one's; the start time is absent (the time stamps are CLOCK_MONOTONIC)".into(),
        ],
        ..Imported::new(&FORMAT, threads)
    })
}

//! Format 1 of the sample log: fixed-size little-endian records (docs/result-format.md,
//! "samples.bin, format 1").
//!
//! ```text
//! record, 40 bytes:
//!   0  4  u32 cpu
//!   4  4  u32 missed periods after this wakeup
//!   8  8  u64 seq (wakeup number in its thread; gaps are dropped records)
//!  16  8  u64 expected (due) time, ns on the clock
//!  24  8  i64 latency, ns
//!  32  8  i64 timer IRQ latency, ns; i64::MIN when not traced
//! ```

use super::{Read1, SampleRecord, read_up_to};
use crate::format::samples::{HEADER_BYTES, MAX_RECORD_BYTES, NO_IRQ_LATENCY, RECORD_BYTES};
use std::io::{self, Read};

/// The record size a format-1 header states, if a reader can accept it.
pub(super) fn record_size(header: &[u8; HEADER_BYTES]) -> Result<usize, String> {
    let record_bytes = u32::from_le_bytes(header[8..12].try_into().unwrap()) as usize;
    if !(RECORD_BYTES..=MAX_RECORD_BYTES).contains(&record_bytes) {
        return Err(format!(
            "the header's record size, {record_bytes} bytes, is outside {RECORD_BYTES}..={MAX_RECORD_BYTES} (format 1 writes {RECORD_BYTES}); the file is damaged"
        ));
    }
    Ok(record_bytes)
}

pub(super) fn encode(r: &SampleRecord) -> [u8; RECORD_BYTES] {
    let mut b = [0u8; RECORD_BYTES];
    b[0..4].copy_from_slice(&r.cpu.to_le_bytes());
    b[4..8].copy_from_slice(&r.missed.to_le_bytes());
    b[8..16].copy_from_slice(&r.seq.to_le_bytes());
    b[16..24].copy_from_slice(&r.expected_ns.to_le_bytes());
    b[24..32].copy_from_slice(&r.latency_ns.to_le_bytes());
    b[32..40].copy_from_slice(&r.irq_latency_ns.unwrap_or(NO_IRQ_LATENCY).to_le_bytes());
    b
}

/// Reads records of the header's size, one at a time.
pub(super) struct RecordReader {
    record: Vec<u8>,
    /// The file offset of the next record.
    offset: u64,
}

impl RecordReader {
    pub(super) fn new(record_bytes: usize) -> Self {
        RecordReader {
            record: vec![0u8; record_bytes],
            offset: HEADER_BYTES as u64,
        }
    }

    pub(super) fn next(&mut self, input: &mut impl Read) -> io::Result<Read1> {
        let n = read_up_to(input, &mut self.record)?;
        if n == 0 {
            return Ok(Read1::End);
        }
        if n < self.record.len() {
            // A run killed mid-write can leave a partial last record: it is not a sample.
            return Ok(Read1::Damaged {
                what: format!("a partial last record ({n} of {} bytes)", self.record.len()),
                at: self.offset,
            });
        }
        self.offset += n as u64;
        // Records may grow in later versions; fields beyond the first 40 bytes are skipped.
        let b = &self.record;
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        let irq = u64_at(32) as i64;
        Ok(Read1::Record(SampleRecord {
            cpu: u32_at(0),
            missed: u32_at(4),
            seq: u64_at(8),
            expected_ns: u64_at(16),
            latency_ns: u64_at(24) as i64,
            irq_latency_ns: (irq != NO_IRQ_LATENCY).then_some(irq),
        }))
    }
}

//! samples.bin: every sample of a run, streamed to disk (`run --samples`).
//!
//! Layout (all integers little-endian; specified in docs/result-format.md):
//!
//! ```text
//! header, 32 bytes:
//!   0  8  magic "JLSAMPL1"
//!   8  4  u32 record size in bytes (40)
//!  12  4  u32 clock id (1 = CLOCK_MONOTONIC, 0 = CLOCK_REALTIME)
//!  16  8  u64 run start on that clock, ns
//!  24  8  reserved, zero
//! record, 40 bytes:
//!   0  4  u32 cpu
//!   4  4  u32 missed periods after this wakeup
//!   8  8  u64 seq (wakeup number in its thread; gaps are dropped records)
//!  16  8  u64 expected (due) time, ns on the clock
//!  24  8  i64 latency, ns
//!  32  8  i64 timer IRQ latency, ns; i64::MIN when not traced
//! ```
//!
//! Records of different threads interleave in drain order; within one CPU they are in order.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::Path;

// The layout is part of the result format, defined with the other files' in `results::format`.
pub use crate::results::format::samples::{
    FILE_NAME, HEADER_BYTES, MAGIC, MAX_RECORD_BYTES, NO_IRQ_LATENCY, RECORD_BYTES,
    WRITE_BUFFER_BYTES,
};

/// One record of the sample log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleRecord {
    pub cpu: u32,
    pub missed: u32,
    pub seq: u64,
    pub expected_ns: u64,
    pub latency_ns: i64,
    /// None until IRQ latency is traced.
    pub irq_latency_ns: Option<i64>,
}

/// The header fields of a sample log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleLogHeader {
    pub clock_id: u32,
    pub start_ns: u64,
}

/// Streams records to samples.bin through a buffer; `flush` pushes it to the kernel.
pub struct SampleLogWriter {
    out: BufWriter<File>,
}

impl SampleLogWriter {
    /// Writes the log into `file` (in a result directory: made by `ResultDir::create_file`);
    /// the header follows with [`SampleLogWriter::begin`], once the run's start is fixed.
    pub fn new(file: File) -> Self {
        SampleLogWriter {
            out: BufWriter::with_capacity(WRITE_BUFFER_BYTES, file),
        }
    }

    /// Creates the new file `path` (an existing file or link of that name is an error).
    pub fn create(path: &Path) -> io::Result<Self> {
        Ok(Self::new(File::create_new(path)?))
    }

    /// Writes the header; must come before the first record.
    pub fn begin(&mut self, header: SampleLogHeader) -> io::Result<()> {
        let mut h = [0u8; HEADER_BYTES];
        h[0..8].copy_from_slice(MAGIC);
        h[8..12].copy_from_slice(&(RECORD_BYTES as u32).to_le_bytes());
        h[12..16].copy_from_slice(&header.clock_id.to_le_bytes());
        h[16..24].copy_from_slice(&header.start_ns.to_le_bytes());
        self.out.write_all(&h)
    }

    pub fn write(&mut self, r: &SampleRecord) -> io::Result<()> {
        let mut b = [0u8; RECORD_BYTES];
        b[0..4].copy_from_slice(&r.cpu.to_le_bytes());
        b[4..8].copy_from_slice(&r.missed.to_le_bytes());
        b[8..16].copy_from_slice(&r.seq.to_le_bytes());
        b[16..24].copy_from_slice(&r.expected_ns.to_le_bytes());
        b[24..32].copy_from_slice(&r.latency_ns.to_le_bytes());
        b[32..40].copy_from_slice(&r.irq_latency_ns.unwrap_or(NO_IRQ_LATENCY).to_le_bytes());
        self.out.write_all(&b)
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Reads a sample log record by record.
pub struct SampleLogReader {
    input: BufReader<File>,
    pub header: SampleLogHeader,
    record: Vec<u8>,
}

impl SampleLogReader {
    pub fn open(path: &Path) -> io::Result<Self> {
        let invalid = |what: &str| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {what}", path.display()),
            )
        };
        let mut input = BufReader::with_capacity(256 * 1024, File::open(path)?);
        let mut h = [0u8; HEADER_BYTES];
        input
            .read_exact(&mut h)
            .map_err(|_| invalid("too short for a jitterlab sample log header"))?;
        if &h[0..8] != MAGIC {
            return Err(invalid("not a jitterlab sample log (bad magic)"));
        }
        let record_bytes = u32::from_le_bytes(h[8..12].try_into().unwrap()) as usize;
        if !(RECORD_BYTES..=MAX_RECORD_BYTES).contains(&record_bytes) {
            return Err(invalid(&format!(
                "the header's record size, {record_bytes} bytes, is outside {RECORD_BYTES}..={MAX_RECORD_BYTES} (format 1 writes {RECORD_BYTES}); the file is damaged"
            )));
        }
        let header = SampleLogHeader {
            clock_id: u32::from_le_bytes(h[12..16].try_into().unwrap()),
            start_ns: u64::from_le_bytes(h[16..24].try_into().unwrap()),
        };
        Ok(SampleLogReader {
            input,
            header,
            record: vec![0u8; record_bytes],
        })
    }
}

impl Iterator for SampleLogReader {
    type Item = io::Result<SampleRecord>;

    fn next(&mut self) -> Option<Self::Item> {
        // Records may grow in later versions; fields beyond the first 40 bytes are skipped.
        match self.input.read_exact(&mut self.record) {
            Ok(()) => {}
            // A run killed mid-write can leave a partial last record: it is not a sample.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return None,
            Err(e) => return Some(Err(e)),
        }
        let b = &self.record;
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        let irq = u64_at(32) as i64;
        Some(Ok(SampleRecord {
            cpu: u32_at(0),
            missed: u32_at(4),
            seq: u64_at(8),
            expected_ns: u64_at(16),
            latency_ns: u64_at(24) as i64,
            irq_latency_ns: (irq != NO_IRQ_LATENCY).then_some(irq),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_records_and_ignores_a_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let header = SampleLogHeader {
            clock_id: 1,
            start_ns: 123_456_789,
        };
        let records = vec![
            SampleRecord {
                cpu: 0,
                missed: 0,
                seq: 0,
                expected_ns: 123_456_789,
                latency_ns: 15_000,
                irq_latency_ns: None,
            },
            SampleRecord {
                cpu: 1,
                missed: 2,
                seq: 0,
                expected_ns: 123_456_789,
                latency_ns: -20,
                irq_latency_ns: Some(3_000),
            },
            SampleRecord {
                cpu: 0,
                missed: 0,
                seq: 2,
                expected_ns: 125_456_789,
                latency_ns: i64::MAX,
                irq_latency_ns: None,
            },
        ];
        let mut w = SampleLogWriter::create(&path).unwrap();
        w.begin(header).unwrap();
        records.iter().for_each(|r| w.write(r).unwrap());
        w.flush().unwrap();
        drop(w);
        // Simulate a kill in the middle of a record.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(&[1, 2, 3]).unwrap();
        let reader = SampleLogReader::open(&path).unwrap();
        assert_eq!(reader.header, header);
        let back: Vec<SampleRecord> = reader.map(Result::unwrap).collect();
        assert_eq!(back, records);
    }

    #[test]
    fn bounds_the_record_size_a_header_claims() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let header = |record_bytes: u32| {
            let mut h = [0u8; HEADER_BYTES];
            h[0..8].copy_from_slice(MAGIC);
            h[8..12].copy_from_slice(&record_bytes.to_le_bytes());
            h
        };
        for bad in [0xFFFF_FFFF, MAX_RECORD_BYTES as u32 + 1, 39] {
            std::fs::write(&path, header(bad)).unwrap();
            let err = SampleLogReader::open(&path).err().unwrap();
            assert_eq!(err.kind(), io::ErrorKind::InvalidData);
            assert!(
                err.to_string()
                    .contains(&format!("{bad} bytes, is outside 40..=4096")),
                "{err}"
            );
        }
        // A later version's longer records are read, their extra bytes skipped.
        let mut file = header(48).to_vec();
        file.extend([7u8; 48]);
        std::fs::write(&path, file).unwrap();
        let records: Vec<_> = SampleLogReader::open(&path).unwrap().collect();
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].as_ref().unwrap().cpu, 0x0707_0707);
    }

    #[test]
    fn rejects_other_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x");
        std::fs::write(&path, b"definitely not a sample log at all....").unwrap();
        let err = SampleLogReader::open(&path).err().unwrap();
        assert!(err.to_string().contains("bad magic"), "{err}");
    }
}

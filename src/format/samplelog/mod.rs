//! samples.bin: every sample of a run, streamed to disk (`run --samples`).
//!
//! Two layouts behind one writer and one reader (docs/result-format.md, "samples.bin"): format
//! 1, fixed 40-byte records (`v1`), and format 2, the default, checksummed blocks of
//! delta-coded records of about 4 bytes (`v2`). Both start with a 32-byte header:
//!
//! ```text
//!   0  8  magic "JLSAMPL1" or "JLSAMPL2"
//!   8  4  u32 format 1: record size in bytes (40); format 2: zero
//!  12  4  u32 clock id (1 = CLOCK_MONOTONIC, 0 = CLOCK_REALTIME)
//!  16  8  u64 run start on that clock, ns
//!  24  8  reserved, zero
//! ```
//!
//! Records of different threads interleave in drain order; within one CPU they are in order.
//! Readers keep every complete record (format 1) or block (format 2) and name the damage that
//! ended the file early, if any: a kill or a full disk tears at most the last write.

mod v1;
mod v2;

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::Path;

// The layout is part of the result format, defined with the other files' in `results::format`.
pub use crate::format::samples::{FILE_NAME, HEADER_BYTES, MAGIC, SampleLogFormat};
pub(crate) use crate::format::samples::{MAGIC_V2, RECORD_BYTES, WRITE_BUFFER_BYTES};

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

impl SampleLogHeader {
    fn encode(&self, format: SampleLogFormat) -> [u8; HEADER_BYTES] {
        let mut h = [0u8; HEADER_BYTES];
        match format {
            SampleLogFormat::V1 => {
                h[0..8].copy_from_slice(MAGIC);
                h[8..12].copy_from_slice(&(RECORD_BYTES as u32).to_le_bytes());
            }
            SampleLogFormat::V2 => h[0..8].copy_from_slice(MAGIC_V2),
        }
        h[12..16].copy_from_slice(&self.clock_id.to_le_bytes());
        h[16..24].copy_from_slice(&self.start_ns.to_le_bytes());
        h
    }
}

/// Streams records to samples.bin: format 1 through a buffer, format 2 a block at a time, each
/// block written with one write. `flush` hands everything written so far to the kernel.
pub struct SampleLogWriter {
    out: Output,
}

enum Output {
    V1(BufWriter<File>),
    V2 { file: File, block: v2::BlockEncoder },
}

impl SampleLogWriter {
    /// Writes the log into `file` (in a result directory: made by `ResultDir::create_file`) in
    /// `format`; the header follows with [`SampleLogWriter::begin`], once the run's start is
    /// fixed.
    pub fn new(file: File, format: SampleLogFormat) -> Self {
        let out = match format {
            SampleLogFormat::V1 => Output::V1(BufWriter::with_capacity(WRITE_BUFFER_BYTES, file)),
            SampleLogFormat::V2 => Output::V2 {
                file,
                block: v2::BlockEncoder::new(),
            },
        };
        SampleLogWriter { out }
    }

    /// Creates the new file `path` (an existing file or link of that name is an error).
    pub fn create(path: &Path, format: SampleLogFormat) -> io::Result<Self> {
        Ok(Self::new(File::create_new(path)?, format))
    }

    pub fn format(&self) -> SampleLogFormat {
        match self.out {
            Output::V1(_) => SampleLogFormat::V1,
            Output::V2 { .. } => SampleLogFormat::V2,
        }
    }

    /// Writes the header; must come before the first record.
    pub fn begin(&mut self, header: SampleLogHeader) -> io::Result<()> {
        let h = header.encode(self.format());
        match &mut self.out {
            Output::V1(out) => out.write_all(&h),
            Output::V2 { file, .. } => file.write_all(&h),
        }
    }

    pub fn write(&mut self, r: &SampleRecord) -> io::Result<()> {
        match &mut self.out {
            Output::V1(out) => out.write_all(&v1::encode(r)),
            Output::V2 { file, block } => {
                block.push(r);
                if block.is_full() {
                    write_block(file, block)?;
                }
                Ok(())
            }
        }
    }

    pub fn flush(&mut self) -> io::Result<()> {
        match &mut self.out {
            Output::V1(out) => out.flush(),
            Output::V2 { file, block } => match block.is_empty() {
                true => Ok(()),
                false => write_block(file, block),
            },
        }
    }
}

/// Writes the block with one write (so that a kill leaves it whole or torn at the end, never
/// mixed with the next) and starts the next. A failed write keeps the block: nothing more is
/// written after a write error anyway (`recorder::files`).
fn write_block(file: &mut File, block: &mut v2::BlockEncoder) -> io::Result<()> {
    file.write_all(block.finish())?;
    block.clear();
    Ok(())
}

/// Reads a sample log of either format record by record. Iteration ends at the end of the file
/// or at the first damage (a torn or corrupt end), which [`SampleLogReader::damage`] then names;
/// every record before it is read.
pub struct SampleLogReader {
    input: BufReader<File>,
    pub header: SampleLogHeader,
    format: SampleLogFormat,
    body: Body,
    records_read: u64,
    damage: Option<String>,
    name: String,
}

enum Body {
    V1(v1::RecordReader),
    V2(v2::BlockReader),
}

impl SampleLogReader {
    pub fn open(path: &Path) -> io::Result<Self> {
        let invalid = |what: &str| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {what}", path.display()),
            )
        };
        let mut input = BufReader::with_capacity(256 * 1024, crate::input::open_result_file(path)?);
        let mut h = [0u8; HEADER_BYTES];
        input
            .read_exact(&mut h)
            .map_err(|_| invalid("too short for a jitterlab sample log header"))?;
        let (format, body) = match &h[0..8] {
            m if m == MAGIC => {
                let record_bytes = v1::record_size(&h).map_err(|e| invalid(&e))?;
                let body = Body::V1(v1::RecordReader::new(record_bytes));
                (SampleLogFormat::V1, body)
            }
            m if m == MAGIC_V2 => (SampleLogFormat::V2, Body::V2(v2::BlockReader::default())),
            _ => return Err(invalid("not a jitterlab sample log (bad magic)")),
        };
        let header = SampleLogHeader {
            clock_id: u32::from_le_bytes(h[12..16].try_into().unwrap()),
            start_ns: u64::from_le_bytes(h[16..24].try_into().unwrap()),
        };
        Ok(SampleLogReader {
            input,
            header,
            format,
            body,
            records_read: 0,
            damage: None,
            name: path.display().to_string(),
        })
    }

    /// The format the file is in.
    pub fn format(&self) -> SampleLogFormat {
        self.format
    }

    /// What ended the file before its end, once iteration has stopped there: where and why,
    /// and how many samples before it were read. None for a file read to its end.
    pub fn damage(&self) -> Option<&str> {
        self.damage.as_deref()
    }

    fn damaged(&mut self, what: String, at: u64) {
        self.damage = Some(format!(
            "{}: {what} at byte {at} (left by a kill or a full disk, or damaged since); the {} samples before it are read, nothing after",
            self.name, self.records_read
        ));
    }
}

impl Iterator for SampleLogReader {
    type Item = io::Result<SampleRecord>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.damage.is_some() {
            return None;
        }
        let read = match &mut self.body {
            Body::V1(records) => records.next(&mut self.input),
            Body::V2(blocks) => blocks.next(&mut self.input),
        };
        match read {
            Ok(Read1::Record(r)) => {
                self.records_read += 1;
                Some(Ok(r))
            }
            Ok(Read1::End) => None,
            Ok(Read1::Damaged { what, at }) => {
                self.damaged(what, at);
                None
            }
            Err(e) => Some(Err(e)),
        }
    }
}

/// What one step of a format's reader found.
pub(super) enum Read1 {
    Record(SampleRecord),
    /// The end of the file, after a whole record or block.
    End,
    /// The damage that ends the readable part: what, and the file offset of the record or
    /// block it is in.
    Damaged {
        what: String,
        at: u64,
    },
}

/// Reads into `buf` until it is full or the input ends; returns the bytes read.
pub(super) fn read_up_to(input: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match input.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::samples::MAX_RECORD_BYTES;

    fn records() -> Vec<SampleRecord> {
        let r = |cpu, missed, seq, expected_ns, latency_ns, irq_latency_ns| SampleRecord {
            cpu,
            missed,
            seq,
            expected_ns,
            latency_ns,
            irq_latency_ns,
        };
        vec![
            r(0, 0, 0, 123_456_789, 15_000, None),
            r(1, 2, 0, 123_456_789, -20, Some(3_000)),
            r(0, 0, 2, 125_456_789, i64::MAX, None),
        ]
    }

    fn write(path: &Path, format: SampleLogFormat, records: &[SampleRecord]) {
        let mut w = SampleLogWriter::create(path, format).unwrap();
        w.begin(HEADER).unwrap();
        records.iter().for_each(|r| w.write(r).unwrap());
        w.flush().unwrap();
    }

    const HEADER: SampleLogHeader = SampleLogHeader {
        clock_id: 1,
        start_ns: 123_456_789,
    };

    #[test]
    fn both_formats_round_trip_and_name_a_torn_tail() {
        for (format, torn) in [
            (
                SampleLogFormat::V1,
                "a partial last record (3 of 40 bytes) at byte 152",
            ),
            (
                SampleLogFormat::V2,
                "a torn last block (3 of its 12-byte header) at byte",
            ),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join(FILE_NAME);
            write(&path, format, &records());
            let mut reader = SampleLogReader::open(&path).unwrap();
            assert_eq!((reader.header, reader.format()), (HEADER, format));
            let back: Vec<SampleRecord> = reader.by_ref().map(Result::unwrap).collect();
            assert_eq!(back, records());
            assert_eq!(reader.damage(), None);
            // Simulate a kill in the middle of a write.
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .unwrap();
            f.write_all(&[1, 2, 3]).unwrap();
            let mut reader = SampleLogReader::open(&path).unwrap();
            let back: Vec<SampleRecord> = reader.by_ref().map(Result::unwrap).collect();
            assert_eq!(back, records());
            let damage = reader.damage().unwrap();
            assert!(damage.contains(torn), "{damage}");
            assert!(
                damage.contains("the 3 samples before it are read"),
                "{damage}"
            );
        }
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

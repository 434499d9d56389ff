//! samples.bin's layout (`run --samples`): a 32-byte header, then either fixed-size records
//! (format 1) or checksummed blocks of variable-length records (format 2, the default). The
//! writer and reader are in `format::samplelog`; both layouts are specified byte by byte in
//! docs/result-format.md.

/// The file name inside a result directory.
pub const FILE_NAME: &str = "samples.bin";
/// The first 8 bytes of a format-1 header.
pub const MAGIC: &[u8; 8] = b"JLSAMPL1";
/// The first 8 bytes of a format-2 header.
pub(crate) const MAGIC_V2: &[u8; 8] = b"JLSAMPL2";
/// Both formats' header size.
pub const HEADER_BYTES: usize = 32;
/// The record size format 1 writes; readers accept larger ones and skip the extra bytes.
pub(crate) const RECORD_BYTES: usize = 40;
/// The largest record size a header may claim. Later versions may append fields to a record
/// (readers skip them), but a record is a handful of numbers: a header claiming more is a
/// damaged file, and believing it would allocate what it says (up to 4 GiB).
pub(crate) const MAX_RECORD_BYTES: usize = 4096;
/// Marks an absent IRQ latency in format 1.
pub(crate) const NO_IRQ_LATENCY: i64 = i64::MIN;
/// Format 1's write buffer: flushed whenever an interval completes, and whenever it fills.
pub(crate) const WRITE_BUFFER_BYTES: usize = 256 * 1024;

/// Format 2: each block starts with its payload size (u32), its record count (u32) and the
/// CRC-32 (IEEE) of those 8 bytes and the payload (u32).
pub(crate) const BLOCK_HEADER_BYTES: usize = 12;
/// Format 2: the writer ends a block before its payload would exceed this (and whenever an
/// interval completes), and writes it with one write.
pub(crate) const BLOCK_PAYLOAD_BYTES: usize = 64 * 1024;
/// Format 2: the largest payload a reader accepts; a block claiming more is damaged (and
/// believing it would allocate what it says).
pub(crate) const MAX_BLOCK_PAYLOAD_BYTES: usize = 1024 * 1024;

/// Format 2 record tag bits: which optional fields follow the tag byte, in this order. The
/// latency always follows them; the bits above `TAG_IRQ` are zero.
pub(crate) const TAG_CPU: u8 = 0x01;
pub(crate) const TAG_SEQ_GAP: u8 = 0x02;
pub(crate) const TAG_DUE_OFF_GRID: u8 = 0x04;
pub(crate) const TAG_MISSED: u8 = 0x08;
pub(crate) const TAG_IRQ: u8 = 0x10;
/// Every tag bit format 2 defines.
pub(crate) const TAG_KNOWN: u8 = TAG_CPU | TAG_SEQ_GAP | TAG_DUE_OFF_GRID | TAG_MISSED | TAG_IRQ;

/// The layout a sample log is written in (`--samples-format`). Readers read both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SampleLogFormat {
    /// Fixed 40-byte records (jitterlab before format 2; for tools that read only that).
    V1,
    /// Checksummed blocks of delta-coded records, about 4 bytes a sample.
    #[default]
    V2,
}

impl SampleLogFormat {
    /// The format's number, as `--samples-format` takes it and the magic ends with.
    pub fn number(self) -> u32 {
        match self {
            SampleLogFormat::V1 => 1,
            SampleLogFormat::V2 => 2,
        }
    }
}

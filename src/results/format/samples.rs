//! samples.bin's layout (`run --samples`): a header, then fixed-size little-endian records.
//! The writer and reader are in `record::samplelog`; the field offsets are listed there and in
//! docs/result-format.md.

/// The file name inside a result directory.
pub const FILE_NAME: &str = "samples.bin";
/// The first 8 bytes of the header.
pub const MAGIC: &[u8; 8] = b"JLSAMPL1";
pub const HEADER_BYTES: usize = 32;
/// The record size this format writes; readers accept larger ones and skip the extra bytes.
pub const RECORD_BYTES: usize = 40;
/// The largest record size a header may claim. Later versions may append fields to a record
/// (readers skip them), but a record is a handful of numbers: a header claiming more is a
/// damaged file, and believing it would allocate what it says (up to 4 GiB).
pub const MAX_RECORD_BYTES: usize = 4096;
/// Marks an absent IRQ latency.
pub const NO_IRQ_LATENCY: i64 = i64::MIN;
/// The writer's buffer: flushed whenever an interval completes, and whenever it fills.
pub const WRITE_BUFFER_BYTES: usize = 256 * 1024;

//! A diagnostic: the BPF records exactly as the reader got them, with when it read them, written
//! to the file named by `JITTERLAB_BPF_RAW` at the end of the run (docs/tracing.md, "Raw BPF
//! records"). It shows what the decoder and the joiner cannot: the order the records left the
//! ring buffer in, and up to when the reader took each CPU's trace as complete.
//!
//! The file is a sequence of frames, each `u32 length` (of what follows the tag), `u32 tag`,
//! then its bytes, native byte order:
//! - tag [`RECORD`]: one ring buffer record, as the programs wrote it (src/trace/bpf/record.rs);
//! - tag [`DRAIN`]: one round of the reader, written before the records it read: `u64 now_ns`
//!   (CLOCK_MONOTONIC, taken before the per-CPU state was read), then per traced CPU `u64 cpu,
//!   u64 pending_since, u64 complete_until_ns` as it sent them;
//! - tag [`TRUNCATED`]: the capture stopped at its bound ([`MAX_BYTES`]); no frame follows.

use crate::results::dir::OutputFile;
use std::path::Path;

/// The environment variable that names the capture's file.
pub(crate) const ENV: &str = "JITTERLAB_BPF_RAW";
const RECORD: u32 = 1;
const DRAIN: u32 = 2;
const TRUNCATED: u32 = 3;
/// The capture is kept in memory until the run ends (the writer writes a file whole): at most
/// this much (a 3 s run at 40 us takes about 20 MB).
const MAX_BYTES: usize = 1 << 30;

/// The capture under way.
pub(crate) struct RawCapture {
    file: OutputFile,
    bytes: Vec<u8>,
    full: bool,
}

impl RawCapture {
    /// The capture `JITTERLAB_BPF_RAW` asks for, its file claimed now (before measuring), or
    /// None when it is not set. Err: why the file cannot be written, and the fix.
    pub(crate) fn from_env() -> Result<Option<RawCapture>, String> {
        let Some(path) = std::env::var_os(ENV).filter(|p| !p.is_empty()) else {
            return Ok(None);
        };
        let file = OutputFile::claim(Path::new(&path), ENV, &[]).map_err(|e| e.to_string())?;
        Ok(Some(RawCapture {
            file,
            bytes: Vec::new(),
            full: false,
        }))
    }

    fn frame(&mut self, tag: u32, parts: &[&[u8]]) {
        if self.full {
            return;
        }
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if self.bytes.len() + len + 8 > MAX_BYTES - 8 {
            self.bytes.extend_from_slice(&0u32.to_ne_bytes());
            self.bytes.extend_from_slice(&TRUNCATED.to_ne_bytes());
            self.full = true;
            return;
        }
        self.bytes.extend_from_slice(&(len as u32).to_ne_bytes());
        self.bytes.extend_from_slice(&tag.to_ne_bytes());
        for p in parts {
            self.bytes.extend_from_slice(p);
        }
    }

    /// One record as read from the ring buffer.
    pub(crate) fn record(&mut self, bytes: &[u8]) {
        self.frame(RECORD, &[bytes]);
    }

    /// One round of the reader: `cpus` as (cpu, pending_since, complete_until_ns).
    pub(crate) fn drain(&mut self, now_ns: u64, cpus: &[(u64, u64, u64)]) {
        let mut b = now_ns.to_ne_bytes().to_vec();
        for &(cpu, pending, complete) in cpus {
            for v in [cpu, pending, complete] {
                b.extend_from_slice(&v.to_ne_bytes());
            }
        }
        self.frame(DRAIN, &[&b]);
    }

    /// Writes the file (a new file at its name, by the results' one writer).
    pub(crate) fn write(self) -> Result<(), String> {
        self.file
            .write_bytes(&self.bytes)
            .map_err(|e| format!("{ENV}: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_say_their_length_and_tag() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("raw");
        let file = OutputFile::claim(&path, ENV, &[]).unwrap();
        let mut c = RawCapture {
            file,
            bytes: Vec::new(),
            full: false,
        };
        c.drain(7, &[(1, 5, 5)]);
        c.record(&[9u8; 16]);
        c.write().unwrap();
        let b = std::fs::read(&path).unwrap();
        let u32_at = |at: usize| u32::from_ne_bytes(b[at..at + 4].try_into().unwrap());
        let u64_at = |at: usize| u64::from_ne_bytes(b[at..at + 8].try_into().unwrap());
        assert_eq!((u32_at(0), u32_at(4)), (32, DRAIN));
        assert_eq!(
            (u64_at(8), u64_at(16), u64_at(24), u64_at(32)),
            (7, 1, 5, 5)
        );
        assert_eq!((u32_at(40), u32_at(44)), (16, RECORD));
        assert_eq!(&b[48..], &[9u8; 16]);
    }
}

//! A torn last line: what a log looks like after the disk filled up or the run was killed
//! mid-write, how it is cut off, and the one warning every reader gives about it.

use std::path::Path;

/// A last line without its end of line: the disk filled up, or the process was killed, while it
/// was being written. Readers use every complete interval before it and warn about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TornTail {
    /// Length of the torn line.
    pub bytes: usize,
}

impl TornTail {
    /// What readers tell the user (stderr, and the run's warnings in reports and exports).
    pub(crate) fn warning(&self, path: &Path) -> String {
        format!(
            "{}: the last line is torn ({} bytes without an end of line: the disk filled up or the run was killed while it was written); it is left out, every complete interval before it is used",
            path.display(),
            self.bytes
        )
    }
}

/// The whole lines of a log, and its torn tail if there is one.
pub(crate) fn complete_lines(bytes: &[u8]) -> (&[u8], Option<TornTail>) {
    let whole = bytes
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |at| at + 1);
    let torn = (whole < bytes.len()).then(|| TornTail {
        bytes: bytes.len() - whole,
    });
    (&bytes[..whole], torn)
}

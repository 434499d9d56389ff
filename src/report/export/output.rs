//! Where an export goes: the file `-o` names, through the one writer of user-named paths
//! (`results::dir::write_output`), or standard output. A leaf below the exporters.

use crate::error::{OrFailure, Result};
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// Writes text to `output`, or to stdout when None (a closed pipe is not an error). A file that
/// cannot be created is bad usage (exit 2); a write that fails (disk full, I/O error) is a
/// failure while running (exit 4), as for the sample formats.
pub(super) fn write_text(output: Option<&Path>, text: &str) -> Result<()> {
    match output {
        None => crate::stdout::write(text),
        Some(file) => crate::results::dir::write_output(file, |w| w.write_all(text.as_bytes()))
            .or_run(|| format!("writing {}", file.display())),
    }
}

/// Writes an export made as it is written (`fill` writes every byte) to `output`, or to
/// stdout, buffered; a closed pipe on stdout (`| head`) is the reader's choice, not a failure.
pub(super) fn write_streamed(
    output: Option<&Path>,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<()> {
    match output {
        None => {
            let stdout = io::stdout();
            let mut out = BufWriter::new(stdout.lock());
            match fill(&mut out).and_then(|_| out.flush()) {
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
                // Streamed (a day of samples is not held as text), so not through
                // `crate::stdout::write`, but failing in its words.
                r => r.or_run(|| "cannot write to standard output".into()),
            }
        }
        Some(file) => crate::results::dir::write_output(file, |w| {
            let mut out = BufWriter::new(w);
            fill(&mut out)?;
            out.flush()
        })
        .or_run(|| format!("writing {}", file.display())),
    }
}

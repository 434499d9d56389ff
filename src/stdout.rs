//! The one writer of standard output (third hostile re-run, N11): `println!` panics when
//! stdout cannot be written (a full disk, `> /dev/full`), which turned five commands' results
//! into exit 101 and a backtrace. Every command's output goes through here instead, and
//! `tests/offline/stdout_writer.rs` fails on a `print!` or `println!` elsewhere.

use crate::error::{Failure, Result};
use crate::sys::stop_aware::StopAware;
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether standard output carries a data file (a drop-in's `--json=-`): the text meant for
/// it then goes to standard error, so that standard output parses as that file alone (issue
/// 39, L6-g: `oslat --json=-` printed its summary and then the JSON).
static DATA_ON_STDOUT: AtomicBool = AtomicBool::new(false);

/// Gives standard output to a data file from now on: [`write`] sends text to standard error.
pub(crate) fn reserve_for_data() {
    DATA_ON_STDOUT.store(true, Ordering::SeqCst);
}

/// Writes `text` to standard output. A closed pipe (`| head`) is the reader's choice, not a
/// failure; any other error is a failure while running (exit 4) that says what could not be
/// written, so the caller can add where the results are. A pipe that is held open and not read
/// is waited for only until a SIGINT or SIGTERM (fourth hostile re-run, N16: `cyclictest -h`
/// into a stalled `| ssh` ignored both), through the writer of every output that is not a file.
pub(crate) fn write(text: &str) -> Result<()> {
    warn_if_closed_at_start();
    if DATA_ON_STDOUT.load(Ordering::SeqCst) {
        crate::stderr::write(text);
        return Ok(());
    }
    // Held while writing: one text after another, whole, whatever thread writes.
    let lock = io::stdout().lock();
    let written = lock
        .as_fd()
        .try_clone_to_owned()
        .and_then(|fd| StopAware::new(fd).write_all(text.as_bytes()));
    drop(lock);
    match written {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Failure::run(format!(
            "cannot write to standard output: {e}; redirect it to a file system with room or to a reader that reads, or use -o FILE where the command has it"
        ))),
        Ok(()) => Ok(()),
    }
}

/// Says once, on standard error, that standard output was closed when jitterlab started (`>&-`):
/// Rust's runtime then puts /dev/null in its place, and what the command prints (a `--json`
/// record, a histogram) would be lost without a word (seventh hostile re-run, L7-c). Also
/// asked by the writer when `-` names standard output as an output file (`export -o -`,
/// `report -o -`: thirteenth hostile re-run, L13-c, where the file went to /dev/null and
/// the report said "written to -").
pub(crate) fn warn_if_closed_at_start() {
    static CHECKED: AtomicBool = AtomicBool::new(false);
    if CHECKED.swap(true, Ordering::SeqCst) {
        return;
    }
    if crate::sys::file::is_reopened_dev_null(1) {
        crate::stderr::write(
            "jitterlab: warning: standard output was closed when jitterlab started (`>&-`): what it prints goes nowhere; redirect it to a file or a reader instead (`> out.txt`), or to /dev/null if that is what you mean\n",
        );
    }
}

/// [`write`] for a display refreshed while something still runs (a drop-in's live lines): a
/// failure must not stop a measurement, and the final output's [`write`] reports it.
pub(crate) fn write_live(text: &str) {
    let _ = write(text);
}

/// [`write`] of `text` and a newline.
pub(crate) fn line(text: &str) -> Result<()> {
    write(&format!("{text}\n"))
}

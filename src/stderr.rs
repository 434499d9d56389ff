//! The one writer of standard error (fourth hostile re-run, N11's rest): std's `eprintln!`
//! panics when stderr cannot be written (`> log 2>&1` on a full disk), which turned every
//! command's exit code, a budget's verdict (1) or a usage error (2) included, into 101 and a
//! backtrace. The crate's `eprint!` and `eprintln!` (defined in lib.rs before every module, so
//! that they shadow std's everywhere) and main.rs write here. When stderr fails there is
//! nowhere else to say so: the failure is ignored and the command keeps its exit code.
//! `tests/offline/stdout_writer.rs` checks that the macros stay defined first and that nothing
//! calls std's.

use std::io::Write;

/// Writes `text` to standard error, whole, ignoring a failure (see the module's doc).
pub fn write(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

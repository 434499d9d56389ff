//! The one writer of standard error (fourth hostile re-run, N11's rest): std's `eprintln!`
//! panics when stderr cannot be written (`> log 2>&1` on a full disk), which turned every
//! command's exit code, a budget's verdict (1) or a usage error (2) included, into 101 and a
//! backtrace. The crate's `eprint!` and `eprintln!` (defined in lib.rs before every module, so
//! that they shadow std's everywhere) and main.rs write here. When stderr fails there is
//! nowhere else to say so: the failure is ignored and the command keeps its exit code.
//! `tests/offline/stdout_writer.rs` checks that the macros stay defined first and that nothing
//! calls std's.
//!
//! A stderr that is a pipe no one reads (`2>&1 | stalled`) is waited for only until a SIGINT
//! or SIGTERM (fifth hostile re-run, N20: a blocking write held the first stop): the write is
//! [`stop_aware::write_unless_stopped`]'s, and what it gives up after a stop is counted
//! ([`dropped`]), never waited for.

use crate::sys::stop_aware::{self, Written};
use std::io;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicU64, Ordering};

/// The texts given up (in part or whole) because a stop came while stderr had no room.
static DROPPED: AtomicU64 = AtomicU64::new(0);

/// Writes `text` to standard error, whole, ignoring a failure (see the module's doc); after a
/// SIGINT or SIGTERM, a text stderr has no room for is dropped and counted instead.
pub fn write(text: &str) {
    // Held while writing: one text after another, whole, whatever thread writes.
    let lock = io::stderr().lock();
    if stop_aware::write_unless_stopped(lock.as_fd(), text.as_bytes()) == Written::Dropped {
        DROPPED.fetch_add(1, Ordering::Relaxed);
    }
    drop(lock);
}

/// How many texts [`write()`] gave up after a stop request because stderr had no room.
pub fn dropped() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

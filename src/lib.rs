//! jitterlab: a real-time latency lab for Linux. See docs/architecture.md and docs/.
//!
//! The library is the binary's and its tests' (not an API for others): only what `main.rs`,
//! `tests/` and `bench/` use is `pub`, everything else `pub(crate)`, so that the compiler reports
//! dead code. Two checks hold it: `unreachable_pub` is denied below (an item no path from the
//! crate root reaches must be written `pub(crate)`), and tests/offline/public_surface.rs fails on
//! a `pub` item whose name nothing outside the library uses. The public modules, and who uses
//! them (tests/offline/architecture.rs checks this list against the declarations below):
//!
//! - `cli`, `commands`, `error`, `stderr`: the binary: clap's parse, the dispatch, the exit
//!   codes, the one writer of standard error; tests check the help and the drop-ins' options.
//! - `format`, `results`: tests read and write result directories with the format's own
//!   readers and writers (hlog, samples.bin, events, run.json), and make synthetic runs.
//! - `analysis`: the oracle tests re-derive statistics against its quantiles, compare and tails.
//! - `measure`, `sys`: tests/wake_grid.rs runs every wake method's loop in-process; tests pin
//!   threads, set policies, read the kernel's identity.
//! - `units`, `cpulist`, `random`: tests parse and print durations, list CPUs, seed generators.
//! - `load`, `plan`, `session`, `recorder`: tests run sessions in-process with their plans and
//!   loads; bench/recorder_scale.rs drives the recorder.
//! - `report`, `trace`: tests render summaries, list the export formats, parse captured trace
//!   pages.
//! - `tune`: tests/offline/tune.rs makes a tune's record from synthetic arms with the tune's own
//!   `effect` and `record`, and re-derives its figures.
//!
//! Crate-private whole: doctor, input, journal, monitor, stdout (nothing outside uses
//! them). Its documentation is for the people who work on it and links freely to crate-private
//! items (`cargo doc --document-private-items` shows them).

#![allow(rustdoc::private_intra_doc_links)]
#![deny(unreachable_pub)]

/// `eprint!` for the whole crate, shadowing std's, which panics when stderr cannot be written:
/// through [`stderr::write`], which ignores the failure (src/stderr.rs says why). Defined before
/// every module so that its textual scope covers them all.
#[allow(unused_macros)]
macro_rules! eprint {
    ($($arg:tt)*) => {
        $crate::stderr::write(&format!($($arg)*))
    };
}

/// `eprintln!` for the whole crate, as [`eprint!`].
macro_rules! eprintln {
    () => {
        $crate::stderr::write("\n")
    };
    ($($arg:tt)*) => {
        $crate::stderr::write(&format!("{}\n", format_args!($($arg)*)))
    };
}

pub mod analysis;
pub mod cli;
pub mod commands;
pub mod cpulist;
pub(crate) mod doctor;
pub mod error;
pub mod format;
pub(crate) mod input;
pub(crate) mod journal;
pub mod load;
pub mod measure;
pub(crate) mod monitor;
pub mod plan;
pub mod random;
pub mod recorder;
pub mod report;
pub mod results;
pub mod session;
pub mod stderr;
pub(crate) mod stdout;
pub mod sys;
pub mod trace;
pub mod tune;
pub mod units;

#[cfg(test)]
mod spec_quotes_the_code;

//! jitterlab: a real-time latency lab for Linux. See docs/architecture.md and docs/.
//!
//! The library is the binary's and its tests' (not an API for others): only what `main.rs` and
//! the tests use is `pub`, everything else `pub(crate)`, so that the compiler reports dead
//! code. Its documentation is for the people who work on it and links freely to crate-private
//! items (`cargo doc --document-private-items` shows them).

#![allow(rustdoc::private_intra_doc_links)]

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

//! jitterlab: a real-time latency lab for Linux. See docs/architecture.md and docs/.
//!
//! The library is the binary's and its tests' (not an API for others): only what `main.rs` and
//! the tests use is `pub`, everything else `pub(crate)`, so that the compiler reports dead
//! code. Its documentation is for the people who work on it and links freely to crate-private
//! items (`cargo doc --document-private-items` shows them).

#![allow(rustdoc::private_intra_doc_links)]

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
pub(crate) mod stdout;
pub mod sys;
pub mod trace;
pub mod units;

#[cfg(test)]
mod spec_quotes_the_code;

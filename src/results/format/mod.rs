//! The result-directory format, version [`FORMAT`]: the types and layout constants of every file
//! a run writes, specified in docs/result-format.md. Writers (`record`, `runner`) and readers
//! (`results::loaded`, the exporters) take the format from here and nowhere else; a unit test
//! checks that the specification quotes these constants as the code has them.

pub mod cpu_time;
pub mod events;
pub mod figures_check;
pub mod hlog;
pub mod inversion;
pub mod noise;
pub mod run_record;
pub mod samples;
pub mod segments;
pub mod tails;
pub mod wakeup_summary;

pub use run_record::FORMAT;

#[cfg(test)]
mod spec_quotes_the_code;

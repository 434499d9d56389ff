//! jitterlab: a real-time latency lab for Linux. See docs/architecture.md and docs/.

pub mod analysis;
pub mod cli;
pub mod commands;
pub mod cpulist;
pub mod error;
pub mod format;
pub mod input;
pub mod load;
pub mod measure;
pub mod monitor;
pub mod plan;
pub mod random;
pub mod record;
pub mod report;
pub mod results;
pub mod runner;
pub mod sys;
pub mod system;
pub mod trace;
pub mod units;

#[cfg(test)]
mod spec_quotes_the_code;

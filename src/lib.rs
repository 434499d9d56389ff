//! jitterlab: a real-time latency lab for Linux. See DESIGN.md and docs/.

pub mod cli;
pub mod cpulist;
pub mod error;
pub mod system;
pub mod units;

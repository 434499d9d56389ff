//! jitterlab: a real-time latency lab for Linux. See DESIGN.md and docs/.

pub mod cli;
pub mod cpulist;
pub mod error;
pub mod system;
pub mod units;
pub mod measure;
pub mod load;
pub mod plan;
pub mod record;
pub mod results;

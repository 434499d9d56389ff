//! The result-directory format, version [`FORMAT`]: the types, layout constants, encoders and
//! decoders of every file a run writes, specified in docs/result-format.md. A leaf: it imports
//! nothing else of the crate but the input rules (`crate::input`, how a result file is opened
//! for reading), so that the recorder that writes these files (`record`), the readers
//! (`results`, `analysis`, the exporters) and the importers all take the format from here and
//! nowhere else. A unit test (`spec_quotes_the_code`) checks that the specification quotes these
//! constants as the code has them.

pub mod actions;
pub mod counters;
pub mod cpu_time;
pub(crate) mod environment;
pub mod events;
pub(crate) mod figures_check;
pub mod hlog;
pub mod hlog_scan;
pub mod inversion;
pub mod kind;
pub mod noise;
pub(crate) mod plan_record;
pub(crate) mod record_budget;
pub mod run_record;
pub mod samplelog;
pub mod samples;
pub mod segments;
pub mod stats;
pub mod steal;
pub mod summary;
pub mod tails;
pub mod throughput;
pub mod tune;
pub mod wakeup_summary;

pub use run_record::{FORMAT, RunRecord};

/// The directory of the load generators' logs inside a result directory (`loads/<k>-<name>.log`).
pub(crate) const LOAD_LOG_DIR: &str = "loads";

/// Name of the copy of the scenario file in the result directory.
pub(crate) const SCENARIO_COPY: &str = "scenario.toml";

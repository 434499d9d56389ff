//! The result directory, format 1 (DESIGN.md; specified in docs/result-format.md).

pub mod dir;
pub mod events;
pub mod import;
pub mod loaded;
pub mod run_record;
pub mod sweep;
pub mod synthetic;

pub use dir::ResultDir;
pub use run_record::RunRecord;

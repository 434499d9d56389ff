//! The result directory, format 1 (DESIGN.md; specified in docs/result-format.md): its format
//! (`format/`), making and opening it (`dir`), reading a run back (`loaded`, the one reader),
//! sweep summaries, importers of other tools' output, and synthetic runs for tests and benches.

pub mod dir;
pub mod format;
pub mod import;
pub mod loaded;
pub mod sweep;
pub mod synthetic;

// The format's files keep their short paths (`results::run_record::RunRecord`), which most of
// the crate uses.
pub use format::{events, run_record};

pub use dir::ResultDir;
pub use run_record::RunRecord;

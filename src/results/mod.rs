//! The result directory as files on disk (its format is `crate::format`): making and opening it
//! (`dir`), reading a run back (`loaded`, the one reader), sweep summaries, importers of other
//! tools' output, and synthetic runs for tests and benches.

pub mod cells;
pub mod dir;
pub mod import;
pub mod loaded;
pub mod sweep;
pub mod synthetic;

/// The record of a tune directory (`jitterlab tune`, tune/record.rs), which, like a sweep's,
/// holds the result directories of its own runs (its arms).
pub(crate) const TUNE_FILE_NAME: &str = "tune.json";
/// The records that make a directory the home of this process's runs: a sweep's levels and a
/// tune's arms, the one exception to "no result directory is made in another" (dir/).
pub(crate) const CONTAINER_RECORDS: [&str; 2] = [sweep::FILE_NAME, TUNE_FILE_NAME];

pub use dir::ResultDir;

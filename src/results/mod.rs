//! The result directory as files on disk (its format is `crate::format`): making and opening it
//! (`dir`), reading a run back (`loaded`, the one reader), sweep summaries, importers of other
//! tools' output, and synthetic runs for tests and benches.

pub mod cells;
pub mod dir;
pub mod import;
pub mod loaded;
pub mod sweep;
pub mod synthetic;

pub use dir::ResultDir;

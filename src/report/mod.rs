//! Renderers of results: the terminal summary, the exporters, and the HTML report with its
//! plots (`jitterlab report`, see docs/report.md).

#[cfg(test)]
mod bounded_tests;
pub mod causes;
pub(crate) mod compare_view;
pub mod counters;
pub(crate) mod cpu_group;
pub(crate) mod cpu_summary;
pub(crate) mod cpu_tables;
pub(crate) mod digest;
pub(crate) mod events_digest;
pub mod export;
pub(crate) mod heading;
pub mod html;
pub mod inversion;
pub mod noise;
pub(crate) mod noise_lines;
pub mod openmetrics;
pub mod phases;
pub mod plot;
pub mod png;
pub(crate) mod stack_rank;
pub mod svg;
pub(crate) mod sweep_tables;
pub mod table;
pub mod tails;
pub mod terminal;
pub mod tune;

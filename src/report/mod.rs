//! Renderers of results: the terminal summary, the exporters, and the HTML report with its
//! plots (`jitterlab report`, see docs/report.md).

#[cfg(test)]
mod bounded_tests;
pub mod causes;
pub mod compare_view;
pub mod counters;
pub mod cpu_group;
pub mod cpu_summary;
pub mod cpu_tables;
pub mod digest;
pub mod events_digest;
pub mod export;
pub mod html;
pub mod inversion;
pub mod noise;
pub mod openmetrics;
pub mod phases;
pub mod plot;
pub mod png;
pub mod stack_rank;
pub mod svg;
pub mod sweep_tables;
pub mod table;
pub mod tails;
pub mod terminal;
pub mod tune;

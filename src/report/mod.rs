//! Renderers of results: the terminal summary and the exporters.

pub mod compare_view;
pub mod export;
pub mod phases;
pub mod terminal;

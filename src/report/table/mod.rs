//! One table model for every table jitterlab prints, and one renderer per markup (hyperfine's
//! `MarkupExporter` is the model): a [`Table`] is plain data (columns with their header and
//! alignment, rows of cells already formatted with their units), built once per concept (the
//! per-CPU latency table in [`crate::report::cpu_tables`], the compare table in
//! [`crate::report::compare_view`], the HTML report's tables), and written out by
//! [`Terminal`], [`Markdown`] or [`Html`]. A table therefore reads the same in every markup:
//! only the markup differs, never the figures.
//!
//! Rows come in groups so that a phase's or a sweep level's leading cells (its name, time
//! span, loads) can span the rows of its CPUs: HTML writes them once with `rowspan`, the text
//! markups write them on the group's first row and leave them blank below.

//!
//! The model is `model.rs` (the table, its cells, the `Markup` trait), a leaf: each renderer
//! (`terminal.rs`, `markdown.rs`, `html.rs`) imports it, and this file only declares and
//! re-exports them.

mod html;
mod markdown;
mod model;
mod terminal;

pub(crate) use html::Html;
pub(crate) use markdown::Markdown;
pub(crate) use model::Markup;
pub use model::{Align, Cell, CellKind, Column, RowGroup, Table};
pub(crate) use terminal::Terminal;

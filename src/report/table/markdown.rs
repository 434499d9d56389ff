//! Tables in Markdown (GitHub flavour): a header row, an alignment row (`---` left, `---:`
//! right), one line per row; a `|` inside a cell is escaped.

use super::model::{Align, Markup, Table};
use std::fmt::Write;

/// GitHub-flavoured Markdown.
pub(crate) struct Markdown;

fn line(cells: impl Iterator<Item = String>) -> String {
    let cells: Vec<String> = cells.map(|c| c.replace('|', "\\|")).collect();
    format!("| {} |", cells.join(" | "))
}

impl Markup for Markdown {
    fn render(&self, table: &Table) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{}",
            line(table.columns.iter().map(|c| c.header.clone()))
        );
        let align: Vec<&str> = table
            .columns
            .iter()
            .map(|c| match c.align {
                Align::Left => "---",
                Align::Right => "---:",
            })
            .collect();
        let _ = writeln!(out, "|{}|", align.join("|"));
        for row in table.grid() {
            let _ = writeln!(out, "{}", line(row.into_iter()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::model::tests::sample;
    use super::*;

    #[test]
    fn pipes_are_escaped_and_figures_right_aligned() {
        assert_eq!(
            Markdown.render(&sample()),
            "| phase | CPU | max |\n|---|---:|---:|\n| idle | 0 | 12.0 us |\n|  | 1 | -3 ns |\n| a\\|b | no measurements |  |\n"
        );
    }
}

//! Tables on the terminal: columns padded to their widest cell, two spaces apart, a rule of
//! dashes under the header, every line indented by two spaces.

use super::model::{Align, Markup, Table};
use std::fmt::Write;

/// Aligned text for the terminal.
pub(crate) struct Terminal;

impl Markup for Terminal {
    fn render(&self, table: &Table) -> String {
        let header: Vec<String> = table.columns.iter().map(|c| c.header.clone()).collect();
        let mut rows = vec![header];
        rows.extend(table.grid());
        let widths: Vec<usize> = (0..table.columns.len())
            .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
            .collect();
        let mut out = String::new();
        for (i, row) in rows.iter().enumerate() {
            let cells: Vec<String> = row
                .iter()
                .zip(&widths)
                .zip(&table.columns)
                .map(|((cell, w), column)| match column.align {
                    Align::Left => format!("{cell:<w$}"),
                    Align::Right => format!("{cell:>w$}"),
                })
                .collect();
            let _ = writeln!(out, "  {}", cells.join("  ").trim_end());
            if i == 0 {
                let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
                let _ = writeln!(out, "  {}", rule.join("  "));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::model::tests::sample;
    use super::*;

    #[test]
    fn columns_line_up_under_a_rule() {
        assert_eq!(
            Terminal.render(&sample()),
            "  phase              CPU      max\n\
             \x20 -----  ---------------  -------\n\
             \x20 idle                 0  12.0 us\n\
             \x20                      1    -3 ns\n\
             \x20 a|b    no measurements\n"
        );
    }
}

//! Tables on the terminal: columns padded to their widest cell, two spaces apart, a rule of
//! dashes under the header, every line indented by two spaces. A table wider than [`WIDTH`]
//! columns is written in parts, one under the other with a blank line between, each with the
//! columns that name a row ([`Table::key_columns`]: a level, its run, a CPU) and as many of the
//! others as fit, in their order: every line fits, as the run summary's do.

use super::model::{Align, Markup, Table};
use std::fmt::Write;

/// The widest line of a terminal table, in columns (the run summary's width).
pub(crate) const WIDTH: usize = 100;

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
        for (k, part) in parts(&widths, table.key_columns(), WIDTH)
            .iter()
            .enumerate()
        {
            if k > 0 {
                out.push('\n');
            }
            for (i, row) in rows.iter().enumerate() {
                let cells: Vec<String> = part
                    .iter()
                    .map(|&c| {
                        let (cell, w) = (&row[c], widths[c]);
                        match table.columns[c].align {
                            Align::Left => format!("{cell:<w$}"),
                            Align::Right => format!("{cell:>w$}"),
                        }
                    })
                    .collect();
                let _ = writeln!(out, "  {}", cells.join("  ").trim_end());
                if i == 0 {
                    let rule: Vec<String> = part.iter().map(|&c| "-".repeat(widths[c])).collect();
                    let _ = writeln!(out, "  {}", rule.join("  "));
                }
            }
        }
        out
    }
}

/// The columns of each part of a table whose columns are `widths` wide: all of them when the
/// table fits `width`; else the first `keys` columns in every part, and the others in order,
/// as many as fit (at least one a part, should one alone be too wide).
fn parts(widths: &[usize], keys: usize, width: usize) -> Vec<Vec<usize>> {
    // The two-space indent, the cells, two spaces between each.
    let line = |cols: &[usize]| 2 + cols.iter().map(|&c| widths[c] + 2).sum::<usize>() - 2;
    let all: Vec<usize> = (0..widths.len()).collect();
    if widths.is_empty() || line(&all) <= width || keys >= widths.len() {
        return vec![all];
    }
    let mut parts = Vec::new();
    let mut current: Vec<usize> = (0..keys).collect();
    for c in keys..widths.len() {
        current.push(c);
        if line(&current) > width && current.len() > keys + 1 {
            current.pop();
            parts.push(std::mem::replace(
                &mut current,
                (0..keys).chain([c]).collect(),
            ));
        }
    }
    parts.push(current);
    parts
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

    /// A table wider than the terminal is written in parts, each with the key columns and
    /// every line within the width; one that fits is one part.
    #[test]
    fn a_table_too_wide_is_written_in_parts_that_fit() {
        let widths = [5, 9, 3, 20, 20, 20, 20];
        // 2 + (5+9+3+4*20) + 6*2 = 111.
        assert_eq!(
            parts(&widths, 3, 100),
            vec![vec![0, 1, 2, 3, 4, 5], vec![0, 1, 2, 6]]
        );
        assert_eq!(parts(&widths, 3, 111), vec![(0..7).collect::<Vec<_>>()]);
        // A column wider than the width alone still has a part.
        assert_eq!(parts(&[5, 200, 3], 1, 100), vec![vec![0, 1], vec![0, 2]]);
        let mut t = Table::new(["level", "a", "b"], Align::Right);
        t.push_row(vec![
            "1".into(),
            "x".repeat(60).into(),
            "y".repeat(60).into(),
        ]);
        let text = Terminal.render(&t);
        assert!(text.lines().all(|l| l.chars().count() <= WIDTH), "{text}");
        assert_eq!(
            text.lines()
                .filter(|l| l.trim_start().starts_with("level"))
                .count(),
            2
        );
        assert!(text.contains(&"x".repeat(60)) && text.contains(&"y".repeat(60)));
    }
}

//! Tables in HTML: `<table class="...">` in a `<div class="table-wrap">` (the style sheet's
//! scroll container: a table wider than the page scrolls inside it, never clipped, and the
//! print view lets it shrink and wrap), a header row of `<th>`, then the rows; every text is
//! escaped. A group's leading cells are written once with `rowspan`, an empty group's text
//! spans the remaining columns. No whitespace between tags: the report is read by a browser,
//! and tests find rows by their exact text.

use super::model::{CellKind, Markup, Table};
use crate::report::svg::escape;
use std::fmt::Write;

/// HTML, with the table's class (what the style sheet keys on: `numbers` right-aligns figures).
pub(crate) struct Html<'a> {
    pub class: &'a str,
}

fn cell(out: &mut String, c: &super::model::Cell, span: &str) {
    let text = escape(&c.text);
    let ratio = c.ratio.as_ref().map_or(String::new(), |r| {
        format!(" <span class=\"ratio\">({})</span>", escape(r))
    });
    let _ = match c.kind {
        CellKind::Value => write!(out, "<td{span}>{text}{ratio}</td>"),
        CellKind::Code => write!(out, "<td{span}><code>{text}</code>{ratio}</td>"),
        CellKind::Label => write!(out, "<th{span}>{text}{ratio}</th>"),
    };
}

impl Markup for Html<'_> {
    fn render(&self, table: &Table) -> String {
        let mut out = format!(
            "<div class=\"table-wrap\"><table class=\"{}\"><tr>",
            escape(self.class)
        );
        for c in &table.columns {
            let _ = write!(out, "<th>{}</th>", escape(&c.header));
        }
        out.push_str("</tr>");
        for g in &table.groups {
            let lead_span = if g.lead.is_empty() {
                String::new()
            } else {
                format!(" rowspan=\"{}\"", g.rows.len().max(1))
            };
            out.push_str("<tr>");
            for c in &g.lead {
                cell(&mut out, c, &lead_span);
            }
            if g.rows.is_empty() {
                let rest = table.columns.len() - g.lead.len();
                let _ = write!(out, "<td colspan=\"{rest}\">{}</td></tr>", escape(&g.empty));
            }
            for (k, row) in g.rows.iter().enumerate() {
                if k > 0 {
                    out.push_str("<tr>");
                }
                for c in row {
                    cell(&mut out, c, "");
                }
                out.push_str("</tr>");
            }
        }
        out.push_str("</table></div>\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::model::tests::sample;
    use super::*;

    #[test]
    fn groups_span_their_rows_and_text_is_escaped() {
        assert_eq!(
            Html {
                class: "numbers phases"
            }
            .render(&sample()),
            "<div class=\"table-wrap\"><table class=\"numbers phases\"><tr><th>phase</th><th>CPU</th><th>max</th></tr>\
             <tr><td rowspan=\"2\">idle</td><td>0</td><td>12.0 us</td></tr><tr><td>1</td><td>-3 ns</td></tr>\
             <tr><td rowspan=\"1\"><code>a|b</code></td><td colspan=\"2\">no measurements</td></tr></table></div>\n"
        );
    }
}

//! The pieces every section of the HTML page writes: a plot with its caption, a two-column
//! table, a run's label. A leaf below the page and its sections.

use crate::report::digest::RunDigest;
use crate::report::plot::Figure;
use crate::report::svg::escape;
use std::fmt::Write;

/// A plot with its title, statements and name.
pub(super) fn figure(h: &mut String, f: &Figure) {
    let _ = write!(
        h,
        "<figure id=\"fig-{}\" class=\"plot\">{}<figcaption><strong>{}</strong>",
        escape(&f.name),
        f.svg,
        escape(&f.title)
    );
    if !f.statements.is_empty() {
        h.push_str("<ul class=\"statements\">");
        for s in &f.statements {
            let _ = write!(h, "<li>{}</li>", escape(s));
        }
        h.push_str("</ul>");
    }
    let _ = writeln!(
        h,
        "<span class=\"plot-name\">plot {}</span></figcaption></figure>",
        escape(&f.name)
    );
}

/// A two-column table of (key, value).
pub(super) fn key_values(h: &mut String, class: &str, rows: &[(&str, String)]) {
    let _ = write!(h, "<div class=\"table-wrap\"><table class=\"kv {class}\">");
    for (k, v) in rows {
        let _ = write!(h, "<tr><th>{}</th><td>{}</td></tr>", escape(k), escape(v));
    }
    h.push_str("</table></div>\n");
}

/// A run's short name in overlays: its position and directory name.
pub(super) fn run_label(index: usize, run: &RunDigest) -> String {
    let name = run.path.file_name().map_or_else(
        || run.path.display().to_string(),
        |n| n.to_string_lossy().into(),
    );
    format!("run {}: {name}", index + 1)
}

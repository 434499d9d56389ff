//! A sweep's section of the report (`jitterlab sweep` directories), and the section of two or
//! more sweeps overlaid.

use super::page::figure;
use crate::report::plot::Figure;
use crate::report::svg::escape;
use crate::report::sweep_tables::{latency_table, throughput_table};
use crate::report::table::{Html, Markup};
use crate::results::sweep::SweepRecord;
use std::fmt::Write;

/// A sweep's section: per level and CPU its latency, then per level the load's throughput (a
/// table of its own, so that the latency columns stay in view), then the sweep plots.
pub(super) fn section(
    h: &mut String,
    number: usize,
    path: &std::path::Path,
    s: &SweepRecord,
    figures: &[Figure],
) {
    let _ = write!(
        h,
        "<section id=\"sweep{number}\" class=\"sweep\"><h2>Sweep {number}: <code>{}</code></h2><p class=\"path\">{}</p>",
        escape(&s.load_template),
        escape(&path.display().to_string())
    );
    let missing = |row: &crate::results::sweep::SweepRow| {
        if path.join(&row.run_dir).join("run.json").is_file() {
            String::new()
        } else {
            " (missing)".into()
        }
    };
    let warnings = s.level_warnings();
    if !warnings.is_empty() {
        h.push_str(
            "<div class=\"warnings\"><h3>Warnings (conditions that affect these results)</h3><ul>",
        );
        for w in &warnings {
            let _ = write!(h, "<li>{}</li>", escape(w));
        }
        h.push_str("</ul></div>");
    }
    if s.load_only {
        h.push_str("<p>The loads alone, not measured (<code>sweep --no-measure</code>).</p>");
    } else {
        h.push_str(
            &Html {
                class: "numbers levels",
            }
            .render(&latency_table(s, missing)),
        );
    }
    if let Some(t) = throughput_table(s) {
        h.push_str("<h3>Load throughput per level</h3>");
        h.push_str(&Html { class: "numbers" }.render(&t));
    }
    for f in figures {
        figure(h, f);
    }
    h.push_str("</section>\n");
}

/// Two or more sweeps overlaid ("with RT" vs "without RT"): the overlay plots.
pub(super) fn overlay_section(h: &mut String, figures: &[Figure]) {
    h.push_str(
        "<section id=\"sweeps-overlaid\" class=\"sweep\"><h2>Sweeps overlaid</h2>\
         <p>Each sweep in its own colour: the worst CPU's max (solid), p99 (dashed) and, where \
         traced, timer IRQ max (dotted) at each level.</p>",
    );
    for f in figures {
        figure(h, f);
    }
    h.push_str("</section>\n");
}

//! A sweep's section of the report (`jitterlab sweep` directories).

use super::page::figure;
use crate::report::cpu_tables::{signed, unsigned};
use crate::report::plot::Figure;
use crate::report::svg::escape;
use crate::report::table::{Align, Html, Markup, Table};
use crate::results::sweep::SweepRecord;
use std::fmt::Write;

/// A sweep's section: per level its run, the load's throughput and each CPU's figures, then
/// the sweep plots.
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
    let mut table = Table::new(
        [
            "level",
            "run",
            "throughput",
            "CPU",
            "samples",
            "min",
            "p99",
            "max",
            "missed periods",
        ],
        Align::Right,
    );
    for row in &s.rows {
        let tp: Vec<String> = row.throughput.iter().map(|t| t.to_string()).collect();
        let missing = if path.join(&row.run_dir).join("run.json").is_file() {
            ""
        } else {
            " (missing)"
        };
        let lead = vec![
            row.level.as_str().into(),
            format!("{}{missing}", row.run_dir).into(),
            tp.join(", ").into(),
        ];
        let rows = row
            .threads
            .iter()
            .map(|t| {
                vec![
                    t.cpu.to_string().into(),
                    t.samples.to_string().into(),
                    signed(t.min_ns).into(),
                    unsigned(t.p99_ns).into(),
                    signed(t.max_ns).into(),
                    t.missed_periods.to_string().into(),
                ]
            })
            .collect();
        table.push_group(lead, rows, "no measurements");
    }
    h.push_str(
        &Html {
            class: "numbers levels",
        }
        .render(&table),
    );
    for f in figures {
        figure(h, f);
    }
    h.push_str("</section>\n");
}

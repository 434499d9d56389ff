//! A sweep's section of the report (`jitterlab sweep` directories), and the section of two or
//! more sweeps overlaid. The latency result comes first (its table, then its plot), the swept
//! load's throughput after (issue 30): what a sweep is run for is the latency under each level.

use super::blocks::figure;
use crate::report::plot::Figure;
use crate::report::plot::sweep as sweep_plot;
use crate::report::plot::zoom::Range;
use crate::report::svg::escape;
use crate::report::sweep_tables::{latency_table, throughput_table};
use crate::report::table::{Html, Markup};
use crate::results::sweep::SweepRecord;
use std::fmt::Write;

/// A sweep's section: per level and CPU its latency, then per level the load's throughput (a
/// table of its own, so that the latency columns stay in view), then the sweep plots in the
/// order of [`figures`]: latency first.
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
        let lines: Vec<super::warnings::Warning> = warnings
            .iter()
            .map(|w| super::warnings::Warning {
                class: None,
                text: w.clone(),
            })
            .collect();
        super::warnings::write_box(h, &lines, None);
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

/// A sweep's figures, named `<prefix>-<kind>`: the latency against the level first (unless the
/// sweep measured nothing, `--no-measure`), then one throughput figure per figure the load
/// reported.
pub(super) fn figures(prefix: &str, record: &SweepRecord, latency: &Range) -> Vec<Figure> {
    let mut out = Vec::new();
    if !record.load_only {
        out.push(sweep_plot::draw_latency(
            &format!("{prefix}-latency"),
            record,
            latency,
        ));
    }
    out.extend(sweep_plot::throughput_lines(record).iter().map(|metric| {
        sweep_plot::draw_throughput(
            &format!("{prefix}-throughput-{}", slug(&metric.0)),
            record,
            metric,
        )
    }));
    out
}

/// Two or more sweeps overlaid: the latency, then each throughput figure.
pub(super) fn overlay_figures(sweeps: &[(String, &SweepRecord)], latency: &Range) -> Vec<Figure> {
    let mut out = vec![sweep_plot::draw_latency_overlay(
        "sweeps-latency",
        sweeps,
        latency,
    )];
    out.extend(
        sweep_plot::overlay_throughput_lines(sweeps)
            .iter()
            .map(|metric| {
                sweep_plot::draw_throughput_overlay(
                    &format!("sweeps-throughput-{}", slug(&metric.0)),
                    sweeps,
                    metric,
                )
            }),
    );
    out
}

/// `rate (ops/s)` -> `rate-ops-s`: a file-name-safe form of a metric name.
fn slug(text: &str) -> String {
    let mut s: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    while s.contains("--") {
        s = s.replace("--", "-");
    }
    s.trim_matches('-').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::run_record::Throughput;
    use crate::results::sweep::{SweepRow, SweepThread};

    fn sweep(load_only: bool) -> SweepRecord {
        let row = |level: &str, rate: f64| SweepRow {
            level: level.into(),
            run_dir: format!("level-{level}"),
            throughput: vec![
                Throughput::new("exchange rate", rate, "exchanges/s"),
                Throughput::new("exchanges", rate * 10.0, "exchanges"),
            ],
            threads: if load_only {
                vec![]
            } else {
                vec![SweepThread {
                    cpu: 0,
                    samples: 1000,
                    min_ns: Some(2_000),
                    p99_ns: Some(20_000),
                    max_ns: Some(90_000),
                    irq_p99_ns: None,
                    irq_max_ns: None,
                    missed_periods: 0,
                    dropped_records: 0,
                }]
            },
        };
        SweepRecord {
            format: 1,
            load_template: "hackbench:groups={}".into(),
            levels: vec!["1".into(), "2".into()],
            load_only,
            rows: vec![row("1", 10.0), row("2", 8.0)],
            warnings: vec![],
            ended: None,
            end_reason: None,
        }
    }

    #[test]
    fn the_latency_comes_first_then_the_throughput() {
        let names: Vec<String> = figures("sweep1", &sweep(false), &Range::default())
            .into_iter()
            .map(|f| f.name)
            .collect();
        assert_eq!(
            names,
            [
                "sweep1-latency",
                "sweep1-throughput-exchange-rate",
                "sweep1-throughput-exchanges"
            ]
        );
        let a = sweep(false);
        let b = sweep(false);
        let names: Vec<String> = overlay_figures(
            &[("A: a".into(), &a), ("B: b".into(), &b)],
            &Range::default(),
        )
        .into_iter()
        .map(|f| f.name)
        .collect();
        assert_eq!(names[0], "sweeps-latency");
        assert_eq!(names.len(), 3);
        // Nothing measured: only the throughput.
        let names: Vec<String> = figures("sweep2", &sweep(true), &Range::default())
            .into_iter()
            .map(|f| f.name)
            .collect();
        assert_eq!(
            names,
            [
                "sweep2-throughput-exchange-rate",
                "sweep2-throughput-exchanges"
            ]
        );
    }

    #[test]
    fn slugs_are_file_names() {
        assert_eq!(slug("rate (ops/s)"), "rate-ops-s");
        assert_eq!(slug("Hackbench time"), "hackbench-time");
    }
}

//! The HTML page: a header and table of contents, then the comparison of the runs when there are
//! several ([`compare`]), then one section per argument: a run ([`run`]) or a sweep ([`sweep`]).
//! Every number comes from run.json or sweep.json (tables) or from the interval histograms
//! (plots), always with its unit; the tables are [`crate::report::table`]s written as HTML.
//! [`Input`] is what the page is given: each argument, read, with its figures drawn.

use super::blocks::{figure, run_label};
use super::{compare, run, sweep, warnings};
use crate::report::digest::RunDigest;
use crate::report::plot::Figure;
use crate::report::svg::escape;
use crate::results::sweep::SweepRecord;
use std::fmt::Write;
use std::path::PathBuf;

/// One argument, read.
pub(super) enum Input {
    Run {
        digest: Box<RunDigest>,
        figures: Vec<Figure>,
    },
    Sweep {
        path: PathBuf,
        record: SweepRecord,
        figures: Vec<Figure>,
    },
    Tune {
        path: PathBuf,
        record: Box<crate::format::tune::TuneRecord>,
        figures: Vec<Figure>,
    },
}

const STYLE: &str = include_str!("style.css");

pub(super) fn render(
    inputs: &[Input],
    runs: &[&RunDigest],
    comparable: &Result<(), String>,
    overlays: &[Figure],
    sweep_overlays: &[Figure],
) -> String {
    let mut h = String::with_capacity(1 << 20);
    let title = match inputs {
        [Input::Run { digest, .. }] => format!("jitterlab report: {}", digest.path.display()),
        [Input::Sweep { path, .. }] => format!("jitterlab sweep report: {}", path.display()),
        [Input::Tune { path, .. }] => format!("jitterlab tune report: {}", path.display()),
        _ => format!("jitterlab report: {} result directories", inputs.len()),
    };
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"generator\" content=\"jitterlab {}\">\
         <title>{}</title><style>{STYLE}</style></head><body><main>\n<h1>{}</h1>\n",
        env!("CARGO_PKG_VERSION"),
        escape(&title),
        escape(&title)
    );
    let _ = writeln!(
        h,
        "<p class=\"meta\">Made by jitterlab {} from the result directories below. Latencies are how late a \
         wakeup came after it was due; ns, us (microseconds) and ms as marked.</p>",
        env!("CARGO_PKG_VERSION")
    );
    h.push_str("<nav><h2>Contents</h2><ul>");
    let mut run_i = 0;
    let mut sweep_i = 0;
    let mut tune_i = 0;
    for input in inputs {
        match input {
            Input::Run { digest, .. } => {
                run_i += 1;
                let _ = write!(
                    h,
                    "<li><a href=\"#run{run_i}\">{}</a></li>",
                    escape(&run_label(run_i - 1, digest))
                );
            }
            Input::Sweep { path, .. } => {
                sweep_i += 1;
                let _ = write!(
                    h,
                    "<li><a href=\"#sweep{sweep_i}\">sweep {sweep_i}: {}</a></li>",
                    escape(&path.display().to_string())
                );
            }
            Input::Tune { path, .. } => {
                tune_i += 1;
                let _ = write!(
                    h,
                    "<li><a href=\"#tune{tune_i}\">tune {tune_i}: {}</a></li>",
                    escape(&path.display().to_string())
                );
            }
        }
    }
    // Several runs: one warnings box per distinct set, naming its runs (`warnings`).
    let groups = if runs.len() >= 2 {
        warnings::group(
            &runs
                .iter()
                .map(|r| warnings::of_run(&r.record))
                .collect::<Vec<_>>(),
        )
    } else {
        Vec::new()
    };
    let names = |g: &warnings::Group| {
        g.runs
            .iter()
            .map(|&i| run_label(i, runs[i]))
            .collect::<Vec<_>>()
            .join(", ")
    };
    // Per run (by its position among the runs): its box's anchor and the runs it names.
    let mut shared: Vec<Option<(String, String)>> = vec![None; runs.len()];
    for (k, g) in groups.iter().enumerate() {
        for &i in &g.runs {
            shared[i] = Some((warnings::anchor(k), names(g)));
        }
    }
    if !groups.is_empty() {
        h.push_str("<li><a href=\"#warnings\">warnings</a></li>");
    }
    if runs.len() >= 2 {
        h.push_str("<li><a href=\"#comparison\">comparison of the runs</a></li>");
    }
    if !sweep_overlays.is_empty() {
        h.push_str("<li><a href=\"#sweeps-overlaid\">sweeps overlaid</a></li>");
    }
    h.push_str("</ul></nav>\n");
    if !groups.is_empty() {
        h.push_str("<section id=\"warnings\" class=\"warnings-of-runs\"><h2>Warnings</h2>");
        for (k, g) in groups.iter().enumerate() {
            warnings::write_box(&mut h, &g.warnings, Some((&warnings::anchor(k), &names(g))));
        }
        h.push_str("</section>\n");
    }
    if runs.len() >= 2 {
        match comparable {
            Ok(()) => compare::section(&mut h, runs, overlays),
            Err(why) => compare::not_compared(&mut h, why),
        }
    }
    if !sweep_overlays.is_empty() {
        sweep::overlay_section(&mut h, sweep_overlays);
    }
    let (mut run_i, mut sweep_i, mut tune_i) = (0, 0, 0);
    for input in inputs {
        match input {
            Input::Run { digest, figures } => {
                run_i += 1;
                run::section(&mut h, run_i, digest, figures, shared[run_i - 1].as_ref());
            }
            Input::Sweep {
                path,
                record,
                figures,
            } => {
                sweep_i += 1;
                sweep::section(&mut h, sweep_i, path, record, figures);
            }
            Input::Tune {
                path,
                record,
                figures,
            } => {
                tune_i += 1;
                crate::report::tune::section_head(&mut h, tune_i, path, record);
                figures.iter().for_each(|f| figure(&mut h, f));
                h.push_str("</section>\n");
            }
        }
    }
    h.push_str("</main></body></html>\n");
    h
}

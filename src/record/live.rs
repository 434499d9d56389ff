//! Progress while a run measures: a live per-CPU view on a terminal, a plain status line every
//! few seconds otherwise, nothing with --quiet. Everything goes to stderr, so that stdout
//! carries only results (`--json`).

use super::LiveRow;
use crate::units::{format_elapsed, format_ns};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

/// Seconds between status lines when stderr is not a terminal.
const STATUS_EVERY_NS: u64 = 5_000_000_000;

/// How progress is shown.
pub enum LiveView {
    Quiet,
    Terminal {
        _multi: MultiProgress,
        bar: ProgressBar,
        rows: Vec<ProgressBar>,
        total_ns: Option<u64>,
    },
    Lines {
        last_ns: u64,
        total_ns: Option<u64>,
    },
}

impl LiveView {
    /// Picks the view: `quiet`, a terminal on stderr, or plain lines. `total_ns` is the expected
    /// length of the run, for the progress bar; None for a run without an end, which shows the
    /// time elapsed only.
    pub fn new(quiet: bool, cpus: &[usize], total_ns: Option<u64>) -> Self {
        if quiet {
            return LiveView::Quiet;
        }
        if !std::io::stderr().is_terminal() {
            return LiveView::Lines {
                last_ns: 0,
                total_ns,
            };
        }
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr_with_hz(4));
        let bar = match total_ns {
            Some(total) => {
                let bar = multi.add(ProgressBar::new(total.max(1)));
                bar.set_style(
                    ProgressStyle::with_template("{bar:40.cyan/blue} {msg}")
                        .expect("valid template")
                        .progress_chars("=> "),
                );
                bar
            }
            None => {
                let bar = multi.add(ProgressBar::new_spinner());
                bar.set_style(ProgressStyle::with_template("{msg}").expect("valid template"));
                bar
            }
        };
        let rows = cpus
            .iter()
            .map(|_| {
                let row = multi.add(ProgressBar::new_spinner());
                row.set_style(ProgressStyle::with_template("  {msg}").expect("valid template"));
                row
            })
            .collect();
        LiveView::Terminal {
            _multi: multi,
            bar,
            rows,
            total_ns,
        }
    }

    /// Shows the state at `elapsed_ns` from the start.
    pub fn update(&mut self, elapsed_ns: u64, rows: &[LiveRow]) {
        match self {
            LiveView::Quiet => {}
            LiveView::Terminal {
                bar,
                rows: lines,
                total_ns,
                ..
            } => {
                match *total_ns {
                    Some(total) => {
                        bar.set_position(elapsed_ns.min(total));
                        bar.set_message(format!(
                            "{} elapsed, {} remaining",
                            format_elapsed(elapsed_ns),
                            format_elapsed(total.saturating_sub(elapsed_ns))
                        ));
                    }
                    None => bar.set_message(format!(
                        "{} elapsed (no end: stop with Ctrl-C)",
                        format_elapsed(elapsed_ns)
                    )),
                }
                for (line, row) in lines.iter().zip(rows) {
                    line.set_message(row_text(row));
                }
            }
            LiveView::Lines { last_ns, total_ns } => {
                if elapsed_ns >= *last_ns + STATUS_EVERY_NS {
                    *last_ns = elapsed_ns;
                    let cpus: Vec<String> = rows
                        .iter()
                        .map(|r| {
                            format!(
                                "cpu{} max {} missed {}",
                                r.cpu,
                                opt_ns(r.max_ns),
                                r.missed_periods
                            )
                        })
                        .collect();
                    let of_total = match *total_ns {
                        Some(total) => format!(" of {}", format_elapsed(total)),
                        None => String::new(),
                    };
                    eprintln!(
                        "jitterlab: {}{of_total}: {}",
                        format_elapsed(elapsed_ns),
                        cpus.join(" | ")
                    );
                }
            }
        }
    }

    /// Removes the live view from the screen.
    pub fn finish(self) {
        if let LiveView::Terminal { bar, rows, .. } = self {
            rows.iter().for_each(ProgressBar::finish_and_clear);
            bar.finish_and_clear();
        }
    }
}

fn opt_ns(v: Option<i64>) -> String {
    match v {
        Some(ns) if ns >= 0 => format_ns(ns as u64),
        Some(ns) => format!("-{}", format_ns(ns.unsigned_abs())),
        None => "-".into(),
    }
}

fn row_text(r: &LiveRow) -> String {
    let i = &r.last_interval;
    format!(
        "cpu{:<3} last interval: min {:>9}  mean {:>9}  max {:>9} | run max {:>9}  samples {:>9}  missed {}  deadline misses {}{}",
        r.cpu,
        opt_ns(i.min_ns),
        i.mean_ns
            .map_or("-".into(), |m| format_ns(m.max(0.0) as u64)),
        opt_ns(i.max_ns),
        opt_ns(r.max_ns),
        r.samples,
        r.missed_periods,
        r.deadline_misses,
        if r.dropped_records > 0 {
            format!("  DROPPED {}", r.dropped_records)
        } else {
            String::new()
        }
    )
}

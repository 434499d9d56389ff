//! Progress while a run measures: a live per-CPU view on a terminal, a plain status line every
//! few seconds otherwise, nothing with --quiet. Everything goes to stderr, so that stdout
//! carries only results (`--json`). Long runs also show, per CPU, how long the run must still
//! go on to claim a lower exceedance rate (docs/tails.md, "How long to run").

use super::LiveRow;
use crate::analysis::tails::run_length;
use crate::units::{format_elapsed, format_ns};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

/// Seconds between status lines when stderr is not a terminal.
const STATUS_EVERY_NS: u64 = 5_000_000_000;

/// Runs planned at least this long, or without an end, show the "how long to run" lines.
const LONG_RUN_NS: u64 = 10 * 60 * 1_000_000_000;
/// The "how long to run" lines are recomputed at most this often on a terminal (each solves
/// for a run length; the figures change slowly) and printed this often as plain lines.
const RUN_LENGTH_EVERY_NS: u64 = 5_000_000_000;
const RUN_LENGTH_LINES_EVERY_NS: u64 = 60_000_000_000;

/// Whether a run of this planned length shows the "how long to run" lines.
fn is_long(total_ns: Option<u64>) -> bool {
    total_ns.is_none_or(|t| t >= LONG_RUN_NS)
}

/// "cpu0 how long to run: no exceedance of 1.00 ms in 1 200 000 wakeups: ..."; None before the
/// first wakeup or without a limit.
pub(crate) fn run_length_text(r: &LiveRow) -> Option<String> {
    let (limit_ns, over, wakeups) = r.run_length?;
    let claim = run_length::claim(limit_ns, over, wakeups, r.interval_ns)?;
    Some(format!("cpu{} how long to run: {claim}", r.cpu))
}

/// How progress is shown.
pub(crate) enum LiveView {
    Quiet,
    Terminal {
        _multi: MultiProgress,
        bar: ProgressBar,
        rows: Vec<ProgressBar>,
        /// One per CPU in long runs, else none.
        run_length_rows: Vec<ProgressBar>,
        /// When they were last computed.
        run_length_at_ns: Option<u64>,
        total_ns: Option<u64>,
    },
    Lines {
        last_ns: u64,
        /// When the "how long to run" lines were last printed (long runs only).
        run_length_at_ns: u64,
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
                run_length_at_ns: 0,
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
        let run_length_rows = if is_long(total_ns) {
            cpus.iter()
                .map(|_| {
                    let row = multi.add(ProgressBar::new_spinner());
                    row.set_style(ProgressStyle::with_template("  {msg}").expect("valid template"));
                    row
                })
                .collect()
        } else {
            Vec::new()
        };
        LiveView::Terminal {
            _multi: multi,
            bar,
            rows,
            run_length_rows,
            run_length_at_ns: None,
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
                run_length_rows,
                run_length_at_ns,
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
                if !run_length_rows.is_empty()
                    && run_length_at_ns.is_none_or(|at| elapsed_ns >= at + RUN_LENGTH_EVERY_NS)
                {
                    *run_length_at_ns = Some(elapsed_ns);
                    for (line, row) in run_length_rows.iter().zip(rows) {
                        line.set_message(run_length_text(row).unwrap_or_default());
                    }
                }
            }
            LiveView::Lines {
                last_ns,
                run_length_at_ns,
                total_ns,
            } => {
                if is_long(*total_ns) && elapsed_ns >= *run_length_at_ns + RUN_LENGTH_LINES_EVERY_NS
                {
                    *run_length_at_ns = elapsed_ns;
                    for text in rows.iter().filter_map(run_length_text) {
                        eprintln!("jitterlab: {text}");
                    }
                }
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
                    eprintln!(
                        "jitterlab: {}: {}",
                        progress_text(elapsed_ns, *total_ns),
                        cpus.join(" | ")
                    );
                }
            }
        }
    }

    /// Removes the live view from the screen.
    pub fn finish(self) {
        if let LiveView::Terminal {
            bar,
            rows,
            run_length_rows,
            ..
        } = self
        {
            rows.iter().for_each(ProgressBar::finish_and_clear);
            run_length_rows
                .iter()
                .for_each(ProgressBar::finish_and_clear);
            bar.finish_and_clear();
        }
    }
}

/// How far the run is, for the status lines: `12.0s measured (planned 20.0s)`. The last
/// line comes after the planned end (`20.1s measured (planned 20.0s)`), so the two are never
/// written as a part "of" a whole.
fn progress_text(elapsed_ns: u64, total_ns: Option<u64>) -> String {
    match total_ns {
        Some(total) => format!(
            "{} measured (planned {})",
            format_elapsed(elapsed_ns),
            format_elapsed(total)
        ),
        None => format!("{} measured", format_elapsed(elapsed_ns)),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 23, defect 12: the last status line of a 20 s run said "20.1s of 20.0s".
    #[test]
    fn status_lines_never_say_a_part_exceeds_its_whole() {
        assert_eq!(
            progress_text(20_100_000_000, Some(20_000_000_000)),
            "20.1s measured (planned 20.0s)"
        );
        assert_eq!(progress_text(5_000_000_000, None), "5.0s measured");
    }

    #[test]
    fn long_runs_say_how_long_to_run() {
        assert!(is_long(None) && is_long(Some(LONG_RUN_NS)));
        assert!(!is_long(Some(LONG_RUN_NS - 1)));
        let row = LiveRow {
            cpu: 2,
            last_interval: Default::default(),
            samples: 1_200_000,
            max_ns: Some(90_000),
            missed_periods: 0,
            deadline_misses: 0,
            dropped_records: 0,
            interval_ns: 1_000_000,
            run_length: Some((100_000, 0, 1_200_000)),
        };
        assert_eq!(
            run_length_text(&row).unwrap(),
            format!(
                "cpu2 how long to run: {}",
                run_length::claim(100_000, 0, 1_200_000, 1_000_000).unwrap()
            )
        );
        assert_eq!(
            run_length_text(&LiveRow {
                run_length: None,
                ..row
            }),
            None
        );
    }
}

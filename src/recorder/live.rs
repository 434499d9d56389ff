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

/// A thread whose wakeups have not grown for this long (and 3 of its intervals) is shown as
/// held off its CPU, with why, rather than as a row of `-`.
const HELD_AFTER_NS: u64 = 1_000_000_000;

/// Which rows are held off their CPU: per row, its wakeups when they last grew and when, and
/// why a thread on its CPU can be held off (the session's words: the loads above it).
pub(crate) struct Held {
    why: Vec<String>,
    last: Vec<(u64, u64)>,
    /// `--interval-step`: a thread's sleep after n wakeups is its interval + n x this, which
    /// is not being held (third hostile re-run, L3-f).
    step_ns: u64,
}

impl Held {
    /// `why`: per row, in the rows' order, what can hold its thread off its CPU; `step_ns`:
    /// what each wakeup adds to the sleep (`--interval-step`).
    pub(crate) fn new(why: Vec<String>, step_ns: u64) -> Held {
        Held {
            last: vec![(0, 0); why.len()],
            why,
            step_ns,
        }
    }

    /// For each row: how long it has been held off and why, or None when it measures.
    fn at(&mut self, elapsed_ns: u64, rows: &[LiveRow]) -> Vec<Option<(u64, String)>> {
        rows.iter()
            .enumerate()
            .map(|(k, r)| {
                let last = self.last.get_mut(k)?;
                if r.samples != last.0 {
                    *last = (r.samples, elapsed_ns);
                    return None;
                }
                let held_for = elapsed_ns.saturating_sub(last.1);
                let sleep_ns = r
                    .interval_ns
                    .saturating_add(r.samples.saturating_mul(self.step_ns));
                (held_for >= HELD_AFTER_NS.max(sleep_ns.saturating_mul(3)))
                    .then(|| (held_for, self.why.get(k).cloned().unwrap_or_default()))
            })
            .collect()
    }
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
        held: Held,
    },
    Lines {
        last_ns: u64,
        /// When the "how long to run" lines were last printed (long runs only).
        run_length_at_ns: u64,
        total_ns: Option<u64>,
        held: Held,
    },
}

impl LiveView {
    /// Picks the view: `quiet`, a terminal on stderr, or plain lines. `total_ns` is the expected
    /// length of the run, for the progress bar; None for a run without an end, which shows the
    /// time elapsed only. `held`: per CPU, why its thread can be held off its CPU (shown when
    /// its wakeups stop growing, [`Held`]).
    pub(crate) fn new(quiet: bool, cpus: &[usize], total_ns: Option<u64>, held: Held) -> Self {
        if quiet {
            return LiveView::Quiet;
        }
        if !std::io::stderr().is_terminal() {
            return LiveView::Lines {
                last_ns: 0,
                run_length_at_ns: 0,
                total_ns,
                held,
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
            held,
        }
    }

    /// Shows the state at `elapsed_ns` from the start.
    pub(crate) fn update(&mut self, elapsed_ns: u64, rows: &[LiveRow]) {
        match self {
            LiveView::Quiet => {}
            LiveView::Terminal {
                bar,
                rows: lines,
                run_length_rows,
                run_length_at_ns,
                total_ns,
                held,
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
                let held = held.at(elapsed_ns, rows);
                for ((line, row), held) in lines.iter().zip(rows).zip(&held) {
                    line.set_message(row_text(row, held.as_ref()));
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
                held,
            } => {
                let held = held.at(elapsed_ns, rows);
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
                        .zip(&held)
                        .map(|(r, held)| match held {
                            Some((for_ns, why)) => format!(
                                "cpu{} held off its CPU for {}, {why} (max {})",
                                r.cpu,
                                format_elapsed(*for_ns),
                                opt_ns(r.max_ns)
                            ),
                            None => format!(
                                "cpu{} max {} missed {}",
                                r.cpu,
                                opt_ns(r.max_ns),
                                r.missed_periods
                            ),
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
    pub(crate) fn finish(self) {
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

fn row_text(r: &LiveRow, held: Option<&(u64, String)>) -> String {
    let i = &r.last_interval;
    if let Some((for_ns, why)) = held {
        // Not a row of `-`: the thread has had no wakeup for a while, and this says why.
        let so_far = match r.samples {
            0 => "no wakeup measured yet".to_string(),
            n => format!(
                "run max {:>9}  samples {n:>9}  missed {}",
                opt_ns(r.max_ns),
                r.missed_periods
            ),
        };
        return format!(
            "cpu{:<3} held off its CPU: no wakeup for {}, {why} | {so_far}",
            r.cpu,
            format_elapsed(*for_ns),
        );
    }
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

    fn row(samples: u64) -> LiveRow {
        LiveRow {
            cpu: 0,
            last_interval: Default::default(),
            samples,
            max_ns: None,
            missed_periods: 0,
            deadline_misses: 0,
            dropped_records: 0,
            interval_ns: 1_000_000,
            run_length: None,
        }
    }

    /// A CPU whose thread has had no wakeup for a second says it is held off, and by what,
    /// rather than showing `max -` (issue 39); one that measures shows its figures.
    #[test]
    fn a_thread_held_off_its_cpu_is_said_so() {
        let why = "by load 'cpu:prio=99,cpus=0' (SCHED_FIFO 99)";
        let mut held = Held::new(vec![why.into()], 0);
        assert_eq!(held.at(100_000_000, &[row(0)]), [None]);
        assert_eq!(held.at(900_000_000, &[row(0)]), [None], "not a second yet");
        let at = held.at(1_200_000_000, &[row(0)]);
        // Since the start: it never had a wakeup.
        assert_eq!(at, [Some((1_200_000_000, why.to_string()))]);
        let text = row_text(&row(0), at[0].as_ref());
        assert!(
            text.starts_with("cpu0   held off its CPU: no wakeup for "),
            "{text}"
        );
        assert!(
            text.contains(why) && !text.contains("max         -"),
            "{text}"
        );
        // It measures again: its figures, not the note.
        assert_eq!(held.at(1_300_000_000, &[row(5)]), [None]);
        assert!(row_text(&row(5), None).contains("last interval"));
    }

    /// `--interval-step 500ms`: after 4 wakeups the thread sleeps 2.001 s, which is not
    /// being held (third hostile re-run, L3-f); three such sleeps without a wakeup are.
    #[test]
    fn a_thread_sleeping_its_stepped_interval_is_not_said_held() {
        let mut held = Held::new(vec!["by nothing".into()], 500_000_000);
        assert_eq!(held.at(0, &[row(4)]), [None]);
        assert_eq!(held.at(2_500_000_000, &[row(4)]), [None]);
        assert_eq!(held.at(6_000_000_000, &[row(4)]), [None]);
        assert!(held.at(6_100_000_000, &[row(4)])[0].is_some());
    }
}

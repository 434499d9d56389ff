//! The per-CPU part of the end-of-run summary on the terminal, scaled to the number of CPUs
//! (issue 30): one line per CPU, with each CPU's tail statement folded into its last column;
//! above 16 CPUs the worst CPUs and one row summing up the rest (`report::cpu_group`, the one
//! place of that grouping); every CPU with `--verbose`. Built on plain data ([`CpuLine`]) so
//! that the layout is tested on 2, 16 and 128 CPUs without a run; every line fits [`WIDTH`]
//! columns ([`wrap`]). This file holds a latency run's lines and what the summary's tables
//! share (the cells of an unknown figure, the rest's note, the width); a noise run's lines
//! are `noise_lines.rs`, built the same way.

use super::cpu_group::{self, choose, largest, rest_label, sum};
use super::table::{Align, Cell, Table};
use crate::format::run_record::{RunRecord, ThreadSummary};
use crate::units::{format_ns, format_ns_signed, format_span, group_digits as grouped};

/// The widest line of the summary, in columns.
pub(crate) const WIDTH: usize = 100;

/// A CPU's spikes over its deadline (run.json `tails.spikes`, basis `deadline`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Spikes {
    /// The run has no such record (an imported run, a run without a deadline).
    Unknown,
    /// Not counted (the record says why; `--verbose` shows it).
    NotCounted,
    Counted {
        threshold_ns: u64,
        count: u64,
        /// Several spikes in one log interval counted as one: a lower bound.
        lower_bound: bool,
        /// The time over which they were counted, ns.
        exposure_ns: u64,
    },
}

/// One CPU of a latency run, as the summary shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CpuLine {
    pub cpu: usize,
    /// None: unknown (an import whose source does not say).
    pub samples: Option<u64>,
    pub p50_ns: Option<u64>,
    pub p99_ns: Option<u64>,
    pub p999_ns: Option<u64>,
    pub max_ns: Option<i64>,
    /// Missed periods; None: unknown.
    pub missed: Option<u64>,
    pub dropped: u64,
    pub spikes: Spikes,
    /// The thread was starved (run.json `end` `starved: ...`): held off its CPU for most of
    /// the run, so its spikes were counted over the little time it was observed.
    pub(crate) starved: bool,
}

pub(super) fn ns(v: Option<u64>) -> String {
    v.map_or("-".into(), format_ns)
}

pub(super) fn signed(v: Option<i64>) -> String {
    v.map_or("-".into(), format_ns_signed)
}

/// The tail statement of one CPU (or of the rest together): "none > 1.00 ms in 30.0 s",
/// "3 > 1.00 ms, once in 10.0 s", "≥ 3 > 1.00 ms, once in ≤ 10.0 s" (a lower bound).
fn spikes_cell(s: Spikes) -> String {
    match s {
        Spikes::Unknown => "-".into(),
        Spikes::NotCounted => "not counted".into(),
        Spikes::Counted {
            threshold_ns,
            count: 0,
            exposure_ns,
            ..
        } => format!(
            "none > {} in {}",
            format_ns(threshold_ns),
            format_span(exposure_ns)
        ),
        Spikes::Counted {
            threshold_ns,
            count,
            lower_bound,
            exposure_ns,
        } => {
            let (at_least, at_most) = if lower_bound {
                ("≥ ", "≤ ")
            } else {
                ("", "")
            };
            format!(
                "{at_least}{} > {}, once in {at_most}{}",
                grouped(count),
                format_ns(threshold_ns),
                format_span(exposure_ns / count)
            )
        }
    }
}

/// The deadline cell of a starved CPU: `starved (observed 37.0 us)`; why is in run.json's
/// `end` and on `--verbose`.
fn starved_cell(s: Spikes) -> String {
    match s {
        Spikes::Counted { exposure_ns, .. } => {
            format!("starved (observed {})", format_span(exposure_ns))
        }
        _ => "starved".into(),
    }
}

/// The spikes of the rest together: their counts and exposures summed, when every CPU counted
/// them over the same threshold; else unknown.
fn spikes_of(lines: &[&CpuLine]) -> Spikes {
    let mut total: Option<(u64, u64, bool, u64)> = None;
    for l in lines {
        let Spikes::Counted {
            threshold_ns,
            count,
            lower_bound,
            exposure_ns,
        } = l.spikes
        else {
            return if lines.iter().any(|l| l.spikes == Spikes::NotCounted) {
                Spikes::NotCounted
            } else {
                Spikes::Unknown
            };
        };
        let t = total.get_or_insert((threshold_ns, 0, false, 0));
        if t.0 != threshold_ns {
            return Spikes::Unknown;
        }
        t.1 = t.1.saturating_add(count);
        t.2 |= lower_bound;
        t.3 = t.3.saturating_add(exposure_ns);
    }
    total.map_or(
        Spikes::Unknown,
        |(threshold_ns, count, lower_bound, exposure_ns)| Spikes::Counted {
            threshold_ns,
            count,
            lower_bound,
            exposure_ns,
        },
    )
}

/// The latency table: CPU, samples, p50, p99, p99.9, max, missed periods, dropped records (only
/// when a CPU dropped some), spikes over the deadline. `samples_word`: the samples' name
/// ("wakeups").
pub(crate) fn latency_table(
    lines: &[CpuLine],
    verbose: bool,
    samples_word: &str,
) -> (Table, Option<String>) {
    let dropped = lines.iter().any(|l| l.dropped > 0);
    let mut headers = vec!["CPU", samples_word, "p50", "p99", "p99.9", "max", "missed"];
    if dropped {
        headers.push("dropped");
    }
    headers.push("over the deadline");
    let mut table = Table::new(headers, Align::Right);
    let (shown, rest) = choose(&lines.iter().map(|l| l.max_ns).collect::<Vec<_>>(), verbose);
    for &i in &shown {
        let l = &lines[i];
        let mut row: Vec<Cell> = vec![
            l.cpu.to_string().into(),
            l.samples.map_or("-".into(), |s| s.to_string()).into(),
            ns(l.p50_ns).into(),
            ns(l.p99_ns).into(),
            ns(l.p999_ns).into(),
            signed(l.max_ns).into(),
            l.missed.map_or("-".into(), |m| m.to_string()).into(),
        ];
        if dropped {
            row.push(l.dropped.to_string().into());
        }
        // A starved CPU's "none > 1.00 ms in 37.0 us" is true over the 37 us observed but
        // reads as "no misses" for a CPU held off for seconds (issue 39 L4-f).
        row.push(if l.starved {
            starved_cell(l.spikes).into()
        } else {
            spikes_cell(l.spikes).into()
        });
        table.push_row(row);
    }
    if rest.is_empty() {
        return (table, None);
    }
    let r: Vec<&CpuLine> = rest.iter().map(|&i| &lines[i]).collect();
    let mut row: Vec<Cell> = vec![
        rest_label(r.len()).into(),
        sum(r.iter().map(|l| l.samples))
            .map_or("-".into(), |s| s.to_string())
            .into(),
        ns(largest(r.iter().map(|l| l.p50_ns))).into(),
        ns(largest(r.iter().map(|l| l.p99_ns))).into(),
        ns(largest(r.iter().map(|l| l.p999_ns))).into(),
        signed(largest(r.iter().map(|l| l.max_ns))).into(),
        sum(r.iter().map(|l| l.missed))
            .map_or("-".into(), |m| m.to_string())
            .into(),
    ];
    if dropped {
        row.push(r.iter().map(|l| l.dropped).sum::<u64>().to_string().into());
    }
    let starved = r.iter().filter(|l| l.starved).count();
    let cell = spikes_cell(spikes_of(&r));
    row.push(if starved > 0 {
        format!("{starved} starved; {cell}").into()
    } else {
        cell.into()
    });
    table.push_row(row);
    let cpus: Vec<usize> = r.iter().map(|l| l.cpu).collect();
    (table, Some(rest_note(&cpus)))
}

/// What the `+N` row is, and where every CPU is.
pub(super) fn rest_note(cpus: &[usize]) -> String {
    format!("{}; --verbose shows every CPU", cpu_group::rest_note(cpus))
}

/// A latency run's CPUs as the summary shows them; an imported run's unknowns (`imported.absent`)
/// are unknown here too.
pub(crate) fn cpu_lines(record: &RunRecord) -> Vec<CpuLine> {
    let known = |field: &str| !record.is_absent(field);
    record
        .threads
        .iter()
        .map(|t| CpuLine {
            cpu: t.cpu,
            samples: known("samples").then_some(t.latency.samples),
            p50_ns: t.latency.p50_ns,
            p99_ns: t.latency.p99_ns,
            p999_ns: t.latency.p999_ns,
            max_ns: t.latency.max_ns,
            missed: known("missed_periods").then_some(t.missed_periods),
            dropped: if known("dropped_records") {
                t.dropped_records
            } else {
                0
            },
            spikes: deadline_spikes(t),
            starved: t.end.starts_with("starved"),
        })
        .collect()
}

/// The thread's spikes over its deadline, from its tail records.
fn deadline_spikes(t: &ThreadSummary) -> Spikes {
    match t.tails.spikes.iter().find(|s| s.basis == "deadline") {
        None => Spikes::Unknown,
        Some(s) if s.not_counted.is_some() || s.exposure_ns == 0 => Spikes::NotCounted,
        Some(s) => Spikes::Counted {
            threshold_ns: s.threshold_ns,
            count: s.count,
            lower_bound: s.count_is_lower_bound,
            exposure_ns: s.exposure_ns,
        },
    }
}

/// `text` broken at spaces into lines of at most `width` columns (a word longer than that,
/// a path, stays whole on its line); lines after the first start with `indent`. A line's own
/// leading spaces are kept, and a line that fits is kept as it is (its aligned columns too).
pub(crate) fn wrap(text: &str, width: usize, indent: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        if line.chars().count() <= width {
            out += line.trim_end();
            out.push('\n');
            continue;
        }
        let lead = line.len() - line.trim_start().len();
        let mut current = line[..lead].to_string();
        let mut empty = true;
        for word in line.split_whitespace() {
            let len = current.chars().count();
            if !empty && len + 1 + word.chars().count() > width {
                out += current.trim_end();
                out.push('\n');
                current = format!("{}{indent}", &line[..lead]);
                empty = true;
            }
            if !empty {
                current.push(' ');
            }
            current += word;
            empty = false;
        }
        out += current.trim_end();
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::table::{Markup, Terminal};

    /// A CPU of a 24 h run at 1 kHz: p99 and p99.9 grow with the CPU number, so do its
    /// spikes; CPU 77 is the worst.
    fn line(cpu: usize) -> CpuLine {
        CpuLine {
            cpu,
            samples: Some(86_400_000),
            p50_ns: Some(20_000 + cpu as u64),
            p99_ns: Some(40_000 + 100 * cpu as u64),
            p999_ns: Some(120_000 + 1000 * cpu as u64),
            max_ns: Some(if cpu == 77 {
                12_345_678
            } else {
                1_000_000 + 1000 * cpu as i64
            }),
            missed: Some(cpu as u64 % 3),
            dropped: 0,
            spikes: Spikes::Counted {
                threshold_ns: 1_000_000,
                count: cpu as u64 % 4,
                lower_bound: false,
                exposure_ns: 86_400_000_000_000,
            },
            starved: false,
        }
    }

    fn rendered(n: usize, verbose: bool) -> String {
        let lines: Vec<CpuLine> = (0..n).map(line).collect();
        let (table, note) = latency_table(&lines, verbose, "wakeups");
        let mut out = Terminal.render(&table);
        if let Some(note) = note {
            out += &wrap(&format!("  {note}"), WIDTH, "  ");
        }
        out
    }

    fn assert_fits(text: &str) {
        for l in text.lines() {
            assert!(
                l.chars().count() <= WIDTH,
                "{} columns: {l}",
                l.chars().count()
            );
        }
    }

    #[test]
    fn up_to_16_cpus_every_cpu_has_its_line() {
        for n in [2, 16] {
            let text = rendered(n, false);
            assert_fits(&text);
            // Header, rule, one line per CPU, nothing else.
            assert_eq!(text.lines().count(), 2 + n, "{text}");
        }
        let text = rendered(2, false);
        assert!(text.contains("none > 1.00 ms in 1.0 days"), "{text}");
        assert!(text.contains("1 > 1.00 ms, once in 1.0 days"), "{text}");
    }

    /// L4-f (issue 39): a CPU starved for the whole run read `none > 1.00 ms in 37.0 us`, as
    /// if it had missed no deadline; its cell says it was starved.
    #[test]
    fn a_starved_cpu_is_said_starved_in_the_deadline_cell() {
        let mut lines: Vec<CpuLine> = (0..2).map(line).collect();
        lines[1].spikes = Spikes::Counted {
            threshold_ns: 1_000_000,
            count: 0,
            lower_bound: false,
            exposure_ns: 37_000,
        };
        lines[1].starved = true;
        let (table, _) = latency_table(&lines, false, "wakeups");
        let text = Terminal.render(&table);
        let row = text.lines().nth(3).unwrap();
        assert!(row.contains("starved (observed 37.0 us)"), "{text}");
        assert!(!row.contains("none >"), "{text}");
        // Among the rest of many CPUs: counted.
        let mut lines: Vec<CpuLine> = (0..40).map(line).collect();
        lines[3].starved = true;
        let (table, _) = latency_table(&lines, false, "wakeups");
        let text = Terminal.render(&table);
        assert!(text.contains("1 starved; "), "{text}");
    }

    #[test]
    fn above_16_cpus_the_worst_first_and_the_rest_summed_up() {
        let text = rendered(128, false);
        assert_fits(&text);
        let rows: Vec<&str> = text.lines().skip(2).collect();
        // 8 worst, the rest's row, its note (wrapped).
        assert_eq!(rows[..cpu_group::WORST_SHOWN + 1].len(), 9);
        assert!(rows[0].trim_start().starts_with("77 "), "{text}");
        // Then by max: 127, 126, ...
        assert!(rows[1].trim_start().starts_with("127 "), "{text}");
        assert!(rows[7].trim_start().starts_with("121 "), "{text}");
        let rest = rows[8];
        assert!(rest.trim_start().starts_with("+120 "), "{text}");
        // The rest's figures hold for each of them: their largest max is CPU 120's, their
        // samples and spikes are sums.
        assert!(rest.contains(" 1.12 ms "), "{rest}");
        assert!(rest.contains(&(120 * 86_400_000u64).to_string()), "{rest}");
        let spikes: u64 = (0..128)
            .filter(|c| *c != 77 && *c < 121)
            .map(|c| c % 4)
            .sum();
        assert!(
            rest.contains(&format!("{} > 1.00 ms", grouped(spikes))),
            "{rest}"
        );
        assert!(text.contains("the other 120 CPUs (0-76,78-120)"), "{text}");
        assert!(text.lines().count() <= 2 + 9 + 2, "{text}");
        // --verbose: every CPU, still within the width.
        let all = rendered(128, true);
        assert_fits(&all);
        assert_eq!(all.lines().count(), 2 + 128);
    }

    #[test]
    fn an_unknown_figure_makes_the_rests_largest_unknown() {
        let mut lines: Vec<CpuLine> = (0..20).map(line).collect();
        lines[19].p99_ns = None;
        lines[19].max_ns = None;
        let (table, _) = latency_table(&lines, false, "wakeups");
        let text = Terminal.render(&table);
        let rest = text.lines().last().unwrap();
        // CPU 19 (unknown max) sorts last, so it is in the rest: their largest p99 is unknown.
        assert!(rest.contains("+12"), "{text}");
        assert!(!rest.contains(" 41."), "{rest}");
    }

    #[test]
    fn wrapping_keeps_words_and_indents() {
        let text = "  ! a warning that goes on and on about steal time and the host";
        assert_eq!(
            wrap(text, 30, "  "),
            "  ! a warning that goes on and\n    on about steal time and\n    the host\n"
        );
        let long = "Results: /a/very/long/path/that/cannot/break";
        assert_eq!(
            wrap(long, 20, "  "),
            "Results:\n  /a/very/long/path/that/cannot/break\n"
        );
    }
}

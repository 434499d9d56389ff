//! The per-CPU part of a noise run's end-of-run summary on the terminal: one line per CPU
//! ([`NoiseLine`]: the share of the time lost, gaps, the longest gap, throttled time), grouped
//! above 16 CPUs as a latency run's lines are (`cpu_summary.rs`, whose cells and width it
//! shares).

use super::cpu_group::{choose, largest, largest_f64, rest_label, sum};
use super::cpu_summary::{ns, rest_note, signed};
use super::table::{Align, Cell, Table};
use crate::format::run_record::RunRecord;
use crate::units::{format_ns, group_digits as grouped};

/// One CPU of a noise run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct NoiseLine {
    pub cpu: usize,
    /// The share of the time lost, percent; None: unknown.
    pub(crate) noise_pct: Option<f64>,
    pub(crate) noise_ns_per_s: Option<f64>,
    pub gaps: Option<u64>,
    pub(crate) gaps_per_s: Option<f64>,
    pub p99_ns: Option<u64>,
    /// `p99_ns` lies among an imported histogram's overflows: a lower bound, shown `≥`.
    pub(crate) p99_bound: bool,
    pub max_ns: Option<i64>,
    pub(crate) throttled_gaps: u64,
    pub(crate) throttled_ns: u64,
    pub dropped: u64,
}

/// The noise table: CPU, the share of the time lost, noise per second, gaps and gaps per
/// second, p99 and longest gap, throttled time (only when a CPU was throttled) and dropped
/// records (only when a CPU dropped some).
pub(crate) fn noise_table(lines: &[NoiseLine], verbose: bool) -> (Table, Option<String>) {
    let throttled = lines.iter().any(|l| l.throttled_gaps > 0);
    let dropped = lines.iter().any(|l| l.dropped > 0);
    let mut headers = vec![
        "CPU", "noise", "noise/s", "gaps", "gaps/s", "p99 gap", "max gap",
    ];
    if throttled {
        headers.push("throttled");
    }
    if dropped {
        headers.push("dropped");
    }
    let mut table = Table::new(headers, Align::Right);
    let pct = |v: Option<f64>| v.map_or("-".into(), |p| format!("{p:.4} %"));
    let per_s =
        |v: Option<f64>| v.map_or("-".into(), |x| format!("{} ns", grouped(x.round() as u64)));
    let rate = |v: Option<f64>| v.map_or("-".into(), |x| format!("{x:.1}"));
    let throttle = |gaps: u64, ns: u64| match gaps {
        0 => "0".to_string(),
        k => format!("{} in {k}", format_ns(ns)),
    };
    let (shown, rest) = choose(&lines.iter().map(|l| l.max_ns).collect::<Vec<_>>(), verbose);
    for &i in &shown {
        let l = &lines[i];
        let mut row: Vec<Cell> = vec![
            l.cpu.to_string().into(),
            pct(l.noise_pct).into(),
            per_s(l.noise_ns_per_s).into(),
            l.gaps.map_or("-".into(), |g| g.to_string()).into(),
            rate(l.gaps_per_s).into(),
            format!("{}{}", if l.p99_bound { "≥" } else { "" }, ns(l.p99_ns)).into(),
            signed(l.max_ns).into(),
        ];
        if throttled {
            row.push(throttle(l.throttled_gaps, l.throttled_ns).into());
        }
        if dropped {
            row.push(l.dropped.to_string().into());
        }
        table.push_row(row);
    }
    if rest.is_empty() {
        return (table, None);
    }
    let r: Vec<&NoiseLine> = rest.iter().map(|&i| &lines[i]).collect();
    let largest_f = |f: fn(&NoiseLine) -> Option<f64>| largest_f64(r.iter().map(|l| f(l)));
    let mut row: Vec<Cell> = vec![
        rest_label(r.len()).into(),
        pct(largest_f(|l| l.noise_pct)).into(),
        per_s(largest_f(|l| l.noise_ns_per_s)).into(),
        sum(r.iter().map(|l| l.gaps))
            .map_or("-".into(), |g| g.to_string())
            .into(),
        rate(largest_f(|l| l.gaps_per_s)).into(),
        {
            // Marked as the CPU whose p99 it is.
            let top = r
                .iter()
                .filter(|l| l.p99_ns.is_some())
                .max_by_key(|l| l.p99_ns);
            let mark = if top.is_some_and(|l| l.p99_bound) {
                "≥"
            } else {
                ""
            };
            format!("{mark}{}", ns(largest(r.iter().map(|l| l.p99_ns))))
        }
        .into(),
        signed(largest(r.iter().map(|l| l.max_ns))).into(),
    ];
    if throttled {
        row.push(
            throttle(
                r.iter().map(|l| l.throttled_gaps).sum(),
                r.iter().map(|l| l.throttled_ns).sum(),
            )
            .into(),
        );
    }
    if dropped {
        row.push(r.iter().map(|l| l.dropped).sum::<u64>().to_string().into());
    }
    table.push_row(row);
    let cpus: Vec<usize> = r.iter().map(|l| l.cpu).collect();
    (table, Some(rest_note(&cpus)))
}

/// A noise run's CPUs as the summary shows them.
pub(crate) fn noise_lines(record: &RunRecord) -> Vec<NoiseLine> {
    let known = |field: &str| !record.is_absent(field);
    record
        .threads
        .iter()
        .filter_map(|t| {
            let n = t.noise.as_ref()?;
            Some(NoiseLine {
                cpu: t.cpu,
                noise_pct: known("noise.noise_pct").then_some(n.noise_pct),
                noise_ns_per_s: n.noise_ns_per_s.filter(|_| known("noise.noise_pct")),
                gaps: known("samples").then_some(t.latency.samples),
                gaps_per_s: known("noise.gaps_per_s").then_some(n.gaps_per_s),
                p99_ns: t.latency.p99_ns,
                p99_bound: !super::cpu_tables::bound_mark(record, t.cpu, t.latency.p99_ns)
                    .is_empty(),
                max_ns: t.latency.max_ns,
                throttled_gaps: if known("noise.throttled_ns") {
                    n.throttled_gaps
                } else {
                    0
                },
                throttled_ns: if known("noise.throttled_ns") {
                    n.throttled_ns
                } else {
                    0
                },
                dropped: if known("dropped_records") {
                    t.dropped_records
                } else {
                    0
                },
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::cpu_summary::{WIDTH, wrap};
    use crate::report::table::{Markup, Terminal};

    #[test]
    fn noise_tables_fit_and_group_alike() {
        let lines: Vec<NoiseLine> = (0..128)
            .map(|cpu| NoiseLine {
                cpu,
                noise_pct: Some(91.9864),
                noise_ns_per_s: Some(919_864_042.0),
                gaps: Some(123_456_789),
                gaps_per_s: Some(132_000.5),
                p99_ns: Some(68_000_000),
                p99_bound: false,
                max_ns: Some(68_130_000 + cpu as i64),
                throttled_gaps: 3,
                throttled_ns: 75_000_000,
                dropped: 1,
            })
            .collect();
        let (table, note) = noise_table(&lines, false);
        let text = Terminal.render(&table) + &wrap(&format!("  {}", note.unwrap()), WIDTH, "  ");
        for l in text.lines() {
            assert!(
                l.chars().count() <= WIDTH,
                "{} columns: {l}",
                l.chars().count()
            );
        }
        assert!(
            text.lines()
                .nth(2)
                .unwrap()
                .trim_start()
                .starts_with("127 "),
            "{text}"
        );
        assert!(text.contains("9.00 s in 360"), "{text}");
    }
}

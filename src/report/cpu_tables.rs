//! The per-CPU tables of a run, built once for every markup: the latency table (the terminal
//! summary shows its [`Detail::Summary`] columns, the HTML report all of them) and the
//! `--trace` split of each CPU's latency into timer IRQ and thread parts.
//!
//! Exact figures are shown exactly, with their sign: a negative min, mean or max is a finding
//! (early wakeups: a clock step, or a method that wakes early), not a rounding artefact, so no
//! markup clamps it to 0. Percentiles come from HDR histograms, which hold early wakeups as 0
//! (docs/user-guide.md, "Early wakeups").

use super::cpu_group;
use super::table::{Align, Cell, Table};
use crate::format::run_record::{RunRecord, ThreadSummary};
use crate::format::stats::LatencySummary;
use crate::units::{format_ns, format_ns_signed};

/// How many columns of the latency table to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Detail {
    /// The end-of-run summary on the terminal: what fits a terminal line.
    Summary,
    /// The HTML report: every figure run.json has.
    Full,
}

/// One column of the per-CPU latency table.
struct CpuColumn {
    /// The header in the full table.
    header: &'static str,
    /// The header in the summary, where columns are narrow.
    short: &'static str,
    in_summary: bool,
    /// Only when some thread has a timer IRQ latency (`--trace`).
    traced: bool,
    cell: fn(&ThreadSummary, Detail) -> String,
    /// The run.json thread field the cell shows, when an imported run may lack it
    /// (`imported.absent`): then the cell is `-`, not the placeholder.
    field: Option<&'static str>,
    /// A percentile's value: marked `≥` where it lies among an imported histogram's
    /// overflows of the source's column `overflow_column`, a lower bound ([`bound_mark_in`]).
    percentile: Option<fn(&ThreadSummary) -> Option<u64>>,
    /// The imported source's column whose overflows bound `percentile` (`latency`, `irq`).
    overflow_column: &'static str,
}

/// The columns, in order: adding a figure to the per-CPU table is one row here.
const CPU_COLUMNS: &[CpuColumn] = &[
    column("CPU", "CPU", true, |t, _| t.cpu.to_string()),
    CpuColumn {
        // rtla osnoise top prints no count (imported.absent).
        field: Some("samples"),
        ..column("samples", "samples", true, |t, _| {
            t.latency.samples.to_string()
        })
    },
    column("min", "min", true, |t, _| signed(t.latency.min_ns)),
    column("mean", "mean", true, |t, _| mean(&t.latency)),
    column("stddev", "stddev", false, |t, _| {
        t.latency
            .stddev_ns
            .map_or("-".into(), |s| format_ns(s.round() as u64))
    }),
    percentile("p50", true, |t| t.latency.p50_ns),
    percentile("p90", false, |t| t.latency.p90_ns),
    percentile("p99", true, |t| t.latency.p99_ns),
    percentile("p99.9", true, |t| t.latency.p999_ns),
    percentile("p99.99", true, |t| t.latency.p9999_ns),
    column("max", "max", true, |t, _| signed(t.latency.max_ns)),
    CpuColumn {
        field: Some("missed_periods"),
        ..column("missed periods", "missed", true, |t, _| {
            t.missed_periods.to_string()
        })
    },
    CpuColumn {
        field: Some("dropped_records"),
        ..column("dropped", "dropped", true, |t, _| {
            t.dropped_records.to_string()
        })
    },
    // The summary's narrow form has no space after '>' (as it always had).
    CpuColumn {
        field: Some("deadline_misses"),
        ..column("deadline misses", "> deadline", true, |t, detail| {
            let deadline = format_ns(t.deadline_ns);
            match detail {
                Detail::Summary => format!("{} (>{deadline})", t.deadline_misses),
                Detail::Full => format!("{} (> {deadline})", t.deadline_misses),
            }
        })
    },
    CpuColumn {
        field: Some("early_wakeups"),
        ..column("early", "early", false, |t, _| t.early_wakeups.to_string())
    },
    CpuColumn {
        traced: true,
        short: "IRQ p99",
        overflow_column: "irq",
        ..percentile("timer IRQ p99", false, |t| {
            t.irq_latency.as_ref().and_then(|i| i.p99_ns)
        })
    },
    CpuColumn {
        traced: true,
        ..column("timer IRQ max", "IRQ max", false, |t, _| {
            signed(t.irq_latency.as_ref().and_then(|i| i.max_ns))
        })
    },
];

const fn column(
    header: &'static str,
    short: &'static str,
    in_summary: bool,
    cell: fn(&ThreadSummary, Detail) -> String,
) -> CpuColumn {
    CpuColumn {
        header,
        short,
        in_summary,
        traced: false,
        cell,
        field: None,
        percentile: None,
        overflow_column: "latency",
    }
}

const fn percentile(
    header: &'static str,
    in_summary: bool,
    value: fn(&ThreadSummary) -> Option<u64>,
) -> CpuColumn {
    CpuColumn {
        header,
        short: header,
        in_summary,
        traced: false,
        // The cell is built in `latency`, which knows the record's overflows.
        cell: |_, _| String::new(),
        field: None,
        percentile: Some(value),
        overflow_column: "latency",
    }
}

/// `≥` before a percentile of CPU `cpu` that lies among the run's imported overflows (a lower
/// bound: the overflows are recorded at the histogram's end, the least they can be), as
/// `compare` and `--budget` say too; empty otherwise.
pub(crate) fn bound_mark(record: &RunRecord, cpu: usize, value: Option<u64>) -> &'static str {
    bound_mark_in(record, cpu, "latency", value)
}

/// [`bound_mark`] for the imported source's `column` (`latency`, `irq`, `thr`: the timer IRQ
/// and thread columns of rtla have overflows of their own; tenth hostile re-run, X3).
pub(crate) fn bound_mark_in(
    record: &RunRecord,
    cpu: usize,
    column: &str,
    value: Option<u64>,
) -> &'static str {
    let from = record
        .imported
        .as_ref()
        .and_then(|i| i.overflow_from(cpu, column));
    match (from, value) {
        (Some(from), Some(v)) if v >= from => "≥",
        _ => "",
    }
}

/// An exact latency that can be negative, or `-` when there is none.
pub(crate) fn signed(v: Option<i64>) -> String {
    v.map_or("-".into(), format_ns_signed)
}

/// A histogram figure (never negative), or `-`.
pub(crate) fn unsigned(v: Option<u64>) -> String {
    v.map_or("-".into(), format_ns)
}

/// The exact mean, rounded to the nanosecond, with its sign.
pub(crate) fn mean(l: &LatencySummary) -> String {
    l.mean_ns
        .map_or("-".into(), |m| format_ns_signed(m.round() as i64))
}

/// One row per measuring thread.
pub(crate) fn latency(record: &RunRecord, detail: Detail) -> Table {
    let traced = record.threads.iter().any(|t| t.irq_latency.is_some());
    let columns: Vec<&CpuColumn> = CPU_COLUMNS
        .iter()
        .filter(|c| match detail {
            Detail::Summary => c.in_summary,
            Detail::Full => traced || !c.traced,
        })
        .collect();
    let mut table = Table::new(
        columns.iter().map(|c| match detail {
            Detail::Summary => c.short,
            Detail::Full => c.header,
        }),
        Align::Right,
    );
    for t in &record.threads {
        table.push_row(
            columns
                .iter()
                .map(|c| match (c.field, c.percentile) {
                    (Some(f), _) if record.is_absent(f) => Cell::from("-".to_string()),
                    (_, Some(value)) => {
                        let v = value(t);
                        let mark = bound_mark_in(record, t.cpu, c.overflow_column, v);
                        Cell::from(format!("{mark}{}", unsigned(v)))
                    }
                    _ => Cell::from((c.cell)(t, detail)),
                })
                .collect(),
        );
    }
    table
}

/// `--verbose`: every CPU's distribution, min to max (the summary's table shows p50 to max).
pub(crate) fn percentiles(record: &RunRecord) -> Table {
    let mut table = Table::new(
        [
            "CPU", "min", "mean", "p50", "p90", "p99", "p99.9", "p99.99", "max",
        ],
        Align::Right,
    );
    for t in &record.threads {
        let l = &t.latency;
        let q = |v: Option<u64>| format!("{}{}", bound_mark(record, t.cpu, v), unsigned(v)).into();
        table.push_row(vec![
            t.cpu.to_string().into(),
            signed(l.min_ns).into(),
            mean(l).into(),
            q(l.p50_ns),
            q(l.p90_ns),
            q(l.p99_ns),
            q(l.p999_ns),
            q(l.p9999_ns),
            signed(l.max_ns).into(),
        ]);
    }
    table
}

/// One CPU of the `--trace` split: its timer IRQ latency and its thread latency.
struct SplitLine {
    cpu: usize,
    irq: LatencySummary,
    thread: LatencySummary,
    /// Samples without a split (no matching trace event, or the trace came too late).
    no_split: u64,
}

impl SplitLine {
    /// What orders the CPUs: the larger of the two maxima shown.
    fn worst_ns(&self) -> Option<i64> {
        self.irq.max_ns.max(self.thread.max_ns)
    }
}

/// `--trace`: per CPU the timer IRQ latency and the thread latency (timer expiry to the thread
/// in user space) side by side, and how many samples have no split. Above 16 CPUs (unless
/// `every_cpu`) the worst CPUs and a `+N` row of the rest (`cpu_group`), with the note that
/// names them.
pub(crate) fn latency_split(
    record: &RunRecord,
    every_cpu: bool,
) -> Option<(Table, Option<String>)> {
    let trace = record.trace.as_ref()?;
    let mut table = Table::new(
        [
            "CPU",
            "IRQ mean",
            "IRQ p99",
            "IRQ max",
            "thread mean",
            "thread p99",
            "thread max",
            "no split",
        ],
        Align::Right,
    );
    let lines: Vec<SplitLine> = record
        .threads
        .iter()
        .filter_map(|t| {
            let irq = t.irq_latency.clone()?;
            let th = trace.threads.iter().find(|x| x.cpu == t.cpu);
            Some(SplitLine {
                cpu: t.cpu,
                irq,
                thread: th.map(|x| x.thread_latency.clone()).unwrap_or_default(),
                no_split: th.map_or(0, |x| x.samples_unmatched + x.samples_trace_late),
            })
        })
        .collect();
    let worst: Vec<Option<i64>> = lines.iter().map(SplitLine::worst_ns).collect();
    let (shown, rest) = cpu_group::choose(&worst, every_cpu);
    for &i in &shown {
        let l = &lines[i];
        let bound = |column, v: Option<u64>| {
            format!("{}{}", bound_mark_in(record, l.cpu, column, v), unsigned(v))
        };
        table.push_row(vec![
            l.cpu.to_string().into(),
            mean(&l.irq).into(),
            bound("irq", l.irq.p99_ns).into(),
            signed(l.irq.max_ns).into(),
            mean(&l.thread).into(),
            bound("thr", l.thread.p99_ns).into(),
            signed(l.thread.max_ns).into(),
            l.no_split.to_string().into(),
        ]);
    }
    if rest.is_empty() {
        return Some((table, None));
    }
    let r: Vec<&SplitLine> = rest.iter().map(|&i| &lines[i]).collect();
    let largest_mean = |f: fn(&SplitLine) -> &LatencySummary| {
        cpu_group::largest_f64(r.iter().map(|l| f(l).mean_ns))
            .map_or("-".into(), |m| format_ns_signed(m.round() as i64))
    };
    let p99 = |f: fn(&SplitLine) -> &LatencySummary| {
        unsigned(cpu_group::largest(r.iter().map(|l| f(l).p99_ns)))
    };
    let max = |f: fn(&SplitLine) -> &LatencySummary| {
        signed(cpu_group::largest(r.iter().map(|l| f(l).max_ns)))
    };
    table.push_row(vec![
        cpu_group::rest_label(r.len()).into(),
        largest_mean(|l| &l.irq).into(),
        p99(|l| &l.irq).into(),
        max(|l| &l.irq).into(),
        largest_mean(|l| &l.thread).into(),
        p99(|l| &l.thread).into(),
        max(|l| &l.thread).into(),
        r.iter().map(|l| l.no_split).sum::<u64>().to_string().into(),
    ]);
    let cpus: Vec<usize> = r.iter().map(|l| l.cpu).collect();
    Some((table, Some(cpu_group::rest_note(&cpus))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_negative_mean_is_shown_with_its_sign() {
        let early = LatencySummary {
            mean_ns: Some(-1500.4),
            ..LatencySummary::default()
        };
        assert_eq!(mean(&early), "-1.5 us");
        assert_eq!(mean(&LatencySummary::default()), "-");
        assert_eq!(signed(Some(-12)), "-12 ns");
    }

    #[test]
    fn the_summary_leaves_irq_columns_to_the_split_table() {
        for c in CPU_COLUMNS.iter().filter(|c| c.in_summary) {
            assert!(!c.traced, "{}: the summary has its own IRQ table", c.header);
        }
    }
}

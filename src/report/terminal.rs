//! The end-of-run summary on the terminal: warnings first, then one row per CPU, every number
//! with its unit.

use super::cpu_tables::{self, Detail};
use super::table::{Markup, Terminal};
use crate::format::run_record::{Ended, RunRecord, format_throughput};
use crate::results::sweep::{SweepRecord, SweepRow};
use crate::units::format_ns;
use std::fmt::Write;

/// Renders the summary of a finished run.
pub fn summary(record: &RunRecord, dir: &std::path::Path) -> String {
    let mut out = String::new();
    if !record.warnings.is_empty() {
        out.push_str("Warnings (conditions that affect these results):\n");
        for w in &record.warnings {
            let _ = writeln!(out, "  ! {w}");
        }
        out.push('\n');
    }
    if record.kind.is_noise() {
        let _ = writeln!(out, "{}", super::noise::heading(record));
        if let Some(reason) = &record.end_reason {
            let _ = writeln!(out, "  ended: {reason}");
        }
        out.push_str(&Terminal.render(&super::noise::table(record)));
    } else {
        out.push_str(&latency_heading(record));
        out.push_str(&Terminal.render(&cpu_tables::latency(record, Detail::Summary)));
    }
    for load in &record.loads {
        let _ = writeln!(out, "  {}", crate::format::run_record::load_line(load));
    }
    for (i, line) in super::inversion::lines(record).iter().enumerate() {
        let _ = writeln!(out, "{}{line}", if i == 0 { "" } else { "  " });
    }
    out.push_str(&trace_section(record));
    out.push_str(&super::phases::summary(record));
    out.push_str(&super::tails::summary(record));
    out.push_str(&super::counters::summary(record));
    if let Some(verdict) = &record.budget {
        let _ = writeln!(out, "Budget {}:", verdict.expression);
        for line in crate::analysis::budget::verdict_lines(verdict) {
            let _ = writeln!(out, "  {line}");
        }
    }
    let _ = writeln!(out, "Results: {}", dir.display());
    out
}

/// A noise run's trace: the noise by cause per CPU, and the longest gaps explained.
fn noise_trace_section(
    record: &RunRecord,
    trace: &crate::format::run_record::TraceRecord,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "  noise by cause (--trace; gaps above {} explained: {}, all in events.jsonl):",
        format_ns(trace.explain_above_ns),
        trace.explained
    );
    for line in super::noise::cause_lines(record) {
        let _ = writeln!(out, "  {line}");
    }
    if let Some(table) = super::noise::causes_table(record) {
        out.push_str(&Terminal.render(&table));
    }
    if !trace.worst.is_empty() {
        let _ = writeln!(out, "  the longest gaps:");
    }
    for x in &trace.worst {
        let at = x.due_ns.saturating_sub(record.start_monotonic_ns);
        let _ = writeln!(
            out,
            "    cpu{} at {:.3} s: {}",
            x.cpu,
            at as f64 / 1e9,
            x.verdict
        );
    }
    out
}

/// `jitterlab run: FIFO 95 on CPUs [0, 1], wake ..., interval ..., completed after ...`, and why
/// the run ended when it did not complete.
fn latency_heading(record: &RunRecord) -> String {
    let mut out = String::new();
    let plan = &record.plan;
    // An imported run's placeholders are unknowns (imported.absent): `-`.
    let known = |field: &str, shown: String| {
        if record.is_absent(field) {
            "-".to_string()
        } else {
            shown
        }
    };
    let _ = writeln!(
        out,
        "jitterlab run: {} {} on CPUs {:?}, wake {} ({} clock), interval {}, {}",
        known("plan.policy", plan.policy.to_uppercase()),
        known("plan.priority", plan.priority.to_string()),
        plan.cpus,
        known("plan.wake", plan.wake.clone()),
        known("plan.clock", plan.clock.clone()),
        known("plan.interval_ns", format_ns(plan.interval_ns)),
        ended_text(record)
    );
    if let Some(reason) = &record.end_reason {
        let _ = writeln!(out, "  ended: {reason}");
    }
    out
}

/// How the run ended and after how long: `completed after 30.00 s`.
pub(super) fn ended_text(record: &RunRecord) -> String {
    match (record.ended, record.duration_ns) {
        (Ended::Completed, Some(d)) => format!("completed after {}", format_ns(d)),
        (e, Some(d)) => format!("{} after {}", e.as_str(), format_ns(d)),
        (e, None) => e.as_str().to_string(),
    }
}

/// `--trace`: IRQ and thread latency side by side per CPU, and the worst explained wakeups.
fn trace_section(record: &RunRecord) -> String {
    let mut out = String::new();
    let Some(trace) = &record.trace else {
        return out;
    };
    if record.kind.is_noise() {
        return noise_trace_section(record, trace);
    }
    let _ = writeln!(
        out,
        "  latency split (--trace): IRQ = timer interrupt late vs its expiry; thread = timer expiry to the thread in user space"
    );
    if let Some(table) = cpu_tables::latency_split(record) {
        out.push_str(&Terminal.render(&table));
    }
    if trace.explained > 0 {
        let _ = writeln!(
            out,
            "  late wakeups explained: {} (all in events.jsonl); the worst:",
            trace.explained
        );
        for x in &trace.worst {
            let at = x.due_ns.saturating_sub(record.start_monotonic_ns);
            let _ = writeln!(
                out,
                "    cpu{} at {:.3} s: {}",
                x.cpu,
                at as f64 / 1e9,
                x.verdict
            );
        }
    } else {
        let _ = writeln!(out, "  late wakeups explained: none");
    }
    out
}

/// One level of a sweep on one line: the swept load's throughput, then p99 and max per CPU.
pub(crate) fn sweep_row(row: &SweepRow) -> String {
    let cpus: Vec<String> = row
        .threads
        .iter()
        .map(|t| {
            let mut text = format!(
                "cpu{} p99 {} max {}",
                t.cpu,
                t.p99_ns.map_or("-".into(), format_ns),
                signed(t.max_ns)
            );
            if t.dropped_records > 0 {
                let _ = write!(text, " ({} samples dropped)", t.dropped_records);
            }
            text
        })
        .collect();
    if cpus.is_empty() {
        return format_throughput(&row.throughput);
    }
    format!(
        "{}; {}",
        format_throughput(&row.throughput),
        cpus.join(", ")
    )
}

/// A sweep's summary on the terminal: the latency per level and CPU, then the load's
/// throughput per level (a table of its own, so that the latency columns stay on screen).
pub(crate) fn sweep_table(record: &SweepRecord) -> String {
    use crate::report::sweep_tables::{latency_table, throughput_table};
    use crate::report::table::{Markup, Terminal};
    let mut out = format!("jitterlab sweep: {}\n", record.load_template);
    if record.load_only {
        out += "(loads alone, not measured)\n";
    } else {
        out += &Terminal.render(&latency_table(record, |_| String::new()));
    }
    if let Some(t) = throughput_table(record) {
        out += "Load throughput per level:\n";
        out += &Terminal.render(&t);
    }
    let warnings = record.level_warnings();
    if !warnings.is_empty() {
        out += "Warnings (conditions that affect these results):\n";
        for w in warnings {
            let _ = writeln!(out, "  ! {w}");
        }
    }
    out
}

fn signed(v: Option<i64>) -> String {
    match v {
        Some(n) if n >= 0 => format_ns(n as u64),
        Some(n) => format!("-{}", format_ns(n.unsigned_abs())),
        None => "-".into(),
    }
}

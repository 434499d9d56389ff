//! The end-of-run summary on the terminal: warnings first, then one row per CPU, every number
//! with its unit.

use crate::results::run_record::{Ended, RunRecord};
use crate::units::format_ns;
use std::fmt::Write;

fn ns_signed(v: Option<i64>) -> String {
    match v {
        None => "-".into(),
        Some(ns) if ns < 0 => format!("-{}", format_ns(ns.unsigned_abs())),
        Some(ns) => format_ns(ns as u64),
    }
}

fn ns_unsigned(v: Option<u64>) -> String {
    v.map_or("-".into(), format_ns)
}

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
    let plan = &record.plan;
    let _ = writeln!(
        out,
        "jitterlab run: {} {} on CPUs {:?}, wake {} ({} clock), interval {}, {}",
        plan.policy.to_uppercase(),
        plan.priority,
        plan.cpus,
        plan.wake,
        plan.clock,
        format_ns(plan.interval_ns),
        match (record.ended, record.duration_ns) {
            (Ended::Completed, Some(d)) => format!("completed after {}", format_ns(d)),
            (e, Some(d)) => format!("{} after {}", e.as_str(), format_ns(d)),
            (e, None) => e.as_str().to_string(),
        }
    );
    if let Some(reason) = &record.end_reason {
        let _ = writeln!(out, "  ended: {reason}");
    }
    let headers = [
        "CPU",
        "samples",
        "min",
        "mean",
        "p50",
        "p99",
        "p99.9",
        "p99.99",
        "max",
        "missed",
        "dropped",
        "> deadline",
    ];
    let mut rows: Vec<Vec<String>> = vec![headers.iter().map(|h| h.to_string()).collect()];
    for t in &record.threads {
        let l = &t.latency;
        rows.push(vec![
            t.cpu.to_string(),
            l.samples.to_string(),
            ns_signed(l.min_ns),
            l.mean_ns
                .map_or("-".into(), |m| format_ns(m.max(0.0).round() as u64)),
            ns_unsigned(l.p50_ns),
            ns_unsigned(l.p99_ns),
            ns_unsigned(l.p999_ns),
            ns_unsigned(l.p9999_ns),
            ns_signed(l.max_ns),
            t.missed_periods.to_string(),
            t.dropped_records.to_string(),
            format!("{} (>{})", t.deadline_misses, format_ns(t.deadline_ns)),
        ]);
    }
    out.push_str(&aligned_table(&rows));
    for load in &record.loads {
        let _ = writeln!(out, "  {}", crate::results::run_record::load_line(load));
    }
    out.push_str(&trace_section(record));
    out.push_str(&super::phases::summary(record));
    if let Some(verdict) = &record.budget {
        let _ = writeln!(out, "Budget {}:", verdict.expression);
        for line in crate::analysis::budget::verdict_lines(verdict) {
            let _ = writeln!(out, "  {line}");
        }
    }
    let _ = writeln!(out, "Results: {}", dir.display());
    out
}

/// `--trace`: IRQ and thread latency side by side per CPU, and the worst explained wakeups.
fn trace_section(record: &RunRecord) -> String {
    let mut out = String::new();
    let Some(trace) = &record.trace else {
        return out;
    };
    let _ = writeln!(
        out,
        "  latency split (--trace): IRQ = timer interrupt late vs its expiry; thread = timer expiry to the thread in user space"
    );
    let mut rows = vec![
        [
            "CPU",
            "IRQ mean",
            "IRQ p99",
            "IRQ max",
            "thread mean",
            "thread p99",
            "thread max",
            "no split",
        ]
        .map(String::from)
        .to_vec(),
    ];
    let mean = |m: Option<f64>| m.map_or("-".into(), |m| format_ns(m.max(0.0).round() as u64));
    for t in &record.threads {
        let Some(irq) = &t.irq_latency else { continue };
        let th = trace.threads.iter().find(|x| x.cpu == t.cpu);
        let thread = th.map(|x| x.thread_latency.clone()).unwrap_or_default();
        let absent = th.map_or(0, |x| x.samples_unmatched + x.samples_trace_late);
        rows.push(vec![
            t.cpu.to_string(),
            mean(irq.mean_ns),
            ns_unsigned(irq.p99_ns),
            ns_signed(irq.max_ns),
            mean(thread.mean_ns),
            ns_unsigned(thread.p99_ns),
            ns_signed(thread.max_ns),
            absent.to_string(),
        ]);
    }
    out.push_str(&aligned_table(&rows));
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

/// Right-aligned columns with a rule under the header row, indented by two spaces.
fn aligned_table(rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    let columns = rows.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    for (i, row) in rows.iter().enumerate() {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:>w$}"))
            .collect();
        let _ = writeln!(out, "  {}", line.join("  "));
        if i == 0 {
            let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
            let _ = writeln!(out, "  {}", rule.join("  "));
        }
    }
    out
}

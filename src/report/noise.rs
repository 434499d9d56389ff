//! The noise run's own figures (`jitterlab noise`): its per-CPU table of gaps,
//! noise share, loop cost and throttled time, and with `--trace` the noise by cause (a table,
//! one line per CPU, the HTML report's stacked bars). Used by the terminal summary and the
//! HTML report; the gap statistics themselves are the usual per-thread figures under the word
//! "gap".

use super::cpu_tables::{bound_mark, signed, unsigned};
use super::table::{Align, Cell, Table};
use crate::format::noise::NoiseSummary;
use crate::format::run_record::{NoiseCause, RunRecord, ThreadSummary};
use crate::units::{format_ns, group_digits as grouped};
use std::fmt::Write;

/// Per CPU: noise share and total, gap count and rate, gap percentiles and the largest gap,
/// loop iterations and their cost, throttled time, dropped records.
pub fn table(record: &RunRecord) -> Table {
    let mut table = Table::new(
        [
            "CPU",
            "noise",
            "noise/s",
            "noise time",
            "gaps",
            "gaps/s",
            "p50 gap",
            "p99 gap",
            "p99.9 gap",
            "max gap",
            "iterations",
            "loop",
            "throttled",
            "dropped",
        ],
        Align::Right,
    );
    for t in &record.threads {
        let Some(n) = &t.noise else { continue };
        // A gap percentile among an imported histogram's overflows is a lower bound: `≥`.
        let gap = |v: Option<u64>| format!("{}{}", bound_mark(record, t.cpu, v), unsigned(v));
        // An imported run's placeholders are unknowns (imported.absent): `-`.
        let known = |field: &str, text: String| -> Cell {
            if record.is_absent(field) {
                "-".to_string().into()
            } else {
                text.into()
            }
        };
        table.push_row(vec![
            t.cpu.to_string().into(),
            known("noise.noise_pct", format!("{:.4} %", n.noise_pct)),
            n.noise_ns_per_s
                .map_or("-".into(), |v| format!("{} ns", grouped(v.round() as u64)))
                .into(),
            known("noise.noise_ns", format_ns(n.noise_ns)),
            known("samples", t.latency.samples.to_string()),
            known("noise.gaps_per_s", format!("{:.1}", n.gaps_per_s)),
            gap(t.latency.p50_ns).into(),
            gap(t.latency.p99_ns).into(),
            gap(t.latency.p999_ns).into(),
            signed(t.latency.max_ns).into(),
            known("noise.iterations", n.iterations.to_string()),
            known("noise.iteration_ns", format!("{:.1} ns", n.iteration_ns)),
            known(
                "noise.throttled_ns",
                match n.throttled_gaps {
                    0 => "0".to_string(),
                    k => format!("{} in {k}", format_ns(n.throttled_ns)),
                },
            ),
            known("dropped_records", t.dropped_records.to_string()),
        ]);
    }
    table
}

/// `--verbose`: the noise figures the summary's table leaves out, per CPU: noise time, the
/// median and p99.9 gap, loop iterations and the cost of one.
pub(crate) fn loop_table(record: &RunRecord) -> Table {
    let mut table = Table::new(
        [
            "CPU",
            "noise time",
            "p50 gap",
            "p99.9 gap",
            "iterations",
            "loop",
        ],
        Align::Right,
    );
    for t in &record.threads {
        let Some(n) = &t.noise else { continue };
        // A gap percentile among an imported histogram's overflows is a lower bound: `≥`.
        let gap = |v: Option<u64>| format!("{}{}", bound_mark(record, t.cpu, v), unsigned(v));
        let known = |field: &str, text: String| -> Cell {
            if record.is_absent(field) {
                "-".to_string().into()
            } else {
                text.into()
            }
        };
        table.push_row(vec![
            t.cpu.to_string().into(),
            known("noise.noise_ns", format_ns(n.noise_ns)),
            gap(t.latency.p50_ns).into(),
            gap(t.latency.p999_ns).into(),
            known("noise.iterations", n.iterations.to_string()),
            known("noise.iteration_ns", format!("{:.1} ns", n.iteration_ns)),
        ]);
    }
    table
}

/// A noise thread's statements, as an oslat or osnoise user reads noise (the tails section
/// of the terminal summary and the report): "noise 1 234 ns/s: 0.1234 % of 4.00 s lost, in
/// 512 gaps over 1.0 us; longest gap 45.6 us", then per length "gaps over 10.0 us: 3, 0.75/s
/// (95 % 0.15-2.19/s)". Each figure is from the loop's exact counts over the time measured.
/// An imported run states only what its source did.
pub(crate) fn statements(record: &RunRecord, t: &ThreadSummary, n: &NoiseSummary) -> Vec<String> {
    let absent = |field: &str| record.is_absent(field);
    let mut lines = Vec::new();
    if let Some(per_s) = n.noise_ns_per_s.filter(|_| !absent("noise.noise_pct")) {
        let mut line = format!(
            "noise {} ns/s: {:.4} % of the time",
            grouped(per_s.round() as u64),
            n.noise_pct
        );
        if !absent("noise.measured_ns") {
            let _ = write!(line, " ({} measured)", format_ns(n.measured_ns));
        }
        line.push_str(" lost");
        if !absent("samples") {
            let _ = write!(
                line,
                ", in {} gap{} over {}",
                grouped(t.latency.samples),
                if t.latency.samples == 1 { "" } else { "s" },
                record
                    .plan
                    .noise_threshold_ns
                    .map_or("the threshold".into(), format_ns)
            );
        }
        if let Some(max) = t.latency.max_ns {
            let _ = write!(line, "; longest gap {}", format_ns(max.max(0) as u64));
        }
        lines.push(line);
    }
    for g in &n.gaps_over {
        lines.push(format!(
            "gaps over {}: {}, {}/s (95 % {}-{}/s)",
            format_ns(g.threshold_ns),
            grouped(g.gaps),
            per_second(g.gaps_per_s),
            per_second(g.gaps_per_s_low),
            per_second(g.gaps_per_s_high)
        ));
    }
    lines
}

/// A rate per second with sensible digits: `128`, `12.5`, `0.75`, `0.0012`.
pub(super) fn per_second(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 0.01 || v == 0.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.2e}")
    }
}

/// The traced causes of each CPU's noise (`noise --trace`): (CPU, its noise share in %, its
/// causes most first). Empty without a trace.
fn causes(record: &RunRecord) -> Vec<(usize, f64, &[NoiseCause])> {
    let Some(trace) = &record.trace else {
        return Vec::new();
    };
    trace
        .threads
        .iter()
        .filter(|t| !t.noise_causes.is_empty())
        .map(|t| {
            let pct = record
                .threads
                .iter()
                .find(|r| r.cpu == t.cpu)
                .and_then(|r| r.noise.as_ref())
                .map_or(0.0, |n| n.noise_pct);
            (t.cpu, pct, t.noise_causes.as_slice())
        })
        .collect()
}

/// Each cause's share of the CPU's explained noise, percent.
fn shares(causes: &[NoiseCause]) -> Vec<f64> {
    let total: u64 = causes.iter().map(|c| c.time_ns).sum();
    causes
        .iter()
        .map(|c| 100.0 * c.time_ns as f64 / total.max(1) as f64)
        .collect()
}

/// Causes named in a line or a bar; the rest are summed as "N others".
const CAUSES_NAMED: usize = 7;

/// The labels and shares of a CPU's line and bar: the first [`CAUSES_NAMED`] causes, then
/// "N others" with the rest of the share.
fn named_shares(causes: &[NoiseCause]) -> Vec<(String, f64)> {
    let all = shares(causes);
    let mut out: Vec<(String, f64)> = causes
        .iter()
        .zip(&all)
        .take(CAUSES_NAMED)
        .map(|(c, s)| (c.label(), *s))
        .collect();
    if causes.len() > CAUSES_NAMED {
        let rest: f64 = all[CAUSES_NAMED..].iter().sum();
        out.push((format!("{} others", causes.len() - CAUSES_NAMED), rest));
    }
    out
}

/// Per CPU, the noise by cause: "CPU 1: 0.1200 % noise: 61 % local_timer, 30 % NET_RX
/// softirq, 9 % no trace event" (the shares of the explained noise, most first).
pub(crate) fn cause_lines(record: &RunRecord) -> Vec<String> {
    causes(record)
        .into_iter()
        .map(|(cpu, pct, causes)| {
            let parts: Vec<String> = named_shares(causes)
                .into_iter()
                .map(|(label, s)| format!("{s:.0} % {label}"))
                .collect();
            format!("CPU {cpu}: {pct:.4} % noise: {}", parts.join(", "))
        })
        .collect()
}

/// Per CPU and cause: its time, share of the CPU's explained noise, gaps and largest part.
pub(crate) fn causes_table(record: &RunRecord) -> Option<Table> {
    let all = causes(record);
    if all.is_empty() {
        return None;
    }
    let mut table = Table::new(
        [
            "CPU",
            "cause",
            "kind",
            "noise time",
            "share",
            "gaps",
            "max in a gap",
        ],
        Align::Right,
    );
    for (cpu, _, causes) in all {
        for (c, share) in causes.iter().zip(shares(causes)) {
            table.push_row(vec![
                cpu.to_string().into(),
                Cell::from(c.label()),
                Cell::from(c.kind.clone()),
                format_ns(c.time_ns).into(),
                format!("{share:.1} %").into(),
                c.count.to_string().into(),
                format_ns(c.max_ns).into(),
            ]);
        }
    }
    Some(table)
}

/// The stacked bars of the HTML report: one per CPU, a segment per cause (its share of the
/// explained noise), the legend in each segment's title.
pub(crate) fn html_cause_bars(record: &RunRecord) -> String {
    let mut h = String::new();
    for (cpu, pct, causes) in causes(record) {
        h.push_str(&format!(
            "<div class=\"noise-bar\"><span class=\"noise-bar-label\">CPU {cpu}: {pct:.4} % noise</span><div style=\"display:flex;width:100%;height:1.2em\">"
        ));
        let named = named_shares(causes);
        for (i, (label, share)) in named.iter().enumerate() {
            let label = crate::report::svg::escape(&format!("{label} {share:.1} %"));
            h.push_str(&format!(
                "<div title=\"{label}\" style=\"width:{share:.3}%;background:{}\"></div>",
                crate::report::plot::PALETTE[i % crate::report::plot::PALETTE.len()]
            ));
        }
        h.push_str("</div><p class=\"note\">");
        let legend: Vec<String> = named
            .iter()
            .enumerate()
            .map(|(i, (label, s))| {
                format!(
                    "<span style=\"color:{}\">&#9632;</span> {} {s:.0} %",
                    crate::report::plot::PALETTE[i % crate::report::plot::PALETTE.len()],
                    crate::report::svg::escape(label)
                )
            })
            .collect();
        h.push_str(&legend.join(", "));
        h.push_str("</p></div>\n");
    }
    h
}

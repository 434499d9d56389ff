//! The noise run's own figures (`jitterlab noise`): its heading and its per-CPU table of gaps,
//! noise share, loop cost and throttled time. Used by the terminal summary; the gap statistics
//! themselves are the usual per-thread figures under the word "gap".

use super::cpu_tables::{signed, unsigned};
use super::table::{Align, Cell, Table};
use crate::results::run_record::RunRecord;
use crate::units::format_ns;

/// "jitterlab noise: FIFO 95 on CPUs [0, 1], threshold 1.0 us, completed after 5.00 s".
pub fn heading(record: &RunRecord) -> String {
    let plan = &record.plan;
    let policy = match plan.priority {
        0 => plan.policy.to_uppercase(),
        p => format!("{} {p}", plan.policy.to_uppercase()),
    };
    format!(
        "jitterlab noise: {policy} on CPUs {:?}, threshold {}, {}",
        plan.cpus,
        plan.noise_threshold_ns.map_or("-".into(), format_ns),
        super::terminal::ended_text(record)
    )
}

/// Per CPU: noise share and total, gap count and rate, gap percentiles and the largest gap,
/// loop iterations and their cost, throttled time, dropped records.
pub fn table(record: &RunRecord) -> Table {
    let mut table = Table::new(
        [
            "CPU",
            "noise",
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
            known("noise.noise_ns", format_ns(n.noise_ns)),
            known("samples", t.latency.samples.to_string()),
            known("noise.gaps_per_s", format!("{:.1}", n.gaps_per_s)),
            unsigned(t.latency.p50_ns).into(),
            unsigned(t.latency.p99_ns).into(),
            unsigned(t.latency.p999_ns).into(),
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

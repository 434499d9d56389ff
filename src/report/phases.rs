//! The per-phase lines of the terminal summary of a scenario run: one line per phase and CPU,
//! so that a reader sees "idle p99.9 40 us, io p99.9 900 us" at a glance.

use crate::results::run_record::RunRecord;
use crate::units::format_ns;
use std::fmt::Write;

/// Empty when the run had no phases.
pub fn summary(record: &RunRecord) -> String {
    let mut out = String::new();
    if record.phases.is_empty() {
        return out;
    }
    let _ = writeln!(out, "  phases (whole log intervals inside each phase):");
    for p in &record.phases {
        let offset = |t: u64| t.saturating_sub(record.start_monotonic_ns) as f64 / 1e9;
        let cpus: Vec<String> = p
            .threads
            .iter()
            .map(|t| {
                let l = &t.latency;
                let f = |v: Option<u64>| v.map_or("-".into(), format_ns);
                format!(
                    "cpu{} p99 {} p99.9 {} max {}",
                    t.cpu,
                    f(l.p99_ns),
                    f(l.p999_ns),
                    super::cpu_tables::signed(l.max_ns)
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "    {} {:>8.1}-{:.1} s: {}",
            p.label,
            offset(p.start_ns),
            offset(p.end_ns),
            cpus.join("; ")
        );
    }
    out
}

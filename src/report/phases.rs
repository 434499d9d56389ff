//! The per-phase lines of the terminal summary of a scenario run: one table row per phase and
//! CPU, so that a reader sees "idle p99.9 40 us, io p99.9 900 us" at a glance, with the columns
//! aligned whatever the length of the phase names.

use super::table::{Align, Markup, Table, Terminal};
use crate::format::run_record::RunRecord;
use crate::units::format_ns;

/// Empty when the run had no phases.
pub fn summary(record: &RunRecord) -> String {
    if record.phases.is_empty() {
        return String::new();
    }
    let mut table = Table::new(
        ["phase", "from", "to", "CPU", "p99", "p99.9", "max"],
        Align::Right,
    );
    table.columns[0].align = Align::Left;
    let offset = |t: u64| {
        format!(
            "{:.1} s",
            t.saturating_sub(record.start_monotonic_ns) as f64 / 1e9
        )
    };
    for p in &record.phases {
        let f = |v: Option<u64>| v.map_or("-".into(), format_ns);
        let rows = p
            .threads
            .iter()
            .map(|t| {
                let l = &t.latency;
                vec![
                    t.cpu.to_string().into(),
                    f(l.p99_ns).into(),
                    f(l.p999_ns).into(),
                    super::cpu_tables::signed(l.max_ns).into(),
                ]
            })
            .collect();
        table.push_group(
            vec![
                p.label.as_str().into(),
                offset(p.start_ns).into(),
                offset(p.end_ns).into(),
            ],
            rows,
            "no measurements",
        );
    }
    format!(
        "  phases (whole log intervals inside each phase):\n{}",
        Terminal.render(&table)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::synthetic::{SyntheticPhase, SyntheticRun, write_run};

    #[test]
    fn phase_lines_are_aligned_whatever_the_name_length() {
        let dir = tempfile::tempdir().unwrap();
        let phase = SyntheticPhase::seconds;
        let run = SyntheticRun {
            cpus: vec![0, 1],
            interval_ns: 1_000_000,
            log_interval_ns: 1_000_000_000,
            duration_ns: 30_000_000_000,
            phases: vec![
                phase("io", 0, 10),
                phase("caps-lock-console-switch", 10, 20),
                phase("memory", 20, 30),
            ],
            loads: vec![],
            warnings: vec![],
            seed: 4,
        };
        let record = write_run(&dir.path().join("r"), &run, |_, _, _| 10_000).unwrap();
        let text = summary(&record);
        let lines: Vec<&str> = text.lines().skip(1).collect();
        // Header, rule, and two CPUs per phase.
        assert_eq!(lines.len(), 2 + 6, "{text}");
        assert!(text.contains("caps-lock-console-switch"), "{text}");
        // Every row ends at the same column (right-aligned max), and each figure column starts
        // where its header does.
        let width = lines[0].len();
        assert!(lines.iter().all(|l| l.len() == width), "{text}");
        let p99_at = lines[0].find("p99 ").unwrap();
        for row in lines.iter().skip(2) {
            assert_eq!(&row[p99_at - 4..p99_at + 3], "10.0 us", "{text}");
        }
    }
}

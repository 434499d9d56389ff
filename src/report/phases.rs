//! The phases table of a scenario run, built once for the terminal summary and the HTML
//! report: per phase (its span, and in the report its loads, written once) one row per CPU, so
//! that a reader sees "idle p99.9 40 us, io p99.9 900 us" at a glance, with the columns aligned
//! whatever the length of the phase names. Above 16 CPUs each phase shows its worst CPUs and a
//! `+N` row of the rest (`cpu_group`), named in a note per phase.

use super::cpu_group;
use super::cpu_tables::{Detail, signed, unsigned};
use super::table::{Align, Cell, Markup, Table, Terminal};
use crate::format::run_record::{PhaseRecord, RunRecord};
use crate::format::stats::LatencySummary;
use crate::units::format_elapsed;

/// The terminal summary's phases: empty when the run had no phases. `verbose`: every CPU.
pub fn summary(record: &RunRecord, verbose: bool) -> String {
    if record.phases.is_empty() {
        return String::new();
    }
    let (table, notes) = table(record, Detail::Summary, verbose);
    let mut out = format!(
        "  phases (whole log intervals inside each phase):\n{}",
        Terminal.render(&table)
    );
    for note in notes {
        out += &super::cpu_summary::wrap(
            &format!("  {note}; --verbose shows every CPU"),
            super::cpu_summary::WIDTH,
            "  ",
        );
    }
    out
}

/// The phases table and the notes naming each phase's `+N` row (none up to 16 CPUs, or with
/// `every_cpu`). [`Detail::Summary`]: phase, from, to (seconds since the start), CPU, p99,
/// p99.9, max; [`Detail::Full`] (the report) adds the loads, the samples and p50, and skips
/// phases without measurements.
pub(crate) fn table(record: &RunRecord, detail: Detail, every_cpu: bool) -> (Table, Vec<String>) {
    let full = detail == Detail::Full;
    let headers: &[&str] = if full {
        &[
            "phase", "from", "to", "loads", "CPU", "samples", "p50", "p99", "p99.9", "max",
        ]
    } else {
        &["phase", "from", "to", "CPU", "p99", "p99.9", "max"]
    };
    let mut table = Table::new(headers.iter().copied(), Align::Right);
    if !full {
        table.columns[0].align = Align::Left;
    }
    let since_start = |t: u64| {
        let ns = t.saturating_sub(record.start_monotonic_ns);
        if full {
            format_elapsed(ns)
        } else {
            format!("{:.1} s", ns as f64 / 1e9)
        }
    };
    let mut notes = Vec::new();
    for p in &record.phases {
        if full && p.threads.is_empty() {
            continue;
        }
        let mut lead: Vec<Cell> = vec![
            p.label.as_str().into(),
            since_start(p.start_ns).into(),
            since_start(p.end_ns).into(),
        ];
        if full {
            lead.push(loads(p).into());
        }
        let (rows, note) = phase_rows(p, full, every_cpu);
        if let Some(note) = note {
            notes.push(format!("phase {}: {note}", p.label));
        }
        table.push_group(lead, rows, if full { "" } else { "no measurements" });
    }
    (table, notes)
}

fn loads(p: &PhaseRecord) -> String {
    if p.loads.is_empty() {
        "none".into()
    } else {
        p.loads.join("; ")
    }
}

/// One phase's rows: each CPU chosen (`cpu_group`), then the rest's, and its note.
fn phase_rows(p: &PhaseRecord, full: bool, every_cpu: bool) -> (Vec<Vec<Cell>>, Option<String>) {
    let row = |cpu: String, samples: Option<u64>, l: &LatencySummary| {
        let mut cells: Vec<Cell> = vec![cpu.into()];
        if full {
            cells.push(samples.map_or("-".into(), |s| s.to_string()).into());
            cells.push(unsigned(l.p50_ns).into());
        }
        cells.push(unsigned(l.p99_ns).into());
        cells.push(unsigned(l.p999_ns).into());
        cells.push(signed(l.max_ns).into());
        cells
    };
    let max: Vec<Option<i64>> = p.threads.iter().map(|t| t.latency.max_ns).collect();
    let (shown, rest) = cpu_group::choose(&max, every_cpu);
    let mut rows: Vec<Vec<Cell>> = shown
        .iter()
        .map(|&i| {
            let t = &p.threads[i];
            row(t.cpu.to_string(), Some(t.latency.samples), &t.latency)
        })
        .collect();
    if rest.is_empty() {
        return (rows, None);
    }
    let r: Vec<&LatencySummary> = rest.iter().map(|&i| &p.threads[i].latency).collect();
    let largest = LatencySummary {
        p50_ns: cpu_group::largest(r.iter().map(|l| l.p50_ns)),
        p99_ns: cpu_group::largest(r.iter().map(|l| l.p99_ns)),
        p999_ns: cpu_group::largest(r.iter().map(|l| l.p999_ns)),
        max_ns: cpu_group::largest(r.iter().map(|l| l.max_ns)),
        ..LatencySummary::default()
    };
    let samples = cpu_group::sum(r.iter().map(|l| Some(l.samples)));
    rows.push(row(cpu_group::rest_label(r.len()), samples, &largest));
    let cpus: Vec<usize> = rest.iter().map(|&i| p.threads[i].cpu).collect();
    (rows, Some(cpu_group::rest_note(&cpus)))
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
        let text = summary(&record, false);
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

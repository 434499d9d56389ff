//! The tables of sweeps, built once and written by any markup (`report::table`): a sweep's
//! latency per level and CPU, its load's throughput per level (a table of its own, so that a
//! load with several figures does not push the latency columns off the screen), and sweeps
//! side by side per level (`jitterlab compare` of sweep directories).

use crate::format::throughput::{Throughput, throughput_label};
use crate::report::cpu_tables::{signed, unsigned};
use crate::report::table::{Align, Cell, Table};
use crate::results::sweep::{SweepRecord, SweepRow, SweepThread};

/// Whether any level of `sweeps` was traced (has timer IRQ latencies): then the tables have
/// IRQ columns.
fn traced<'a>(rows: impl IntoIterator<Item = &'a SweepRow>) -> bool {
    rows.into_iter()
        .flat_map(|r| &r.threads)
        .any(|t| t.irq_max_ns.is_some())
}

/// Per level, one row per CPU: samples, min, p99, max, with `--trace` the timer IRQ p99 and
/// max, missed periods and dropped samples (a level's figures are of the samples kept). `note(row)` is added after the run directory's name (e.g. "
/// (missing)").
pub(crate) fn latency_table(record: &SweepRecord, note: impl Fn(&SweepRow) -> String) -> Table {
    let irq = traced(&record.rows);
    let mut headers = vec!["level", "run", "CPU", "samples", "min", "p99", "max"];
    if irq {
        headers.extend(["IRQ p99", "IRQ max"]);
    }
    headers.extend(["missed periods", "dropped"]);
    let mut table = Table::new(headers, Align::Right);
    // A level, its run and a CPU name a row: repeated in each part of a table too wide for
    // the terminal (2 traced CPUs with long figures are, `terminal.rs`).
    table.keys = Some(3);
    for row in &record.rows {
        let lead = vec![
            Cell::label(row.level.as_str()),
            format!("{}{}", row.run_dir, note(row)).into(),
        ];
        let rows = row
            .threads
            .iter()
            .map(|t| {
                let mut cells: Vec<Cell> = vec![
                    t.cpu.to_string().into(),
                    t.samples.to_string().into(),
                    signed(t.min_ns).into(),
                    unsigned(t.p99_ns).into(),
                    signed(t.max_ns).into(),
                ];
                if irq {
                    cells.push(unsigned(t.irq_p99_ns).into());
                    cells.push(signed(t.irq_max_ns).into());
                }
                cells.push(t.missed_periods.to_string().into());
                cells.push(t.dropped_records.to_string().into());
                cells
            })
            .collect();
        table.push_group(lead, rows, "no measurements");
    }
    table
}

/// Per level, one column per throughput figure the swept load reported; None when it reported
/// none (a load without figures).
pub(crate) fn throughput_table(record: &SweepRecord) -> Option<Table> {
    let metrics = record.throughput_metrics();
    if metrics.is_empty() {
        return None;
    }
    let mut headers = vec!["level".to_string()];
    headers.extend(
        metrics
            .iter()
            .map(|(name, unit)| throughput_label(name, unit)),
    );
    let mut table = Table::new(headers, Align::Right);
    for row in &record.rows {
        let mut cells = vec![Cell::label(row.level.as_str())];
        cells.extend(
            metrics
                .iter()
                .map(|(name, unit)| figure(&row.throughput, name, unit).into()),
        );
        table.push_row(cells);
    }
    Some(table)
}

/// One throughput figure of a level, as the terminal summary prints it, or `-`.
fn figure(throughput: &[Throughput], name: &str, unit: &str) -> String {
    throughput
        .iter()
        .find(|t| t.name == name && t.unit == unit)
        .map_or("-".into(), |t| match t.value {
            Some(v) if v.fract() == 0.0 => format!("{v}"),
            Some(v) => format!("{v:.2}"),
            // No value (hackbench with no exchange finished): the warnings say why.
            None => "none".into(),
        })
}

/// The worst CPU's figure of a level.
fn worst<T: Ord + Copy>(row: &SweepRow, pick: impl Fn(&SweepThread) -> Option<T>) -> Option<T> {
    row.threads.iter().filter_map(pick).max()
}

/// `1.30x`: `value` as a multiple of the reference; None without both or with a zero reference.
fn ratio(value: Option<i64>, reference: Option<i64>) -> Option<String> {
    match (value, reference) {
        (Some(v), Some(r)) if r > 0 => Some(format!("{:.2}x", v as f64 / r as f64)),
        _ => None,
    }
}

/// Sweeps side by side, one row per level (the levels of the first sweep, then those only
/// later sweeps have): per sweep the worst CPU's p99 and max (and IRQ max when any was traced),
/// each later sweep's max with its ratio to the first's at that level. `labels` name the sweeps
/// (`A: with-rt`).
pub(crate) fn comparison_table<'a>(sweeps: &[(String, &'a SweepRecord)]) -> Table {
    let irq = traced(sweeps.iter().flat_map(|(_, s)| &s.rows));
    let mut headers = vec!["level".to_string()];
    for (label, _) in sweeps {
        headers.push(format!("{label} p99"));
        headers.push(format!("{label} max"));
        if irq {
            headers.push(format!("{label} IRQ max"));
        }
    }
    let mut table = Table::new(headers, Align::Right);
    let row_of = |s: &'a SweepRecord, level: &str| s.rows.iter().find(|r| r.level == level);
    for level in all_levels(sweeps) {
        let reference = row_of(sweeps[0].1, level).and_then(|r| worst(r, |t| t.max_ns));
        let mut cells = vec![Cell::label(level)];
        for (k, (_, s)) in sweeps.iter().enumerate() {
            let row = row_of(s, level);
            let get = |pick: fn(&SweepThread) -> Option<i64>| row.and_then(|r| worst(r, pick));
            cells.push(unsigned(row.and_then(|r| worst(r, |t| t.p99_ns))).into());
            let max = get(|t| t.max_ns);
            let mut max_cell = Cell::from(signed(max));
            if k > 0
                && let Some(r) = ratio(max, reference)
            {
                max_cell = max_cell.with_ratio(r);
            }
            cells.push(max_cell);
            if irq {
                cells.push(signed(get(|t| t.irq_max_ns)).into());
            }
        }
        table.push_row(cells);
    }
    table
}

/// The levels of the first sweep, then those only later sweeps have.
fn all_levels<'a>(sweeps: &[(String, &'a SweepRecord)]) -> Vec<&'a str> {
    let mut levels: Vec<&str> = Vec::new();
    for r in sweeps.iter().flat_map(|(_, s)| &s.rows) {
        if !levels.contains(&r.level.as_str()) {
            levels.push(&r.level);
        }
    }
    levels
}

/// Sweeps' throughput side by side: one row per level, one column per sweep and figure.
pub(crate) fn throughput_comparison_table(sweeps: &[(String, &SweepRecord)]) -> Option<Table> {
    let mut metrics: Vec<(String, String)> = Vec::new();
    for m in sweeps.iter().flat_map(|(_, s)| s.throughput_metrics()) {
        if !metrics.contains(&m) {
            metrics.push(m);
        }
    }
    if metrics.is_empty() {
        return None;
    }
    let mut headers = vec!["level".to_string()];
    for (name, unit) in &metrics {
        for (label, _) in sweeps {
            headers.push(format!("{label} {}", throughput_label(name, unit)));
        }
    }
    let mut table = Table::new(headers, Align::Right);
    for level in all_levels(sweeps) {
        let mut cells = vec![Cell::label(level)];
        for (name, unit) in &metrics {
            for (_, s) in sweeps {
                cells.push(
                    s.rows
                        .iter()
                        .find(|r| r.level == level)
                        .map_or("-".into(), |r| figure(&r.throughput, name, unit))
                        .into(),
                );
            }
        }
        table.push_row(cells);
    }
    Some(table)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::table::{Markup, Terminal};

    /// A traced sweep on 2 CPUs over levels 1 to 128, with figures as wide as a long, loaded
    /// run's (millions of samples, latencies in ms, missed periods and dropped samples).
    fn wide_sweep() -> SweepRecord {
        let levels = ["1", "2", "4", "8", "16", "32", "64", "128"];
        let rows = levels
            .iter()
            .map(|level| SweepRow {
                level: level.to_string(),
                run_dir: format!("level-{level}"),
                throughput: Vec::new(),
                threads: (0..2)
                    .map(|cpu| SweepThread {
                        cpu,
                        samples: 86_400_000,
                        min_ns: Some(-1_250),
                        p99_ns: Some(812_345),
                        max_ns: Some(123_456_789),
                        missed_periods: 1_234_567,
                        dropped_records: 7_654_321,
                        irq_p99_ns: Some(45_678),
                        irq_max_ns: Some(98_765_432),
                    })
                    .collect(),
            })
            .collect();
        SweepRecord {
            format: 1,
            load_template: "cpu:workers={}".into(),
            levels: levels.iter().map(|l| l.to_string()).collect(),
            load_only: false,
            rows,
            warnings: Vec::new(),
            ended: None,
            end_reason: None,
        }
    }

    fn widest(text: &str) -> usize {
        text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
    }

    /// Issue 42: the sweep table and the sweep comparison (three traced sweeps) fit 100
    /// columns on the terminal, as the run summary does: the latency table of 2 traced CPUs
    /// is wider, so it is written in parts, each with the level, run and CPU columns.
    #[test]
    fn the_sweep_tables_fit_100_columns() {
        let s = wide_sweep();
        let table = Terminal.render(&latency_table(&s, |_| String::new()));
        assert!(widest(&table) <= 100, "{}:\n{table}", widest(&table));
        // Every figure is still there, and every part names its rows.
        let headers = table
            .lines()
            .filter(|l| l.trim_start().starts_with("level"))
            .collect::<Vec<_>>();
        assert!(headers.len() >= 2, "{table}");
        assert!(
            headers
                .iter()
                .all(|h| h.contains("run") && h.contains("CPU"))
        );
        for word in [
            "IRQ max",
            "missed periods",
            "dropped",
            "98.77 ms",
            "7654321",
        ] {
            assert!(table.contains(word), "{word}:\n{table}");
        }
        let sweeps: Vec<(String, &SweepRecord)> = ["A", "B", "C"]
            .iter()
            .map(|l| (l.to_string(), &s))
            .collect();
        let table = Terminal.render(&comparison_table(&sweeps));
        assert!(widest(&table) <= 100, "{}:\n{table}", widest(&table));
    }
}

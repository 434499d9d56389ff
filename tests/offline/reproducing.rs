//! docs/reproducing.md's commands for the source documents' files and figures, run on
//! constructed runs whose every sample is known, and the numbers they print re-derived from
//! those samples (as the report tests re-derive the plots from the tables).

use crate::common::*;
use crate::sample_fixture::{documented, with_sample_log};
use jitterlab::format::samplelog::SampleRecord;
use jitterlab::results::synthetic::{START_MONOTONIC_NS, SyntheticRun, write_run};
use std::path::Path;

const MS: u64 = 1_000_000;

/// A run on CPUs 0 and 1 at 1 ms with `--wake wake` and `--interval-step step_ns`, whose
/// samples.bin holds `records`. run.json is the synthetic run's, with the plan's wake method
/// and step set.
fn run_with_samples(dir: &Path, wake: &str, step_ns: u64, records: &[SampleRecord]) {
    let run = SyntheticRun {
        cpus: vec![0, 1],
        interval_ns: MS,
        log_interval_ns: 1_000 * MS,
        duration_ns: 2_000 * MS,
        phases: vec![],
        loads: vec![],
        warnings: vec![],
        seed: 42,
    };
    let mut record = write_run(dir, &run, |_, _, _| 20_000).unwrap();
    record.plan.wake = wake.into();
    record.plan.interval_step_ns = step_ns;
    with_sample_log(dir, record, records);
}

/// The measuring loop's arithmetic (measure/cycle.rs) for an absolute method: due times on the
/// grid, `step_ns` more each wakeup, the periods a late wakeup passed skipped. Returns the
/// records and each one's wake time.
fn absolute_thread(cpu: u32, step_ns: u64, latencies: &[i64]) -> Vec<(SampleRecord, u64)> {
    let (mut due, mut interval) = (START_MONOTONIC_NS, MS);
    let mut out = Vec::new();
    for (seq, &latency) in latencies.iter().enumerate() {
        let missed = (latency.max(0) as u64) / interval;
        out.push((
            SampleRecord {
                cpu,
                missed: missed as u32,
                seq: seq as u64,
                expected_ns: due,
                latency_ns: latency,
                irq_latency_ns: None,
            },
            (due as i64 + latency) as u64,
        ));
        due += interval * (missed + 1) + step_ns;
        interval += step_ns;
    }
    out
}

/// FirmTimers' `measure_latency` prints per wakeup when the sleep began, the due time it
/// asked for, when it woke and the latency: `export --format csv` has each (the sleep start
/// the previous wakeup's clock read, the wake time due plus latency), and the awk line of
/// docs/reproducing.md prints them as its five columns.
#[test]
fn firmtimers_columns_are_the_sleep_start_due_wake_and_latency() {
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("firm");
    let step = 100_000;
    // CPU 0 with a 2.5 ms spike (two periods missed); CPU 1 with its record 2 dropped.
    let cpu0 = absolute_thread(0, step, &[20_000, 2_500_000, 15_000, 31_000]);
    let mut cpu1 = absolute_thread(1, step, &[12_000, 14_000, 16_000, 18_000]);
    cpu1.remove(2);
    let mut records: Vec<SampleRecord> = Vec::new();
    for i in 0..4 {
        records.extend(cpu0.get(i).map(|r| r.0));
        records.extend(cpu1.get(i).map(|r| r.0));
    }
    run_with_samples(&dir, "clock-nanosleep", step, &records);
    let o = jitterlab(&["export", dir.to_str().unwrap(), "--format", "csv"]);
    assert!(o.status.success(), "{}", text(&o));
    let csv = String::from_utf8(o.stdout).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "cpu,seq,expected_ns,time_s,latency_ns,irq_latency_ns,missed_periods,sleep_start_ns,wake_ns"
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), records.len());
    for (cpu, thread) in [(0u32, &cpu0), (1, &cpu1)] {
        let mine: Vec<&Vec<&str>> = rows.iter().filter(|r| r[0] == cpu.to_string()).collect();
        assert_eq!(mine.len(), thread.len());
        for (k, (row, (s, wake))) in mine.iter().zip(thread.iter()).enumerate() {
            assert_eq!(row[2], s.expected_ns.to_string());
            assert_eq!(row[8], wake.to_string(), "CPU {cpu} row {row:?}");
            // The sleep began after the previous wakeup's read; not known for the first
            // (the thread's setup reads no clock) nor after a dropped record.
            let previous = (k > 0 && thread[k - 1].0.seq + 1 == s.seq).then(|| thread[k - 1].1);
            assert_eq!(
                row[7],
                previous.map_or(String::new(), |w| w.to_string()),
                "CPU {cpu} row {row:?}"
            );
        }
    }
    // The spike's wakeup: due 1.1 ms after the first, woke 2.5 ms late; the next sleep began
    // then, and its due time skipped the two periods that passed.
    let spike = rows.iter().find(|r| r[0] == "0" && r[1] == "1").unwrap();
    assert_eq!(spike[6], "2");
    assert_eq!(
        spike[8],
        (START_MONOTONIC_NS + 1_100_000 + 2_500_000).to_string()
    );

    // The five columns, as docs/reproducing.md prints them.
    documented(
        "reproducing.md",
        "jitterlab export firm --format csv | awk -F, 'NR > 1 {print $2, $8, $3, $9, $5}'",
    );
    let five: Vec<String> = csv
        .lines()
        .skip(1)
        .map(|l| {
            let c: Vec<&str> = l.split(',').collect();
            [c[1], c[7], c[2], c[8], c[4]].join(" ")
        })
        .collect();
    assert_eq!(
        five[2],
        format!(
            "1 {} {} {} 2500000",
            START_MONOTONIC_NS + 20_000,
            START_MONOTONIC_NS + 1_100_000,
            START_MONOTONIC_NS + 3_600_000
        )
    );
}

/// A relative method's first sleep starts at the read its due time came from (due minus the
/// period); an IPC method's wake time is not in the log (its latency counts from the sender's
/// read): both columns empty.
#[test]
fn relative_first_sleeps_are_known_and_ipc_wakes_are_not() {
    let base = tempfile::tempdir().unwrap();
    let record = |cpu, seq, expected_ns, latency_ns| SampleRecord {
        cpu,
        missed: 0,
        seq,
        expected_ns,
        latency_ns,
        irq_latency_ns: None,
    };
    let t0 = START_MONOTONIC_NS + MS;
    let records = [
        record(0, 0, t0, 40_000),
        record(0, 1, t0 + 40_000 + MS, 9_000),
    ];
    let rel = base.path().join("rel");
    run_with_samples(&rel, "clock-nanosleep-rel", 0, &records);
    let o = jitterlab(&["export", rel.to_str().unwrap(), "--format", "csv"]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    let rows: Vec<&str> = out.lines().skip(1).collect();
    assert!(
        rows[0].ends_with(&format!(",{},{}", t0 - MS, t0 + 40_000)),
        "{out}"
    );
    assert!(
        rows[1].ends_with(&format!(",{},{}", t0 + 40_000, t0 + 49_000 + MS)),
        "{out}"
    );
    let ipc = base.path().join("ipc");
    let ipc_method = jitterlab::measure::wake::WAKE_METHODS
        .iter()
        .find(|m| m.schedule == jitterlab::measure::wake::Schedule::Sender)
        .unwrap()
        .name;
    run_with_samples(&ipc, ipc_method, 0, &records);
    let o = jitterlab(&["export", ipc.to_str().unwrap(), "--format", "csv"]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(out.lines().skip(1).all(|l| l.ends_with(",,")), "{out}");
}

/// SH7780's file (`time latency irq_latency`, one CPU): `--format columns` has a CPU column
/// and `--cpus` keeps one CPU's rows; a CPU the run did not measure is refused.
#[test]
fn sh7780_columns_per_cpu() {
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("sh7780-fig6");
    let mut records = Vec::new();
    for seq in 0..5u64 {
        for cpu in 0..2u32 {
            records.push(SampleRecord {
                cpu,
                missed: 0,
                seq,
                expected_ns: START_MONOTONIC_NS + seq * 10 * MS,
                latency_ns: 10_000 + i64::from(cpu) * 1_000 + seq as i64,
                irq_latency_ns: Some(2_000 + i64::from(cpu)),
            });
        }
    }
    run_with_samples(&dir, "clock-nanosleep", 0, &records);
    let file = base.path().join("fig6-cpu1.txt");
    documented(
        "reproducing.md",
        "jitterlab export sh7780-fig6 --format columns --cpus 1 -o fig6-cpu1.txt",
    );
    let o = jitterlab(&[
        "export",
        dir.to_str().unwrap(),
        "--format",
        "columns",
        "--cpus",
        "1",
        "-o",
        file.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let out = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "# time_s latency_us irq_latency_us cpu");
    assert_eq!(lines.len(), 6, "{out}");
    for (seq, line) in lines[1..].iter().enumerate() {
        assert_eq!(
            *line,
            format!(
                "{:.6} {:.6} 2.001000 1",
                seq as f64 * 0.01,
                (11_000 + seq) as f64 / 1e3
            )
        );
    }
    // Every CPU without --cpus, the CPU fourth.
    let o = jitterlab(&["export", dir.to_str().unwrap(), "--format", "columns"]);
    let out = String::from_utf8(o.stdout).unwrap();
    assert_eq!(out.lines().nth(1), Some("0.000000 10.000000 2.000000 0"));
    assert_eq!(out.lines().count(), 11);
    for (args, what) in [
        (vec!["--format", "columns", "--cpus", "3"], "CPU 3"),
        (vec!["--format", "json", "--cpus", "1"], "--cpus"),
        (vec!["--format", "csv", "--cpus", "x"], "--cpus x"),
    ] {
        let mut all = vec!["export", dir.to_str().unwrap()];
        all.extend(args);
        let o = jitterlab(&all);
        assert_eq!(o.status.code(), Some(2), "{all:?}: {}", text(&o));
        assert!(text(&o).contains(what), "{all:?}: {}", text(&o));
    }
}

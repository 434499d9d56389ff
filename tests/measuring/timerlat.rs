//! `jitterlab timerlat` measuring for real, briefly: its Thr column against every sample of the
//! result directory, re-bucketed here by rtla's rule (us truncated, bucket = value / size); by
//! default (tracefs is usable here, as root) with rtla's IRQ column too, from the trace.

use crate::common::{exclusive, jitterlab, run_json, sample_records, text};

#[test]
fn timerlat_prints_the_runs_samples_as_rtla_buckets_them() {
    let _g = exclusive();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let out = jitterlab(&[
        "timerlat",
        "hist",
        "-c",
        "0",
        "-d",
        "2",
        "-b",
        "2",
        "-E",
        "50",
        "--jitterlab-out",
        dir.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // Issue 42: rtla's IRQ column by default wherever jitterlab can trace (this host can).
    assert!(
        stderr.contains("the IRQ columns are the timer IRQ latency from jitterlab's trace"),
        "{stderr}"
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.starts_with("# RTLA timerlat histogram\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("\nIndex   IRQ-000   Thr-000\n"),
        "no IRQ column: {stdout}"
    );
    let run = run_json(&dir);
    assert_eq!(run["plan"]["policy"], "fifo");
    // Independently: every sample in us, truncated, in buckets of 2 us, 50 of them.
    let us: Vec<u64> = sample_records(&dir)
        .iter()
        .map(|r| r.latency_ns.max(0) as u64 / 1000)
        .collect();
    assert_eq!(
        us.len() as u64,
        run["threads"][0]["samples"].as_u64().unwrap()
    );
    // Columns: IRQ-000 (1), Thr-000 (2).
    let cell = |label: &str, column: usize| -> u64 {
        stdout
            .lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no {label} row: {stdout}"))
            .split_whitespace()
            .nth(column)
            .unwrap()
            .parse()
            .unwrap()
    };
    let row = |label: &str| cell(label, 2);
    // The IRQ column counts the samples the trace joined: those with an IRQ latency.
    let irq = sample_records(&dir)
        .iter()
        .filter(|r| r.irq_latency_ns.is_some())
        .count() as u64;
    assert_eq!(cell("count:", 1), irq, "{stdout}");
    assert!(irq > 0, "no sample joined with its timer IRQ: {stdout}");
    for bucket in 0..50u64 {
        let n = us.iter().filter(|&&v| v / 2 == bucket).count() as u64;
        let printed = stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(&(bucket * 2).to_string()))
            .map(|l| l.split_whitespace().nth(2).unwrap().parse::<u64>().unwrap());
        assert_eq!(printed.unwrap_or(0), n, "bucket {bucket}: {stdout}");
    }
    assert_eq!(
        row("over:"),
        us.iter().filter(|&&v| v >= 100).count() as u64
    );
    assert_eq!(row("count:"), us.len() as u64);
    assert_eq!(row("min:"), *us.iter().min().unwrap());
    assert_eq!(row("max:"), *us.iter().max().unwrap());
    assert_eq!(row("avg:"), us.iter().sum::<u64>() / us.len() as u64);
    assert_eq!(
        row("max:"),
        run["threads"][0]["max_ns"].as_u64().unwrap() / 1000
    );
}

//! `run --summary-every N` (FirmTimers `measure_latency -w N`): each `wakeup_summary` of a real
//! run holds exactly the figures of its block of the thread's samples as samples.bin has them,
//! the last shorter block included, and `export --format summaries` prints the same; bad values
//! are refused with exit 2 naming the option.

use crate::common;

use common::*;
use jitterlab::format::events::{Event, read_events};
use jitterlab::format::samplelog::{SampleLogReader, SampleRecord};
use jitterlab::format::wakeup_summary::WakeupSummary;
use std::collections::BTreeMap;

const EVERY: usize = 137;

/// The summary the recorder should have written for `block` (consecutive samples of one CPU),
/// computed from the samples themselves.
fn expected(block: &[SampleRecord]) -> (usize, u64, u64, u64, u64, u64, i64, i64, f64, i64, u64) {
    let (first, last) = (block[0], block[block.len() - 1]);
    let sum: i64 = block.iter().map(|s| s.latency_ns).sum();
    (
        first.cpu as usize,
        first.seq,
        last.seq,
        block.len() as u64,
        first.expected_ns,
        last.expected_ns,
        block.iter().map(|s| s.latency_ns).min().unwrap(),
        sum,
        sum as f64 / block.len() as f64,
        block.iter().map(|s| s.latency_ns).max().unwrap(),
        block.iter().map(|s| u64::from(s.missed)).sum(),
    )
}

fn figures(s: &WakeupSummary) -> (usize, u64, u64, u64, u64, u64, i64, i64, f64, i64, u64) {
    (
        s.cpu,
        s.first_seq,
        s.last_seq,
        s.samples,
        s.first_due_ns,
        s.last_due_ns,
        s.min_ns,
        s.sum_ns,
        s.mean(),
        s.max_ns,
        s.missed_periods,
    )
}

#[test]
fn each_summary_holds_exactly_its_samples() {
    if !realtime_available("each_summary_holds_exactly_its_samples") {
        return;
    }
    let _g = exclusive();
    let (_base, out) = temp_out();
    let every = EVERY.to_string();
    let o = jitterlab(&[
        "run",
        "--duration",
        "1s",
        "--interval",
        "500us",
        "--summary-every",
        &every,
        "--samples",
        "--samples-format",
        "1",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let run = run_json(&out);
    assert_eq!(run["plan"]["summary_every"], EVERY as u64);
    assert_eq!(run["plan"]["samples_format"], 1);

    let mut per_cpu: BTreeMap<usize, Vec<SampleRecord>> = BTreeMap::new();
    for r in SampleLogReader::open(&out.join("samples.bin")).unwrap() {
        let r = r.unwrap();
        per_cpu.entry(r.cpu as usize).or_default().push(r);
    }
    let summaries: Vec<WakeupSummary> = read_events(&out.join("events.jsonl"))
        .unwrap()
        .into_iter()
        .filter_map(|e| match e {
            Event::WakeupSummary(s) => Some(s),
            _ => None,
        })
        .collect();
    assert_eq!(per_cpu.len(), online_cpus().len());
    let mut rows = 0;
    for (cpu, samples) in &per_cpu {
        let got: Vec<&WakeupSummary> = summaries.iter().filter(|s| s.cpu == *cpu).collect();
        let blocks: Vec<&[SampleRecord]> = samples.chunks(EVERY).collect();
        assert!(
            samples.len() > 3 * EVERY,
            "cpu{cpu}: {} samples",
            samples.len()
        );
        assert_eq!(got.len(), blocks.len(), "cpu{cpu}: one summary per block");
        for (s, block) in got.iter().zip(&blocks) {
            assert_eq!(figures(s), expected(block), "cpu{cpu}");
            // As written, before JSON reading may round its last digit.
            assert!(
                (s.mean_ns - s.mean()).abs() <= s.mean().abs() * 1e-15,
                "{s:?}"
            );
            // No record was dropped, so each block's sequence numbers are consecutive.
            assert_eq!(s.dropped_records, 0);
            assert_eq!(s.last_seq - s.first_seq + 1, s.samples);
        }
        // The last block is written even though it is shorter (unless the run's samples
        // happened to be a whole number of blocks).
        let last = got.last().unwrap();
        assert_eq!(
            last.samples as usize,
            samples.len() - EVERY * (blocks.len() - 1)
        );
        assert_eq!(last.last_seq, samples.last().unwrap().seq);
        assert_eq!(
            thread(&run, *cpu)["samples"].as_u64().unwrap(),
            samples.len() as u64
        );
        rows += got.len();
    }

    // The export prints every summary, in the order written, the mean read back exactly.
    let o = jitterlab(&["export", out.to_str().unwrap(), "--format", "summaries"]);
    assert!(o.status.success(), "{}", text(&o));
    let csv = String::from_utf8(o.stdout).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "cpu,first_seq,last_seq,samples,dropped_records,first_due_ns,last_due_ns,span_ns,min_ns,mean_ns,max_ns,sum_ns,missed_periods"
    );
    let exported: Vec<Vec<String>> = lines
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect();
    assert_eq!(exported.len(), rows);
    // In the order written (streamed as read: N9), which is events.jsonl's.
    for (row, s) in exported.iter().zip(&summaries) {
        assert_eq!(row[0].parse::<usize>().unwrap(), s.cpu);
        assert_eq!(row[1].parse::<u64>().unwrap(), s.first_seq);
        assert_eq!(row[3].parse::<u64>().unwrap(), s.samples);
        assert_eq!(
            row[7].parse::<u64>().unwrap(),
            s.last_due_ns - s.first_due_ns
        );
        assert_eq!(row[8].parse::<i64>().unwrap(), s.min_ns);
        assert_eq!(row[9].parse::<f64>().unwrap(), s.mean());
        assert_eq!(row[10].parse::<i64>().unwrap(), s.max_ns);
        assert_eq!(row[11].parse::<i64>().unwrap(), s.sum_ns);
    }
}

#[test]
fn bad_values_are_refused_naming_the_option() {
    for bad in ["0", "-3", "many", "1.5"] {
        let o = jitterlab(&["run", "--duration", "1s", "--summary-every", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", text(&o));
        assert!(text(&o).contains("--summary-every"), "{bad}: {}", text(&o));
    }
    // A monitor runs without end: it does not take the option at all (clap names it).
    let o = jitterlab(&["monitor", "--summary-every", "100"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("unexpected argument '--summary-every'"),
        "{}",
        text(&o)
    );
}

#[test]
fn a_run_without_summaries_has_none_to_export() {
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("run");
    write_known_run(&dir, &[0], 2, 100, uniform_10_50, 1, 0);
    let o = jitterlab(&["export", dir.to_str().unwrap(), "--format", "summaries"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("run again with --summary-every N"),
        "{}",
        text(&o)
    );
}

//! Result directories built in the test from known distributions, with the crate's own writers
//! (run.json through `ResultDir`, latency.hlog through `HlogWriter`, statistics through
//! `LatencyStats`), so that compare, budgets and exports can be checked against ground truth.

#![allow(dead_code)]

use jitterlab::analysis::quantile::SplitMix64;
use jitterlab::record::hlog::{self, HlogWriter};
use jitterlab::record::stats::LatencyStats;
use jitterlab::results::ResultDir;
use jitterlab::results::run_record::{RunRecord, ThreadSummary};
use std::path::Path;
use std::time::{Duration, SystemTime};

/// A latency distribution: a sample from a uniform draw u in [0, 1).
pub type Dist = fn(f64) -> f64;

/// Uniform on [10 us, 50 us).
pub fn uniform_10_50(u: f64) -> f64 {
    10_000.0 + 40_000.0 * u
}

/// The same, 1.5 times slower.
pub fn uniform_15_75(u: f64) -> f64 {
    1.5 * uniform_10_50(u)
}

/// The true q-quantile of uniform [lo, hi).
pub fn uniform_quantile(lo: f64, hi: f64, q: f64) -> f64 {
    lo + (hi - lo) * q
}

pub struct Spec {
    pub cpus: Vec<usize>,
    /// One-second intervals per CPU.
    pub seconds: usize,
    pub per_second: usize,
    pub dist: Dist,
    pub seed: u64,
    pub missed_periods: u64,
}

/// A minimal, valid run.json for `threads`.
pub fn record(cpus: &[usize], seconds: usize, threads: Vec<ThreadSummary>) -> RunRecord {
    let mut r: RunRecord = serde_json::from_value(serde_json::json!({
        "format": 1, "jitterlab_version": "test", "command_line": ["constructed"],
        "plan": {"cpus": cpus, "policy": "fifo", "priority": 95, "deadline_runtime_ns": null,
                 "wake": "clock-nanosleep", "clock": "monotonic", "interval_ns": 1000000,
                 "distance_ns": 0, "interval_step_ns": 0, "duration_ns": seconds as u64 * 1_000_000_000,
                 "loops": null, "deadline_ns": null, "log_interval_ns": 1000000000, "loads": [],
                 "samples": false, "ring_size": 1024, "mlock": true, "pm_qos_us": null},
        "system": null,
        "environment": {"memory_locked": true, "stack_prefaulted_bytes": 0,
                        "pm_qos": {"held_us": null, "previous_us": null, "error": null}},
        "started_utc": "2026-01-01T00:00:00Z", "ended_utc": null, "start_monotonic_ns": 0,
        "duration_ns": seconds as u64 * 1_000_000_000,
        "ended": "completed", "end_reason": null, "threads": [], "loads": [], "warnings": []
    }))
    .expect("a valid record");
    r.threads = threads;
    r
}

/// Writes a result directory at `dir` and returns its record.
pub fn write_run(dir: &Path, spec: &Spec) -> RunRecord {
    let rd = ResultDir::create(dir, "--out").unwrap().keep();
    let mut w = HlogWriter::create(&rd.file(hlog::FILE_NAME)).unwrap();
    w.begin(
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000),
        "constructed",
    )
    .unwrap();
    let mut rng = SplitMix64::new(spec.seed);
    let mut totals: Vec<LatencyStats> = spec.cpus.iter().map(|_| LatencyStats::default()).collect();
    for second in 0..spec.seconds {
        for (k, &cpu) in spec.cpus.iter().enumerate() {
            let mut interval = LatencyStats::default();
            for _ in 0..spec.per_second {
                let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                let v = (spec.dist)(u).round() as i64;
                interval.record(v);
                totals[k].record(v);
            }
            w.write_interval(
                &format!("cpu{cpu}"),
                Duration::from_secs(second as u64),
                Duration::from_secs(1),
                &interval.histogram,
            )
            .unwrap();
        }
    }
    let threads = spec
        .cpus
        .iter()
        .zip(&totals)
        .enumerate()
        .map(|(i, (&cpu, s))| ThreadSummary {
            cpu,
            thread_index: i,
            tid: 100 + i as i32,
            interval_ns: 1_000_000,
            deadline_ns: 1_000_000,
            latency: s.summary(),
            missed_periods: spec.missed_periods,
            dropped_records: 0,
            deadline_misses: 0,
            early_wakeups: 0,
            end: "completed".into(),
            irq_latency: None,
        })
        .collect();
    let r = record(&spec.cpus, spec.seconds, threads);
    rd.write_run_record(&r).unwrap();
    r
}

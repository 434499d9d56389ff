//! The file of `oslat --json=FILE` (rt-tests 2.x): per thread `cpu`, `min`, `avg`, `max` (us),
//! `duration` (s) and a `histogram` of buckets `"k": count`. oslat measures the gaps of a busy
//! loop: a gap of g us goes to bucket floor(g) + 1 (printed `k (us)`), its min/max are in that
//! same unit, and the last bucket (`-b`, 32 by default) also holds every longer gap.

use super::{
    Imported, SourceFormat, SourceHistogram, SourceThread, add_counts, option_value, oslat_facts,
    rt_tests_json, rt_tests_threads, rt_tests_time,
};
use serde_json::Value;

pub static FORMAT: SourceFormat = SourceFormat {
    name: "oslat-json",
    help: "the file of oslat --json=FILE",
    parse,
};

pub fn parse(text: &str) -> Result<Imported, String> {
    let (v, command_line) = rt_tests_json(text, "oslat")?;
    if command_line.iter().any(|a| a == "-B" || a == "--bias") {
        return Err("it was written with -B (bias), which shifts every bucket by an estimate oslat does not record; capture it without -B".into());
    }
    let last_bucket: u64 = option_value(&command_line, "-b", "--bucket-size")
        .and_then(|n| n.parse().ok())
        .unwrap_or(32);
    let entries = rt_tests_threads(&v)?;
    let mut threads = Vec::new();
    let mut duration_ns = None;
    for (index, t) in entries {
        let field = |name: &str| t.get(name).and_then(Value::as_f64);
        let cpu = t
            .get("cpu")
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("thread {index} has no \"cpu\""))? as usize;
        let h = t
            .get("histogram")
            .and_then(Value::as_object)
            .ok_or_else(|| format!("thread {index} has no \"histogram\" object"))?;
        let mut buckets = Vec::new();
        let mut overflow = 0;
        for (k, c) in h {
            let us: u64 = k.parse().map_err(|_| {
                format!("thread {index}: histogram key '{k}' is not a bucket number")
            })?;
            let c = c.as_u64().ok_or_else(|| {
                format!("thread {index}: the count of bucket {k} is not an integer")
            })?;
            if us >= last_bucket {
                // The last bucket: this many us, or more (oslat's "including overflows").
                overflow = add_counts([overflow, c]).map_err(|e| format!("thread {index}: {e}"))?;
            } else {
                buckets.push((us, c));
            }
        }
        buckets.sort_unstable();
        if let Some(d) = field("duration") {
            // Seconds as printed; beyond u64 ns (584 years) is no duration a run had.
            duration_ns = Some(
                Some((d * 1e9).round())
                    .filter(|ns| (0.0..u64::MAX as f64).contains(ns))
                    .ok_or_else(|| {
                        format!("thread {index}: duration {d} s is not a run's length")
                    })? as u64,
            );
        }
        threads.push(SourceThread {
            cpu,
            latency: SourceHistogram {
                unit_ns: 1000,
                buckets,
                overflow,
                overflow_from: last_bucket,
                count: None,
                min: field("min"),
                mean: field("avg"),
                max: field("max"),
                quantiles: Vec::new(),
            },
            irq: None,
            kernel_thread: None,
            interval_ns: None,
        });
    }
    if threads.is_empty() {
        return Err("its \"thread\" object is empty".into());
    }
    let mut warnings = vec![
        "oslat measures the gaps of a busy loop, not timer wakeups: each sample is one loop gap, in whole us rounded up (oslat's buckets)".to_string(),
    ];
    let start = rt_tests_time(&v, "start_time", &mut warnings);
    let facts = oslat_facts(&command_line);
    Ok(Imported {
        format: &FORMAT,
        threads,
        command_line,
        started: start,
        duration_ns,
        stopped: None,
        facts,
        failed: v
            .get("return_code")
            .and_then(Value::as_i64)
            .is_some_and(|c| c != 0),
        system: v.get("sysinfo").cloned().unwrap_or(Value::Null),
        warnings,
    })
}

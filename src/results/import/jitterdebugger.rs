//! jitterdebugger's `results.json` (written with `-o DIR`), format versions 1 to 3:
//!
//! ```text
//! { "version": 3,
//!   "sysinfo": { "sysname", "nodename", "release", "version", "machine", "cpus_online",
//!                "resolution_in_ns": 1000 },                 (version 3; before: always us)
//!   "cpu": { "0": { "histogram": { "12": 4711, ... }, "count": N, "min": m, "max": M, "avg": a } } }
//! ```
//!
//! Values are in `resolution_in_ns` units (1000: us; 1 with `--nanosec`), truncated. The
//! histogram has 10⁶ / resolution buckets (1000 us, or 10⁶ ns: one millisecond either way) and
//! prints only the non-empty ones; a longer latency is counted in `count` but in no bucket. The
//! `cpu` keys are jitterdebugger's thread numbers: thread i runs on the i-th CPU of its affinity
//! mask (all online CPUs by default, so thread i is CPU i), which the file does not record.

use super::Recognise;
use super::{
    BadBucket, Imported, Parser, SourceFormat, SourceHistogram, SourceThread, add_counts,
    json_buckets, parse_json,
};
use serde_json::Value;

pub(crate) static FORMAT: SourceFormat = SourceFormat {
    name: "jitterdebugger",
    help: "jitterdebugger's results.json (jitterdebugger -o DIR)",
    parse: Parser::Text(parse),
    recognise: Recognise::Json(recognise, "cpu.N.histogram"),
    no_header: None,
};

/// No command line and no threads, but a `cpu` object.
fn recognise(tool: Option<&str>, doc: &serde_json::Value) -> bool {
    tool.is_none()
        && super::detect::first_thread(doc).is_none()
        && doc.get("cpu").is_some_and(|c| c.is_object())
}

/// jitterdebugger's histogram covers one millisecond in whichever resolution it measured.
const HISTOGRAM_SPAN_NS: u64 = 1_000_000;

pub(crate) fn parse(text: &str) -> Result<Imported, String> {
    let v = parse_json(text)?;
    let version = v.get("version").and_then(Value::as_u64);
    if let Some(version) = version.filter(|&n| n > 3) {
        return Err(format!(
            "it is results.json version {version}; jitterlab reads versions 1 to 3"
        ));
    }
    let sysinfo = v.get("sysinfo").cloned().unwrap_or(Value::Null);
    let resolution_ns = match sysinfo.get("resolution_in_ns") {
        None => 1000,
        Some(r) => r
            .as_u64()
            .filter(|r| [1, 1000].contains(r))
            .ok_or_else(|| {
                format!("its resolution_in_ns is {r}; jitterdebugger measures in 1 or 1000 ns")
            })?,
    };
    let entries = thread_entries(&v, &sysinfo)?;
    let mut warnings = vec![
        "jitterdebugger's results.json numbers its threads, not CPUs: thread i is reported as CPU i (true with the default affinity, all online CPUs)".to_string(),
    ];
    let threads = entries
        .into_iter()
        .map(|(index, t)| thread(index, t, resolution_ns, &mut warnings))
        .collect::<Result<Vec<_>, _>>()?;
    if threads.is_empty() {
        return Err("its \"cpu\" object is empty".into());
    }
    Ok(Imported {
        system: sysinfo,
        warnings,
        ..Imported::new(&FORMAT, threads)
    })
}

/// The entries of the `cpu` object by thread number, each a thread jitterdebugger ran.
fn thread_entries<'v>(v: &'v Value, sysinfo: &Value) -> Result<Vec<(usize, &'v Value)>, String> {
    let cpus = v
        .get("cpu")
        .and_then(Value::as_object)
        .ok_or("it has no \"cpu\" object")?;
    let mut entries = cpus
        .iter()
        .map(|(k, t)| {
            k.parse::<usize>()
                .map(|i| (i, t))
                .map_err(|_| format!("cpu key '{k}' is not a thread number"))
        })
        .collect::<Result<Vec<_>, String>>()?;
    entries.sort_by_key(|&(i, _)| i);
    // Threads are numbered from 0, one per online CPU: a number beyond them is not a thread
    // jitterdebugger ran.
    if let Some(online) = sysinfo.get("cpus_online").and_then(Value::as_u64)
        && let Some(&(i, _)) = entries.iter().find(|&&(i, _)| i as u64 >= online)
    {
        return Err(format!(
            "thread {i} is out of range: its sysinfo says cpus_online {online}, so threads are 0 to {}",
            online.saturating_sub(1)
        ));
    }
    Ok(entries)
}

/// Thread `index`'s histogram (a latency beyond its millisecond is in `count` only, so
/// `count` minus the buckets are overflows) and figures, none for a thread without samples.
fn thread(
    index: usize,
    t: &Value,
    resolution_ns: u64,
    warnings: &mut Vec<String>,
) -> Result<SourceThread, String> {
    let histogram_end = HISTOGRAM_SPAN_NS / resolution_ns;
    let at = |e: String| format!("thread {index}: {e}");
    let count = t
        .get("count")
        .and_then(Value::as_u64)
        .ok_or_else(|| at("no \"count\"".into()))?;
    let h = t
        .get("histogram")
        .and_then(Value::as_object)
        .ok_or_else(|| at("no \"histogram\" object".into()))?;
    let mut buckets = json_buckets(h, Some(histogram_end), |bad, k| {
        at(match bad {
            BadBucket::BeyondEnd(end) => format!(
                "bucket {k} is beyond jitterdebugger's histogram (0 to {})",
                end - 1
            ),
            other => other.of_bucket_number(k),
        })
    })?;
    buckets.sort_unstable();
    let in_buckets = add_counts(buckets.iter().map(|&(_, c)| c)).map_err(at)?;
    let overflow = count.checked_sub(in_buckets).ok_or_else(|| {
        at(format!(
            "its histogram holds {in_buckets} samples but its count is {count}"
        ))
    })?;
    let seen = count > 0;
    let field = |name: &str| t.get(name).and_then(Value::as_f64).filter(|_| seen);
    if !seen {
        warnings.push(format!("thread {index} took no sample (count 0)"));
    }
    Ok(SourceThread::new(
        index,
        SourceHistogram {
            unit_ns: resolution_ns,
            buckets,
            overflow,
            overflow_from: histogram_end,
            count: Some(count),
            min: field("min"),
            mean: field("avg"),
            max: field("max"),
            ..SourceHistogram::default()
        },
    ))
}

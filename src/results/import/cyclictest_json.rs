//! The file of `cyclictest --json=FILE` (rt-tests 2.x): per thread `cycles`, `min`, `max`,
//! `avg` (us) and `cpu`, and with `-h N` a `histogram` object of 1 us buckets (`"latency in us":
//! count`, zero buckets left out). `cycles` counts every wakeup; the histogram leaves out the
//! ones at or above N us, so `cycles − Σ histogram` are overflows.

use super::Recognise;
use super::{
    BadBucket, Imported, Parser, SourceFormat, SourceHistogram, SourceThread, add_counts,
    cyclictest_facts, json_buckets, option_value, rt_tests_json, rt_tests_threads, rt_tests_time,
};
use serde_json::Value;

pub static FORMAT: SourceFormat = SourceFormat {
    name: "cyclictest-json",
    help: "the file of cyclictest --json=FILE",
    parse: Parser::Text(parse),
    recognise: Recognise::Json(recognise, "thread.N.cycles"),
    no_header: None,
};

/// Named by its command line, or a thread with `cycles` (unless oslat's command line).
fn recognise(tool: Option<&str>, doc: &serde_json::Value) -> bool {
    tool == Some("cyclictest")
        || (tool != Some("oslat")
            && super::detect::first_thread(doc).is_some_and(|t| t.get("cycles").is_some()))
}

pub fn parse(text: &str) -> Result<Imported, String> {
    let (v, command_line) = rt_tests_json(text, "cyclictest")?;
    if command_line.iter().any(|a| a == "-N" || a == "--nsecs") {
        return Err("it was written with -N (nanoseconds), whose histogram units differ; capture it without -N".into());
    }
    let histogram_size: Option<u64> = option_value(&command_line, "-h", "--histogram")
        .or_else(|| option_value(&command_line, "-H", "--histofall"))
        .and_then(|n| n.parse().ok());
    let mut threads = Vec::new();
    let indices = rt_tests_threads(&v)?;
    let mut warnings = Vec::new();
    for (index, t) in indices {
        threads.push(thread(index, t, histogram_size, &mut warnings)?);
    }
    if threads.is_empty() {
        return Err("its \"thread\" object is empty".into());
    }
    if threads.iter().all(|t| t.latency.buckets.is_empty()) {
        warnings.push("the file has no histograms (cyclictest ran without -h): percentiles are absent, and latency.hlog is not written".into());
    }
    let start = rt_tests_time(&v, "start_time", &mut warnings);
    let end = rt_tests_time(&v, "end_time", &mut warnings);
    let duration_ns = match (start, end) {
        // Both stamps have whole seconds only.
        (Some(s), Some(e)) => Some(
            e.duration_since(s)
                .map_err(|_| "its end_time is before its start_time".to_string())?
                .as_nanos() as u64,
        ),
        _ => None,
    };
    Ok(Imported {
        facts: cyclictest_facts(&command_line),
        command_line,
        started: start,
        duration_ns,
        failed: v
            .get("return_code")
            .and_then(Value::as_i64)
            .is_some_and(|c| c != 0),
        system: v.get("sysinfo").cloned().unwrap_or(Value::Null),
        warnings,
        ..Imported::new(&FORMAT, threads)
    })
}

/// Thread `index`'s object: its CPU, its histogram (overflows are the cycles beyond it) and
/// its figures, none for a thread that never ran. What the file leaves unsaid is added to
/// `warnings`.
fn thread(
    index: usize,
    t: &Value,
    histogram_size: Option<u64>,
    warnings: &mut Vec<String>,
) -> Result<SourceThread, String> {
    let field = |name: &str| t.get(name).and_then(Value::as_f64);
    let cycles = t
        .get("cycles")
        .and_then(Value::as_u64)
        .ok_or_else(|| format!("thread {index} has no integer \"cycles\""))?;
    let cpu = match t.get("cpu").and_then(Value::as_u64) {
        Some(c) => c as usize,
        None => {
            warnings.push(format!(
                "thread {index} does not name its CPU; it is reported as CPU {index}"
            ));
            index
        }
    };
    let buckets = histogram_buckets(index, t)?;
    let in_range =
        add_counts(buckets.iter().map(|&(_, c)| c)).map_err(|e| format!("thread {index}: {e}"))?;
    let overflow = if buckets.is_empty() {
        0
    } else {
        cycles.checked_sub(in_range).ok_or_else(|| {
            format!("thread {index}: the histogram holds {in_range} samples, more than its {cycles} cycles")
        })?
    };
    // A thread that never ran: cycles 0, avg -nan (null here), min and max still at
    // cyclictest's initial values. Its figures are no latencies.
    let never_ran = cycles == 0;
    if never_ran {
        warnings.push(format!(
            "thread {index} (CPU {cpu}) never ran: 0 cycles{}; it is imported with no samples",
            if t.get("avg").is_some_and(Value::is_null) {
                ", avg -nan"
            } else {
                ""
            }
        ));
    }
    let field = |name: &str| field(name).filter(|_| !never_ran);
    let overflow_from = histogram_size
        .or_else(|| buckets.last().map(|&(v, _)| v + 1))
        .unwrap_or(0);
    Ok(SourceThread::new(
        cpu,
        SourceHistogram {
            unit_ns: 1000,
            buckets,
            overflow,
            overflow_from,
            count: Some(cycles),
            min: field("min"),
            mean: field("avg"),
            max: field("max"),
            quantiles: Vec::new(),
            stddev: None,
        },
    ))
}

/// Thread `index`'s `histogram` object (`-h N`), ascending; none without one.
fn histogram_buckets(index: usize, t: &Value) -> Result<Vec<(u64, u64)>, String> {
    let Some(h) = t.get("histogram") else {
        return Ok(Vec::new());
    };
    let h = h
        .as_object()
        .ok_or_else(|| format!("thread {index}: \"histogram\" is not an object"))?;
    let mut buckets = json_buckets(h, None, |bad, k| match bad {
        BadBucket::Key => format!("thread {index}: histogram key '{k}' is not a latency in us"),
        _ => format!("thread {index}: histogram count of {k} us is not an integer"),
    })?;
    buckets.sort_unstable();
    Ok(buckets)
}

//! The file of `oslat --json=FILE` (rt-tests 2.x): per thread `cpu`, `min`, `avg`, `max` (us),
//! `duration` (s) and a `histogram` of buckets `"k": count`. oslat measures the gaps of a busy
//! loop: a gap of g us goes to bucket floor(g) + 1 (printed `k (us)`), its min/max are in that
//! same unit, and the last bucket (`-b`, 32 by default) also holds every longer gap.

use super::Recognise;
use super::{
    Imported, OSLAT_WARNING, OslatRelease, Parser, RunKind, SourceFormat, json_buckets,
    option_value, oslat_facts, oslat_thread, rt_tests_json, rt_tests_threads, rt_tests_time,
    seconds_to_ns,
};
use serde_json::Value;

pub(crate) static FORMAT: SourceFormat = SourceFormat {
    name: "oslat-json",
    help: "the file of oslat --json=FILE",
    parse: Parser::Text(parse),
    recognise: Recognise::Json(recognise, "thread.N.freq"),
    no_header: None,
};

/// Named by its command line, or a thread with `freq`.
fn recognise(tool: Option<&str>, doc: &serde_json::Value) -> bool {
    tool == Some("oslat")
        || super::detect::first_thread(doc).is_some_and(|t| t.get("freq").is_some())
}

pub(crate) fn parse(text: &str) -> Result<Imported, String> {
    let (v, command_line) = rt_tests_json(text, "oslat")?;
    if command_line.iter().any(|a| a == "-B" || a == "--bias") {
        return Err("it was written with -B (bias), which shifts every bucket by an estimate oslat does not record; capture it without -B".into());
    }
    let last_bucket: u64 = option_value(&command_line, "-b", "--bucket-size")
        .and_then(|n| n.parse().ok())
        .unwrap_or(32);
    let version = v.get("rt_test_version:").and_then(Value::as_str);
    let (release, ambiguous) = OslatRelease::of(version, None);
    let mut notes: Vec<String> = ambiguous.into_iter().collect();
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
        let rows = json_buckets(h, None, |bad, k| {
            format!("thread {index}: {}", bad.of_bucket_number(k))
        })?;
        let thread_ns = field("duration")
            .map(|d| {
                seconds_to_ns(d)
                    .ok_or_else(|| format!("thread {index}: duration {d} s is not a run's length"))
            })
            .transpose()?;
        duration_ns = duration_ns.max(thread_ns);
        let (figures, note) = release.figures([field("min"), field("avg"), field("max")]);
        notes.extend(note.filter(|n| !notes.contains(n)));
        threads.push(
            oslat_thread(cpu, rows, last_bucket, figures, thread_ns)
                .map_err(|e| format!("thread {index}: {e}"))?,
        );
    }
    if threads.is_empty() {
        return Err("its \"thread\" object is empty".into());
    }
    let mut warnings = vec![OSLAT_WARNING.to_string()];
    warnings.extend(notes);
    let start = rt_tests_time(&v, "start_time", &mut warnings);
    let facts = oslat_facts(&command_line);
    Ok(Imported {
        format: &FORMAT,
        kind: RunKind::Noise,
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

//! What cyclictest prints without `-h`: per thread a status line
//! `T: 0 ( 1234) P:95 I:1000 C:   5000 Min:     11 Act:   15 Avg:   18 Max:    280` (thread
//! number, tid, priority, interval us, cycles, min, last, average and max latency in us), after
//! a `policy: fifo: loadavg: ...` line. Without `-q` the lines are reprinted in place (the
//! escape codes are gone by now, `pasted.rs`): the last line of each thread is its final
//! figures. There is no histogram: the run has samples, min, mean and max, and every
//! percentile is absent.

use super::pasted::without_comment;
use super::{Imported, Parser, RunFacts, SourceFormat, SourceHistogram, SourceThread};
use super::{Recognise, Recognised};
use std::collections::BTreeMap;

pub(crate) static FORMAT: SourceFormat = SourceFormat {
    name: "cyclictest-status",
    help: "cyclictest's T: status lines (a run without -h): count, min, avg, max per thread",
    parse: Parser::Text(parse),
    recognise: Recognise::Text(recognise),
    no_header: None,
};

fn recognise(lines: &[&str]) -> Recognised {
    Recognised::from(
        lines
            .iter()
            .any(|l| l.starts_with("T:") && l.contains("Max:")),
    )
}

/// One status line's figures.
struct Status {
    priority: i32,
    interval_us: u64,
    cycles: u64,
    min: f64,
    avg: f64,
    max: f64,
}

/// The value after `key` (e.g. `C:`), which may be separated by blanks.
fn value_after<T: std::str::FromStr>(line: &str, key: &str) -> Option<T> {
    let at = line.find(key)? + key.len();
    line[at..].split_whitespace().next()?.parse().ok()
}

fn status(line: &str) -> Option<(usize, Status)> {
    let thread = value_after(line, "T:")?;
    Some((
        thread,
        Status {
            priority: value_after(line, "P:")?,
            interval_us: value_after(line, "I:")?,
            cycles: value_after(line, "C:")?,
            min: value_after(line, "Min:")?,
            avg: value_after(line, "Avg:")?,
            max: value_after(line, "Max:")?,
        },
    ))
}

pub(crate) fn parse(text: &str) -> Result<Imported, String> {
    let mut last: BTreeMap<usize, Status> = BTreeMap::new();
    let mut policy = None;
    for (n, line) in text.lines().map(|l| without_comment(l.trim())).enumerate() {
        if let Some(rest) = line.strip_prefix("policy:") {
            policy = rest
                .split(':')
                .next()
                .map(|p| p.trim().to_ascii_lowercase());
        } else if line.starts_with("T:") {
            let (thread, s) = status(line).ok_or_else(|| {
                format!(
                    "line {} ('{line}') is not a status line 'T: k (tid) P: I: C: Min: Act: Avg: Max:'",
                    n + 1
                )
            })?;
            last.insert(thread, s);
        }
    }
    if last.is_empty() {
        return Err("it has no 'T: 0 ( tid) P:95 I:1000 C: ... Max:' status lines".into());
    }
    let first = last.values().next().expect("not empty");
    let facts = RunFacts {
        policy: policy.or_else(|| (first.priority > 0).then(|| "fifo".into())),
        priority: Some(first.priority),
        interval_ns: first.interval_us.checked_mul(1000),
        memory_locked: None,
        duration_ns: None,
    };
    let threads = last
        .iter()
        .map(|(&thread, s)| {
            let seen = s.cycles > 0;
            SourceThread {
                interval_ns: s.interval_us.checked_mul(1000),
                ..SourceThread::new(
                    thread,
                    SourceHistogram {
                        unit_ns: 1000,
                        count: Some(s.cycles),
                        min: Some(s.min).filter(|_| seen),
                        mean: Some(s.avg).filter(|_| seen),
                        max: Some(s.max).filter(|_| seen),
                        ..SourceHistogram::default()
                    },
                )
            }
        })
        .collect();
    Ok(Imported {
        facts,
        warnings: vec![
            "cyclictest's status lines do not name CPUs: thread k is reported as CPU k (true with -a -t, cyclictest's usual pinning)".into(),
            "no histogram (cyclictest ran without -h): samples, min, mean and max only; every percentile is absent, and latency.hlog is not written".into(),
            "cyclictest prints averages as whole microseconds; mean_ns is that rounded figure".into(),
        ],
        ..Imported::new(&FORMAT, threads)
    })
}

//! stress-ng's `--cyclic` stressor log (what it prints with `--metrics`, to stdout or a
//! `--log-file`): instance 0 sorts its latencies and prints, in ns,
//!
//! ```text
//! stress-ng: info:  [13209] cyclic: sched SCHED_FIFO: 100000 ns delay, 3000 samples
//! stress-ng: info:  [13209] cyclic:   mean: 32766.53 ns, mode: 37526 ns
//! stress-ng: info:  [13209] cyclic:   min: 16166 ns, max: 275660 ns, std.dev. 9573.40
//! stress-ng: info:  [13209] cyclic: latency percentiles:
//! stress-ng: info:  [13209] cyclic:   25.00%:      25123 ns
//! ...
//! stress-ng: info:  [13209] cyclic:   99.99%:     275660 ns
//! stress-ng: metrc: [13208] cyclic             3000    622.88 ...   (bogo ops, real time s)
//! ```
//!
//! A percentile p is the sorted sample at index floor(n · p / 100). There is no histogram and
//! no CPU: the run has one thread with samples, min, mean, stddev, max and the printed
//! percentiles. stress-ng's `-Y` YAML holds bogo-ops only (0.15), no latency: it is refused
//! with that reason by `detect`.

use super::{
    Imported, Parser, RunFacts, SourceFormat, SourceHistogram, SourceThread, seconds_to_ns,
};
use super::{Recognise, Recognised};

pub(crate) static FORMAT: SourceFormat = SourceFormat {
    name: "stress-ng-cyclic",
    help: "stress-ng --cyclic N --metrics log (stdout): samples, min, mean, stddev, max and its percentiles",
    parse: Parser::Text(parse),
    recognise: Recognise::Text(recognise),
    no_header: None,
};

/// Its metrics log; its `-Y` YAML file is refused with what to capture instead.
fn recognise(lines: &[&str]) -> Recognised {
    if lines.iter().any(|l| l.contains("cyclic: sched ")) {
        Recognised::Yes
    } else if lines.iter().any(|l| l.starts_with("stress-ng-version:")) {
        Recognised::Refused(YAML_REFUSED)
    } else {
        Recognised::No
    }
}

/// What `detect` says of stress-ng's `-Y` file.
pub(crate) const YAML_REFUSED: &str = "it is stress-ng's -Y YAML, which holds the stressors' bogo-ops, not the cyclic stressor's latencies; import the log of the same run (stress-ng --cyclic N --metrics ... > log 2>&1), where stress-ng prints them";

/// The text after `cyclic:` on a stress-ng log line (the `stress-ng: info: [pid]` prefix, or
/// none with `--log-brief`).
fn cyclic_text(line: &str) -> Option<&str> {
    let at = line.find("cyclic:")?;
    Some(line[at + "cyclic:".len()..].trim())
}

/// The number before ` ns` after `key` (`min: 16166 ns` → 16166).
fn ns_after(text: &str, key: &str) -> Option<f64> {
    let at = text.find(key)? + key.len();
    text[at..]
        .split_whitespace()
        .next()?
        .trim_end_matches(',')
        .parse()
        .ok()
}

/// The figures of the log, as read line by line.
#[derive(Default)]
struct CyclicLog {
    samples: Option<u64>,
    delay_ns: Option<u64>,
    policy: Option<String>,
    mean: Option<f64>,
    min: Option<f64>,
    max: Option<f64>,
    stddev: Option<f64>,
    /// (quantile, ns) in the order printed.
    quantiles: Vec<(f64, f64)>,
    duration_ns: Option<u64>,
    /// `cyclic: sched` lines: more than one is more than one run.
    instances_with_figures: usize,
}

pub(crate) fn parse(text: &str) -> Result<Imported, String> {
    let log = read_log(text)?;
    let Some(samples) = log.samples else {
        return Err("it has no 'cyclic: sched ...: N ns delay, M samples' line: not a stress-ng --cyclic log, or cut short".into());
    };
    if log.instances_with_figures > 1 {
        return Err(
            "it holds the figures of more than one stress-ng --cyclic run; import one run's log"
                .into(),
        );
    }
    let (Some(min_v), Some(max_v)) = (log.min, log.max) else {
        return Err("it lacks the 'min: ... max: ...' line: cut short".into());
    };
    check_percentiles(&log.quantiles, min_v, max_v)?;
    let latency = SourceHistogram {
        unit_ns: 1,
        count: Some(samples),
        min: log.min,
        mean: log.mean,
        max: log.max,
        stddev: log.stddev,
        quantiles: log.quantiles,
        ..SourceHistogram::default()
    };
    Ok(Imported {
        duration_ns: log.duration_ns,
        facts: RunFacts {
            policy: log.policy,
            interval_ns: log.delay_ns,
            ..RunFacts::default()
        },
        warnings: vec![
            "stress-ng does not say which CPU its cyclic stressor ran on: it is reported as CPU 0".into(),
            "no histogram: samples, min, mean, stddev, max and the percentiles stress-ng printed (the sorted sample at floor(n x p / 100)); p50, p90, p99, p99.9 and p99.99 are those, and latency.hlog is not written".into(),
            "with --cyclic N > 1 stress-ng prints instance 0's figures only".into(),
        ],
        ..Imported::new(&FORMAT, vec![SourceThread::new(0, latency)])
    })
}

/// Reads the cyclic stressor's lines and the run time from its `metrc:` line; other lines
/// (other stressors, stress-ng's own messages) are skipped.
fn read_log(text: &str) -> Result<CyclicLog, String> {
    let mut log = CyclicLog::default();
    for (n, line) in text.lines().enumerate() {
        let bad = |what: &str| format!("line {} ('{}'): {what}", n + 1, line.trim());
        if line.contains("metrc:") {
            // `stress-ng: metrc: [pid] cyclic  <bogo ops> <real time s> ...`
            let fields: Vec<&str> = line
                .split(']')
                .nth(1)
                .unwrap_or("")
                .split_whitespace()
                .collect();
            if fields.first() == Some(&"cyclic") {
                log.duration_ns = fields
                    .get(2)
                    .and_then(|s| s.parse::<f64>().ok())
                    .and_then(seconds_to_ns);
            }
            continue;
        }
        let Some(rest) = cyclic_text(line) else {
            continue;
        };
        if let Some(sched) = rest.strip_prefix("sched ") {
            // `SCHED_FIFO: 100000 ns delay, 3000 samples`
            log.instances_with_figures += 1;
            log.policy = sched
                .split(':')
                .next()
                .and_then(|p| p.trim().strip_prefix("SCHED_"))
                .map(str::to_ascii_lowercase);
            log.delay_ns = ns_after(sched, ":").map(|d| d as u64);
            log.samples = sched
                .split(',')
                .nth(1)
                .and_then(|s| s.split_whitespace().next())
                .and_then(|s| s.parse::<u64>().ok());
            if log.samples.is_none() {
                return Err(bad("no sample count ('N samples')"));
            }
        } else if rest.starts_with("mean:") {
            log.mean = Some(ns_after(rest, "mean:").ok_or_else(|| bad("no mean in ns"))?);
        } else if rest.starts_with("min:") {
            log.min = Some(ns_after(rest, "min:").ok_or_else(|| bad("no min in ns"))?);
            log.max = Some(ns_after(rest, "max:").ok_or_else(|| bad("no max in ns"))?);
            log.stddev = ns_after(rest, "std.dev.");
        } else if let Some((pct, value)) = rest.split_once("%:") {
            let pct: f64 = pct.trim().parse().map_err(|_| bad("not a percentile"))?;
            let value = ns_after(value, "").ok_or_else(|| bad("no value in ns"))?;
            if !(0.0..=100.0).contains(&pct) {
                return Err(bad("a percentile outside 0 to 100"));
            }
            log.quantiles.push((pct / 100.0, value));
        } else if rest.contains("no latency information available") {
            return Err("stress-ng printed 'no latency information available': the cyclic stressor took no sample".into());
        }
    }
    Ok(log)
}

/// Percentiles of sorted samples lie within min and max and never fall as p rises.
fn check_percentiles(quantiles: &[(f64, f64)], min_v: f64, max_v: f64) -> Result<(), String> {
    if let Some(&(q, v)) = quantiles
        .iter()
        .find(|&&(_, v)| !(min_v..=max_v).contains(&v))
    {
        return Err(format!(
            "its {}% percentile ({v} ns) is outside its min ({min_v} ns) and max ({max_v} ns)",
            q * 100.0
        ));
    }
    if let Some(w) = quantiles.windows(2).find(|w| w[1].1 < w[0].1) {
        return Err(format!(
            "its {}% percentile ({} ns) is below its {}% percentile ({} ns)",
            w[1].0 * 100.0,
            w[1].1,
            w[0].0 * 100.0,
            w[0].1
        ));
    }
    Ok(())
}

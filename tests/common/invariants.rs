//! Invariants every result directory must keep, whatever made it (issue 23): one checker,
//! [`check_result_dir`], run on every directory the integration tests produce with `run`,
//! `noise`, `sweep`, `monitor` or `import` ([`super::jitterlab`] calls it for those commands;
//! tests that spawn the binary themselves call it after the run ends).
//!
//! - min <= every percentile <= max, and percentiles ascend (histogram figures are clamped into
//!   the exact [min, max], docs/result-format.md); mean within [min, max]; stddev >= 0.
//! - Phase figures within the run's figures; phase samples add up to at most the run's, and to
//!   exactly the run's when the phases cover the run without gaps or overlaps.
//! - within + above + undecided = samples for every threshold.
//! - Every interval contains its estimate (spike rates, the tail's shape and return levels).
//! - Rates use the measured exposure: rate = count / exposure, and the exposure is the time
//!   measured (the run's duration, less the periods skipped by dropped wakeups, to the end of
//!   the latest wakeup).
//! - Noise runs: noise_ns = the gaps' sum (mean × samples), noise_pct and gaps_per_s from
//!   measured_ns.
//! - No saturated (>= 2^63) or overflowed number anywhere in run.json (the host snapshot under
//!   `system`, which quotes the kernel's own "unlimited" values, aside), sweep.json or
//!   events.jsonl.

use serde_json::Value;
use std::path::Path;

/// Checks the result directory `dir` (or, for a sweep directory, every level's run) and
/// panics listing every violated invariant.
pub fn check_result_dir(dir: &Path) {
    let bad = violations(dir);
    assert!(
        bad.is_empty(),
        "{} breaks the result invariants (tests/common/invariants.rs):\n  {}",
        dir.display(),
        bad.join("\n  ")
    );
}

/// Every violated invariant of `dir`, as messages; empty when it keeps them all.
pub fn violations(dir: &Path) -> Vec<String> {
    let mut bad = Vec::new();
    let sweep = dir.join("sweep.json");
    if sweep.is_file() {
        if let Some(v) = read_json(&sweep) {
            saturated("sweep.json", &v, &mut bad);
        }
        let mut levels: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.join("run.json").is_file())
            .collect();
        levels.sort();
        for level in levels {
            bad.extend(violations(&level));
        }
        return bad;
    }
    let run_json = dir.join("run.json");
    if !run_json.is_file() {
        return bad; // a refused run leaves nothing
    }
    // A directory that is not a result (a test's planted file, a refused run's existing
    // name) is the refusing test's business, not an invariant's.
    let Some(run) = read_json(&run_json) else {
        return bad;
    };
    let mut walk = run.clone();
    walk.as_object_mut().map(|o| o.remove("system"));
    saturated("run.json", &walk, &mut bad);
    if let Ok(events) = std::fs::read_to_string(dir.join("events.jsonl")) {
        for (n, line) in events.lines().enumerate() {
            // A torn last line (a killed run) is not an event.
            if let Ok(v) = serde_json::from_str::<Value>(line) {
                saturated(&format!("events.jsonl line {}", n + 1), &v, &mut bad);
            }
        }
    }
    let absent: Vec<&str> = run["imported"]["absent"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let imported = !run["imported"].is_null();
    let empty = vec![];
    let threads = run["threads"].as_array().unwrap_or(&empty);
    for t in threads {
        let cpu = t["cpu"].as_u64().unwrap_or(u64::MAX);
        let what = format!("run.json threads[cpu {cpu}]");
        summary(&what, t, &absent, &mut bad);
        if t["irq_latency"].is_object() {
            summary(
                &format!("{what}.irq_latency"),
                &t["irq_latency"],
                &[],
                &mut bad,
            );
        }
        within(&what, t, &absent, &mut bad);
        if !imported {
            spikes(&what, t, &run, &mut bad);
            noise(&what, t, &mut bad);
        }
        tail(&what, &t["tail"], &mut bad);
    }
    phases(&run, threads, &absent, &mut bad);
    bad
}

fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// 2^63 as f64: a figure at or beyond it is a saturated or overflowed 64-bit count.
const SATURATED: f64 = 9_223_372_036_854_775_808.0;

fn saturated(file: &str, v: &Value, bad: &mut Vec<String>) {
    fn walk(path: &mut String, v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Number(n) => {
                let big = match (n.as_u64(), n.as_i64(), n.as_f64()) {
                    (Some(u), _, _) => u >= 1 << 63,
                    (_, Some(i), _) => i == i64::MIN,
                    (_, _, Some(f)) => !f.is_finite() || f.abs() >= SATURATED,
                    _ => true,
                };
                if big {
                    out.push(format!("{path} = {n}: a saturated or overflowed number"));
                }
            }
            Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    let len = path.len();
                    path.push_str(&format!("[{i}]"));
                    walk(path, x, out);
                    path.truncate(len);
                }
            }
            Value::Object(o) => {
                for (k, x) in o {
                    let len = path.len();
                    path.push('.');
                    path.push_str(k);
                    walk(path, x, out);
                    path.truncate(len);
                }
            }
            _ => {}
        }
    }
    let mut found = Vec::new();
    walk(&mut String::new(), v, &mut found);
    bad.extend(found.into_iter().map(|f| format!("{file}: {f}")));
}

const PERCENTILES: [&str; 5] = ["p50_ns", "p90_ns", "p99_ns", "p999_ns", "p9999_ns"];

/// A latency summary (samples ... max_ns): min <= percentiles (ascending) <= max, mean within
/// [min, max], stddev >= 0. Fields the import lacked (`absent`) or null are left out.
fn summary(what: &str, s: &Value, absent: &[&str], bad: &mut Vec<String>) {
    if s["samples"].as_u64() == Some(0) || absent.contains(&"samples") && s["min_ns"].is_null() {
        return;
    }
    let known = |k: &str| (!absent.contains(&k)).then(|| s[k].as_f64()).flatten();
    let (min, max) = (known("min_ns"), known("max_ns"));
    if let (Some(min), Some(max)) = (min, max)
        && min > max
    {
        bad.push(format!("{what}: min_ns {min} > max_ns {max}"));
    }
    let mut last: Option<(&str, f64)> = None;
    for k in PERCENTILES {
        let Some(p) = known(k) else { continue };
        if min.is_some_and(|m| p < m) {
            bad.push(format!("{what}: {k} {p} < min_ns {}", min.unwrap()));
        }
        if max.is_some_and(|m| p > m) {
            bad.push(format!("{what}: {k} {p} > max_ns {}", max.unwrap()));
        }
        if let Some((lk, lp)) = last
            && p < lp
        {
            bad.push(format!("{what}: {k} {p} < {lk} {lp}"));
        }
        last = Some((k, p));
    }
    if let Some(mean) = known("mean_ns")
        && (min.is_some_and(|m| mean < m) || max.is_some_and(|m| mean > m))
    {
        bad.push(format!(
            "{what}: mean_ns {mean} outside [min_ns, max_ns] = [{min:?}, {max:?}]"
        ));
    }
    if known("stddev_ns").is_some_and(|sd| sd < 0.0) {
        bad.push(format!("{what}: stddev_ns {} < 0", s["stddev_ns"]));
    }
}

/// within + above + undecided = samples, for every threshold.
fn within(what: &str, t: &Value, absent: &[&str], bad: &mut Vec<String>) {
    let (Some(list), Some(samples)) = (t["within"].as_array(), t["samples"].as_u64()) else {
        return;
    };
    if absent.contains(&"samples") {
        return;
    }
    for w in list {
        let n = |k: &str| w[k].as_u64().unwrap_or(0);
        let sum = n("within") + n("above") + n("undecided");
        if sum != samples {
            bad.push(format!(
                "{what} within[{} ns]: within {} + above {} + undecided {} = {sum}, samples {samples}",
                w["threshold_ns"],
                n("within"),
                n("above"),
                n("undecided")
            ));
        }
    }
}

/// Spike rates: rate = count / exposure, inside its interval; the exposure is the time
/// measured; MTBF = exposure / count.
fn spikes(what: &str, t: &Value, run: &Value, bad: &mut Vec<String>) {
    let Some(list) = t["spikes"].as_array() else {
        return;
    };
    let interval = t["interval_ns"].as_f64().unwrap_or(0.0);
    let skipped =
        t["missed_periods"].as_f64().unwrap_or(0.0) + t["dropped_records"].as_f64().unwrap_or(0.0);
    let duration = run["duration_ns"].as_f64();
    let noise_measured = t["noise"]["measured_ns"].as_f64();
    for s in list {
        let at = format!("{what} spikes[{} ns, {}]", s["threshold_ns"], s["basis"]);
        let count = s["count"].as_f64().unwrap_or(0.0);
        let Some(exposure) = s["exposure_ns"].as_f64() else {
            bad.push(format!("{at}: no exposure_ns"));
            continue;
        };
        if exposure <= 0.0 {
            if count > 0.0 {
                bad.push(format!(
                    "{at}: {count} spikes over an exposure of {exposure} ns"
                ));
            }
            continue;
        }
        let rate = count * 3.6e12 / exposure;
        if let Some(got) = s["rate_per_hour"].as_f64()
            && (got - rate).abs() > rate * 1e-6 + 1e-9
        {
            bad.push(format!(
                "{at}: rate_per_hour {got}, but count / exposure = {count} / {exposure} ns = {rate}/h"
            ));
        }
        if let (Some(got), Some(lo), Some(hi)) = (
            s["rate_per_hour"].as_f64(),
            s["rate_per_hour_low"].as_f64(),
            s["rate_per_hour_high"].as_f64(),
        ) && !(lo <= got && got <= hi)
        {
            bad.push(format!(
                "{at}: rate_per_hour {got} outside its interval [{lo}, {hi}]"
            ));
        }
        if count > 0.0
            && let Some(mtbf) = s["mtbf_ns"].as_f64()
            && (mtbf - exposure / count).abs() > 1.0 + exposure / count * 1e-9
        {
            bad.push(format!(
                "{at}: mtbf_ns {mtbf}, but exposure / count = {}",
                exposure / count
            ));
        }
        // The exposure is the time measured: the noise loop's measured time, or the run's
        // duration less the periods that late or dropped wakeups skipped; a wakeup thread's
        // runs to the end of its latest wakeup, which may end after the run's end by at most
        // its largest latency (a thread held off past the end by a load).
        let measured = noise_measured.or(duration);
        let last_late = match noise_measured {
            Some(_) => 0.0,
            None => t["max_ns"].as_f64().unwrap_or(0.0).max(0.0),
        };
        if let Some(measured) = measured
            && measured >= 1e9
        {
            let low = 0.9 * measured - skipped * interval;
            let high = 1.05 * measured + 2.0 * interval + last_late;
            if exposure < low || exposure > high {
                bad.push(format!(
                    "{at}: exposure_ns {exposure}, but the run measured {measured} ns (expected {low:.0}..={high:.0}): the rate is not over the measured time"
                ));
            }
        }
    }
}

/// A noise run's summary: noise_ns is the gaps' sum, noise_pct and gaps_per_s are over the
/// measured time.
fn noise(what: &str, t: &Value, bad: &mut Vec<String>) {
    let n = &t["noise"];
    let (Some(measured), Some(noise_ns)) = (n["measured_ns"].as_f64(), n["noise_ns"].as_f64())
    else {
        return;
    };
    let samples = t["samples"].as_f64().unwrap_or(0.0);
    if noise_ns > measured {
        bad.push(format!(
            "{what}: noise_ns {noise_ns} > measured_ns {measured}"
        ));
    }
    if let Some(mean) = t["mean_ns"].as_f64() {
        let sum = mean * samples;
        if (sum - noise_ns).abs() > 1.0 + sum * 1e-9 {
            bad.push(format!(
                "{what}: noise_ns {noise_ns}, but the gaps sum to mean × samples = {sum}"
            ));
        }
    }
    if measured > 0.0 {
        if let Some(pct) = n["noise_pct"].as_f64()
            && (pct - 100.0 * noise_ns / measured).abs() > 1e-6 * pct.abs() + 1e-9
        {
            bad.push(format!(
                "{what}: noise_pct {pct}, but 100 × noise_ns / measured_ns = {}",
                100.0 * noise_ns / measured
            ));
        }
        if let Some(rate) = n["gaps_per_s"].as_f64()
            && (rate - samples * 1e9 / measured).abs() > 1e-6 * rate.abs() + 1e-9
        {
            bad.push(format!(
                "{what}: gaps_per_s {rate}, but samples / measured = {}",
                samples * 1e9 / measured
            ));
        }
    }
}

/// The extrapolated tail: each interval contains its estimate.
fn tail(what: &str, tail: &Value, bad: &mut Vec<String>) {
    if !tail.is_object() || !tail["refused"].is_null() {
        return;
    }
    let inside = |est: &Value, lo: &Value, hi: &Value| {
        let Some(e) = est.as_f64() else { return true };
        lo.as_f64().is_none_or(|l| l <= e) && hi.as_f64().is_none_or(|h| e <= h)
    };
    if !inside(&tail["shape"], &tail["shape_low"], &tail["shape_high"]) {
        bad.push(format!(
            "{what} tail: shape {} outside [{}, {}]",
            tail["shape"], tail["shape_low"], tail["shape_high"]
        ));
    }
    for l in tail["levels"].as_array().into_iter().flatten() {
        if !inside(&l["latency_ns"], &l["low_ns"], &l["high_ns"]) {
            bad.push(format!(
                "{what} tail level {}: latency_ns {} outside [{}, {}]",
                l["per_wakeup"], l["latency_ns"], l["low_ns"], l["high_ns"]
            ));
        }
    }
}

/// Phase figures within the run's, and phase samples adding up.
fn phases(run: &Value, threads: &[Value], absent: &[&str], bad: &mut Vec<String>) {
    let Some(phases) = run["phases"].as_array().filter(|p| !p.is_empty()) else {
        return;
    };
    for p in phases {
        for pt in p["threads"].as_array().into_iter().flatten() {
            let what = format!("run.json phases[{}].threads[cpu {}]", p["label"], pt["cpu"]);
            summary(&what, pt, absent, bad);
            let Some(t) = threads.iter().find(|t| t["cpu"] == pt["cpu"]) else {
                continue;
            };
            if pt["samples"].as_u64() > t["samples"].as_u64() {
                bad.push(format!(
                    "{what}: samples {} > the run's {}",
                    pt["samples"], t["samples"]
                ));
            }
            if pt["samples"].as_u64() == Some(0) {
                continue;
            }
            let f = |v: &Value, k: &str| v[k].as_f64();
            if let (Some(pm), Some(rm)) = (f(pt, "min_ns"), f(t, "min_ns"))
                && pm < rm
            {
                bad.push(format!("{what}: min_ns {pm} below the run's min_ns {rm}"));
            }
            if let (Some(pm), Some(rm)) = (f(pt, "max_ns"), f(t, "max_ns"))
                && pm > rm
            {
                bad.push(format!("{what}: max_ns {pm} above the run's max_ns {rm}"));
            }
        }
    }
    // Sums: at most the run's samples when no two phases overlap; exactly them when the
    // phases also cover the run from its start to its end.
    let span = |p: &Value| {
        (
            p["start_ns"].as_u64().unwrap_or(0),
            p["end_ns"].as_u64().unwrap_or(0),
        )
    };
    let mut spans: Vec<(u64, u64)> = phases.iter().map(span).collect();
    spans.sort_unstable();
    if spans.windows(2).any(|w| w[1].0 < w[0].1) {
        return;
    }
    let start = run["start_monotonic_ns"].as_u64().unwrap_or(0);
    let end = start + run["duration_ns"].as_u64().unwrap_or(0);
    let covered = spans.first().is_some_and(|s| s.0 <= start)
        && spans.last().is_some_and(|s| s.1 >= end)
        && spans.windows(2).all(|w| w[1].0 == w[0].1);
    for t in threads {
        let sum: u64 = phases
            .iter()
            .flat_map(|p| p["threads"].as_array().into_iter().flatten())
            .filter(|pt| pt["cpu"] == t["cpu"])
            .filter_map(|pt| pt["samples"].as_u64())
            .sum();
        let samples = t["samples"].as_u64().unwrap_or(0);
        if sum > samples || covered && sum != samples {
            bad.push(format!(
                "run.json cpu {}: the phases hold {sum} samples, the run {samples}{}",
                t["cpu"],
                if covered {
                    " (the phases cover the run)"
                } else {
                    ""
                }
            ));
        }
    }
}

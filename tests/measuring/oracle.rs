//! Every number true (issue 23, section 2): jitterlab's figures against a naive reference
//! (`common::oracle`: samples.bin decoded from its documented layout, figures by sorting and
//! counting), within the precision the documentation states.
//!
//! - Real runs (three short ones): a spike load on both CPUs, a scenario with two phases, a
//!   noise run; run.json, every export format and `compare --json` of the run with itself.
//! - Synthetic runs with known samples (`results::synthetic`): the same checks without
//!   measuring.
//! - Metamorphic: shifting every sample by d shifts every latency figure by d; duplicating
//!   every sample keeps every figure; a run against itself gives ratio 1 and intervals that
//!   hold 0.
//! - Coverage: the 95 % intervals of compare's percentile differences, of within-shares
//!   (Wilson, Newcombe) and of spike rates (Garwood) hold the true value in at least 93 % of
//!   200 seeded repetitions.

use crate::common;

use common::invariants::violations;
use common::oracle::{self, Figures, PERCENTILES, Sample};
use common::*;
use jitterlab::results::synthetic::{SyntheticPhase, SyntheticRun, write_run};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

const MS: u64 = 1_000_000;

/// Fails listing every mismatch the oracle found in `what`.
fn assert_none(what: &str, bad: Vec<String>) {
    assert!(
        bad.is_empty(),
        "{what}: {} figure(s) differ from the oracle:\n  {}",
        bad.len(),
        bad.join("\n  ")
    );
}

fn export(dir: &Path, format: &str, extra: &[&str]) -> String {
    let mut args = vec!["export", dir.to_str().unwrap(), "--format", format];
    args.extend_from_slice(extra);
    let o = jitterlab(&args);
    assert!(o.status.success(), "export {format}: {}", text(&o));
    String::from_utf8(o.stdout).unwrap()
}

fn compare_json(a: &Path, b: &Path) -> Value {
    let o = jitterlab(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--json",
    ]);
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "compare: {}",
        text(&o)
    );
    serde_json::from_slice(&o.stdout).expect("compare --json is JSON")
}

/// The oracle's view of one result directory: its samples per CPU (latency samples, or a
/// noise run's gaps that were not throttling) and their figures.
struct Truth {
    start_ns: u64,
    by_cpu: BTreeMap<u32, Vec<Sample>>,
    figures: BTreeMap<u32, Figures>,
    /// Every CPU's samples together (compare's `overall`).
    overall: Figures,
}

impl Truth {
    fn from_samples(start_ns: u64, by_cpu: BTreeMap<u32, Vec<Sample>>) -> Truth {
        let figures = by_cpu
            .iter()
            .map(|(&c, s)| (c, Figures::of(s.iter().map(|s| s.latency_ns))))
            .collect();
        let overall = Figures::of(by_cpu.values().flatten().map(|s| s.latency_ns));
        Truth {
            start_ns,
            by_cpu,
            figures,
            overall,
        }
    }

    /// From samples.bin; `noise`: leave out the gaps marked as throttling (`missed` 1).
    fn read(dir: &Path, noise: bool) -> Truth {
        let file = oracle::read_samples(&dir.join("samples.bin"));
        let mut by = oracle::per_cpu(&file.samples);
        if noise {
            by.values_mut().for_each(|v| v.retain(|s| s.missed == 0));
        }
        Truth::from_samples(file.start_ns, by)
    }
}

/// run.json's per-thread figures against the oracle: the latency summary, the counts, the
/// shares within each threshold and the spikes over each.
fn check_threads(run: &Value, truth: &Truth, noise: bool) -> Vec<String> {
    let mut bad = Vec::new();
    for t in run["threads"].as_array().unwrap() {
        let cpu = t["cpu"].as_u64().unwrap() as u32;
        let what = format!("run.json cpu{cpu}");
        let Some(f) = truth.figures.get(&cpu) else {
            bad.push(format!("{what}: no samples in samples.bin"));
            continue;
        };
        if t["dropped_records"].as_u64() != Some(0) {
            eprintln!("{what}: dropped records; the oracle checks only the recorded samples");
        }
        bad.extend(oracle::summary_mismatches(&what, t, f, false));
        let samples = &truth.by_cpu[&cpu];
        let count = |p: &dyn Fn(&Sample) -> bool| samples.iter().filter(|s| p(s)).count() as u64;
        if !noise {
            let deadline = t["deadline_ns"].as_i64().unwrap();
            let missed: u64 = samples.iter().map(|s| u64::from(s.missed)).sum();
            let dropped = t["dropped_records"].as_u64().unwrap();
            for (k, want) in [
                (
                    "deadline_misses",
                    count(&|s: &Sample| s.latency_ns > deadline),
                ),
                ("early_wakeups", count(&|s: &Sample| s.latency_ns < 0)),
                ("missed_periods", missed),
            ] {
                // missed_periods also counts the dropped records' periods.
                let ok = if k == "missed_periods" {
                    t[k].as_u64() >= Some(want) && (dropped > 0 || t[k].as_u64() == Some(want))
                } else {
                    t[k].as_u64() == Some(want)
                };
                if !ok {
                    bad.push(format!(
                        "{what} {k}: got {}, the oracle counts {want}",
                        t[k]
                    ));
                }
            }
        }
        for w in t["within"].as_array().into_iter().flatten() {
            let thr = w["threshold_ns"].as_i64().unwrap();
            let want = f.within(thr);
            let (within, undecided) = (
                w["within"].as_u64().unwrap(),
                w["undecided"].as_u64().unwrap(),
            );
            if !(within <= want && want <= within + undecided)
                || w["above"].as_u64() != Some(f.count() - within - undecided)
            {
                bad.push(format!(
                    "{what} within {thr} ns: got within {within} above {} undecided {undecided}, the oracle counts {want} within",
                    w["above"]
                ));
            }
        }
        // A noise run's spikes are counted over gaps, not wakeups (docs/noise.md): their
        // rate is checked by the invariants (measured exposure), not against runs of samples.
        for s in t["spikes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|_| !noise)
        {
            if !s["not_counted"].is_null() || s["count_is_lower_bound"] == true {
                continue;
            }
            let thr = s["threshold_ns"].as_i64().unwrap();
            // The exposure is the time observed, to the end of the latest wakeup (issue 39
            // L-f: wakeups x interval made a CPU held off for 3.2 s "once in 1.00 ms").
            let observed = oracle::observed_ns(samples, truth.start_ns);
            if s["exposure_ns"].as_u64() != Some(observed) {
                bad.push(format!(
                    "{what} spikes over {thr} ns: exposure_ns {}, the oracle says {observed} (first due time to the end of the latest wakeup)",
                    s["exposure_ns"]
                ));
            }
            let want = oracle::spike_count(samples, thr);
            if s["count"].as_u64() != Some(want) {
                bad.push(format!(
                    "{what} spikes over {thr} ns ({}): got {}, the oracle counts {want} (runs of consecutive late wakeups once)",
                    s["basis"], s["count"]
                ));
            }
            {
                // Each spike's time: the due time of its first late wakeup, from the run's start.
                let mut times = Vec::new();
                let mut open = false;
                for x in samples {
                    let late = x.latency_ns > thr;
                    if late && !open {
                        times.push(x.expected_ns - truth.start_ns);
                    }
                    open = late;
                }
                times.truncate(10_000);
                let got: Vec<u64> = s["times_ns"]
                    .as_array()
                    .map(|a| a.iter().filter_map(Value::as_u64).collect())
                    .unwrap_or_default();
                if got != times {
                    bad.push(format!(
                        "{what} spike times over {thr} ns: got {got:?}, the oracle says {times:?}"
                    ));
                }
            }
        }
    }
    bad
}

/// `export --format json`: the threads' figures, checked against the oracle as run.json's.
fn check_export_json(dir: &Path, truth: &Truth) -> Vec<String> {
    let v: Value = serde_json::from_str(&export(dir, "json", &[])).unwrap();
    let mut bad = Vec::new();
    for t in v["threads"].as_array().unwrap() {
        let cpu = t["cpu"].as_u64().unwrap() as u32;
        bad.extend(oracle::summary_mismatches(
            &format!("export json cpu{cpu}"),
            t,
            &truth.figures[&cpu],
            false,
        ));
    }
    bad
}

/// `export --format cyclictest-json`: cycles, min and max (whole us, truncated), avg (us, 2
/// decimals), and the histogram: every sample in the us bucket of its HDR bucket's lowest
/// value (within 1/1024 below the sample).
fn check_export_cyclictest(dir: &Path, truth: &Truth) -> Vec<String> {
    let v: Value = serde_json::from_str(&export(dir, "cyclictest-json", &[])).unwrap();
    let mut bad = Vec::new();
    for (k, t) in v["thread"].as_object().unwrap() {
        let cpu = t["cpu"].as_u64().unwrap() as u32;
        let f = &truth.figures[&cpu];
        let what = format!("cyclictest-json thread {k} (cpu{cpu})");
        for (field, want) in [
            ("cycles", f.count() as i64),
            ("min", f.min() / 1000),
            ("max", f.max() / 1000),
        ] {
            if t[field].as_i64() != Some(want) {
                bad.push(format!(
                    "{what} {field}: got {}, the oracle says {want}",
                    t[field]
                ));
            }
        }
        if let Err(e) = oracle::near(
            &format!("{what} avg"),
            t["avg"].as_f64().unwrap(),
            f.mean / 1000.0,
            0.0051,
        ) {
            bad.push(e);
        }
        let hist: BTreeMap<i64, u64> = t["histogram"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(us, n)| (us.parse().unwrap(), n.as_u64().unwrap()))
            .collect();
        let mut cumulative = 0;
        for (&us, &n) in &hist {
            cumulative += n;
            let top = (us + 1) * 1000 - 1; // the last ns of bucket `us`
            let at_least = f.within(top);
            let at_most = f
                .sorted
                .iter()
                .filter(|&&x| x - x / 1024 - 1 <= top)
                .count() as u64;
            if cumulative < at_least.min(f.count()) || cumulative > at_most {
                bad.push(format!(
                    "{what} histogram up to {us} us: {cumulative} samples, the oracle has {at_least}..={at_most}"
                ));
            }
        }
        if cumulative != f.count() {
            bad.push(format!(
                "{what} histogram holds {cumulative} samples of {}",
                f.count()
            ));
        }
    }
    bad
}

/// `export --format lava` (and the same figures in openmetrics): min, mean, percentiles, max,
/// missed periods and deadline misses per CPU, and each `under()` budget clause as the share
/// within its limit.
fn check_export_lava(dir: &Path, truth: &Truth, run: &Value, budget: &str) -> Vec<String> {
    let out = export(dir, "lava", &["--budget", budget]);
    let mut bad = Vec::new();
    let lines: BTreeMap<&str, (f64, &str)> = out
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let (name, _result) = (w.next()?, w.next()?);
            Some((name, (w.next()?.parse().ok()?, w.next().unwrap_or(""))))
        })
        .collect();
    for t in run["threads"].as_array().unwrap() {
        let cpu = t["cpu"].as_u64().unwrap() as u32;
        let f = &truth.figures[&cpu];
        let get = |name: &str| lines.get(format!("cpu{cpu}-{name}").as_str()).copied();
        let what = format!("lava cpu{cpu}");
        for (name, want) in [("min-latency", f.min()), ("max-latency", f.max())] {
            match get(name) {
                Some((us, "us")) if (us * 1000.0).round() as i64 == want => {}
                other => bad.push(format!(
                    "{what} {name}: got {other:?}, the oracle says {want} ns"
                )),
            }
        }
        match get("mean-latency") {
            Some((us, "us")) if (us * 1000.0 - f.mean).abs() <= 0.51 => {}
            other => bad.push(format!(
                "{what} mean-latency: got {other:?}, the oracle says {} ns",
                f.mean
            )),
        }
        for &(field, num, den) in PERCENTILES {
            let name = format!("{}-latency", metric_name(field));
            match get(&name) {
                Some((us, "us")) => {
                    if let Err(e) = f.percentile_agrees(num, den, (us * 1000.0).round() as i64) {
                        bad.push(format!("{what} {name}: {e}"));
                    }
                }
                other => bad.push(format!("{what} {name}: got {other:?}")),
            }
        }
        let samples = &truth.by_cpu[&cpu];
        let deadline = t["deadline_ns"].as_i64().unwrap();
        let missed: u64 = samples.iter().map(|s| u64::from(s.missed)).sum();
        let late = samples.iter().filter(|s| s.latency_ns > deadline).count() as u64;
        for (name, want, unit) in [
            ("missed", missed, "periods"),
            ("deadline_misses", late, "wakeups"),
        ] {
            match get(name) {
                Some((n, u)) if n as u64 == want && u == unit => {}
                other => bad.push(format!(
                    "{what} {name}: got {other:?}, the oracle counts {want} {unit}"
                )),
            }
        }
    }
    // `under(X)>=Y%` clauses: the share of wakeups within X, in percent (3 decimals).
    for clause in budget.split(',') {
        let Some(limit) = clause
            .strip_prefix("under(")
            .and_then(|r| r.split(')').next())
        else {
            continue;
        };
        let limit_ns = jitterlab::units::parse_duration_ns(limit).unwrap() as i64;
        for (&cpu, f) in &truth.figures {
            let share = 100.0 * f.within(limit_ns) as f64 / f.count() as f64;
            let found = lines
                .iter()
                .find(|(name, _)| name.starts_with(&format!("budget-cpu{cpu}-under")))
                .map(|(n, v)| (n.to_string(), *v));
            match found {
                Some((_, (pct, "%"))) if (pct - share).abs() <= 0.0005 + 1e-9 => {}
                other => bad.push(format!(
                    "lava budget cpu{cpu} {clause}: got {other:?}, the oracle's share within {limit} is {share:.3} %"
                )),
            }
        }
    }
    bad
}

/// run.json's percentile field name as the exports spell it: p50, p99.9 ...
fn metric_name(field: &str) -> &'static str {
    match field {
        "p50_ns" => "p50",
        "p90_ns" => "p90",
        "p99_ns" => "p99",
        "p999_ns" => "p99.9",
        "p9999_ns" => "p99.99",
        _ => unreachable!(),
    }
}

/// `export --format junit --budget B`: each `under()` testcase states the share within.
fn check_export_junit(dir: &Path, truth: &Truth, budget: &str) -> Vec<String> {
    let xml = export(dir, "junit", &["--budget", budget]);
    let mut bad = Vec::new();
    for clause in budget.split(',') {
        let Some(limit) = clause
            .strip_prefix("under(")
            .and_then(|r| r.split(')').next())
        else {
            continue;
        };
        let limit_ns = jitterlab::units::parse_duration_ns(limit).unwrap() as i64;
        for (&cpu, f) in &truth.figures {
            let share = 100.0 * f.within(limit_ns) as f64 / f.count() as f64;
            let want = format!("cpu{cpu}: under {share:.3} %");
            if !xml.contains(&want) {
                bad.push(format!(
                    "junit {clause}: no \"{want}\" (the oracle's share)"
                ));
            }
        }
    }
    bad
}

/// `export --format openmetrics`: count, sum, max, quantiles, counters and the cumulative
/// buckets (within an HDR bucket of their bound).
fn check_export_openmetrics(dir: &Path, truth: &Truth, run: &Value) -> Vec<String> {
    let out = export(dir, "openmetrics", &[]);
    let mut bad = Vec::new();
    let value = |prefix: &str| -> Option<f64> {
        out.lines()
            .find(|l| l.starts_with(prefix) && l[prefix.len()..].starts_with(' '))
            .and_then(|l| l.rsplit(' ').next()?.parse().ok())
    };
    let m = "jitterlab_wakeup_latency";
    for t in run["threads"].as_array().unwrap() {
        let cpu = t["cpu"].as_u64().unwrap() as u32;
        let f = &truth.figures[&cpu];
        let samples = &truth.by_cpu[&cpu];
        let what = format!("openmetrics cpu{cpu}");
        let label = format!("{{cpu=\"{cpu}\"}}");
        let sum: i64 = f.sorted.iter().map(|&v| v.max(0)).sum();
        let checks: Vec<(String, f64, f64)> = vec![
            (format!("{m}_seconds_count{label}"), f.count() as f64, 0.0),
            (
                format!("{m}_seconds_sum{label}"),
                sum as f64 / 1e9,
                sum as f64 / 1e9 / 1024.0 + 1e-9,
            ),
            (
                format!("{m}_max_seconds{label}"),
                f.max() as f64 / 1e9,
                0.6e-9,
            ),
            (
                format!("jitterlab_samples_total{label}"),
                f.count() as f64,
                0.0,
            ),
            (
                format!("jitterlab_missed_periods_total{label}"),
                samples.iter().map(|s| s.missed as f64).sum(),
                0.0,
            ),
            (
                format!("jitterlab_deadline_misses_total{label}"),
                samples
                    .iter()
                    .filter(|s| s.latency_ns > t["deadline_ns"].as_i64().unwrap())
                    .count() as f64,
                0.0,
            ),
        ];
        for (name, want, tol) in checks {
            match value(&name) {
                Some(got) => {
                    if let Err(e) = oracle::near(&format!("openmetrics {name}"), got, want, tol) {
                        bad.push(e);
                    }
                }
                None => bad.push(format!("openmetrics: no {name}")),
            }
        }
        for (q, num, den) in [
            ("0.99", 99, 100),
            ("0.999", 999, 1000),
            ("0.9999", 9999, 10000),
        ] {
            match value(&format!(
                "{m}_quantile_seconds{{cpu=\"{cpu}\",quantile=\"{q}\"}}"
            )) {
                Some(s) => {
                    if let Err(e) = f.percentile_agrees(num, den, (s * 1e9).round() as i64) {
                        bad.push(format!("{what} quantile {q}: {e}"));
                    }
                }
                None => bad.push(format!("{what}: no quantile {q}")),
            }
        }
        let prefix = format!("{m}_seconds_bucket{{cpu=\"{cpu}\",le=\"");
        for l in out.lines().filter(|l| l.starts_with(&prefix)) {
            let rest = &l[prefix.len()..];
            let le = &rest[..rest.find('"').unwrap()];
            let got: u64 = l.rsplit(' ').next().unwrap().parse().unwrap();
            let (lo, hi) = if le == "+Inf" {
                (f.count(), f.count())
            } else {
                let ns = (le.parse::<f64>().unwrap() * 1e9).round() as i64;
                (f.within(ns - ns / 1024 - 1), f.within(ns + ns / 1024 + 1))
            };
            if got < lo || got > hi {
                bad.push(format!(
                    "{what} bucket le={le}: {got}, the oracle has {lo}..={hi}"
                ));
            }
        }
    }
    bad
}

/// `export --format csv` and `columns`: one row per sample of samples.bin, in file order,
/// with its fields as recorded.
fn check_export_samples(dir: &Path, noise: bool) -> Vec<String> {
    let file = oracle::read_samples(&dir.join("samples.bin"));
    let mut bad = Vec::new();
    let csv = export(dir, "csv", &[]);
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    if rows.len() != file.samples.len() {
        bad.push(format!(
            "csv: {} rows, samples.bin holds {}",
            rows.len(),
            file.samples.len()
        ));
    }
    for (row, s) in rows.iter().zip(&file.samples) {
        let c: Vec<&str> = row.split(',').collect();
        let irq = s.irq_latency_ns.map_or(String::new(), |v| v.to_string());
        let want = [
            s.cpu.to_string(),
            s.seq.to_string(),
            s.expected_ns.to_string(),
            s.latency_ns.to_string(),
            irq,
            s.missed.to_string(),
        ];
        let got = [c[0], c[1], c[2], c[4], c[5], c[6]];
        let t = (s.expected_ns - file.start_ns) as f64 / 1e9;
        if got.iter().zip(&want).any(|(g, w)| g != w)
            || (c[3].parse::<f64>().unwrap() - t).abs() > 1e-9
        {
            bad.push(format!("csv row {row:?}: the oracle decodes {s:?}"));
            break;
        }
    }
    let columns = export(dir, "columns", &[]);
    let rows: Vec<&str> = columns.lines().filter(|l| !l.starts_with('#')).collect();
    if rows.len() != file.samples.len() {
        bad.push(format!(
            "columns: {} rows, samples.bin holds {}",
            rows.len(),
            file.samples.len()
        ));
    }
    for (row, s) in rows.iter().zip(&file.samples) {
        let c: Vec<f64> = row.split(' ').take(2).map(|x| x.parse().unwrap()).collect();
        let t = (s.expected_ns - file.start_ns) as f64 / 1e9;
        if (c[0] - t).abs() > 0.51e-6 || (c[1] - s.latency_ns as f64 / 1e3).abs() > 0.51e-6 {
            bad.push(format!(
                "columns row {row:?}: the oracle decodes {s:?} (noise run: {noise})"
            ));
            break;
        }
    }
    if !noise {
        bad.extend(check_export_gnuplot(dir, &file.samples));
    }
    bad
}

/// `export --format gnuplot`'s data file: per CPU, the bins' counts add up to the samples, and
/// the last non-empty bin is the one of the largest latency (each histogram bucket is counted
/// in the bin of its highest value: at most 1/1024 above the value, docs/user-guide.md), so the
/// worst case is in the data the plot draws.
fn check_export_gnuplot(dir: &Path, samples: &[Sample]) -> Vec<String> {
    let tmp = tempfile::tempdir().unwrap();
    let name = tmp.path().join("h");
    export(dir, "gnuplot", &["-o", name.to_str().unwrap()]);
    let dat = std::fs::read_to_string(tmp.path().join("h.dat")).unwrap();
    let mut bad = Vec::new();
    let width_us: u64 = dat
        .lines()
        .find_map(|l| l.split("(bins of ").nth(1))
        .and_then(|r| r.split(' ').next())
        .and_then(|w| w.parse().ok())
        .expect("the header states the bin width");
    let cpus: Vec<u32> = dat
        .lines()
        .find(|l| l.starts_with("# bin_us"))
        .expect("a column header")
        .split_whitespace()
        .skip(2)
        .map(|c| c.trim_start_matches("cpu").parse().unwrap())
        .collect();
    let rows: Vec<Vec<u64>> = dat
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(|x| x.parse().unwrap()).collect())
        .collect();
    for (k, cpu) in cpus.iter().enumerate() {
        let mine: Vec<i64> = samples
            .iter()
            .filter(|s| s.cpu == *cpu)
            .map(|s| s.latency_ns.max(0))
            .collect();
        let sum: u64 = rows.iter().map(|r| r[k + 1]).sum();
        if sum != mine.len() as u64 {
            bad.push(format!(
                "gnuplot cpu{cpu}: bins hold {sum}, the oracle counts {}",
                mine.len()
            ));
        }
        let max = mine.iter().copied().max().unwrap_or(0) as u64;
        let last = rows.iter().filter(|r| r[k + 1] > 0).map(|r| r[0]).max();
        let ok = last.is_some_and(|lo_us| {
            lo_us * 1000 <= max + max / 1024 && (lo_us + width_us) * 1000 > max
        });
        if !ok {
            bad.push(format!(
                "gnuplot cpu{cpu}: last non-empty bin {last:?} us (width {width_us} us), the oracle's max {max} ns"
            ));
        }
    }
    bad
}

/// `export --format summaries` of a run with `--summary-every n`: each block is n consecutive
/// recorded samples of one CPU, its figures exact.
fn check_export_summaries(dir: &Path, truth: &Truth, n: usize) -> Vec<String> {
    let out = export(dir, "summaries", &[]);
    let mut bad = Vec::new();
    let mut rows: BTreeMap<u32, Vec<Vec<String>>> = BTreeMap::new();
    for l in out.lines().skip(1) {
        let c: Vec<String> = l.split(',').map(String::from).collect();
        rows.entry(c[0].parse().unwrap()).or_default().push(c);
    }
    for (&cpu, samples) in &truth.by_cpu {
        let blocks: Vec<&[Sample]> = samples.chunks(n).collect();
        let got = rows.get(&cpu).map_or(&[][..], |r| &r[..]);
        if got.len() != blocks.len() {
            bad.push(format!(
                "summaries cpu{cpu}: {} blocks, the oracle makes {}",
                got.len(),
                blocks.len()
            ));
            continue;
        }
        for (row, b) in got.iter().zip(blocks) {
            let lat = b.iter().map(|s| s.latency_ns);
            let want = [
                ("first_seq", 1, b[0].seq.to_string()),
                ("last_seq", 2, b[b.len() - 1].seq.to_string()),
                ("samples", 3, b.len().to_string()),
                ("first_due_ns", 5, b[0].expected_ns.to_string()),
                ("last_due_ns", 6, b[b.len() - 1].expected_ns.to_string()),
                ("min_ns", 8, lat.clone().min().unwrap().to_string()),
                ("max_ns", 10, lat.clone().max().unwrap().to_string()),
                ("sum_ns", 11, lat.sum::<i64>().to_string()),
                (
                    "missed_periods",
                    12,
                    b.iter()
                        .map(|s| u64::from(s.missed))
                        .sum::<u64>()
                        .to_string(),
                ),
            ];
            for (name, col, w) in want {
                if row[col] != w {
                    bad.push(format!(
                        "summaries cpu{cpu} block from seq {}: {name} {}, the oracle says {w}",
                        b[0].seq, row[col]
                    ));
                }
            }
        }
    }
    bad
}

/// `compare --json A A`: every value the oracle's, ratio 1, difference 0, every interval
/// holding 0; the within-shares and spike rates of `tails` likewise.
fn check_compare_self(dir: &Path, truth: &Truth, missed: &BTreeMap<u32, u64>) -> Vec<String> {
    let v = compare_json(dir, dir);
    let mut bad = Vec::new();
    for scope in v["scopes"].as_array().unwrap() {
        let name = scope["scope"].as_str().unwrap();
        let (f, missed) = match scope["cpu"].as_u64() {
            Some(c) => (&truth.figures[&(c as u32)], missed[&(c as u32)]),
            None => (&truth.overall, missed.values().sum()),
        };
        for row in scope["rows"].as_array().unwrap() {
            let stat = row["statistic"].as_str().unwrap();
            let what = format!("compare {name} {stat}");
            let got = row["values"][0].as_f64();
            if row["values"][1].as_f64() != got {
                bad.push(format!(
                    "{what}: A {} but B {} (the same run)",
                    row["values"][0], row["values"][1]
                ));
            }
            let Some(got) = got else {
                bad.push(format!("{what}: no value"));
                continue;
            };
            let pct = PERCENTILES.iter().find(|p| metric_name(p.0) == stat);
            let ok = match (stat, pct) {
                ("min", _) => Ok(got == f.min() as f64),
                ("max", _) => Ok(got == f.max() as f64),
                ("mean", _) => Ok((got - f.mean).abs() <= f.mean.abs() * 1e-9 + 1e-6),
                ("missed", _) => Ok(got == missed as f64),
                (_, Some(&(_, num, den))) => {
                    f.percentile_agrees(num, den, got as i64).map(|_| true)
                }
                _ => Ok(true),
            };
            match ok {
                Ok(true) => {}
                Ok(false) => bad.push(format!("{what}: got {got}, the oracle disagrees")),
                Err(e) => bad.push(format!("{what}: {e}")),
            }
            let vs = &row["versus_first"][0];
            if got != 0.0 && vs["ratio"].as_f64() != Some(1.0) {
                bad.push(format!("{what}: ratio {} against itself", vs["ratio"]));
            }
            if vs["difference"].as_f64() != Some(0.0) {
                bad.push(format!(
                    "{what}: difference {} against itself",
                    vs["difference"]
                ));
            }
            let i = &vs["interval"];
            if i.is_object()
                && (i["low_ns"].as_f64().is_some_and(|l| l > 0.0)
                    || i["high_ns"].as_f64().is_some_and(|h| h < 0.0))
            {
                bad.push(format!(
                    "{what}: interval [{}, {}] excludes 0 against itself",
                    i["low_ns"], i["high_ns"]
                ));
            }
        }
    }
    for w in v["tails"]["within"].as_array().into_iter().flatten() {
        let cpu = w["cpu"].as_u64().unwrap() as u32;
        let f = &truth.figures[&cpu];
        let thr = w["threshold_ns"].as_i64().unwrap();
        let share = 100.0 * f.within(thr) as f64 / f.count() as f64;
        let got = w["percent"][0].as_f64().unwrap();
        if (got - share).abs() > 1e-9 {
            bad.push(format!(
                "compare tails cpu{cpu} within {thr} ns: {got} %, the oracle {share} %"
            ));
        }
        let d = &w["difference"][0];
        if !(d[0].as_f64() == Some(0.0)
            && d[1].as_f64().unwrap() <= 0.0
            && d[2].as_f64().unwrap() >= 0.0)
        {
            bad.push(format!(
                "compare tails cpu{cpu} within {thr} ns: difference {d} against itself"
            ));
        }
    }
    // A noise run's rows are its gaps over the threshold, each gap its own event
    // (docs/noise.md), and every gap is over the run's own threshold (the loop compared it in
    // its clock's ticks); a latency run's rows count runs of consecutive late wakeups once.
    let noise = v["runs"][0]["kind"] == "noise";
    let noise_threshold = std::fs::read_to_string(dir.join("run.json"))
        .ok()
        .and_then(|s| serde_json::from_str::<Value>(&s).ok())
        .and_then(|r| r["plan"]["noise_threshold_ns"].as_i64());
    for s in v["tails"]["spikes"].as_array().into_iter().flatten() {
        let cpu = s["cpu"].as_u64().unwrap() as u32;
        for r in s["rates"].as_array().unwrap() {
            let thr = r["threshold_ns"].as_i64().unwrap();
            if r["count_is_lower_bound"] == false {
                let samples = &truth.by_cpu[&cpu];
                let want = if noise && noise_threshold == Some(thr) {
                    samples.len() as u64
                } else if noise {
                    samples.iter().filter(|x| x.latency_ns > thr).count() as u64
                } else {
                    oracle::spike_count(samples, thr)
                };
                if r["count"].as_u64() != Some(want) {
                    bad.push(format!(
                        "compare tails cpu{cpu} spikes over {thr} ns: {}, the oracle counts {want}",
                        r["count"]
                    ));
                }
            }
            let (lo, x, hi) = (
                r["per_hour_low"].as_f64(),
                r["per_hour"].as_f64(),
                r["per_hour_high"].as_f64(),
            );
            if !matches!((lo, x, hi), (Some(l), Some(x), Some(h)) if l <= x && x <= h) {
                bad.push(format!("compare tails cpu{cpu} spike rate over {thr} ns: {x:?} outside [{lo:?}, {hi:?}]"));
            }
        }
    }
    bad
}

/// The per-CPU table of the run's terminal summary (`printed`, when the run printed one) and
/// of its HTML report (`jitterlab report RUN -o RUN.html`), against the oracle.
fn check_printed_tables(
    dir: &Path,
    printed: Option<&str>,
    run: &Value,
    truth: &Truth,
    noise: bool,
) -> Vec<String> {
    let page = dir.with_extension("html");
    let o = jitterlab(&[
        "report",
        dir.to_str().unwrap(),
        "-o",
        page.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "report: {}", text(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    // The terminal summary is one line per CPU (docs/user-guide.md); the report has every
    // figure.
    let (first, terminal, full): (_, &[&str], &[&str]) = if noise {
        const GAPS: &[&str] = &[
            "gaps",
            "p50 gap",
            "p99 gap",
            "p99.9 gap",
            "max gap",
            "noise time",
        ];
        (["CPU", "noise"], &["gaps", "p99 gap", "max gap"], GAPS)
    } else {
        (
            ["CPU", "wakeups"],
            &[
                "wakeups",
                "p50",
                "p99",
                "p99.9",
                "max",
                "missed",
                "over the deadline",
            ],
            &[
                "samples",
                "min",
                "mean",
                "stddev",
                "p50",
                "p90",
                "p99",
                "p99.9",
                "p99.99",
                "max",
                "missed periods",
                "deadline misses",
                "early",
            ],
        )
    };
    let mut bad = Vec::new();
    if let Some(printed) = printed {
        bad.extend(check_cpu_table(
            "terminal summary",
            &oracle::text_table(printed, &first),
            terminal,
            run,
            truth,
        ));
    }
    bad.extend(check_cpu_table(
        "HTML report",
        &oracle::html_table(&html, "numbers cpus"),
        full,
        run,
        truth,
    ));
    bad
}

/// One per-CPU table as printed: a row per CPU of the oracle, with every column of `columns`,
/// each figure the oracle's within its printed rounding (`oracle::printed_ns`) and the
/// documented precision (exact figures exact, percentiles within their HDR bucket, the mean
/// and stddev rounded to the ns first). A noise run's columns name gaps ("p99 gap").
fn check_cpu_table(
    what: &str,
    rows: &[Vec<(String, String)>],
    columns: &[&str],
    run: &Value,
    truth: &Truth,
) -> Vec<String> {
    let mut bad = Vec::new();
    if rows.len() != truth.figures.len() {
        bad.push(format!(
            "{what}: {} per-CPU rows, the oracle has {} CPUs",
            rows.len(),
            truth.figures.len()
        ));
    }
    for row in rows {
        let cell = |h: &str| row.iter().find(|(k, _)| k == h).map(|(_, v)| v.as_str());
        let cpu = cell("CPU").and_then(|c| c.parse::<u32>().ok());
        let Some((cpu, f)) = cpu.and_then(|c| Some((c, truth.figures.get(&c)?))) else {
            bad.push(format!("{what}: a row of no CPU the oracle knows: {row:?}"));
            continue;
        };
        let samples = &truth.by_cpu[&cpu];
        let t = run["threads"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["cpu"] == cpu)
            .unwrap();
        let count = |p: &dyn Fn(&Sample) -> bool| samples.iter().filter(|s| p(s)).count() as u64;
        let deadline = t["deadline_ns"].as_i64().unwrap_or(i64::MAX);
        let missed: u64 = samples.iter().map(|s| u64::from(s.missed)).sum();
        let dropped = t["dropped_records"].as_u64().unwrap_or(0);
        for &column in columns {
            let Some(text) = cell(column) else {
                bad.push(format!("{what} cpu{cpu}: no column {column:?}"));
                continue;
            };
            let figure = column.strip_suffix(" gap").unwrap_or(column);
            // A count: exact (missed periods also count the periods of dropped records).
            let counted = match figure {
                "samples" | "wakeups" | "gaps" => Some((f.count(), 0)),
                // Spikes: runs of consecutive wakeups over the deadline, counted once each.
                "over the deadline" => Some((
                    samples
                        .iter()
                        .zip(std::iter::once(None).chain(samples.iter().map(Some)))
                        .filter(|(s, before)| {
                            s.latency_ns > deadline
                                && !before.is_some_and(|b| b.latency_ns > deadline)
                        })
                        .count() as u64,
                    0,
                )),
                "missed" | "missed periods" => Some((missed, dropped)),
                "> deadline" | "deadline misses" => {
                    Some((count(&|s: &Sample| s.latency_ns > deadline), 0))
                }
                "early" => Some((count(&|s: &Sample| s.latency_ns < 0), 0)),
                _ => None,
            };
            if let Some((want, slack)) = counted {
                // "3 (>1.00 ms)", "3 > 1.00 ms, once in 1.0 s": the count first; "none > ..."
                // is 0.
                // Digits grouped by spaces ("1 234 > 1.00 ms").
                let lead = text.split(" > ").next().unwrap_or(text);
                let got = match lead.split(' ').next() {
                    Some("none") => Some(0),
                    _ if figure == "over the deadline" => lead.replace(' ', "").parse::<u64>().ok(),
                    n => n.and_then(|n| n.parse::<u64>().ok()),
                };
                if !got.is_some_and(|g| g >= want && (slack > 0 || g == want)) {
                    bad.push(format!(
                        "{what} cpu{cpu} {column}: printed {text:?}, the oracle counts {want}"
                    ));
                }
                if figure == "over the deadline" {
                    bad.extend(once_in_mismatch(what, cpu, text, want, samples, truth));
                }
                continue;
            }
            // A latency: the range of ns the oracle accepts before the printed rounding.
            let exact = |v: f64, rel: f64| (v - 0.5 - v.abs() * rel, v + 0.5 + v.abs() * rel);
            let (lo, hi) = match figure {
                "min" => (f.min() as f64, f.min() as f64),
                "max" => (f.max() as f64, f.max() as f64),
                "mean" => exact(f.mean, 1e-9),
                "stddev" => exact(f.stddev, 1e-6),
                "noise time" => {
                    let sum: i64 = f.sorted.iter().sum();
                    (sum as f64, sum as f64)
                }
                p => {
                    let &(_, num, den) = PERCENTILES
                        .iter()
                        .find(|x| metric_name(x.0) == p)
                        .unwrap_or_else(|| panic!("{what}: no oracle for column {column:?}"));
                    let (lo, hi) = f.percentile_range(num, den);
                    (lo as f64, hi as f64)
                }
            };
            match oracle::printed_ns(text) {
                Some((v, half)) if v + half + 1e-6 >= lo && v - half - 1e-6 <= hi => {}
                _ => bad.push(format!(
                    "{what} cpu{cpu} {column}: printed {text:?}, the oracle says {lo}..={hi} ns (before rounding to the printed digits)"
                )),
            }
        }
    }
    bad
}

/// The spikes cell's time ("3 > 1.00 ms, once in 1.0 s", "none > 1.00 ms in 3.0 s") against
/// the oracle: the time observed (`oracle::observed_ns`) divided by the `count` spikes, or the
/// time observed itself without spikes, within the printed rounding.
fn once_in_mismatch(
    what: &str,
    cpu: u32,
    text: &str,
    count: u64,
    samples: &[Sample],
    truth: &Truth,
) -> Option<String> {
    let observed = oracle::observed_ns(samples, truth.start_ns);
    let (span, want) = match text.split_once(", once in ") {
        Some((_, span)) if count > 0 => (span.trim_start_matches("≤ "), observed / count),
        _ => (text.rsplit_once(" in ").map_or("", |(_, s)| s), observed),
    };
    match oracle::printed_span_ns(span) {
        Some((v, half)) if (v - want as f64).abs() <= half + 1.0 => None,
        _ => Some(format!(
            "{what} cpu{cpu} over the deadline: printed {text:?}, the oracle says once in {want} ns (observed {observed} ns over {count} spikes)"
        )),
    }
}

fn missed_per_cpu(truth: &Truth) -> BTreeMap<u32, u64> {
    truth
        .by_cpu
        .iter()
        .map(|(&c, s)| (c, s.iter().map(|s| u64::from(s.missed)).sum()))
        .collect()
}

/// Runs `args` for real into `out`; run.json and what the run printed (its summary).
fn real_run(test: &str, args: &[&str], out: &Path) -> Option<(Value, String)> {
    if !realtime_on_two_cpus(test) {
        return None;
    }
    let mut argv = args.to_vec();
    argv.extend(["--quiet", "--out", out.to_str().unwrap()]);
    // Not through `jitterlab()`: its invariant check would stop the test before the oracle's
    // checks; the tests add the invariants' violations to their own list instead.
    let o = std::process::Command::new(bin())
        .args(&argv)
        .output()
        .unwrap();
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{args:?}: {}",
        text(&o)
    );
    Some((run_json(out), String::from_utf8(o.stdout).unwrap()))
}

const BUDGET: &str = "under(100us)>=90%,max<200ms";

#[test]
fn a_spike_run_on_both_cpus_equals_the_oracle() {
    let _g = exclusive();
    let (_base, out) = temp_out();
    let Some((run, printed)) = real_run(
        "a_spike_run_on_both_cpus_equals_the_oracle",
        &[
            "run",
            "--duration",
            "5s",
            "--cpus",
            "0-1",
            "--samples",
            "--summary-every",
            "1000",
            "--under",
            "50us",
            "--budget",
            BUDGET,
            "--load",
            "spike:cpu=0,every=250ms,len=1.5ms",
            "--load",
            "spike:cpu=1,every=400ms,len=600us",
        ],
        &out,
    ) else {
        return;
    };
    let truth = Truth::read(&out, false);
    let mut bad = check_threads(&run, &truth, false);
    bad.extend(check_export_samples(&out, false));
    bad.extend(check_export_json(&out, &truth));
    bad.extend(check_export_cyclictest(&out, &truth));
    bad.extend(check_export_lava(&out, &truth, &run, BUDGET));
    bad.extend(check_export_junit(&out, &truth, BUDGET));
    bad.extend(check_export_openmetrics(&out, &truth, &run));
    bad.extend(check_export_summaries(&out, &truth, 1000));
    bad.extend(check_compare_self(&out, &truth, &missed_per_cpu(&truth)));
    bad.extend(check_printed_tables(
        &out,
        Some(&printed),
        &run,
        &truth,
        false,
    ));
    bad.extend(violations(&out));
    assert_none("spike run", bad);
}

#[test]
fn a_scenario_run_with_phases_equals_the_oracle() {
    let _g = exclusive();
    let (base, out) = temp_out();
    let scenario = base.path().join("two.toml");
    std::fs::write(
        &scenario,
        "[[phase]]\nlabel = \"quiet\"\nduration = \"3s\"\nloads = []\n\n\
         [[phase]]\nlabel = \"proc\"\nduration = \"3s\"\nloads = [\"proc\"]\n",
    )
    .unwrap();
    let Some((run, printed)) = real_run(
        "a_scenario_run_with_phases_equals_the_oracle",
        &[
            "run",
            "--scenario",
            scenario.to_str().unwrap(),
            "--cpus",
            "0-1",
            "--samples",
            // The older layout, so that the oracle's format-1 decoder is held against
            // jitterlab's own reader (the csv export) too.
            "--samples-format",
            "1",
            "--log-interval",
            "1s",
        ],
        &out,
    ) else {
        return;
    };
    let truth = Truth::read(&out, false);
    let mut bad = check_threads(&run, &truth, false);
    bad.extend(check_export_samples(&out, false));
    // Each phase's figures: the samples due in its planned window (whole log intervals of
    // 1 s: [0, 3 s) and [3 s, 6 s)), at histogram precision.
    let windows = [("quiet", 0, 3_000 * MS), ("proc", 3_000 * MS, 6_000 * MS)];
    for p in run["phases"].as_array().unwrap() {
        let label = p["label"].as_str().unwrap();
        let &(_, from, to) = windows.iter().find(|w| w.0 == label).unwrap();
        for pt in p["threads"].as_array().unwrap() {
            let cpu = pt["cpu"].as_u64().unwrap() as u32;
            let f = oracle::figures_between(&truth.by_cpu[&cpu], truth.start_ns, from, to);
            bad.extend(oracle::summary_mismatches(
                &format!("phase {label} cpu{cpu}"),
                pt,
                &f,
                true,
            ));
        }
    }
    // The phases cover the run: their samples add up to the run's.
    for t in run["threads"].as_array().unwrap() {
        let sum: u64 = run["phases"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|p| p["threads"].as_array().unwrap())
            .filter(|pt| pt["cpu"] == t["cpu"])
            .map(|pt| pt["samples"].as_u64().unwrap())
            .sum();
        if Some(sum) != t["samples"].as_u64() {
            bad.push(format!(
                "cpu{}: phases hold {sum} samples, the run {}",
                t["cpu"], t["samples"]
            ));
        }
    }
    bad.extend(check_compare_self(&out, &truth, &missed_per_cpu(&truth)));
    bad.extend(check_printed_tables(
        &out,
        Some(&printed),
        &run,
        &truth,
        false,
    ));
    bad.extend(violations(&out));
    assert_none("scenario run", bad);
}

#[test]
fn a_noise_run_equals_the_oracle() {
    let _g = exclusive();
    let (_base, out) = temp_out();
    let Some((run, printed)) = real_run(
        "a_noise_run_equals_the_oracle",
        &["noise", "--duration", "4s", "--cpus", "0-1", "--samples"],
        &out,
    ) else {
        return;
    };
    let truth = Truth::read(&out, true);
    let all = oracle::per_cpu(&oracle::read_samples(&out.join("samples.bin")).samples);
    let mut bad = check_threads(&run, &truth, true);
    for t in run["threads"].as_array().unwrap() {
        let cpu = t["cpu"].as_u64().unwrap() as u32;
        let n = &t["noise"];
        let gaps = &truth.by_cpu[&cpu];
        let throttled: Vec<&Sample> = all[&cpu].iter().filter(|s| s.missed == 1).collect();
        for (k, want) in [
            (
                "noise_ns",
                gaps.iter().map(|s| s.latency_ns as u64).sum::<u64>(),
            ),
            ("throttled_gaps", throttled.len() as u64),
            (
                "throttled_ns",
                throttled.iter().map(|s| s.latency_ns as u64).sum(),
            ),
        ] {
            if n[k].as_u64() != Some(want) {
                bad.push(format!(
                    "noise cpu{cpu} {k}: got {}, the oracle says {want}",
                    n[k]
                ));
            }
        }
    }
    bad.extend(check_export_samples(&out, true));
    bad.extend(check_export_json(&out, &truth));
    // A gap has no missed periods: compare shows run.json's count (not in samples.bin).
    let missed = run["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["cpu"].as_u64().unwrap() as u32,
                t["missed_periods"].as_u64().unwrap(),
            )
        })
        .collect();
    bad.extend(check_compare_self(&out, &truth, &missed));
    bad.extend(check_printed_tables(
        &out,
        Some(&printed),
        &run,
        &truth,
        true,
    ));
    bad.extend(violations(&out));
    assert_none("noise run", bad);
}

// ---- synthetic runs ----

/// A latency that depends only on the CPU and the due time (so that a run can be rewritten
/// shifted or with every sample twice): mostly 10-50 us, one in 500 a spike of 0.2-3 ms.
fn known_latency(cpu: usize, due_ms: u64) -> i64 {
    let mut x = (due_ms + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (cpu as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03);
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 29;
    if x.is_multiple_of(500) {
        200_000 + (x >> 20) as i64 % 2_800_000
    } else {
        10_000 + (x >> 16) as i64 % 40_000
    }
}

/// Writes a synthetic run of 20 s on CPUs 0 and 1 at `interval_ns` (each due time's latency
/// `known_latency(cpu, due in whole ms) + shift`), with phases [0, 8 s) and [8 s, 20 s);
/// returns the oracle's truth of what was written.
fn synthetic(dir: &Path, interval_ns: u64, shift: i64) -> Truth {
    let run = SyntheticRun {
        cpus: vec![0, 1],
        interval_ns,
        log_interval_ns: 1000 * MS,
        duration_ns: 20_000 * MS,
        phases: vec![
            SyntheticPhase::seconds("first", 0, 8),
            SyntheticPhase::seconds("second", 8, 20),
        ],
        loads: vec![],
        warnings: vec![],
        seed: 3,
    };
    let mut written: BTreeMap<u32, Vec<Sample>> = BTreeMap::new();
    write_run(dir, &run, |cpu, due, _| {
        let ns = known_latency(cpu, due / MS) + shift;
        let v = written.entry(cpu as u32).or_default();
        let seq = v.len() as u64;
        v.push(Sample {
            cpu: cpu as u32,
            missed: (ns.max(0) as u64 / interval_ns) as u32,
            seq,
            expected_ns: due,
            latency_ns: ns,
            irq_latency_ns: None,
        });
        ns
    })
    .unwrap();
    written
        .values_mut()
        .for_each(|v| v.sort_by_key(|s| s.expected_ns));
    Truth::from_samples(0, written)
}

#[test]
fn a_synthetic_run_equals_the_oracle() {
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("run");
    let truth = synthetic(&dir, MS, 0);
    let run = run_json(&dir);
    let mut bad = violations(&dir);
    bad.extend(check_threads(&run, &truth, false));
    for p in run["phases"].as_array().unwrap() {
        let (from, to) = if p["label"] == "first" {
            (0, 8_000 * MS)
        } else {
            (8_000 * MS, 20_000 * MS)
        };
        for pt in p["threads"].as_array().unwrap() {
            let cpu = pt["cpu"].as_u64().unwrap() as u32;
            let f = oracle::figures_between(&truth.by_cpu[&cpu], 0, from, to);
            bad.extend(oracle::summary_mismatches(
                &format!("phase {} cpu{cpu}", p["label"]),
                pt,
                &f,
                true,
            ));
        }
    }
    bad.extend(check_export_json(&dir, &truth));
    bad.extend(check_export_cyclictest(&dir, &truth));
    bad.extend(check_export_openmetrics(&dir, &truth, &run));
    // A synthetic run has no recorder counts of within-shares: `under()` is refused there
    // (not counted in this run), so its budget judges figures only.
    bad.extend(check_export_lava(&dir, &truth, &run, "max<200ms,p99<1s"));
    bad.extend(check_compare_self(&dir, &truth, &missed_per_cpu(&truth)));
    bad.extend(check_printed_tables(&dir, None, &run, &truth, false));
    assert_none("synthetic run", bad);
}

#[test]
fn shifting_every_sample_shifts_every_latency_figure() {
    let base = tempfile::tempdir().unwrap();
    let (a, b) = (base.path().join("a"), base.path().join("b"));
    const D: i64 = 7_000;
    synthetic(&a, MS, 0);
    let truth_b = synthetic(&b, MS, D);
    let (ra, rb) = (run_json(&a), run_json(&b));
    let mut bad = check_threads(&rb, &truth_b, false);
    for (ta, tb) in ra["threads"]
        .as_array()
        .unwrap()
        .iter()
        .zip(rb["threads"].as_array().unwrap())
    {
        let what = format!("cpu{}", ta["cpu"]);
        for k in ["min_ns", "max_ns"] {
            if tb[k].as_i64() != ta[k].as_i64().map(|v| v + D) {
                bad.push(format!(
                    "{what} {k}: {} shifted by {D} is not {}",
                    ta[k], tb[k]
                ));
            }
        }
        let (ma, mb) = (
            ta["mean_ns"].as_f64().unwrap(),
            tb["mean_ns"].as_f64().unwrap(),
        );
        if (mb - ma - D as f64).abs() > 1e-6 * mb {
            bad.push(format!("{what} mean: {ma} shifted by {D} is not {mb}"));
        }
        let (sa, sb) = (
            ta["stddev_ns"].as_f64().unwrap(),
            tb["stddev_ns"].as_f64().unwrap(),
        );
        if (sa - sb).abs() > 1e-6 * sa {
            bad.push(format!("{what} stddev: {sa} changed to {sb} by a shift"));
        }
        for &(k, ..) in PERCENTILES {
            let (pa, pb) = (ta[k].as_i64().unwrap(), tb[k].as_i64().unwrap());
            // Both are bucket tops: the shift holds within a bucket of the larger value.
            if (pb - pa - D).abs() > pb / 1024 + 1 {
                bad.push(format!(
                    "{what} {k}: {pa} shifted by {D} is not {pb} (within {})",
                    pb / 1024 + 1
                ));
            }
        }
    }
    // compare A B: every latency difference is D, and its interval holds D.
    let v = compare_json(&a, &b);
    for scope in v["scopes"].as_array().unwrap() {
        for row in scope["rows"].as_array().unwrap() {
            if row["unit"] != "ns" {
                continue;
            }
            let what = format!("compare {} {}", scope["scope"], row["statistic"]);
            let vs = &row["versus_first"][0];
            let d = vs["difference"].as_f64().unwrap();
            let tol = row["values"][1].as_f64().unwrap() / 1024.0 + 1.0;
            if (d - D as f64).abs() > tol {
                bad.push(format!("{what}: difference {d}, the shift is {D}"));
            }
            let i = &vs["interval"];
            if i.is_object()
                && (i["low_ns"].as_f64().is_some_and(|l| l > D as f64 + tol)
                    || i["high_ns"].as_f64().is_some_and(|h| h < D as f64 - tol))
            {
                bad.push(format!(
                    "{what}: interval [{}, {}] excludes the shift {D}",
                    i["low_ns"], i["high_ns"]
                ));
            }
        }
    }
    assert_none("shifted run", bad);
}

#[test]
fn duplicating_every_sample_keeps_every_figure() {
    let base = tempfile::tempdir().unwrap();
    let (once, twice) = (base.path().join("once"), base.path().join("twice"));
    let truth = synthetic(&once, MS, 0);
    // At 0.5 ms every whole millisecond is due twice, with the same latency.
    let truth2 = synthetic(&twice, MS / 2, 0);
    let (r1, r2) = (run_json(&once), run_json(&twice));
    let mut bad = Vec::new();
    for (t1, t2) in r1["threads"]
        .as_array()
        .unwrap()
        .iter()
        .zip(r2["threads"].as_array().unwrap())
    {
        let cpu = t1["cpu"].as_u64().unwrap() as u32;
        assert_eq!(
            truth2.figures[&cpu].count(),
            2 * truth.figures[&cpu].count()
        );
        if t2["samples"].as_u64() != t1["samples"].as_u64().map(|n| 2 * n) {
            bad.push(format!(
                "cpu{cpu}: {} samples twice are not {}",
                t1["samples"], t2["samples"]
            ));
        }
        for k in [
            "min_ns", "max_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns", "p9999_ns",
        ] {
            if t1[k] != t2[k] {
                bad.push(format!(
                    "cpu{cpu} {k}: {} with every sample twice, {} once",
                    t2[k], t1[k]
                ));
            }
        }
        for k in ["mean_ns", "stddev_ns"] {
            let (a, b) = (t1[k].as_f64().unwrap(), t2[k].as_f64().unwrap());
            if (a - b).abs() > 1e-6 * a {
                bad.push(format!(
                    "cpu{cpu} {k}: {b} with every sample twice, {a} once"
                ));
            }
        }
        bad.extend(oracle::summary_mismatches(
            &format!("twice cpu{cpu}"),
            t2,
            &truth2.figures[&cpu],
            false,
        ));
    }
    assert_none("duplicated samples", bad);
}

// ---- coverage of the 95 % intervals ----

/// xorshift64*: the repetitions' own generator, independent of the crate's.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in [0, 1).
    fn uniform(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

const REPETITIONS: usize = 200;
/// At least 93 % of 200.
const MIN_COVERED: usize = 186;

fn assert_coverage(what: &str, covered: usize) {
    eprintln!("{what}: {covered} of {REPETITIONS} intervals hold the true value");
    assert!(
        covered >= MIN_COVERED,
        "{what}: the 95 % interval held the true value in only {covered} of {REPETITIONS} repetitions (at least {MIN_COVERED} expected)"
    );
}

/// Interval histograms (30 of 100 samples) of uniform [lo, hi) ns.
fn uniform_slots(
    rng: &mut XorShift,
    lo: f64,
    hi: f64,
) -> Vec<jitterlab::analysis::quantile::Sparse> {
    use jitterlab::analysis::quantile::sparse;
    (0..30)
        .map(|_| {
            let mut h = jitterlab::format::stats::new_histogram();
            for _ in 0..100 {
                h.record((lo + (hi - lo) * rng.uniform()) as u64).unwrap();
            }
            sparse(&h)
        })
        .collect()
}

#[test]
fn compare_percentile_intervals_cover_the_true_difference() {
    use jitterlab::analysis::compare::{CONFIDENCE, MAX_BLOCKS, REPLICATES};
    use jitterlab::analysis::quantile::{
        Blocks, bootstrap_difference, merge_into, order_statistic_difference,
    };
    // A: uniform [10, 50) us; B: uniform [15, 75) us. True differences of the quantiles:
    // p50 45 - 30 us, p90 69 - 46 us. Histogram values are bucket tops (up to 1/1024 high).
    let qs = [0.5, 0.9];
    let truth = |q: f64| (15_000.0 + 60_000.0 * q) - (10_000.0 + 40_000.0 * q);
    let mut rng = XorShift(0x5eed_0001);
    let (mut boot, mut order) = ([0usize; 2], [0usize; 2]);
    for rep in 0..REPETITIONS {
        let (a, b) = (
            uniform_slots(&mut rng, 10_000.0, 50_000.0),
            uniform_slots(&mut rng, 15_000.0, 75_000.0),
        );
        let holds = |low: Option<f64>, high: Option<f64>, q: f64| {
            let t = truth(q);
            let tol = (15_000.0 + 60_000.0 * q) / 1024.0;
            low.is_none_or(|l| l <= t + tol) && high.is_none_or(|h| t - tol <= h)
        };
        let bounds = bootstrap_difference(
            &Blocks::new(&a, MAX_BLOCKS),
            &Blocks::new(&b, MAX_BLOCKS),
            &qs,
            REPLICATES,
            CONFIDENCE,
            rep as u64 + 1,
        );
        let (mut ma, mut mb) = (Vec::new(), Vec::new());
        a.iter().for_each(|s| merge_into(&mut ma, s));
        b.iter().for_each(|s| merge_into(&mut mb, s));
        for (k, &q) in qs.iter().enumerate() {
            boot[k] += holds(bounds[k].low, bounds[k].high, q) as usize;
            let o = order_statistic_difference(&ma, &mb, q, CONFIDENCE);
            order[k] += holds(o.low, o.high, q) as usize;
        }
    }
    for (k, q) in qs.iter().enumerate() {
        assert_coverage(&format!("bootstrap p{}", q * 100.0), boot[k]);
        assert_coverage(&format!("order-statistic p{}", q * 100.0), order[k]);
    }
}

#[test]
fn within_share_intervals_cover_the_true_share() {
    use jitterlab::analysis::tails::exceedance::{Exceedance, share_difference};
    let mut rng = XorShift(0x5eed_0002);
    // Shares of uniform [10, 50) us within 45 us (0.875) and 49.6 us (0.99), and between two
    // runs: B uniform [10, 60) us within 45 us (0.7).
    let (mut wide, mut narrow, mut diff) = (0, 0, 0);
    for _ in 0..REPETITIONS {
        let a: Vec<u64> = (0..2000)
            .map(|_| (10_000.0 + 40_000.0 * rng.uniform()) as u64)
            .collect();
        let b: Vec<u64> = (0..2000)
            .map(|_| (10_000.0 + 50_000.0 * rng.uniform()) as u64)
            .collect();
        let small: Vec<u64> = a[..500].to_vec();
        let ea = Exceedance::from_samples(&a, 45_000);
        let (l, h) = ea.share_interval(0.95).unwrap();
        wide += (l <= 0.875 && 0.875 <= h) as usize;
        let (l, h) = Exceedance::from_samples(&small, 49_600)
            .share_interval(0.95)
            .unwrap();
        narrow += (l <= 0.99 && 0.99 <= h) as usize;
        let (l, h) = share_difference(&ea, &Exceedance::from_samples(&b, 45_000), 0.95).unwrap();
        diff += (l <= -0.175 && -0.175 <= h) as usize;
    }
    assert_coverage("Wilson, share 0.875 of 2000", wide);
    assert_coverage("Wilson, share 0.99 of 500", narrow);
    assert_coverage("Newcombe, difference -0.175", diff);
}

#[test]
fn spike_rate_intervals_cover_the_true_rate() {
    use jitterlab::analysis::tails::spikes::spike_rate;
    let mut rng = XorShift(0x5eed_0003);
    // Spikes at a constant rate (exponential gaps) over an hour's exposure: means 3 and 40.
    for per_hour in [3.0f64, 40.0] {
        let mut covered = 0;
        for _ in 0..REPETITIONS {
            let (mut t, mut count) = (0.0, 0u64);
            loop {
                t += -(1.0 - rng.uniform()).ln() / per_hour;
                if t > 1.0 {
                    break;
                }
                count += 1;
            }
            let r = spike_rate(count, 3_600_000_000_000, 0.95);
            covered += (r.per_hour_low <= per_hour && per_hour <= r.per_hour_high) as usize;
        }
        assert_coverage(&format!("Garwood, {per_hour} spikes per hour"), covered);
    }
}

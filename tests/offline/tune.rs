//! `jitterlab tune`'s figures, re-derived (issue 43): arms are written as synthetic runs whose
//! every latency the test knows, the tune's record is made from them by the code `tune` runs
//! (`tune::effect`, `tune::record::ranked`) and printed as `tune --json` prints it, and each
//! figure of the JSON is held against a naive re-computation in the oracle's spirit
//! (tests/common/oracle.rs): percentiles by sorting (nearest rank, within the HDR bucket),
//! the maximum exact, the rate of missed deadlines by counting, the rate's interval by summing
//! the binomial tails at its bounds, the order-statistic interval by its ranks, and the
//! interval between rounds (each round's log ratio from its two arms' samples, their spread
//! times Student's t from a table) that every interval is widened to hold. Then
//! `jitterlab report` of the tune directory draws the ranking from tune.json.

use crate::common::*;
use jitterlab::format::tune::{ArmRecord, TuneEnded, TuneRecord, UnmeasuredFix};
use jitterlab::results::loaded::{self, LoadedRun};
use jitterlab::results::synthetic::{SyntheticRun, write_run};
use jitterlab::tune::effect::effect;
use jitterlab::tune::record::ranked;
use serde_json::Value;
use std::path::Path;

const MS: u64 = 1_000_000;
const CPUS: [usize; 2] = [0, 1];

/// An arm's latency at `due` on `cpu`: 10-40 us from a hash of (seed, cpu, due), and, when
/// `every` > 0, 2 ms (over the 1 ms deadline) once in `every` wakeups.
fn latency(seed: u64, every: u64, cpu: usize, due: u64) -> i64 {
    let mut h = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(cpu as u64 * 0xBF58_476D_1CE4_E5B9)
        .wrapping_add(due);
    h ^= h >> 31;
    h = h.wrapping_mul(0x94D0_49BB_1331_11EB);
    h ^= h >> 29;
    let k = due / MS;
    if every > 0 && (k + seed).is_multiple_of(every) {
        2_000_000 + (h % 1000) as i64
    } else {
        10_000 + (h % 30_000) as i64
    }
}

/// An arm of `seconds` s at 1 ms on both CPUs, its log every `log_ms` ms.
struct ArmSpec {
    seed: u64,
    every: u64,
    seconds: u64,
    log_ms: u64,
}

fn write_arm(dir: &Path, a: &ArmSpec) -> LoadedRun {
    let run = SyntheticRun {
        cpus: CPUS.to_vec(),
        interval_ns: MS,
        log_interval_ns: a.log_ms * MS,
        duration_ns: a.seconds * 1000 * MS,
        phases: vec![],
        loads: vec![],
        warnings: vec![],
        seed: a.seed,
    };
    let (seed, every) = (a.seed, a.every);
    write_run(dir, &run, |cpu, due, _| latency(seed, every, cpu, due)).unwrap();
    loaded::load(dir).unwrap()
}

/// Every latency of an arm, as the oracle knows them: each CPU woken at every multiple of
/// 1 ms in the arm.
fn samples(a: &ArmSpec) -> Vec<i64> {
    (0..a.seconds * 1000)
        .flat_map(|k| CPUS.map(|c| latency(a.seed, a.every, c, k * MS)))
        .collect()
}

/// Nearest rank: the sample of rank ceil(q·n) of the sorted samples.
fn nearest_rank(sorted: &[i64], q: f64) -> i64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).max(1);
    sorted[rank - 1]
}

/// A reported percentile `p` agrees with the exact sample `x` within the HDR bucket.
fn within_bucket(p: f64, x: i64) -> bool {
    let x = x as f64;
    x <= p && p <= x + x / 1024.0 + 1.0
}

/// P(X <= k) for X ~ Binomial(n, p), term by term (ln C(n, i) carried from one term to the
/// next).
fn binomial_at_most(k: u64, n: u64, p: f64) -> f64 {
    let (lp, lq) = (p.ln(), (1.0 - p).ln());
    let mut ln_choose = 0.0f64;
    let mut sum = 0.0;
    for i in 0..=k.min(n) {
        if i > 0 {
            ln_choose += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        sum += (ln_choose + i as f64 * lp + (n - i) as f64 * lq).exp();
    }
    sum
}

/// The naive order-statistic ranks of the q-quantile at `confidence`: the largest l with
/// P(K < l) <= tail and the smallest u with P(K >= u) <= tail, K ~ Binomial(n, q).
fn ranks(n: u64, q: f64, confidence: f64) -> (u64, u64) {
    let tail = (1.0 - confidence) / 2.0;
    let mode = (n as f64 * q) as u64;
    let mut l = mode;
    while l > 1 && binomial_at_most(l - 1, n, q) > tail {
        l -= 1;
    }
    let mut u = mode;
    while u < n && 1.0 - binomial_at_most(u - 1, n, q) > tail {
        u += 1;
    }
    (l, u)
}

fn figure<'a>(fix: &'a Value, statistic: &str) -> &'a Value {
    fix["effect"]["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["statistic"] == statistic)
        .unwrap_or_else(|| panic!("no {statistic} in {fix:#}"))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// The oracle's samples of one group: pooled (sorted) and each arm's (sorted), in round order.
struct Samples {
    pooled: Vec<i64>,
    arms: Vec<Vec<i64>>,
}

impl std::ops::Deref for Samples {
    type Target = [i64];
    fn deref(&self) -> &[i64] {
        &self.pooled
    }
}

/// Writes the arms under `root` (`<k>-<name>`), baseline first, and returns the tune record
/// made from them as `tune` makes it, with the oracle's samples of each group.
fn tune_of(root: &Path, groups: &[(&'static str, Vec<ArmSpec>)]) -> (TuneRecord, Vec<Samples>) {
    let mut runs: Vec<Vec<LoadedRun>> = Vec::new();
    let mut pooled: Vec<Samples> = Vec::new();
    let mut arms = Vec::new();
    for (name, specs) in groups {
        let mut group = Vec::new();
        let mut all = Vec::new();
        let mut each = Vec::new();
        for (k, spec) in specs.iter().enumerate() {
            let dir = format!("{:02}-{name}", k + 1);
            group.push(write_arm(&root.join(&dir), spec));
            let mut mine = samples(spec);
            all.extend(mine.iter().copied());
            mine.sort_unstable();
            each.push(mine);
            arms.push(ArmRecord {
                round: k + 1,
                treatment: name.to_string(),
                dir,
                ended: "completed".into(),
                settings: Vec::new(),
                warnings: Vec::new(),
            });
        }
        all.sort_unstable();
        runs.push(group);
        pooled.push(Samples {
            pooled: all,
            arms: each,
        });
    }
    let names: Vec<&str> = groups[1..].iter().map(|(n, _)| *n).collect();
    let effects = (1..groups.len())
        .map(|i| effect(&runs[0], &runs[i]))
        .collect();
    let record = TuneRecord {
        format: 1,
        confidence: 0.95,
        cpus: CPUS.to_vec(),
        rounds: groups[0].1.len(),
        arm_duration_ns: Some(groups[0].1[0].seconds * 1000 * MS),
        measured: Vec::new(),
        not_measured: vec![UnmeasuredFix {
            name: "pm-qos".into(),
            why: "no cpuidle driver: the CPUs have no idle states for PM QoS to keep them out of"
                .into(),
            needs_reboot: false,
        }],
        arms,
        fixes: ranked(&names, effects),
        together: None,
        deploy: Vec::new(),
        ended: Some(TuneEnded::Completed),
        end_reason: None,
    };
    (record, pooled)
}

/// Student's t at 97.5 % (a 95 % two-sided interval), by degrees of freedom, as tabulated.
fn student_t(dof: usize) -> f64 {
    match dof {
        1 => 12.7062,
        2 => 4.3027,
        3 => 3.1824,
        _ => panic!("no t tabulated here for {dof} degrees of freedom"),
    }
}

/// The interval between rounds from the rounds' log ratios: exp(m ± t·s/√R), m their mean and
/// s their standard deviation (R - 1 in the denominator).
fn rounds_bounds(logs: &[f64]) -> (f64, f64) {
    let r = logs.len() as f64;
    let mean = logs.iter().sum::<f64>() / r;
    let s = (logs.iter().map(|l| (l - mean) * (l - mean)).sum::<f64>() / (r - 1.0)).sqrt();
    let half = student_t(logs.len() - 1) * s / r.sqrt();
    ((mean - half).exp(), (mean + half).exp())
}

/// How far a latency's interval between rounds may be from the oracle's: each round's ratio
/// is the product's from HDR buckets (a value up to 1/1024 above the sample), so each log ratio
/// is within 2/1024 of the oracle's (so is their mean), and at 2 rounds the half-width
/// (t·|d1 - d2|/2, t = 12.71) within 12.71 · 2/1024 = 0.025 of it.
const ROUND_SLACK: f64 = 0.03;

/// `got` is `want` within `rel` of it.
fn near(got: f64, want: f64, rel: f64) -> bool {
    (got - want).abs() <= rel * want.abs() + 1e-12
}

/// A latency figure's (quantile `q`) interval between rounds, from each round's two arms'
/// samples (nearest rank).
fn latency_rounds_bounds(q: f64, a: &Samples, b: &Samples) -> (f64, f64) {
    let logs: Vec<f64> = a
        .arms
        .iter()
        .zip(&b.arms)
        .map(|(a, b)| (nearest_rank(b, q) as f64 / nearest_rank(a, q) as f64).ln())
        .collect();
    rounds_bounds(&logs)
}

/// Each latency figure of `fix` against the oracle's pooled samples of the baseline (`a`) and
/// the fix (`b`); returns the p99.9 figure.
fn check_latencies<'a>(fix: &'a Value, a: &Samples, b: &Samples) -> &'a Value {
    for (statistic, q) in [("p99", 0.99), ("p99.9", 0.999)] {
        let fig = figure(fix, statistic);
        assert_eq!(fig["unit"], "ns", "{fig}");
        let (va, vb) = (f(&fig["baseline"]), f(&fig["with_fix"]));
        assert!(
            within_bucket(va, nearest_rank(a, q)),
            "{statistic} baseline {va} vs {}",
            nearest_rank(a, q)
        );
        assert!(
            within_bucket(vb, nearest_rank(b, q)),
            "{statistic} with fix {vb} vs {}",
            nearest_rank(b, q)
        );
        assert!((f(&fig["ratio"]) - vb / va).abs() < 1e-9, "{fig}");
        let (lo, hi) = (f(&fig["ratio_low"]), f(&fig["ratio_high"]));
        assert!(lo <= f(&fig["ratio"]) && f(&fig["ratio"]) <= hi, "{fig}");
        // The interval holds the one between rounds (ROUND_SLACK: each round's ratio is
        // the product's within its HDR buckets).
        let (rl, rh) = latency_rounds_bounds(q, a, b);
        assert!(
            lo <= rl * (1.0 + ROUND_SLACK) && hi >= rh * (1.0 - ROUND_SLACK),
            "{statistic}: {fig} vs rounds [{rl}, {rh}]"
        );
    }
    let max = figure(fix, "max");
    assert_eq!(max["unit"], "ns");
    assert_eq!(f(&max["baseline"]), *a.last().unwrap() as f64);
    assert_eq!(f(&max["with_fix"]), *b.last().unwrap() as f64);
    assert!(
        max["ratio_low"].is_null()
            && max["ratio_high"].is_null()
            && max["interval_method"].is_null()
    );
    figure(fix, "p99.9")
}

/// The rate of missed deadlines: counted (each wakeup over the 1 ms deadline, and each period
/// it skipped: `floor(latency / 1 ms)`), per hour of both threads' time, and its interval's
/// bounds are where the binomial tails are 2.5 %.
fn check_rate(fix: &Value, a: &Samples, b: &Samples, hours: [f64; 2]) {
    let fig = figure(fix, "missed deadlines /h");
    assert_eq!(fig["unit"], "per hour");
    assert_eq!(fig["interval_method"], "clopper-pearson+rounds");
    let over = |s: &[i64]| {
        s.iter()
            .map(|&x| u64::from(x > MS as i64) + x.max(0) as u64 / MS)
            .sum::<u64>()
    };
    let (xa, xb) = (over(a), over(b));
    // Between rounds: each round's rate ratio with half an event added each side.
    let per_arm = [
        hours[0] / a.arms.len() as f64,
        hours[1] / b.arms.len() as f64,
    ];
    let logs: Vec<f64> = a
        .arms
        .iter()
        .zip(&b.arms)
        .map(|(sa, sb)| {
            (((over(sb) as f64 + 0.5) / per_arm[1]) / ((over(sa) as f64 + 0.5) / per_arm[0])).ln()
        })
        .collect();
    let (rl, rh) = rounds_bounds(&logs);
    assert!(
        (f(&fig["baseline"]) - xa as f64 / hours[0]).abs() < 1e-6,
        "{fig} {xa}"
    );
    assert!(
        (f(&fig["with_fix"]) - xb as f64 / hours[1]).abs() < 1e-6,
        "{fig} {xb}"
    );
    let n = xa + xb;
    // The ratio r maps to the binomial p = r·hb / (ha + r·hb).
    let p = |r: f64| r * hours[1] / (hours[0] + r * hours[1]);
    // Each bound is the farther of the exact Poisson one (where the binomial tail is 2.5 %)
    // and the one between rounds: at or beyond both, and at one of them.
    match fig["ratio_high"].as_f64() {
        Some(h) => {
            let tail = binomial_at_most(xb, n, p(h));
            assert!(
                tail <= 0.025 + 1e-4 && h >= rh * (1.0 - 1e-9),
                "{fig}: {tail}, {rh}"
            );
            assert!(
                (tail - 0.025).abs() < 1e-4 || near(h, rh, 1e-6),
                "the upper bound {h}: P(X <= {xb}) {tail}, between rounds {rh}"
            );
        }
        None => assert_eq!(xb, n, "only no event on the baseline's side leaves it open"),
    }
    let low = f(&fig["ratio_low"]);
    if xb == 0 {
        assert_eq!(low, 0.0);
    } else {
        let tail = 1.0 - binomial_at_most(xb - 1, n, p(low));
        assert!(
            tail <= 0.025 + 1e-4 && low <= rl * (1.0 + 1e-9),
            "{fig}: {tail}, {rl}"
        );
        assert!(
            (tail - 0.025).abs() < 1e-4 || near(low, rl, 1e-6),
            "the lower bound {low}: P(X >= {xb}) {tail}, between rounds {rl}"
        );
    }
}

/// Long arms (bootstrap intervals): a fix removing the 2 ms spikes ranks first, worth applying,
/// p99.9 and the rate wholly below 1; one changing nothing holds 1. Every figure re-derived;
/// the report of the directory draws that ranking.
#[test]
fn tune_json_figures_are_re_derived_from_the_arms() {
    let root = tempfile::tempdir().unwrap();
    let arm = |seed, every| ArmSpec {
        seed,
        every,
        seconds: 20,
        log_ms: 500,
    };
    let (record, pooled) = tune_of(
        root.path(),
        &[
            ("baseline", vec![arm(1, 200), arm(2, 200)]),
            ("nothing", vec![arm(3, 200), arm(4, 200)]),
            ("spikes-gone", vec![arm(5, 0), arm(6, 0)]),
        ],
    );
    let json: Value = serde_json::from_str(&record.json()).unwrap();
    assert_eq!(json["confidence"], 0.95);
    let fixes = json["fixes"].as_array().unwrap();
    assert_eq!(fixes[0]["name"], "spikes-gone", "{json:#}");
    assert_eq!(fixes[0]["rank"], 1);
    assert_eq!(fixes[0]["effect"]["verdict"], "worthwhile");
    assert_eq!(fixes[1]["name"], "nothing");
    assert_eq!(fixes[1]["rank"], 2);
    assert_eq!(fixes[1]["effect"]["verdict"], "no-measurable-effect");
    let hours = 2.0 * 2.0 * 20.0 / 3600.0;
    for fix in fixes {
        let other = if fix["name"] == "nothing" {
            &pooled[1]
        } else {
            &pooled[2]
        };
        let p999 = check_latencies(fix, &pooled[0], other);
        assert_eq!(p999["interval_method"], "bootstrap+rounds", "{p999}");
        check_rate(fix, &pooled[0], other, [hours, hours]);
        assert_eq!(
            fix["effect"]["samples"],
            serde_json::json!([80_000, 80_000])
        );
    }
    let p999 = figure(&fixes[0], "p99.9");
    assert!(f(&p999["ratio_high"]) < 1.0, "{p999}");
    let p999 = figure(&fixes[1], "p99.9");
    assert!(
        f(&p999["ratio_low"]) <= 1.0 && 1.0 <= f(&p999["ratio_high"]),
        "{p999}"
    );

    // The report of the tune directory: its ranking drawn from tune.json, in that order.
    std::fs::write(root.path().join("tune.json"), record.json()).unwrap();
    // Written beside the tune directory: never into a result directory.
    let elsewhere = tempfile::tempdir().unwrap();
    let report = |name: &str| {
        let html = elsewhere.path().join(name);
        let o = jitterlab(&[
            "report",
            root.path().to_str().unwrap(),
            "-o",
            html.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", text(&o));
        std::fs::read_to_string(&html).unwrap()
    };
    let page = report("report.html");
    let svg = &page[page.find("id=\"tune1-ranking\"").expect("the ranking plot")..];
    let first = svg.find("1. spikes-gone").expect("ranked first");
    assert!(svg.find("2. nothing").expect("ranked second") > first);
    let ratio = |fix: &Value, s: &str| {
        let g = figure(fix, s);
        format!(
            "{s} ratio {:.2} [{:.2}, {:.2}]",
            f(&g["ratio"]),
            f(&g["ratio_low"]),
            f(&g["ratio_high"])
        )
    };
    assert!(
        svg.contains(&ratio(&fixes[0], "p99.9")),
        "{}",
        ratio(&fixes[0], "p99.9")
    );
    assert!(
        svg.contains(&ratio(&fixes[1], "p99")),
        "{}",
        ratio(&fixes[1], "p99")
    );
    assert!(page.contains("Ranked first: spikes-gone (worth applying)"));
    assert!(page.contains("pm-qos</strong>: not applicable: no cpuidle driver"));
    let rate = figure(&fixes[1], "missed deadlines /h");
    let drawn = format!(
        "2. nothing: missed deadlines per hour ratio {:.2} [{:.2}, {:.2}]",
        f(&rate["ratio"]),
        f(&rate["ratio_low"]),
        f(&rate["ratio_high"])
    );
    assert!(svg.contains(&drawn), "{drawn}");
    assert!(page.contains("missed deadlines /h") && !page.contains("over deadline"));

    // The files of earlier tunes name the rate `over deadline /h` (L12-c): read as the missed
    // deadlines, drawn and tabled the same.
    let old = record.json().replace(
        "\"statistic\": \"missed deadlines /h\"",
        "\"statistic\": \"over deadline /h\"",
    );
    assert_eq!(old.matches("over deadline /h").count(), 2, "{old}");
    std::fs::write(root.path().join("tune.json"), old).unwrap();
    let page = report("old.html");
    assert!(page.contains(&drawn), "{drawn}");
    assert!(page.contains("missed deadlines /h") && !page.contains("over deadline"));
}

/// Short arms (too few log intervals for the bootstrap): the order-statistic interval of
/// p99.9, re-derived from its ranks in the pooled samples at 97.5 % each.
#[test]
fn a_short_tunes_order_statistic_interval_is_re_derived() {
    let root = tempfile::tempdir().unwrap();
    let arm = |seed, every| ArmSpec {
        seed,
        every,
        seconds: 4,
        log_ms: 1000,
    };
    let (record, pooled) = tune_of(
        root.path(),
        &[
            ("baseline", vec![arm(1, 100), arm(2, 100)]),
            ("fewer", vec![arm(3, 400), arm(4, 400)]),
        ],
    );
    let json: Value = serde_json::from_str(&record.json()).unwrap();
    let fix = &json["fixes"][0];
    let (a, b) = (&pooled[0], &pooled[1]);
    let hours = 2.0 * 2.0 * 4.0 / 3600.0;
    check_rate(fix, a, b, [hours, hours]);
    for (statistic, q) in [("p99", 0.99), ("p99.9", 0.999)] {
        let fig = figure(fix, statistic);
        assert_eq!(fig["interval_method"], "order-statistic+rounds", "{fig}");
        let bounds = |s: &[i64]| {
            let (l, u) = ranks(s.len() as u64, q, 0.975);
            (s[l as usize - 1] as f64, s[u as usize - 1] as f64)
        };
        let ((la, ha), (lb, hb)) = (bounds(a), bounds(b));
        let base = f(&fig["baseline"]);
        // The difference's interval [lb - ha, hb - la] over the baseline's value, each
        // bound within the buckets of the values it is made of.
        let slack = (ha + hb) / 1024.0 + 2.0;
        let (lo, hi) = (f(&fig["ratio_low"]), f(&fig["ratio_high"]));
        // Then widened to hold the interval between the rounds (within ROUND_SLACK).
        let (rl, rh) = latency_rounds_bounds(q, a, b);
        let want_lo = ((base + lb - ha) / base).max(0.0);
        let want_hi = (base + hb - la) / base;
        assert!(
            (lo - want_lo).abs() * base <= slack || near(lo, rl, ROUND_SLACK),
            "{statistic}: low {lo} vs {want_lo} or {rl}"
        );
        assert!(
            lo <= want_lo + slack / base && lo <= rl * (1.0 + ROUND_SLACK),
            "{statistic}: {lo}"
        );
        assert!(
            (hi - want_hi).abs() * base <= slack || near(hi, rh, ROUND_SLACK),
            "{statistic}: high {hi} vs {want_hi} or {rh}"
        );
        assert!(
            hi >= want_hi - slack / base && hi >= rh * (1.0 - ROUND_SLACK),
            "{statistic}: {hi}"
        );
    }
}

/// `tune --cpus 0 --fixes vmstat --dry-run --allow-shared-cpus MORE`: the dry run every test
/// here makes (on CPU 0, whatever else measures).
fn tune_dry_run(more: &[&str]) -> std::process::Output {
    let mut args = vec![
        "tune",
        "--cpus",
        "0",
        "--fixes",
        "vmstat",
        "--dry-run",
        "--allow-shared-cpus",
    ];
    args.extend_from_slice(more);
    jitterlab(&args)
}

/// `--rounds` is bounded before anything is probed or planned: a billion rounds once built a
/// schedule of every arm in memory and aborted on a 3 GB allocation (sixth hostile re-run, T3).
#[test]
fn rounds_out_of_range_are_refused_before_anything_starts() {
    for rounds in ["1", "1001", "1000000000"] {
        let out = jitterlab(&["tune", "--rounds", rounds, "--dry-run"]);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(2), "--rounds {rounds}: {said}");
        assert!(said.contains("give 2 to 1000"), "--rounds {rounds}: {said}");
    }
}

/// Each arm logs at least 20 intervals whatever sets its length: with `--loops` the log interval
/// follows the loops' expected time (it stayed 1 s: arms of 2 s logged 3 intervals, sixth
/// hostile re-run T4), and an arm too short for 20 intervals of 10 ms is refused.
#[test]
fn every_arm_logs_twenty_intervals_or_is_refused() {
    let out = tune_dry_run(&["-i", "1ms", "-l", "2000", "--rounds", "2"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains("(20 intervals of 100.00 ms per thread)"),
        "2000 loops of 1 ms: 20 intervals of 100 ms: {said}"
    );
    let out = tune_dry_run(&["-D", "100ms", "--rounds", "2"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("fewer than 20 intervals"), "{said}");
}

/// `tune --dry-run -o DIR` names the tune directory and the arms' runs inside it, never the
/// default result directory of a run (hostile re-run L6-e); without `-o`, the default tune
/// directory.
#[test]
fn the_dry_run_names_the_arms_inside_the_tune_directory() {
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("my-tune");
    let out = tune_dry_run(&["-D", "1s", "-o", dir.to_str().unwrap()]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains(&format!("Tune directory: {} (new)", dir.display())),
        "{said}"
    );
    assert!(
        said.contains(&format!("output: {}/01-baseline (new)", dir.display())),
        "{said}"
    );
    assert!(!said.contains("<UTC time>-<host>-<pid> (new)"), "{said}");
    let out = tune_dry_run(&["-D", "1s"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains("<UTC time>-<host>-<pid>-tune/01-baseline (new)"),
        "{said}"
    );
    assert!(!dir.exists(), "a dry run makes nothing");
}

/// Eighth hostile re-run, P1: a user's `tune --dry-run` passed (exit 0) what the real tune
/// refuses at once (its fixes change kernel settings, which needs root). The dry run now
/// refuses it the same way (exit 3, naming root and the fixes that need none).
#[test]
fn a_users_dry_run_of_a_tune_that_needs_root_is_refused_as_the_tune_is() {
    if !crate::common::attacker::attacker_available("a_users_dry_run_of_a_tune") {
        return;
    }
    let out = std::process::Command::new("setpriv")
        .args([
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            crate::common::bin(),
            "tune",
            "--dry-run",
            "--cpus",
            "1",
            "-D",
            "500ms",
            "--rounds",
            "2",
            "--fixes",
            "vmstat",
            "--policy",
            "other",
            "--no-mlock",
            "--allow-shared-cpus",
        ])
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap();
    let said = text(&out);
    assert_eq!(out.status.code(), Some(3), "{said}");
    assert!(
        said.contains("change kernel settings") && said.contains("which needs root"),
        "{said}"
    );
}

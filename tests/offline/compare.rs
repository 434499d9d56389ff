//! `jitterlab compare` on runs constructed from known distributions: ratios, confidence
//! intervals that contain the true difference, the regression check, budgets and exit codes.

use crate::common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

struct Runs {
    _base: tempfile::TempDir,
    a: PathBuf,
    b: PathBuf,
    same: PathBuf,
    single_a: PathBuf,
    single_b: PathBuf,
}

/// A: uniform 10-50 us; B: the same 1.5 times slower, with 3 missed periods per CPU; same: A's
/// distribution from another seed; single_*: one whole-run interval per CPU (as imports have).
fn runs() -> Runs {
    let base = tempfile::tempdir().unwrap();
    let p = |n: &str| base.path().join(n);
    let cpus = [0, 1];
    write_known_run(&p("a"), &cpus, 60, 1000, uniform_10_50, 1, 0);
    write_known_run(&p("b"), &cpus, 60, 1000, uniform_15_75, 2, 3);
    write_known_run(&p("same"), &cpus, 60, 1000, uniform_10_50, 3, 0);
    write_known_run(&p("single_a"), &cpus, 1, 20_000, uniform_10_50, 4, 0);
    write_known_run(&p("single_b"), &cpus, 1, 20_000, uniform_15_75, 5, 0);
    Runs {
        a: p("a"),
        b: p("b"),
        same: p("same"),
        single_a: p("single_a"),
        single_b: p("single_b"),
        _base: base,
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn compare_json(args: &[&str]) -> (Option<i32>, Value) {
    let mut argv = vec!["compare", "--json"];
    argv.extend_from_slice(args);
    let o = jitterlab(&argv);
    let v = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("compare --json prints JSON ({e}): {}", text(&o)));
    (o.status.code(), v)
}

fn row<'a>(v: &'a Value, scope: &str, stat: &str) -> &'a Value {
    v["scopes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["scope"] == scope)
        .unwrap_or_else(|| panic!("scope {scope}"))["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["statistic"] == stat)
        .unwrap_or_else(|| panic!("row {stat}"))
}

/// The true difference of the q-quantiles of uniform[15, 75) us and uniform[10, 50) us.
fn true_difference(q: f64) -> f64 {
    uniform_quantile(15_000.0, 75_000.0, q) - uniform_quantile(10_000.0, 50_000.0, q)
}

/// Checks the interval of `stat` contains the true difference. Percentiles are the histogram's
/// values (3 significant digits), so both ends are widened by that resolution (0.1% of B).
fn assert_covers(r: &Value, q: f64, method: &str, max_width: f64) {
    let i = &r["versus_first"][0]["interval"];
    assert_eq!(i["method"], method, "{r}");
    let truth = true_difference(q);
    let tolerance = 0.001 * uniform_quantile(15_000.0, 75_000.0, q) + 1.0;
    let low = i["low_ns"].as_f64().expect("a lower bound");
    let high = i["high_ns"].as_f64().expect("an upper bound");
    assert!(
        low - tolerance <= truth && truth <= high + tolerance,
        "{}: [{low}, {high}] does not contain the true difference {truth}",
        r["statistic"]
    );
    assert!(
        high - low <= max_width,
        "{}: [{low}, {high}] is wider than {max_width} ns",
        r["statistic"]
    );
}

#[test]
fn ratios_and_intervals_of_a_known_slowdown() {
    let r = runs();
    let (code, v) = compare_json(&[s(&r.a), s(&r.b)]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["runs"][0]["label"], "A");
    assert_eq!(v["runs"][1]["intervals_per_cpu"], 60);
    for scope in ["overall", "cpu0", "cpu1"] {
        for stat in ["min", "mean", "p50", "p99", "p99.9", "p99.99", "max"] {
            let ratio = row(&v, scope, stat)["versus_first"][0]["ratio"]
                .as_f64()
                .unwrap();
            assert!(
                (ratio - 1.5).abs() < 0.015,
                "{scope} {stat}: ratio {ratio}, expected 1.5"
            );
        }
        let missed = row(&v, scope, "missed");
        let expected = if scope == "overall" { 6.0 } else { 3.0 };
        assert_eq!(missed["values"][1].as_f64(), Some(expected), "{scope}");
        assert_eq!(
            missed["versus_first"][0]["ratio"],
            Value::Null,
            "A had 0 missed periods"
        );
        assert_eq!(
            missed["versus_first"][0]["difference"].as_f64(),
            Some(expected)
        );
        // 60 one-second intervals and a thick enough tail: bootstrap.
        assert_covers(row(&v, scope, "p50"), 0.5, "bootstrap", 1_500.0);
        assert_covers(row(&v, scope, "p99"), 0.99, "bootstrap", 1_000.0);
        assert_covers(row(&v, scope, "p99.9"), 0.999, "bootstrap", 1_000.0);
        assert!(row(&v, scope, "max")["versus_first"][0]["interval"].is_null());
    }
    // 60 000 samples per CPU leave 6 beyond p99.99: too thin for resampling.
    assert_eq!(
        row(&v, "cpu0", "p99.99")["versus_first"][0]["interval"]["method"],
        "order-statistic"
    );
    // The same inputs give the same output, byte for byte (fixed seed).
    let again = jitterlab(&["compare", "--json", s(&r.a), s(&r.b)]);
    assert_eq!(serde_json::from_slice::<Value>(&again.stdout).unwrap(), v);
}

#[test]
fn single_interval_runs_use_order_statistics() {
    let r = runs();
    let (code, v) = compare_json(&[s(&r.single_a), s(&r.single_b)]);
    assert_eq!(code, Some(0));
    assert_eq!(v["runs"][0]["intervals_per_cpu"], 1);
    for scope in ["overall", "cpu0"] {
        assert_covers(row(&v, scope, "p50"), 0.5, "order-statistic", 3_000.0);
        assert_covers(row(&v, scope, "p99"), 0.99, "order-statistic", 3_000.0);
    }
    // 20 000 samples cannot bound p99.99 from above: the interval says so.
    let i = &row(&v, "cpu0", "p99.99")["versus_first"][0]["interval"];
    assert!(i["high_ns"].is_null() || i["low_ns"].is_null(), "{i}");
}

#[test]
fn fail_if_worse_exit_codes() {
    let r = runs();
    let run = |extra: &[&str], runs: [&Path; 2]| {
        let mut argv = vec!["compare", s(runs[0]), s(runs[1])];
        argv.extend_from_slice(extra);
        jitterlab(&argv)
    };
    let o = run(&["--fail-if-worse", "10%"], [&r.a, &r.b]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("FAIL  B overall: p99.9"), "{}", text(&o));
    assert_eq!(
        run(&["--fail-if-worse", "60%"], [&r.a, &r.b]).status.code(),
        Some(0)
    );
    assert_eq!(
        run(&["--fail-if-worse", "10%", "--at", "max"], [&r.a, &r.b])
            .status
            .code(),
        Some(1)
    );
    assert_eq!(
        run(&["--fail-if-worse", "0%", "--at", "missed"], [&r.a, &r.b])
            .status
            .code(),
        Some(1)
    );
    // Better is not worse; noise is not worse.
    assert_eq!(
        run(&["--fail-if-worse", "10%"], [&r.b, &r.a]).status.code(),
        Some(0)
    );
    let o = run(&["--fail-if-worse", "0%", "--at", "p50"], [&r.a, &r.same]);
    let (_, v) = compare_json(&[s(&r.a), s(&r.same)]);
    // At 0% a noise-level increase at the point estimate must still be confirmed by its interval.
    for scope in ["overall", "cpu0", "cpu1"] {
        let x = row(&v, scope, "p50");
        let i = &x["versus_first"][0]["interval"];
        let confirmed = i["low_ns"].as_f64().unwrap() > 0.0;
        assert!(!confirmed || o.status.code() == Some(1), "{scope}: {x}");
    }
    assert_ne!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn terminal_and_markdown_show_ratios_and_intervals() {
    let r = runs();
    let o = jitterlab(&["compare", s(&r.a), s(&r.b), s(&r.same)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let t = String::from_utf8(o.stdout).unwrap();
    assert!(t.contains("B/A") && t.contains("C-A [95% interval]"), "{t}");
    assert!(t.contains("1.50x"), "{t}");
    assert!(t.contains("B vs A overall: p99 1.50x (50 % higher)"), "{t}");
    assert!(
        t.contains("block bootstrap over intervals for p50, p99, p99.9"),
        "{t}"
    );
    let o = jitterlab(&["compare", "--markdown", s(&r.a), s(&r.b)]);
    let md = String::from_utf8(o.stdout).unwrap();
    assert!(
        md.contains("| statistic | A | B | B/A | B-A [95% interval] |"),
        "{md}"
    );
    assert!(md.contains("| p99.9 |"), "{md}");
}

#[test]
fn budgets_are_judged_for_every_run() {
    let r = runs();
    let (code, v) = compare_json(&["--budget", "max<60us,missed=0", s(&r.a), s(&r.b)]);
    assert_eq!(code, Some(1));
    assert_eq!(v["passed"], false);
    assert_eq!(v["budgets"][0]["verdict"]["passed"], true);
    assert_eq!(v["budgets"][1]["verdict"]["passed"], false);
    assert_eq!(
        v["budgets"][1]["verdict"]["clauses"][1]["actual"],
        "cpu0: 3 (2 of 2 CPUs fail)"
    );
    let o = jitterlab(&["compare", "--budget", "max<1ms", s(&r.a), s(&r.b)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("pass  max<1ms"), "{}", text(&o));
}

#[test]
fn bad_input_exits_2_and_says_why() {
    let r = runs();
    let missing = r.a.with_file_name("nope");
    for (args, says) in [
        (
            vec![s(&r.a), s(&missing)],
            "not a jitterlab result directory",
        ),
        (vec![s(&r.a)], "RUN_DIR"),
        (vec![s(&r.a), s(&r.b), "--fail-if-worse", "10"], "'%'"),
        (
            vec![s(&r.a), s(&r.b), "--fail-if-worse", "10%", "--at", "p42"],
            "--at p42",
        ),
        (vec![s(&r.a), s(&r.b), "--at", "max"], "--fail-if-worse"),
        (vec![s(&r.a), s(&r.b), "--budget", "max<<1ms"], "^^^^^^^^"),
    ] {
        let mut argv = vec!["compare"];
        argv.extend_from_slice(&args);
        let o = jitterlab(&argv);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(says), "{args:?}: {}", text(&o));
    }
}

#[test]
fn one_phase_is_compared_across_runs() {
    use jitterlab::results::synthetic::{SyntheticPhase, SyntheticRun, write_run};
    let base = tempfile::tempdir().unwrap();
    let phase = SyntheticPhase::seconds;
    // Two runs with the same idle phase (10 us) and an io phase of 40 us in A, 80 us in B,
    // with one 3.5 ms wakeup in B's io phase (3 missed periods).
    let write = |name: &str, io_ns: i64, spike: bool| {
        let run = SyntheticRun {
            cpus: vec![0],
            interval_ns: 1_000_000,
            log_interval_ns: 1_000_000_000,
            duration_ns: 20_000_000_000,
            phases: vec![phase("idle", 0, 10), phase("io", 10, 20)],
            loads: vec![],
            warnings: vec![],
            seed: 3,
        };
        let dir = base.path().join(name);
        write_run(&dir, &run, |_, t, _| {
            if spike && t == 15_000_000_000 {
                3_500_000
            } else if t >= 10_000_000_000 {
                io_ns
            } else {
                10_000
            }
        })
        .unwrap();
        dir
    };
    let (a, b) = (write("a", 40_000, false), write("b", 80_000, true));
    let (code, io) = compare_json(&[s(&a), s(&b), "--phase", "io"]);
    assert_eq!(code, Some(0));
    assert_eq!(
        row(&io, "cpu0", "min")["values"],
        serde_json::json!([40000.0, 80000.0])
    );
    assert_eq!(
        row(&io, "cpu0", "max")["values"],
        serde_json::json!([40000.0, 3500000.0])
    );
    assert_eq!(
        row(&io, "cpu0", "missed")["values"],
        serde_json::json!([0.0, 3.0])
    );
    let p50 = &row(&io, "cpu0", "p50")["versus_first"][0]["ratio"];
    assert!((p50.as_f64().unwrap() - 2.0).abs() < 0.005, "{p50}");
    assert_eq!(
        io["scopes"][0]["samples"],
        serde_json::json!([10000, 10000])
    );
    let (_, idle) = compare_json(&[s(&a), s(&b), "--phase", "idle"]);
    assert_eq!(
        row(&idle, "cpu0", "max")["values"],
        serde_json::json!([10000.0, 10000.0])
    );
    // A phase that is not there: exit 2, naming the phases there are.
    let o = jitterlab(&["compare", s(&a), s(&b), "--phase", "memory"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).contains("has no phase named \"memory\": its phases are idle, io"),
        "{}",
        text(&o)
    );
}

/// Issue 23, defect 3: `compare --phase` covers the intervals run.json's per-phase statistics
/// cover (the phase's planned window, not the times its loads were ready and reaped), counts
/// them as run.json does, and every interval contains its own estimate.
#[test]
fn a_phase_comparison_covers_run_json_intervals_and_contains_its_estimates() {
    use jitterlab::results::synthetic::{
        START_MONOTONIC_NS, SyntheticPhase, SyntheticRun, write_run,
    };
    let base = tempfile::tempdir().unwrap();
    const S: u64 = 1_000_000_000;
    // io from 10 to 20 s: 50 us, except B's first second of io at 80 us (10% of the phase).
    let write = |name: &str, first_second_ns: i64| {
        let run = SyntheticRun {
            cpus: vec![0],
            interval_ns: 1_000_000,
            log_interval_ns: S,
            duration_ns: 30 * S,
            phases: vec![
                SyntheticPhase::seconds("idle", 0, 10),
                SyntheticPhase::seconds("io", 10, 20),
                SyntheticPhase::seconds("proc", 20, 30),
            ],
            loads: vec![],
            warnings: vec![],
            seed: 7,
        };
        let dir = base.path().join(name);
        write_run(&dir, &run, |_, t, _| match t {
            t if (10 * S..11 * S).contains(&t) => first_second_ns,
            t if (10 * S..20 * S).contains(&t) => 50_000,
            _ => 10_000,
        })
        .unwrap();
        // As in a real run, the loads were ready 50 ms after the phase's planned start and
        // reaped 300 ms after its end.
        edit_run_json(&dir, |v| {
            let io = &mut v["phases"][1];
            io["start_ns"] = (START_MONOTONIC_NS + 10 * S + 50_000_000).into();
            io["end_ns"] = (START_MONOTONIC_NS + 20 * S + 300_000_000).into();
        });
        dir
    };
    let (a, b) = (write("a", 50_000), write("b", 80_000));
    let phase_samples = run_json(&a)["phases"][1]["threads"][0]["samples"].clone();
    assert_eq!(phase_samples, 10_000);
    let (code, v) = compare_json(&[s(&a), s(&b), "--phase", "io"]);
    assert_eq!(code, Some(0), "{v}");
    for k in 0..2 {
        assert_eq!(v["runs"][k]["intervals_per_cpu"], 10, "{}", v["runs"][k]);
        assert_eq!(v["runs"][k]["duration_ns"], 10 * S, "{}", v["runs"][k]);
    }
    assert_eq!(v["scopes"][1]["samples"], serde_json::json!([10000, 10000]));
    let p99 = row(&v, "cpu0", "p99")["versus_first"][0]["difference"]
        .as_f64()
        .unwrap();
    assert!((p99 - 30_000.0).abs() < 100.0, "{p99}");
    assert_intervals_contain_estimates(&v);

    // A file written before run.json recorded the phase's window: the loads' times are all
    // there is, and the figures come from the intervals inside them (9 whole seconds).
    for dir in [&a, &b] {
        edit_run_json(dir, |v| {
            let io = v["phases"][1].as_object_mut().unwrap();
            io.remove("window_start_ns");
            io.remove("window_end_ns");
        });
    }
    let (_, v) = compare_json(&[s(&a), s(&b), "--phase", "io"]);
    assert_eq!(v["runs"][1]["intervals_per_cpu"], 9, "{}", v["runs"][1]);
    assert_eq!(v["scopes"][1]["samples"], serde_json::json!([9000, 9000]));
    assert_intervals_contain_estimates(&v);
}

/// Rewrites run.json through `edit` (as a JSON value, so that fields this version does not
/// know can be removed too).
fn edit_run_json(dir: &Path, edit: impl FnOnce(&mut Value)) {
    let path = dir.join("run.json");
    let mut v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    edit(&mut v);
    std::fs::write(&path, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
}

/// Every interval of `compare --json` contains the difference it is the interval of.
fn assert_intervals_contain_estimates(v: &Value) {
    for scope in v["scopes"].as_array().unwrap() {
        for r in scope["rows"].as_array().unwrap() {
            for versus in r["versus_first"].as_array().unwrap() {
                let (Some(d), Some(i)) = (versus["difference"].as_f64(), versus.get("interval"))
                else {
                    continue;
                };
                if i.is_null() {
                    continue;
                }
                let low = i["low_ns"].as_f64().unwrap_or(f64::NEG_INFINITY);
                let high = i["high_ns"].as_f64().unwrap_or(f64::INFINITY);
                assert!(
                    low <= d && d <= high,
                    "{} {}: {d} outside [{low}, {high}]",
                    scope["scope"],
                    r["statistic"]
                );
            }
        }
    }
}

/// Issue 23, defect 11: `--fail-if-worse` judges p99.9 unless `--at` names others, says which
/// statistic it judged, and judges each of several (`--at max,p99.9`): an 8x worse max with an
/// equal p99.9 passes the default check, visibly at p99.9 only, and fails `--at max`.
#[test]
fn fail_if_worse_names_its_statistics_and_judges_each_of_several() {
    use jitterlab::results::synthetic::{SyntheticRun, write_run};
    let base = tempfile::tempdir().unwrap();
    const S: u64 = 1_000_000_000;
    let write = |name: &str, spike_ns: i64| {
        let run = SyntheticRun {
            cpus: vec![0],
            interval_ns: 1_000_000,
            log_interval_ns: S,
            duration_ns: 60 * S,
            phases: vec![],
            loads: vec![],
            warnings: vec![],
            seed: 11,
        };
        let dir = base.path().join(name);
        write_run(
            &dir,
            &run,
            |_, t, _| if t == 30 * S { spike_ns } else { 20_000 },
        )
        .unwrap();
        dir
    };
    let (a, b) = (write("a", 1_000_000), write("b", 8_000_000));
    let check = |extra: &[&str]| {
        let mut argv = vec!["compare", s(&a), s(&b), "--fail-if-worse", "10%"];
        argv.extend_from_slice(extra);
        let o = jitterlab(&argv);
        (o.status.code(), text(&o))
    };
    let (code, out) = check(&[]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains(
            "worse than A by more than 10% at p99.9 (the default statistic; --at chooses others"
        ),
        "{out}"
    );
    assert!(
        out.contains("pass  no run is worse beyond the margin at p99.9"),
        "{out}"
    );
    let (code, out) = check(&["--at", "max"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("FAIL  B overall: max 8.00 ms vs 1.00 ms in A (8.00x)"),
        "{out}"
    );
    let (code, out) = check(&["--at", "max,p99.9"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("at max or p99.9\n"), "{out}");
    let (_, v) = compare_json(&[s(&a), s(&b), "--fail-if-worse", "10%", "--at", "max,p99.9"]);
    assert_eq!(
        v["regression"]["statistics"],
        serde_json::json!(["max", "p99.9"])
    );
    assert_eq!(v["regression"]["default_statistic"], false);
    assert_eq!(v["regression"]["regressions"][0]["statistic"], "max");
    // The help says which statistic is judged by default.
    let help = text(&jitterlab(&["compare", "--help"]));
    assert!(help.contains("p99.9 unless --at"), "{help}");
}

/// Issue 42: a percentile that lies among an imported histogram's overflows is a lower bound
/// (the overflows are recorded at the histogram's end, the least they can be): compare marks it
/// `≥` and gives no ratio, difference or interval for it; one below them is compared as usual.
/// The fixture's CPU 0 holds 4675 samples under 30 us and 320 beyond (6.4 %), so its p99 is
/// among the overflows and its p50 (about 16 us) is not.
#[test]
fn percentiles_among_an_imports_overflows_are_compared_as_bounds() {
    let tmp = tempfile::tempdir().unwrap();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/import");
    let import = |file: &str, out: &str| {
        let dir = tmp.path().join(out);
        let o = jitterlab(&["import", s(&data.join(file)), "-o", s(&dir)]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        dir
    };
    let a = import("cyclictest-hist.txt", "a");
    let b = import("cyclictest-hist-overflow.txt", "b");
    // The overflows are stored per CPU at import.
    let run: Value =
        serde_json::from_str(&std::fs::read_to_string(b.join("run.json")).unwrap()).unwrap();
    let overflows = &run["imported"]["overflows"];
    assert_eq!(overflows[0]["cpu"], 0, "{overflows}");
    assert_eq!(overflows[0]["column"], "latency");
    assert_eq!(overflows[0]["samples"], 320);
    assert_eq!(overflows[0]["from_ns"], 30_000);
    assert_eq!(overflows[1]["samples"], 746);
    let (code, v) = compare_json(&[s(&a), s(&b)]);
    assert_eq!(code, Some(0));
    let p99 = row(&v, "cpu0", "p99");
    assert_eq!(
        p99["lower_bound"],
        serde_json::json!([false, true]),
        "{p99}"
    );
    let versus = &p99["versus_first"][0];
    assert_eq!(versus["bound"], true, "{versus}");
    assert!(
        versus["ratio"].is_null() && versus["interval"].is_null() && versus["difference"].is_null(),
        "{versus}"
    );
    assert!(p99["values"][1].as_f64().unwrap() >= 30_000.0, "{p99}");
    let p50 = row(&v, "cpu0", "p50");
    assert!(p50.get("lower_bound").is_none(), "{p50}");
    assert!(p50["versus_first"][0]["ratio"].is_number(), "{p50}");
    assert!(p50["versus_first"][0]["interval"].is_object(), "{p50}");
    let o = jitterlab(&["compare", s(&a), s(&b)]);
    let shown = text(&o);
    assert!(
        shown.contains("≥30.0 us") || shown.contains("≥30 us"),
        "{shown}"
    );
    assert!(shown.contains("≥ lower bounds (p99"), "{shown}");
    assert!(shown.contains("- (a bound)"), "{shown}");
}

/// C2 and B1 (eighth hostile re-run): two runs whose judged percentile lies among their
/// imported overflows (1000 samples each, 990 beyond a 30 us histogram; B's mean 50 ms, A's
/// 30 us) have only lower bounds there, which say nothing of which is larger: the regression
/// check says so and fails (exit 1) instead of passing, and a budget the bound cannot decide
/// fails as not shown to hold, in compare and in export's JUnit alike.
#[test]
fn bounds_of_imported_overflows_neither_pass_a_regression_check_nor_a_budget() {
    let tmp = tempfile::tempdir().unwrap();
    let import = |name: &str, avg_us: u32, max_us: u32| {
        let mut body = String::from("# Histogram\n");
        for us in 0..30 {
            body.push_str(&format!("{us:06} {:06}\n", if us == 5 { 10 } else { 0 }));
        }
        body.push_str(&format!(
            "# Total: 000000010\n# Min Latencies: 00005\n# Avg Latencies: {avg_us:05}\n# Max Latencies: {max_us:05}\n# Histogram Overflows: 00990\n"
        ));
        let file = tmp.path().join(format!("{name}.txt"));
        std::fs::write(&file, body).unwrap();
        let dir = tmp.path().join(name);
        let o = jitterlab(&["import", s(&file), "-o", s(&dir)]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        dir
    };
    let a = import("a", 30, 31);
    let b = import("b", 50_000, 99_999);
    let o = jitterlab(&["compare", s(&a), s(&b), "--fail-if-worse", "10%"]);
    let shown = text(&o);
    assert_eq!(o.status.code(), Some(1), "{shown}");
    assert!(shown.contains("NOT JUDGED"), "{shown}");
    assert!(shown.contains("both are lower bounds"), "{shown}");
    assert!(!shown.contains("  pass  no run is worse"), "{shown}");
    let (code, v) = compare_json(&[s(&a), s(&b), "--fail-if-worse", "10%"]);
    assert_eq!(code, Some(1));
    assert_eq!(v["regression"]["passed"], false, "{v}");
    assert!(
        v["regression"]["not_judged"]
            .as_array()
            .is_some_and(|n| !n.is_empty()),
        "{v}"
    );
    // The max is the source's own figure: judged, and B is worse.
    let (code, v) = compare_json(&[s(&a), s(&b), "--fail-if-worse", "10%", "--at", "max"]);
    assert_eq!(code, Some(1));
    assert!(
        v["regression"]["regressions"]
            .as_array()
            .is_some_and(|r| !r.is_empty()),
        "{v}"
    );
    // A budget the bound cannot decide.
    let o = jitterlab(&["compare", s(&a), s(&b), "--budget", "p99<50us"]);
    let shown = text(&o);
    assert_eq!(o.status.code(), Some(1), "{shown}");
    assert!(shown.contains("cannot be shown to hold"), "{shown}");
    let xml = tmp.path().join("b.xml");
    let o = jitterlab(&[
        "export",
        s(&b),
        "--format",
        "junit",
        "--budget",
        "p99<50us",
        "-o",
        s(&xml),
    ]);
    assert!(o.status.code().is_some(), "{}", text(&o));
    let junit = std::fs::read_to_string(&xml).unwrap();
    assert!(!junit.contains("failures=\"0\""), "{junit}");
    // The report's per-CPU table marks the bounds as compare's does.
    let html = tmp.path().join("b.html");
    let o = jitterlab(&["report", s(&b), "-o", s(&html)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let html = std::fs::read_to_string(&html).unwrap();
    assert!(
        html.contains("≥30.0 us"),
        "the per-CPU table marks p99 as a bound"
    );
    // X1 (ninth re-run): the exceedance statements never say a bound is a "within".
    assert!(!html.contains("99% of wakeups within 30.0 us"), "X1");
    assert!(
        html.contains("of wakeups: not known, among the imported histogram&#39;s overflows"),
        "X1: the statements say the shares among the overflows are not known"
    );
    // The report's comparison of the two gives a bound no ratio.
    let both = tmp.path().join("ab.html");
    let o = jitterlab(&["report", s(&a), s(&b), "-o", s(&both)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let both = std::fs::read_to_string(&both).unwrap();
    assert!(
        both.contains("p99: no ratio, a lower bound"),
        "the comparison gives p99 no ratio"
    );
    assert!(
        !both.contains("p99 same"),
        "two bounds are not the same figure"
    );
}

/// X3 (tenth hostile re-run): the overflows of an imported source's other columns bound their
/// percentiles too: rtla's timer IRQ column (the report's "timer IRQ p99" and the IRQ
/// statements) and an oslat import's gaps (the noise table's gap percentiles).
#[test]
fn the_timer_irq_and_noise_columns_mark_their_bounds() {
    let tmp = tempfile::tempdir().unwrap();
    let data = |name: &str| {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/import")
            .join(name)
    };
    let report_of = |source: &str| {
        let dir = tmp.path().join(source);
        let o = jitterlab(&["import", s(&data(source)), "-o", s(&dir)]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let html = tmp.path().join(format!("{source}.html"));
        let o = jitterlab(&["report", s(&dir), "-o", s(&html)]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        std::fs::read_to_string(&html).unwrap()
    };
    // A third of CPU 0's IRQ latencies lie at or above 51 us, the histogram's end.
    let html = report_of("rtla-timerlat-hist-irq-over.txt");
    assert!(
        !html.contains("timer IRQ: 99% of wakeups within 51.0 us"),
        "X3: an IRQ share among the overflows is not a 'within'"
    );
    assert!(
        html.contains("<td>≥51.0 us</td>") && !html.contains("<td>51.0 us</td>"),
        "X3: the timer IRQ p99 is marked as a bound"
    );
    // 5000 of 6000 gaps are at or above 32 us.
    let html = report_of("oslat-overflow-crafted.txt");
    assert!(
        html.contains("≥32.0 us"),
        "X3: the gap percentiles are marked"
    );
    assert!(
        !html.contains("<td>32.0 us</td>"),
        "X3: no gap percentile unmarked"
    );
}

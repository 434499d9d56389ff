//! Sweeps: one run per level under one directory, and a summary row per level.

use crate::common;

use common::*;

#[test]
fn three_levels_give_three_runs_and_a_three_row_summary() {
    let _g = exclusive();
    if !realtime_available("three_levels_give_three_runs_and_a_three_row_summary") {
        return;
    }
    let (_base, out) = temp_out();
    let o = jitterlab(&[
        "sweep",
        "--load",
        "hackbench:groups={},loops=10",
        "--levels",
        "1,2,3",
        "--duration",
        "1s",
        "--cpus",
        "0",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    for (k, level) in ["1", "2", "3"].iter().enumerate() {
        assert!(
            t.contains(&format!("sweep: level {level} ({}/3)", k + 1)),
            "progress: {t}"
        );
        let run = run_json(&out.join(format!("level-{level}")));
        assert_eq!(run["ended"], "completed");
        assert_eq!(
            run["plan"]["loads"][0],
            format!("hackbench:groups={level},loops=10")
        );
    }
    let sweep: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("sweep.json")).unwrap()).unwrap();
    let rows = sweep["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "{sweep}");
    assert_eq!(sweep["load_template"], "hackbench:groups={},loops=10");
    for (row, groups) in rows.iter().zip([1.0, 2.0, 3.0]) {
        let fig = |name: &str| {
            row["throughput"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["name"] == name)
                .unwrap()["value"]
                .as_f64()
                .unwrap()
        };
        // Each exchange of level g moves g x 20 x 20 x 10 messages, all received.
        let exchanges = fig("exchanges");
        assert!(exchanges >= 1.0, "{row}");
        assert_eq!(
            fig("messages received"),
            exchanges * groups * 4000.0,
            "{row}"
        );
        let cpu0 = &row["threads"][0];
        assert_eq!(cpu0["cpu"], 0);
        assert!(cpu0["samples"].as_u64().unwrap() > 900, "{row}");
        assert!(cpu0["p99_ns"].as_u64().is_some() && cpu0["max_ns"].as_i64().is_some());
    }
    let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 4, "{csv}");
    assert!(
        lines[0].starts_with("level,run_dir,exchanges,exchange rate (exchanges/s),"),
        "{csv}"
    );
    assert!(lines[0].contains("cpu0_p99_ns"), "{csv}");
    assert!(lines[2].starts_with("2,level-2,"), "{csv}");
}

#[test]
fn bad_sweeps_exit_2_before_the_first_run() {
    let base = tempfile::tempdir().unwrap();
    let out = base.path().join("sweep");
    let o_str = out.to_str().unwrap();
    for (args, needles) in [
        (
            vec!["--load", "hackbench:groups={}", "--levels", "1,0,2"],
            vec!["sweep level 0", "groups=0"],
        ),
        (
            vec!["--load", "hackbench", "--levels", "1,2"],
            vec!["exactly one --load"],
        ),
        (
            vec!["--load", "hackbench:groups={}", "--levels", "1,a b"],
            vec!["level 'a b'"],
        ),
        (
            vec!["--load", "hackbench:groups={}", "--levels", "1,1"],
            vec!["given twice"],
        ),
    ] {
        let mut full = vec!["sweep", "--duration", "1s", "--out", o_str];
        full.extend_from_slice(&args);
        let o = jitterlab(&full);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {t}");
        for n in needles {
            assert!(t.contains(n), "{args:?}: lacks '{n}': {t}");
        }
        assert!(!out.exists(), "{args:?}: something was created");
    }
}

/// A sweep directory with a sweep.json only (the levels' runs are not needed to compare or
/// overlay sweeps): per level `max_us(level)` on CPU 0 and half of it on CPU 1, p99 a tenth of
/// the max, IRQ max a quarter when `traced`, and a throughput of `level` x 100 messages/s.
fn constructed_sweep(dir: &std::path::Path, max_us: impl Fn(u32) -> i64, traced: bool) {
    use jitterlab::format::run_record::Throughput;
    use jitterlab::results::sweep::{SweepRecord, SweepRow, SweepThread};
    let levels = [1u32, 10, 20, 40];
    let rows = levels
        .iter()
        .map(|&level| {
            let thread = |cpu: usize, max_ns: i64| SweepThread {
                cpu,
                samples: 1000,
                min_ns: Some(1_000),
                p99_ns: Some(max_ns as u64 / 10),
                max_ns: Some(max_ns),
                missed_periods: 0,
                dropped_records: 0,
                irq_p99_ns: traced.then_some(max_ns as u64 / 40),
                irq_max_ns: traced.then_some(max_ns / 4),
            };
            let max_ns = max_us(level) * 1000;
            SweepRow {
                level: level.to_string(),
                run_dir: format!("level-{level}"),
                throughput: vec![Throughput::new(
                    "messages",
                    level as f64 * 100.0,
                    "messages/s",
                )],
                threads: vec![thread(0, max_ns), thread(1, max_ns / 2)],
            }
        })
        .collect();
    let record = SweepRecord {
        format: 1,
        load_template: "hackbench:groups={}".into(),
        load_only: false,
        levels: levels.iter().map(|l| l.to_string()).collect(),
        rows,
        warnings: Vec::new(),
        ended: None,
        end_reason: None,
    };
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("sweep.json"),
        serde_json::to_string(&record).unwrap(),
    )
    .unwrap();
}

/// Issue 23: a sweep whose level 30 lost 781 of 2000 samples on CPU 0, and whose levels 30
/// and 40 finished no hackbench exchange. The report's sweep section shows the dropped count
/// per level with a warning, and the throughput plot has no point (never 0 s) where there is
/// no value, saying why; `compare` of the sweep reads "none" there.
#[test]
fn a_sweep_shows_dropped_samples_and_levels_without_a_value() {
    use jitterlab::format::run_record::Throughput;
    use jitterlab::results::sweep::{SweepRecord, SweepRow, SweepThread};
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("lossy");
    let mut record = SweepRecord {
        format: 1,
        load_template: "hackbench:groups={}".into(),
        load_only: false,
        levels: vec!["10".into(), "20".into(), "30".into(), "40".into()],
        rows: Vec::new(),
        warnings: Vec::new(),
        ended: None,
        end_reason: None,
    };
    for level in [10u32, 20, 30, 40] {
        let thread = |cpu: usize, samples: u64, dropped_records: u64| SweepThread {
            cpu,
            samples,
            min_ns: Some(1_000),
            p99_ns: Some(50_000),
            max_ns: Some(90_000),
            missed_periods: 3,
            dropped_records,
            irq_p99_ns: None,
            irq_max_ns: None,
        };
        let exchange = if level < 30 {
            Throughput::new("mean exchange time", 0.01 * level as f64, "s")
        } else {
            Throughput::none(
                "mean exchange time",
                "s",
                "no exchange finished in 1.00 s".into(),
            )
        };
        let lost = if level == 30 { 781 } else { 0 };
        record.push_row(SweepRow {
            level: level.to_string(),
            run_dir: format!("level-{level}"),
            throughput: vec![exchange],
            threads: vec![thread(0, 2000 - lost, lost), thread(1, 2000, 0)],
        });
    }
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("sweep.json"),
        serde_json::to_string(&record).unwrap(),
    )
    .unwrap();
    let html_path = base.path().join("r.html");
    let o = jitterlab(&[
        "report",
        dir.to_str().unwrap(),
        "-o",
        html_path.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(html.contains(">dropped<"), "a dropped column");
    assert!(html.contains(">781<"), "level 30's dropped count");
    assert!(
        html.contains("level 30: CPU 0 dropped 781 of 2000 samples (39.0 %)"),
        "the warning"
    );
    assert!(html.contains("level 40: no mean exchange time: no exchange finished in 1.00 s"));
    let start = html
        .find(r#"id="sweep1-throughput-mean-exchange-time""#)
        .expect("a throughput plot");
    let svg = &html[start..start + html[start..].find("</svg>").unwrap()];
    assert_eq!(
        svg.matches("<circle").count(),
        2,
        "no point without a value"
    );
    assert!(
        html.contains("level 20: mean exchange time 0.20 s"),
        "the statements stay with their levels"
    );
    assert!(
        html.contains(
            "level 30: no mean exchange time (no exchange finished in 1.00 s; not drawn)"
        )
    );
    assert!(!html.contains("level 30: mean exchange time 0 s"));
}

#[test]
fn two_sweeps_compare_and_overlay_with_their_irq_latency() {
    let base = tempfile::tempdir().unwrap();
    let rt = base.path().join("with-rt");
    let std_kernel = base.path().join("without-rt");
    // With RT the max stays at 50 us; without it grows 100 us per hackbench group.
    constructed_sweep(&rt, |_| 50, true);
    constructed_sweep(&std_kernel, |level| 100 * level as i64, true);
    let o = jitterlab(&[
        "compare",
        rt.to_str().unwrap(),
        std_kernel.to_str().unwrap(),
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    // Level 40: A's worst max 50 us, B's 4 ms = 80x; B's IRQ max a quarter of it, 1 ms.
    let line40 = t
        .lines()
        .find(|l| l.trim_start().starts_with("40 "))
        .unwrap_or_else(|| panic!("no level 40 row: {t}"));
    for needle in ["50.0 us", "4.00 ms (80.00x)", "1.00 ms", "5.0 us"] {
        assert!(line40.contains(needle), "lacks {needle}: {line40}\n{t}");
    }
    let line1 = t
        .lines()
        .find(|l| l.trim_start().starts_with("1 "))
        .unwrap();
    assert!(line1.contains("100.0 us (2.00x)"), "{line1}");
    assert!(t.contains("Load throughput per level"), "{t}");
    assert!(t.contains("4000"), "B's level 40 throughput: {t}");

    // A sweep and a run cannot be compared.
    let run_like = base.path().join("not-a-sweep");
    std::fs::create_dir_all(&run_like).unwrap();
    let o = jitterlab(&["compare", rt.to_str().unwrap(), run_like.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("not a sweep directory"), "{}", text(&o));

    // The report overlays both: per sweep the worst CPU's max, p99 and IRQ max.
    let html_path = base.path().join("r.html");
    let o = jitterlab(&[
        "report",
        rt.to_str().unwrap(),
        std_kernel.to_str().unwrap(),
        "-o",
        html_path.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let html = std::fs::read_to_string(&html_path).unwrap();
    let start = html
        .find(r#"id="sweeps-latency""#)
        .expect("an overlay latency plot");
    let svg = &html[start..start + html[start..].find("</svg>").unwrap()];
    for label in [
        "A: with-rt max",
        "A: with-rt p99",
        "A: with-rt IRQ max",
        "B: without-rt max",
        "B: without-rt IRQ max",
    ] {
        assert!(svg.contains(&format!(r#"data-label="{label}""#)), "{label}");
    }
    assert!(
        svg.contains("B: without-rt max: level 40: 4000000"),
        "B's worst max at 40"
    );
    assert!(svg.contains("B: without-rt IRQ max: level 40: 1000000"));
    assert!(html.contains(r#"id="sweeps-throughput-messages""#));
    assert!(html.contains(
        "B: without-rt: level 40: worst p99 400.0 us, worst max 4.00 ms, worst IRQ max 1.00 ms"
    ));
    // Each sweep's own table has the IRQ columns, and throughput is a table of its own.
    assert!(
        html.contains("<th>IRQ max</th>") || html.contains(">IRQ max<"),
        "IRQ column"
    );
    assert!(html.contains("Load throughput per level"));
}

#[test]
fn dry_run_checks_a_long_plan_and_starts_nothing() {
    let base = tempfile::tempdir().unwrap();
    let out = base.path().join("day");
    let out_s = out.to_str().unwrap();
    // A day at 1 ms on CPU 0 with a load: checked, described, nothing made. --policy other
    // needs no real-time permission, so this runs anywhere.
    let o = jitterlab(&[
        "run",
        "--dry-run",
        "--duration",
        "24h",
        "--cpus",
        "0",
        "--policy",
        "other",
        "--load",
        "cpu:workers=1",
        "--budget",
        "max<1ms",
        "--samples",
        "--out",
        out_s,
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    for needle in [
        "nothing was started",
        "CPUs 0, other 0",
        "86400000 wakeups per thread",
        "load for the whole run: cpu:workers=1",
        "budget: max<1ms",
        "86400 intervals of 1.00 s",
        "samples.bin",
        out_s,
    ] {
        assert!(t.contains(needle), "lacks '{needle}': {t}");
    }
    assert!(!out.exists(), "a dry run made {out_s}");

    // The checks exit as a real run's: an existing --out and a bad load are bad input (2).
    std::fs::create_dir_all(&out).unwrap();
    let o = jitterlab(&[
        "run",
        "--dry-run",
        "--policy",
        "other",
        "--cpus",
        "0",
        "--out",
        out_s,
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("exists"), "{}", text(&o));
    let o = jitterlab(&["run", "--dry-run", "--cpus", "0", "--load", "memory:size=1"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));

    // A sweep checks every level.
    let sweep_out = base.path().join("sweep");
    let o = jitterlab(&[
        "sweep",
        "--dry-run",
        "--policy",
        "other",
        "--cpus",
        "0",
        "--duration",
        "10m",
        "--load",
        "hackbench:groups={}",
        "--levels",
        "1,20,40",
        "--out",
        sweep_out.to_str().unwrap(),
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    for level in ["1", "20", "40"] {
        assert!(
            t.contains(&format!("load for the whole run: hackbench:groups={level}")),
            "{t}"
        );
    }
    assert!(t.contains("sweep level 40 (3/3)"), "{t}");
    assert!(!sweep_out.exists());
}

#[test]
fn no_measure_runs_each_level_alone_and_records_its_throughput() {
    let _g = exclusive();
    let (_base, out) = temp_out();
    let o = jitterlab(&[
        "sweep",
        "--no-measure",
        "--load",
        "hackbench:groups={},loops=10",
        "--levels",
        "1,2",
        "--duration",
        "1s",
        "--out",
        out.to_str().unwrap(),
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    let sweep: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("sweep.json")).unwrap()).unwrap();
    assert_eq!(sweep["load_only"], true, "{sweep}");
    assert_eq!(sweep["ended"], "completed", "{sweep}");
    let rows = sweep["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{sweep}");
    for (row, groups) in rows.iter().zip([1.0, 2.0]) {
        let fig = |name: &str| {
            row["throughput"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["name"] == name)
                .unwrap_or_else(|| panic!("no {name}: {row}"))["value"]
                .as_f64()
                .unwrap()
        };
        // Each exchange of g groups moves g x 20 x 20 x 10 messages, all received.
        let exchanges = fig("exchanges");
        assert!(exchanges >= 1.0, "{row}");
        assert_eq!(
            fig("messages received"),
            exchanges * groups * 4000.0,
            "{row}"
        );
        assert_eq!(
            row["threads"].as_array().unwrap().len(),
            0,
            "not measured: {row}"
        );
    }
    // No level was measured, so no level directory was made.
    let entries: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        entries.iter().all(|e| !e.starts_with("level-")),
        "{entries:?}"
    );
    // Measuring options are refused with it, by clap, naming both.
    let o = jitterlab(&[
        "sweep",
        "--no-measure",
        "--trace",
        "--load",
        "hackbench:groups={}",
        "--levels",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("the argument '--no-measure' cannot be used with '--trace'"),
        "{}",
        text(&o)
    );
}

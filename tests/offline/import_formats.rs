//! `jitterlab import` of the formats that carry no histogram or are text forms of another:
//! cyclictest's status lines (a run without -h), oslat's text, stress-ng's cyclic log,
//! jitterdebugger's results.json and rteval's summary.xml. Ground truth: a real capture of this machine
//! (tests/data/import/README.md), whose JSON file of the same run (`--json`) gives the same
//! counts, min and max with a finer average.

use crate::common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/import")
        .join(name)
}

/// Imports `file`; returns the output, run.json and whether latency.hlog was written.
fn import(file: &Path) -> (String, Value, bool) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let o = jitterlab(&[
        "import",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}: {}", file.display(), text(&o));
    let run =
        serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    (text(&o), run, out.join("latency.hlog").exists())
}

#[test]
fn cyclictest_status_lines_give_counts_min_avg_max_and_no_percentiles() {
    let (out, run, hlog) = import(&data("cyclictest-status.txt"));
    let (_, same_run, _) = import(&data("cyclictest-status.json"));
    assert_eq!(
        run["imported"]["source_format"], "cyclictest-status",
        "{out}"
    );
    assert!(!hlog);
    // The status lines: T:0 C:2995 Min:14 Avg:26 Max:2217 I:1000; T:1 C:2000 Min:10 Avg:22 Max:494 I:1500.
    let expected = [(2995, 14, 26, 2217, 1000), (2000, 10, 22, 494, 1500)];
    for (t, (c, min, avg, max, interval)) in run["threads"].as_array().unwrap().iter().zip(expected)
    {
        assert_eq!(t["samples"], c);
        assert_eq!(t["min_ns"], min * 1000);
        assert_eq!(t["mean_ns"], (avg * 1000) as f64);
        assert_eq!(t["max_ns"], max * 1000);
        assert_eq!(t["interval_ns"], interval * 1000);
        for p in ["p50_ns", "p99_ns", "p999_ns", "p9999_ns"] {
            assert_eq!(t[p], Value::Null, "{p}");
        }
    }
    // The JSON of the same run agrees on every figure both have.
    for (a, b) in run["threads"]
        .as_array()
        .unwrap()
        .iter()
        .zip(same_run["threads"].as_array().unwrap())
    {
        for f in ["cpu", "samples", "min_ns", "max_ns"] {
            assert_eq!(a[f], b[f], "{f}");
        }
        let (am, bm) = (
            a["mean_ns"].as_f64().unwrap(),
            b["mean_ns"].as_f64().unwrap(),
        );
        assert!((am - bm).abs() < 1000.0, "{am} {bm}");
    }
    assert_eq!(run["plan"]["priority"], 95);
    assert!(
        !run["imported"]["absent"]
            .as_array()
            .unwrap()
            .contains(&"plan.priority".into())
    );
    assert!(
        run["imported"]["absent"]
            .as_array()
            .unwrap()
            .contains(&"latency.hlog".into())
    );
}

#[test]
fn status_lines_reprinted_in_place_count_once_with_their_last_figures() {
    // Without -q cyclictest moves the cursor up and reprints: only the last figures count.
    let live = "policy: fifo: loadavg: 0.10 0.05 0.01 1/100 42\n\n\
        T: 0 ( 100) P:80 I:200 C:    10 Min:      5 Act:    6 Avg:    6 Max:      9\n\
        \u{1b}[1AT: 0 ( 100) P:80 I:200 C:   500 Min:      4 Act:    6 Avg:    7 Max:     31\n";
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("live.txt");
    std::fs::write(&file, live).unwrap();
    let (_, run, _) = import(&file);
    let t = &run["threads"].as_array().unwrap();
    assert_eq!(t.len(), 1);
    assert_eq!(
        (t[0]["samples"].as_u64(), t[0]["max_ns"].as_i64()),
        (Some(500), Some(31_000))
    );
    assert_eq!(
        (
            run["plan"]["policy"].as_str(),
            run["plan"]["interval_ns"].as_u64()
        ),
        (Some("fifo"), Some(200_000))
    );
}

/// The figures of each CPU that both run.json files must agree on.
fn thread_figures(run: &Value) -> Vec<Vec<Value>> {
    run["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            [
                "cpu", "samples", "min_ns", "max_ns", "p50_ns", "p99_ns", "p999_ns",
            ]
            .iter()
            .map(|f| t[*f].clone())
            .collect()
        })
        .collect()
}

#[test]
fn oslat_text_gives_the_figures_of_its_json() {
    // One oslat run on CPUs 0 and 1 printed oslat-2cpu.txt and wrote oslat-2cpu.json.
    let (out, run, hlog) = import(&data("oslat-2cpu.txt"));
    let (_, json, _) = import(&data("oslat-2cpu.json"));
    assert_eq!(run["imported"]["source_format"], "oslat-text", "{out}");
    assert!(hlog);
    assert_eq!(thread_figures(&run), thread_figures(&json));
    // The text's own summary lines: Maximum 52160 51763 (us), Average 1.002 1.002 (us).
    let t = run["threads"].as_array().unwrap();
    assert_eq!(
        (t[0]["cpu"].as_u64(), t[1]["cpu"].as_u64()),
        (Some(0), Some(1))
    );
    assert_eq!(
        (t[0]["max_ns"].as_i64(), t[1]["max_ns"].as_i64()),
        (Some(52_160_000), Some(51_763_000))
    );
    assert_eq!(t[0]["mean_ns"].as_f64(), Some(1002.0));
    // 98792439 + ... + 1001 (including overflows) on CPU 0.
    assert_eq!(t[0]["samples"].as_u64(), Some(98_795_964));
    // "Thread priority: SCHED_FIFO:1", "Total runtime: 3 seconds".
    assert_eq!(
        (
            run["plan"]["policy"].as_str(),
            run["plan"]["priority"].as_i64()
        ),
        (Some("fifo"), Some(1))
    );
    assert_eq!(run["plan"]["duration_ns"].as_u64(), Some(3_000_000_000));
    // The single-CPU capture and its JSON agree too.
    let (_, one, _) = import(&data("oslat.txt"));
    let (_, one_json, _) = import(&data("oslat.json"));
    assert_eq!(thread_figures(&one), thread_figures(&one_json));
}

#[test]
fn stress_ng_cyclic_log_gives_its_percentiles_and_no_histogram() {
    let (out, run, hlog) = import(&data("stress-ng-cyclic.txt"));
    assert_eq!(
        run["imported"]["source_format"], "stress-ng-cyclic",
        "{out}"
    );
    assert!(!hlog);
    let t = &run["threads"][0];
    // stress-ng's own lines: 3000 samples; mean 32766.53 ns; min 16166, max 275660, std.dev.
    // 9573.40; 50.00%: 34069, 90.00%: 40943, 99.00%: 54037, 99.90%: 114409, 99.99%: 275660.
    assert_eq!(t["samples"], 3000);
    assert_eq!(t["mean_ns"].as_f64(), Some(32766.53));
    assert_eq!(
        (t["min_ns"].as_i64(), t["max_ns"].as_i64()),
        (Some(16166), Some(275_660))
    );
    assert_eq!(t["stddev_ns"].as_f64(), Some(9573.40));
    for (p, v) in [
        ("p50_ns", 34069),
        ("p90_ns", 40943),
        ("p99_ns", 54037),
        ("p999_ns", 114_409),
        ("p9999_ns", 275_660),
    ] {
        assert_eq!(t[p].as_i64(), Some(v), "{p}");
    }
    // "sched SCHED_FIFO: 100000 ns delay".
    assert_eq!(
        (
            run["plan"]["policy"].as_str(),
            run["plan"]["interval_ns"].as_u64()
        ),
        (Some("fifo"), Some(100_000))
    );
    // Its -Y YAML of the same run holds bogo-ops only: refused, saying where the latencies are.
    let dir = tempfile::tempdir().unwrap();
    let o = jitterlab(&[
        "import",
        data("stress-ng-cyclic.yaml").to_str().unwrap(),
        "--out",
        dir.path().join("y").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("import the log of the same run"),
        "{}",
        text(&o)
    );
}

#[test]
fn stress_ng_percentiles_that_contradict_the_extremes_are_refused() {
    let log = std::fs::read_to_string(data("stress-ng-cyclic.txt")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (edit, says) in [
        (
            log.replace("99.00%:      54037", "99.00%:      24037"),
            "below its 95.4% percentile",
        ),
        (
            log.replace("99.99%:     275660", "99.99%:     295660"),
            "outside its min",
        ),
    ] {
        let file = dir.path().join("edited.txt");
        std::fs::write(&file, edit).unwrap();
        let o = jitterlab(&[
            "import",
            file.to_str().unwrap(),
            "--out",
            dir.path().join("o").to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(text(&o).contains(says), "{says}: {}", text(&o));
    }
}

#[test]
fn jitterdebugger_results_keep_counts_beyond_its_histogram() {
    let (out, run, hlog) = import(&data("jitterdebugger-results.json"));
    assert_eq!(run["imported"]["source_format"], "jitterdebugger", "{out}");
    assert!(hlog);
    // jitterdebugger prints a never-run thread's avg as -nan, which is no JSON.
    let source = std::fs::read_to_string(data("jitterdebugger-results.json")).unwrap();
    let source: Value = serde_json::from_str(&source.replace("-nan", "null")).unwrap();
    let t = run["threads"].as_array().unwrap();
    for (i, t) in t.iter().enumerate().take(2) {
        let s = &source["cpu"][i.to_string()];
        assert_eq!(t["samples"], s["count"]);
        assert_eq!(
            t["min_ns"].as_u64(),
            Some(s["min"].as_u64().unwrap() * 1000)
        );
        assert_eq!(
            t["max_ns"].as_u64(),
            Some(s["max"].as_u64().unwrap() * 1000)
        );
        assert_eq!(
            t["mean_ns"].as_f64(),
            Some(s["avg"].as_f64().unwrap() * 1000.0)
        );
    }
    // Thread 1 has 2 latencies (1500 and 2750 us) past the 1 ms histogram: counted, and the
    // max is the printed 2750 us.
    assert!(
        out.contains("CPU 1: 2 samples were beyond the source histogram"),
        "{out}"
    );
    // Thread 2 never ran: kept empty, not dropped.
    assert_eq!(t[2]["samples"], 0);
    assert_eq!(t[2]["max_ns"], Value::Null);
    assert!(out.contains("thread 2 took no sample"), "{out}");
    // Its sysinfo is the run's system information.
    assert_eq!(run["system"]["release"], source["sysinfo"]["release"]);
}

#[test]
fn rteval_summary_gives_per_cpu_statistics_and_histograms() {
    let (out, run, hlog) = import(&data("rteval-summary.xml"));
    assert_eq!(run["imported"]["source_format"], "rteval", "{out}");
    assert!(hlog);
    // The file's own <core> statistics.
    let expected = [
        (0, 5001, 2, 180, 4.6180763847230555, 3.9335105413566644),
        (1, 5001, 2, 181, 6.705058988202359, 5.76225584311558),
    ];
    for (t, (cpu, n, min, max, mean, sd)) in run["threads"].as_array().unwrap().iter().zip(expected)
    {
        assert_eq!(t["cpu"], cpu);
        assert_eq!(t["samples"], n);
        assert_eq!(
            (t["min_ns"].as_i64(), t["max_ns"].as_i64()),
            (Some(min * 1000), Some(max * 1000))
        );
        assert!((t["mean_ns"].as_f64().unwrap() - mean * 1000.0).abs() < 1e-6);
        assert!((t["stddev_ns"].as_f64().unwrap() - sd * 1000.0).abs() < 1e-6);
    }
    // <median unit="us">4</median> and 5: the histogram's p50 is that bucket.
    assert_eq!(
        run["threads"][0]["p50_ns"].as_i64().map(|v| v / 1000),
        Some(4)
    );
    assert_eq!(
        run["threads"][1]["p50_ns"].as_i64().map(|v| v / 1000),
        Some(5)
    );
    // cyclictest -i100 -qmu -h 3500 -p95; run_info 10 minutes.
    assert_eq!(run["plan"]["priority"], 95);
    assert_eq!(run["plan"]["interval_ns"], 100_000);
    assert_eq!(run["plan"]["mlock"], true);
    assert_eq!(run["duration_ns"].as_u64(), Some(600_000_000_000));
}

#[test]
fn rteval_reports_that_contradict_themselves_or_stopped_are_handled() {
    let xml = std::fs::read_to_string(data("rteval-summary.xml")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let run_on = |text: String| {
        let file = dir.path().join("summary.xml");
        std::fs::write(&file, text).unwrap();
        let out = dir.path().join(format!("o{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        let o = jitterlab(&[
            "import",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        let run: Option<Value> = std::fs::read_to_string(out.join("run.json"))
            .ok()
            .map(|t| serde_json::from_str(&t).unwrap());
        (o, run)
    };
    // System samples that are not the cores together.
    let (o, _) = run_on(xml.replacen("<samples>10002</samples>", "<samples>10003</samples>", 1));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("system"), "{}", text(&o));
    // A report rteval stopped on a breaktrace: imported as interrupted, with the reason.
    let stopped = xml.replace(
        "<timestamps>",
        "<abort_report reason=\"breaktrace\"><breaktrace latency_threshold=\"150\" measured_latency=\"181\"/></abort_report><timestamps>",
    );
    let (o, run) = run_on(stopped);
    assert!(o.status.success(), "{}", text(&o));
    let run = run.unwrap();
    assert_eq!(run["ended"], "interrupted", "{run}");
    assert!(
        run["end_reason"]
            .as_str()
            .unwrap()
            .contains("latency 181 us above the threshold 150 us")
    );
    // rteval's uname is the run's system information.
    assert_eq!(run["system"]["release"], "6.12.0-rt7");
    assert_eq!(run["system"]["realtime"], 1);
    // A report without per-CPU statistics (rteval drops them when the max passed -h).
    let cut = xml.split("<system").next().unwrap().to_string()
        + "</cyclictest></Measurements></rteval>\n";
    let (o, _) = run_on(cut);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("more buckets"), "{}", text(&o));
}

#[test]
fn rtla_osnoise_and_timerlat_top_are_read() {
    // Laid out as rtla prints them (Documentation/tools/rtla examples).
    let osnoise_top = "                                          Operating System Noise\n\
        duration:   0 00:00:10 | time is in us\n\
        CPU Period       Runtime        Noise  % CPU Aval   Max Noise   Max Single          HW          NMI          IRQ      Softirq       Thread\n\
          0 #9           9000000          162    99.99820          42           6           0           0        9023            0            4\n";
    let osnoise_hist = "# RTLA osnoise histogram\n# Time unit is microseconds (us)\nIndex   CPU-000\n0          120\ncount:     120\n";
    let timerlat_top = "                                     Timer Latency\n\
          0 00:00:10   |          IRQ Timer Latency (us)        |         Thread Timer Latency (us)\n\
        CPU COUNT      |      cur       min       avg       max |      cur       min       avg       max\n\
          0 #10003     |        1         0         1        22 |        4         3         4        28\n";
    // Read since the noise run exists (tests/import_noise.rs has the full checks).
    let dir = tempfile::tempdir().unwrap();
    for (name, content, cpu0_max_ns, samples) in [
        ("osnoise-top.txt", osnoise_top, 6_000, 0),
        ("osnoise-hist.txt", osnoise_hist, 0, 120),
        ("timerlat-top.txt", timerlat_top, 28_000, 10_003),
    ] {
        let file = dir.path().join(name);
        std::fs::write(&file, content).unwrap();
        let (out, run, _) = import(&file);
        let t = &run["threads"][0];
        assert_eq!(t["samples"].as_u64(), Some(samples), "{name}: {out}");
        if cpu0_max_ns > 0 {
            assert_eq!(t["max_ns"].as_i64(), Some(cpu0_max_ns), "{name}: {out}");
        }
    }
}

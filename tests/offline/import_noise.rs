//! `jitterlab import` of the rtla top outputs, rtla osnoise hist and jitterdebugger's raw
//! samples. Every input is written here to the layout the tool's source prints or writes
//! (tools/tracing/rtla/src/{timerlat_top,osnoise_top,osnoise_hist}.c, jitterdebugger.h), with
//! known numbers; the expected figures are the input's own summary columns, or, for the raw
//! samples, the values written.

use crate::common;

use common::*;
use jitterlab::format::hlog::read_intervals;
use jitterlab::format::stats::new_histogram;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// latency.hlog's histograms by tag.
type Hlog = BTreeMap<String, hdrhistogram::Histogram<u64>>;

/// Imports `content` written to `name` in a fresh directory (with `beside` files next to it):
/// exit code, output, run.json and the latency.hlog histograms by tag when written.
fn import_bytes(
    name: &str,
    content: &[u8],
    beside: &[(&str, &str)],
) -> (Option<i32>, String, Option<Value>, Option<Hlog>) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(name);
    std::fs::write(&file, content).unwrap();
    for (n, c) in beside {
        std::fs::write(dir.path().join(n), c).unwrap();
    }
    let out = dir.path().join("run");
    let o = jitterlab(&[
        "import",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let run = std::fs::read_to_string(out.join("run.json"))
        .ok()
        .map(|t| serde_json::from_str(&t).unwrap());
    let hlog = out.join("latency.hlog").exists().then(|| {
        let mut m = Hlog::new();
        for i in read_intervals(&out.join("latency.hlog")).unwrap() {
            m.entry(i.tag.clone())
                .or_insert_with(new_histogram)
                .add(&i.histogram)
                .unwrap();
        }
        m
    });
    (o.status.code(), text(&o), run, hlog)
}

fn absent(run: &Value) -> Vec<String> {
    run["imported"]["absent"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect()
}

/// `rtla timerlat top -u -q` as timerlat_top.c prints it: CPU 1's user block is empty (`-`).
const TIMERLAT_TOP_USER: &str = "\
                                     Timer Latency                                                                                       \n\
  0 00:00:30   |          IRQ Timer Latency (us)        |         Thread Timer Latency (us)      |    Ret user Timer Latency (us)\n\
CPU COUNT      |      cur       min       avg       max |      cur       min       avg       max |      cur       min       avg       max\n\
  0 #29980     |        1         0         1        15 |        6         3         5        31 |        8         4         7        44\n\
  1 #29979     |        2         1         2        12 |        7         2         6        23 |        -         -         -         -\n\
---------------|----------------------------------------|---------------------------------------|----------------------------------------\n\
ALL #59959  e0 |                   0         1        15 |                  2         5        31 |                  4         7        44\n";

#[test]
fn rtla_timerlat_top_gives_counts_min_avg_max_per_cpu() {
    let (code, out, run, hlog) = import_bytes("top.txt", TIMERLAT_TOP_USER.as_bytes(), &[]);
    assert_eq!(code, Some(0), "{out}");
    let run = run.unwrap();
    assert!(hlog.is_none(), "no histogram, so no latency.hlog");
    assert_eq!(run["kind"], "latency");
    assert_eq!(run["imported"]["source_format"], "rtla-timerlat-top");
    assert_eq!(run["duration_ns"].as_u64(), Some(30_000_000_000));
    let t0 = thread(&run, 0);
    // CPU 0: the Ret user block is the latency: 4/7/44 us over the 29980 timer IRQs.
    assert_eq!(t0["samples"].as_u64(), Some(29_980));
    assert_eq!(t0["min_ns"].as_i64(), Some(4_000));
    assert_eq!(t0["mean_ns"].as_f64(), Some(7_000.0));
    assert_eq!(t0["max_ns"].as_i64(), Some(44_000));
    assert_eq!(t0["irq_latency"]["max_ns"].as_i64(), Some(15_000));
    for p in ["p50_ns", "p90_ns", "p99_ns", "p999_ns", "p9999_ns"] {
        assert!(t0[p].is_null(), "{p} must be absent: {t0}");
    }
    // CPU 1: no user samples: the thread block is the latency, 2/6/23 us.
    let t1 = thread(&run, 1);
    assert_eq!(
        (
            t1["samples"].as_u64(),
            t1["min_ns"].as_i64(),
            t1["max_ns"].as_i64()
        ),
        (Some(29_979), Some(2_000), Some(23_000))
    );
    assert!(absent(&run).contains(&"latency.hlog".to_string()));
    let warnings = run["warnings"].to_string();
    assert!(warnings.contains("CPU 0 thread block"), "{warnings}");
}

#[test]
fn rtla_timerlat_top_redrawn_reads_the_last_table_and_nanoseconds() {
    // Without -q rtla clears the screen (ESC c) and redraws: only the last table is final.
    let table = |count: u64, max: u64| {
        format!(
            "\u{1b}c                                     Timer Latency\n\
             \x20 0 00:00:0{}   |          IRQ Timer Latency (ns)        |         Thread Timer Latency (ns)\n\
             CPU COUNT      |      cur       min       avg       max |      cur       min       avg       max\n\
             \x20 0 #{count:<9} |      900       800      1000      {max} |     5000      3000      4000      {max}0\n",
            count / 1000
        )
    };
    let text = format!("{}{}", table(1000, 2000), table(5000, 9000));
    let (code, out, run, _) = import_bytes("top.txt", text.as_bytes(), &[]);
    assert_eq!(code, Some(0), "{out}");
    let run = run.unwrap();
    let t0 = thread(&run, 0);
    assert_eq!(
        (
            t0["samples"].as_u64(),
            t0["min_ns"].as_i64(),
            t0["max_ns"].as_i64()
        ),
        (Some(5000), Some(3000), Some(90_000))
    );
    assert_eq!(run["duration_ns"].as_u64(), Some(5_000_000_000));
}

/// `rtla osnoise top -q` as osnoise_top.c prints it. CPU 0: runtime 9000000 us, noise 9001 us,
/// so 99.89998 % available; CPU 1: 300 us of noise in 9000000.
const OSNOISE_TOP: &str = "\
                                          Operating System Noise                                                                          \n\
duration:   0 00:00:10 | time is in us\n\
CPU Period       Runtime        Noise  % CPU Aval   Max Noise   Max Single          HW          NMI          IRQ      Softirq       Thread\n\
  0 #9          9000000         9001    99.89998        1002         1002           0            0         9021          117           41 \n\
  1 #9          9000000          300    99.99666          55           21           2            0         9005           12            3 \n";

#[test]
fn rtla_osnoise_top_is_a_noise_run_with_its_noise_share_and_largest_gap() {
    let (code, out, run, hlog) = import_bytes("osnoise.txt", OSNOISE_TOP.as_bytes(), &[]);
    assert_eq!(code, Some(0), "{out}");
    let run = run.unwrap();
    assert!(hlog.is_none());
    assert_eq!(run["kind"], "noise");
    assert_eq!(run["imported"]["source_format"], "rtla-osnoise-top");
    assert_eq!(run["duration_ns"].as_u64(), Some(10_000_000_000));
    let t0 = thread(&run, 0);
    let n = &t0["noise"];
    assert_eq!(n["measured_ns"].as_u64(), Some(9_000_000_000));
    assert_eq!(n["noise_ns"].as_u64(), Some(9_001_000));
    assert!((n["noise_pct"].as_f64().unwrap() - 100.0 * 9001.0 / 9_000_000.0).abs() < 1e-12);
    // "Max Single" is the largest gap; rtla prints no count, min or distribution.
    assert_eq!(t0["max_ns"].as_i64(), Some(1_002_000));
    assert!(t0["min_ns"].is_null() && t0["p99_ns"].is_null(), "{t0}");
    let absent = absent(&run);
    for field in [
        "samples",
        "noise.iterations",
        "noise.gaps_per_s",
        "noise.throttled_ns",
    ] {
        assert!(absent.contains(&field.to_string()), "{field}: {absent:?}");
    }
    assert!(!absent.contains(&"noise.noise_pct".to_string()));
    let figure = |cpu: u64, name: &str| {
        run["imported"]["figures"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["cpu"].as_u64() == Some(cpu) && f["name"] == name)
            .map(|f| f["value"].as_u64().unwrap())
    };
    assert_eq!(figure(0, "irq"), Some(9021));
    assert_eq!(figure(0, "softirq"), Some(117));
    assert_eq!(figure(1, "hw"), Some(2));
    assert_eq!(figure(1, "max_period_noise_ns"), Some(55_000));
    assert_eq!(thread(&run, 1)["noise"]["noise_ns"].as_u64(), Some(300_000));
}

#[test]
fn rtla_osnoise_top_whose_share_contradicts_its_times_is_refused() {
    let bad = OSNOISE_TOP.replace("99.89998", "99.99998");
    let (code, out, run, _) = import_bytes("osnoise.txt", bad.as_bytes(), &[]);
    assert_eq!(code, Some(2), "{out}");
    assert!(run.is_none());
    assert!(out.contains("runtime and noise give 99.89998"), "{out}");
}

/// `rtla osnoise hist` as osnoise_hist.c prints it: CPU 0 with 6 noise events (5, 5, 6, 9 us and
/// 2 beyond the 256-entry histogram), CPU 2 with 3 (7, 7, 8 us); CPU 1 saw none and is left out.
const OSNOISE_HIST: &str = "\
# RTLA osnoise histogram\n\
# Time unit is microseconds (us)\n\
# Duration:   0 00:01:00\n\
Index   CPU-000   CPU-002\n\
5             2         0 \n\
6             1         0 \n\
7             0         2 \n\
8             0         1 \n\
9             1         0 \n\
over:         2         0 \n\
count:        6         3 \n\
min:          5         7 \n\
avg:     102.50      7.33 \n\
max:        580         8 \n";

#[test]
fn rtla_osnoise_hist_is_a_noise_run_with_its_gap_histograms() {
    let (code, out, run, hlog) = import_bytes("hist.txt", OSNOISE_HIST.as_bytes(), &[]);
    assert_eq!(code, Some(0), "{out}");
    let (run, hlog) = (run.unwrap(), hlog.unwrap());
    assert_eq!(run["kind"], "noise");
    assert_eq!(run["imported"]["source_format"], "rtla-osnoise-hist");
    let t0 = thread(&run, 0);
    assert_eq!(
        (
            t0["samples"].as_u64(),
            t0["min_ns"].as_i64(),
            t0["max_ns"].as_i64()
        ),
        (Some(6), Some(5_000), Some(580_000))
    );
    assert_eq!(t0["mean_ns"].as_f64(), Some(102_500.0));
    let t2 = thread(&run, 2);
    assert_eq!(
        (t2["samples"].as_u64(), t2["max_ns"].as_i64()),
        (Some(3), Some(8_000))
    );
    let h0 = &hlog["cpu0"];
    assert_eq!(h0.len(), 6);
    assert_eq!(
        (h0.count_at(5_000), h0.count_at(6_000), h0.count_at(9_000)),
        (2, 1, 1)
    );
    // The overflow: one at the printed max, the other at the histogram's end (10 us here).
    assert_eq!((h0.count_at(580_000), h0.count_at(10_000)), (1, 1));
    assert_eq!(
        (hlog["cpu2"].count_at(7_000), hlog["cpu2"].count_at(8_000)),
        (2, 1)
    );
    let absent = absent(&run);
    for field in [
        "noise.noise_pct",
        "noise.noise_ns",
        "noise.measured_ns",
        "noise.iterations",
    ] {
        assert!(absent.contains(&field.to_string()), "{field}: {absent:?}");
    }
    assert!(!absent.contains(&"samples".to_string()));
}

#[test]
fn oslat_imports_are_noise_runs_with_their_iterations() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/import/oslat-2cpu.txt");
    let source = std::fs::read(&path).unwrap();
    let (code, out, run, _) = import_bytes("oslat.txt", &source, &[]);
    assert_eq!(code, Some(0), "{out}");
    let run = run.unwrap();
    assert_eq!(run["kind"], "noise");
    // oslat counts every loop pass: 98792439 + ... + 1001 on CPU 0, in its "Duration: 3.014".
    let t0 = thread(&run, 0);
    assert_eq!(t0["noise"]["iterations"].as_u64(), Some(98_795_964));
    assert_eq!(t0["samples"].as_u64(), Some(98_795_964));
    assert_eq!(t0["noise"]["measured_ns"].as_u64(), Some(3_014_000_000));
    assert!(absent(&run).contains(&"noise.noise_pct".to_string()));
}

/// jitterdebugger's `struct latency_sample` (packed, little-endian, 64-bit time_t).
fn record(cpu: u32, time_ns: u64, value: u64) -> Vec<u8> {
    let mut r = cpu.to_le_bytes().to_vec();
    r.extend((time_ns / 1_000_000_000).to_le_bytes());
    r.extend((time_ns % 1_000_000_000).to_le_bytes());
    r.extend(value.to_le_bytes());
    r
}

/// Thread 0: 3, 5, 5, 9, 120; thread 1: 4, 4, 4, 1000; 250 us apart, interleaved as
/// jitterdebugger's writer thread stores them (per thread in order).
fn samples_raw() -> Vec<u8> {
    let mut bytes = Vec::new();
    let start = 1114 * 1_000_000_000 + 936_950_838;
    for (i, v) in [3, 5, 5, 9, 120].into_iter().enumerate() {
        bytes.extend(record(0, start + i as u64 * 250_000, v));
    }
    for (i, v) in [4, 4, 4, 1000].into_iter().enumerate() {
        bytes.extend(record(1, start + 10 + i as u64 * 250_000, v));
    }
    bytes
}

#[test]
fn jitterdebugger_samples_give_exact_histograms() {
    let raw = samples_raw();
    assert_eq!(raw.len(), 9 * 28);
    let (code, out, run, hlog) = import_bytes("samples.raw", &raw, &[]);
    assert_eq!(code, Some(0), "{out}");
    let (run, hlog) = (run.unwrap(), hlog.unwrap());
    assert_eq!(run["kind"], "latency");
    assert_eq!(run["imported"]["source_format"], "jitterdebugger-samples");
    let t0 = thread(&run, 0);
    assert_eq!(
        (
            t0["samples"].as_u64(),
            t0["min_ns"].as_i64(),
            t0["max_ns"].as_i64()
        ),
        (Some(5), Some(3_000), Some(120_000))
    );
    assert_eq!(t0["mean_ns"].as_f64(), Some(28_400.0), "(3+5+5+9+120)/5 us");
    let t1 = thread(&run, 1);
    assert_eq!(
        (t1["samples"].as_u64(), t1["max_ns"].as_i64()),
        (Some(4), Some(1_000_000))
    );
    assert_eq!(t1["mean_ns"].as_f64(), Some(253_000.0));
    let h0 = &hlog["cpu0"];
    assert_eq!(
        [3, 5, 9, 120].map(|us| h0.count_at(us * 1000)),
        [1, 2, 1, 1]
    );
    assert_eq!(hlog["cpu1"].count_at(4_000), 3);
    // First to last wakeup: thread 0's last at start + 1 ms; thread 1's at start + 10 ns + 750 us.
    assert_eq!(run["duration_ns"].as_u64(), Some(1_000_000));
    assert!(out.contains("no results.json beside it"), "{out}");
}

#[test]
fn jitterdebugger_samples_take_their_unit_from_results_json_beside_them() {
    let results = r#"{"version": 3, "sysinfo": {"resolution_in_ns": 1}, "cpu": {}}"#;
    let (code, out, run, _) =
        import_bytes("samples.raw", &samples_raw(), &[("results.json", results)]);
    assert_eq!(code, Some(0), "{out}");
    let t0 = thread(run.as_ref().unwrap(), 0);
    assert_eq!(
        (t0["min_ns"].as_i64(), t0["max_ns"].as_i64()),
        (Some(3), Some(120))
    );
}

#[test]
fn damaged_samples_files_are_refused_with_the_reason() {
    let mut cut = samples_raw();
    cut.truncate(cut.len() - 5);
    let (code, out, run, _) = import_bytes("samples.raw", &cut, &[]);
    assert_eq!(code, Some(2), "{out}");
    assert!(run.is_none());
    assert!(out.contains("not jitterdebugger sample records"), "{out}");
    // Time going backwards within a thread is not this layout either.
    let mut backwards = record(0, 5_000_000_000, 3);
    backwards.extend(record(0, 4_000_000_000, 3));
    let (code, out, _, _) = import_bytes("samples.raw", &backwards, &[]);
    assert_eq!(code, Some(2), "{out}");
}

#[test]
fn control_characters_from_top_outputs_never_reach_the_terminal() {
    // A damaged value carrying BEL and an OSC title sequence's opener.
    let bad = TIMERLAT_TOP_USER.replace("#29980", "#29\u{7}\u{9b}980");
    let (code, out, _, _) = import_bytes("top.txt", bad.as_bytes(), &[]);
    assert_eq!(code, Some(2), "{out}");
    assert!(!out.contains('\u{7}') && !out.contains('\u{9b}'), "{out:?}");
    assert!(out.contains("is not a count"), "{out}");
}

#[test]
fn a_noise_budget_on_an_import_that_lacks_the_figure_fails_as_absent() {
    // oslat states no noise share; rtla osnoise top states no gap count or percentiles.
    let oslat = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/import/oslat-2cpu.txt");
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let top = dir.path().join("top.txt");
    std::fs::write(&top, OSNOISE_TOP).unwrap();
    for (src, out) in [(oslat.as_path(), &a), (top.as_path(), &b)] {
        let o = jitterlab(&[
            "import",
            src.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", text(&o));
    }
    let compare = |x: &Path, budget: &str| {
        let o = jitterlab(&[
            "compare",
            x.to_str().unwrap(),
            x.to_str().unwrap(),
            "--budget",
            budget,
        ]);
        (o.status.code(), text(&o))
    };
    let (code, out) = compare(&a, "noise_pct<1");
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("not in the imported source"), "{out}");
    let (code, out) = compare(&b, "p99<1ms");
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("not in the imported source"), "{out}");
    // What the source states is judged: CPU 0's 0.1 % noise and 1002 us largest gap.
    let (code, out) = compare(&b, "noise_pct<1,max<2ms");
    assert_eq!(code, Some(0), "{out}");
}

//! `jitterlab import` of the formats that carry no histogram or are text forms of another:
//! cyclictest's status lines (a run without -h). Ground truth: a real capture of this machine
//! (tests/data/import/README.md), whose JSON file of the same run (`--json`) gives the same
//! counts, min and max with a finer average.

mod common;

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

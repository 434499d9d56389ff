//! Sweeps: one run per level under one directory, and a summary row per level.

mod common;

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
        lines[0].starts_with("level,run_dir,exchanges (exchanges),"),
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

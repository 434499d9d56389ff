//! Issue 39's second hostile re-run, L-b: a reader refuses a file over its caps before it
//! keeps anything, and within them takes memory bounded by the caps, not by the file.
//! `export --format counters` of a 507 MB counters.log (44 M values) took 35 s and 2.4 GB to
//! refuse it; 16 M numbers under run.json's `system` (a JSON tree, about 64 bytes a value)
//! took 1.0 GB. Each child's peak RSS is its own (wait4's rusage).

use crate::common;

use common::*;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A counters.log declaring the most counters jitterlab reads for CPU 0, then `lines` data
/// lines that leave every one out (each still hands out a value per declared counter, 0).
fn short_lines_under_the_widest_declaration(lines: u64) -> String {
    let most = jitterlab::format::counters::MAX_NAMES_PER_CPU;
    let mut text = String::from("#jitterlab-counters 1\n#interval_ns 1000000000\n#cpu 0");
    for k in 0..most {
        let _ = write!(text, " irq:{k}");
    }
    text.push('\n');
    for k in 0..lines {
        let _ = writeln!(text, "{k} 0 {k}000 {k}001");
    }
    text
}

#[test]
fn a_counters_log_over_its_caps_is_refused_before_it_is_kept() {
    use jitterlab::format::counters::{MAX_KEPT_VALUES, MAX_NAMES_PER_CPU, MAX_VALUES};
    let base = tempfile::tempdir().unwrap();
    let run = base.path().join("run");
    let other = base.path().join("other");
    write_known_run(&run, &[0, 1], 10, 1000, uniform_10_50, 1, 0);
    write_known_run(&other, &[0, 1], 10, 1000, uniform_10_50, 2, 0);
    let per_line = MAX_NAMES_PER_CPU as u64;
    const MOST_KIB: i64 = 150 << 10;

    // Over what any reader takes (16 384 lines of 16 384 values): refused at once, by
    // counting (before: the first 33 554 432 values kept, 2.4 GB, then a refusal).
    let over_all = MAX_VALUES / per_line + 1;
    fs::write(
        run.join("counters.log"),
        short_lines_under_the_widest_declaration(over_all),
    )
    .unwrap();
    let (code, kib, err) = peak_rss(
        base.path(),
        &["export", s(&run), "--format", "counters", "-o", "/dev/null"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("more than 268 435 456 values"),
        "the cap is named: {err}"
    );
    assert!(kib < MOST_KIB, "peak RSS {kib} KiB to refuse it");

    // Over what compare keeps, under what a reader takes: compare counts and leaves the
    // counters out at once; the export streams every row.
    let over_kept = MAX_KEPT_VALUES / per_line + 1;
    fs::write(
        run.join("counters.log"),
        short_lines_under_the_widest_declaration(over_kept),
    )
    .unwrap();
    let (code, kib, err) = peak_rss(base.path(), &["compare", s(&run), s(&other)]);
    assert_eq!(code, 0, "{err}");
    assert!(kib < MOST_KIB, "compare: peak RSS {kib} KiB");
    let (code, kib, err) = peak_rss(
        base.path(),
        &["export", s(&run), "--format", "counters", "-o", "/dev/null"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(kib < MOST_KIB, "export: peak RSS {kib} KiB");
}

#[test]
fn a_run_json_system_snapshot_past_its_cap_is_refused() {
    let base = tempfile::tempdir().unwrap();
    let run = base.path().join("run");
    write_known_run(&run, &[0, 1], 10, 1000, uniform_10_50, 1, 0);
    let path = run.join("run.json");
    let mut record: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    record["system"] = serde_json::json!({ "x": vec![0; 70_000] });
    fs::write(&path, serde_json::to_string(&record).unwrap()).unwrap();
    let html = base.path().join("r.html");
    let out = jitterlab(&["report", s(&run), "-o", s(&html)]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("its `system` holds more than 65 536 JSON values"),
        "{}",
        text(&out)
    );
    assert!(!html.exists());
}

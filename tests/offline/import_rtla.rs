//! `jitterlab import` of rtla timerlat hist output in the forms issue 13 lists: an empty Usr
//! column, a run rtla stopped on its threshold, overflow in the IRQ column, `--no-header`
//! output. Inputs are tests/data/import/rtla-timerlat-hist-user.txt (rtla's documented layout,
//! known latencies, README there) edited column by column; the expected figures are the
//! file's own count:/min:/max: lines.

use crate::common;

use common::*;
use jitterlab::format::hlog::read_intervals;
use serde_json::Value;
use std::path::Path;

fn source() -> String {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/import/rtla-timerlat-hist-user.txt");
    std::fs::read_to_string(path).unwrap()
}

/// `source` with column `column` (0 = IRQ-000) of the per-CPU block set by `set(label, value)`,
/// label being the row index or `over:`, `count:`, `min:`, `avg:`, `max:`.
fn edit_column(text: &str, column: usize, set: impl Fn(&str, &str) -> String) -> String {
    let mut out = String::new();
    let mut in_table = false;
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        in_table = (in_table || line.starts_with("Index")) && !line.starts_with("ALL:");
        let data = in_table && !line.starts_with("Index") && fields.len() > column + 1;
        if data {
            let mut f: Vec<String> = fields.iter().map(|s| s.to_string()).collect();
            f[column + 1] = set(fields[0], fields[column + 1]);
            out.push_str(&f.join(" "));
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

/// run.json and the latency.hlog tags of a successful import.
type Imported = Option<(Value, Vec<String>)>;

fn import_text(content: &str) -> (Option<i32>, String, Imported) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rtla.txt");
    std::fs::write(&file, content).unwrap();
    let out = dir.path().join("run");
    let o = jitterlab(&[
        "import",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let run = std::fs::read_to_string(out.join("run.json")).ok().map(|t| {
        let tags = read_intervals(&out.join("latency.hlog"))
            .unwrap()
            .into_iter()
            .map(|i| i.tag)
            .collect();
        (serde_json::from_str(&t).unwrap(), tags)
    });
    (o.status.code(), text(&o), run)
}

#[test]
fn an_empty_usr_column_keeps_the_cpus_thr_and_irq_histograms() {
    for unset in ["-", "18446744073709551615"] {
        // Usr-001 (column 5) never woke: no samples.
        let text = edit_column(&source(), 5, |label, v| match label {
            "min:" | "avg:" | "max:" => unset.into(),
            "over:" | "count:" => "0".into(),
            _ if label.parse::<u64>().is_ok() => "0".into(),
            _ => v.into(),
        });
        let (code, out, run) = import_text(&text);
        assert_eq!(code, Some(0), "{out}");
        let (run, tags) = run.unwrap();
        let cpu1 = &run["threads"][1];
        // Thr-001's own lines: count 50000, min 4, max 1401 (the file's worst latency).
        assert_eq!(cpu1["samples"], 50000);
        assert_eq!(cpu1["min_ns"], 4000);
        assert_eq!(cpu1["max_ns"], 1_401_000);
        assert_eq!(cpu1["irq_latency"]["max_ns"], 44_000);
        assert!(
            tags.contains(&"cpu1".to_string()) && tags.contains(&"cpu1.irq".to_string()),
            "{tags:?}"
        );
        assert!(out.contains("the Usr column has no samples"), "{out}");
    }
}

#[test]
fn a_run_rtla_stopped_is_recorded_as_interrupted() {
    let text = format!("{}rtla timerlat hit stop tracing\n", source());
    let (code, out, run) = import_text(&text);
    assert_eq!(code, Some(0), "{out}");
    let (run, _) = run.unwrap();
    assert_eq!(run["ended"], "interrupted");
    assert!(
        run["end_reason"]
            .as_str()
            .unwrap()
            .contains("hit stop tracing")
    );
    let (_, _, run) = import_text(&source());
    assert_eq!(run.unwrap().0["ended"], "completed");
}

#[test]
fn overflow_in_the_irq_column_is_warned_like_thr() {
    // IRQ-000 (column 0): 2 samples beyond the last row, the max among them at 60 us.
    let text = edit_column(&source(), 0, |label, v| match label {
        "over:" => "2".into(),
        "count:" => "50002".into(),
        "max:" => "60".into(),
        _ => v.into(),
    });
    let (code, out, run) = import_text(&text);
    assert_eq!(code, Some(0), "{out}");
    let (run, _) = run.unwrap();
    assert_eq!(run["threads"][0]["irq_latency"]["samples"], 50002);
    assert_eq!(run["threads"][0]["irq_latency"]["max_ns"], 60_000);
    assert!(
        out.contains("CPU 0 IRQ: 2 samples were beyond the source histogram"),
        "{out}"
    );
}

#[test]
fn no_header_output_is_named_precisely() {
    let text: String = source().lines().skip(4).map(|l| format!("{l}\n")).collect();
    let (code, out, run) = import_text(&text);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("without its column line") && out.contains("--no-header"),
        "{out}"
    );
    assert!(run.is_none());
}

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
    import_with(content, &[])
}

/// [`import_text`] with more options.
fn import_with(content: &str, extra: &[&str]) -> (Option<i32>, String, Imported) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rtla.txt");
    std::fs::write(&file, content).unwrap();
    let out = dir.path().join("run");
    let mut argv = vec![
        "import",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    argv.extend(extra);
    let o = jitterlab(&argv);
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

/// `text` as rtla prints it with `--no-header`: without the `#` header and the column line.
fn without_header(text: &str) -> String {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("Index"))
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn no_header_output_is_refused_with_the_hint_to_name_its_columns() {
    let (code, out, run) = import_text(&without_header(&source()));
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("without its column line")
            && out.contains("--no-header")
            && out.contains("--cpus")
            && out.contains("--columns irq,thr"),
        "{out}"
    );
    assert!(run.is_none());
}

/// Per CPU: samples, min, mean, max and the percentiles, of the latency and of the IRQ.
fn figures(run: &Value) -> Vec<Value> {
    run["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let mut t = t.clone();
            let o = t.as_object_mut().unwrap();
            o.retain(|k, _| {
                k == "cpu" || k == "samples" || k.ends_with("_ns") || k == "irq_latency"
            });
            t
        })
        .collect()
}

/// Issue 30: rtla output saved with `--no-header` (LAVA's rtla jobs) imports when the columns
/// are named, to exactly the figures of the same output with its header: IRQ and Thr
/// (rtla-timerlat-hist.txt), IRQ, Thr and Usr (the -u file), and an osnoise table.
#[test]
fn no_header_output_imports_with_the_columns_named() {
    let osnoise = "# RTLA osnoise histogram\n# Time unit is microseconds (us)\n# Duration:   0 00:00:10\n\
                   Index   CPU-001   CPU-003\n5   4   0\n6   1   2\n9   0   1\n\
                   over:   0   0\ncount:   5   3\nmin:   5   6\navg:   5.20   7.00\nmax:   6   9\n";
    let timerlat = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/import/rtla-timerlat-hist.txt"),
    )
    .unwrap();
    for (with_header, cpus, columns) in [
        (timerlat.as_str(), "0-1", "irq,thr"),
        (&source(), "0-1", "irq,thr,usr"),
        (osnoise, "1,3", "cpu"),
    ] {
        let (code, out, run) = import_text(with_header);
        assert_eq!(code, Some(0), "{out}");
        let (run, tags) = run.unwrap();
        let bare = without_header(with_header);
        let args = ["--cpus", cpus, "--columns", columns];
        let (code, out, imported) = import_with(&bare, &args);
        assert_eq!(code, Some(0), "{columns}: {out}");
        let (imported, imported_tags) = imported.unwrap();
        assert_eq!(figures(&imported), figures(&run), "{columns}");
        assert_eq!(imported_tags, tags, "{columns}");
        assert_eq!(imported["kind"], run["kind"], "{columns}");
        assert!(out.contains("rtla --no-header output"), "{columns}: {out}");
        // In ns (rtla -n), every figure is a thousandth.
        if columns == "cpu" {
            let args = ["--cpus", cpus, "--columns", columns, "--time-unit", "ns"];
            let (code, out, ns) = import_with(&bare, &args);
            assert_eq!(code, Some(0), "{out}");
            let ns = ns.unwrap().0;
            assert_eq!(ns["threads"][1]["max_ns"], 9);
            assert_eq!(run["threads"][1]["max_ns"], 9000);
        }
    }
}

/// A row width other than CPUs x columns, columns out of rtla's order or of no rtla table, and
/// the options on a file that names its own columns are refused (exit 2), naming the numbers.
#[test]
fn no_header_columns_that_do_not_fit_are_refused_naming_the_numbers() {
    let bare = without_header(&source());
    for (args, needle) in [
        (
            &["--cpus", "0-2", "--columns", "irq,thr,usr"][..],
            "holds 6 values where --cpus 0-2 x --columns irq,thr,usr make 9 columns (3 CPUs x 3)",
        ),
        (
            &["--cpus", "0-1", "--columns", "irq,thr"][..],
            "make 4 columns (2 CPUs x 2)",
        ),
        (
            &["--cpus", "0-1", "--columns", "thr,irq"][..],
            "in the order irq,thr,usr",
        ),
        (
            &["--cpus", "0-1", "--columns", "irq,irq,thr"][..],
            "once each",
        ),
        (
            &["--cpus", "0-1", "--columns", "max"][..],
            "irq,thr,usr (rtla-timerlat-hist)",
        ),
        (&["--cpus", "0-x", "--columns", "irq"][..], "--cpus 0-x"),
        (
            &[
                "--cpus",
                "0-1",
                "--columns",
                "irq,thr",
                "--format",
                "cyclictest-hist",
            ][..],
            "cyclictest-hist output is read as it is",
        ),
    ] {
        let (code, out, run) = import_with(&bare, args);
        assert_eq!(code, Some(2), "{args:?}: {out}");
        assert!(out.contains(needle), "{args:?}: '{needle}' not in {out}");
        assert!(run.is_none());
    }
    let (code, out, _) = import_with(&source(), &["--cpus", "0-1", "--columns", "irq,thr,usr"]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("names its own columns"), "{out}");
    let (code, out, _) = import_with(&bare, &["--cpus", "0-1"]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("--columns"), "{out}");
}

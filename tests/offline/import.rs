//! `jitterlab import` of real cyclictest and oslat output captured on this machine and of rtla
//! samples in rtla's documented format: the result directory must hold the same counts, min,
//! max and histogram as the source tool printed. tests/data/import/README.md says how the files
//! were made.

use crate::common;

use common::*;
use hdrhistogram::Histogram;
use jitterlab::format::hlog::read_intervals;
use jitterlab::format::stats::new_histogram;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/import")
        .join(name)
}

fn import(name: &str, extra: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let (base, out) = temp_out();
    let mut argv: Vec<String> = vec![
        "import".into(),
        data(name).to_str().unwrap().into(),
        "--out".into(),
        out.to_str().unwrap().into(),
    ];
    argv.extend(extra.iter().map(|s| s.to_string()));
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let o = jitterlab(&argv);
    assert!(o.status.success(), "{name}: {}", text(&o));
    (base, out)
}

/// Per tag: the histogram of latency.hlog (all intervals of the tag merged).
fn hlog_counts(out: &Path) -> BTreeMap<String, Histogram<u64>> {
    let mut m: BTreeMap<String, Histogram<u64>> = BTreeMap::new();
    for i in read_intervals(&out.join("latency.hlog")).unwrap() {
        m.entry(i.tag.clone())
            .or_insert_with(new_histogram)
            .add(&i.histogram)
            .unwrap();
    }
    m
}

/// The count recorded at `us` (the importer records each source bucket at its value in ns;
/// distinct source buckets fall in distinct HDR buckets in these files).
fn count_at(h: &Histogram<u64>, us: u64) -> u64 {
    h.count_at(us * 1000)
}

fn total(h: &Histogram<u64>) -> u64 {
    h.len()
}

#[test]
fn cyclictest_json_keeps_counts_min_max_and_histogram() {
    let src: Value =
        serde_json::from_str(&std::fs::read_to_string(data("cyclictest.json")).unwrap()).unwrap();
    let (_b, out) = import("cyclictest.json", &[]);
    let run = run_json(&out);
    assert_eq!(run["imported"]["source_format"], "cyclictest-json");
    assert_eq!(run["imported"]["per_interval"], false);
    assert!(
        run["imported"]["absent"]
            .as_array()
            .unwrap()
            .contains(&Value::from("missed_periods"))
    );
    assert_eq!(run["started_utc"], "2026-11-22T13:05:23Z");
    assert_eq!(run["duration_ns"], 5_000_000_000u64);
    let counts = hlog_counts(&out);
    for (_, t) in src["thread"].as_object().unwrap() {
        let cpu = t["cpu"].as_u64().unwrap() as usize;
        let ours = thread(&run, cpu);
        assert_eq!(ours["samples"], t["cycles"]);
        assert_eq!(
            ours["min_ns"].as_f64().unwrap(),
            t["min"].as_f64().unwrap() * 1000.0
        );
        assert_eq!(
            ours["max_ns"].as_f64().unwrap(),
            t["max"].as_f64().unwrap() * 1000.0
        );
        assert!(
            (ours["mean_ns"].as_f64().unwrap() - t["avg"].as_f64().unwrap() * 1000.0).abs() < 1e-6
        );
        assert_eq!(ours["stddev_ns"], Value::Null, "not in the source: absent");
        let c = &counts[&format!("cpu{cpu}")];
        let mut in_range = 0;
        for (us, n) in t["histogram"].as_object().unwrap() {
            let us: u64 = us.parse().unwrap();
            assert_eq!(count_at(c, us), n.as_u64().unwrap(), "cpu{cpu} {us} us");
            in_range += n.as_u64().unwrap();
        }
        let total: u64 = total(c);
        assert_eq!(
            total,
            t["cycles"].as_u64().unwrap(),
            "cpu{cpu}: overflows included"
        );
        let overflow = total - in_range;
        if overflow > 0 {
            // One at the printed max, the rest at the histogram's limit (-h400).
            assert_eq!(count_at(c, t["max"].as_u64().unwrap()), 1);
            assert_eq!(count_at(c, 400), overflow - 1);
        }
    }
}

/// Rows and summary lines of cyclictest -h text, parsed independently of the importer.
fn cyclictest_text(name: &str) -> (Vec<Vec<u64>>, BTreeMap<String, Vec<u64>>) {
    let text = std::fs::read_to_string(data(name)).unwrap();
    let mut rows = Vec::new();
    let mut summary = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# ") {
            if let Some((label, values)) = rest.split_once(':') {
                let v: Option<Vec<u64>> =
                    values.split_whitespace().map(|x| x.parse().ok()).collect();
                if let Some(v) = v.filter(|v| !v.is_empty()) {
                    summary.insert(label.to_string(), v);
                }
            }
        } else if !line.trim().is_empty() {
            rows.push(
                line.split_whitespace()
                    .map(|x| x.parse().unwrap())
                    .collect(),
            );
        }
    }
    (rows, summary)
}

#[test]
fn cyclictest_histogram_text_matches_what_cyclictest_printed() {
    for (name, limit_us) in [
        ("cyclictest-hist.txt", 400),
        ("cyclictest-hist-overflow.txt", 30),
        // -H: every row, '# Total:', '# Max Latencies:' and '# Histogram Overflows:' end with
        // all threads together.
        ("cyclictest-hist-all.txt", 400),
    ] {
        let (rows, summary) = cyclictest_text(name);
        let (_b, out) = import(name, &[]);
        let run = run_json(&out);
        assert_eq!(run["imported"]["source_format"], "cyclictest-hist");
        let counts = hlog_counts(&out);
        for t in 0..2 {
            let ours = thread(&run, t);
            let overflow = summary["Histogram Overflows"][t];
            assert_eq!(
                ours["samples"].as_u64().unwrap(),
                summary["Total"][t] + overflow,
                "{name}"
            );
            assert_eq!(
                ours["min_ns"].as_u64().unwrap(),
                summary["Min Latencies"][t] * 1000,
                "{name}"
            );
            assert_eq!(
                ours["max_ns"].as_u64().unwrap(),
                summary["Max Latencies"][t] * 1000,
                "{name}"
            );
            let c = &counts[&format!("cpu{t}")];
            for row in &rows {
                assert_eq!(
                    count_at(c, row[0]),
                    row[t + 1],
                    "{name} cpu{t} {} us",
                    row[0]
                );
            }
            assert_eq!(total(c), summary["Total"][t] + overflow);
            if overflow > 0 {
                assert_eq!(
                    count_at(c, limit_us),
                    overflow - 1,
                    "{name}: overflows at the limit"
                );
            }
        }
    }
    // The same cyclictest run, through its two outputs, imports to the same histograms.
    let (_b1, json) = import("cyclictest.json", &[]);
    let (_b2, text) = import("cyclictest-hist.txt", &[]);
    let pairs = |h: &Histogram<u64>| -> Vec<(u64, u64)> {
        h.iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect()
    };
    let (json, text) = (hlog_counts(&json), hlog_counts(&text));
    assert_eq!(
        json.keys().collect::<Vec<_>>(),
        text.keys().collect::<Vec<_>>()
    );
    for (tag, h) in &json {
        assert_eq!(pairs(h), pairs(&text[tag]), "{tag}");
    }
}

#[test]
fn oslat_json_keeps_counts_min_max_and_histogram() {
    let src: Value =
        serde_json::from_str(&std::fs::read_to_string(data("oslat.json")).unwrap()).unwrap();
    let (_b, out) = import("oslat.json", &[]);
    let run = run_json(&out);
    let t = &src["thread"]["0"];
    let ours = thread(&run, 1);
    let h = t["histogram"].as_object().unwrap();
    let total: u64 = h.values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(ours["samples"].as_u64().unwrap(), total);
    assert_eq!(
        ours["min_ns"].as_f64().unwrap(),
        t["min"].as_f64().unwrap() * 1000.0
    );
    assert_eq!(
        ours["max_ns"].as_f64().unwrap(),
        t["max"].as_f64().unwrap() * 1000.0
    );
    assert_eq!(run["duration_ns"], 4_997_000_000u64);
    let c = &hlog_counts(&out)["cpu1"];
    for (k, n) in h {
        let k: u64 = k.parse().unwrap();
        let n = n.as_u64().unwrap();
        // The last bucket holds every longer gap: one of them at the printed maximum.
        let expected = if k == 32 { n - 1 } else { n };
        assert_eq!(count_at(c, k), expected, "bucket {k}");
    }
    assert_eq!(count_at(c, t["max"].as_u64().unwrap()), 1);
}

/// One rtla column: its name, rows (us -> count) and summary lines (label -> value).
type RtlaColumn = (String, BTreeMap<u64, u64>, BTreeMap<String, String>);

/// The rtla sample's columns, parsed independently of the importer.
fn rtla_columns(name: &str) -> Vec<RtlaColumn> {
    let text = std::fs::read_to_string(data(name)).unwrap();
    let mut cols: Vec<RtlaColumn> = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.first() {
            Some(&"Index") => {
                cols = f[1..]
                    .iter()
                    .map(|n| (n.to_string(), BTreeMap::new(), BTreeMap::new()))
                    .collect()
            }
            Some(&"ALL:") => break,
            Some(l) if l.ends_with(':') && !cols.is_empty() => {
                for (c, v) in cols.iter_mut().zip(&f[1..]) {
                    c.2.insert(l.trim_end_matches(':').to_string(), v.to_string());
                }
            }
            Some(l) if l.parse::<u64>().is_ok() => {
                for (c, v) in cols.iter_mut().zip(&f[1..]) {
                    let n: u64 = v.parse().unwrap();
                    if n > 0 {
                        c.1.insert(l.parse().unwrap(), n);
                    }
                }
            }
            _ => {}
        }
    }
    cols
}

#[test]
fn rtla_timerlat_columns_go_to_latency_irq_and_thread() {
    for (name, user) in [
        ("rtla-timerlat-hist.txt", false),
        ("rtla-timerlat-hist-user.txt", true),
    ] {
        let (_b, out) = import(name, &[]);
        let run = run_json(&out);
        assert_eq!(run["imported"]["source_format"], "rtla-timerlat-hist");
        assert_eq!(run["duration_ns"], 100_000_000_000u64);
        let counts = hlog_counts(&out);
        for (col, rows, summary) in rtla_columns(name) {
            let (kind, cpu) = col.split_once('-').unwrap();
            let cpu: usize = cpu.parse().unwrap();
            let t = thread(&run, cpu);
            let (figures, tag) = match (kind, user) {
                ("IRQ", _) => (&t["irq_latency"], format!("cpu{cpu}.irq")),
                ("Usr", true) | ("Thr", false) => (t, format!("cpu{cpu}")),
                ("Thr", true) => (&Value::Null, format!("cpu{cpu}.thr")),
                _ => unreachable!(),
            };
            let c = &counts[&tag];
            let over: u64 = summary["over"].parse().unwrap();
            for (us, n) in &rows {
                assert_eq!(count_at(c, *us), *n, "{name} {col} {us} us");
            }
            assert_eq!(
                total(c),
                summary["count"].parse::<u64>().unwrap(),
                "{name} {col}"
            );
            assert_eq!(
                rows.values().sum::<u64>() + over,
                summary["count"].parse::<u64>().unwrap()
            );
            if over > 0 {
                assert_eq!(
                    count_at(c, summary["max"].parse().unwrap()),
                    1,
                    "{name} {col}"
                );
            }
            if !figures.is_null() {
                assert_eq!(
                    figures["samples"].as_u64().unwrap().to_string(),
                    summary["count"]
                );
                assert_eq!(
                    (figures["min_ns"].as_u64().unwrap() / 1000).to_string(),
                    summary["min"]
                );
                assert_eq!(
                    (figures["max_ns"].as_u64().unwrap() / 1000).to_string(),
                    summary["max"]
                );
            }
        }
    }
}

#[test]
fn imported_runs_work_with_compare_and_export() {
    let (_a, a) = import("cyclictest.json", &[]);
    let (_b, b) = import(
        "cyclictest-hist-overflow.txt",
        &["--format", "cyclictest-hist"],
    );
    let o = jitterlab(&[
        "compare",
        "--json",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["runs"][1]["imported_from"], "cyclictest-hist");
    let max = v["scopes"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["statistic"] == "max")
        .unwrap();
    assert_eq!(max["values"][1].as_f64(), Some(14_854_000.0));
    // Budgets fail where the source lacks the figure.
    let o = jitterlab(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--budget",
        "missed=0",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o).contains("not in the imported source"),
        "{}",
        text(&o)
    );
}

#[test]
fn bad_or_unknown_files_exit_2_with_what_was_recognised() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, content: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, content).unwrap();
        p
    };
    let hist = std::fs::read_to_string(data("cyclictest-hist.txt")).unwrap();
    let cut: String = hist.lines().take(100).map(|l| format!("{l}\n")).collect();
    let tampered = hist.replacen("# Total: 000005000", "# Total: 000005001", 1);
    let cases = [
        (
            write("empty.txt", ""),
            "neither JSON nor a histogram",
            vec![],
        ),
        (
            write("other.json", "{\"thread\": {\"0\": {\"x\": 1}}}"),
            "none of the JSON formats read (cyclictest-json (thread.N.cycles)",
            vec![],
        ),
        (
            write("broken.json", "{\"thread\": "),
            "not valid JSON",
            vec![],
        ),
        (
            write("cut.txt", &cut),
            "no '# Max Latencies:'",
            vec!["--format", "cyclictest-hist"],
        ),
        (write("tampered.txt", &tampered), "says 5001", vec![]),
        (
            data("oslat.txt"),
            "read as oslat-json, but",
            vec!["--format", "oslat-json"],
        ),
        (
            data("cyclictest.json"),
            "read as oslat-json, but",
            vec!["--format", "oslat-json"],
        ),
        (dir.path().join("missing.json"), "cannot read", vec![]),
    ];
    for (file, says, extra) in cases {
        let (_base, out) = temp_out();
        let mut argv = vec![
            "import",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ];
        argv.extend(extra);
        let o = jitterlab(&argv);
        assert_eq!(o.status.code(), Some(2), "{}: {}", file.display(), text(&o));
        assert!(text(&o).contains(says), "{}: {}", file.display(), text(&o));
        assert!(!out.exists(), "nothing is written for bad input");
    }
}

/// N12 (issue 39): `import` of a FIFO whose writer holds it open without writing (another
/// user's, planted at the name root imports) waited until it was signalled. It is refused at
/// once, exit 2, naming it; so is a device. The output of a command through the shell's
/// anonymous pipe (`import <(cat FILE)`, `cat FILE | jitterlab import /dev/stdin`) is still
/// read to its end.
#[test]
fn a_named_fifo_or_a_device_is_refused_and_a_pipe_of_the_shell_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("in.json");
    crate::common::mkfifo(&fifo);
    // Held open for writing (O_RDWR opens a FIFO at once), never written.
    let writer = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&fifo)
        .unwrap();
    for (file, what) in [
        (
            fifo.to_str().unwrap(),
            "it is a FIFO (named pipe), not a regular file",
        ),
        ("/dev/zero", "it is a device, not a regular file"),
    ] {
        let (_base, out) = temp_out();
        let child = std::process::Command::new(bin())
            .args(["import", file, "--out", out.to_str().unwrap()])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let (o, took) =
            common::lifecycle::finish_within(child, std::time::Duration::from_secs(20), file);
        assert_eq!(o.status.code(), Some(2), "{file}: {}", text(&o));
        assert!(
            text(&o).contains(&format!("{file}: {what}")),
            "{file}: {}",
            text(&o)
        );
        assert!(
            took < std::time::Duration::from_secs(10),
            "{file}: {took:?}"
        );
        assert!(!out.exists(), "nothing is written for a refused input");
    }
    drop(writer);
    let source = data("cyclictest.json");
    for how in [
        "\"$0\" import <(cat \"$1\") --out \"$2\"",
        "cat \"$1\" | \"$0\" import /dev/stdin --out \"$2\"",
    ] {
        let (_base, out) = temp_out();
        let o = std::process::Command::new("bash")
            .args([
                "-c",
                how,
                bin(),
                source.to_str().unwrap(),
                out.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        assert!(o.status.success(), "{how}: {}", text(&o));
        assert_eq!(
            run_json(&out)["imported"]["source_format"],
            "cyclictest-json",
            "{how}"
        );
    }
}

/// An import's overflows survive an export to cyclictest's JSON and its import (tenth hostile
/// re-run, X2: the export wrote them as samples at the overflows' start under a `-h` past the
/// max, so the re-import lost the bound and `--budget` passed a p99 that is only a lower
/// bound): the written histogram ends at the overflows' start, rt-tests' own form.
#[test]
fn overflows_survive_an_export_to_cyclictest_json_and_its_import() {
    let (_a, a) = import(
        "cyclictest-hist-overflow.txt",
        &["--format", "cyclictest-hist"],
    );
    let base = tempfile::tempdir().unwrap();
    let json = base.path().join("a.json");
    let o = jitterlab(&[
        "export",
        a.to_str().unwrap(),
        "--format",
        "cyclictest-json",
        "-o",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let back = base.path().join("back");
    let o = jitterlab(&[
        "import",
        json.to_str().unwrap(),
        "--out",
        back.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let (first, again) = (run_json(&a), run_json(&back));
    let overflows = &first["imported"]["overflows"];
    assert!(
        overflows.as_array().is_some_and(|o| !o.is_empty()),
        "the source overflowed: {overflows}"
    );
    assert_eq!(&again["imported"]["overflows"], overflows);
    for (t, u) in first["threads"]
        .as_array()
        .unwrap()
        .iter()
        .zip(again["threads"].as_array().unwrap())
    {
        assert_eq!(t["samples"], u["samples"]);
    }
}

/// L9-e and L9-b (ninth hostile re-run): a percentile among an import's overflows is a lower
/// bound. `import`'s own summary line says it with "≥" where the overflows begin (it printed
/// "p99 30.0 us"), and the Prometheus export leaves that quantile out (it exported 30.015 us
/// unmarked); the max, the source's own, stays.
#[test]
fn a_percentile_among_the_overflows_is_said_as_a_bound() {
    let (base, out) = temp_out();
    let o = jitterlab(&[
        "import",
        data("cyclictest-hist-overflow.txt").to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let said = text(&o);
    // 320 of 4995 and 746 of 4982 samples overflowed at 30 us: p99 and p99.9 lie among them.
    for cpu in 0..2 {
        assert!(
            said.contains(&format!("CPU {cpu}: ")) && said.contains("p99 ≥30.0 us, p99.9 ≥30.0 us"),
            "{said}"
        );
    }
    let prom = base.path().join("m.prom");
    let o = jitterlab(&[
        "export",
        out.to_str().unwrap(),
        "--format",
        "prometheus",
        "-o",
        prom.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let metrics = std::fs::read_to_string(&prom).unwrap();
    assert!(
        !metrics.contains("jitterlab_wakeup_latency_quantile_seconds{"),
        "{metrics}"
    );
    assert!(
        metrics.contains("jitterlab_wakeup_latency_max_seconds{cpu=\"0\"} 0.004799"),
        "{metrics}"
    );
}

//! Hostile inputs to the readers (issue 24): result directories whose files contradict each
//! other, import sources that do not add up or are not one document, run.json figures that make
//! no sense, and text with control characters on its way to SVG, HTML and the terminal. Each
//! test is a reproducer of the issue that passed silently (or panicked) before.

use crate::common;

use common::*;
use std::fs;
use std::path::Path;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A 2-CPU synthetic run of 10 s, 1000 samples per CPU per second, at `dir`.
fn known_run(dir: &Path, seed: u64) {
    write_known_run(dir, &[0, 1], 10, 1000, uniform_10_50, seed, 0);
}

/// D03: a latency.hlog concatenated with itself holds twice the samples run.json counts: it is
/// not this run's log, and compare and report refuse it (exit 2) naming the difference.
#[test]
fn a_log_with_more_samples_than_run_json_is_refused() {
    let base = tempfile::tempdir().unwrap();
    let (a, copy) = (base.path().join("a"), base.path().join("copy"));
    known_run(&a, 1);
    known_run(&copy, 2);
    let log = fs::read(a.join("latency.hlog")).unwrap();
    fs::write(copy.join("latency.hlog"), [log.clone(), log].concat()).unwrap();
    for args in [
        vec!["compare", s(&a), s(&copy)],
        vec!["report", s(&copy)],
        vec!["export", s(&copy), "--format", "json"],
    ] {
        let out = jitterlab(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(
            err.contains("holds 20000 samples of CPU 0 where run.json counts 10000 (10000 more)"),
            "{args:?}: {err}"
        );
    }
}

/// D03's residue: a traced run's `cpuN.irq` lines are checked against run.json as its `cpuN`
/// lines are. A run whose log holds CPU 0's timer IRQ latencies once (as many as run.json's
/// `irq_latency.samples`) reads; the same run with those lines duplicated is refused (exit 2)
/// naming the tag and the difference (before: read, every IRQ figure of the log doubled).
#[test]
fn duplicated_irq_lines_are_refused() {
    let base = tempfile::tempdir().unwrap();
    let (traced, doubled) = (base.path().join("traced"), base.path().join("doubled"));
    for (dir, copies) in [(&traced, 1), (&doubled, 2)] {
        let mut record = write_known_run(dir, &[0, 1], 10, 1000, uniform_10_50, 1, 0);
        // CPU 0 traced: its IRQ latencies are its wakeup latencies' histogram again (their
        // values do not matter here, only how many the log holds against run.json).
        record.threads[0].irq_latency = Some(record.threads[0].latency.clone());
        jitterlab::results::ResultDir::open(dir)
            .unwrap()
            .write_run_record(&record)
            .unwrap();
        let log = fs::read_to_string(dir.join("latency.hlog")).unwrap();
        let irq: String = log
            .lines()
            .filter(|l| l.starts_with("Tag=cpu0,"))
            .map(|l| format!("{}\n", l.replacen("Tag=cpu0,", "Tag=cpu0.irq,", 1)))
            .collect();
        assert_eq!(irq.lines().count(), 10, "{log}");
        fs::write(dir.join("latency.hlog"), log + &irq.repeat(copies)).unwrap();
    }
    let out = jitterlab(&["export", s(&traced), "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("warning:"), "{err}");
    for args in [
        vec!["report", s(&doubled)],
        vec!["export", s(&doubled), "--format", "json"],
        vec!["compare", s(&traced), s(&doubled)],
    ] {
        let out = jitterlab(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(
            err.contains(
                "holds 20000 timer IRQ latency samples (cpuN.irq) of CPU 0 where run.json counts 10000 (10000 more)"
            ),
            "{args:?}: {err}"
        );
    }
}

/// A counters.log declaring `names` counters for CPU 0, the declaration written twice, and a
/// data line giving each the value 1.
fn counters_log(names: usize) -> String {
    let list: Vec<String> = (0..names).map(|n| format!("irq:{n}")).collect();
    let declare = format!("#cpu 0 {}\n", list.join(" "));
    let values: Vec<String> = list.iter().map(|n| format!("{n}=1")).collect();
    format!(
        "#jitterlab-counters 1\n#interval_ns 1000000000\n{declare}{declare}0 0 0 1000000000 {}\n",
        values.join(" ")
    )
}

/// R10: a counters.log re-declaring the most counters jitterlab reads for a CPU exports in
/// time linear in its size (before: 80 000 re-declared names took 41 s, each searched for in
/// the list); one declaring 80 000 is refused (exit 2) naming the cap, not read for minutes.
#[test]
fn a_redeclared_counters_log_exports_in_linear_time_and_too_many_are_refused() {
    let base = tempfile::tempdir().unwrap();
    let run = base.path().join("run");
    known_run(&run, 1);
    let most = jitterlab::format::counters::MAX_NAMES_PER_CPU;
    fs::write(run.join("counters.log"), counters_log(most)).unwrap();
    let csv = base.path().join("counters.csv");
    let t = std::time::Instant::now();
    let out = jitterlab(&["export", s(&run), "--format", "counters", "-o", s(&csv)]);
    let took = t.elapsed();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let rows = fs::read_to_string(&csv).unwrap();
    assert_eq!(rows.lines().count(), most + 1);
    assert!(rows.contains("\n0,0,irq:16383,1\n"), "{}", &rows[..200]);
    assert!(took < std::time::Duration::from_secs(10), "{took:?}");

    fs::write(run.join("counters.log"), counters_log(80_000)).unwrap();
    let out = jitterlab(&["export", s(&run), "--format", "counters"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains(&format!(
            "line 3: more than {most} counters are declared for CPU 0"
        )),
        "{}",
        text(&out)
    );
}

/// N23 (fifth hostile re-run): the cap on names counted names, not bytes: 40 names of 100 KB a
/// line cost 5 times the file in memory (400 MB read in 1.97 GB). A name longer than the
/// longest jitterlab reads, or names whose bytes pass the cap in all, are refused (exit 2)
/// naming the cap; a name of the longest length is read.
#[test]
fn counter_names_are_bounded_by_their_bytes() {
    use jitterlab::format::counters::{MAX_NAME_BYTES, MAX_NAMES_BYTES};
    let base = tempfile::tempdir().unwrap();
    let run = base.path().join("run");
    known_run(&run, 1);
    let header = "#jitterlab-counters 1\n#interval_ns 1000000000\n";
    let name = |n: usize, len: usize| format!("irq:{n:0>width$}", width = len - 4);
    let export = || {
        jitterlab(&[
            "export",
            s(&run),
            "--format",
            "counters",
            "-o",
            s(&base.path().join(format!("c{}.csv", rand_suffix()))),
        ])
    };
    let longest = name(0, MAX_NAME_BYTES);
    fs::write(
        run.join("counters.log"),
        format!("{header}#cpu 0 {longest}\n0 0 0 1000000000 {longest}=1\n"),
    )
    .unwrap();
    let out = export();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));

    let long = name(0, MAX_NAME_BYTES + 1);
    fs::write(
        run.join("counters.log"),
        format!("{header}#cpu 0 {long}\n0 0 0 1000000000 {long}=1\n"),
    )
    .unwrap();
    let out = export();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let want = format!(
        "line 3: a counter name of {} bytes for CPU 0, longer than {MAX_NAME_BYTES} bytes",
        MAX_NAME_BYTES + 1
    );
    assert!(text(&out).contains(&want), "{}", text(&out));

    // Names of the longest length, 8 192 a CPU (each line 2 MiB, under the line cap), on as
    // many CPUs as it takes to pass the cap on their bytes.
    let per_cpu = 8192;
    let cpus = MAX_NAMES_BYTES / (per_cpu * MAX_NAME_BYTES) + 1;
    let mut log = header.to_string();
    for cpu in 0..cpus {
        let names: Vec<String> = (0..per_cpu).map(|n| name(n, MAX_NAME_BYTES)).collect();
        log += &format!("#cpu {cpu} {}\n", names.join(" "));
    }
    fs::write(run.join("counters.log"), log).unwrap();
    let out = export();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let want = format!(
        "line {}: the counter names declared in all take more than {} MiB",
        cpus + 2,
        MAX_NAMES_BYTES >> 20
    );
    assert!(text(&out).contains(&want), "{}", text(&out));
}

/// A suffix that makes each export's file new (the export never overwrites).
fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// D03: a log cut short (half its lines gone) and a deleted log are read with a warning that
/// names what is missing, on stderr and in compare's output, not silently.
#[test]
fn a_short_or_missing_log_is_warned_about_by_name() {
    let base = tempfile::tempdir().unwrap();
    let (a, short, gone) = (
        base.path().join("a"),
        base.path().join("short"),
        base.path().join("gone"),
    );
    known_run(&a, 1);
    known_run(&short, 2);
    known_run(&gone, 3);
    let log = fs::read_to_string(short.join("latency.hlog")).unwrap();
    // The header lines and the first 5 intervals of each CPU (cpu0 and cpu1 alternate).
    let mut intervals = 0;
    let mut cut = String::new();
    for line in log.lines() {
        let header = line.starts_with('#') || line.starts_with("\"StartTimestamp");
        if !header {
            intervals += 1;
        }
        if header || intervals <= 10 {
            cut.push_str(line);
            cut.push('\n');
        }
    }
    fs::write(short.join("latency.hlog"), cut).unwrap();
    let out = jitterlab(&["compare", s(&a), s(&short)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let all = text(&out);
    let missing = "holds 5000 samples of CPU 0 where run.json counts 10000 (5000 missing";
    assert!(all.contains(missing), "{all}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("warning:") && stdout.contains(missing),
        "{stdout}"
    );

    fs::remove_file(gone.join("latency.hlog")).unwrap();
    let html = base.path().join("gone.html");
    for args in [
        vec!["compare", s(&a), s(&gone)],
        vec!["report", s(&gone), "-o", s(&html)],
    ] {
        let out = jitterlab(&args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("latency.hlog is missing") && err.contains("lost are its intervals"),
            "{args:?}: {err}"
        );
    }
}

fn data(name: &str) -> String {
    fs::read_to_string(format!(
        "{}/tests/data/import/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// Imports `text` written to a file named `name`; returns the exit code and the output.
fn import(base: &Path, name: &str, text: &str) -> (Option<i32>, String) {
    let src = base.join(name);
    fs::write(&src, text).unwrap();
    let out = base.join(format!("imported-{}", name.len()));
    let o = jitterlab(&["import", s(&src), "--out", s(&out)]);
    (o.status.code(), text_of(&o))
}

fn text_of(o: &std::process::Output) -> String {
    text(o)
}

/// D04: a cyclictest histogram with one `# Thread k:` overflow line deleted (`sed 39d`) used
/// to import as 1 CPU, dropping the other's 4,982 samples in silence; it is refused, naming the
/// lines that disagree.
#[test]
fn a_histogram_whose_threads_do_not_add_up_is_refused() {
    let base = tempfile::tempdir().unwrap();
    let whole = data("cyclictest-hist-overflow.txt");
    let (code, out) = import(base.path(), "whole.txt", &whole);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("2 CPUs"), "{out}");
    let lines: Vec<&str> = whole.lines().collect();
    assert!(
        lines[38].starts_with("# Thread 0:"),
        "line 39 is the Thread 0 line"
    );
    for (what, drop) in [("Thread 0", 38), ("Max Latencies", 35)] {
        let cut: Vec<&str> = lines
            .iter()
            .enumerate()
            .filter(|&(k, _)| k != drop)
            .map(|(_, l)| *l)
            .collect();
        let (code, out) = import(base.path(), &format!("cut-{drop}.txt"), &cut.join("\n"));
        assert_eq!(code, Some(2), "without the {what} line: {out}");
        assert!(!out.contains("Imported"), "{out}");
    }
    // `sed 39d`: the reason names the lines that disagree.
    let cut: Vec<&str> = lines
        .iter()
        .enumerate()
        .filter(|&(k, _)| k != 38)
        .map(|(_, l)| *l)
        .collect();
    let (_, out) = import(base.path(), "sed-39d.txt", &cut.join("\n"));
    assert!(
        out.contains("'# Thread k:' overflow lines has 1 values (or lines) for 2 threads: the threads do not add up"),
        "{out}"
    );
    // A summary line with a value missing is refused too.
    let short_min = whole.replace("# Min Latencies: 00009 00010", "# Min Latencies: 00009");
    let (code, out) = import(base.path(), "short-min.txt", &short_min);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("'# Min Latencies:' has 1 values"), "{out}");
    // -H: the all-threads value ending '# Max Latencies:' must be the threads' largest.
    let all = data("cyclictest-hist-all.txt");
    assert_eq!(import(base.path(), "all.txt", &all).0, Some(0));
    let edited = all.replace(
        "# Max Latencies: 14364 12403 14364",
        "# Max Latencies: 14364 12403 15000",
    );
    assert_ne!(edited, all);
    let (code, out) = import(base.path(), "all-edited.txt", &edited);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains(
            "'# Max Latencies:' ends with 15000 for all threads, but its threads' values make 14364"
        ),
        "{out}"
    );
}

/// D19: two JSON documents in one file, a key given twice, an unknown file_version, a thread
/// number beyond the CPUs the file says are online: each refused (exit 2) with its reason.
#[test]
fn json_sources_that_are_not_one_consistent_document_are_refused() {
    let base = tempfile::tempdir().unwrap();
    let cyclictest = data("cyclictest.json");
    let jd = data("jitterdebugger-results.json");
    assert_eq!(import(base.path(), "ok.json", &cyclictest).0, Some(0));
    let cases = [
        (
            "twice.json",
            format!("{cyclictest}{cyclictest}"),
            "trailing data",
        ),
        (
            "dup.json",
            cyclictest.replacen(
                "\"num_threads\": 2,",
                "\"num_threads\": 2,\n  \"num_threads\": 3,",
                1,
            ),
            "duplicate key \"num_threads\"",
        ),
        (
            "v999.json",
            cyclictest.replacen("\"file_version\": 1", "\"file_version\": 999", 1),
            "file_version 999",
        ),
        (
            "jd.json",
            jd.replacen("\"0\": {", "\"4294967296\": {", 1),
            "thread 4294967296 is out of range: its sysinfo says cpus_online 3",
        ),
    ];
    for (name, text, want) in cases {
        let (code, out) = import(base.path(), name, &text);
        assert_eq!(code, Some(2), "{name}: {out}");
        assert!(out.contains(want), "{name}: {out}");
    }
    // A prompt after the document is still pasted text, not a second document.
    let (code, out) = import(base.path(), "prompt.json", &format!("{cyclictest}\n$ \n"));
    assert_eq!(code, Some(0), "{out}");
}

/// D19: a file name with a newline (or another control character) is printed escaped, never
/// as a raw line break that would forge a line of the output.
#[test]
fn file_names_with_control_characters_are_printed_escaped() {
    let base = tempfile::tempdir().unwrap();
    let name = "evil\nResults: etc\u{7}.json";
    let (code, out) = import(base.path(), name, &data("cyclictest.json"));
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("evil\\nResults: etc\\u{7}.json"), "{out}");
    assert!(!out.contains("evil\n"), "{out}");
    assert_eq!(
        out.lines().filter(|l| l.starts_with("Results:")).count(),
        1,
        "{out}"
    );
    let (code, out) = import(base.path(), "bad\nname.txt", "not a format");
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("bad\\nname.txt"), "{out}");
}

const EXPORT_FORMATS: [&str; 9] = [
    "csv",
    "columns",
    "gnuplot",
    "json",
    "junit",
    "lava",
    "cyclictest-json",
    "openmetrics",
    "summaries",
];

/// D05: run.json figures that cannot be a run's (a min above the max, a null max with samples)
/// are refused by the reader (exit 2, naming the field); and no value of any thread field
/// (null, negative, huge, of the wrong type, swapped) makes any export format panic.
#[test]
fn bad_run_json_figures_are_refused_and_never_panic_an_export() {
    let base = tempfile::tempdir().unwrap();
    let run = base.path().join("run");
    write_known_run(&run, &[0, 1], 3, 100, uniform_10_50, 7, 0);
    let original: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    let rewrite = |edit: &dyn Fn(&mut serde_json::Map<String, serde_json::Value>)| {
        let mut v = original.clone();
        edit(v["threads"][1].as_object_mut().unwrap());
        fs::write(run.join("run.json"), serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    };
    // Run in the temporary directory: gnuplot without -o writes ./run-histogram.dat and .gp.
    let export = |format: &str| {
        let o = std::process::Command::new(bin())
            .args(["export", s(&run), "--format", format])
            .current_dir(base.path())
            .output()
            .unwrap();
        (o.status.code(), text(&o))
    };

    // The reproducers: named, exit 2, for every format.
    let swapped = |t: &mut serde_json::Map<String, serde_json::Value>| {
        let max = t["max_ns"].clone();
        t.insert("max_ns".into(), t["min_ns"].clone());
        t.insert("min_ns".into(), max);
    };
    let null_max = |t: &mut serde_json::Map<String, serde_json::Value>| {
        t.insert("max_ns".into(), serde_json::Value::Null);
    };
    type Edit<'a> = &'a dyn Fn(&mut serde_json::Map<String, serde_json::Value>);
    let edits: [(Edit, &str); 2] = [
        (&swapped, "threads[1] (CPU 1): min_ns"),
        (&null_max, "threads[1] (CPU 1): max_ns is missing"),
    ];
    for (edit, want) in edits {
        rewrite(edit);
        for format in EXPORT_FORMATS {
            let (code, out) = export(format);
            assert_eq!(code, Some(2), "{format}: {out}");
            // The formats that read samples.bin refuse this run for want of it first.
            assert!(
                out.contains(want) || out.contains("has no sample log"),
                "{format}: {out}"
            );
        }
    }

    // Every thread field spoiled every way: exit 0 (harmless) or 2 (refused), never a panic.
    let fields: Vec<String> = original["threads"][1]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    let values = [
        serde_json::Value::Null,
        serde_json::json!(-1),
        serde_json::json!(i64::MAX),
        serde_json::json!(u64::MAX),
        serde_json::json!(1e300),
        serde_json::json!("x"),
    ];
    for field in &fields {
        for value in &values {
            rewrite(&|t| {
                t.insert(field.clone(), value.clone());
            });
            for format in EXPORT_FORMATS {
                let (code, out) = export(format);
                assert!(
                    matches!(code, Some(0) | Some(2)),
                    "{field} = {value}, --format {format}: exit {code:?}: {out}"
                );
            }
        }
    }
}

/// D13: a control character in a scenario label (and in a warning) made the timeline SVG
/// invalid XML (`report --plots` exit 4) and reached the HTML raw. Every SVG written parses
/// as XML, and neither holds a control character XML cannot.
#[test]
fn control_characters_from_run_json_never_reach_svg_or_html_raw() {
    use jitterlab::results::synthetic::{SyntheticPhase, SyntheticRun, write_run};
    let base = tempfile::tempdir().unwrap();
    let run = base.path().join("run");
    let spec = SyntheticRun {
        cpus: vec![0, 1],
        interval_ns: 10_000_000,
        log_interval_ns: 1_000_000_000,
        duration_ns: 6_000_000_000,
        phases: vec![
            SyntheticPhase::seconds("idle\u{7}", 0, 3),
            SyntheticPhase::seconds("load\u{1b}[31m\u{0}\u{85}", 3, 6),
        ],
        loads: vec![],
        warnings: vec!["a warning with a bell\u{7} and an escape\u{1b}".into()],
        seed: 11,
    };
    write_run(&run, &spec, |_, _, rng| {
        10_000 + (rng.uniform() * 5_000.0) as i64
    })
    .unwrap();
    let plots = base.path().join("plots");
    let html = base.path().join("report.html");
    let o = jitterlab(&["report", s(&run), "-o", s(&html), "--plots", s(&plots)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let xml_forbidden = |c: char| c.is_control() && !matches!(c, '\t' | '\n' | '\r');
    let mut svgs = 0;
    for entry in fs::read_dir(&plots).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "svg") {
            let svg = fs::read_to_string(&path).unwrap();
            roxmltree::Document::parse(&svg)
                .unwrap_or_else(|e| panic!("{} is not XML: {e}", path.display()));
            assert!(!svg.contains(xml_forbidden), "{}", path.display());
            svgs += 1;
        }
    }
    assert!(svgs > 0, "plots were written");
    let page = fs::read_to_string(&html).unwrap();
    assert!(
        !page.contains(xml_forbidden),
        "the HTML holds a raw control character"
    );
    assert!(
        page.contains("idle\u{FFFD}"),
        "the label is shown, its bell replaced"
    );
}

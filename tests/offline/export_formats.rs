//! `jitterlab export --format junit|lava|cyclictest-json|openmetrics` on a synthetic run with
//! known numbers, each output checked against those numbers and against the consumer's own
//! checker where one is installable (xmllint with the JUnit schema, promtool, jitterlab import).

use crate::common;

use common::*;
use jitterlab::results::synthetic::{SyntheticRun, write_run};
use std::path::{Path, PathBuf};
use std::process::Command;

const MS: u64 = 1_000_000;

/// Two CPUs woken every 1 ms for 2 s (2000 wakeups each). CPU 0: 3 us, except 1.5 ms at 0,
/// 0.5, 1.0 and 1.5 s (4 late wakeups, 4 missed periods); CPU 1: 12 us, except 40 us at 1 s.
fn known_run(base: &Path) -> PathBuf {
    let dir = base.join("run");
    let run = SyntheticRun {
        cpus: vec![0, 1],
        interval_ns: MS,
        log_interval_ns: 1000 * MS,
        duration_ns: 2000 * MS,
        phases: vec![],
        loads: vec![],
        warnings: vec![],
        seed: 1,
    };
    write_run(&dir, &run, |cpu, due, _| match cpu {
        0 if due % (500 * MS) == 0 => 1_500_000,
        0 => 3_000,
        _ if due == 1000 * MS => 40_000,
        _ => 12_000,
    })
    .unwrap();
    dir
}

const BUDGET: &str = "max<100us,missed=0,cpu1:p99<20us";

fn export(dir: &Path, format: &str, extra: &[&str]) -> String {
    let mut args = vec!["export", dir.to_str().unwrap(), "--format", format];
    args.extend_from_slice(extra);
    let o = jitterlab(&args);
    assert!(o.status.success(), "{}", text(&o));
    String::from_utf8(o.stdout).unwrap()
}

/// Replaces run.json's host name (the synthetic run's is plain) with one that needs escaping.
fn hostile_host_name(dir: &Path) {
    let result_dir = jitterlab::results::ResultDir::open(dir).unwrap();
    let mut record = result_dir.read_run_record().unwrap();
    record.system = serde_json::json!({ "hostname": "a<b&\"c'\\d\n\u{1b}[31m" });
    result_dir.write_run_record(&record).unwrap();
}

/// The attribute `name` of the first element that has one, in `xml`.
fn attribute<'a>(xml: &'a str, element: &str, name: &str) -> &'a str {
    let start = xml.find(&format!("<{element} ")).unwrap();
    let rest = &xml[start..];
    let at = rest.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
    &rest[at..at + rest[at..].find('"').unwrap()]
}

fn xmllint_validates(xml: &str) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("junit.xml");
    std::fs::write(&file, xml).unwrap();
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/export/junit-10.xsd");
    match Command::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(&schema)
        .arg(&file)
        .output()
    {
        Err(_) => {
            eprintln!("SKIPPED the schema check: xmllint is not installed (Debian: libxml2-utils)")
        }
        Ok(o) => assert!(
            o.status.success(),
            "not valid JUnit XML: {}\n{xml}",
            text(&o)
        ),
    }
}

#[test]
fn junit_has_a_case_per_clause_and_cpu_and_is_valid() {
    let base = tempfile::tempdir().unwrap();
    let dir = known_run(base.path());
    hostile_host_name(&dir);
    let xml = export(&dir, "junit", &["--budget", BUDGET]);
    xmllint_validates(&xml);
    // max<100us and missed=0 on both CPUs, cpu1:p99<20us on CPU 1: 5 cases, CPU 0 fails two.
    assert_eq!(attribute(&xml, "testsuite", "tests"), "5", "{xml}");
    assert_eq!(attribute(&xml, "testsuite", "failures"), "2", "{xml}");
    assert_eq!(attribute(&xml, "testsuite", "time"), "2.000", "{xml}");
    assert_eq!(xml.matches("<testcase ").count(), 5);
    assert_eq!(xml.matches("<failure ").count(), 2);
    for failing in ["cpu0: max&lt;100us", "cpu0: missed=0"] {
        let case = &xml[xml.find(&format!("name=\"{failing}\"")).unwrap()..];
        let case = &case[..case.find("</testcase>").unwrap()];
        assert!(case.contains("<failure "), "{failing} fails: {case}");
    }
    assert!(
        xml.contains("message=\"cpu0: max 1.50 ms, limit &lt; 100.0 us\""),
        "{xml}"
    );
    assert!(
        xml.contains("message=\"cpu0: missed 4, limit = 0\""),
        "{xml}"
    );
    assert!(
        xml.contains("cpu1: max 40.0 us, limit &lt; 100.0 us"),
        "{xml}"
    );
    assert!(xml.contains("name=\"cpu1: cpu1:p99&lt;20us\""), "{xml}");
    assert!(!xml.contains('\u{1b}'), "no raw control character");
    assert!(
        xml.contains("hostname=\"a&lt;b&amp;&quot;c&#39;\\d\n\u{FFFD}[31m\""),
        "{xml}"
    );
}

#[test]
fn junit_without_a_budget_checks_that_each_cpu_completed_whole() {
    let base = tempfile::tempdir().unwrap();
    let dir = known_run(base.path());
    let xml = export(&dir, "junit", &[]);
    xmllint_validates(&xml);
    assert_eq!(attribute(&xml, "testsuite", "tests"), "2", "{xml}");
    assert_eq!(attribute(&xml, "testsuite", "failures"), "1", "{xml}");
    assert!(xml.contains("message=\"cpu0: 4 missed periods\""), "{xml}");
    assert!(
        xml.contains("cpu1: 2000 samples, 0 missed periods, 0 dropped records"),
        "{xml}"
    );
}

#[test]
fn lava_lines_carry_measurements_and_the_budget_verdict() {
    let base = tempfile::tempdir().unwrap();
    let dir = known_run(base.path());
    let out = export(&dir, "lava", &["--budget", BUDGET]);
    let run = run_json(&dir);
    let p99_us = |cpu| thread(&run, cpu)["p99_ns"].as_u64().unwrap() as f64 / 1e3;
    let lines: Vec<&str> = out.lines().collect();
    for want in [
        "cpu0-min-latency skip 3.000 us".to_string(),
        "cpu0-mean-latency skip 5.994 us".to_string(),
        "cpu0-max-latency fail 1500.000 us".to_string(),
        "cpu0-missed fail 4 periods".to_string(),
        "cpu0-dropped skip 0 records".to_string(),
        "cpu0-deadline_misses skip 4 wakeups".to_string(),
        format!("cpu0-p99-latency skip {:.3} us", p99_us(0)),
        "cpu1-max-latency pass 40.000 us".to_string(),
        "cpu1-missed pass 0 periods".to_string(),
        format!("cpu1-p99-latency pass {:.3} us", p99_us(1)),
        "budget-cpu0-max-lt-100us fail 1500.000 us".to_string(),
        "budget-cpu1-max-lt-100us pass 40.000 us".to_string(),
        "budget-cpu0-missed-eq-0 fail 4 periods".to_string(),
        format!("budget-cpu1-cpu1-p99-lt-20us pass {:.3} us", p99_us(1)),
        "budget fail".to_string(),
    ] {
        assert!(lines.contains(&want.as_str()), "missing '{want}' in\n{out}");
    }
    // 11 figures per CPU, 5 clause cases, the overall verdict.
    assert_eq!(lines.len(), 2 * 11 + 5 + 1, "{out}");
    for l in &lines {
        let name = l.split(' ').next().unwrap();
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)),
            "{l}"
        );
    }
    // Without a budget nothing is judged: no pass, no fail.
    let out = export(&dir, "lava", &[]);
    assert!(
        out.lines().all(|l| l.split(' ').nth(1) == Some("skip")),
        "{out}"
    );
}

/// Issue 23, defect 4: an `under()` clause's LAVA line carries the share within in %, as
/// JUnit does, not the share rounded into a count of "wakeups" (`fail 99 wakeups`).
#[test]
fn lava_under_lines_carry_the_share_in_percent() {
    let base = tempfile::tempdir().unwrap();
    let dir = known_run(base.path());
    // 1988 of 2000 wakeups within 100 us on CPU 0: 99.4 % (the synthetic writer counts no
    // shares, so run.json is given the recorder's counts).
    let result_dir = jitterlab::results::ResultDir::open(&dir).unwrap();
    let mut record = result_dir.read_run_record().unwrap();
    record.threads[0].tails.within = vec![jitterlab::format::tails::WithinRecord {
        threshold_ns: 100_000,
        within: 1988,
        above: 12,
        undecided: 0,
    }];
    result_dir.write_run_record(&record).unwrap();
    let budget = "cpu0:under(100us)>=99.99%";
    let lava = export(&dir, "lava", &["--budget", budget]);
    let line = lava
        .lines()
        .find(|l| l.starts_with("budget-cpu0-cpu0-under"))
        .unwrap_or_else(|| panic!("no under() line in\n{lava}"));
    assert_eq!(
        line,
        "budget-cpu0-cpu0-under_100us_-ge-99.99_ fail 99.4000 %"
    );
    let junit = export(&dir, "junit", &["--budget", budget]);
    assert!(junit.contains("99.400 %"), "{junit}");
}

/// The value of the sample `series` (name and labels as written) in a text exposition.
fn sample(text: &str, series: &str) -> f64 {
    let line = text
        .lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .unwrap_or_else(|| panic!("no {series} in\n{text}"));
    line[series.len() + 1..].parse().unwrap()
}

/// `--format prometheus` (text 0.0.4) holds the known numbers and passes promtool; so does
/// `--format openmetrics` (its samples are the same), which is OpenMetrics text 1.0.0 (issue
/// 39 L5: it was 0.0.4 under OpenMetrics' name, without `# EOF`).
#[test]
fn prometheus_and_openmetrics_hold_the_known_numbers() {
    let base = tempfile::tempdir().unwrap();
    let dir = known_run(base.path());
    hostile_host_name(&dir);
    let prometheus = export(&dir, "prometheus", &["--budget", BUDGET]);
    let openmetrics = export(&dir, "openmetrics", &["--budget", BUDGET]);
    if let Err(e) = common::openmetrics::check(&openmetrics) {
        panic!("not OpenMetrics 1.0.0: {e}\n{openmetrics}");
    }
    assert!(openmetrics.ends_with("\n# EOF\n"), "{openmetrics}");
    for line in [
        "# TYPE jitterlab_samples counter\n",
        "# TYPE jitterlab_wakeup_latency_quantile_seconds unknown\n",
        "# UNIT jitterlab_wakeup_latency_seconds seconds\n",
        "# UNIT jitterlab_wakeup_latency_max_seconds seconds\n",
    ] {
        assert!(openmetrics.contains(line), "no {line:?} in {openmetrics}");
    }
    // The checker tells the two apart: 0.0.4 is not OpenMetrics.
    assert!(common::openmetrics::check(&prometheus).is_err());
    let samples = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| !l.starts_with('#'))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(samples(&prometheus), samples(&openmetrics));
    let out = prometheus;
    let h = "jitterlab_wakeup_latency_seconds";
    for (cpu, le, count) in [
        (0, "2e-6", 0.0),
        (0, "0.000005", 1996.0),
        (0, "0.001", 1996.0),
        (0, "0.002", 2000.0),
        (0, "+Inf", 2000.0),
        (1, "0.00001", 0.0),
        (1, "0.00002", 1999.0),
        (1, "0.00005", 2000.0),
    ] {
        let le = if le == "2e-6" { "0.000002" } else { le };
        assert_eq!(
            sample(&out, &format!("{h}_bucket{{cpu=\"{cpu}\",le=\"{le}\"}}")),
            count,
            "cpu {cpu} le {le}"
        );
    }
    assert_eq!(sample(&out, &format!("{h}_count{{cpu=\"0\"}}")), 2000.0);
    let sum0 = sample(&out, &format!("{h}_sum{{cpu=\"0\"}}"));
    assert!(
        (sum0 - (1996.0 * 3e-6 + 4.0 * 1.5e-3)).abs() < 1e-12,
        "{sum0}"
    );
    assert_eq!(
        sample(&out, "jitterlab_wakeup_latency_max_seconds{cpu=\"0\"}"),
        0.0015
    );
    assert_eq!(
        sample(&out, "jitterlab_wakeup_latency_max_seconds{cpu=\"1\"}"),
        0.00004
    );
    let run = run_json(&dir);
    for (q, field) in [
        ("0.99", "p99_ns"),
        ("0.999", "p999_ns"),
        ("0.9999", "p9999_ns"),
    ] {
        let want = thread(&run, 0)[field].as_u64().unwrap() as f64 / 1e9;
        let got = sample(
            &out,
            &format!("jitterlab_wakeup_latency_quantile_seconds{{cpu=\"0\",quantile=\"{q}\"}}"),
        );
        assert_eq!(got, want, "quantile {q}");
    }
    assert_eq!(sample(&out, "jitterlab_samples_total{cpu=\"1\"}"), 2000.0);
    assert_eq!(
        sample(&out, "jitterlab_missed_periods_total{cpu=\"0\"}"),
        4.0
    );
    assert_eq!(
        sample(&out, "jitterlab_deadline_misses_total{cpu=\"0\"}"),
        4.0
    );
    assert_eq!(
        sample(&out, "jitterlab_dropped_records_total{cpu=\"1\"}"),
        0.0
    );
    assert_eq!(
        sample(&out, "jitterlab_budget_ok{clause=\"max<100us\"}"),
        0.0
    );
    assert_eq!(
        sample(&out, "jitterlab_budget_ok{clause=\"cpu1:p99<20us\"}"),
        1.0
    );
    assert!(
        out.contains("host=\"a<b&\\\"c'\\\\d\\n\u{FFFD}[31m\"} 1"),
        "escaped host label: {out}"
    );
    match Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
    {
        Err(_) => eprintln!("SKIPPED promtool: not installed (Debian: prometheus)"),
        Ok(mut child) => {
            use std::io::Write;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(out.as_bytes())
                .unwrap();
            let o = child.wait_with_output().unwrap();
            assert!(o.status.success(), "promtool: {}\n{out}", text(&o));
        }
    }
}

#[test]
fn cyclictest_json_has_the_layout_and_imports_back_to_the_same_numbers() {
    let base = tempfile::tempdir().unwrap();
    let dir = known_run(base.path());
    let file = base.path().join("cyclictest.json");
    export(&dir, "cyclictest-json", &["-o", file.to_str().unwrap()]);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(v["file_version"], 1);
    assert_eq!(v["num_threads"], 2);
    assert_eq!(v["resolution_in_ns"], 0);
    assert_eq!(v["return_code"], 0);
    assert_eq!(v["start_time"], "Fri, 15 Jan 2027 08:00:00 +0000");
    assert_eq!(v["end_time"], "Fri, 15 Jan 2027 08:00:02 +0000");
    assert_eq!(v["sysinfo"]["nodename"], "synthetic");
    let cmdline = v["cmdline:"].as_str().unwrap();
    assert!(
        cmdline.starts_with("cyclictest -m --policy=fifo -p95 -i1000 -t2 -a0,1 -h1501"),
        "{cmdline}"
    );
    let t0 = &v["thread"]["0"];
    assert_eq!(t0["cycles"], 2000);
    assert_eq!(t0["min"], 3);
    assert_eq!(t0["max"], 1500);
    assert_eq!(t0["avg"], 5.99);
    assert_eq!(t0["cpu"], 0);
    assert_eq!(t0["histogram"]["3"], 1996);
    // 1.5 ms is in an HDR bucket 1.02 us wide starting at 1499.136 us: within 0.1%.
    assert_eq!(t0["histogram"]["1499"], 4);
    let t1 = &v["thread"]["1"];
    assert_eq!(
        (t1["min"].as_i64(), t1["max"].as_i64()),
        (Some(12), Some(40))
    );
    assert_eq!(t1["avg"], 12.01);
    assert_eq!(t1["histogram"]["12"], 1999);
    assert_eq!(t1["histogram"]["40"], 1);

    let back = base.path().join("back");
    let o = jitterlab(&[
        "import",
        file.to_str().unwrap(),
        "--out",
        back.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let (original, imported) = (run_json(&dir), run_json(&back));
    for cpu in [0, 1] {
        let (a, b) = (thread(&original, cpu), thread(&imported, cpu));
        assert_eq!(a["samples"], b["samples"], "cpu {cpu}");
        for field in ["min_ns", "max_ns"] {
            // Whole microseconds, as cyclictest prints them: these are exact ones.
            assert_eq!(a[field], b[field], "cpu {cpu} {field}");
        }
        let mean = |t: &serde_json::Value| t["mean_ns"].as_f64().unwrap();
        assert!(
            (mean(a) - mean(b)).abs() <= 5.0,
            "cpu {cpu} mean to 0.01 us"
        );
        for field in ["p50_ns", "p99_ns", "p9999_ns"] {
            let (x, y) = (a[field].as_f64().unwrap(), b[field].as_f64().unwrap());
            // The 1 us buckets: within 1 us or 0.1%, whichever is larger.
            assert!(
                (x - y).abs() <= (1000.0f64).max(x * 1e-3),
                "cpu {cpu} {field}: {x} vs {y}"
            );
        }
    }
}

#[test]
fn budget_option_is_checked_and_only_for_summaries() {
    let base = tempfile::tempdir().unwrap();
    let dir = known_run(base.path());
    let d = dir.to_str().unwrap();
    let o = jitterlab(&["export", d, "--format", "junit", "--budget", "max<<3us"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--budget: clause 1"), "{}", text(&o));
    let o = jitterlab(&["export", d, "--format", "csv", "--budget", "max<3us"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("--budget judges a run's summary"),
        "{}",
        text(&o)
    );
}

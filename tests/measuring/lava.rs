//! Issue 30: a CI system's parser reads `jitterlab cyclictest` and `jitterlab oslat` output
//! unchanged and gets the result directory's figures. The parser is LAVA's: Linaro's
//! test-definitions run cyclictest (automated/linux/cyclictest/cyclictest.sh) as
//! `cyclictest -q -p P -i I -t T -a A -D D [-h N] -m --json=FILE` (`-t $(nproc) -a all` for its
//! "every CPU" setting), feed the JSON to automated/lib/parse_rt_tests_results.py and hand its
//! lines to automated/utils/send-to-lava.sh. Both are re-implemented below from their
//! semantics (read, not copied: test-definitions at 4212946, June 2026; the parser's last
//! change is c6056a11, March 2025). test-definitions has no oslat job: its other rt-tests jobs
//! (pmqtest, signaltest, ...) all pass their JSON to the same parser, which reads any rt-tests
//! file with `num_threads`, so an oslat job would too; that is what is checked for oslat.

use crate::common::{exclusive, jitterlab, realtime_available, run_json, sample_records, text};
use serde_json::Value;
use std::path::Path;

/// A JSON value as Python's `str.format` prints it (parse_rt_tests_results.py formats the
/// values it reads): integers as written, floats as their shortest repr (`26.5`, `3.0`).
fn python_str(v: &Value) -> String {
    match v {
        Value::Number(n) if n.is_f64() => format!("{:?}", n.as_f64().unwrap()),
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        other => other.to_string(),
    }
}

/// parse_rt_tests_results.py: per thread `t{tid}-{min,avg,max}-latency pass {value} us` (the
/// thread's `receiver` object where it has one), per IRQ `i{iid}-...` when `num_irqs` is there,
/// else `inversion pass N count` for pi_stress, then `{testname} pass` or `fail` by
/// `return_code`. A key it looks up and does not find stops the script (Python's KeyError):
/// an `Err` here.
fn parse_rt_tests_results(testname: &str, doc: &Value) -> Result<Vec<String>, String> {
    let key = |v: &Value, k: &str| v.get(k).cloned().ok_or(format!("KeyError: '{k}'"));
    // Python's int(): a float truncated (parse_rtla.py writes num_threads as cols / 2, a
    // float), a string parsed.
    let int = |v: &Value| -> Result<i64, String> {
        match v {
            Value::Number(n) => n
                .as_i64()
                .or_else(|| {
                    n.as_f64()
                        .filter(|f| f.is_finite())
                        .map(|f| f.trunc() as i64)
                })
                .ok_or(format!("int({n})")),
            Value::String(s) => s.trim().parse().map_err(|_| format!("int('{s}')")),
            other => Err(format!("int({other})")),
        }
    };
    let mut lines = Vec::new();
    let mut per = |count: &str, table: &str, prefix: &str| -> Result<(), String> {
        for id in 0..int(&key(doc, count)?)? {
            let entry = key(&key(doc, table)?, &id.to_string())?;
            let data = entry.get("receiver").cloned().unwrap_or(entry);
            for stat in ["min", "avg", "max"] {
                let value = python_str(&key(&data, stat)?);
                lines.push(format!("{prefix}{id}-{stat}-latency pass {value} us"));
            }
        }
        Ok(())
    };
    if doc.get("num_threads").is_some() {
        per("num_threads", "thread", "t")?;
    }
    if doc.get("num_irqs").is_some() {
        per("num_irqs", "irq", "i")?;
    } else if let Some(n) = doc.get("inversion") {
        lines.push(format!("inversion pass {} count\n", python_str(n)));
    }
    let verdict = if int(&key(doc, "return_code")?)? == 0 {
        "pass"
    } else {
        "fail"
    };
    lines.push(format!("{testname} {verdict}"));
    Ok(lines)
}

/// One LAVA test case as send-to-lava.sh reports it.
#[derive(Debug, PartialEq)]
struct Case {
    name: String,
    result: String,
    measurement: Option<String>,
    units: Option<String>,
}

/// send-to-lava.sh: a line ending in a result word (`pass`, `fail`, `skip`, `unknown`, any
/// case) after a blank is a case without measurement (first and last word); else a line with
/// a result word between blanks is `name result measurement units` (awk's $1..$4, whatever
/// $2 is); other lines are ignored.
fn send_to_lava(lines: &[String]) -> Vec<Case> {
    let result = |w: &str| ["pass", "fail", "skip", "unknown"].contains(&w.to_lowercase().as_str());
    let mut cases = Vec::new();
    for line in lines.iter().flat_map(|l| l.lines()) {
        let words: Vec<&str> = line.split_whitespace().collect();
        let case = |measured: bool| Case {
            name: words[0].into(),
            result: if measured {
                words[1]
            } else {
                words[words.len() - 1]
            }
            .into(),
            measurement: words.get(2).filter(|_| measured).map(|s| s.to_string()),
            units: words.get(3).filter(|_| measured).map(|s| s.to_string()),
        };
        if words.len() >= 2 && result(words[words.len() - 1]) {
            cases.push(case(false));
        } else if words.len() >= 3 && words[1..words.len() - 1].iter().any(|w| result(w)) {
            cases.push(case(true));
        }
    }
    cases
}

/// The LAVA cases of an rt-tests JSON file, by name: (result, measurement, units).
fn lava_cases(testname: &str, json: &Path) -> Vec<Case> {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    send_to_lava(&parse_rt_tests_results(testname, &doc).expect("the parser reads the file"))
}

fn measured(cases: &[Case], name: &str) -> f64 {
    let case = cases
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no LAVA case {name} in {cases:?}"));
    assert_eq!(
        (case.result.as_str(), case.units.as_deref()),
        ("pass", Some("us")),
        "{name}"
    );
    case.measurement.as_deref().unwrap().parse().unwrap()
}

/// LAVA's cyclictest job, every-CPU setting, against the result directory: per thread the
/// min and max are run.json's in cyclictest's whole us (truncated); the avg is the mean of the
/// truncated samples (re-computed here from samples.bin) to its 2 decimals, and so at most
/// 1 us (plus the rounding) below run.json's exact mean, as docs/cyclictest.md states.
#[test]
fn lavas_cyclictest_job_reads_the_drop_ins_json_as_the_runs_figures() {
    if !realtime_available("lavas_cyclictest_job_reads_the_drop_ins_json_as_the_runs_figures") {
        return;
    }
    let _g = exclusive();
    let tmp = tempfile::tempdir().unwrap();
    let json = tmp.path().join("cyclictest.json");
    let dir = tmp.path().join("run");
    let nproc = crate::common::online_cpus().len().to_string();
    let out = jitterlab(&[
        "cyclictest",
        "-q",
        "-p",
        "98",
        "-i",
        "1000",
        "-t",
        &nproc,
        "-a",
        "all",
        "-D",
        "2",
        "-m",
        &format!("--json={}", json.display()),
        "--jitterlab-out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let cases = lava_cases("cyclictest", &json);
    let run = run_json(&dir);
    let threads = run["threads"].as_array().unwrap();
    assert_eq!(threads.len().to_string(), nproc);
    assert_eq!(cases.len(), 3 * threads.len() + 1, "{cases:?}");
    let verdict = cases.last().unwrap();
    assert_eq!(
        (verdict.name.as_str(), verdict.result.as_str()),
        ("cyclictest", "pass")
    );
    assert_eq!(verdict.measurement, None);
    let records = sample_records(&dir);
    for (k, t) in threads.iter().enumerate() {
        let us = |field: &str| (t[field].as_i64().unwrap() / 1000) as f64;
        assert_eq!(measured(&cases, &format!("t{k}-min-latency")), us("min_ns"));
        assert_eq!(measured(&cases, &format!("t{k}-max-latency")), us("max_ns"));
        let avg = measured(&cases, &format!("t{k}-avg-latency"));
        let cpu = t["cpu"].as_u64().unwrap() as u32;
        let truncated: Vec<i64> = records
            .iter()
            .filter(|r| r.cpu == cpu)
            .map(|r| r.latency_ns / 1000)
            .collect();
        assert_eq!(truncated.len() as u64, t["samples"].as_u64().unwrap());
        let recomputed = truncated.iter().sum::<i64>() as f64 / truncated.len() as f64;
        assert!(
            (avg - recomputed).abs() <= 0.005 + 1e-9,
            "t{k}: {avg} vs {recomputed}"
        );
        let mean_us = t["mean_ns"].as_f64().unwrap() / 1000.0;
        assert!(
            avg <= mean_us + 0.005 && mean_us - avg < 1.005,
            "t{k}: LAVA avg {avg} us against run.json mean {mean_us} us"
        );
    }
}

/// The same parser over `jitterlab oslat --json`: per thread min, avg and max are oslat's
/// figures of the run (docs/oslat.md: every loop pass in whole us, floor + 1), re-derived
/// here from run.json's pass count and samples.bin's gaps; the max is run.json's max_ns so.
#[test]
fn lavas_rt_tests_parser_reads_the_oslat_drop_ins_json_as_the_runs_figures() {
    let _g = exclusive();
    let tmp = tempfile::tempdir().unwrap();
    let json = tmp.path().join("oslat.json");
    let dir = tmp.path().join("run");
    let out = jitterlab(&[
        "oslat",
        "-q",
        "-D",
        "2",
        "-c",
        "0,1",
        &format!("--json={}", json.display()),
        "--jitterlab-out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let cases = lava_cases("oslat", &json);
    let run = run_json(&dir);
    let threads = run["threads"].as_array().unwrap();
    assert_eq!(cases.len(), 3 * threads.len() + 1, "{cases:?}");
    assert_eq!(cases.last().unwrap().name, "oslat");
    assert_eq!(cases.last().unwrap().result, "pass");
    let records = sample_records(&dir);
    for (k, t) in threads.iter().enumerate() {
        assert_eq!(t["dropped_records"], 0, "a gap lost would be in no bucket");
        let cpu = t["cpu"].as_u64().unwrap() as u32;
        let passes = t["noise"]["iterations"].as_u64().unwrap();
        // Each pass at floor(us) + 1: the recorded gaps of 1 us or more at theirs, the rest 1.
        let long: Vec<u64> = records
            .iter()
            .filter(|r| r.cpu == cpu && r.latency_ns >= 1000)
            .map(|r| r.latency_ns as u64 / 1000 + 1)
            .collect();
        let sum = long.iter().sum::<u64>() + (passes - long.len() as u64);
        let max_us = t["max_ns"].as_u64().unwrap() / 1000 + 1;
        assert_eq!(max_us, long.iter().copied().max().unwrap_or(1));
        assert_eq!(measured(&cases, &format!("t{k}-min-latency")), 1.0);
        assert_eq!(
            measured(&cases, &format!("t{k}-max-latency")),
            max_us as f64
        );
        let avg = measured(&cases, &format!("t{k}-avg-latency"));
        let recomputed = sum as f64 / passes as f64;
        assert!(
            (avg - recomputed).abs() < 1e-6,
            "t{k}: {avg} vs {recomputed}"
        );
    }
}

/// The re-implemented parser on fixed inputs: the names, Python's number forms, the receiver
/// object, the IRQs of rtla's converted JSON, the verdict, and the KeyError of a missing key.
#[test]
fn the_lava_parser_as_written() {
    let doc = serde_json::json!({
        "num_threads": 2, "return_code": 0,
        "thread": {"0": {"min": 3, "avg": 26.5, "max": 40},
                   "1": {"receiver": {"min": 1, "avg": 3.0, "max": 9}}},
    });
    let lines = parse_rt_tests_results("cyclictest", &doc).unwrap();
    assert_eq!(
        lines,
        [
            "t0-min-latency pass 3 us",
            "t0-avg-latency pass 26.5 us",
            "t0-max-latency pass 40 us",
            "t1-min-latency pass 1 us",
            "t1-avg-latency pass 3.0 us",
            "t1-max-latency pass 9 us",
            "cyclictest pass",
        ]
    );
    let cases = send_to_lava(&lines);
    assert_eq!(
        cases[1],
        Case {
            name: "t0-avg-latency".into(),
            result: "pass".into(),
            measurement: Some("26.5".into()),
            units: Some("us".into()),
        }
    );
    assert_eq!(
        (cases[6].measurement.as_ref(), cases[6].result.as_str()),
        (None, "pass")
    );
    let rtla = serde_json::json!({
        "num_threads": 1.0, "num_irqs": 1, "return_code": 1,
        "thread": {"0": {"min": 1, "avg": 2, "max": 3}}, "irq": {"0": {"min": 1, "avg": 1, "max": 1}},
    });
    assert_eq!(
        parse_rt_tests_results("rtla", &rtla).unwrap()[0],
        "t0-min-latency pass 1 us",
        "int(1.0) of parse_rtla.py's float count"
    );
    let rtla = serde_json::json!({
        "num_threads": 1, "num_irqs": 1, "return_code": 1,
        "thread": {"0": {"min": 1, "avg": 2, "max": 3}}, "irq": {"0": {"min": 1, "avg": 1, "max": 1}},
    });
    let lines = parse_rt_tests_results("rtla", &rtla).unwrap();
    assert_eq!(lines[3], "i0-min-latency pass 1 us");
    assert_eq!(lines.last().unwrap(), "rtla fail");
    let missing = serde_json::json!({"num_threads": 1, "thread": {"0": {"min": 1, "max": 2}}});
    assert_eq!(
        parse_rt_tests_results("x", &missing),
        Err("KeyError: 'avg'".into())
    );
}

//! `jitterlab oslat` measuring for real, briefly: the table it prints against the result
//! directory it writes (run.json's loop counts, and every gap of samples.bin re-bucketed here
//! by oslat's rule), its `--json` file against the table, and both read back by
//! `jitterlab import` to the run's passes and longest gap.

use crate::common::{exclusive, jitterlab, run_json, sample_records, text};
use std::collections::BTreeMap;

/// The table's rows by label (`001 (us)`, `Minimum`, ...): the values of each CPU's column.
fn table(stdout: &str) -> BTreeMap<String, Vec<String>> {
    stdout
        .lines()
        .skip_while(|l| !l.starts_with("        Core:"))
        .filter_map(|l| l.split_once(":\t"))
        .map(|(label, values)| {
            let values = values
                .split_whitespace()
                .take_while(|v| !v.starts_with('('))
                .map(String::from)
                .collect();
            (label.trim().to_string(), values)
        })
        .collect()
}

#[test]
fn oslat_prints_the_runs_figures_and_they_import_back() {
    let _g = exclusive();
    let tmp = tempfile::tempdir().unwrap();
    let p = |name: &str| tmp.path().join(name).to_str().unwrap().to_string();
    let out = jitterlab(&[
        "oslat",
        "-q",
        "-D",
        "2",
        "-c",
        "0,1",
        "-b",
        "16",
        &format!("--json={}", p("oslat.json")),
        "--jitterlab-out",
        &p("run"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(stdout.starts_with("oslat V 2.40 (jitterlab "), "{stdout}");
    let dir = tmp.path().join("run");
    assert!(
        text(&out).contains(&format!("result directory {}", dir.display())),
        "{}",
        text(&out)
    );
    crate::common::invariants::check_result_dir(&dir);
    let run = run_json(&dir);
    assert_eq!(run["kind"], "noise");
    let records = sample_records(&dir);
    let rows = table(&stdout);
    let threads = run["threads"].as_array().unwrap();
    assert_eq!(rows["Core"], ["0", "1"], "{stdout}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p("oslat.json")).unwrap()).unwrap();
    for (k, t) in threads.iter().enumerate() {
        let cpu = t["cpu"].as_u64().unwrap();
        assert_eq!(rows["Core"][k], cpu.to_string());
        let noise = &t["noise"];
        let passes = noise["iterations"].as_u64().unwrap();
        assert_eq!(t["dropped_records"], 0, "a gap lost would be in no bucket");
        // Independently: every recorded gap of 1 us or more in its bucket (floor(us) + 1,
        // the last one holding the longer), the rest of the passes in bucket 1.
        let mut buckets = [0u64; 16];
        let (mut sum, mut max_us) = (0u128, 1u64);
        let mut long = 0;
        for r in records.iter().filter(|r| r.cpu as u64 == cpu) {
            let us = r.latency_ns as u64 / 1000 + 1;
            if us >= 2 {
                buckets[(us as usize - 1).min(15)] += 1;
                sum += us as u128;
                max_us = max_us.max(us);
                long += 1;
            }
        }
        buckets[0] = passes - long;
        sum += buckets[0] as u128;
        for (j, n) in buckets.iter().enumerate() {
            let label = format!("{:03} (us)", j + 1);
            assert_eq!(rows[&label][k], n.to_string(), "CPU {cpu} {label}");
            let in_json = &doc["thread"][k.to_string()]["histogram"][(j + 1).to_string()];
            assert_eq!(in_json.as_u64().unwrap_or(0), *n, "JSON CPU {cpu} {label}");
        }
        assert_eq!(rows["Minimum"][k], "1");
        assert_eq!(rows["Maximum"][k], max_us.to_string(), "CPU {cpu}");
        // The longest gap is run.json's max_ns too (kept exactly).
        assert_eq!(
            t["max_ns"].as_u64().unwrap() / 1000 + 1,
            max_us,
            "CPU {cpu}"
        );
        assert_eq!(rows["Max-Min"][k], (max_us - 1).to_string(), "CPU {cpu}");
        let avg = sum as f64 / passes as f64;
        assert_eq!(rows["Average"][k], format!("{avg:.3}"), "CPU {cpu}");
        let measured_s = noise["measured_ns"].as_u64().unwrap() as f64 / 1e9;
        assert_eq!(rows["Duration"][k], format!("{measured_s:.3}"));
        assert!((1.9..2.2).contains(&measured_s), "{measured_s} s measured");
        let mhz = noise["clock"]["ticks_per_s"].as_f64().unwrap().round() as u64 / 1_000_000;
        assert_eq!(rows["Counter Freq"][k], mhz.to_string());
        let j = &doc["thread"][k.to_string()];
        assert_eq!(j["cpu"].as_u64(), Some(cpu));
        assert_eq!(j["freq"].as_u64(), Some(mhz));
        assert_eq!(
            (j["min"].as_u64(), j["max"].as_u64()),
            (Some(1), Some(max_us))
        );
        assert!((j["avg"].as_f64().unwrap() - avg).abs() < 1e-6);
        assert_eq!(
            j["duration"].as_f64(),
            Some(format!("{measured_s:.3}").parse().unwrap())
        );
    }

    // Both outputs import back to the run's passes and longest gap (in oslat's unit).
    std::fs::write(p("oslat.txt"), &stdout).unwrap();
    for (file, into) in [("oslat.txt", "imp-text"), ("oslat.json", "imp-json")] {
        let out = jitterlab(&["import", &p(file), "-o", &p(into)]);
        assert_eq!(out.status.code(), Some(0), "{file}: {}", text(&out));
        let imported = run_json(&tmp.path().join(into));
        assert_eq!(imported["kind"], "noise", "{file}");
        for (k, t) in threads.iter().enumerate() {
            let i = &imported["threads"][k];
            assert_eq!(i["cpu"], t["cpu"], "{file}");
            assert_eq!(i["samples"], t["noise"]["iterations"], "{file}: passes");
            assert_eq!(
                i["max_ns"].as_u64().unwrap(),
                rows["Maximum"][k].parse::<u64>().unwrap() * 1000,
                "{file}"
            );
        }
    }
}

//! `jitterlab oslat` on known inputs: its formatters against real rt-tests 2.40 oslat output
//! (tests/data/import/oslat-2cpu.* and oslat-quiet.*, captured on this project's VM), byte for
//! byte, from the figures that output states; the captured command lines read as oslat reads
//! them; what it refuses, with exit 2 and the reason; the link named `oslat`. Nothing here
//! measures (the measuring test is tests/measuring/oslat.rs).

use crate::common::text;
use jitterlab::commands::oslat::figures::OslatFigures;
use jitterlab::commands::oslat::{json, options, text as os_text};
use jitterlab::commands::rt_json::Header;
use std::path::Path;
use std::time::{Duration, SystemTime};

fn data(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/import")
        .join(name);
    std::fs::read_to_string(path).unwrap()
}

/// The figures a captured JSON file states, per thread: buckets, min, max, duration, counter
/// frequency, and as the sum of passes the average times the passes (the JSON's 6 decimals
/// give it to well under half a pass in 10^7, so the printed average is the captured one).
fn captured(doc: &serde_json::Value, buckets: usize) -> Vec<OslatFigures> {
    let threads = doc["thread"].as_object().unwrap();
    (0..threads.len())
        .map(|k| {
            let t = &doc["thread"][k.to_string()];
            let mut b = vec![0u64; buckets];
            for (key, n) in t["histogram"].as_object().unwrap() {
                let us: usize = key.parse().unwrap();
                b[us - 1] = n.as_u64().unwrap();
            }
            let passes: u64 = b.iter().sum();
            OslatFigures {
                cpu: t["cpu"].as_u64().unwrap() as usize,
                counter_mhz: t["freq"].as_u64().unwrap(),
                buckets: b,
                min_us: t["min"].as_u64().unwrap(),
                max_us: t["max"].as_u64().unwrap(),
                sum_us: (t["avg"].as_f64().unwrap() * passes as f64).round() as u128,
                duration_ns: (t["duration"].as_f64().unwrap() * 1e9).round() as u64,
                missing: 0,
            }
        })
        .collect()
}

/// The captured output from its table on (`        Core:`).
fn table(output: &str) -> &str {
    &output[output.find("        Core:").unwrap()..]
}

#[test]
fn the_summary_table_is_oslats_byte_for_byte() {
    for (txt, json_file, buckets, zero_omit) in [
        ("oslat-2cpu.txt", "oslat-2cpu.json", 32, false),
        ("oslat-quiet.txt", "oslat-quiet.json", 8, true),
        ("oslat.txt", "oslat.json", 32, false),
    ] {
        let doc: serde_json::Value = serde_json::from_str(&data(json_file)).unwrap();
        let threads = captured(&doc, buckets);
        let real = data(txt);
        assert_eq!(os_text::summary(&threads, zero_omit), table(&real), "{txt}");
    }
}

/// `-z` on real figures with empty rows: oslat.txt's run with its zero rows left out.
#[test]
fn zero_rows_are_left_out_as_oslat_does() {
    let doc: serde_json::Value = serde_json::from_str(&data("oslat.json")).unwrap();
    let threads = captured(&doc, 32);
    let full = os_text::summary(&threads, false);
    let omitted = os_text::summary(&threads, true);
    let zero_rows: Vec<&str> = full
        .lines()
        .filter(|l| l.contains(" (us):\t 0") && !l.contains("overflows"))
        .collect();
    for row in &zero_rows {
        assert!(!omitted.contains(row), "{row}");
    }
    assert_eq!(
        omitted.lines().count(),
        full.lines().count() - zero_rows.len() + omitted.matches("    ...\n").count()
    );
}

#[test]
fn the_json_file_is_oslats_byte_for_byte() {
    for (json_file, buckets) in [("oslat-2cpu.json", 32), ("oslat-quiet.json", 8)] {
        let real = data(json_file);
        let doc: serde_json::Value = serde_json::from_str(&real).unwrap();
        let sys = &doc["sysinfo"];
        let field = |k: &str| sys[k].as_str().unwrap().to_string();
        let time = |k: &str| {
            let t = jitterlab_time(doc[k].as_str().unwrap());
            SystemTime::UNIX_EPOCH + Duration::from_secs(t)
        };
        let header = Header {
            command_line: doc["cmdline:"].as_str().unwrap().into(),
            version: doc["rt_test_version:"].as_str().unwrap().into(),
            start: time("start_time"),
            end: time("end_time"),
            return_code: 0,
            uname: jitterlab::sys::host::Uname {
                sysname: field("sysname"),
                nodename: field("nodename"),
                release: field("release"),
                version: field("version"),
                machine: field("machine"),
            },
            realtime: false,
        };
        assert_eq!(
            json::render(&header, &captured(&doc, buckets)),
            real,
            "{json_file}"
        );
    }
}

/// Seconds since the epoch of an rt-tests time stamp (`Sun, 22 Nov 2026 20:28:15 +0000`), by
/// days from the civil date (independent of jitterlab's own date code).
fn jitterlab_time(stamp: &str) -> u64 {
    let w: Vec<&str> = stamp.split_whitespace().collect();
    let day: i64 = w[1].parse().unwrap();
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .iter()
    .position(|m| *m == w[2])
    .unwrap() as i64
        + 1;
    let year: i64 = w[3].parse().unwrap();
    let hms: Vec<i64> = w[4].split(':').map(|x| x.parse().unwrap()).collect();
    // Days from 1970-01-01 (Howard Hinnant's days_from_civil).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    (days * 86_400 + hms[0] * 3600 + hms[1] * 60 + hms[2]) as u64
}

/// The lines before the table: oslat's settings dump, as the captured 2-CPU run printed it
/// (but the pre-heat, which jitterlab does not run, and the version line, which names it).
#[test]
fn the_settings_lines_are_oslats() {
    let real = data("oslat-2cpu.txt");
    let ours = os_text::settings(&os_text::Settings {
        duration_s: 3,
        rtprio: Some(1),
        cpu_list: "0,1".into(),
        main_cpu: 0,
    });
    let expected: String = real
        .lines()
        .skip(2)
        .take_while(|l| !l.starts_with("Pre-heat"))
        .map(|l| {
            if l.starts_with("Preheat cores:") {
                "Preheat cores: \t\t0\n".to_string()
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    assert_eq!(ours, expected);
    assert_eq!(
        real.lines().nth(1).unwrap(),
        os_text::FIFO_ON_CPU0.trim_end()
    );
    assert!(os_text::version_line().starts_with("oslat V 2.40 (jitterlab "));
}

#[test]
fn captured_command_lines_are_read_as_oslat_read_them() {
    for line in [
        "-D 5 -c 1 --json=oslat.json",
        "-D 3 -c 0,1 -f 1 --json=oslat-2cpu.json",
        "-D 1 -c 0,1 -q -z -b 8 --json=oslat-quiet.json",
    ] {
        let args: Vec<String> = line.split_whitespace().map(String::from).collect();
        let o = options::parse(&args).unwrap();
        let doc: serde_json::Value =
            serde_json::from_str(&data(o.json.as_ref().unwrap().to_str().unwrap())).unwrap();
        assert_eq!(
            doc["num_threads"].as_u64().unwrap() as usize,
            o.cpu_list.as_deref().unwrap().split(',').count(),
            "{line}"
        );
    }
}

#[test]
fn refused_and_unknown_options_are_exit_2_with_the_reason() {
    for (args, says) in [
        (
            &["oslat", "-B"][..],
            "-B is not supported by jitterlab oslat",
        ),
        (&["oslat", "-T", "100"][..], "ftrace"),
        (&["oslat", "-w", "memmove"][..], "without a workload"),
        (&["oslat", "-b", "4"][..], "5 to 1024"),
        (&["oslat", "-c", "99"][..], "CPU 99 is not online"),
        (
            &["oslat", "--frobnicate"][..],
            "unknown option '--frobnicate'",
        ),
        (&["oslat", "5"][..], "'5' is not an option"),
    ] {
        let out = crate::common::jitterlab(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(text(&out).contains(says), "{args:?}: {}", text(&out));
    }
}

/// Called through a link named `oslat`, the binary takes oslat's options: `-v` is the version
/// line and exit 0, `-h` the help.
#[test]
fn a_link_named_oslat_is_oslat() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("oslat");
    std::os::unix::fs::symlink(crate::common::bin(), &link).unwrap();
    let run = |arg: &str| std::process::Command::new(&link).arg(arg).output().unwrap();
    let out = run("-v");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).starts_with("oslat V 2.40 (jitterlab "),
        "{}",
        text(&out)
    );
    let out = run("-h");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("--bucket-size"), "{}", text(&out));
    let out = run("-B");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("pre-heat"), "{}", text(&out));
}

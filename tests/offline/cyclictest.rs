//! `jitterlab cyclictest` on known inputs: its formatters against real rt-tests 2.40 output
//! (tests/data/import/, captured on this project's VM), byte for byte, from the samples that
//! output describes; its command line read as cyclictest reads the captured runs' command lines;
//! what it and `run` refuse, with exit 2 and the reason. Nothing here measures.

use crate::common::{jitterlab, text};
use jitterlab::commands::cyclictest::figures::ThreadFigures;
use jitterlab::commands::cyclictest::{json, options, plan, text as ct_text};
use std::path::Path;
use std::time::{Duration, SystemTime};

fn data(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/import")
        .join(name);
    std::fs::read_to_string(path).unwrap()
}

/// The samples of a thread of the captured run: its histogram's values in ascending order,
/// with its overflow (its printed max) at the cycle number the `-h` output names.
fn captured_samples(thread: &serde_json::Value, overflow_at: Option<u64>) -> Vec<i64> {
    let mut values: Vec<i64> = Vec::new();
    let mut buckets: Vec<(i64, u64)> = thread["histogram"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.parse().unwrap(), v.as_u64().unwrap()))
        .collect();
    buckets.sort();
    for (value, count) in buckets {
        values.extend(std::iter::repeat_n(value, count as usize));
    }
    if let Some(at) = overflow_at {
        values.insert(at as usize, thread["max"].as_i64().unwrap());
    }
    values
}

/// The captured `-h 400` run (cyclictest.json and cyclictest-hist.txt are one run): thread 0
/// has no overflow, thread 1 one at cycle 3943 (its max, 421 us).
fn captured_figures() -> (serde_json::Value, Vec<ThreadFigures>) {
    let doc: serde_json::Value = serde_json::from_str(&data("cyclictest.json")).unwrap();
    let hist = data("cyclictest-hist.txt");
    let mut threads = Vec::new();
    for k in 0..2 {
        let line = hist
            .lines()
            .find(|l| l.starts_with(&format!("# Thread {k}:")))
            .unwrap();
        let at = line.split_whitespace().nth(3).map(|n| n.parse().unwrap());
        let mut f = ThreadFigures::new(400);
        for v in captured_samples(&doc["thread"][k.to_string()], at) {
            f.add(v);
        }
        threads.push(f);
    }
    (doc, threads)
}

#[test]
fn the_histogram_output_is_rt_tests_byte_for_byte() {
    let (_, threads) = captured_figures();
    let real = data("cyclictest-hist.txt");
    // cyclictest's first line is the PM QoS note, printed before the run.
    let real_histogram = real.split_once('\n').unwrap().1;
    assert_eq!(ct_text::histogram(&threads, false), real_histogram);
}

#[test]
fn the_json_file_is_rt_tests_byte_for_byte() {
    let (doc, threads) = captured_figures();
    let sys = &doc["sysinfo"];
    let field = |k: &str| sys[k].as_str().unwrap().to_string();
    let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_352_723);
    let header = json::Header {
        command_line: doc["cmdline:"].as_str().unwrap().into(),
        version: doc["rt_test_version:"].as_str().unwrap().into(),
        start,
        end: start + Duration::from_secs(5),
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
    let entries: Vec<json::ThreadEntry> = threads
        .iter()
        .enumerate()
        .map(|(cpu, figures)| json::ThreadEntry {
            figures,
            cpu,
            node: 0,
        })
        .collect();
    assert_eq!(
        json::render(&header, &entries, false),
        data("cyclictest.json")
    );
}

#[test]
fn status_lines_are_rt_tests_byte_for_byte() {
    let real = data("cyclictest-status.txt");
    // The captured lines' own figures; the sum gives their average.
    let lines: Vec<&str> = real.lines().filter(|l| l.starts_with("T:")).collect();
    for (k, (tid, interval_us, cycles, min, act, avg, max)) in [
        (5739, 1000, 2995, 14, 18, 26, 2217),
        (5740, 1500, 2000, 10, 15, 22, 494),
    ]
    .into_iter()
    .enumerate()
    {
        let f = ThreadFigures {
            cycles,
            min,
            act,
            sum: avg as i128 * cycles as i128,
            max,
            ..Default::default()
        };
        let id = ct_text::ThreadId {
            tid,
            priority: 95,
            interval_us,
        };
        assert_eq!(ct_text::status_line(k, &id, &f, false), lines[k]);
    }
}

/// The captured runs' command lines lay their threads out as cyclictest did: `I:1500` on
/// thread 1 without `-h` (the 500 us default distance), the same interval with `-h`.
#[test]
fn captured_command_lines_are_read_as_cyclictest_read_them() {
    let layout = |line: &str| {
        let args: Vec<String> = line.split_whitespace().map(String::from).collect();
        plan::layout(&options::parse(&args).unwrap(), &[0, 1]).unwrap()
    };
    let l = layout("-m -q -p95 -i1000 -D3 -t -a --json=cyclictest-status.json");
    assert_eq!(l.threads, vec![(0, 1000), (1, 1500)]);
    assert_eq!(l.priority, 95);
    let l = layout("-m -q -p95 -i1000 -D5 -t -a -h400 --json=cyclictest.json");
    assert_eq!(l.threads, vec![(0, 1000), (1, 1000)]);
}

#[test]
fn run_answers_cyclictest_habits_with_a_hint_and_exit_2() {
    for (args, says) in [
        (
            &["run", "-h", "400", "-D", "30s"][..],
            "histogram: jitterlab keeps a full histogram; for cyclictest's -h output use `jitterlab cyclictest`",
        ),
        (&["run", "-m"][..], "memory is locked by default"),
        (
            &["run", "-S"][..],
            "every online CPU is measured by default",
        ),
        (
            &["run", "-t"][..],
            "one pinned thread per online CPU is the default",
        ),
        (&["run", "--histogram", "100"][..], "jitterlab cyclictest"),
    ] {
        let out = jitterlab(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(out.stdout.is_empty(), "{args:?}: {}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
    }
    // A bare -h is still help.
    assert_eq!(jitterlab(&["run", "-h"]).status.code(), Some(0));
}

#[test]
fn refused_and_unknown_options_are_exit_2_with_the_reason() {
    for (args, says) in [
        (&["cyclictest", "--tracemark"][..], "trace_marker"),
        (&["cyclictest", "--smi"][..], "SMI"),
        (&["cyclictest", "-v"][..], "export --format csv"),
        (&["cyclictest", "-Z"][..], "unknown option '-Z'"),
        (&["cyclictest", "-i", "fast"][..], "-i 'fast'"),
        (&["cyclictest", "-t", "9999"][..], "one thread per CPU"),
    ] {
        let out = jitterlab(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(text(&out).contains(says), "{args:?}: {}", text(&out));
    }
    let help = jitterlab(&["cyclictest", "--help"]);
    assert_eq!(help.status.code(), Some(0));
    assert!(text(&help).contains("--histogram=US"));
}

/// Called through a link named `cyclictest`, the binary takes cyclictest's options.
#[test]
fn a_link_named_cyclictest_is_cyclictest() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("cyclictest");
    std::os::unix::fs::symlink(crate::common::bin(), &link).unwrap();
    let out = std::process::Command::new(&link)
        .arg("-C")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("-C is not supported by jitterlab cyclictest"),
        "{}",
        text(&out)
    );
    let help = std::process::Command::new(&link)
        .arg("--help")
        .output()
        .unwrap();
    assert!(
        text(&help).starts_with("jitterlab cyclictest:"),
        "{}",
        text(&help)
    );
}

//! A damaged events.jsonl read by `report` (twelfth hostile re-run of issue 39): lines of a
//! type this version reads that do not parse are warned about with their count, and the
//! explanations the file holds are checked against run.json's (M12-c: 60 of 112 explanations
//! damaged, the report said "Of 52 explained late wakeups" and its shares without a word,
//! exit 0); a culprit's hold longer than the run is left out of the stack ranking and counted
//! (L12-a: "held up to 18446744073.71 s" of a 3 s run). On copies of a real capture,
//! tests/data/trace/bpf-stacks-fork (106 explanations, run.json `trace.explained` 106).

use crate::common::*;
use std::path::{Path, PathBuf};

fn capture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/trace/bpf-stacks-fork")
}

/// A copy of the capture at `to`, its events.jsonl's lines passed through `edit` (the line,
/// and its index among the `spike_explained` lines, None for the other lines).
fn copy_with(to: &Path, edit: &dyn Fn(&str, Option<usize>) -> String) {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                copy(&e.path(), &to.join(e.file_name()));
            } else {
                std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
            }
        }
    }
    copy(&capture(), to);
    let text = std::fs::read_to_string(capture().join("events.jsonl")).unwrap();
    let mut n = 0;
    let mut out = String::new();
    for line in text.lines() {
        let index = line.starts_with("{\"type\":\"spike_explained\"").then(|| {
            n += 1;
            n - 1
        });
        out.push_str(&edit(line, index));
        out.push('\n');
    }
    assert_eq!(n, 106);
    std::fs::write(to.join("events.jsonl"), out).unwrap();
}

/// Runs `report DIR -o DIR.html`: its stderr and the page.
fn report(dir: &Path) -> (String, String) {
    let html = dir.with_extension("html");
    let out = jitterlab(&[
        "report",
        dir.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let page = std::fs::read_to_string(&html).unwrap();
    (String::from_utf8_lossy(&out.stderr).into_owned(), page)
}

/// The hostile re-run's file: the first 60 explanations given `"duration_ns": "x"` in their
/// first contributor (valid JSON, a wrong type). `report` still reads the rest (exit 0), and
/// says on stderr and among the report's warnings how many lines it left out and that the
/// file holds 46 of run.json's 106 explanations; the intact capture says neither.
#[test]
fn damaged_explanations_are_counted_and_checked_against_run_json() {
    let base = tempfile::tempdir().unwrap();
    let damaged = base.path().join("damaged");
    copy_with(&damaged, &|line, index| match index {
        Some(i) if i < 60 => {
            let at = line.find("\"duration_ns\":").expect("a contributor") + 14;
            let end = at + line[at..].find(|c: char| !c.is_ascii_digit()).unwrap();
            assert!(end > at, "{line}");
            format!("{}\"x\"{}", &line[..at], &line[end..])
        }
        _ => line.to_string(),
    });
    let (err, page) = report(&damaged);
    let left_out = "60 line(s) of an event type this version reads (the first a `spike_explained`) \
                    do not parse and were left out (jitterlab writes none such: the file was \
                    edited or damaged)";
    let holds = "holds 46 of the 106 explanations run.json says were written (`trace.explained`): \
                 what is shown of them (counts, shares, the lists) is of those 46";
    for said in [left_out, holds] {
        assert!(err.contains(said), "stderr: {err}");
        assert!(page.contains(said), "the report's warnings: {said}");
    }
    assert!(
        page.contains("Of 46 explained late wakeups"),
        "the shares are of the 46 read"
    );

    let intact = base.path().join("intact");
    copy_with(&intact, &|line, _| line.to_string());
    let (err, page) = report(&intact);
    for not in ["do not parse", "explanations run.json says"] {
        assert!(!err.contains(not), "{err}");
        assert!(!page.contains(not), "the intact capture: {not}");
    }
}

/// L12-a end to end: the worst explanation's culprit made to hold the CPU 2^64-1 ns. The
/// report's ranking leaves its stack out (48 listed stacks, 33 of them preempted in kernel
/// code: 32 ranked), shows no hold longer than the run, and says so under it.
#[test]
fn a_hold_longer_than_the_run_is_left_out_of_the_ranking() {
    let text = std::fs::read_to_string(capture().join("events.jsonl")).unwrap();
    let worst = text
        .lines()
        .filter(|l| l.starts_with("{\"type\":\"spike_explained\""))
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| {
            v["contributors"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c.get("stack").is_some())
        })
        .max_by_key(|v| v["latency_ns"].as_i64().unwrap())
        .unwrap();
    let worst_time = worst["time_ns"].as_u64().unwrap();
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("long");
    copy_with(&dir, &|line, index| {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if index.is_none() || v["time_ns"].as_u64() != Some(worst_time) {
            return line.to_string();
        }
        let mut v = v;
        for c in v["contributors"].as_array_mut().unwrap() {
            if c.get("stack").is_some() {
                c["duration_ns"] = serde_json::json!(u64::MAX);
            }
        }
        serde_json::to_string(&v).unwrap()
    });
    let (_, page) = report(&dir);
    let open = "<p class=\"stack-rank\">The ";
    let at = page.find(open).expect("the ranking") + open.len();
    let line = &page[at..at + page[at..].find("</p>").unwrap()];
    assert!(
        line.contains("kernel functions in the 32 stacks of culprits preempted in kernel code"),
        "{line}"
    );
    assert!(!line.contains("18446744073"), "{line}");
    assert!(
        page.contains(
            "Warning: 1 culprit stack(s) left out of the ranking as damaged input: a stack on a \
             contributor that is no task, or a hold longer than the run (3.00 s)"
        ),
        "no warning under the ranking"
    );
}

/// Every explanation twice (thirteenth hostile re-run, L13-e: "Of 212 explained late wakeups"
/// of run.json's 106, without a word): more than run.json says were written is said too.
#[test]
fn repeated_explanations_are_said() {
    let base = tempfile::tempdir().unwrap();
    let doubled = base.path().join("doubled");
    copy_with(&doubled, &|line, index| match index {
        Some(_) => format!("{line}\n{line}"),
        None => line.to_string(),
    });
    let (err, page) = report(&doubled);
    let said = "holds 212 explanations, more than the 106 run.json says were written \
                (`trace.explained`): lines were repeated or added";
    assert!(err.contains(said), "stderr: {err}");
    assert!(page.contains(said), "the report's warnings: {said}");
}

/// One byte that is not UTF-8 in one explanation (thirteenth hostile re-run, L13-d: `report`
/// refused the whole run, exit 2, "it is not UTF-8 text"; a multi-run report every run): the
/// line is counted and said, the report written from the rest, exit 0.
#[test]
fn a_byte_that_is_not_utf8_damages_its_line_not_the_run() {
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("not-text");
    copy_with(&dir, &|line, _| line.to_string());
    let events = dir.join("events.jsonl");
    let mut bytes = std::fs::read(&events).unwrap();
    let at = bytes
        .windows(b"copy_page_range".len())
        .position(|w| w == b"copy_page_range")
        .expect("a clone's stack in the capture");
    bytes[at + 4] = 0xff;
    std::fs::write(&events, bytes).unwrap();
    let (err, page) = report(&dir);
    let said = "1 line(s) are not UTF-8 text (jitterlab writes none such: the file was edited or \
                damaged)";
    assert!(err.contains(said), "stderr: {err}");
    assert!(page.contains(said), "the report's warnings: {said}");
    assert!(
        page.contains("Of 106 explained late wakeups"),
        "the line, whole JSON, still counts"
    );
}

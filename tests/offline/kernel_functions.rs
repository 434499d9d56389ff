//! The kernel functions behind the spikes (issue 42, the MontaVista slides' "longest paths") on
//! a real capture: tests/data/trace/bpf-stacks-fork, the result directory of
//! `jitterlab run --duration 3s --cpus 1 --interval 1ms --trace --trace-backend bpf
//! --explain-above 50us --load fork:cpus=1` on the development VM (6.18, `PREEMPT_DYNAMIC
//! (none)`, no modules). The fork load's task, SCHED_OTHER in kernel code that is not
//! preempted, gave the CPU to the late FIFO thread at the preemption points of its long paths:
//! the clone's page-table copy and the exit's unmapping. The ranking the report prints (its 50
//! listed explanations) and the one `run --verbose` prints (run.json's worst) are re-derived
//! here from the raw JSON, the oracle's way: no code of src/report.

use crate::common::oracle::printed_ns;
use crate::common::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn capture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/trace/bpf-stacks-fork")
}

/// The report lists this many explanations, worst first (docs/report.md).
const LISTED: usize = 50;

/// function -> (stacks holding it, the longest its culprit held the CPU), in the documented
/// order: most stacks, then the longest hold, then the name; and the stacks ranked, left out as
/// preempted on the way to user space, and left out as gone to sleep. Only a culprit preempted
/// in kernel code (its stack's second frame `__cond_resched`: this kernel preempts kernel code
/// nowhere else) is ranked, by the frames after that but the system call entry; one whose `schedule` was called on the
/// way back to user space, or from anywhere else (a sleep), is counted apart.
fn oracle(spikes: &[&serde_json::Value]) -> (Vec<(String, u64, u64)>, [u64; 3]) {
    let mut by: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut counts = [0; 3];
    for s in spikes {
        // The culprit: the first contributor with a stack.
        let Some(c) = s["contributors"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c.get("stack").is_some())
        else {
            continue;
        };
        let frames: Vec<&str> = c["stack"]["frames"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap().split('+').next().unwrap())
            .collect();
        assert_eq!(frames[0], "__schedule");
        if frames[1] != "__cond_resched" {
            assert_eq!(frames[1], "schedule", "{frames:?}");
            let to_user = ["exit_to_user_mode_loop", "irqentry_exit_to_user_mode"];
            counts[if to_user.contains(&frames[2]) { 1 } else { 2 }] += 1;
            continue;
        }
        counts[0] += 1;
        // The system call entry, in every system call's path, names none.
        let entry = [
            "do_syscall_64",
            "entry_SYSCALL_64_after_hwframe",
            "x64_sys_call",
        ];
        let names: BTreeSet<&str> = frames[2..]
            .iter()
            .copied()
            .filter(|f| !entry.contains(f))
            .collect();
        let held = c["duration_ns"].as_u64().unwrap();
        for n in names {
            let e = by.entry(n.to_string()).or_default();
            e.0 += 1;
            e.1 = e.1.max(held);
        }
    }
    let mut out: Vec<(String, u64, u64)> = by.into_iter().map(|(f, (n, h))| (f, n, h)).collect();
    out.sort_by(|a, b| b.1.cmp(&a.1).then(b.2.cmp(&a.2)).then(a.0.cmp(&b.0)));
    (out, counts)
}

/// Checks a printed ranking line against the oracle's ranking: its stack counts, each named
/// function in order with its count and hold (within the printed rounding), and "and N more".
fn agrees(printed: &str, want: &[(String, u64, u64)], counts: [u64; 3]) -> Vec<String> {
    let head = format!(
        "kernel functions in the {} stacks of culprits preempted in kernel code (each with how \
         many hold it and the longest one of their culprits held the CPU): ",
        counts[0]
    );
    let tail = format!(
        "; left out: {} preempted on their way to user space, {} gone to sleep (their stacks \
         show where they stopped, not a kernel path they ran)",
        counts[1], counts[2]
    );
    let rest = printed
        .strip_prefix(&head)
        .unwrap_or_else(|| panic!("not {head:?}...: {printed}"));
    // The stacks left out are said after the ranking when there are any.
    let rest = if counts[1] + counts[2] > 0 {
        rest.strip_suffix(&tail)
            .unwrap_or_else(|| panic!("not ...{tail:?}: {printed}"))
    } else {
        assert!(!rest.contains("; left out"), "{printed}");
        rest
    };
    let mut named = Vec::new();
    let mut more = 0;
    for item in rest.split(", ") {
        if let Some(n) = item
            .strip_prefix("and ")
            .and_then(|m| m.strip_suffix(" more"))
        {
            more = n.parse::<usize>().unwrap();
            continue;
        }
        let (name_count, held) = item
            .strip_suffix(')')
            .and_then(|i| i.split_once(" (held up to "))
            .unwrap_or_else(|| panic!("{item:?}"));
        let (name, count) = name_count.rsplit_once(' ').unwrap();
        let (at, half) = printed_ns(held).unwrap_or_else(|| panic!("{held:?}"));
        let (_, want_count, want_held) = &want[named.len()];
        assert_eq!(
            (name, count.parse::<u64>().unwrap()),
            (want[named.len()].0.as_str(), *want_count),
            "{item} in {printed}"
        );
        assert!(
            (at - *want_held as f64).abs() <= half,
            "{item}: held {want_held} ns"
        );
        named.push(name.to_string());
    }
    assert_eq!(named.len() + more, want.len(), "{printed}");
    named
}

/// The report's ranking of its 50 listed explanations (48 with a stack) of the capture.
#[test]
fn the_report_ranks_the_kernel_functions_of_a_real_capture() {
    let events = std::fs::read_to_string(capture().join("events.jsonl")).unwrap();
    let all: Vec<serde_json::Value> = events
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["type"] == "spike_explained")
        .collect();
    let mut listed: Vec<&serde_json::Value> = all.iter().collect();
    listed.sort_by_key(|v| std::cmp::Reverse(v["latency_ns"].as_i64().unwrap()));
    assert_ne!(
        listed[LISTED - 1]["latency_ns"],
        listed[LISTED]["latency_ns"],
        "the listed 50 are told apart from the rest by their latency"
    );
    listed.truncate(LISTED);
    let (want, counts) = oracle(&listed);
    assert_eq!((all.len(), counts, want.len()), (106, [33, 14, 1], 19));

    crate::sample_fixture::documented(
        "reproducing.md",
        "jitterlab report bpf-stacks-fork -o fork.html",
    );
    let base = tempfile::tempdir().unwrap();
    let html = base.path().join("fork.html");
    let out = jitterlab(&[
        "report",
        capture().to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let html = std::fs::read_to_string(&html).unwrap();
    let open = "<p class=\"stack-rank\">The ";
    let at = html.find(open).expect("the report has the ranking") + open.len();
    let line = &html[at..at + html[at..].find(".</p>").unwrap()];
    let line = line.replace("&#39;", "'").replace("&amp;", "&");
    let named = agrees(&line, &want, counts);
    assert_eq!(named.len(), 12, "{line}");
    // The fork load's exit path is among them.
    for f in ["do_exit", "exit_mmap", "unmap_page_range"] {
        assert!(named.iter().any(|n| n == f), "{f} not named: {line}");
    }
}

/// `run --verbose`'s ranking: the same over run.json's worst explanations, under them.
#[test]
fn the_verbose_summary_ranks_the_worst_explanations_of_a_real_capture() {
    let run = run_json(&capture());
    let worst: Vec<&serde_json::Value> = run["trace"]["worst"].as_array().unwrap().iter().collect();
    let (want, counts) = oracle(&worst);
    // The worst wakeup's culprit was in the clone path; two others' on their way to user
    // space, a kworker's asleep.
    assert_eq!((worst.len(), counts), (5, [1, 2, 1]));
    let loaded = jitterlab::results::loaded::open(&capture()).unwrap();
    let summary = jitterlab::report::terminal::summary(&loaded.record, &capture(), true);
    // The line as printed, its wrapped continuation lines joined.
    let mut lines = summary
        .lines()
        .skip_while(|l| !l.starts_with("  kernel functions in the"));
    let mut line = lines
        .next()
        .expect("--verbose prints the ranking")
        .trim()
        .to_string();
    for l in lines.take_while(|l| l.starts_with("      ")) {
        line.push(' ');
        line.push_str(l.trim());
    }
    let named = agrees(&line, &want, counts);
    assert_eq!(named.len(), want.len().min(8), "{line}");
    assert!(named.iter().any(|n| n == "copy_page_range"), "{line}");
    // Without --verbose, no ranking.
    let quiet = jitterlab::report::terminal::summary(&loaded.record, &capture(), false);
    assert!(!quiet.contains("kernel functions in the"), "{quiet}");
}

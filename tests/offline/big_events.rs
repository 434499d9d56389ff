//! N4 (issue 39): a result directory's events.jsonl is read in memory that does not grow with
//! it. Every reader held the whole file, at about 2.5 times its size (a 516 MB file: 1.28 GB
//! and 25 s for `report`, `export`, `compare`); the limit allows 4 GiB. Each child's peak RSS
//! is its own (wait4's rusage), not this test binary's.

use crate::common;

use common::*;
use std::fs;
use std::io::Write;
use std::path::Path;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A spike explanation line as jitterlab writes it, `latency_us` late.
fn explanation(t0: u64, k: u64, latency_us: u64) -> String {
    format!(
        r#"{{"type":"spike_explained","time_ns":{t},"cpu":{cpu},"due_ns":{t},"latency_ns":{l},"irq_latency_ns":1000,"thread_latency_ns":{tl},"verdict":"thread latency {latency_us} us: CPU held by jl-hog-{cpu} (pid 77, FIFO 50)","contributors":[{{"kind":"task","name":"jl-hog-{cpu}","pid":77,"policy":"FIFO","prio":50,"duration_ns":{tl}}}]}}"#,
        t = t0 + k * 1000,
        cpu = k % 2,
        l = latency_us * 1000,
        tl = latency_us * 1000 - 1000,
    )
}

/// 200 MB of events (an action line repeated, and 150 000 explanations among them): `report`,
/// `export --format json` and `compare` finish in bounded memory (before: about 500 MB each),
/// and the report still lists the worst explanation of all, "of" every one.
#[test]
fn a_large_events_file_is_read_in_bounded_memory() {
    let base = tempfile::tempdir().unwrap();
    let (run, other) = (base.path().join("run"), base.path().join("other"));
    let record = write_known_run(&run, &[0, 1], 10, 1000, uniform_10_50, 1, 0);
    write_known_run(&other, &[0, 1], 10, 1000, uniform_10_50, 2, 0);
    let t0 = record.start_monotonic_ns;
    let action = format!(
        r#"{{"type":"action","time_ns":{t0},"trigger":"threshold","action":"exec:true","suppressed_before":0,"refused_before":0,"outcome":"ok","pid":21657,"program":"exited","exit_code":0,"detail":"pid 21657 exited with 0"}}"#
    );
    let mut block = String::new();
    for _ in 0..4 {
        block.push_str(&action);
        block.push('\n');
    }
    let mut events = std::io::BufWriter::new(
        fs::OpenOptions::new()
            .append(true)
            .open(run.join("events.jsonl"))
            .unwrap(),
    );
    let mut written = 0;
    let mut k = 0;
    while written < 200 << 20 {
        // Latencies from 20 us up, the worst (9999 us) once, near the middle.
        let us = if k == 75_000 {
            9_999
        } else {
            20 + k * 7 % 5_000
        };
        let line = explanation(t0, k, us);
        events.write_all(line.as_bytes()).unwrap();
        events.write_all(b"\n").unwrap();
        events.write_all(block.as_bytes()).unwrap();
        written += line.len() + 1 + block.len();
        k += 1;
    }
    events.flush().unwrap();
    drop(events);
    assert!(k > 150_000, "{k}");

    let html = base.path().join("r.html");
    const MOST_KIB: i64 = 120 << 10;
    for args in [
        vec!["report", s(&run), "-o", s(&html)],
        vec!["export", s(&run), "--format", "json", "-o", "/dev/null"],
        vec!["compare", s(&run), s(&other)],
    ] {
        let started = std::time::Instant::now();
        let (code, kib, err) = peak_rss(base.path(), &args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(
            kib < MOST_KIB,
            "{args:?}: peak RSS {kib} KiB, over {MOST_KIB} KiB for 200 MB of events"
        );
        eprintln!("{args:?}: {kib} KiB, {:?}", started.elapsed());
    }
    let page = fs::read_to_string(&html).unwrap();
    assert!(
        page.contains(&format!(
            "The 50 latest wakeups explained, worst first (of {k})"
        )),
        "the list says of how many"
    );
    assert!(
        page.contains("thread latency 9999 us"),
        "the worst is listed"
    );
    assert!(
        page.contains(&format!("explained spike (the worst 1000 of {k})")),
        "the markers' legend says where it cut"
    );
    assert!(page.contains(&format!("Of {k} explained late wakeups")));
}

/// A line over the 1 MiB line cap is skipped (not held), counted and named in a warning; the
/// lines around it are read.
#[test]
fn an_overlong_events_line_is_skipped_and_told() {
    let base = tempfile::tempdir().unwrap();
    let run = base.path().join("run");
    let record = write_known_run(&run, &[0, 1], 10, 1000, uniform_10_50, 1, 0);
    let t0 = record.start_monotonic_ns;
    let long = format!(
        r#"{{"type":"warning","time_ns":1,"message":"{}"}}"#,
        "x".repeat(3 << 20)
    );
    let lines = format!(
        "{}\n{long}\n{}\n",
        explanation(t0, 1, 500),
        explanation(t0, 2, 700)
    );
    fs::OpenOptions::new()
        .append(true)
        .open(run.join("events.jsonl"))
        .unwrap()
        .write_all(lines.as_bytes())
        .unwrap();
    let html = base.path().join("r.html");
    let out = jitterlab(&["report", s(&run), "-o", s(&html)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("events.jsonl: 1 line(s) longer than 1 MiB left out"),
        "{err}"
    );
    let page = fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("Of 2 explained late wakeups"),
        "both around it read"
    );
    assert!(
        page.contains("longer than 1 MiB left out"),
        "the report says it"
    );
}

/// A `wakeup_summary` line as the recorder writes it: block `k` of CPU `cpu`, 1000 samples.
fn summary(t0: u64, cpu: u64, k: u64) -> String {
    let first = k * 1000;
    format!(
        r#"{{"type":"wakeup_summary","time_ns":{t},"cpu":{cpu},"first_seq":{first},"last_seq":{last},"samples":1000,"dropped_records":0,"first_due_ns":{fd},"last_due_ns":{ld},"min_ns":{min},"sum_ns":{sum},"mean_ns":{mean}.5,"max_ns":{max},"missed_periods":0}}"#,
        t = t0 + (k + 1) * 1_000_000_000,
        last = first + 999,
        fd = t0 + first * 1_000_000,
        ld = t0 + (first + 999) * 1_000_000,
        min = 2000 + k % 7,
        sum = 4_000_500 + 1000 * (k % 13),
        mean = 4000 + k % 13,
        max = 9000 + cpu * 100 + k % 1000,
    )
}

/// N9 (issue 39): `export --format summaries` held every `wakeup_summary` (and then the whole
/// CSV) before writing: 0.73 times the file (803 MB: 568 MB RSS). 120 MB of them on two CPUs
/// (before: about 150 MB RSS) are written as read, in the order written, in bounded memory; a
/// run without any is refused without a file written.
#[test]
fn wakeup_summaries_are_exported_as_read() {
    let base = tempfile::tempdir().unwrap();
    let run = base.path().join("run");
    let record = write_known_run(&run, &[0, 1], 10, 1000, uniform_10_50, 1, 0);
    let t0 = record.start_monotonic_ns;
    let csv = base.path().join("s.csv");
    // None yet: refused, nothing written (the header is not written ahead of the check).
    let (code, _, err) = peak_rss(
        base.path(),
        &["export", s(&run), "--format", "summaries", "-o", s(&csv)],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("run again with --summary-every N"), "{err}");
    assert!(!csv.exists(), "nothing written for a refused export");

    let mut events = std::io::BufWriter::new(
        fs::OpenOptions::new()
            .append(true)
            .open(run.join("events.jsonl"))
            .unwrap(),
    );
    let (mut written, mut k) = (0, 0u64);
    while written < 120 << 20 {
        for cpu in [0, 1] {
            let line = summary(t0, cpu, k);
            events.write_all(line.as_bytes()).unwrap();
            events.write_all(b"\n").unwrap();
            written += line.len() + 1;
        }
        k += 1;
    }
    events.flush().unwrap();
    drop(events);

    const MOST_KIB: i64 = 40 << 10;
    let started = std::time::Instant::now();
    let (code, kib, err) = peak_rss(
        base.path(),
        &["export", s(&run), "--format", "summaries", "-o", s(&csv)],
    );
    assert_eq!(code, 0, "{err}");
    eprintln!(
        "export --format summaries of {k} x 2 blocks: {kib} KiB, {:?}",
        started.elapsed()
    );
    assert!(
        kib < MOST_KIB,
        "peak RSS {kib} KiB, over {MOST_KIB} KiB for 120 MB of wakeup summaries"
    );
    // Every block, in the order written (CPU 0 and 1 alternating), each row its event's.
    let out = fs::read_to_string(&csv).unwrap();
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some(EXPORT_SUMMARIES_HEADER));
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len() as u64, 2 * k);
    for (at, k) in [
        (0, 0),
        ((rows.len() / 2) & !1, (rows.len() / 4) as u64),
        (rows.len() - 2, k - 1),
    ] {
        for cpu in [0, 1] {
            let first = k * 1000;
            let expected = format!(
                "{cpu},{first},{},1000,0,{},{},999000000,{},{},{},{},0",
                first + 999,
                t0 + first * 1_000_000,
                t0 + (first + 999) * 1_000_000,
                2000 + k % 7,
                // The mean from the exact sum, not the line's mean_ns.
                (4_000_500 + 1000 * (k % 13)) as f64 / 1000.0,
                9000 + cpu * 100 + k % 1000,
                4_000_500 + 1000 * (k % 13),
            );
            assert_eq!(
                rows[at + cpu as usize],
                expected,
                "row {}",
                at + cpu as usize
            );
        }
    }
}

const EXPORT_SUMMARIES_HEADER: &str = "cpu,first_seq,last_seq,samples,dropped_records,first_due_ns,last_due_ns,span_ns,min_ns,mean_ns,max_ns,sum_ns,missed_periods";

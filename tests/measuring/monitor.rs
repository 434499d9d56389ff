//! `jitterlab monitor` end to end: bad input refused before anything starts, SIGTERM a clean
//! end whose directory `report` reads, SIGKILL a directory that keeps the figures of its
//! complete segments, and memory that stays flat while it measures and is scraped.

use crate::common;
use crate::monitor_support;

use common::*;
use monitor_support::*;
use std::net::TcpListener;
use std::time::Duration;

/// A used port is exit 3 naming the port and the fix; a public address without
/// --listen-public and a bad --window are exit 2; in every case no result directory is made.
#[test]
fn bad_input_is_refused_before_anything_starts() {
    let (_base, out) = temp_out();
    let held = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = held.local_addr().unwrap().port();
    let listen = format!("127.0.0.1:{port}");
    let out_arg = out.to_str().unwrap();
    let cases: [(&[&str], i32, String); 4] = [
        (&["--listen", &listen], 3, format!("port {port} is in use")),
        (
            &["--listen", "0.0.0.0:9467"],
            2,
            "add --listen-public".into(),
        ),
        (&["--window", "five minutes"], 2, "--window: ".into()),
        (&["--window", "100ms"], 2, "outside 1s..7d".into()),
    ];
    for (args, code, says) in cases {
        let mut argv = vec!["monitor", "--out", out_arg, "-q"];
        argv.extend_from_slice(args);
        let o = jitterlab(&argv);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {t}");
        assert!(t.contains(&says), "{args:?}: {t}");
        assert!(!out.exists(), "{args:?}: the result directory was made");
    }
}

/// SIGTERM: exit 0, run.json `interrupted` with the samples /metrics showed (at least as many:
/// the run goes on after the last scrape), and `report` reads the directory.
#[test]
fn sigterm_ends_cleanly_and_the_directory_reads() {
    let _x = exclusive();
    if !realtime_available("sigterm_ends_cleanly_and_the_directory_reads") {
        return;
    }
    let (base, out) = temp_out();
    let mut m = Monitor::start(bin(), &out, &["--cpus", "0", "--window", "10s"]);
    let body = m.wait_for_samples(&[0], Duration::from_secs(20)).unwrap();
    let scraped = sample(&body, "jitterlab_samples_total{cpu=\"0\"}").unwrap() as u64;
    let (code, t) = m.terminate();
    assert_eq!(code, Some(0), "{t}");
    invariants::check_result_dir(&out);
    let run = run_json(&out);
    assert_eq!(run["ended"], "interrupted", "{run}");
    let samples = thread(&run, 0)["samples"].as_u64().unwrap();
    assert!(samples >= scraped, "run.json {samples} < scraped {scraped}");
    let html = base.path().join("report.html");
    let o = jitterlab(&[
        "report",
        out.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(std::fs::metadata(&html).unwrap().len() > 0);
}

/// Memory stays flat: with a 2 s window (the ring wraps many times), a 100 us interval and a
/// scrape every 100 ms, VmRSS at 20 s is within 2 MiB of VmRSS at 5 s (the ring's slots,
/// histograms and buffers are all reused once the window is full).
#[test]
fn memory_stays_flat() {
    let _x = exclusive();
    if !realtime_available("memory_stays_flat") {
        return;
    }
    let (_base, out) = temp_out();
    let mut m = Monitor::start(
        bin(),
        &out,
        &["--cpus", "0", "--interval", "100us", "--window", "2s"],
    );
    m.wait_for_samples(&[0], Duration::from_secs(20)).unwrap();
    let pid = m.pid();
    let scrape_for = |d: Duration| {
        let t0 = std::time::Instant::now();
        while t0.elapsed() < d {
            let (status, body) = get(m.port, "/metrics").unwrap();
            assert_eq!(status, 200);
            assert!(body.contains("jitterlab_wakeup_latency_seconds_count{cpu=\"0\"}"));
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    scrape_for(Duration::from_secs(5));
    let early = rss_kib(pid);
    scrape_for(Duration::from_secs(15));
    let late = rss_kib(pid);
    let (code, t) = m.terminate();
    assert_eq!(code, Some(0), "{t}");
    assert!(
        late <= early + 2048,
        "VmRSS grew from {early} KiB at 5 s to {late} KiB at 20 s"
    );
}

/// With --trace and --budget, against the spike load on CPU 0 (2 ms every 500 ms, a FIFO 99
/// task): the late wakeups are counted with the cause `task`, one or two per spike (the spike
/// and a wakeup are due at the same moment: when the spike runs first it holds that wakeup
/// 2 ms and the next one over 1 ms, both past the 1 ms deadline above which wakeups are
/// explained; when the wakeup runs first only the next one is late); the IRQ
/// latency histogram counts joined samples; the budget clause the spikes break is 0 and the one
/// they keep is 1.
#[test]
fn traced_monitor_names_the_cause_and_judges_the_budget() {
    let _x = exclusive();
    let test = "traced_monitor_names_the_cause_and_judges_the_budget";
    if !realtime_available(test) || !tracefs_writable(test) {
        return;
    }
    with_one_retry(test, || {
        let (_base, out) = temp_out();
        let mut m = Monitor::start(
            bin(),
            &out,
            &[
                "--cpus",
                "0",
                "--trace",
                "--budget",
                "max<1ms,max<1s",
                "--load",
                "spike:cpu=0,every=500ms,len=2ms",
            ],
        );
        m.wait_for_samples(&[0], Duration::from_secs(20))?;
        // 5 s: ten spikes; explanations wait for the trace up to 2 s.
        std::thread::sleep(Duration::from_secs(5));
        let (_, body) = get(m.port, "/metrics").map_err(|e| e.to_string())?;
        let (code, t) = m.terminate();
        if code != Some(0) {
            return Err(format!("exit {code:?} on SIGTERM: {t}"));
        }
        let value = |series: &str| sample(&body, series);
        let task = value("jitterlab_late_wakeups_total{cpu=\"0\",cause=\"task\"}").unwrap_or(0.0);
        let samples = value("jitterlab_samples_total{cpu=\"0\"}").unwrap_or(0.0);
        let irq = value("jitterlab_irq_latency_seconds_count{cpu=\"0\"}").unwrap_or(0.0);
        let broken = value("jitterlab_budget_ok{clause=\"max<1ms\"}");
        let kept = value("jitterlab_budget_ok{clause=\"max<1s\"}");
        let figures = format!(
            "task {task}, samples {samples}, irq count {irq}, max<1ms {broken:?}, max<1s {kept:?}"
        );
        // One spike per 500 wakeups at 1 ms; the counts are read at one moment, so a spike
        // whose second wakeup is not yet explained, or noise, moves them by a few.
        let spikes = samples / 500.0;
        if !(0.8 * spikes - 2.0..=2.0 * spikes + 3.0).contains(&task) {
            return Err(format!(
                "expected one or two `task` late wakeups per spike: {figures}"
            ));
        }
        if irq < 0.9 * samples || irq > samples {
            return Err(format!(
                "the IRQ histogram should count the joined samples: {figures}"
            ));
        }
        if broken != Some(0.0) || kept != Some(1.0) {
            return Err(format!("budget clauses: {figures}"));
        }
        Ok(())
    });
}

/// The segment files run.json lists, oldest first: (file, complete).
fn listed_segments(run: &serde_json::Value) -> Vec<(String, bool)> {
    run["segments"]["files"]
        .as_array()
        .map(|files| {
            files
                .iter()
                .map(|f| {
                    (
                        f["file"].as_str().unwrap().to_string(),
                        f["complete"].as_bool().unwrap(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Samples of tag `cpu0` in the given log files, read with the hdrhistogram crate's reader.
fn samples_in(out: &std::path::Path, files: &[String]) -> u64 {
    files
        .iter()
        .flat_map(|f| jitterlab::format::hlog::read_intervals(&out.join(f)).unwrap())
        .filter(|i| i.tag == "cpu0")
        .map(|i| i.histogram.len())
        .sum()
}

/// SIGKILL after two complete 500 ms segments: run.json, rewritten at each segment boundary,
/// carries CPU 0's figures up to that boundary (`end` `running`). Ground truth: its sample
/// count is at least the samples of the complete segments' logs (every sealed interval was
/// counted before the boundary's run.json was written) and at most one per 1 ms period of the
/// `duration_ns` of the same write (nothing counted that was not measured); `report` shows it.
#[test]
fn a_killed_monitor_keeps_the_figures_of_its_complete_segments() {
    let _x = exclusive();
    if !realtime_available("a_killed_monitor_keeps_the_figures_of_its_complete_segments") {
        return;
    }
    let (base, out) = temp_out();
    let mut m = Monitor::start(
        bin(),
        &out,
        &[
            "--cpus",
            "0",
            "--log-interval",
            "100ms",
            "--segment",
            "500ms",
            "--retain",
            "forever",
        ],
    );
    m.wait_for_samples(&[0], Duration::from_secs(20)).unwrap();
    let t0 = std::time::Instant::now();
    let complete = |run: &serde_json::Value| listed_segments(run).iter().filter(|s| s.1).count();
    while complete(&run_json(&out)) < 2 {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "no two complete segments in run.json"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    m.kill_hard();
    let run = run_json(&out);
    assert_eq!(run["ended"], "running", "{run}");
    let listed = listed_segments(&run);
    let sealed: Vec<String> = listed.iter().filter(|s| s.1).map(|s| s.0.clone()).collect();
    let cpu0 = thread(&run, 0);
    assert_eq!(cpu0["end"], "running", "{cpu0}");
    let samples = cpu0["samples"].as_u64().unwrap();
    let in_sealed = samples_in(&out, &sealed);
    // At most one wakeup per 1 ms period up to the rewrite (duration_ns is of the same write).
    let periods = run["duration_ns"].as_u64().unwrap() / 1_000_000 + 1;
    assert!(
        in_sealed > 0 && (in_sealed..=periods).contains(&samples),
        "run.json counts {samples} samples; complete segments hold {in_sealed}; {periods} periods"
    );
    assert!(cpu0["max_ns"].as_i64().unwrap() >= cpu0["p50_ns"].as_i64().unwrap());
    let html = base.path().join("report.html");
    let o = jitterlab(&[
        "report",
        out.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains(&format!(">{samples}<")),
        "the report lacks CPU 0's {samples} samples"
    );
}

/// D20: `monitor --dry-run` checks and prints the plan and exits 0 at once: nothing listens on
/// the port meanwhile (it is bound to check it is free and released), the --out directory is
/// not made. A port in use is refused as the real start would (exit 3).
#[test]
fn dry_run_starts_nothing() {
    let _x = exclusive();
    if !realtime_available("dry_run_starts_nothing") {
        return;
    }
    let (_base, out) = temp_out();
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut child = std::process::Command::new(bin())
        .args(["monitor", "--dry-run", "--cpus", "0", "--listen", &listen])
        .args(["--retain-size", "1MiB", "--load", "exec:true", "--out"])
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A monitor that measured would run until stopped: watch the port while it runs.
    let t0 = std::time::Instant::now();
    let mut listened = false;
    while child.try_wait().unwrap().is_none() && t0.elapsed() < Duration::from_secs(20) {
        listened |= std::net::TcpStream::connect(("127.0.0.1", port)).is_ok();
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let o = child.wait_with_output().unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(!listened, "something listened on {listen}: {t}");
    assert!(!out.exists(), "the result directory was made: {t}");
    assert!(t.contains("nothing was started"), "{t}");
    assert!(t.contains(&format!("http://{listen}/metrics")), "{t}");
    assert!(t.contains("loads/: each load's log at most"), "{t}");
    let held = TcpListener::bind("127.0.0.1:0").unwrap();
    let busy = format!("127.0.0.1:{}", held.local_addr().unwrap().port());
    let o = jitterlab(&["monitor", "--dry-run", "--cpus", "0", "--listen", &busy]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(text(&o).contains("is in use"), "{}", text(&o));
}

/// The size of the regular files in `dir` and in its subdirectories one level down (what
/// `--retain-size` bounds), and the names of its latency segments.
fn directory_bytes(dir: &std::path::Path) -> (u64, Vec<String>) {
    let (mut total, mut segments) = (0, Vec::new());
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let Ok(meta) = entry.metadata() else { continue };
        let name = entry.file_name().to_string_lossy().into_owned();
        if meta.is_dir() {
            total += directory_bytes(&entry.path()).0;
        } else {
            total += meta.len();
            // Segments, not their summaries (`latency-NNNNNN.hlog.summary`).
            if name.starts_with("latency-") && name.ends_with(".hlog") {
                segments.push(name);
            }
        }
    }
    (total, segments)
}

/// D10: with `--retain-size 64KiB`, 1 s segments and a load printing about 80 KB/s, the
/// directory (every file, load logs included) stays within the limit plus one segment, sampled
/// every 250 ms for 12 s; the load's log and its `.1` each stay within their bound (64 KiB / 4
/// / 2 = 8 KiB); latency history older than the current segment survives (at least 5 segment
/// files at the end). Before the fix the log grew to 800 KB in 12 s and retention deleted every
/// segment but the current one.
#[test]
fn retain_size_bounds_the_directory_with_a_printing_load() {
    let _x = exclusive();
    if !realtime_available("retain_size_bounds_the_directory_with_a_printing_load") {
        return;
    }
    let limit = 64 * 1024;
    let (_base, out) = temp_out();
    let mut m = Monitor::start(
        bin(),
        &out,
        &[
            "--cpus",
            "0",
            "--segment",
            "1s",
            "--retain-size",
            "64KiB",
            "--load",
            "exec:sh -c 'while true; do seq 1 1000; sleep 0.05; done'",
        ],
    );
    m.wait_for_samples(&[0], Duration::from_secs(20)).unwrap();
    let t0 = std::time::Instant::now();
    let (mut largest, mut largest_segment, mut segments) = (0, 0, Vec::new());
    while t0.elapsed() < Duration::from_secs(12) {
        let (bytes, names) = directory_bytes(&out);
        largest = largest.max(bytes);
        for name in &names {
            let len = std::fs::metadata(out.join(name)).map_or(0, |m| m.len());
            largest_segment = largest_segment.max(len);
        }
        segments = names;
        std::thread::sleep(Duration::from_millis(250));
    }
    let logs: Vec<(String, u64)> = std::fs::read_dir(out.join("loads"))
        .unwrap()
        .flatten()
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            (name, e.metadata().unwrap().len())
        })
        .collect();
    let (code, t) = m.terminate();
    assert_eq!(code, Some(0), "{t}");
    assert!(
        largest <= limit + largest_segment,
        "the directory reached {largest} bytes, limit {limit} + one segment {largest_segment}"
    );
    assert!(
        logs.iter().any(|(n, _)| n == "0-exec.log.1"),
        "the load's log was never rotated: {logs:?}"
    );
    assert!(logs.iter().all(|(_, len)| *len <= 8 * 1024), "{logs:?}");
    assert!(
        segments.len() >= 5,
        "latency history was deleted: only {segments:?} left"
    );
    // The events are rotated with the segments and deleted with them: no event file older
    // than the oldest segment kept, none at all once segment 0 is gone with its `run_start`;
    // the reader reads the rest in order, ending with `run_end`.
    let names = |parse: fn(&str) -> Option<u64>| -> Vec<u64> {
        let mut v: Vec<u64> = std::fs::read_dir(&out)
            .unwrap()
            .flatten()
            .filter_map(|e| parse(e.file_name().to_str()?))
            .collect();
        v.sort_unstable();
        v
    };
    use jitterlab::format::segments::{parse_events_file_name, parse_file_name};
    let (kept, event_files) = (names(parse_file_name), names(parse_events_file_name));
    assert!(!out.join("events.jsonl").exists());
    assert!(
        event_files.iter().all(|k| *k >= kept[0]),
        "event files {event_files:?} older than the oldest segment {}",
        kept[0]
    );
    let events = jitterlab::results::loaded::read_events(&out).unwrap();
    let last = events.last().map(|e| format!("{e:?}"));
    assert!(last.is_some_and(|e| e.starts_with("RunEnd")), "{events:?}");
    let starts = events
        .iter()
        .filter(|e| format!("{e:?}").starts_with("RunStart"));
    assert_eq!(
        starts.count(),
        usize::from(kept[0] == 0),
        "{kept:?} {events:?}"
    );
}

/// R05 against a running monitor: the 64 connections it answers at once (docs/monitor.md) all
/// held by clients that send nothing, and eight more that send a byte a second: ten scrapes,
/// 200 ms apart, are each answered 200 with samples within 2 s (before: eight such clients
/// held all 8 connections and 9 of 10 scrapes were answered 503).
#[test]
fn clients_holding_connections_deny_no_scrape() {
    let _x = exclusive();
    if !realtime_available("clients_holding_connections_deny_no_scrape") {
        return;
    }
    use std::io::{Read, Write};
    use std::net::TcpStream;
    let (_base, out) = temp_out();
    let mut m = Monitor::start(bin(), &out, &["--cpus", "0"]);
    m.wait_for_samples(&[0], Duration::from_secs(20)).unwrap();
    let port = m.port;
    let idle: Vec<TcpStream> = (0..64)
        .map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap())
        .collect();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let drippers: Vec<_> = (0..8)
        .map(|_| {
            let stop = std::sync::Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
                c.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
                let mut buf = [0u8; 256];
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let _ = c.write_all(b"G");
                    match c.read(&mut buf) {
                        Ok(0) => break,
                        Err(e)
                            if !matches!(
                                e.kind(),
                                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                            ) =>
                        {
                            break;
                        }
                        _ => {}
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    let mut slowest = Duration::ZERO;
    for k in 0..10 {
        let t = std::time::Instant::now();
        let (status, body) = get(port, "/metrics").unwrap();
        slowest = slowest.max(t.elapsed());
        assert_eq!(status, 200, "scrape {k}: {body}");
        assert!(
            sample(&body, "jitterlab_samples_total{cpu=\"0\"}").is_some_and(|n| n > 0.0),
            "scrape {k}: {body}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for d in drippers {
        d.join().unwrap();
    }
    drop(idle);
    let (code, t) = m.terminate();
    assert_eq!(code, Some(0), "{t}");
    assert!(
        slowest < Duration::from_secs(2),
        "a scrape took {slowest:?}"
    );
}

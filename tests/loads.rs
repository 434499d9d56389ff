//! The load generators: each does measurable work, reports it with units, and leaves nothing
//! behind; loads die with jitterlab even when it is SIGKILLed.

mod common;

use common::*;
use std::process::Command;
use std::time::{Duration, Instant};

/// Processes carrying a load marker of jitterlab process `pid` (see supervisor.rs).
fn load_processes(pid: u32) -> Vec<u32> {
    let marker = format!("JITTERLAB_LOAD={pid}:");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(env) = std::fs::read(entry.path().join("environ"))
            && env
                .split(|&b| b == 0)
                .any(|v| v.starts_with(marker.as_bytes()))
        {
            found.push(p);
        }
    }
    found
}

/// `jitterlab load SPECS --duration D --json`: the records, and the wall time it took.
fn load_json(specs: &[&str], duration: &str) -> (serde_json::Value, Duration) {
    let t0 = Instant::now();
    let mut args = vec!["load"];
    args.extend_from_slice(specs);
    args.extend(["--duration", duration, "--json"]);
    let child = Command::new(bin())
        .args(&args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let o = child.wait_with_output().unwrap();
    let took = t0.elapsed();
    assert_eq!(o.status.code(), Some(0), "{specs:?}: {}", text(&o));
    assert!(
        load_processes(pid).is_empty(),
        "{specs:?}: load processes left after jitterlab load ended"
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{specs:?}: not JSON ({e}): {}", text(&o)));
    (v, took)
}

fn figure(record: &serde_json::Value, name: &str, unit: &str) -> f64 {
    record["throughput"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name && t["unit"] == unit)
        .unwrap_or_else(|| panic!("no '{name}' in {unit} in {record}"))["value"]
        .as_f64()
        .unwrap()
}

#[test]
fn each_generator_does_measurable_work_and_stops_in_time() {
    let _g = exclusive();
    let io_dir = tempfile::tempdir().unwrap();
    let io = format!("io:size=1M,bs=64K,dir={}", io_dir.path().display());
    let specs = [
        "hackbench:groups=1,loops=20",
        "hackbench:groups=1,loops=20,mode=thread,ipc=pipe",
        "cpu:workers=1",
        "memory:size=8M",
        io.as_str(),
        "fork:count=4",
        "proc",
        "net:size=16K",
        "exec[restart=true]:sh -c 'exit 3'",
    ];
    let (v, took) = load_json(&specs, "1500ms");
    // Started, ran 1.5 s, stopped (SIGTERM, at most 300 ms grace, SIGKILL) and reaped: well
    // within a second of the end even with process start-up on a slow machine.
    assert!(took < Duration::from_millis(1500 + 2500), "took {took:?}");
    let records = v.as_array().unwrap();
    assert_eq!(records.len(), specs.len(), "{v}");
    for (r, spec) in records.iter().zip(&specs) {
        assert_eq!(r["spec"], *spec);
    }
    for h in &records[0..2] {
        let exchanges = figure(h, "exchanges", "exchanges");
        let sent = figure(h, "messages sent", "messages");
        let received = figure(h, "messages received", "messages");
        assert!(exchanges >= 1.0, "{h}");
        // One group: 20 senders x 20 receivers x 20 loops per exchange.
        assert_eq!(sent, exchanges * 20.0 * 20.0 * 20.0, "{h}");
        assert_eq!(received, sent, "{h}");
        // Both rates are over the same working time, so they keep the exchange's size.
        let exchange_rate = figure(h, "exchange rate", "exchanges/s");
        let message_rate = figure(h, "messages", "messages/s");
        assert!(exchange_rate > 0.0, "{h}");
        assert!(
            (message_rate - exchange_rate * 8000.0).abs() <= 1e-9 * message_rate,
            "{h}"
        );
    }
    assert!(figure(&records[2], "spin", "M iterations/s") > 0.0);
    // 8 MiB touched page by page at least once: 2048 faults.
    assert!(
        figure(&records[3], "touched", "MiB/s") * 1.5 >= 8.0,
        "{}",
        records[3]
    );
    assert!(figure(&records[3], "page faults", "faults/s") * 1.5 >= 2048.0);
    assert!(
        figure(&records[4], "written", "bytes") >= 1048576.0,
        "{}",
        records[4]
    );
    // Each pass reads back the whole 1 MiB file it wrote; 1.5 s is many passes.
    assert!(
        figure(&records[4], "read back", "bytes") >= 1048576.0,
        "{}",
        records[4]
    );
    assert_eq!(
        std::fs::read_dir(io_dir.path()).unwrap().count(),
        0,
        "io left files behind"
    );
    assert!(
        figure(&records[5], "reaped", "processes") >= 4.0,
        "{}",
        records[5]
    );
    assert!(
        figure(&records[6], "files", "files/s") > 0.0,
        "{}",
        records[6]
    );
    // At least one whole 16 KiB message came through the loopback connection.
    assert!(
        figure(&records[7], "bytes received", "bytes") >= 16384.0,
        "{}",
        records[7]
    );
    assert!(figure(&records[7], "received", "Mbit/s") > 0.0);
    // Restarted every 500 ms at most: 2 to 4 starts in 1.5 s.
    let starts = figure(&records[8], "starts", "starts");
    assert!((2.0..=4.0).contains(&starts), "{}", records[8]);
}

#[test]
fn cpu_workers_consume_cpu_time() {
    let _g = exclusive();
    // One worker spinning for 1.5 s on CPU 0 consumes up to 1.5 s of CPU (the kernel's
    // account, from wait4). Builds and other tests share the machine (the lock covers only
    // measuring tests), so the lower bound is loose; an idle or sleeping worker would use
    // a few milliseconds.
    let (v, _) = load_json(&["cpu:workers=1,cpus=0"], "1500ms");
    let cpu = figure(&v[0], "cpu time", "s");
    assert!((0.3..=1.6).contains(&cpu), "{v}");
}

#[test]
fn hackbench_alone_prints_time_like_hackbench() {
    let _g = exclusive();
    let o = jitterlab(&["load", "hackbench:groups=2,loops=50"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(
        t.contains(
            "Running in process mode with 2 groups using 40 file descriptors each (== 80 tasks)"
        ),
        "{t}"
    );
    assert!(
        t.contains("Each sender will pass 50 messages of 100 bytes"),
        "{t}"
    );
    let time = t
        .lines()
        .find_map(|l| l.strip_prefix("Time: "))
        .unwrap_or_else(|| panic!("no Time: line in {t}"));
    let seconds: f64 = time.trim().parse().unwrap();
    assert!(seconds > 0.0, "{t}");
    // 2 groups x 20 senders x 20 receivers x 50 messages.
    assert!(t.contains("messages received 40000 messages"), "{t}");
}

#[test]
fn sigkill_of_jitterlab_leaves_no_load_process() {
    let _g = exclusive();
    if !realtime_available("sigkill_of_jitterlab_leaves_no_load_process") {
        return;
    }
    let (_base, out) = temp_out();
    let mut child = Command::new(bin())
        .args([
            "run",
            "--duration",
            "60s",
            "--cpus",
            "0",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
            "--load",
            "hackbench:groups=1",
            "--load",
            "fork:count=8",
            "--load",
            "cpu:workers=1",
            // A program whose own children know nothing of jitterlab.
            "--load",
            "exec:sh -c 'sleep 300 & sleep 300'",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(10);
    // Four workers, the exec guardian, sh and its two sleeps at least.
    while load_processes(pid).len() < 8 {
        assert!(Instant::now() < deadline, "the loads did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let left = load_processes(pid);
        if left.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "load processes survived jitterlab's SIGKILL: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn run_with_loads_records_their_throughput_and_logs() {
    let _g = exclusive();
    if !realtime_available("run_with_loads_records_their_throughput_and_logs") {
        return;
    }
    let (_base, out) = temp_out();
    let o = jitterlab(&[
        "run",
        "--duration",
        "1500ms",
        "--cpus",
        "1",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
        "--load",
        "spike:cpu=1,every=500ms,len=1ms",
        "--load",
        "hackbench:groups=1,loops=10,cpus=housekeeping",
        "--load",
        "exec:sh -c 'echo hello from the load; sleep 100'",
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(
        t.lines().any(
            |l| l.starts_with("  load hackbench:groups=1,loops=10,cpus=housekeeping: ")
                && l.contains(" exchanges, ")
        ),
        "{t}"
    );
    let run = run_json(&out);
    let loads = run["loads"].as_array().unwrap();
    assert_eq!(loads.len(), 3, "{run}");
    assert_eq!(loads[0]["kind"], "spike");
    assert_eq!(loads[1]["kind"], "hackbench");
    assert_eq!(loads[2]["kind"], "exec");
    let sent = figure(&loads[1], "messages sent", "messages");
    assert!(sent >= 4000.0 && sent == figure(&loads[1], "messages received", "messages"));
    let log = std::fs::read_to_string(out.join("loads/2-exec.log")).unwrap();
    assert!(log.contains("hello from the load"), "{log}");
    assert!(out.join("loads/1-hackbench.log").is_file());
}

#[test]
fn bad_loads_exit_2_naming_the_key() {
    for (args, needles) in [
        (
            vec!["load", "hackbench:groups=0"],
            vec!["groups=0", "1 to 1000"],
        ),
        (
            vec!["load", "cpu:speed=9"],
            vec!["unknown parameter 'speed'", "workers"],
        ),
        (vec!["load", "memory:size=1P"], vec!["size=1P"]),
        (vec!["load", "memory:size=16T"], vec!["MemAvailable", "50%"]),
        (
            vec!["load", "io:dir=/nonexistent"],
            vec!["dir=/nonexistent", "not a directory"],
        ),
        (
            vec!["load", "exec:no-such-program-x --y"],
            vec!["'no-such-program-x' not found"],
        ),
        (
            vec!["load", "exec[restart=maybe]:true"],
            vec!["restart=maybe", "true or false"],
        ),
        (
            vec!["load", "hackbench:mode=fiber"],
            vec!["mode=fiber", "process, thread"],
        ),
        (
            vec!["load", "volcano"],
            vec!["unknown load 'volcano'", "hackbench"],
        ),
        (
            vec!["load", "cpu:cpus=housekeeping", "--duration", "1s"],
            vec!["housekeeping", "nothing is measured"],
        ),
        (vec!["load", "spike:cpu=0"], vec!["jitterlab run --load"]),
        (vec!["load", "cpu", "--duration", "1"], vec!["--duration 1"]),
    ] {
        let o = jitterlab(&args);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {t}");
        for n in needles {
            assert!(t.contains(n), "{args:?}: lacks '{n}': {t}");
        }
    }
}

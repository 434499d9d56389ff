//! The load generators: each does measurable work, reports it with units, and leaves nothing
//! behind; loads die with jitterlab even when it is SIGKILLed.

use crate::common;

use common::lifecycle::own_cgroup_dir;
use common::*;
use std::process::Command;
use std::time::{Duration, Instant};

/// Processes carrying a load marker of jitterlab process `pid` (see src/load/supervisor/).
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

/// MemAvailable in MiB, as the memory guard reads it.
fn mem_available_mib() -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap();
    let kib: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    kib / 1024
}

#[test]
fn stream_moves_memory_and_counts_in_the_memory_guard() {
    let _g = exclusive();
    let (v, _) = load_json(&["stream:size=8M"], "1500ms");
    let r = &v.as_array().unwrap()[0];
    assert_eq!(r["kind"], "stream", "{r}");
    // At least one whole triad over 8 MiB arrays (STREAM counts 3 x 8 MiB of traffic) in 1.5 s.
    assert!(figure(r, "passes", "passes") >= 1.0, "{r}");
    assert!(
        figure(r, "triad", "MB/s") * 1.5 >= 3.0 * 8.0 * 1.048576,
        "{r}"
    );
    // Its three arrays per worker count in the guard, alone and with a memory load: each
    // refused while planning (exit 2), before anything is allocated.
    let tenth = mem_available_mib() / 10;
    let alone = format!("stream:size={}M", 2 * tenth);
    let with = (
        format!("stream:size={tenth}M"),
        format!("memory:size={}M", 3 * tenth),
    );
    for (args, needles) in [
        (
            vec!["load", alone.as_str()],
            vec!["MemAvailable", alone.as_str()],
        ),
        (
            vec!["load", with.0.as_str(), with.1.as_str()],
            vec!["take", with.0.as_str(), with.1.as_str()],
        ),
    ] {
        let mut args = args.clone();
        args.extend(["--duration", "100ms"]);
        let o = jitterlab(&args);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {t}");
        for n in needles {
            assert!(t.contains(n), "{args:?}: lacks '{n}': {t}");
        }
    }
}

#[test]
fn memory_loads_that_can_run_at_the_same_time_are_summed() {
    // Each load alone is 30 % of MemAvailable (under the 50 % guard), two together 60 %.
    // Every case must be refused while planning (exit 2): nothing is allocated. The runs are
    // kept short all the same (--loops 1, 100 ms phases), so that a build without the check
    // allocates for a moment only.
    let each = mem_available_mib() * 3 / 10;
    let (a, b) = (
        format!("memory:size={each}M"),
        format!("memory:size={each}M,workers=1"),
    );
    let total = format!("{}.0 MiB", 2 * each);
    let base = tempfile::tempdir().unwrap();
    let scenario = |name: &str, body: &str| {
        let path = base.path().join(name);
        std::fs::write(&path, body).unwrap();
        path.to_str().unwrap().to_string()
    };
    let one_phase = scenario(
        "one.toml",
        &format!("[[phase]]\nlabel = \"mem\"\nduration = \"100ms\"\nloads = [\"{b}\"]\n"),
    );
    let both_in_a_phase = scenario(
        "both.toml",
        &format!("[[phase]]\nlabel = \"mem2\"\nduration = \"100ms\"\nloads = [\"{a}\", \"{b}\"]\n"),
    );
    let out = |name: &str| base.path().join(name).to_str().unwrap().to_string();
    let (out1, out2, out3, out4) = (out("1"), out("2"), out("3"), out("4"));
    for (args, names) in [
        (
            vec![
                "run", "--cpus", "0", "--loops", "1", "--out", &out1, "--load", &a, "--load", &b,
            ],
            vec![a.clone(), b.clone()],
        ),
        (
            vec![
                "run",
                "--cpus",
                "0",
                "--out",
                &out2,
                "--load",
                &a,
                "--scenario",
                &one_phase,
            ],
            vec![a.clone(), b.clone(), "phase 0 ('mem')".into()],
        ),
        (
            vec![
                "run",
                "--cpus",
                "0",
                "--out",
                &out3,
                "--scenario",
                &both_in_a_phase,
            ],
            vec![a.clone(), b.clone(), "phase 0 ('mem2')".into()],
        ),
        (
            vec!["load", &a, &b, "--duration", "100ms"],
            vec![a.clone(), b.clone()],
        ),
        (
            vec![
                "sweep",
                "--cpus",
                "0",
                "--loops",
                "1",
                "--out",
                &out4,
                "--load",
                "memory:size={}",
                "--levels",
                &format!("{each}M"),
                "--load",
                &b,
            ],
            vec![format!("sweep level {each}M"), b.clone()],
        ),
    ] {
        let o = jitterlab(&args);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {t}");
        for n in names
            .iter()
            .map(String::as_str)
            .chain([total.as_str(), "MemAvailable (", "50%"])
        {
            assert!(t.contains(n), "{args:?}: lacks '{n}': {t}");
        }
    }
}

/// The pid of the load worker of jitterlab process `pid` (its only one), once it runs.
fn wait_for_worker(pid: u32) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(w) = load_processes(pid).into_iter().find(|p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| c.windows(13).any(|w| w == b"__load-worker"))
        }) {
            return w;
        }
        assert!(Instant::now() < deadline, "the load worker did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_load_killed_by_a_signal_makes_jitterlab_load_exit_4() {
    let _g = exclusive();
    let child = Command::new(bin())
        .args(["load", "cpu:workers=1,cpus=0", "--duration", "20s"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let worker = wait_for_worker(child.id());
    std::thread::sleep(Duration::from_millis(200));
    // As the OOM killer would.
    unsafe { libc::kill(worker as i32, libc::SIGKILL) };
    let t0 = Instant::now();
    let o = child.wait_with_output().unwrap();
    let t = text(&o);
    assert!(t0.elapsed() < Duration::from_secs(5), "not stopped: {t}");
    assert_eq!(o.status.code(), Some(4), "{t}");
    assert!(
        t.contains("load 'cpu:workers=1,cpus=0' was killed by signal 9 (SIGKILL)"),
        "{t}"
    );
}

#[test]
fn a_load_killed_by_a_signal_fails_the_run_and_is_recorded_and_shown() {
    let _g = exclusive();
    if !realtime_available("a_load_killed_by_a_signal_fails_the_run_and_is_recorded_and_shown") {
        return;
    }
    let (_base, out) = temp_out();
    let child = Command::new(bin())
        .args([
            "run",
            "--duration",
            "20s",
            "--cpus",
            "0",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
            "--load",
            "cpu:workers=1,cpus=1",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let worker = wait_for_worker(child.id());
    std::thread::sleep(Duration::from_millis(500));
    unsafe { libc::kill(worker as i32, libc::SIGKILL) };
    let o = child.wait_with_output().unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(4), "{t}");
    let killed = "load 'cpu:workers=1,cpus=1' was killed by signal 9 (SIGKILL)";
    assert!(t.contains(killed), "the summary shows it: {t}");
    // With --quiet too, stderr says why and where (issue 39 L-a: only the summary on stdout
    // said it).
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("jitterlab: the run failed: ") && l.contains(killed))
            && stderr.contains(&format!("the results are in {}", out.display())),
        "{stderr}"
    );
    let run = run_json(&out);
    assert_eq!(run["ended"], "failed", "{run}");
    assert!(
        run["end_reason"].as_str().unwrap().contains(killed),
        "{run}"
    );
    let load = &run["loads"][0];
    assert_eq!(load["ended"], "killed", "{run}");
    assert!(
        load["end_reason"]
            .as_str()
            .unwrap()
            .contains("killed by signal 9 (SIGKILL)"),
        "{run}"
    );
    // It stopped the run: not 20 s of measuring.
    assert!(
        run["duration_ns"].as_u64().unwrap() < 10_000_000_000,
        "{run}"
    );
}

/// An `exec` load whose descendants leave its process group in three ways, each a `sleep` with
/// a unique argument `<tag>1`, `<tag>2`, `<tag>3`: setsid(), setpgid(), and a daemon that forks
/// twice with a setsid() between.
fn escaping_load(tag: &str) -> String {
    format!(
        "exec:bash -c \"setsid sleep {tag}1 & \
         perl -e 'setpgrp(0, 0); exec qw(sleep {tag}2)' & \
         perl -MPOSIX -e 'fork and exit; setsid; fork and exit; exec qw(sleep {tag}3)'; \
         sleep 1000\""
    )
}

/// Pids of the processes whose command line is `sleep ARG`.
fn sleeps(arg: &str) -> Vec<u32> {
    let wanted = format!("sleep\0{arg}\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| c.ends_with(wanted.as_bytes()))
        })
        .collect()
}

/// The cgroups jitterlab process `pid` made for its loads that still exist.
fn load_cgroups(pid: u32) -> Vec<String> {
    let Some(dir) = own_cgroup_dir() else {
        return Vec::new();
    };
    let prefix = format!("jitterlab-loads-{pid}-");
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default()
}

/// Starts `args` (a jitterlab command with [`escaping_load`]`(tag)`), waits until the three
/// escapers run, ends jitterlab (SIGKILL, or waits for its end), and checks that no escaper
/// survives and no cgroup is left.
fn check_no_escape(args: &[&str], tag: &str, sigkill: bool) {
    let mut child = Command::new(bin())
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let names: Vec<String> = (1..=3).map(|k| format!("{tag}{k}")).collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    while names.iter().any(|n| sleeps(n).is_empty()) {
        assert!(
            Instant::now() < deadline,
            "{args:?}: the escapers did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Where cgroups can be used, each is in a cgroup of the load's own, under a cgroup of this
    // jitterlab's (checked after the clean-up, so that a failure leaves nothing running).
    let outside_cgroup: Vec<String> = names
        .iter()
        .filter(|n| {
            own_cgroup_dir().is_some()
                && sleeps(n).iter().any(|p| {
                    !std::fs::read_to_string(format!("/proc/{p}/cgroup"))
                        .unwrap_or_default()
                        .contains(&format!("/jitterlab-loads-{pid}-"))
                })
        })
        .cloned()
        .collect();
    let status = if sigkill {
        child.kill().unwrap();
        child.wait().unwrap();
        None
    } else {
        let o = child.wait_with_output().unwrap();
        Some(o)
    };
    // After a SIGKILL the reaper needs a moment.
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let left: Vec<u32> = names.iter().flat_map(|n| sleeps(n)).collect();
        let cgroups = load_cgroups(pid);
        if left.is_empty() && cgroups.is_empty() {
            break;
        }
        if Instant::now() > deadline {
            for p in &left {
                unsafe { libc::kill(*p as i32, libc::SIGKILL) };
            }
            panic!("{args:?} (SIGKILL: {sigkill}): survivors {left:?}, cgroups left {cgroups:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        outside_cgroup.is_empty(),
        "{args:?}: not in a load cgroup: {outside_cgroup:?}"
    );
    if let Some(o) = status {
        assert!(matches!(o.status.code(), Some(0)), "{args:?}: {}", text(&o));
    }
}

#[test]
fn descendants_that_leave_the_process_group_end_with_jitterlab_load() {
    let _g = exclusive();
    for (tag, sigkill) in [("1001.1", false), ("1001.2", true)] {
        let load = escaping_load(tag);
        check_no_escape(&["load", &load, "--duration", "2s"], tag, sigkill);
    }
}

#[test]
fn descendants_that_leave_the_process_group_end_with_jitterlab_run() {
    let _g = exclusive();
    if !realtime_available("descendants_that_leave_the_process_group_end_with_jitterlab_run") {
        return;
    }
    for (tag, sigkill) in [("1001.3", false), ("1001.4", true)] {
        let (_base, out) = temp_out();
        let load = escaping_load(tag);
        check_no_escape(
            &[
                "run",
                "--duration",
                "3s",
                "--cpus",
                "0",
                "--quiet",
                "--out",
                out.to_str().unwrap(),
                "--load",
                &load,
            ],
            tag,
            sigkill,
        );
    }
}

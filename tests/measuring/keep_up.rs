//! The drain side keeps up whatever the load: a traced run under hackbench with 40 groups
//! (1600 processes on this 2-vCPU machine) loses no sample. Before the drain side ran at a
//! real-time priority, the same run dropped up to a quarter of the samples on each CPU (the
//! recorder, a normal thread, waited seconds for a CPU), and the late wakeups were the ones
//! lost.

use crate::common::{exclusive, jitterlab, run_json, temp_out, text, tracing_available};

/// Every thread's samples and missed periods add up to the periods of the run, none is
/// dropped, and the trace lost no event; the drain side ran at the default priority.
#[test]
fn a_traced_run_under_hackbench_40_loses_nothing() {
    let test = "a_traced_run_under_hackbench_40_loses_nothing";
    if !tracing_available(test) {
        return;
    }
    let _lock = exclusive();
    let (_base, out) = temp_out();
    let o = jitterlab(&[
        "run",
        "--duration",
        "8s",
        "--trace",
        "--load",
        "hackbench:groups=40",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "run failed:\n{}", text(&o));
    let run = run_json(&out);
    assert_eq!(
        run["plan"]["drain_priority"], 1,
        "the default drain priority"
    );
    let threads = run["threads"].as_array().unwrap();
    assert!(!threads.is_empty());
    for t in threads {
        let cpu = &t["cpu"];
        let samples = t["samples"].as_u64().unwrap();
        let missed = t["missed_periods"].as_u64().unwrap();
        let dropped = t["dropped_records"].as_u64().unwrap();
        assert_eq!(
            dropped, 0,
            "CPU {cpu}: {dropped} samples dropped under hackbench 40 with --trace ({samples} recorded)"
        );
        // 8 s at 1 ms: 8000 periods, each a sample or a missed period (the stop may cut the
        // last one).
        assert!(
            (7990..=8001).contains(&(samples + missed)),
            "CPU {cpu}: {samples} samples and {missed} missed periods in 8 s at 1 ms"
        );
    }
    let lost = run["trace"]["events_lost"].as_u64().unwrap();
    assert_eq!(lost, 0, "the trace lost {lost} events under hackbench 40");
}

/// The CPUs each thread of `pid` may run on, from /proc/PID/task/TID/status
/// (`Cpus_allowed_list`), by thread name (`comm`); a thread that ended while being read is
/// left out.
fn allowed_cpus(pid: u32) -> Vec<(String, String)> {
    let mut threads = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return threads;
    };
    for task in tasks.flatten() {
        let dir = task.path();
        let (Ok(comm), Ok(status)) = (
            std::fs::read_to_string(dir.join("comm")),
            std::fs::read_to_string(dir.join("status")),
        ) else {
            continue;
        };
        if let Some(list) = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        {
            threads.push((comm.trim().to_string(), list.trim().to_string()));
        }
    }
    threads
}

/// `--housekeeping 0 --cpus 1`: while the run measures, the main thread (the drain side), the
/// trace reader and the load supervisor may run on CPU 0 only, the measuring thread on CPU 1
/// only; the processes of a `cpus=housekeeping` load on CPU 0; run.json says so.
#[test]
fn housekeeping_cpus_hold_everything_but_the_measurement() {
    let test = "housekeeping_cpus_hold_everything_but_the_measurement";
    if !crate::common::two_cpus_online(test) || !tracing_available(test) {
        return;
    }
    let _lock = exclusive();
    let (_base, out) = temp_out();
    let child = std::process::Command::new(crate::common::bin())
        .args([
            "run",
            "--duration",
            "3s",
            "--cpus",
            "1",
            "--housekeeping",
            "0",
            "--trace",
            "--load",
            "cpu:cpus=housekeeping",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Measuring starts within a second (loads first, then a 50 ms lead-in).
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let threads = allowed_cpus(child.id());
    let load_threads: Vec<(String, String)> = children(child.id())
        .into_iter()
        .flat_map(allowed_cpus)
        .collect();
    let status = child.wait_with_output().unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let find = |name: &str| {
        threads
            .iter()
            .find(|(comm, _)| comm == name)
            .map(|(_, cpus)| cpus.as_str())
            .unwrap_or_else(|| panic!("no thread {name} in {threads:?}"))
    };
    assert_eq!(find("jitterlab"), "0", "the drain side: {threads:?}");
    assert_eq!(find("jl-trace-reader"), "0", "{threads:?}");
    assert_eq!(find("jl-loads"), "0", "{threads:?}");
    assert_eq!(find("jl-measure-1"), "1", "{threads:?}");
    let run = run_json(&out);
    assert_eq!(run["plan"]["housekeeping"], serde_json::json!([0]));
    assert!(!load_threads.is_empty(), "the cpu load's processes");
    assert!(
        load_threads.iter().all(|(_, cpus)| cpus == "0"),
        "the cpus=housekeeping load: {load_threads:?}"
    );
}

/// The processes whose parent is `pid`.
fn children(pid: u32) -> Vec<u32> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .flatten()
        .filter_map(|p| p.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| {
            std::fs::read_to_string(format!("/proc/{p}/status")).is_ok_and(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("PPid:"))
                    .is_some_and(|v| v.trim() == pid.to_string())
            })
        })
        .collect()
}

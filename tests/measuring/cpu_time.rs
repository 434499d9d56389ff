//! run.json's `cpu_time`: what jitterlab's own threads cost, checked against the kernel's own
//! account of the measuring thread, read from outside the process while it runs.

use crate::common;

use common::*;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const INTERVAL_NS: u64 = 1_000_000;
const SECONDS: u64 = 2;

/// The measuring thread's run time as /proc/PID/task/TID/schedstat shows it (first field, ns),
/// polled every 2 ms while the run lasts: the last reading is the kernel's figure a few ms
/// before the thread ended. Returns it with the run's exit status.
fn run_polling_schedstat(cpu: usize, out: &Path) -> (Option<u64>, std::process::ExitStatus) {
    let mut child = Command::new(bin())
        .args([
            "run",
            "--duration",
            &format!("{SECONDS}s"),
            "--interval",
            "1ms",
        ])
        .args(["--cpus", &cpu.to_string(), "--quiet", "--out"])
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the jitterlab binary starts");
    let tasks = format!("/proc/{}/task", child.id());
    let name = format!("jl-measure-{cpu}");
    let mut last = None;
    let deadline = Instant::now() + Duration::from_secs(SECONDS + 30);
    loop {
        if let Some(status) = child.try_wait().expect("wait on the run") {
            return (last, status);
        }
        assert!(Instant::now() < deadline, "the run did not end");
        for task in std::fs::read_dir(&tasks).into_iter().flatten().flatten() {
            let read = |file: &str| std::fs::read_to_string(task.path().join(file));
            if read("comm").is_ok_and(|c| c.trim() == name)
                && let Some(ns) = read("schedstat")
                    .ok()
                    .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
            {
                last = Some(ns);
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn measuring_thread_cpu_time_is_the_kernels_figure_at_its_end() {
    if !realtime_available("measuring_thread_cpu_time_is_the_kernels_figure_at_its_end") {
        return;
    }
    let cpu = *online_cpus().last().unwrap();
    let _lock = exclusive();
    with_one_retry("cpu_time against schedstat", || {
        let (_base, out) = temp_out();
        let (polled, status) = run_polling_schedstat(cpu, &out);
        if !status.success() {
            return Err(format!("the run failed: {status}"));
        }
        let polled = polled.ok_or("the measuring thread was never seen in /proc")?;
        let run = run_json(&out);
        let cpu_time = &run["cpu_time"];
        let thread_ns = cpu_time["measuring_threads"][0]["cpu_time_ns"]
            .as_u64()
            .ok_or("no cpu_time.measuring_threads[0].cpu_time_ns")?;
        assert_eq!(cpu_time["measuring_threads"][0]["cpu"], cpu);
        // Read by the thread as its last act: at least what the kernel showed a moment before,
        // and more only by the few wakeups after the last poll (a VM stall of the poller
        // included).
        if thread_ns < polled || thread_ns > polled + polled / 5 + 200_000 {
            return Err(format!(
                "cpu_time_ns {thread_ns} against the last schedstat reading {polled}"
            ));
        }
        // An idle sleeper: on the CPU a small part of its 2 s, and at least a syscall's worth
        // of time (100 ns) per wakeup.
        let t = thread(&run, cpu);
        let wakeups = t["samples"].as_u64().unwrap() + t["dropped_records"].as_u64().unwrap();
        // Every period is a wakeup or a missed period (a wakeup a period or more late).
        let periods = wakeups + t["missed_periods"].as_u64().unwrap();
        let expected = SECONDS * 1_000_000_000 / INTERVAL_NS;
        if periods + 5 < expected || periods > expected + 1 {
            return Err(format!("{periods} periods in {SECONDS} s at 1 ms"));
        }
        assert!(
            thread_ns > wakeups * 100 && thread_ns < SECONDS * 1_000_000_000 / 10,
            "cpu_time_ns {thread_ns} for {wakeups} wakeups of a sleeping thread"
        );
        // The process total holds the measuring and the recorder thread (getrusage rounds to us).
        let field = |name: &str| cpu_time[name].as_u64().unwrap();
        let process = field("process_user_ns") + field("process_system_ns");
        let recorder = field("recorder_thread_ns");
        assert!(recorder > 0);
        assert!(
            thread_ns + recorder <= process + 10_000,
            "measuring {thread_ns} + recorder {recorder} > process {process}"
        );

        // `compare --json` divides the same figures; a run.json written before the field
        // (here: the same run without it) compares with null.
        let old = out.with_file_name("old");
        std::fs::create_dir(&old).unwrap();
        for f in ["latency.hlog", "events.jsonl"] {
            std::fs::copy(out.join(f), old.join(f)).unwrap();
        }
        let mut without = run.clone();
        without.as_object_mut().unwrap().remove("cpu_time");
        std::fs::write(old.join("run.json"), without.to_string()).unwrap();
        let compared = jitterlab(&[
            "compare",
            "--json",
            out.to_str().unwrap(),
            old.to_str().unwrap(),
        ]);
        assert!(compared.status.success(), "{}", text(&compared));
        let json: serde_json::Value = serde_json::from_slice(&compared.stdout).unwrap();
        let scope = json["scopes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["cpu"] == cpu)
            .expect("a scope for the CPU");
        let per_cycle = scope["cpu_time_per_cycle_ns"][0].as_f64().unwrap();
        let expected = thread_ns as f64 / wakeups as f64;
        assert!(
            (per_cycle - expected).abs() < 1e-6 * expected,
            "{per_cycle} vs {expected}"
        );
        assert!(scope["cpu_time_per_cycle_ns"][1].is_null());
        Ok(())
    });
}

/// Each CPU's steal ticks from /proc/stat, read here independently of jitterlab.
fn steal_ticks(cpu: usize) -> u64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap();
    let line = stat
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&format!("cpu{cpu}")))
        .expect("a cpuN line");
    line.split_whitespace().nth(8).unwrap().parse().unwrap()
}

#[test]
fn steal_over_the_run_lies_within_the_counters_read_around_it() {
    if !realtime_available("steal_over_the_run_lies_within_the_counters_read_around_it") {
        return;
    }
    let cpus = online_cpus();
    let _lock = exclusive();
    let (_base, out) = temp_out();
    let before: Vec<u64> = cpus.iter().map(|&c| steal_ticks(c)).collect();
    let started = Instant::now();
    let o = jitterlab(&[
        "run",
        "--duration",
        "1s",
        "--interval",
        "1ms",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    let elapsed = started.elapsed();
    let after: Vec<u64> = cpus.iter().map(|&c| steal_ticks(c)).collect();
    assert!(o.status.success(), "{}", text(&o));
    let run = run_json(&out);
    // The run does not wait for a steal window in its snapshot.
    assert!(run["system"]["steal_recent_percent"].is_null());
    let steal = &run["steal"];
    let tick = steal["tick_ns"].as_u64().expect("steal.tick_ns");
    let window = steal["window_ns"].as_u64().unwrap();
    // The lead-in, the second and the drain: inside what this test saw from outside.
    assert!(
        window >= 1_000_000_000 && window <= elapsed.as_nanos() as u64,
        "window {window} ns, the process lasted {elapsed:?}"
    );
    let listed = steal["cpus"].as_array().unwrap();
    assert_eq!(listed.len(), cpus.len());
    for (i, &cpu) in cpus.iter().enumerate() {
        let c = listed
            .iter()
            .find(|c| c["cpu"] == cpu)
            .expect("each CPU listed");
        let ns = c["steal_ns"].as_u64().unwrap();
        assert_eq!(ns % tick, 0, "a whole number of ticks");
        // Read inside the process's life: never more than the ticks around it.
        assert!(
            ns <= (after[i] - before[i]) * tick,
            "CPU {cpu}: {ns} ns against {} ticks around the run",
            after[i] - before[i]
        );
        let warned = run["warnings"].as_array().unwrap().iter().any(|w| {
            w.as_str()
                .unwrap()
                .contains(&format!("of CPU {cpu}'s time"))
        });
        assert_eq!(warned, ns > 0, "a warning exactly when CPU {cpu} lost time");
    }
}

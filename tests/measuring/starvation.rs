//! A run that real-time loads cannot starve (issue 39, high): `run --load
//! cpu:policy=fifo,prio=50` (the docs' mapping of FirmTimers' `generate_load -r`) puts a FIFO 50
//! spinner on every CPU. jitterlab's own threads ran at FIFO 1 below them: the run hung for
//! ever, SIGINT did nothing, and SIGKILL left `ended: running`. Now they run above the loads
//! (plan/drain), so the run ends at its duration, and a SIGINT ends it within a second.
//!
//! Every child here has a hard kill after [`HARD_LIMIT`]: a regression fails, never hangs.

use crate::common;

use common::*;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The spinners: the docs' `generate_load -r`, one worker per CPU.
const SPINNERS: &str = "cpu:policy=fifo,prio=50";
/// After this, a child is killed (SIGKILL) and the test fails.
const HARD_LIMIT: Duration = Duration::from_secs(60);

/// Runs `jitterlab run` with `args`; when `interrupt_after` is given, sends SIGINT that long
/// after the run's first due time... as near as the test can tell: after the start plus that
/// long. Returns the time from the SIGINT (or from the start) to the end, and the output.
fn run_beside_spinners(
    args: &[&str],
    interrupt_after: Option<Duration>,
) -> (Duration, std::process::Output) {
    let started = Instant::now();
    let child = Command::new(bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("jitterlab starts");
    let pid = child.id() as libc::pid_t;
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let (sent_tx, sent_rx) = std::sync::mpsc::channel::<Instant>();
    let watchdog = std::thread::spawn(move || {
        if let Some(after) = interrupt_after {
            if done_rx.recv_timeout(after).is_ok() {
                return;
            }
            // SAFETY: plain syscall; the child is reaped only after this thread is done.
            unsafe { libc::kill(pid, libc::SIGINT) };
            let _ = sent_tx.send(Instant::now());
        }
        if done_rx.recv_timeout(HARD_LIMIT).is_err() {
            // SAFETY: as above.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    });
    let output = child.wait_with_output().unwrap();
    let ended = Instant::now();
    let _ = done_tx.send(());
    watchdog.join().unwrap();
    let from = sent_rx.try_recv().unwrap_or(started);
    (ended.duration_since(from), output)
}

/// The intervals of latency.hlog per measured CPU: each CPU has at least `min` of them, in
/// order, and every one is readable.
fn completed_intervals(out: &std::path::Path, cpus: &[usize], min: usize) -> usize {
    let intervals = jitterlab::format::hlog::read_intervals(&out.join("latency.hlog"))
        .expect("latency.hlog reads");
    for cpu in cpus {
        let tag = format!("cpu{cpu}");
        let n = intervals.iter().filter(|i| i.tag == tag).count();
        assert!(
            n >= min,
            "{tag}: {n} intervals in latency.hlog, expected {min} or more"
        );
    }
    intervals.len()
}

#[test]
fn a_sigint_stops_a_run_beside_real_time_spinners_on_every_cpu() {
    if !realtime_available("a_sigint_stops_a_run_beside_real_time_spinners_on_every_cpu") {
        return;
    }
    let _x = exclusive();
    let (_base, out) = temp_out();
    let args = [
        "run",
        "--duration",
        "30s",
        "--log-interval",
        "100ms",
        "--load",
        SPINNERS,
        "-q",
        "--out",
        out.to_str().unwrap(),
    ];
    // About 2 s of measuring after the setup (which the spinners, started first, slow down).
    let (took, o) = run_beside_spinners(&args, Some(Duration::from_millis(2500)));
    eprintln!("starvation: run beside FIFO 50 spinners on every CPU ended {took:?} after SIGINT");
    assert!(
        took < Duration::from_secs(5),
        "the run took {took:?} to end after SIGINT: {}",
        text(&o)
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let run = run_json(&out);
    assert_eq!(run["ended"], "interrupted", "{}", text(&o));
    let drain = run["plan"]["drain_priority"].as_i64();
    assert_eq!(
        drain,
        Some(51),
        "above the spinners, below the measuring threads"
    );
    let n = completed_intervals(&out, &online_cpus(), 3);
    eprintln!("starvation: {n} intervals in latency.hlog");
}

#[test]
fn a_run_beside_real_time_spinners_on_every_cpu_ends_at_its_duration() {
    if !realtime_available("a_run_beside_real_time_spinners_on_every_cpu_ends_at_its_duration") {
        return;
    }
    let _x = exclusive();
    let (_base, out) = temp_out();
    let args = [
        "run",
        "--duration",
        "3s",
        "--load",
        SPINNERS,
        "-q",
        "--out",
        out.to_str().unwrap(),
    ];
    let (took, o) = run_beside_spinners(&args, None);
    eprintln!("starvation: a 3 s run beside FIFO 50 spinners on every CPU took {took:?}");
    // The setup and the end (the loads stopped and reaped) under the spinners, generously.
    assert!(
        took < Duration::from_secs(20),
        "took {took:?}: {}",
        text(&o)
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let run = run_json(&out);
    assert_eq!(run["ended"], "completed", "{}", text(&o));
    let measured = run["duration_ns"].as_u64().unwrap();
    assert!(
        (2_900_000_000..=3_100_000_000).contains(&measured),
        "measured {measured} ns of a 3 s run"
    );
    completed_intervals(&out, &online_cpus(), 3);
}

#[test]
fn a_load_that_would_leave_jitterlab_no_cpu_is_refused_naming_both_priorities() {
    // Refused before anything starts: nothing is measured, but the lock keeps the test from
    // running beside a measurement it could not disturb anyway.
    let _x = exclusive();
    let (_base, out) = temp_out();
    let o = jitterlab(&[
        "run",
        "--duration",
        "3s",
        "--load",
        "cpu:prio=94",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let all = text(&o);
    assert!(
        all.contains("SCHED_FIFO 94") && all.contains("at most 94"),
        "{all}"
    );
    assert!(!out.exists(), "a refused run made {}", out.display());
    let o = jitterlab(&["load", "cpu:prio=99", "--duration", "1s"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("SCHED_FIFO 99"), "{}", text(&o));
}

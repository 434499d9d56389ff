//! The measuring loop's own starvation guard (issue 39, N24): `run -i 1us` on every CPU kept
//! every CPU busy with the measuring threads (FIFO 95); jitterlab's own threads (one priority
//! below) never ran, SIGINT and SIGTERM were never served, only SIGKILL ended the run, and
//! run.json said `ended: running`. Now a measuring thread whose runner has not run for a second
//! gives its CPU up for a bounded time (counted), and the stop is served.
//!
//! The test's own watchdog, which sends the SIGINT and (on a failure) the SIGKILL, runs at
//! SCHED_FIFO 99: at a normal policy it would wait behind the measuring threads too.

use crate::common;

use common::*;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// After this, the child is killed (SIGKILL) and the test fails.
const HARD_LIMIT: Duration = Duration::from_secs(20);

/// Runs jitterlab with `args`, SIGINT `after` its start (from a FIFO 99 thread); returns the
/// time from the SIGINT to the end, and the output.
fn interrupted_at(args: &[&str], after: Duration) -> (Duration, std::process::Output) {
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
        let param = libc::sched_param { sched_priority: 99 };
        // SAFETY: plain syscall on this thread (0: the caller).
        let set = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
        assert_eq!(set, 0, "the watchdog takes SCHED_FIFO 99");
        if done_rx.recv_timeout(after).is_ok() {
            return;
        }
        // SAFETY: plain syscall; the child is reaped only after this thread is done.
        unsafe { libc::kill(pid, libc::SIGINT) };
        let _ = sent_tx.send(Instant::now());
        if done_rx.recv_timeout(HARD_LIMIT).is_err() {
            // SAFETY: as above.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    });
    let output = child.wait_with_output().unwrap();
    let ended = Instant::now();
    let _ = done_tx.send(());
    watchdog.join().unwrap();
    let sent = sent_rx
        .try_recv()
        .expect("the run was still going at the SIGINT");
    (ended.duration_since(sent), output)
}

/// `run -i 1us` on every CPU, no length: the SIGINT at 2 s ends it `interrupted` within a few
/// seconds (the guard gives the runner a turn within about a second), with its intervals, and
/// the threads' yields are said in run.json.
#[test]
fn a_sigint_stops_a_run_whose_interval_keeps_every_cpu_busy() {
    if !realtime_available("a_sigint_stops_a_run_whose_interval_keeps_every_cpu_busy") {
        return;
    }
    let _x = exclusive();
    let (_base, out) = temp_out();
    let args = [
        "run",
        "-i",
        "1us",
        "--log-interval",
        "100ms",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ];
    let (took, o) = interrupted_at(&args, Duration::from_secs(2));
    eprintln!("starvation_guard: run -i 1us ended {took:?} after SIGINT");
    assert_ne!(o.status.code(), None, "SIGKILLed: {}", text(&o));
    assert!(
        took < Duration::from_secs(4),
        "the run took {took:?} to end after SIGINT: {}",
        text(&o)
    );
    let run = run_json(&out);
    assert_eq!(run["ended"], "interrupted", "{}", text(&o));
    let intervals = jitterlab::format::hlog::read_intervals(&out.join("latency.hlog"))
        .expect("latency.hlog reads");
    assert!(!intervals.is_empty(), "no completed interval");
    let warnings = run["warnings"].to_string();
    eprintln!("starvation_guard: warnings {warnings}");
}

/// The same through the drop-in with rt-tests' options (`cyclictest -i 1 -d 0 -t`).
#[test]
fn a_sigint_stops_the_cyclictest_drop_in_at_a_1us_interval() {
    if !realtime_available("a_sigint_stops_the_cyclictest_drop_in_at_a_1us_interval") {
        return;
    }
    let _x = exclusive();
    let (_base, out) = temp_out();
    let args = [
        "cyclictest",
        "-q",
        "-i",
        "1",
        "-d",
        "0",
        "-t",
        "-m",
        "-p",
        "95",
        "--jitterlab-out",
        out.to_str().unwrap(),
    ];
    let (took, o) = interrupted_at(&args, Duration::from_secs(2));
    eprintln!("starvation_guard: cyclictest -i 1 -d 0 -t ended {took:?} after SIGINT");
    assert_ne!(o.status.code(), None, "SIGKILLed: {}", text(&o));
    assert!(
        took < Duration::from_secs(4),
        "the drop-in took {took:?} to end after SIGINT: {}",
        text(&o)
    );
    assert_eq!(run_json(&out)["ended"], "interrupted", "{}", text(&o));
}

//! The run session as a library: a session without an end (what `jitterlab monitor` will run)
//! measures until it is stopped and leaves a complete record, and a dropped session gives back
//! everything it took.

use crate::common;

use clap::Parser;
use common::{exclusive, realtime_available, temp_out};
use jitterlab::cli::{Cli, Command};
use jitterlab::format::events::{Event, read_events};
use jitterlab::format::run_record::Ended;
use jitterlab::plan::{RunLength, RunPlan};
use jitterlab::session::{DRAIN_EVERY, Progress, Session, SessionOptions};
use std::path::Path;

const INTERVAL_NS: u64 = 1_000_000;

/// A plan for one thread on CPU 0 at 1 ms, without an end, writing to `out`.
fn endless_plan(out: &Path) -> RunPlan {
    let cli = Cli::parse_from([
        "jitterlab",
        "run",
        "--cpus",
        "0",
        "--interval",
        "1ms",
        "--out",
        out.to_str().unwrap(),
    ]);
    let Command::Run(args) = cli.command else {
        unreachable!("parsed a run")
    };
    let mut plan = jitterlab::commands::run::resolve(&args).expect("a valid plan");
    plan.length = RunLength::Endless;
    plan
}

fn options() -> SessionOptions {
    SessionOptions {
        quiet: true,
        command_line: vec!["session test".into()],
    }
}

/// Polled for about a second, a session without an end keeps measuring; stopped, it ends
/// `interrupted` with every wakeup accounted for: samples plus missed periods are the periods
/// that passed before the stop (the thread ends within its period of it), the cumulative
/// histogram after each poll counts every sample taken so far, and latency.hlog holds every
/// sample of the record.
#[test]
fn a_session_without_an_end_measures_until_stopped() {
    let _x = exclusive();
    if !realtime_available("a_session_without_an_end_measures_until_stopped") {
        return;
    }
    let (_base, out) = temp_out();
    let plan = endless_plan(&out);
    let mut session = Session::start(&plan, options()).expect("the session starts");
    let mut last_count = 0;
    let mut polls = 0;
    while session.elapsed_ns() < 1_000_000_000 {
        std::thread::sleep(DRAIN_EVERY);
        assert_eq!(
            session.poll(),
            Progress::Measuring,
            "no end: still measuring"
        );
        polls += 1;
        let states: Vec<_> = session.cpu_states().collect();
        assert_eq!(states.len(), 1);
        let s = &states[0];
        assert_eq!(s.row.cpu, 0);
        assert_eq!(
            s.cumulative.len(),
            s.row.samples,
            "histogram vs sample count"
        );
        assert!(s.row.samples >= last_count, "cumulative counts only grow");
        last_count = s.row.samples;
    }
    assert!(polls >= 8, "{polls} polls in a second");
    assert!(last_count > 0, "samples were drained while measuring");
    let stopped_at_ns = session.elapsed_ns();
    session.stop();
    let outcome = session.finish();

    let record = &outcome.record;
    assert_eq!(record.ended, Ended::Interrupted);
    assert_eq!(record.end_reason.as_deref(), Some("stopped by its caller"));
    assert_eq!(record.plan.duration_ns, None, "no planned duration");
    assert_eq!(record.plan.loops, None, "no planned loops");
    let t = &record.threads[0];
    // Wakeups were due every 1 ms from the start until the stop: each is a sample or a missed
    // period. The thread ends within one period after the stop; allow one more for the edges.
    let periods = stopped_at_ns / INTERVAL_NS;
    let accounted = t.latency.samples + t.missed_periods;
    assert!(
        accounted + 2 >= periods && accounted <= periods + 2,
        "{} samples + {} missed periods for {periods} periods until the stop",
        t.latency.samples,
        t.missed_periods
    );
    assert!(t.latency.samples >= last_count);
    let duration = record.duration_ns.expect("a finished run has a duration");
    assert!(
        duration >= stopped_at_ns,
        "{duration} ns < {stopped_at_ns} ns"
    );

    let mut in_hlog = 0;
    jitterlab::format::hlog_scan::scan(
        &out.join("latency.hlog"),
        |i| {
            if i.tag == "cpu0" {
                in_hlog += i.total;
            }
        },
        |_, _| {},
    )
    .expect("latency.hlog reads");
    assert_eq!(
        in_hlog, t.latency.samples,
        "every sample is in latency.hlog"
    );

    let stored = common::run_json(&out);
    assert_eq!(stored["ended"], "interrupted");
    let events = read_events(&out.join("events.jsonl")).unwrap();
    assert!(
        events.iter().any(|e| matches!(e, Event::RunStart { .. })),
        "{events:?}"
    );
    assert!(
        matches!(events.last(), Some(Event::RunEnd { ended, .. }) if ended == "interrupted"),
        "{events:?}"
    );
}

/// A session dropped while it measures (an error or a panic in its caller) gives back what it
/// took: its measuring thread is joined (no task of this process has its name), and its
/// CPU lock is released (another jitterlab may measure the CPU at once).
#[test]
fn a_dropped_session_gives_everything_back() {
    let _x = exclusive();
    if !realtime_available("a_dropped_session_gives_everything_back") {
        return;
    }
    // Tasks of this process by name: the test harness's own threads come and go meanwhile.
    let measuring_threads = || {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .flatten()
            .filter(|t| {
                std::fs::read_to_string(t.path().join("comm"))
                    .is_ok_and(|c| c.trim() == "jl-measure-0")
            })
            .count()
    };
    let (base, out) = temp_out();
    assert_eq!(measuring_threads(), 0);
    let mut session = Session::start(&endless_plan(&out), options()).expect("the session starts");
    std::thread::sleep(DRAIN_EVERY);
    session.poll();
    assert_eq!(measuring_threads(), 1, "the measuring thread runs");
    drop(session);
    assert_eq!(measuring_threads(), 0, "the measuring thread is joined");

    let other = base.path().join("other");
    let run = common::jitterlab(&[
        "run",
        "--cpus",
        "0",
        "--duration",
        "200ms",
        "--quiet",
        "--out",
        other.to_str().unwrap(),
    ]);
    assert!(
        run.status.success(),
        "CPU 0 is free again: {}",
        common::text(&run)
    );
}

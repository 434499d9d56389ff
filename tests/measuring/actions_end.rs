//! The owner of the user's programs (src/session/children.rs) at the end of a run (issue 39):
//! an `--on-end` program that does not end is killed after `--action-wait` (R04), and at once by
//! a SIGINT during the wait; threshold programs still running at the end are killed and
//! recorded, never orphaned (R03), and no more than the bound run at once (R12); the bounds of
//! `--action-gap` and `--action-wait` (R12); `signal:SIG,parent` reaches the parent that
//! started jitterlab and nothing after it exited (R06); an `--on-end` hook can measure the same
//! CPUs (R08) and remove the result directory (R09). Every test bounds its jitterlab: a run that
//! hangs fails the test instead of hanging it.

use crate::common;

use common::lifecycle::{finish_within, processes, send, start, wait_for_process, wait_until};
use common::*;
use jitterlab::format::actions::ActionEvent;
use jitterlab::format::events::Event;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn action_events(out: &Path) -> Vec<ActionEvent> {
    jitterlab::results::loaded::read_events(out)
        .unwrap()
        .into_iter()
        .filter_map(|e| match e {
            Event::Action(a) => Some(a),
            _ => None,
        })
        .collect()
}

fn program_counts<'a>(run: &'a serde_json::Value, list: &str, k: usize) -> &'a serde_json::Value {
    &run["actions"][list][k]["programs"]
}

/// R04: an `--on-end` program that does not end is killed once `--action-wait` is over, the
/// run keeps its outcome, and the kill is recorded in events.jsonl and run.json.
#[test]
fn an_on_end_program_that_does_not_end_is_killed_after_the_wait() {
    if !realtime_available("an_on_end_program_that_does_not_end_is_killed_after_the_wait") {
        return;
    }
    let _lock = exclusive();
    let (_base, out) = temp_out();
    let child = start(&[
        "run",
        "--duration",
        "300ms",
        "--cpus",
        "1",
        "--quiet",
        "--on-end",
        "exec:sleep 1000.41",
        "--action-wait",
        "500ms",
        "--out",
        out.to_str().unwrap(),
    ]);
    let (o, took) = finish_within(child, Duration::from_secs(20), "on-end sleep");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        processes(&["sleep", "1000.41"]).is_empty(),
        "the program was left running"
    );
    let run = run_json(&out);
    assert_eq!(run["ended"], "completed");
    assert_eq!(run["actions"]["wait_ns"], 500_000_000);
    let counts = program_counts(&run, "on_end", 0);
    assert_eq!(counts["started"], 1, "{counts}");
    assert_eq!(counts["killed"], 1, "{counts}");
    assert_eq!(run["actions"]["on_end"][0]["failed"], 1);
    let events = action_events(&out);
    let started = events
        .iter()
        .find(|e| e.trigger == "end" && e.program.as_deref() == Some("started"))
        .unwrap_or_else(|| panic!("no start: {events:?}"));
    let killed = events
        .iter()
        .find(|e| e.program.as_deref() == Some("killed"))
        .unwrap_or_else(|| panic!("no kill: {events:?}"));
    assert_eq!((killed.trigger.as_str(), killed.pid), ("end", started.pid));
    assert_eq!(killed.signal.as_deref(), Some("SIGKILL"));
    assert!(
        killed.detail.contains("when --action-wait 500"),
        "{}",
        killed.detail
    );
    // The wait came after the run's 0.3 s: at least the 0.5 s, and not much more.
    assert!(
        killed.time_ns >= started.time_ns + 500_000_000,
        "{started:?} {killed:?}"
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
}

/// R04: the first SIGINT during the end's wait ends it within about a second (10 s were
/// allowed), killing the program; the completed run stays completed.
#[test]
fn sigint_during_the_on_end_wait_ends_it_at_once() {
    if !realtime_available("sigint_during_the_on_end_wait_ends_it_at_once") {
        return;
    }
    let _lock = exclusive();
    let (_base, out) = temp_out();
    let child = start(&[
        "run",
        "--duration",
        "300ms",
        "--cpus",
        "1",
        "--quiet",
        "--on-end",
        "exec:sleep 1000.42",
        "--on-end",
        "continue",
        "--out",
        out.to_str().unwrap(),
    ]);
    let pid = child.id() as i32;
    let sleeping = wait_for_process(&["sleep", "1000.42"]);
    assert_eq!(sleeping.len(), 1, "the on-end program did not start");
    let sent = Instant::now();
    unsafe { libc::kill(pid, libc::SIGINT) };
    let (o, _) = finish_within(child, Duration::from_secs(20), "SIGINT in the wait");
    let took = sent.elapsed();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // A poll every 10 ms and a kill: well under a second, but this VM stalls for some ms.
    assert!(
        took < Duration::from_millis(1500),
        "the wait went on {took:?} after SIGINT"
    );
    assert!(processes(&["sleep", "1000.42"]).is_empty());
    let run = run_json(&out);
    assert_eq!(run["ended"], "completed");
    assert_eq!(program_counts(&run, "on_end", 0)["killed"], 1);
    let events = action_events(&out);
    let killed = events
        .iter()
        .find(|e| e.program.as_deref() == Some("killed"))
        .unwrap_or_else(|| panic!("no kill: {events:?}"));
    assert_eq!(killed.pid, Some(sleeping[0]));
    assert!(
        killed.detail.contains("SIGINT or SIGTERM"),
        "{}",
        killed.detail
    );
    // The action after it was not run, and says so.
    let skipped = events
        .iter()
        .find(|e| e.action == "continue")
        .unwrap_or_else(|| panic!("no event for the second action: {events:?}"));
    assert_eq!(skipped.outcome, "failed");
    assert!(skipped.detail.starts_with("not run"), "{}", skipped.detail);
}

/// Issue 39: a second SIGINT more than a second after the first (which stopped the run) comes
/// during the `--on-end` wait: it cuts the wait, the program is killed and its outcome is in
/// events.jsonl and run.json before jitterlab exits 130. Before, the second signal exited 130
/// at once: the program's start and end were in neither.
#[test]
fn a_second_sigint_in_the_on_end_wait_records_the_killed_program_before_exiting() {
    if !realtime_available("a_second_sigint_in_the_on_end_wait_records_the_killed_program") {
        return;
    }
    let _lock = exclusive();
    let (_base, out) = temp_out();
    let child = start(&[
        "run",
        "--duration",
        "30s",
        "--cpus",
        "1",
        "--quiet",
        "--on-end",
        "exec:sleep 1000.46",
        "--action-wait",
        "60s",
        "--out",
        out.to_str().unwrap(),
    ]);
    let mut child = child;
    let pid = child.id();
    let measuring = wait_until(Duration::from_secs(30), || {
        out.join("run.json").exists() || child.try_wait().unwrap().is_some()
    });
    if !out.join("run.json").exists() {
        let _ = child.kill();
        let o = child.wait_with_output().unwrap();
        panic!("the run did not start (waited: {measuring}): {}", text(&o));
    }
    send(pid, libc::SIGINT);
    let first = Instant::now();
    let sleeping = wait_for_process(&["sleep", "1000.46"]);
    assert_eq!(sleeping.len(), 1, "the on-end program did not start");
    // More than a second after the first: a second request, not the first delivered twice.
    std::thread::sleep(Duration::from_millis(1300).saturating_sub(first.elapsed()));
    send(pid, libc::SIGINT);
    let sent = Instant::now();
    let (o, _) = finish_within(child, Duration::from_secs(20), "two SIGINTs");
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    assert!(
        sent.elapsed() < Duration::from_secs(5),
        "{:?}",
        sent.elapsed()
    );
    assert!(processes(&["sleep", "1000.46"]).is_empty());
    let run = run_json(&out);
    assert_eq!(run["ended"], "interrupted", "{}", text(&o));
    assert_eq!(
        program_counts(&run, "on_end", 0)["killed"],
        1,
        "{}",
        run["actions"]
    );
    let events = action_events(&out);
    let killed = events
        .iter()
        .find(|e| e.program.as_deref() == Some("killed"))
        .unwrap_or_else(|| panic!("no kill recorded: {events:?}"));
    assert_eq!(killed.pid, Some(sleeping[0]));
}

/// R03 and R12: threshold programs that outlive the run are killed at the end of the wait and
/// recorded, none left; at most 4 run at once (every 100 ms a spike, 1 ms gap: about 20
/// spikes), the rest refused and counted; at most 4 snapshots wait for their window at once.
#[test]
fn threshold_programs_are_bounded_and_none_outlives_the_run() {
    if !realtime_available("threshold_programs_are_bounded_and_none_outlives_the_run") {
        return;
    }
    let _lock = exclusive();
    let (_base, out) = temp_out();
    let child = start(&[
        "run",
        "--duration",
        "2s",
        "--cpus",
        "1",
        "--quiet",
        "--load",
        "spike:cpu=1,every=100ms,len=3ms,prio=99,offset=50.4ms",
        "--deadline",
        "1.5ms",
        "--action-gap",
        "1ms",
        "--on-threshold",
        "exec:sleep 1000.43",
        "--on-threshold",
        "snapshot:before=10ms,after=1s",
        "--action-wait",
        "200ms",
        "--out",
        out.to_str().unwrap(),
    ]);
    // While it runs: never more than 4 programs.
    let mut most = 0;
    let mut child = Some(child);
    let t = Instant::now();
    while child.as_mut().unwrap().try_wait().unwrap().is_none()
        && t.elapsed() < Duration::from_secs(20)
    {
        most = most.max(processes(&["sleep", "1000.43"]).len());
        std::thread::sleep(Duration::from_millis(20));
    }
    let (o, _) = finish_within(
        child.take().unwrap(),
        Duration::from_secs(1),
        "threshold programs",
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(most <= 4, "{most} programs ran at once");
    assert!(
        processes(&["sleep", "1000.43"]).is_empty(),
        "a program outlived the run"
    );
    let run = run_json(&out);
    let actions = &run["actions"];
    assert_eq!(actions["max_programs"], 4);
    assert_eq!(actions["max_snapshots"], 4);
    let exec = &actions["on_threshold"][0];
    let programs = &exec["programs"];
    // About 20 injected spikes, at least 5 of them without doubt.
    assert_eq!(programs["started"], 4, "{exec}");
    assert_eq!(programs["killed"], 4, "{exec}");
    assert!(exec["refused"].as_u64().unwrap() >= 1, "{exec}");
    let snapshot = &actions["on_threshold"][1];
    assert!(snapshot["refused"].as_u64().unwrap() >= 1, "{snapshot}");
    // A snapshot waits 1 s for its window: 4 at once in a 2 s run, at most 12.
    assert!(snapshot["fired"].as_u64().unwrap() <= 12, "{snapshot}");
    // Each program: one start with its spike, one kill, the same pid.
    let events = action_events(&out);
    let of = |step: &str| -> Vec<u32> {
        let mut pids: Vec<u32> = events
            .iter()
            .filter(|e| e.action.starts_with("exec:") && e.program.as_deref() == Some(step))
            .map(|e| e.pid.unwrap())
            .collect();
        pids.sort();
        pids
    };
    assert_eq!(of("started").len(), 4, "{events:?}");
    assert_eq!(of("started"), of("killed"), "{events:?}");
    assert!(
        events
            .iter()
            .filter(|e| e.program.as_deref() == Some("started"))
            .all(|e| e.due_ns.is_some())
    );
}

/// R12: `--action-gap` and `--action-wait` outside their ranges are refused before anything
/// starts (exit 2), saying the range.
#[test]
fn the_gap_and_the_wait_are_refused_outside_their_range() {
    for (args, says) in [
        (
            &["--action-gap", "1ns"][..],
            "--action-gap 1ns: out of range: give 1ms to 24h",
        ),
        (
            &["--action-gap", "18446744073709551615ns"][..],
            "out of range: give 1ms to 24h",
        ),
        (
            &["--action-gap", "25h"][..],
            "out of range: give 1ms to 24h",
        ),
        (
            &["--action-wait", "2h"][..],
            "--action-wait 2h: out of range: give 0s",
        ),
    ] {
        let mut all = vec!["run", "--dry-run", "--on-threshold", "continue"];
        all.extend_from_slice(args);
        let o = jitterlab(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(says), "{args:?}: {}", text(&o));
    }
    let o = jitterlab(&["run", "--dry-run", "--action-wait", "1s"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("no --on-threshold or --on-end action"),
        "{}",
        text(&o)
    );
}

/// R06: `signal:SIG,parent` reaches the shell that started jitterlab while it runs; once that
/// shell has exited, it is sent to no one (jitterlab's parent is then another process: a
/// subreaper or pid 1) and the event says why.
#[test]
fn signal_parent_reaches_the_starter_and_nothing_after_it_exited() {
    if !realtime_available("signal_parent_reaches_the_starter_and_nothing_after_it_exited") {
        return;
    }
    let _lock = exclusive();
    let (base, out) = temp_out();
    let log = base.path().join("shell.log");
    // The shell runs jitterlab in the foreground; its trap runs once jitterlab has ended.
    let script = format!(
        "trap 'echo usr1 >> {log}' USR1; {bin} run --duration 300ms --cpus 1 --quiet --on-end signal:USR1,parent --out {out} >/dev/null; echo $$ >> {log}",
        log = log.display(),
        bin = bin(),
        out = out.display()
    );
    let shell = Command::new("sh").arg("-c").arg(&script).spawn().unwrap();
    let shell_pid = shell.id();
    let (o, _) = finish_within(shell, Duration::from_secs(20), "parent alive");
    assert!(o.status.success());
    let lines = std::fs::read_to_string(&log).unwrap();
    assert_eq!(lines, format!("usr1\n{shell_pid}\n"));
    let sent = action_events(&out);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].outcome, "ok");
    assert_eq!(
        sent[0].detail,
        format!("sent SIGUSR1 to {shell_pid} (jitterlab's parent)")
    );

    // The shell leaves as soon as the run has started (its run.json is there): jitterlab is
    // reparented before its end.
    let gone = base.path().join("gone");
    let script = format!(
        "{bin} run --duration 1s --cpus 1 --quiet --on-end signal:USR1,parent --out {out} >/dev/null 2>&1 & while [ ! -e {out}/run.json ]; do sleep 0.02; done; echo $!",
        bin = bin(),
        out = gone.display()
    );
    let o = Command::new("sh").arg("-c").arg(&script).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let jl: u32 = String::from_utf8_lossy(&o.stdout).trim().parse().unwrap();
    // Not our child: ended when gone, or a zombie its new parent has not reaped yet.
    let ended = || {
        std::fs::read_to_string(format!("/proc/{jl}/stat")).map_or(true, |s| {
            s.rsplit(") ").next().is_some_and(|r| r.starts_with('Z'))
        })
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ended() {
        assert!(Instant::now() < deadline, "jitterlab {jl} did not end");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(run_json(&gone)["ended"], "completed");
    let events = action_events(&gone);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].outcome, "failed", "{events:?}");
    assert!(
        events[0].detail.contains("has exited: not signalled"),
        "{}",
        events[0].detail
    );
}

/// R08 and R09: an `--on-end` hook measures the same CPU (the locks and PM QoS are given back
/// before it runs), then removes the result directory; the run still exits 0.
#[test]
fn an_on_end_hook_measures_the_same_cpus_and_may_remove_the_results() {
    if !realtime_available("an_on_end_hook_measures_the_same_cpus_and_may_remove_the_results") {
        return;
    }
    let _lock = exclusive();
    let (base, out) = temp_out();
    let next = base.path().join("next");
    let hook = format!(
        "exec:{} run --duration 200ms --cpus 1 --quiet --out {}",
        bin(),
        next.display()
    );
    let child = start(&[
        "run",
        "--duration",
        "300ms",
        "--cpus",
        "1",
        "--quiet",
        "--on-end",
        &hook,
        "--on-end",
        "exec:sh -c 'rm -r \"$JITTERLAB_OUT\"'",
        "--out",
        out.to_str().unwrap(),
    ]);
    let (o, _) = finish_within(child, Duration::from_secs(30), "on-end hooks");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(run_json(&next)["ended"], "completed", "{}", text(&o));
    assert!(!out.exists(), "the second hook removed it");
    assert!(
        text(&o).contains("what the end's actions did is not in"),
        "{}",
        text(&o)
    );
}

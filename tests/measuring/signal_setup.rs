//! Issue 39 R17 for every command that measures: a SIGINT that came while the handlers were
//! being installed (with SIGINT blocked) is taken once they are in, and the command stops at
//! once instead of running its whole length (a monitor ran on for 20 s). Reproduced every
//! time by starting jitterlab with SIGINT pending and blocked (`common::signals`): before
//! the fix nothing unblocked it and each command ran until the hard kill.

use crate::common;

use common::signals::with_sigint_pending;
use common::*;
use std::time::Duration;

#[test]
fn a_sigint_pending_at_the_start_stops_every_measuring_command_at_once() {
    if !realtime_available("a_sigint_pending_at_the_start_stops_every_measuring_command_at_once") {
        return;
    }
    let _x = exclusive();
    let base = tempfile::tempdir().unwrap();
    let out = |name: &str| base.path().join(name).to_str().unwrap().to_string();
    let (run, noise, monitor, sweep) = (out("run"), out("noise"), out("monitor"), out("sweep"));
    // The drop-ins' result directories here too: by default they go to the user's state
    // directory, which a test must not fill.
    let (cyclictest, oslat, timerlat) = (out("cyclictest"), out("oslat"), out("timerlat"));
    let commands: Vec<Vec<&str>> = vec![
        vec!["run", "-D", "30s", "--cpus", "0", "-q", "--out", &run],
        vec!["noise", "-D", "30s", "--cpus", "0", "-q", "--out", &noise],
        vec![
            "monitor",
            "--cpus",
            "0",
            "--listen",
            "127.0.0.1:0",
            "-q",
            "--out",
            &monitor,
        ],
        vec![
            "sweep",
            "--load",
            "cpu:workers={}",
            "--levels",
            "1,2",
            "--duration",
            "15s",
            "--cpus",
            "0",
            "-q",
            "--out",
            &sweep,
        ],
        vec!["load", "cpu:workers=1", "--duration", "30s"],
        vec![
            "cyclictest",
            "-D",
            "30",
            "-q",
            "--jitterlab-out",
            &cyclictest,
        ],
        vec!["oslat", "-D", "30", "-c", "0", "--jitterlab-out", &oslat],
        vec![
            "timerlat",
            "hist",
            "-c",
            "0",
            "-d",
            "30",
            "--jitterlab-out",
            &timerlat,
        ],
    ];
    for args in &commands {
        let (took, o) = with_sigint_pending(args, Duration::from_secs(40));
        eprintln!(
            "{} with SIGINT pending at its start ended after {took:?}",
            args[0]
        );
        assert!(
            took < Duration::from_secs(10),
            "{args:?} ran on for {took:?} with a SIGINT pending: {}",
            text(&o)
        );
        // Not killed, nor refused: a refusal would end it as fast without testing anything.
        assert!(
            matches!(o.status.code(), Some(0 | 1)),
            "{args:?}: {:?}: {}",
            o.status,
            text(&o)
        );
    }
    for dir in [&run, &noise] {
        let r = run_json(std::path::Path::new(dir));
        assert_eq!(r["ended"], "interrupted", "{dir}");
        // The signal named (tenth hostile re-run, L10-b).
        assert_eq!(r["end_reason"], "stopped by SIGINT", "{dir}");
    }
}

/// Issue 39 L-k: a SIGINT during the start-up waited for the start-up to finish (1.3 s with
/// real-time spinners; thirty loads held it up to 4.5 s). The start-up
/// looks at the stop between its steps and between the loads it starts: the SIGINT is served
/// within a second, the run ends `interrupted`, saying what it did not start. One retry: a
/// stall of this VM can eat a second.
#[test]
fn a_sigint_during_the_start_up_is_served_within_a_second() {
    if !realtime_available("a_sigint_during_the_start_up_is_served_within_a_second")
        || !two_cpus_online("a_sigint_during_the_start_up_is_served_within_a_second")
    {
        return;
    }
    let _x = exclusive();
    let mut last = String::new();
    for attempt in 0..2 {
        let base = tempfile::tempdir().unwrap();
        let out = base.path().join("run");
        let mut args = vec![
            "run".to_string(),
            "-D".into(),
            "30s".into(),
            "--cpus".into(),
            "0".into(),
            "-q".into(),
            "--out".into(),
            out.to_str().unwrap().into(),
        ];
        for _ in 0..30 {
            args.extend(["--load".into(), "cpu:workers=1,cpus=1".into()]);
        }
        let child = std::process::Command::new(bin())
            .args(&args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The SIGINT goes as soon as the first load process exists: the loads are still
        // starting then (thirty take 0.3-4.5 s on this VM, depending on its mood), where a
        // fixed delay could land after the start-up on a quick day.
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while load_processes(child.id()) == 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_micros(500));
        }
        // SAFETY: a plain syscall on our own child, not reaped yet.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
        let sent = std::time::Instant::now();
        let pid = child.id() as libc::pid_t;
        let (done, ended) = std::sync::mpsc::channel::<()>();
        let watchdog = std::thread::spawn(move || {
            if ended.recv_timeout(Duration::from_secs(60)).is_err() {
                // SAFETY: as above: the child is reaped only after this thread has been told.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        });
        let o = child.wait_with_output().unwrap();
        let took = sent.elapsed();
        let _ = done.send(());
        watchdog.join().unwrap();
        eprintln!("attempt {attempt}: a SIGINT at the first load was served after {took:?}");
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let run = run_json(&out);
        assert_eq!(run["ended"], "interrupted", "{}", text(&o));
        let warned = run["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|w| w.as_str())
            .any(|w| w.starts_with("a stop request (SIGINT or SIGTERM) came"));
        assert!(warned, "what was not started is said: {}", run["warnings"]);
        if took < Duration::from_secs(1) {
            return;
        }
        last = format!("served {took:?} after the SIGINT: {}", text(&o));
    }
    panic!("a SIGINT during the start-up was not served within a second, twice: {last}");
}

/// How many child processes process `pid` has (its loads, once they start).
fn load_processes(pid: u32) -> usize {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .map(|c| c.split_whitespace().count())
        .sum()
}

/// H1 (seventh hostile re-run): SIGHUP (a closed terminal, a dropped ssh session) is a stop
/// request like SIGTERM: the run ends `interrupted` with what it set up taken down, instead of
/// dying as if killed (`ended: running`, a cpuset or RT throttling left for the next start).
#[test]
fn a_sighup_stops_a_run_as_sigterm_does() {
    use std::os::unix::process::ExitStatusExt;
    if !realtime_available("a_sighup_stops_a_run_as_sigterm_does") {
        return;
    }
    // Under nohup the run inherits SIGHUP ignored and rightly keeps it so (src/sys/signal.rs):
    // it then runs its 30 s, which is not the defect this test looks for.
    if sighup_ignored() {
        eprintln!(
            "a_sighup_stops_a_run_as_sigterm_does: skipped: SIGHUP is ignored here (nohup), and a run honours that"
        );
        return;
    }
    let _x = exclusive();
    let base = tempfile::tempdir().unwrap();
    let out = base.path().join("run");
    let child = lifecycle::start(&[
        "run",
        "-D",
        "30s",
        "--cpus",
        "0",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    std::thread::sleep(Duration::from_millis(1500));
    lifecycle::send(child.id(), libc::SIGHUP);
    let (o, took) = lifecycle::finish_within(child, Duration::from_secs(20), "run after SIGHUP");
    assert_eq!(o.status.signal(), None, "ended by the signal: {}", text(&o));
    assert!(
        took < Duration::from_secs(10),
        "took {took:?}: {}",
        text(&o)
    );
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    assert_eq!(record["ended"], "interrupted", "{}", text(&o));
    // Which request stopped it is named (tenth hostile re-run, L10-b).
    assert_eq!(record["end_reason"], "stopped by SIGHUP", "{}", text(&o));
}

/// Whether this process ignores SIGHUP (SIG_IGN, as `nohup` sets it): its children inherit that.
fn sighup_ignored() -> bool {
    // SAFETY: sigaction with a null new action only reads the current one into `old`.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(libc::SIGHUP, std::ptr::null(), &mut old) == 0
            && old.sa_sigaction == libc::SIG_IGN
    }
}

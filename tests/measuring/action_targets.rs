//! Issue 39's hostile re-run, F5: `signal:SIG,pid=N` names a process resolved once, before the
//! run, to a pidfd (as `parent` is). After it exits, a firing says it has exited and signals
//! nothing, even when another process has taken its pid: the test gives its pid to a new
//! `sleep` through /proc/sys/kernel/ns_last_pid (root), which must live on.

use crate::common;

use common::*;
use jitterlab::format::events::Event;
use std::process::Command;
use std::time::{Duration, Instant};

/// Holds CPU 1 for 3 ms every 300 ms: a spike, and a firing, at each.
const SPIKE: &str = "spike:cpu=1,every=300ms,len=3ms,prio=99,offset=100.4ms";

#[test]
fn a_pid_target_that_exited_is_never_signalled_in_its_successor() {
    let test = "a_pid_target_that_exited_is_never_signalled_in_its_successor";
    if !realtime_on_two_cpus(test) {
        return;
    }
    let _lock = exclusive();
    let (_base, out) = temp_out();
    // The target ignores SIGUSR1 and exits after 1 s.
    let mut target = Command::new("sh")
        .args(["-c", "trap '' USR1; sleep 1"])
        .spawn()
        .unwrap();
    let pid = target.id();
    let run = Command::new(bin())
        .args([
            "run",
            "--duration",
            "4s",
            "--cpus",
            "1",
            "--quiet",
            "--load",
            SPIKE,
            "--action-gap",
            "100ms",
            "--on-threshold",
            &format!("signal:USR1,pid={pid}"),
            "--out",
            out.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    target.wait().unwrap();
    // Its pid to a new process, where root may say which pid comes next.
    let mut successor = None;
    let deadline = Instant::now() + Duration::from_millis(500);
    while successor.is_none() && Instant::now() < deadline {
        if std::fs::write("/proc/sys/kernel/ns_last_pid", (pid - 1).to_string()).is_err() {
            break;
        }
        let c = Command::new("sleep").arg("30").spawn().unwrap();
        if c.id() == pid {
            successor = Some(c);
        } else {
            let mut c = c;
            let _ = c.kill();
            let _ = c.wait();
        }
    }
    let o = run.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    match successor.as_mut() {
        Some(s) => {
            let alive = s.try_wait().unwrap().is_none();
            let _ = s.kill();
            let status = s.wait().unwrap();
            assert!(
                alive,
                "the process that took pid {pid} was signalled: {status:?}"
            );
        }
        None => eprintln!(
            "{test}: pid {pid} could not be handed to a new process here (not root, or another took it): only the events are checked"
        ),
    }
    let details: Vec<String> = jitterlab::results::loaded::read_events(&out)
        .unwrap()
        .into_iter()
        .filter_map(|e| match e {
            Event::Action(a) if a.action.starts_with("signal:") => Some(a.detail),
            _ => None,
        })
        .collect();
    let gone = format!("process {pid} has exited: not signalled");
    assert!(
        details.iter().any(|d| d.contains(&gone)),
        "a firing after the exit says so: {details:?}"
    );
    let first_gone = details.iter().position(|d| d.contains(&gone)).unwrap();
    assert!(
        details[first_gone..].iter().all(|d| d.contains(&gone)),
        "nothing signalled after the exit: {details:?}"
    );
}

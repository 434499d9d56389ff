//! Hostile timing and neighbours around a run's lifecycle (issue 24): a signal while the run
//! is still setting up, a CPU lock held by another user, a load left behind by a jitterlab
//! killed with its reaper. Each test is a reproducer of the issue that failed before.

use crate::common;

use common::*;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// D11: SIGTERM 50, 100 and 150 ms after the start, while the run is still setting up (making
/// its directory, preparing tracing): the signal is caught, the run ends as a SIGTERM ends it
/// (exit 0, run.json `interrupted`), and no tracing instance or empty result directory is left.
/// (A signal before the process reached its first instruction of jitterlab, on a very loaded
/// machine, still kills it; then nothing may have been made yet.)
#[test]
fn a_signal_during_setup_stops_the_run_cleanly() {
    let _x = exclusive();
    let trace = tracing_available("a_signal_during_setup_stops_the_run_cleanly");
    for delay_ms in [50, 100, 150] {
        let (_base, out) = temp_out();
        let mut args = vec![
            "run",
            "-D",
            "5s",
            "--cpus",
            "0",
            "--out",
            out.to_str().unwrap(),
        ];
        if trace {
            args.push("--trace");
        }
        let child = Command::new(bin())
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        let pid = child.id();
        let sent = Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let started = Instant::now();
        let output = child.wait_with_output().unwrap();
        let all = text(&output);
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "{delay_ms} ms: the run went on after SIGTERM: {all}"
        );
        let instance = Path::new("/sys/kernel/tracing/instances").join(format!("jitterlab-{pid}"));
        assert!(
            !instance.exists(),
            "{delay_ms} ms: {} is left behind",
            instance.display()
        );
        match output.status.code() {
            Some(0) => {
                let run = run_json(&out);
                assert_eq!(run["ended"], "interrupted", "{delay_ms} ms: {all}");
            }
            code => {
                // Killed before jitterlab's first instruction, or refused by a check: nothing
                // may be left then.
                assert!(
                    !out.exists(),
                    "{delay_ms} ms: exit {code:?} and {} is left behind: {all}",
                    out.display()
                );
            }
        }
    }
}

/// `timeout -s INT 2 jitterlab run ...` (without --foreground) delivers SIGINT twice, to the
/// command and then to its process group: that is one request, so the run stops cleanly
/// (run.json `interrupted`, the summary printed). Before, the second delivery counted as a
/// second request and ended the process at once (exit 130, run.json `running`).
#[test]
fn one_interrupt_delivered_twice_stops_cleanly() {
    if !realtime_available("one_interrupt_delivered_twice_stops_cleanly") {
        return;
    }
    let _x = exclusive();
    let (_base, out) = temp_out();
    let o = Command::new("timeout")
        .args(["-s", "INT", "2"])
        .arg(bin())
        .args([
            "run",
            "-D",
            "30s",
            "--cpus",
            "0",
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    // timeout's own status for a command it had to signal.
    assert_eq!(o.status.code(), Some(124), "{}", text(&o));
    let run = run_json(&out);
    assert_eq!(run["ended"], "interrupted", "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("Results:"),
        "{}",
        text(&o)
    );
}

/// D16: another user (nobody) holding a flock on /run/jitterlab/cpu1.lock is named as what it
/// is: its pid, its user, its command line, and that it is not jitterlab (it was called
/// "another jitterlab run"). It no longer stops a root run (any user could block root's
/// measurement of any CPU): the run measures, naming the holder in its warnings; a second root
/// run on that CPU is still refused, by the first one's lock in /run/jitterlab-root. A run of
/// another user is stopped by it, as before.
#[test]
fn a_cpu_lock_held_by_another_user_names_that_user_and_program() {
    if !two_cpus_online("a_cpu_lock_held_by_another_user_names_that_user_and_program") {
        return;
    }
    let _x = exclusive();
    // Made by root as a run makes it, so that nobody can open it to lock it.
    let _ = std::fs::create_dir_all("/run/jitterlab");
    let lock = "/run/jitterlab/cpu1.lock";
    if !Path::new(lock).exists() {
        std::fs::write(lock, "").unwrap();
    }
    let mut holder = Command::new("setpriv")
        .args([
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            "flock",
            "-s",
            lock,
            "sleep",
            "30",
        ])
        // Its own process group: flock forks `sleep`, which inherits the lock and must end
        // with it (killing flock alone left it holding cpu1.lock for the tests after this one).
        .process_group(0)
        .spawn()
        .unwrap();
    // Until the lock is held (flock took it).
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let locks = std::fs::read_to_string("/proc/locks").unwrap();
        if locks.contains(&format!(" {} ", holder.id())) {
            break;
        }
        assert!(Instant::now() < deadline, "flock did not take {lock}");
        std::thread::sleep(Duration::from_millis(10));
    }
    let root = std::fs::metadata("/proc/self").unwrap().uid() == 0;
    let (_base, out) = temp_out();
    let (_base2, out2) = temp_out();
    let first = Command::new(bin())
        .args(["run", "-D", "4s", "--cpus", "1", "--quiet", "--out"])
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let first_pid = first.id();
    // Until the first run holds its lock (root's own; another user's run exits 3 at once).
    let deadline = Instant::now() + Duration::from_secs(20);
    while root
        && !std::fs::read_to_string("/proc/locks")
            .unwrap()
            .contains(&format!(" {first_pid} "))
    {
        assert!(Instant::now() < deadline, "the first run took no lock");
        std::thread::sleep(Duration::from_millis(20));
    }
    let second = jitterlab(&[
        "run",
        "-D",
        "1s",
        "--cpus",
        "1",
        "--out",
        out2.to_str().unwrap(),
    ]);
    let o = first.wait_with_output().unwrap();
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", holder.id())])
        .status();
    let _ = holder.wait();
    let all = text(&o);
    if !root {
        assert_eq!(o.status.code(), Some(3), "{all}");
        assert!(
            all.contains("a process that is not this jitterlab"),
            "{all}"
        );
        assert!(all.contains("user nobody (uid 65534)"), "{all}");
        assert!(
            all.contains(&format!("'flock -s {lock} sleep 30'")),
            "{all}"
        );
        assert!(!all.contains("another jitterlab run"), "{all}");
        return;
    }
    assert_eq!(o.status.code(), Some(0), "{all}");
    let run = run_json(&out);
    assert_eq!(run["ended"], "completed");
    let warnings: Vec<&str> = run["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w.as_str())
        .filter(|w| w.starts_with("the lock of CPU 1"))
        .collect();
    assert_eq!(warnings.len(), 1, "{run}");
    let w = warnings[0];
    assert!(w.contains("a process that is not this jitterlab"), "{w}");
    assert!(w.contains("user nobody (uid 65534)"), "{w}");
    assert!(w.contains(&format!("'flock -s {lock} sleep 30'")), "{w}");
    assert!(w.contains("does not stop a root run"), "{w}");
    let refused = text(&second);
    assert_eq!(second.status.code(), Some(3), "{refused}");
    assert!(
        refused.contains(&format!(
            "CPU 1 is being measured by another jitterlab run: pid {first_pid} of user root"
        )),
        "{refused}"
    );
}

/// The hostile re-run's L1: another user (nobody) makes `/run/jitterlab/uid-<victim>` first
/// (mode 777). The victim's run with an `--on-threshold exec:` action used to measure and run
/// the program unjournaled behind a vague warning; user-guide.md promises that what needs a
/// journal is refused (exit 3) naming the directory: nothing measured, no result directory.
#[test]
fn a_journal_directory_made_by_another_user_refuses_exec_actions() {
    let test = "a_journal_directory_made_by_another_user_refuses_exec_actions";
    if !common::attacker::attacker_available(test) {
        return;
    }
    let _x = exclusive();
    // A user of its own (no passwd entry needed), so that no other test's journals are near.
    let victim = 47_391;
    let dir = format!("/run/jitterlab/uid-{victim}");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        Command::new("install")
            .args(["-d", "-m", "1777", "/run/jitterlab"])
            .status()
            .unwrap()
            .success()
    );
    common::attacker::as_nobody(&format!("mkdir -m 777 {dir}"));
    let base = tempfile::tempdir().unwrap();
    std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = base.path().join("r");
    let o = Command::new("setpriv")
        .args([
            &format!("--reuid={victim}"),
            &format!("--regid={victim}"),
            "--clear-groups",
            bin(),
            "run",
            "--duration",
            "300ms",
            "--cpus",
            "0",
            "--policy",
            "other",
            "--no-mlock",
            "--pm-qos",
            "off",
            "--on-threshold",
            "exec:true",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let all = text(&o);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(o.status.code(), Some(3), "{all}");
    assert!(all.contains("--on-threshold exec:true"), "{all}");
    assert!(
        all.contains(&format!("{dir} is not trusted: owned by uid 65534")),
        "{all}"
    );
    // The start's warning says what is refused until the directory is removed.
    assert!(all.contains("exec: actions, --cpuset-partition"), "{all}");
    assert!(!out.exists(), "no result directory for a refused run");
}

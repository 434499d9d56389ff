//! What a SIGKILLed jitterlab leaves in the kernel is removed at the next start by its journal,
//! never by its name (issue 39): its tracing instance, its loads' cgroup (killed with its
//! reaper), and what an action's program left running in its process group. A look-alike that
//! no journal names (`jitterlab-<pid of no process>`: another pid namespace's live run) is left
//! alone: before, each was found and removed by its name.

use crate::common;

use common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A pid no process has now (a child's, reaped).
fn dead_pid() -> u32 {
    let mut c = Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

fn start(args: &[&str]) -> Child {
    Command::new(bin())
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Waits up to 20 s for `done`; false if it never was.
fn wait_until(mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// The processes whose command line is exactly `words`.
fn processes(words: &[&str]) -> Vec<u32> {
    let wanted: Vec<u8> = words
        .iter()
        .flat_map(|w| [w.as_bytes(), b"\0"].concat())
        .collect();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| std::fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|c| c == wanted))
        .collect()
}

fn sigkill(pid: u32) {
    // SAFETY: plain syscall.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
}

/// A short run on CPU 1 (with `extra`), as the next start; its output.
fn next_run(extra: &[&str]) -> std::process::Output {
    let (_base, out) = temp_out();
    let mut args = vec![
        "run",
        "-D",
        "300ms",
        "--cpus",
        "1",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = jitterlab(&args);
    assert!(o.status.success(), "{}", text(&o));
    o
}

#[test]
fn a_killed_runs_tracing_instance_is_removed_by_its_journal_and_a_look_alike_kept() {
    if !two_cpus_online("a_killed_runs_tracing_instance")
        || !tracing_available("a_killed_runs_tracing_instance")
    {
        return;
    }
    let _x = exclusive();
    let instances = Path::new("/sys/kernel/tracing/instances");
    let look_alike = instances.join(format!("jitterlab-{}", dead_pid()));
    std::fs::create_dir(&look_alike).unwrap();
    let (_base, out) = temp_out();
    let mut run = start(&[
        "run",
        "-D",
        "60s",
        "--cpus",
        "1",
        "--trace",
        "--trace-backend",
        "tracefs",
        "--out",
        out.to_str().unwrap(),
    ]);
    let instance = instances.join(format!("jitterlab-{}", run.id()));
    let made = wait_until(|| out.join("run.json").exists() && instance.exists());
    run.kill().unwrap();
    run.wait().unwrap();
    let left_by_kill = instance.exists();
    let o = next_run(&[]);
    let (instance_left, look_alike_left) = (instance.exists(), look_alike.exists());
    let _ = std::fs::remove_dir(&instance);
    let _ = std::fs::remove_dir(&look_alike);
    assert!(made, "the traced run did not start");
    assert!(left_by_kill, "the SIGKILL left no instance to remove");
    assert!(
        !instance_left,
        "the killed run's instance is left: {}",
        text(&o)
    );
    assert!(
        look_alike_left,
        "an instance no journal names was removed: {}",
        text(&o)
    );
}

/// This process's cgroup v2 directory (where its child jitterlab makes the loads' cgroups).
fn own_cgroup_dir() -> Option<PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mount = mountinfo.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        (right.split(' ').next() == Some("cgroup2")).then(|| left.split(' ').nth(4).unwrap())
    })?;
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = own.lines().find_map(|l| l.strip_prefix("0::"))?;
    Some(Path::new(mount).join(path.trim_start_matches('/')))
}

#[test]
fn a_load_cgroup_of_a_run_killed_with_its_reaper_is_removed_by_its_journal() {
    if !two_cpus_online("a_load_cgroup_of_a_run_killed_with_its_reaper") {
        return;
    }
    let Some(parent) = own_cgroup_dir() else {
        eprintln!("SKIPPED a_load_cgroup_of_a_run_killed_with_its_reaper: no cgroup v2");
        return;
    };
    let _x = exclusive();
    let look_alike = parent.join(format!("jitterlab-loads-{}-0", dead_pid()));
    if std::fs::create_dir(&look_alike).is_err() {
        eprintln!(
            "SKIPPED a_load_cgroup_of_a_run_killed_with_its_reaper: cannot make cgroups in {}",
            parent.display()
        );
        return;
    }
    let (_base, out) = temp_out();
    let mut run = start(&[
        "run",
        "-D",
        "60s",
        "--cpus",
        "1",
        "--load",
        "cpu:cpus=1",
        "--out",
        out.to_str().unwrap(),
    ]);
    let pid = run.id();
    let cgroup = parent.join(format!("jitterlab-loads-{pid}-0"));
    let pid_text = pid.to_string();
    let reaper = || {
        processes(&[
            "/proc/self/exe",
            "__load-reaper",
            "--owner",
            &pid_text,
            "--cgroup",
            cgroup.to_str().unwrap(),
        ])
    };
    let made =
        wait_until(|| out.join("run.json").exists() && cgroup.exists() && !reaper().is_empty());
    // Killed together with its reaper: nothing but the journal is left to remove the cgroup.
    for p in reaper() {
        sigkill(p);
    }
    run.kill().unwrap();
    run.wait().unwrap();
    let left_by_kill = cgroup.exists();
    let o = next_run(&[]);
    let (cgroup_left, look_alike_left) = (cgroup.exists(), look_alike.exists());
    let _ = std::fs::remove_dir(&look_alike);
    if cgroup_left {
        let _ = std::fs::write(cgroup.join("cgroup.kill"), "1");
        std::thread::sleep(Duration::from_millis(200));
        let _ = std::fs::remove_dir(cgroup.join("load-0"));
        let _ = std::fs::remove_dir(&cgroup);
    }
    assert!(made, "the run with a load did not start");
    assert!(left_by_kill, "the SIGKILLs left no cgroup to remove");
    assert!(
        !cgroup_left,
        "the killed run's load cgroup is left: {}",
        text(&o)
    );
    assert!(
        look_alike_left,
        "a cgroup no journal names was removed: {}",
        text(&o)
    );
}

/// An action's program starts a background job and is SIGKILLed with jitterlab (its
/// parent-death signal); the job, left in the program's process group, survives the kill,
/// and the next start kills it by the group's journal, saying so.
#[test]
fn what_an_action_left_in_its_group_is_killed_at_the_next_start() {
    if !realtime_on_two_cpus("what_an_action_left_in_its_group") {
        return;
    }
    let _x = exclusive();
    let (base, out) = temp_out();
    let script = base.path().join("action.sh");
    std::fs::write(&script, "#!/bin/sh\nsleep 3002.1 &\nexec sleep 3002.2\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let action = format!("exec:{}", script.display());
    let mut run = start(&[
        "run",
        "-D",
        "60s",
        "--cpus",
        "1",
        "--deadline",
        "1us",
        "--on-threshold",
        &action,
        "--out",
        out.to_str().unwrap(),
    ]);
    let started = wait_until(|| {
        !processes(&["sleep", "3002.1"]).is_empty() && !processes(&["sleep", "3002.2"]).is_empty()
    });
    run.kill().unwrap();
    run.wait().unwrap();
    // The program itself dies with jitterlab; its background job is only reparented.
    let program_ended = wait_until(|| processes(&["sleep", "3002.2"]).is_empty());
    let job = processes(&["sleep", "3002.1"]);
    let o = next_run(&[]);
    let job_ended = wait_until(|| processes(&["sleep", "3002.1"]).is_empty());
    for p in processes(&["sleep", "3002.1"])
        .into_iter()
        .chain(processes(&["sleep", "3002.2"]))
    {
        sigkill(p);
    }
    assert!(started, "the action did not start");
    assert!(program_ended, "the program outlived jitterlab");
    assert_eq!(job.len(), 1, "the SIGKILL left no job to kill");
    assert!(
        job_ended,
        "what the action left is still running: {}",
        text(&o)
    );
    let said = text(&o);
    assert!(
        said.contains("killed 1 process left running by an --on-threshold/--on-end program")
            && said.contains(&job[0].to_string()),
        "{said}"
    );
}

//! What a SIGKILLed jitterlab leaves in the kernel is removed at the next start by its journal,
//! never by its name (issue 39): its tracing instance, its loads' cgroup (killed with its
//! reaper), and what an action's program left running in its process group. A look-alike that
//! no journal names (`jitterlab-<pid of no process>`: another pid namespace's live run) is left
//! alone: before, each was found and removed by its name.

use crate::common;

use common::lifecycle::{
    self, dead_pid, own_cgroup_dir, processes, reapers, remove_load_cgroup, sigkill,
    start_quiet as start,
};
use common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

/// Waits up to 20 s for `done`; false if it never was.
fn wait_until(done: impl FnMut() -> bool) -> bool {
    lifecycle::wait_until(Duration::from_secs(20), done)
}

/// A short run on CPU 1 (with `extra`), as the next start; its output and run.json.
fn next_run(extra: &[&str]) -> (std::process::Output, serde_json::Value) {
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
    let record = run_json(&out);
    (o, record)
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
    let (o, _) = next_run(&[]);
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
    let reaper = || reapers(pid, &cgroup);
    let made =
        wait_until(|| out.join("run.json").exists() && cgroup.exists() && !reaper().is_empty());
    // Killed together with its reaper: nothing but the journal is left to remove the cgroup.
    for p in reaper() {
        sigkill(p);
    }
    run.kill().unwrap();
    run.wait().unwrap();
    let left_by_kill = cgroup.exists();
    let (o, record) = next_run(&[]);
    let (cgroup_left, look_alike_left) = (cgroup.exists(), look_alike.exists());
    let _ = std::fs::remove_dir(&look_alike);
    remove_load_cgroup(&cgroup);
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
    // Said on stderr at the start, and in the run.json of the run that started.
    let undone = undone_cgroup_warning(&cgroup);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(&undone),
        "{}",
        text(&o)
    );
    assert!(
        record["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains(&undone)),
        "{}",
        record["warnings"]
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
    let (o, _) = next_run(&[]);
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

/// Issue 39: the start of every command that changes the system undoes the journals of killed
/// runs, not only `run`'s. A `jitterlab load` with a contained load is SIGKILLed with its
/// reaper; the next command is another `load` (no session, no run.json), which removes the
/// cgroup and says so on stderr. Before, only a `run` did: the cgroup stayed until then.
#[test]
fn a_killed_loads_cgroup_is_removed_by_the_next_command_not_only_by_a_run() {
    if !two_cpus_online("a_killed_loads_cgroup_is_removed_by_the_next_command") {
        return;
    }
    let Some(parent) = own_cgroup_dir() else {
        eprintln!("SKIPPED a_killed_loads_cgroup_is_removed_by_the_next_command: no cgroup v2");
        return;
    };
    let _x = exclusive();
    let mut load = start(&["load", "cpu:cpus=1", "--duration", "60s"]);
    let pid = load.id();
    let cgroup = parent.join(format!("jitterlab-loads-{pid}-0"));
    let made = wait_until(|| cgroup.join("load-0").exists() && !reapers(pid, &cgroup).is_empty());
    if !made && !cgroup.exists() {
        let _ = load.kill();
        let _ = load.wait();
        eprintln!(
            "SKIPPED a_killed_loads_cgroup_is_removed_by_the_next_command: no load cgroup made in {}",
            parent.display()
        );
        return;
    }
    for p in reapers(pid, &cgroup) {
        sigkill(p);
    }
    load.kill().unwrap();
    load.wait().unwrap();
    let left_by_kill = cgroup.exists();
    let o = jitterlab(&["load", "exec:true", "--duration", "200ms"]);
    let cgroup_left = cgroup.exists();
    remove_load_cgroup(&cgroup);
    assert!(made, "the load did not start in its cgroup");
    assert!(left_by_kill, "the SIGKILLs left no cgroup to remove");
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        !cgroup_left,
        "the killed load's cgroup is left: {}",
        text(&o)
    );
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(
        said.contains(&undone_cgroup_warning(&cgroup)),
        "what the start undid is not said: {said}"
    );
}

/// The start of the warning that says a killed run's load cgroup `dir` was removed (with
/// the loads left in it killed, or none).
fn undone_cgroup_warning(dir: &Path) -> String {
    format!(
        "the load cgroup {} left by a jitterlab (pid ",
        dir.display()
    )
}

/// Issue 42 (a newcomer's first hour): a killed run's directory says its owner is gone in
/// `report` and `export`, and now in the next `run`'s notice too: the run's result-directory
/// journal, left without a writer by the SIGKILL, makes the next start name the directory
/// (stderr and its run.json's warnings). A plain run, killed 0.3 s after its run.json is
/// written; about 2 s.
#[test]
fn the_next_run_says_a_killed_runs_directory_was_left_running() {
    if !two_cpus_online("the_next_run_says_a_killed_runs_directory") {
        return;
    }
    let _x = exclusive();
    let (_base, out) = temp_out();
    let mut run = start(&[
        "run",
        "-D",
        "60s",
        "--cpus",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    let pid = run.id();
    let made = wait_until(|| out.join("run.json").exists());
    std::thread::sleep(Duration::from_millis(300));
    run.kill().unwrap();
    run.wait().unwrap();
    assert!(made, "the run did not start");
    assert_eq!(
        run_json(&out)["ended"],
        "running",
        "the kill left no running run"
    );
    let (o, record) = next_run(&[]);
    let said = format!(
        "a jitterlab (pid {pid}) was killed during this boot: its result directory {} says `ended: running`",
        out.display()
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(&said),
        "{said}\nnot said: {}",
        text(&o)
    );
    let warnings = record["warnings"].as_array().cloned().unwrap_or_default();
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().is_some_and(|w| w.contains(&said))),
        "not in run.json's warnings: {warnings:?}"
    );
    // Said once: the run after it has nothing to say of it.
    let (o, _) = next_run(&[]);
    assert!(!text(&o).contains(&said), "said again: {}", text(&o));
}

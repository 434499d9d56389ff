//! A killed run's directory says that its owner is gone (issue 42): run.json of a run killed
//! with SIGKILL says `ended: running` (its end was never written); `report` and `export` say
//! `killed` when no process holds the locks of its CPUs (a run holds them until its process
//! ends, however it ends), "may still be running" when one does, and that it cannot be told
//! for a run made on another host. The run's files are not touched.

use crate::common::*;
use std::path::Path;

/// The README's run (tests/data/readme-run) as a run killed on this host measuring `cpus`:
/// its run.json as a SIGKILL leaves it (`ended: running`, no end time).
fn killed_run(cpus: &[usize], host: Option<&str>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/readme-run");
    for entry in std::fs::read_dir(&fixture).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.path().join(entry.file_name())).unwrap();
    }
    let path = dir.path().join("run.json");
    let mut run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    run["ended"] = "running".into();
    run["ended_utc"] = serde_json::Value::Null;
    run["plan"]["cpus"] = serde_json::json!(cpus);
    let this_host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    run["system"]["hostname"] = host.unwrap_or(this_host.trim()).into();
    std::fs::write(&path, serde_json::to_string_pretty(&run).unwrap()).unwrap();
    dir
}

fn export_json(dir: &Path) -> (String, String) {
    let before = std::fs::read(dir.join("run.json")).unwrap();
    let o = jitterlab(&["export", dir.to_str().unwrap(), "--format", "json"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        std::fs::read(dir.join("run.json")).unwrap(),
        before,
        "run.json is not rewritten"
    );
    (
        String::from_utf8(o.stdout).unwrap(),
        String::from_utf8(o.stderr).unwrap(),
    )
}

/// CPUs no run measures (their lock files are never made by a run on this 2-CPU machine, nor
/// on the CI's), so no process holds their locks.
const FREE: [usize; 2] = [4090, 4091];

#[test]
fn a_killed_runs_report_and_export_say_killed() {
    let dir = killed_run(&FREE, None);
    let (json, stderr) = export_json(dir.path());
    let said = "killed: run.json says `ended: running`, but no process holds the locks of its CPUs (4090-4091)";
    assert!(stderr.contains(said), "{stderr}");
    let exported: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(
        exported.to_string().contains("killed: run.json says"),
        "the export carries it: {json}"
    );
    let html = dir.path().join("report.html");
    let o = jitterlab(&[
        "report",
        dir.path().to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(said),
        "{}",
        text(&o)
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("killed: run.json says"),
        "the report shows it"
    );
    // A run that ended says nothing of the kind.
    let ended = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/readme-run");
    for entry in std::fs::read_dir(&fixture).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), ended.path().join(entry.file_name())).unwrap();
    }
    let (_, stderr) = export_json(ended.path());
    assert!(!stderr.contains("ended: running"), "{stderr}");
}

#[test]
fn a_run_of_another_host_cannot_be_told() {
    let dir = killed_run(&FREE, Some("a-board-elsewhere"));
    let (_, stderr) = export_json(dir.path());
    assert!(
        stderr.contains("made on host a-board-elsewhere, not this one, so whether its process still runs cannot be told here"),
        "{stderr}"
    );
    assert!(!stderr.contains("killed:"), "{stderr}");
}

/// While a process holds a CPU's lock, the run may still be running: not said killed.
#[test]
fn a_run_whose_cpu_lock_is_held_may_still_run() {
    let shared = Path::new("/run/jitterlab");
    if !shared.exists() {
        // Made as jitterlab makes it (sticky, world-writable, as /run/lock).
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(shared).unwrap();
        std::fs::set_permissions(shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    }
    let cpu = 4092;
    let path = shared.join(format!("cpu{cpu}.lock"));
    let lock = std::fs::File::create(&path).unwrap();
    lock.lock().unwrap();
    let dir = killed_run(&[cpu], None);
    // A root run is judged by root's own locks (L6-b, below): this is another user's run.
    let _ = std::os::unix::fs::chown(dir.path().join("run.json"), Some(65534), Some(65534));
    let (_, stderr) = export_json(dir.path());
    drop(lock);
    let _ = std::fs::remove_file(&path);
    assert!(
        stderr.contains("run.json says `ended: running`, and CPU 4092 is locked by "),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(": pid {} of ", std::process::id())),
        "names this test as the holder: {stderr}"
    );
    assert!(stderr.contains("may still be running"), "{stderr}");
    assert!(!stderr.contains("killed:"), "{stderr}");
}

/// A root run held root's own lock of each CPU (`/run/jitterlab-root`), which only root can
/// take: another user holding the shared lock of its CPU does not make a killed root run read
/// "may still be running" (issue 39, sixth re-run, L6-b).
#[test]
fn a_killed_root_run_is_judged_by_roots_own_locks() {
    if !crate::common::attacker::attacker_available(
        "a_killed_root_run_is_judged_by_roots_own_locks",
    ) {
        return;
    }
    let shared = Path::new("/run/jitterlab");
    if !shared.exists() {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(shared).unwrap();
        std::fs::set_permissions(shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    }
    let cpu = 4093;
    let path = shared.join(format!("cpu{cpu}.lock"));
    // nobody's flock on the shared lock file, held while the run is read.
    let mut holder = std::process::Command::new("setpriv")
        .args([
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            "flock",
        ])
        .arg(&path)
        .args(["sleep", "30"])
        .spawn()
        .unwrap();
    let held = crate::common::lifecycle::wait_until(std::time::Duration::from_secs(5), || {
        std::fs::File::open(&path).is_ok_and(|f| f.try_lock().is_err())
    });
    let dir = killed_run(&[cpu], None);
    let (_, stderr) = export_json(dir.path());
    let _ = holder.kill();
    let _ = holder.wait();
    let _ = std::fs::remove_file(&path);
    assert!(held, "nobody's flock was taken");
    assert!(
        stderr.contains("killed: run.json says `ended: running`"),
        "{stderr}"
    );
    assert!(!stderr.contains("may still be running"), "{stderr}");
}

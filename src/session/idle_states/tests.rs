//! On fixture trees: this project's VM has no cpuidle driver, so no real `disable` file.

use super::*;
use std::fs as stdfs;

/// A CPU root with `cpus` CPUs of states POLL (0 us), C1 (2 us), C6 (133 us); C6 of CPU 1
/// already disabled.
fn tree(cpus: usize) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    for cpu in 0..cpus {
        for (k, (name, latency)) in [("POLL", 0), ("C1", 2), ("C6", 133)]
            .into_iter()
            .enumerate()
        {
            let d = root.path().join(format!("cpu{cpu}/cpuidle/state{k}"));
            stdfs::create_dir_all(&d).unwrap();
            stdfs::write(d.join("name"), format!("{name}\n")).unwrap();
            stdfs::write(d.join("latency"), format!("{latency}\n")).unwrap();
            let off = cpu == 1 && k == 2;
            stdfs::write(d.join("disable"), if off { "1\n" } else { "0\n" }).unwrap();
        }
    }
    root
}

fn disabled(root: &Path, cpu: usize, state: u32) -> bool {
    stdfs::read_to_string(disable_file(root, cpu, state))
        .unwrap()
        .trim()
        != "0"
}

fn journals(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = stdfs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn open(dir: &Path) -> OwnedFd {
    fs::open_dir_nofollow(dir).unwrap()
}

/// The states deeper than N that were enabled are disabled and listed; at the end they are
/// enabled again, the one disabled before stays so, and the journal is gone.
#[test]
fn deeper_states_are_disabled_for_the_run_and_enabled_after() {
    let root = tree(2);
    let run = tempfile::tempdir().unwrap();
    let mut limit = IdleStateLimit::apply(root.path(), open(run.path()), &[0, 1], 0).unwrap();
    let listed: Vec<(usize, u32, &str)> = limit
        .record
        .disabled
        .iter()
        .map(|d| (d.cpu, d.state, d.name.as_str()))
        .collect();
    assert_eq!(listed, [(0, 1, "C1"), (0, 2, "C6"), (1, 1, "C1")]);
    assert_eq!(limit.record.disabled[1].latency_us, 133);
    for (cpu, state) in [(0, 1), (0, 2), (1, 1), (1, 2)] {
        assert!(disabled(root.path(), cpu, state), "cpu{cpu} state{state}");
    }
    assert!(!disabled(root.path(), 0, 0));
    let journal = format!("{PREFIX}{}", std::process::id());
    assert_eq!(journals(run.path()), std::slice::from_ref(&journal));
    let text = stdfs::read_to_string(run.path().join(&journal)).unwrap();
    assert_eq!(parse_journal(&text).unwrap(), [(0, 1), (0, 2), (1, 1)]);

    assert!(limit.restore().is_empty());
    for (cpu, state, off) in [(0, 1, false), (0, 2, false), (1, 1, false), (1, 2, true)] {
        assert_eq!(
            disabled(root.path(), cpu, state),
            off,
            "cpu{cpu} state{state}"
        );
    }
    assert!(journals(run.path()).is_empty());
}

/// Dropping the limit (an error later in the start, a panic) restores as well.
#[test]
fn drop_restores() {
    let root = tree(1);
    let run = tempfile::tempdir().unwrap();
    drop(IdleStateLimit::apply(root.path(), open(run.path()), &[0], 1).unwrap());
    assert!(!disabled(root.path(), 0, 2));
    assert!(journals(run.path()).is_empty());
}

/// A CPU without cpuidle states (as this VM's) is refused naming the driver, and nothing is
/// changed or journaled.
#[test]
fn no_states_is_refused_with_the_driver_and_nothing_changed() {
    let root = tree(1);
    stdfs::create_dir_all(root.path().join("cpuidle")).unwrap();
    stdfs::write(root.path().join("cpuidle/current_driver"), "none\n").unwrap();
    let run = tempfile::tempdir().unwrap();
    let e = IdleStateLimit::apply(root.path(), open(run.path()), &[0, 1], 0).unwrap_err();
    assert!(e.contains("CPU 1 has no cpuidle states"), "{e}");
    assert!(e.contains("the cpuidle driver is 'none'"), "{e}");
    assert!(!disabled(root.path(), 0, 1), "CPU 0 was left alone");
    assert!(journals(run.path()).is_empty());
}

/// A write that fails half way (CPU 9's state is not there) enables again what was disabled
/// and removes the journal: no half state.
#[test]
fn a_failed_write_leaves_no_half_state() {
    let root = tree(1);
    let run = tempfile::tempdir().unwrap();
    let mut planned = plan(root.path(), &[0], 0).unwrap();
    planned.push(IdleStateRecord {
        cpu: 9,
        state: 1,
        name: "C1".into(),
        latency_us: 2,
    });
    let e = IdleStateLimit::enact(root.path(), open(run.path()), 0, planned).unwrap_err();
    assert!(e.contains("cpu9/cpuidle/state1/disable"), "{e}");
    assert!(!disabled(root.path(), 0, 1) && !disabled(root.path(), 0, 2));
    assert!(journals(run.path()).is_empty());
}

/// A killed run's journal (its pid gone) is restored and removed at the next start; a live
/// process's journal and foreign names stay.
#[test]
fn a_killed_runs_journal_is_restored_at_the_next_start() {
    let root = tree(2);
    let run = tempfile::tempdir().unwrap();
    let proc_root = tempfile::tempdir().unwrap();
    for (cpu, state) in [(0, 1), (0, 2), (1, 1)] {
        set_disabled(root.path(), cpu, state, true).unwrap();
    }
    stdfs::write(
        run.path().join("idle-states-111"),
        format!("{MAGIC}\n0 1\n0 2\n"),
    )
    .unwrap();
    stdfs::write(
        run.path().join("idle-states-222"),
        format!("{MAGIC}\n1 1\n"),
    )
    .unwrap();
    stdfs::write(run.path().join("cpu1.lock"), "").unwrap();
    stdfs::create_dir(proc_root.path().join("222")).unwrap();
    let warnings = restore_stale_in(root.path(), run.path(), proc_root.path());
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("enabled again 2 cpuidle state(s)"),
        "{warnings:?}"
    );
    assert!(!disabled(root.path(), 0, 1) && !disabled(root.path(), 0, 2));
    assert!(
        disabled(root.path(), 1, 1),
        "the live run's state stays disabled"
    );
    assert_eq!(journals(run.path()), ["cpu1.lock", "idle-states-222"]);
}

/// /run/jitterlab is world-writable: a journal planted as a link, or in another format, is
/// never followed or obeyed, only named.
#[test]
fn a_planted_journal_is_not_obeyed() {
    let root = tree(1);
    let run = tempfile::tempdir().unwrap();
    let proc_root = tempfile::tempdir().unwrap();
    set_disabled(root.path(), 0, 1, true).unwrap();
    let elsewhere = run.path().join("elsewhere");
    stdfs::write(&elsewhere, format!("{MAGIC}\n0 1\n")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, run.path().join("idle-states-111")).unwrap();
    stdfs::write(run.path().join("idle-states-112"), "0 1\n../../etc 1\n").unwrap();
    let warnings = restore_stale_in(root.path(), run.path(), proc_root.path());
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings.iter().all(|w| w.contains("left alone")),
        "{warnings:?}"
    );
    assert!(
        disabled(root.path(), 0, 1),
        "nothing was restored from a planted journal"
    );
}

/// A journal that is already there (a pid reused after a kill) refuses the run rather than
/// being overwritten.
#[test]
fn an_existing_journal_of_this_pid_is_not_overwritten() {
    let root = tree(1);
    let run = tempfile::tempdir().unwrap();
    let journal = run.path().join(format!("{PREFIX}{}", std::process::id()));
    stdfs::write(&journal, format!("{MAGIC}\n0 2\n")).unwrap();
    let e = IdleStateLimit::apply(root.path(), open(run.path()), &[0], 0).unwrap_err();
    assert!(e.contains("cannot write the journal"), "{e}");
    assert!(!disabled(root.path(), 0, 1));
    assert_eq!(
        stdfs::read_to_string(&journal).unwrap(),
        format!("{MAGIC}\n0 2\n")
    );
}

//! On fixture trees: this project's VM has no cpuidle driver, so no real `disable` file.

use super::super::journal::{names_in as journals, test_dir as open};
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

/// The states deeper than N that were enabled are disabled and listed; at the end they are
/// enabled again, the one disabled before stays so, and the journal is gone.
#[test]
fn deeper_states_are_disabled_for_the_run_and_enabled_after() {
    let root = tree(2);
    let run = tempfile::tempdir().unwrap();
    let dir = open(run.path());
    let mut limit = IdleStateLimit::apply(root.path(), &dir, &[0, 1], 0).unwrap();
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
    let journal = format!("{KIND}-{}", std::process::id());
    assert_eq!(journals(dir.path()), std::slice::from_ref(&journal));
    let text = stdfs::read_to_string(dir.path().join(&journal)).unwrap();
    let lines: Vec<String> = text.lines().skip(3).map(str::to_string).collect();
    assert_eq!(parse_journal(&lines).unwrap(), [(0, 1), (0, 2), (1, 1)]);

    assert!(limit.restore().is_empty());
    for (cpu, state, off) in [(0, 1, false), (0, 2, false), (1, 1, false), (1, 2, true)] {
        assert_eq!(
            disabled(root.path(), cpu, state),
            off,
            "cpu{cpu} state{state}"
        );
    }
    assert!(journals(dir.path()).is_empty());
}

/// Dropping the limit (an error later in the start, a panic) restores as well.
#[test]
fn drop_restores() {
    let root = tree(1);
    let run = tempfile::tempdir().unwrap();
    let dir = open(run.path());
    drop(IdleStateLimit::apply(root.path(), &dir, &[0], 1).unwrap());
    assert!(!disabled(root.path(), 0, 2));
    assert!(journals(dir.path()).is_empty());
}

/// A CPU without cpuidle states (as this VM's) is refused naming the driver, and nothing is
/// changed or journaled.
#[test]
fn no_states_is_refused_with_the_driver_and_nothing_changed() {
    let root = tree(1);
    stdfs::create_dir_all(root.path().join("cpuidle")).unwrap();
    stdfs::write(root.path().join("cpuidle/current_driver"), "none\n").unwrap();
    let run = tempfile::tempdir().unwrap();
    let dir = open(run.path());
    let e = IdleStateLimit::apply(root.path(), &dir, &[0, 1], 0).unwrap_err();
    assert!(e.contains("CPU 1 has no cpuidle states"), "{e}");
    assert!(e.contains("the cpuidle driver is 'none'"), "{e}");
    assert!(!disabled(root.path(), 0, 1), "CPU 0 was left alone");
    assert!(journals(dir.path()).is_empty());
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
    let dir = open(run.path());
    let e = IdleStateLimit::enact(root.path(), &dir, 0, planned).unwrap_err();
    assert!(e.contains("cpu9/cpuidle/state1/disable"), "{e}");
    assert!(!disabled(root.path(), 0, 1) && !disabled(root.path(), 0, 2));
    assert!(journals(dir.path()).is_empty());
}

/// A killed run's journal (its writer gone) is undone: its states enabled again; one whose
/// write fails is kept for the next start; one not in the format is left alone.
#[test]
fn a_killed_runs_journal_is_undone() {
    let root = tree(2);
    let run = tempfile::tempdir().unwrap();
    let dir = open(run.path());
    for (cpu, state) in [(0, 1), (0, 2), (1, 1)] {
        set_disabled(root.path(), cpu, state, true).unwrap();
    }
    drop(Journal::create(&dir, KIND, &["0 1".into(), "0 2".into()]).unwrap());
    super::super::journal::wait_until_unlocked(&dir);
    let found = super::super::journal::scan(&dir, KIND);
    let (said, done) = undo(&found.stale[0], root.path());
    assert!(done, "{said}");
    assert!(
        said.starts_with("enabled again 2 cpuidle state(s)"),
        "{said}"
    );
    assert!(!disabled(root.path(), 0, 1) && !disabled(root.path(), 0, 2));
    assert!(disabled(root.path(), 1, 1), "not in the journal");
    let (said, done) = undo(
        &super::super::journal::Stale::fake(vec!["9 1".into()]),
        root.path(),
    );
    assert!(
        !done && said.contains("cpu9/cpuidle/state1/disable"),
        "{said}"
    );
    let (said, done) = undo(
        &super::super::journal::Stale::fake(vec!["../../etc 1".into()]),
        root.path(),
    );
    assert!(!done && said.contains("left alone"), "{said}");
}

/// A journal name that is taken (a pid reused after a kill) is not overwritten: the run
/// journals under the next free name.
#[test]
fn an_existing_journal_of_this_pid_is_not_overwritten() {
    let root = tree(1);
    let run = tempfile::tempdir().unwrap();
    let dir = open(run.path());
    let journal = dir.path().join(format!("{KIND}-{}", std::process::id()));
    stdfs::write(&journal, "earlier\n").unwrap();
    let limit = IdleStateLimit::apply(root.path(), &dir, &[0], 0).unwrap();
    assert!(disabled(root.path(), 0, 1));
    assert_eq!(stdfs::read_to_string(&journal).unwrap(), "earlier\n");
    assert_eq!(journals(dir.path()).len(), 2);
    drop(limit);
    assert_eq!(
        journals(dir.path()),
        [format!("{KIND}-{}", std::process::id())]
    );
}

//! The pass at a run's start, on temporary trees: what killed runs journaled is undone; what
//! others planted is counted once.

use super::*;
use crate::session::journal::{Journal, TrustedDir};
use std::os::unix::fs::MetadataExt;

/// A fixture: a trusted directory, a shared directory, a CPU root with CPUs 0 and 1 (states
/// 0..2, all enabled) and a cpuset root.
struct Tree {
    _base: tempfile::TempDir,
    shared: PathBuf,
    roots: Roots,
    uid: u32,
    base: PathBuf,
}

impl Tree {
    fn new() -> Tree {
        let base = tempfile::tempdir().unwrap();
        let at = |n: &str| base.path().join(n);
        for cpu in 0..2 {
            for state in 0..3 {
                let d = at(&format!("cpu/cpu{cpu}/cpuidle/state{state}"));
                std::fs::create_dir_all(&d).unwrap();
                std::fs::write(d.join("disable"), "0\n").unwrap();
            }
        }
        std::fs::create_dir(at("shared")).unwrap();
        std::fs::create_dir(at("cpuset")).unwrap();
        std::fs::write(at("cpuset/tasks"), "").unwrap();
        Tree {
            shared: at("shared"),
            roots: Roots {
                cpu: at("cpu"),
                cpuset: at("cpuset"),
                settings: at("settings"),
            },
            uid: crate::sys::process::effective_user_id(),
            base: base.path().to_path_buf(),
            _base: base,
        }
    }

    fn dir(&self) -> TrustedDir {
        TrustedDir::open_in(&self.base, "trusted", self.uid, true).unwrap()
    }

    fn undo(&self) -> Vec<String> {
        crate::journal::wait_until_unlocked(&self.dir());
        undo_in(Ok(self.dir()), &self.shared, &self.roots)
    }

    fn disabled(&self, cpu: usize, state: u32) -> bool {
        let p = self
            .roots
            .cpu
            .join(format!("cpu{cpu}/cpuidle/state{state}/disable"));
        std::fs::read_to_string(p).unwrap().trim() != "0"
    }
}

/// R16: 2,000 entries named as idle-state journals planted in the shared directory (by
/// another user, as root can make them here) are not obeyed and make one warning with their
/// count, not one each (run.json grew from 24 KB to 338 KB).
#[test]
fn journals_planted_in_the_shared_directory_are_counted_once() {
    let tree = Tree::new();
    let root = tree.uid == 0;
    let text = "#jitterlab-journal 1 idle-states\nboot x\npid 1\n0 1\n";
    for pid in 0..2000 {
        let p = tree.shared.join(format!("idle-states-{}", 100_000 + pid));
        std::fs::write(&p, text).unwrap();
        if root {
            std::os::unix::fs::chown(&p, Some(65534), None).unwrap();
        }
    }
    std::fs::write(tree.shared.join("cpu1.lock"), "").unwrap();
    let warnings = undo_in(Err(None), &tree.shared, &tree.roots);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with(&format!(
            "ignored 2000 entries in {} named as journals (e.g. 'idle-states-100000', 'idle-states-100001', 'idle-states-100002', ...)",
            tree.shared.display()
        )),
        "{warnings:?}"
    );
    assert!(warnings[0].len() < 600, "{}", warnings[0]);
    // With a trusted directory too: still that one line, and nothing was obeyed.
    std::fs::write(tree.roots.cpu.join("cpu0/cpuidle/state1/disable"), "1\n").unwrap();
    assert_eq!(tree.undo().len(), 1);
    assert!(tree.disabled(0, 1), "a planted journal is never obeyed");
    assert_eq!(std::fs::read_dir(&tree.shared).unwrap().count(), 2001);
}

/// Journals of killed runs (their writers gone) are undone and removed, each kind by its
/// module; a live writer's journal is left alone; foreign entries in the trusted directory
/// make one warning.
#[test]
fn killed_runs_journals_are_undone_and_a_live_ones_kept() {
    let tree = Tree::new();
    let dir = tree.dir();
    for (cpu, state) in [(0, 1), (0, 2), (1, 1)] {
        std::fs::write(
            tree.roots
                .cpu
                .join(format!("cpu{cpu}/cpuidle/state{state}/disable")),
            "1\n",
        )
        .unwrap();
    }
    // A killed run: its journal written, then its writer gone (dropped without remove).
    drop(Journal::create(&dir, "idle-states", &["0 1".into(), "0 2".into()]).unwrap());
    // A live run.
    let live = Journal::create(&dir, "idle-states", &["1 1".into()]).unwrap();
    // A killed run's cpuset, journaled with its inode.
    let cpuset = tree.roots.cpuset.join("jitterlab-111");
    std::fs::create_dir(&cpuset).unwrap();
    let inode = std::fs::metadata(&cpuset).unwrap().ino();
    drop(
        Journal::create(
            &dir,
            "cpuset",
            &["cpuset jitterlab-111".into(), format!("inode {inode}")],
        )
        .unwrap(),
    );
    std::fs::write(dir.path().join("cpuset-9"), "planted").unwrap();
    std::fs::write(dir.path().join("cpu1.lock"), "").unwrap();
    let warnings = tree.undo();
    assert_eq!(warnings.len(), 3, "{warnings:?}");
    assert!(
        warnings[0].starts_with("enabled again 2 cpuidle state(s) that a jitterlab (pid "),
        "{warnings:?}"
    );
    assert!(
        warnings[1].starts_with(&format!(
            "removed the cpuset {} left by a jitterlab (pid ",
            cpuset.display()
        )),
        "{warnings:?}"
    );
    assert!(
        warnings[2].starts_with(&format!(
            "ignored 1 entry in {} named as journals that this user's jitterlab did not write",
            dir.path().display()
        )),
        "{warnings:?}"
    );
    assert!(!tree.disabled(0, 1) && !tree.disabled(0, 2));
    assert!(tree.disabled(1, 1), "the live run's state stays disabled");
    assert!(!cpuset.exists(), "the killed run's cpuset is removed");
    let mut left = dir.names();
    left.sort();
    assert_eq!(
        left,
        [
            "cpu1.lock".to_string(),
            "cpuset-9".into(),
            format!("idle-states-{}-2", std::process::id())
        ]
    );
    live.remove().unwrap();
}

/// Without a trusted directory nothing is read; one that cannot be trusted says so once.
#[test]
fn no_trusted_directory_reads_nothing() {
    let tree = Tree::new();
    assert!(undo_in(Err(None), &tree.shared, &tree.roots).is_empty());
    let w = undo_in(
        Err(Some("X is not trusted".into())),
        &tree.shared,
        &tree.roots,
    );
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("X is not trusted"), "{w:?}");
}

/// The hostile re-run's L8: a killed run whose cpuset (or tracing instance, or load cgroup)
/// was gone by the next start was cleaned up in silence, so the user never learned the run
/// was killed. Now each killed run is said once, with what its journals named.
#[test]
fn a_killed_run_whose_state_is_gone_is_said_once() {
    let tree = Tree::new();
    let dir = tree.dir();
    // Two journals of one killed run, naming a cpuset that is no longer there.
    for (n, inode) in [(111, 7), (112, 8)] {
        drop(
            Journal::create(
                &dir,
                "cpuset",
                &[format!("cpuset jitterlab-{n}"), format!("inode {inode}")],
            )
            .unwrap(),
        );
    }
    let warnings = tree.undo();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with(&format!(
            "a jitterlab (pid {}) was killed during this boot: its journals in {} named a cpuset, which were gone already",
            std::process::id(),
            dir.path().display()
        )),
        "{warnings:?}"
    );
    assert!(dir.names().is_empty(), "{:?}", dir.names());
}

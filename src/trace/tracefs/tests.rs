use super::*;

#[test]
fn finds_tracefs_or_tracing_under_debugfs() {
    let m = "proc /proc proc rw 0 0\ntracefs /sys/kernel/tracing tracefs rw 0 0\n";
    assert_eq!(
        mount_from_mounts(m, |_| false).as_deref(),
        Some("/sys/kernel/tracing")
    );
    let m = "debugfs /sys/kernel/debug debugfs rw 0 0\n";
    assert_eq!(
        mount_from_mounts(m, |p| p == "/sys/kernel/debug/tracing/trace").as_deref(),
        Some("/sys/kernel/debug/tracing")
    );
    assert_eq!(mount_from_mounts(m, |_| false), None);
}

/// Ground truth from this kernel: a filter it cannot parse is EINVAL (the refusal
/// `TraceSetup::start` works around for the `.function` form on kernels before 6.2), while
/// a write to a control file that does not exist is another error, which is not ignored.
#[test]
fn the_kernel_refuses_a_filter_it_cannot_parse_with_einval() {
    let Some(root) = find().ok() else {
        if std::env::var_os("JITTERLAB_REQUIRE_RT").is_some() {
            panic!("tracefs is required: {}", find().unwrap_err());
        }
        eprintln!(
            "SKIPPED the_kernel_refuses_a_filter: {}",
            find().unwrap_err()
        );
        return;
    };
    let instance = Instance::create(&root, &instance_name(std::process::id())).unwrap();
    let refused = instance
        .write("events/sched/sched_waking/filter", "no_such_field == 1")
        .unwrap_err();
    assert!(refused.is_value_refused(), "{refused}");
    assert!(
        refused.to_string().contains("no_such_field == 1"),
        "{refused}"
    );
    let absent = instance.write("no_such_control_file", "1").unwrap_err();
    assert!(!absent.is_value_refused(), "{absent}");
    instance
        .write("events/sched/sched_waking/filter", "pid == 1")
        .unwrap();
}

/// A trusted directory of this user in a fresh temporary directory.
fn trusted() -> (tempfile::TempDir, TrustedDir) {
    let base = tempfile::tempdir().unwrap();
    let uid = crate::sys::process::effective_user_id();
    let dir = TrustedDir::open_in(base.path(), "trusted", uid, true).unwrap();
    (base, dir)
}

/// The instance as a SIGKILL leaves it: still there, its journal without a writer.
fn killed(mut instance: Instance) {
    drop(instance.journal.take());
    instance.removed = true;
}

/// The stale journals of this kind in `dir`, each undone; what was said.
fn undo_all(dir: &TrustedDir) -> Vec<String> {
    let mut said = Vec::new();
    crate::journal::wait_until_unlocked(dir);
    for stale in crate::journal::scan(dir, KIND).stale {
        let (s, done) = undo(&stale);
        said.extend(s);
        if done {
            stale.remove(dir);
        }
    }
    said
}

/// On a fake tracefs: the instance a killed run made (its journal without a writer, the
/// same inode) is removed at the next start, and its journal with it; a same-named
/// instance no journal names, or made again since (another inode), is left alone; a live
/// run's is not touched; a normal end leaves neither instance nor journal.
#[test]
fn only_the_journaled_instance_of_a_killed_run_is_removed() {
    let t = tempfile::tempdir().unwrap();
    let (_base, dir) = trusted();
    let instances = t.path().join("instances");
    fs::create_dir(&instances).unwrap();
    killed(Instance::create_in(t.path(), "jitterlab-111", &dir).unwrap());
    fs::create_dir(instances.join("jitterlab-222")).unwrap();
    let live = Instance::create_in(t.path(), "jitterlab-333", &dir).unwrap();
    let said = undo_all(&dir);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].starts_with("removed the tracing instance ") && said[0].contains("jitterlab-111"),
        "{said:?}"
    );
    assert!(!instances.join("jitterlab-111").exists());
    assert!(instances.join("jitterlab-222").exists(), "not journaled");
    assert!(instances.join("jitterlab-333").exists(), "a live run's");
    assert_eq!(dir.names().len(), 1, "{:?}", dir.names());
    drop(live);
    assert!(!instances.join("jitterlab-333").exists());
    assert!(dir.names().is_empty(), "{:?}", dir.names());
    // Made again after the kill: another inode, not ours.
    killed(Instance::create_in(t.path(), "jitterlab-444", &dir).unwrap());
    // (Moved away, not removed: a file system may hand a freed inode out again at once.)
    fs::rename(instances.join("jitterlab-444"), instances.join("moved")).unwrap();
    fs::create_dir(instances.join("jitterlab-444")).unwrap();
    fs::create_dir(instances.join("jitterlab-444/keep")).unwrap();
    assert!(undo_all(&dir).is_empty());
    assert!(instances.join("jitterlab-444/keep").exists());
    assert!(dir.names().is_empty(), "{:?}", dir.names());
    // An existing instance of that name is refused, never taken over.
    let e = Instance::create_in(t.path(), "jitterlab-444", &dir).unwrap_err();
    assert!(e.contains("already exists"), "{e}");
    assert!(dir.names().is_empty(), "{:?}", dir.names());
}

/// A journal killed before its inode was recorded, one of another boot, one whose path is
/// not an instance: nothing is removed.
#[test]
fn an_uncertain_or_malformed_journal_removes_nothing() {
    let t = tempfile::tempdir().unwrap();
    let inst = t.path().join("instances/jitterlab-555");
    fs::create_dir_all(&inst).unwrap();
    let line = format!("instance {}", inst.display());
    let (said, done) = undo(&Stale::fake(vec![line.clone()]));
    assert!(said.unwrap().contains("not certain"));
    assert!(done && inst.exists());
    let ino = fs::metadata(&inst).unwrap().ino();
    let mut other_boot = Stale::fake(vec![line, format!("inode {ino}")]);
    other_boot.this_boot = false;
    assert_eq!(undo(&other_boot), (None, true));
    assert!(inst.exists());
    for bad in ["/etc", "instances/jitterlab-555", "/tmp/x/jitterlab-555"] {
        let (said, done) = undo(&Stale::fake(vec![
            format!("instance {bad}"),
            format!("inode {ino}"),
        ]));
        assert!(said.unwrap().contains("not a tracing instance journal"));
        assert!(!done);
    }
    assert!(inst.exists());
}

/// On this kernel's tracefs (as root): the instance of a killed run is removed by its
/// journal, with the inode tracefs gave it.
#[test]
fn a_killed_runs_real_instance_is_removed_by_its_journal() {
    let Ok(root) = find() else {
        eprintln!(
            "SKIPPED a_killed_runs_real_instance: {}",
            find().unwrap_err()
        );
        return;
    };
    let (_base, dir) = trusted();
    let name = format!("{INSTANCE_PREFIX}{}-unit", std::process::id());
    let made = Instance::create_in(&root, &name, &dir).unwrap();
    let path = made.path.clone();
    killed(made);
    assert!(path.is_dir());
    let said = undo_all(&dir);
    let gone = !path.exists();
    if !gone {
        let _ = fs::remove_dir(&path);
    }
    assert!(gone, "{said:?}");
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].starts_with(&format!("removed the tracing instance {}", path.display())),
        "{said:?}"
    );
    assert!(dir.names().is_empty(), "{:?}", dir.names());
}

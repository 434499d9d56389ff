//! The holders of a CPU's lock, and what stops a run.

use super::*;

#[test]
fn the_holder_is_read_from_proc_locks() {
    let locks = "1: FLOCK  ADVISORY  WRITE 10834 fe:00:5400194 0 EOF\n\
                 1: -> FLOCK  ADVISORY  WRITE 999 fe:00:77 0 EOF\n\
                 2: FLOCK  ADVISORY  WRITE 4242 fe:00:77 0 EOF\n\
                 3: POSIX  ADVISORY  WRITE 5 fe:00:78 0 EOF\n";
    assert_eq!(holder_in(locks, "fe:00:77"), Some(4242));
    assert_eq!(holder_in(locks, "fe:00:5400194"), Some(10834));
    assert_eq!(holder_in(locks, "fe:00:78"), None, "not a flock");
}

/// The holder is described by its user, command line and whether it is jitterlab: a
/// `sleep` is not; this process is (the same executable), whatever its name.
#[test]
fn the_holder_is_named_with_its_user_and_command() {
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let pid = child.id();
    // Until the child has become sleep (before its exec it is a copy of this process).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default() != b"sleep\x0030\x00" {
        assert!(std::time::Instant::now() < deadline, "sleep did not start");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let text = describe_holder(Path::new("/proc"), pid, false);
    let in_root_dir = describe_holder(Path::new("/proc"), pid, true);
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        text.starts_with("a process that is not this jitterlab (any user can lock"),
        "{text}"
    );
    // F2: in root's own directory only root locks; a held lock file is never to be removed.
    assert!(
        in_root_dir.starts_with("a process of root that is not this jitterlab: another build of jitterlab, or another program of root (only root can lock the files of /run/jitterlab-root; if it is not measuring, end it with kill "),
        "{in_root_dir}"
    );
    for t in [&text, &in_root_dir] {
        assert!(!t.contains("remove"), "{t}");
    }
    assert!(!in_root_dir.contains("any user"), "{in_root_dir}");
    assert!(text.contains(&format!("kill {pid}")), "{text}");
    assert!(text.contains(&format!("pid {pid} of ")), "{text}");
    assert!(text.ends_with("'sleep 30'"), "{text}");
    let uid = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    assert!(text.contains(&format!("uid {uid})")), "{text}");
    let me = std::process::id();
    let text = describe_holder(Path::new("/proc"), me, true);
    assert!(text.starts_with("another jitterlab run: pid"), "{text}");
    // Another build (another executable that calls itself jitterlab): said as one.
    use std::os::unix::process::CommandExt;
    let mut other = std::process::Command::new("sleep")
        .arg0("/opt/old/jitterlab")
        .arg("30")
        .spawn()
        .unwrap();
    let pid = other.id();
    while !String::from_utf8_lossy(
        &std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default(),
    )
    .starts_with("/opt/old/jitterlab")
    {
        assert!(std::time::Instant::now() < deadline, "sleep did not start");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let text = describe_holder(Path::new("/proc"), pid, true);
    let _ = other.kill();
    let _ = other.wait();
    assert!(
        text.starts_with("another jitterlab run of another build or path (its executable is not this one's; if it is not measuring, end it with kill "),
        "{text}"
    );
}

/// Holders in one process share the lock: a sweep holds its CPUs around its levels' runs.
#[test]
fn one_process_takes_its_own_locks_again() {
    // A CPU number no test run measures, so that this unit test never meets a real run.
    let cpu = 65_000;
    let Ok((outer, warnings)) = take(&[cpu], false) else {
        panic!("the first lock is taken");
    };
    if !warnings.is_empty() {
        eprintln!("SKIPPED one_process_takes_its_own_locks_again: {warnings:?}");
        return;
    }
    let (inner, warnings) = take(&[cpu], false).expect("taken again by its holder");
    assert!(warnings.is_empty(), "{warnings:?}");
    drop(inner);
    assert!(
        HELD.lock().unwrap().get(&cpu).unwrap().upgrade().is_some(),
        "still held by the outer holder"
    );
    drop(outer);
    assert!(HELD.lock().unwrap().get(&cpu).unwrap().upgrade().is_none());
    let _ = std::fs::remove_file(format!("{LOCK_DIR}/cpu{cpu}.lock"));
    let _ = std::fs::remove_file(format!("{}/cpu{cpu}.lock", super::super::journal::ROOT_DIR));
}

/// What stops a root run: a jitterlab run or a root process, or a holder it cannot see;
/// another user's process that is not jitterlab does not.
#[test]
fn only_jitterlab_or_root_holders_stop_a_root_run() {
    let holder = |uid, jitterlab| Holder {
        pid: 7,
        uid,
        jitterlab,
        tune: false,
        text: String::new(),
    };
    assert!(holder(Some(65534), false).cannot_stop_root());
    assert!(!holder(Some(65534), true).cannot_stop_root());
    assert!(!holder(Some(0), false).cannot_stop_root());
    assert!(!holder(None, false).cannot_stop_root());
}

/// M1 (eighth hostile re-run): the refusal's advice fits the holder and the taker. A run
/// refused by a tune (which holds every CPU) is not told to pick other CPUs; a run refused by
/// a run is; a tune is told to wait.
#[test]
fn a_refusal_advises_what_helps() {
    let holder = |tune| Holder {
        pid: 7,
        uid: Some(0),
        jitterlab: true,
        tune,
        text: "another jitterlab run: pid 7".into(),
    };
    let by_run = refusal(1, &[holder(false)], "another jitterlab run: pid 7", false).message;
    assert!(
        by_run.contains("measure other CPUs with --cpus"),
        "{by_run}"
    );
    let by_tune = refusal(1, &[holder(true)], "another jitterlab run: pid 7", false).message;
    assert!(by_tune.contains("no --cpus avoids it"), "{by_tune}");
    assert!(by_tune.contains("pass --allow-shared-cpus"), "{by_tune}");
    assert!(!by_tune.contains("measure other CPUs"), "{by_tune}");
    let for_tune = refusal(1, &[holder(false)], "another jitterlab run: pid 7", true).message;
    assert!(for_tune.contains("wait for it to end"), "{for_tune}");
    assert!(!for_tune.contains("pass --allow-shared-cpus"), "{for_tune}");
}

/// D16: another user's process that is not jitterlab (nobody's `flock ... sleep`, whose
/// lock `sleep` shares) holding a CPU's lock does not stop a root run: it measures, with
/// a warning naming the holder. The same lock stops a run of another user (not root), and
/// a lock held in root's own directory stops a root run. Needs root and setpriv.
#[test]
fn a_lock_held_by_another_users_program_does_not_stop_root() {
    if crate::sys::process::effective_user_id() != 0
        || std::process::Command::new("setpriv")
            .arg("--help")
            .output()
            .is_err()
    {
        eprintln!(
            "SKIPPED a_lock_held_by_another_users_program_does_not_stop_root: needs root and setpriv"
        );
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let base = tempfile::tempdir().unwrap();
    std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let shared = base.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o755)).unwrap();
    // A CPU number no test run measures, so that HELD never meets a real run's.
    let cpu = 65_001;
    let lock = shared.join(format!("cpu{cpu}.lock"));
    std::fs::write(&lock, "").unwrap();
    let mut holder = std::process::Command::new("setpriv")
        .args([
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            "flock",
            "-s",
        ])
        .arg(&lock)
        .args(["sleep", "30"])
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !std::fs::read_to_string("/proc/locks")
        .unwrap()
        .contains(&format!(" {} ", holder.id()))
    {
        assert!(std::time::Instant::now() < deadline, "flock did not lock");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let own = TrustedDir::open_in(base.path(), "own", 0, true).unwrap();
    let places = |root, own| Places {
        shared: shared.clone(),
        own,
        proc: PathBuf::from("/proc"),
        root,
        for_settings: false,
    };
    let user = take_in(&[cpu], false, &places(false, None));
    let (locks, warnings) = take_in(&[cpu], false, &places(true, Some(Ok(own)))).unwrap();
    let _ = holder.kill();
    let _ = holder.wait();
    let e = user.expect_err("a user's run is stopped as before").message;
    assert!(e.contains("a process that is not this jitterlab"), "{e}");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let w = &warnings[0];
    assert!(
        w.contains(&format!("is held by a process that is not this jitterlab (any user can lock the files of {LOCK_DIR}; if it is not measuring, end it with kill ")),
        "{w}"
    );
    assert!(w.contains(&format!("pid {}", holder.id())), "{w}");
    assert!(w.contains("of user nobody (uid 65534)"), "{w}");
    // flock forks sleep, which shares its lock: both are named.
    assert!(
        w.contains("(and 1 more process sharing its lock: pid "),
        "{w}"
    );
    assert!(w.contains("does not stop a root run"), "{w}");
    assert!(
        w.contains("root runs still exclude each other through"),
        "{w}"
    );
    drop(locks);
    // Root's own lock, held elsewhere (here by another open of this process), stops it.
    let own_dir = TrustedDir::open_in(base.path(), "own", 0, false).unwrap();
    let other = open_lock_file(own_dir.fd(), cpu + 1).unwrap();
    assert!(fs::try_lock_exclusive(other.as_fd()).unwrap());
    let e = take_in(&[cpu + 1], false, &places(true, Some(Ok(own_dir)))).unwrap_err();
    assert!(
        e.message.starts_with(&format!(
            "CPU {} is being measured by another jitterlab run",
            cpu + 1
        )),
        "{}",
        e.message
    );
}

#[test]
fn a_long_command_line_is_cut_and_says_how_much_was_left_out() {
    assert_eq!(
        shortened("flock cpu0.lock sleep 9"),
        "flock cpu0.lock sleep 9"
    );
    let long = format!("x {}", "é".repeat(1000));
    let cut = shortened(&long);
    assert!(
        cut.starts_with("x éé") && cut.ends_with("... (1404 more bytes)"),
        "{cut}"
    );
    assert_eq!(
        cut.chars().count(),
        MAX_COMMAND_CHARS + "... (1404 more bytes)".len()
    );
}

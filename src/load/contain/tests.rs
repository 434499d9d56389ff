use super::*;

/// `sh -c 'setsid sleep ARG &'` with the marker of load `k` of a made-up owner: a process
/// outside its starter's group and session, as a load's daemon would be.
fn escaped_sleep(owner: u32, k: usize, arg: &str) {
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!("setsid sleep {arg} >/dev/null 2>&1 &"))
        .env(MARKER_ENV, marker(owner, k))
        .status()
        .unwrap();
    assert!(status.success());
}

fn sleeping(arg: &str) -> Vec<Pid> {
    let wanted = format!("sleep\0{arg}\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<Pid>().ok())
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| c.ends_with(wanted.as_bytes()))
        })
        .collect()
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !done() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

// The fallback, without cgroups: the marker of one load finds its escaped processes and
// only those; the reaper's sweep finds every load's of one owner and no other owner's.
#[test]
fn the_marker_finds_and_kills_escaped_processes() {
    // Owners that are no real jitterlab: pids above the kernel's limit (PID_MAX_LIMIT, 2^22).
    let (owner, other) = (4_194_305, 4_194_306);
    escaped_sleep(owner, 1, "2001.11");
    escaped_sleep(owner, 12, "2001.12");
    escaped_sleep(other, 1, "2001.13");
    wait_for("the sleeps started", || {
        ["2001.11", "2001.12", "2001.13"]
            .iter()
            .all(|a| !sleeping(a).is_empty())
    });
    let load1 = LoadContainer {
        cgroup: None,
        cpuset: None,
        bound: None,
        entry: marker_entry(owner, 1),
    };
    assert_eq!(load1.pids(), sleeping("2001.11"));
    let killed = load1.kill_all();
    assert_eq!(killed.len(), 1, "{killed:?}");
    wait_for("load 1's sleep ended", || sleeping("2001.11").is_empty());
    assert_eq!(sleeping("2001.12").len(), 1, "load 12 is another load");
    sweep(owner, None);
    wait_for("load 12's sleep ended", || sleeping("2001.12").is_empty());
    assert_eq!(sleeping("2001.13").len(), 1, "another owner's load");
    sweep(other, None);
    wait_for("the other owner's sleep ended", || {
        sleeping("2001.13").is_empty()
    });
}

/// A load left by a jitterlab killed with its reaper, outside any cgroup jitterlab looks
/// at (here: none), is found by its marker and killed at the next start; a live owner's is
/// left alone.
#[test]
fn orphaned_loads_are_killed_by_marker_wherever_they_are() {
    let mut gone = Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    // A live owner that is not this test process (whose own loads other tests may run).
    let mut owner = Command::new("sleep").arg("2001.20").spawn().unwrap();
    let alive = owner.id();
    escaped_sleep(dead, 3, "2001.21");
    escaped_sleep(alive, 3, "2001.22");
    wait_for("the sleeps started", || {
        !sleeping("2001.21").is_empty() && !sleeping("2001.22").is_empty()
    });
    let orphan = sleeping("2001.21");
    let warning = kill_orphaned_loads().expect("the orphan was killed");
    assert!(warning.contains(&orphan[0].to_string()), "{warning}");
    wait_for("the orphan ended", || sleeping("2001.21").is_empty());
    assert_eq!(sleeping("2001.22").len(), 1, "a live owner's load is kept");
    sweep(alive, None);
    wait_for("the live owner's sleep ended", || {
        sleeping("2001.22").is_empty()
    });
    let _ = owner.kill();
    let _ = owner.wait();
}

/// A cgroup of a jitterlab killed with its reaper (its journal without a writer) is
/// emptied and removed at the next start by its journal, the loads in it killed; a cgroup
/// of the same form that no journal names (another container's run), and one made again
/// since (another inode), are left alone.
#[test]
fn only_a_journaled_cgroup_of_a_killed_run_is_removed() {
    let Ok(parent) = own_cgroup_dir() else {
        eprintln!("SKIPPED: no usable cgroup v2 here");
        return;
    };
    let base = tempfile::tempdir().unwrap();
    let uid = process::effective_user_id();
    let journals = TrustedDir::open_in(base.path(), "trusted", uid, true).unwrap();
    let ours = parent.join(format!("{CGROUP_PREFIX}4194307-0"));
    let foreign = parent.join(format!("{CGROUP_PREFIX}4194307-1"));
    let again = parent.join(format!("{CGROUP_PREFIX}4194307-2"));
    let Ok((_, journal)) = make_journaled(&ours, &journals, "cgroup") else {
        eprintln!("SKIPPED: cannot make cgroups in {}", parent.display());
        return;
    };
    // Killed: the journal stays, without its writer.
    drop(journal);
    let (_, journal) = make_journaled(&again, &journals, "cgroup").unwrap();
    drop(journal);
    // Made again: kernfs gives the new directory another inode (its ids are not reused).
    std::fs::remove_dir(&again).unwrap();
    for d in [&foreign, &again] {
        std::fs::create_dir(d).unwrap();
    }
    std::fs::create_dir(ours.join("load-0")).unwrap();
    // Not this test's child (whose zombie would wait for this test): the shell's, which
    // exits at once.
    let started = Command::new("sh")
        .args(["-c", "sleep 2001.30 >/dev/null 2>&1 & echo $!"])
        .output()
        .unwrap();
    let load: Pid = String::from_utf8_lossy(&started.stdout)
        .trim()
        .parse()
        .unwrap();
    std::fs::write(ours.join("load-0/cgroup.procs"), load.to_string()).unwrap();
    let mut said = Vec::new();
    crate::journal::wait_until_unlocked(&journals);
    for stale in crate::journal::scan(&journals, KIND).stale {
        let (s, done) = undo(&stale);
        said.extend(s);
        assert!(done);
        stale.remove(&journals);
    }
    let left = (ours.exists(), foreign.exists(), again.exists());
    for d in [&ours, &foreign, &again] {
        kill_and_remove_cgroup(d);
    }
    let survivors = sleeping("2001.30");
    for &p in &survivors {
        let _ = process::kill(p, signal::SIGKILL);
    }
    assert!(
        survivors.is_empty(),
        "the load in the killed run's cgroup lives"
    );
    assert_eq!(left, (false, true, true), "(ours, foreign, made again)");
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(said[0].contains(&load.to_string()), "{said:?}");
    assert!(journals.names().is_empty(), "{:?}", journals.names());
}

/// N13's cpuset, after a SIGKILL of jitterlab and its reaper: the v1 cpuset of the `exec`
/// loads (journaled `cpuset DIR`) is removed at the next start by its journal, the load in it
/// killed, like the loads' cgroup; while it stood, the load in it could not take a CPU
/// outside it.
#[test]
fn a_killed_runs_load_cpuset_is_removed_and_held_its_load() {
    let Ok(cpuset::Place::V1(own)) = cpuset::place() else {
        eprintln!("SKIPPED: no cgroup v1 cpuset hierarchy usable here");
        return;
    };
    let online = crate::cpulist::online_cpus().unwrap_or_default();
    let Some(&last) = online.last().filter(|_| online.len() >= 2) else {
        eprintln!("SKIPPED: needs two online CPUs");
        return;
    };
    let base = tempfile::tempdir().unwrap();
    let uid = process::effective_user_id();
    let journals = TrustedDir::open_in(base.path(), "trusted", uid, true).unwrap();
    let name = format!("{CGROUP_PREFIX}4194307-9");
    let mut parent = cpuset::Parent::make(&name, None, Ok(&journals)).unwrap();
    let dir = parent.dir().to_path_buf();
    assert_eq!(dir, own.join(&name));
    let load_dir = parent.for_load(0, &[last], None).unwrap().unwrap();
    let started = Command::new("sh")
        .args(["-c", "sleep 2001.31 >/dev/null 2>&1 & echo $!"])
        .output()
        .unwrap();
    let load: Pid = String::from_utf8_lossy(&started.stdout)
        .trim()
        .parse()
        .unwrap();
    std::fs::write(load_dir.join("cgroup.procs"), load.to_string()).unwrap();
    let allowed = || {
        std::fs::read_to_string(format!("/proc/{load}/status"))
            .unwrap()
            .lines()
            .find_map(|l| Some(l.strip_prefix("Cpus_allowed_list:")?.trim().to_string()))
            .unwrap()
    };
    assert_eq!(allowed(), last.to_string());
    // Its own affinity is its to change, but not beyond the cpuset.
    let moved = Command::new("taskset")
        .args(["-p", "-c", "0", &load.to_string()])
        .output();
    if let Ok(moved) = moved {
        assert!(!moved.status.success(), "taskset moved the load to CPU 0");
        assert_eq!(allowed(), last.to_string());
    }
    // Killed with its reaper: the journal stays, without its writer, and the cpuset.
    if let cpuset::Parent::V1 { journal, .. } = &mut parent {
        drop(journal.take());
    }
    // No drop of its own: the containment removes it, and here nothing does.
    drop(parent);
    crate::journal::wait_until_unlocked(&journals);
    let mut said = Vec::new();
    for stale in crate::journal::scan(&journals, KIND).stale {
        let (s, done) = undo(&stale);
        said.extend(s);
        assert!(done);
        stale.remove(&journals);
    }
    let left = dir.exists();
    kill_and_remove_cgroup(&dir);
    let survivors = sleeping("2001.31");
    for &p in &survivors {
        let _ = process::kill(p, signal::SIGKILL);
    }
    assert!(
        survivors.is_empty(),
        "the load in the killed run's cpuset lives"
    );
    assert!(!left, "{} is left", dir.display());
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].contains(&dir.display().to_string()) && said[0].contains(&load.to_string()),
        "{said:?}"
    );
    assert!(journals.names().is_empty(), "{:?}", journals.names());
}

/// S2 (tenth hostile re-run): only this user's processes are read for a marker, so another
/// user's processes (here one of `nobody` carrying a marker) cost one stat each and are never
/// listed, nor killed as orphaned loads. S2b (eleventh): nor is one whose effective uid is
/// this user's but whose real uid is another's, as a setuid-root program another user started
/// (here `nobody`'s real uid with root's effective and saved ones: its /proc/PID is root's).
#[test]
fn only_this_users_processes_are_searched_for_a_marker() {
    if process::effective_user_id() != 0 {
        eprintln!("SKIPPED: starting another user's process needs root");
        return;
    }
    use std::os::unix::process::CommandExt;
    let (owner, k) = (PID_MAX_LIMIT + 77, 3);
    let entry = marker_entry(owner, k);
    let start = |uid: Option<u32>, setuid_shape: bool| {
        let mut cmd = Command::new("sleep");
        cmd.arg("30").env(MARKER_ENV, marker(owner, k));
        if let Some(uid) = uid {
            cmd.uid(uid);
        }
        if setuid_shape {
            // SAFETY: set_user_ids is async-signal-safe; nothing else runs in the child.
            unsafe {
                cmd.pre_exec(|| process::set_user_ids(65534, 0, 0));
            }
        }
        cmd.spawn().unwrap()
    };
    let (mut ours, mut theirs, mut setuid) = (
        start(None, false),
        start(Some(65534), false),
        start(None, true),
    );
    let (our_pid, their_pid, setuid_pid) =
        (ours.id() as Pid, theirs.id() as Pid, setuid.id() as Pid);
    // Each is listed once it has exec'd (its environment is then the marker's).
    let mut found = Vec::new();
    wait_for("our marked sleep is found", || {
        found = marked(&|e| e == entry.as_slice());
        found.contains(&our_pid)
    });
    // The setuid-shaped one has exec'd too (its uids are as set), and /proc/PID is root's.
    wait_for("the setuid-shaped sleep has exec'd", || {
        std::fs::read(format!("/proc/{setuid_pid}/environ"))
            .is_ok_and(|e| e.split(|&b| b == 0).any(|v| v == entry.as_slice()))
    });
    assert_eq!(process::user_ids(setuid_pid), Some([65534, 0, 0, 0]));
    let found_after = marked(&|e| e == entry.as_slice());
    for child in [&mut ours, &mut theirs, &mut setuid] {
        let _ = child.kill();
        let _ = child.wait();
    }
    assert!(!found.contains(&their_pid), "{found:?}");
    assert!(found_after.contains(&our_pid), "{found_after:?}");
    assert!(!found_after.contains(&setuid_pid), "{found_after:?}");
}

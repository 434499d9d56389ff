//! The cgroup v2 partition on a fixture tree whose scripted files play the kernel's part (this
//! host's cgroup2 has no cpuset controller; the lab's check 4 runs the real one).

use super::stale::undo;
use super::*;
use crate::session::journal::{Stale, scan};
use std::collections::HashMap;
use std::sync::Mutex;

/// A cgroup2 tree in a temporary directory: writes land in files, except those scripted to
/// be refused (with an errno) or to read back something else, as the kernel does.
#[derive(Debug, Default)]
struct Fixture {
    /// File name -> errno for a write of the given value (None: any value).
    refuse: Mutex<HashMap<(String, Option<String>), i32>>,
    /// (file name, value written) -> what the file then holds.
    rewrite: Mutex<HashMap<(String, String), String>>,
    /// Every write and mkdir/rmdir, in order: "path-below-mount value".
    log: Mutex<Vec<String>>,
    mount: PathBuf,
}

impl Fixture {
    fn rel(&self, path: &Path) -> String {
        path.strip_prefix(&self.mount)
            .unwrap_or(path)
            .display()
            .to_string()
    }
    fn refuse(&self, file: &str, value: Option<&str>, errno: i32) {
        let key = (file.to_string(), value.map(str::to_string));
        self.refuse.lock().unwrap().insert(key, errno);
    }
    fn rewrite(&self, file: &str, value: &str, holds: &str) {
        let key = (file.to_string(), value.to_string());
        self.rewrite.lock().unwrap().insert(key, holds.into());
    }
    fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

impl Cgroupfs for Fixture {
    fn read(&self, path: &Path) -> io::Result<String> {
        fs::read_to_string(path)
    }
    fn write(&self, path: &Path, value: &str) -> io::Result<()> {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let refuse = self.refuse.lock().unwrap();
        let errno = refuse
            .get(&(name.clone(), Some(value.to_string())))
            .or_else(|| refuse.get(&(name.clone(), None)));
        if let Some(&errno) = errno {
            return Err(io::Error::from_raw_os_error(errno));
        }
        self.log
            .lock()
            .unwrap()
            .push(format!("{} {value}", self.rel(path)));
        let holds = self
            .rewrite
            .lock()
            .unwrap()
            .get(&(name, value.into()))
            .cloned();
        fs::write(path, holds.unwrap_or_else(|| format!("{value}\n")))
    }
    fn mkdir(&self, path: &Path) -> io::Result<()> {
        fs::create_dir(path)?;
        self.log
            .lock()
            .unwrap()
            .push(format!("mkdir {}", self.rel(path)));
        fs::write(path.join("cgroup.threads"), "")
    }
    fn rmdir(&self, path: &Path) -> io::Result<()> {
        if !fs::read_to_string(path.join("cgroup.threads"))?.is_empty() {
            return Err(io::Error::from_raw_os_error(crate::sys::errno::EBUSY));
        }
        self.log
            .lock()
            .unwrap()
            .push(format!("rmdir {}", self.rel(path)));
        fs::remove_dir_all(path)
    }
}

/// A cgroup2 root holding this process (`0::/`) with the cpuset controller on offer and not
/// enabled for children, and a trusted directory for the journals.
fn tree() -> (tempfile::TempDir, Arc<Fixture>, Place, TrustedDir) {
    let base = tempfile::tempdir().unwrap();
    let mount = base.path().join("cgroup");
    fs::create_dir(&mount).unwrap();
    for (file, text) in [
        ("cgroup.controllers", "cpuset cpu io memory pids\n"),
        ("cgroup.subtree_control", "\n"),
        ("cpuset.mems.effective", "0\n"),
    ] {
        fs::write(mount.join(file), text).unwrap();
    }
    let uid = crate::sys::process::effective_user_id();
    let dir = TrustedDir::open_in(base.path(), "trusted", uid, true).unwrap();
    let fixture = Arc::new(Fixture {
        mount: mount.clone(),
        ..Fixture::default()
    });
    let place = Place {
        mount,
        parent: PathBuf::new(),
    };
    (base, fixture, place, dir)
}

fn name() -> String {
    format!("{PREFIX}{}", std::process::id())
}

#[test]
fn the_place_is_the_first_cgroup2_mount_and_this_process_cgroup() {
    let lab = "25 1 0:23 / /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 rw\n";
    let hybrid = "30 25 0:26 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n31 25 0:27 / /sys/fs/cgroup/un\\040ified rw shared:9 - cgroup2 cgroup2 rw,nsdelegate\n";
    let place = Place::from(lab, "0::/\n").unwrap();
    assert_eq!(place.mount, PathBuf::from("/sys/fs/cgroup"));
    assert_eq!(place.parent, PathBuf::new());
    let place = Place::from(
        hybrid,
        "12:cpuset:/\n0::/user.slice/user-0.slice/session-3.scope\n",
    )
    .unwrap();
    assert_eq!(place.mount, PathBuf::from("/sys/fs/cgroup/un ified"));
    assert_eq!(
        place.parent,
        PathBuf::from("user.slice/user-0.slice/session-3.scope")
    );
    let none = "30 25 0:26 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n";
    assert!(
        Place::from(none, "0::/\n")
            .unwrap_err()
            .contains("no cgroup2")
    );
    assert!(
        Place::from(lab, "1:cpuset:/\n")
            .unwrap_err()
            .contains("no cgroup2 line")
    );
    let outside = Place::from(lab, "0::/../../init.scope\n").unwrap_err();
    assert!(outside.contains("outside the cgroup2 mount"), "{outside}");
}

#[test]
fn the_partition_read_back_is_the_kernels_verdict() {
    assert_eq!(partition_state("isolated", "isolated").unwrap(), "isolated");
    assert_eq!(partition_state("root", "root").unwrap(), "root");
    let e = partition_state(
        "isolated invalid (Parent is not a partition root)",
        "isolated",
    )
    .unwrap_err();
    assert!(e.ends_with(": Parent is not a partition root"), "{e}");
    let e = partition_state("isolated invalid", "isolated").unwrap_err();
    assert!(e.contains("no reason before 6.2"), "{e}");
    let e = partition_state("member", "isolated").unwrap_err();
    assert!(e.contains("\"member\", not isolated"), "{e}");
}

/// The whole sequence on the root cgroup: +cpuset journaled before it is enabled, the cgroup
/// journaled before the mkdir and its inode after, made threaded before anything else, the
/// parent's memory nodes, the CPUs, then `isolated`; on drop the cgroup goes, +cpuset is
/// taken back and the journal removed.
#[test]
fn a_threaded_isolated_partition_is_made_and_undone() {
    let (_base, fixture, place, dir) = tree();
    let partition = V2Partition::create_in(fixture.clone(), place.clone(), &dir, &[1, 3]).unwrap();
    let name = name();
    assert_eq!(
        fixture.log(),
        [
            "cgroup.subtree_control +cpuset".to_string(),
            format!("mkdir {name}"),
            format!("{name}/cgroup.type threaded"),
            format!("{name}/cpuset.mems 0"),
            format!("{name}/cpuset.cpus 1,3"),
            format!("{name}/cpuset.cpus.partition isolated"),
        ]
    );
    let journal = scan(&dir, KIND);
    assert!(journal.stale.is_empty(), "its writer lives: not stale");
    let text = fs::read_to_string(dir.path().join(&dir.names()[0])).unwrap();
    let inode = fs::metadata(place.mount.join(&name)).unwrap().ino();
    assert!(
        text.ends_with(&format!("cgroup {name}\nsubtree_control \ninode {inode}\n")),
        "{text}"
    );
    let record = partition.record();
    assert_eq!(record.cgroup, "v2");
    assert_eq!(record.partition.as_deref(), Some("isolated"));
    assert!(record.enabled_in_parent);
    assert_eq!(record.path, place.mount.join(&name).display().to_string());
    drop(partition);
    let log = fixture.log();
    // The partition is given up before the rmdir: its CPUs are back when drop returns.
    assert_eq!(
        &log[6..],
        [
            format!("{name}/cpuset.cpus.partition member"),
            format!("rmdir {name}"),
            "cgroup.subtree_control -cpuset".into()
        ]
    );
    assert!(!place.mount.join(&name).exists());
    assert!(dir.names().is_empty(), "{:?}", dir.names());
}

/// A kernel that refuses `isolated` (before 5.15) gets `root`; +cpuset already enabled in the
/// parent is neither written nor taken back.
#[test]
fn isolated_refused_falls_back_to_root_and_cpuset_enabled_before_is_left() {
    let (_base, fixture, place, dir) = tree();
    fs::write(place.mount.join("cgroup.subtree_control"), "cpuset pids\n").unwrap();
    fixture.refuse(
        "cpuset.cpus.partition",
        Some("isolated"),
        crate::sys::errno::EINVAL,
    );
    let partition = V2Partition::create_in(fixture.clone(), place, &dir, &[1]).unwrap();
    assert_eq!(partition.record().partition.as_deref(), Some("root"));
    assert!(!partition.record().enabled_in_parent);
    drop(partition);
    assert!(
        !fixture.log().iter().any(|l| l.contains("subtree_control")),
        "{:?}",
        fixture.log()
    );
}

/// `isolated invalid (<reason>)` read back is refused with the kernel's reason and the fix,
/// and everything made is undone (the cgroup, +cpuset, the journal).
#[test]
fn an_invalid_partition_is_refused_with_the_reason_and_undone() {
    let (_base, fixture, place, dir) = tree();
    fixture.rewrite(
        "cpuset.cpus.partition",
        "isolated",
        "isolated invalid (Parent is not a partition root)\n",
    );
    let e = V2Partition::create_in(fixture.clone(), place.clone(), &dir, &[1]).unwrap_err();
    assert!(e.contains("did not make"), "{e}");
    assert!(e.contains(": Parent is not a partition root; "), "{e}");
    assert!(e.contains("start jitterlab from the root cgroup"), "{e}");
    assert!(!place.mount.join(name()).exists());
    assert_eq!(
        fixture.log().last().map(String::as_str),
        Some("cgroup.subtree_control -cpuset")
    );
    assert!(dir.names().is_empty(), "{:?}", dir.names());
}

/// A process cgroup that cannot become a threaded domain (the kernel says EOPNOTSUPP) is
/// refused with why and the fix; nothing stays.
#[test]
fn a_cgroup_that_cannot_hold_a_threaded_child_is_refused() {
    let (_base, fixture, place, dir) = tree();
    fixture.refuse("cgroup.type", None, crate::sys::errno::ENOTSUP);
    let e = V2Partition::create_in(fixture.clone(), place.clone(), &dir, &[1]).unwrap_err();
    assert!(e.contains("write threaded to"), "{e}");
    assert!(e.contains("threaded subtree"), "{e}");
    assert!(e.contains("cgroup of its own"), "{e}");
    assert!(!place.mount.join(name()).exists());
    assert!(dir.names().is_empty(), "{:?}", dir.names());
}

/// Without the cpuset controller in the process's cgroup nothing is journaled or written.
#[test]
fn no_cpuset_for_the_process_cgroup_is_refused_before_anything() {
    let (_base, fixture, mut place, dir) = tree();
    let scope = place.mount.join("app.scope");
    fs::create_dir(&scope).unwrap();
    fs::write(scope.join("cgroup.controllers"), "cpu memory pids\n").unwrap();
    place.parent = PathBuf::from("app.scope");
    let e = V2Partition::create_in(fixture.clone(), place, &dir, &[1]).unwrap_err();
    assert!(e.contains("does not reach this process's cgroup"), "{e}");
    assert!(e.contains("Delegate=cpuset"), "{e}");
    assert!(fixture.log().is_empty(), "{:?}", fixture.log());
    assert!(dir.names().is_empty());
}

/// R15 for v2: an existing `jitterlab-<pid>` is named for what it is and left, and so is the
/// +cpuset this run enabled (the existing cgroup may use it now).
#[test]
fn an_existing_cgroup_of_this_name_is_said_to_exist() {
    let (_base, fixture, place, dir) = tree();
    fs::create_dir(place.mount.join(name())).unwrap();
    let e = V2Partition::create_in(fixture.clone(), place.clone(), &dir, &[1]).unwrap_err();
    assert!(
        e.contains("already exists, and this run did not make it"),
        "{e}"
    );
    assert!(place.mount.join(name()).is_dir());
    assert_eq!(fixture.log(), ["cgroup.subtree_control +cpuset"]);
}

/// A stale journal naming `cgroup` (and `subtree_control`, `inode` when given).
fn journal_of(dir: &TrustedDir, lines: &[String]) -> Stale {
    drop(Journal::create(dir, KIND, lines).unwrap());
    crate::journal::wait_until_unlocked(dir);
    let mut found = scan(dir, KIND);
    assert_eq!(found.stale.len(), 1, "{found:?}");
    found.stale.remove(0)
}

/// A killed run's cgroup (its inode, no thread) is removed and its +cpuset taken back; one
/// with threads in it is left with the parent's +cpuset, and no thread is moved.
#[test]
fn a_killed_runs_cgroup_is_removed_unless_threads_are_in_it() {
    let (_base, fixture, place, dir) = tree();
    let cgroup = place.mount.join("jitterlab-111");
    fixture.mkdir(&cgroup).unwrap();
    let inode = fs::metadata(&cgroup).unwrap().ino();
    let lines = [
        "cgroup jitterlab-111".to_string(),
        "subtree_control ".into(),
        format!("inode {inode}"),
    ];
    fs::write(cgroup.join("cgroup.threads"), "4243\n").unwrap();
    let stale = journal_of(&dir, &lines);
    let (said, done) = undo(&stale, &*fixture, &place.mount);
    let said = said.unwrap();
    assert!(done);
    assert!(said.contains("has 1 thread(s) in it that jitterlab did not put there (e.g. 4243): left alone, no thread moved"), "{said}");
    assert!(cgroup.is_dir());
    assert!(!fixture.log().iter().any(|l| l.contains("-cpuset")));
    stale.remove(&dir);

    fs::write(cgroup.join("cgroup.threads"), "").unwrap();
    let stale = journal_of(&dir, &lines);
    // Said (issue 39 L8: it was removed in silence).
    let (said, done) = undo(&stale, &*fixture, &place.mount);
    assert!(done);
    let said = said.unwrap();
    assert!(
        said.starts_with(&format!(
            "removed the cgroup {} left by a jitterlab (pid ",
            cgroup.display()
        )) && said.contains(", and took back +cpuset in "),
        "{said}"
    );
    assert!(!cgroup.exists());
    // The partition given up first: the next run's CPUs are free when the undo returns.
    let log = fixture.log();
    assert_eq!(
        &log[log.len() - 3..],
        [
            "jitterlab-111/cpuset.cpus.partition member",
            "rmdir jitterlab-111",
            "cgroup.subtree_control -cpuset"
        ]
    );
}

/// A name is not enough: another inode (made again since) is not removed, and the +cpuset
/// the killed run enabled stays while that cgroup is there; journals out of their format
/// (outside the mount, another name, +cpuset of another cgroup) are left alone.
#[test]
fn a_name_alone_is_never_enough() {
    let (_base, fixture, place, dir) = tree();
    let cgroup = place.mount.join("jitterlab-111");
    fixture.mkdir(&cgroup).unwrap();
    let inode = fs::metadata(&cgroup).unwrap().ino() + 1;
    let stale = journal_of(
        &dir,
        &[
            "cgroup jitterlab-111".into(),
            "subtree_control ".into(),
            format!("inode {inode}"),
        ],
    );
    let (said, done) = undo(&stale, &*fixture, &place.mount);
    assert!(done);
    assert!(said.unwrap().starts_with("left +cpuset in "));
    assert!(cgroup.is_dir());
    stale.remove(&dir);
    let stale = journal_of(&dir, &["cgroup jitterlab-111".into()]);
    let (said, done) = undo(&stale, &*fixture, &place.mount);
    assert!(done && said.unwrap().contains("it is not certain"));
    assert!(cgroup.is_dir());
    for lines in [
        vec!["cgroup ../jitterlab-111".to_string()],
        vec!["cgroup /jitterlab-111".into()],
        vec!["cgroup other-111".into()],
        vec!["cgroup a/jitterlab-111".into(), "subtree_control b".into()],
    ] {
        let (said, done) = undo(&Stale::fake(lines.clone()), &*fixture, &place.mount);
        assert!(!done && said.unwrap().contains("left alone"), "{lines:?}");
    }
    assert!(
        !fixture
            .log()
            .iter()
            .any(|l| l.contains("rmdir") || l.contains("-cpuset"))
    );
}

//! `--cpuset-partition` on a cgroup v1 cpuset hierarchy.
//!
//! On a cgroup v1 cpuset hierarchy (`/sys/fs/cgroup/cpuset`, as on this project's VM) the
//! partition is a child cpuset `jitterlab-<pid>` holding the measured CPUs, exclusive
//! (`cpuset.cpu_exclusive`: no sibling cpuset may hold them) and without load balancing of its
//! own (`cpuset.sched_load_balance` 0: the scheduler does not move tasks across its CPUs; the
//! root's balancing still spans them unless the root's is turned off too, which jitterlab does
//! not do: it changes the whole machine). Only the measuring threads are moved there, each then
//! pinned to its CPU again (attaching a task to a v1 cpuset resets its affinity to the
//! cpuset's CPUs). The cpuset is removed when the run ends, once the threads have ended.
//!
//! A killed run's cpuset is recognised by its journal (session/journal.rs), never by its name:
//! other containers share the v1 hierarchy, and a `jitterlab-<pid>` there may be another pid
//! namespace's live run. Before the `mkdir` the run journals the cpuset's name, after it the
//! directory's inode; the next start removes a cpuset only when its journal has no writer
//! left, names it with that inode during this boot, and no task is in it (it never moves a
//! task out). Whatever fails while the cpuset is being set up removes it again: no half state.

use super::super::journal::{Journal, Stale, TrustedDir};
use super::PREFIX;
use crate::cpulist::format_cpu_list;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The journals' kind (their names: `cpuset-<pid>`).
pub(crate) const KIND: &str = "cpuset";

/// A v1 partition made for this run; removed on drop, then its journal.
#[derive(Debug)]
pub(crate) struct V1Partition {
    dir: PathBuf,
    journal: Option<Journal>,
}

impl V1Partition {
    /// Makes the partition for `cpus` under the v1 hierarchy at `root`, journaled in this
    /// user's trusted directory.
    pub(crate) fn create(root: &Path, cpus: &[usize]) -> Result<V1Partition, String> {
        check_hierarchy(root)?;
        let journal_dir = TrustedDir::for_this_user(true).map_err(|e| {
            format!(
                "--cpuset-partition: cannot keep the journal that lets the next start remove the cpuset of a killed run: {}",
                e.unwrap_or_default()
            )
        })?;
        V1Partition::create_in(root, &journal_dir, cpus)
    }

    /// [`V1Partition::create`] with its journal in `journal_dir`.
    pub(crate) fn create_in(
        root: &Path,
        journal_dir: &TrustedDir,
        cpus: &[usize],
    ) -> Result<V1Partition, String> {
        check_hierarchy(root)?;
        let name = format!("{PREFIX}{}", std::process::id());
        let dir = root.join(&name);
        // Journaled before the directory exists: a kill right after the mkdir still leaves
        // the journal.
        let mut journal = Journal::create(journal_dir, KIND, &[format!("cpuset {name}")])
            .map_err(|e| {
                format!(
                    "--cpuset-partition: cannot write the journal {KIND}-{} in {} ({e}): without it a killed run's cpuset could not be removed",
                    std::process::id(),
                    journal_dir.path().display()
                )
            })?;
        if let Err(e) = fs::create_dir(&dir) {
            let _ = journal.remove();
            return Err(match e.kind() {
                // R15: not a question of privileges.
                io::ErrorKind::AlreadyExists => format!(
                    "--cpuset-partition: the cpuset {} already exists, and this run did not make it (a jitterlab with the same pid in another container sharing this hierarchy, or one made by hand); jitterlab never takes over or removes a cpuset it did not journal: if `cat {}/tasks` is empty, remove it with `rmdir {}`, or run again (another pid is another name)",
                    dir.display(),
                    dir.display(),
                    dir.display()
                ),
                _ => format!(
                    "--cpuset-partition: cannot make the cpuset {} ({e}); run as root",
                    dir.display()
                ),
            });
        }
        // From here on a failure drops the partition, which removes the directory.
        let inode = fs::symlink_metadata(&dir).map(|m| m.ino());
        let mut partition = V1Partition { dir, journal: None };
        let recorded = inode.and_then(|ino| journal.append(&format!("inode {ino}")));
        partition.journal = Some(journal);
        recorded.map_err(|e| partition.failed("journal the inode", e))?;
        partition.configure(root, cpus)
    }

    /// Gives the new partition its memory nodes and CPUs, exclusive, without balancing.
    fn configure(self, root: &Path, cpus: &[usize]) -> Result<V1Partition, String> {
        let partition = self;
        let mems = fs::read_to_string(root.join("cpuset.effective_mems"))
            .or_else(|_| fs::read_to_string(root.join("cpuset.mems")))
            .map_err(|e| partition.failed("read the parent's memory nodes", e))?;
        let list = format_cpu_list(cpus);
        partition.write("cpuset.mems", mems.trim())?;
        partition.write("cpuset.cpus", &list).map_err(|e| {
            format!(
                "{e}; another cpuset may hold CPUs {list} exclusively (see {})",
                root.display()
            )
        })?;
        partition.write("cpuset.cpu_exclusive", "1").map_err(|e| {
            format!("{e}; another cpuset holds some of CPUs {list}: the partition must be the only one on them")
        })?;
        partition.write("cpuset.sched_load_balance", "0")?;
        Ok(partition)
    }

    /// The cpuset's directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Moves thread `tid` into the partition and pins it to `cpu` again.
    pub(crate) fn add_thread(&self, tid: i32, cpu: usize) -> Result<(), String> {
        self.write("tasks", &tid.to_string())?;
        crate::sys::sched::set_affinity_of(tid, &[cpu]).map_err(|e| {
            format!("--cpuset-partition: cannot pin thread {tid} to CPU {cpu} again after moving it: {e}")
        })
    }

    fn write(&self, file: &str, value: &str) -> Result<(), String> {
        fs::write(self.dir.join(file), value).map_err(|e| {
            format!(
                "--cpuset-partition: cannot write {value} to {}: {e}",
                self.dir.join(file).display()
            )
        })
    }

    fn failed(&self, what: &str, e: io::Error) -> String {
        format!(
            "--cpuset-partition: cannot {what} for {}: {e}",
            self.dir.display()
        )
    }
}

/// Refuses a root that is not a cgroup v1 cpuset hierarchy, with the reason.
fn check_hierarchy(root: &Path) -> Result<(), String> {
    if !root.join("cpuset.cpus").is_file() || !root.join("tasks").is_file() {
        return Err(format!(
            "--cpuset-partition: no cgroup v1 cpuset hierarchy at {}; mount one (`mount -t cgroup -o cpuset cpuset {}`) or leave the option out",
            root.display(),
            root.display()
        ));
    }
    Ok(())
}

impl Drop for V1Partition {
    fn drop(&mut self) {
        // The measuring threads have ended (the session drops this after them): the cpuset is
        // empty and can go, and then its journal. One that cannot go keeps its journal (now
        // without a writer), for the next start to retry.
        let removed = match remove_when_empty(&self.dir) {
            Ok(()) => true,
            Err(e) => e.kind() == io::ErrorKind::NotFound,
        };
        if removed && let Some(journal) = self.journal.take() {
            let _ = journal.remove();
        }
    }
}

/// The tasks (thread ids) in the cpuset `dir`, waiting up to 200 ms for those of a process
/// that just died to leave (the kernel detaches exiting tasks asynchronously).
fn tasks_after_exits(dir: &Path) -> Vec<String> {
    let read = || -> Vec<String> {
        fs::read_to_string(dir.join("tasks"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    };
    for _ in 0..20 {
        let tasks = read();
        if tasks.is_empty() {
            return tasks;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    read()
}

/// Undoes the journal of a killed run (session/stale.rs): removes the cpuset it names under
/// `root`, when it is the very directory the run made (its inode), during this boot, and has
/// no task in it. Returns what to say, if anything, and whether the journal is done with
/// (kept when the removal failed, for the next start to retry).
pub(crate) fn undo(stale: &Stale, root: &Path) -> (Option<String>, bool) {
    let inode = stale.parsed::<u64>("inode");
    // Only a direct child of the hierarchy named as jitterlab names them.
    let Some(name) = stale
        .field("cpuset")
        .filter(|n| n.starts_with(PREFIX) && !n.contains('/'))
    else {
        return stale.not_in_format("a cpuset");
    };
    if !stale.this_boot {
        // A cpuset does not survive a reboot: the one this journal names is gone.
        return (None, true);
    }
    let dir = root.join(name);
    let shown = dir.display();
    let pid = stale.pid;
    let hint = format!("if `cat {shown}/tasks` is empty, remove it with `rmdir {shown}`");
    if let Err(undone) = stale.made_dir(&dir, inode, "the cpuset", &hint) {
        return undone;
    }
    let tasks = tasks_after_exits(&dir);
    if !tasks.is_empty() {
        return (
            Some(format!(
                "the cpuset {shown} that a killed jitterlab (pid {pid}) made has {} task(s) in it that jitterlab did not put there (e.g. {}): left alone, no task moved; remove it with `rmdir {shown}` once they have left",
                tasks.len(),
                tasks.iter().take(3).cloned().collect::<Vec<_>>().join(", ")
            )),
            true,
        );
    }
    match remove_when_empty(&dir) {
        Ok(()) => (
            Some(format!(
                "removed the cpuset {shown} left by a jitterlab (pid {pid}) that was killed"
            )),
            true,
        ),
        Err(e) if e.kind() == io::ErrorKind::NotFound => (None, true),
        Err(e) => (
            Some(format!(
                "cannot remove the cpuset {shown} left by a jitterlab (pid {pid}) that was killed ({e}); remove it as root with `rmdir {shown}`"
            )),
            false,
        ),
    }
}

/// Removes a cpuset directory, waiting up to 100 ms for the threads of a process that just
/// died to leave it (the kernel detaches exiting tasks asynchronously: rmdir says EBUSY until
/// then).
fn remove_when_empty(dir: &Path) -> io::Result<()> {
    let mut tries = 0;
    loop {
        match fs::remove_dir(dir) {
            Err(e) if e.kind() == io::ErrorKind::ResourceBusy && tries < 10 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::journal::{Stale, scan};

    /// A fake v1 hierarchy (its root's files), a trusted directory in `base`.
    fn hierarchy() -> (tempfile::TempDir, PathBuf, TrustedDir) {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("cpuset");
        fs::create_dir(&root).unwrap();
        fs::write(root.join("cpuset.cpus"), "0-1\n").unwrap();
        fs::write(root.join("tasks"), "").unwrap();
        let uid = crate::sys::process::effective_user_id();
        let dir = TrustedDir::open_in(base.path(), "trusted", uid, true).unwrap();
        (base, root, dir)
    }

    /// A stale cpuset journal naming `name` (with `inode`, when given).
    fn journal_of(dir: &TrustedDir, name: &str, inode: Option<u64>) -> Stale {
        let mut lines = vec![format!("cpuset {name}")];
        lines.extend(inode.map(|i| format!("inode {i}")));
        drop(Journal::create(dir, KIND, &lines).unwrap());
        crate::journal::wait_until_unlocked(dir);
        let mut found = scan(dir, KIND);
        assert_eq!(found.stale.len(), 1, "{found:?}");
        found.stale.remove(0)
    }

    fn inode(dir: &Path) -> u64 {
        fs::metadata(dir).unwrap().ino()
    }

    /// Our own cpuset, left by a killed run (its journal without a writer), is removed at
    /// the next start.
    #[test]
    fn a_killed_runs_cpuset_is_removed() {
        let (_base, root, dir) = hierarchy();
        let cpuset = root.join("jitterlab-111");
        fs::create_dir(&cpuset).unwrap();
        let stale = journal_of(&dir, "jitterlab-111", Some(inode(&cpuset)));
        let (said, done) = undo(&stale, &root);
        assert!(done && said.unwrap().starts_with("removed the cpuset "));
        assert!(!cpuset.exists());
    }

    /// R07: a cpuset named `jitterlab-<pid of no process here>` that no journal names (another
    /// container's run) is never looked at; one a journal names that has tasks in it is left
    /// alone, and no task is ever moved to the root cpuset (the root's tasks file is never
    /// written).
    #[test]
    fn a_cpuset_with_tasks_or_without_our_journal_is_left_alone() {
        let (_base, root, dir) = hierarchy();
        let foreign = root.join("jitterlab-4194303");
        fs::create_dir(&foreign).unwrap();
        fs::write(foreign.join("tasks"), "4242\n").unwrap();
        let busy = root.join("jitterlab-111");
        fs::create_dir(&busy).unwrap();
        fs::write(busy.join("tasks"), "4243\n4244\n").unwrap();
        let stale = journal_of(&dir, "jitterlab-111", Some(inode(&busy)));
        let (said, done) = undo(&stale, &root);
        let said = said.unwrap();
        assert!(done);
        assert!(said.contains("has 2 task(s) in it that jitterlab did not put there (e.g. 4243, 4244): left alone, no task moved"), "{said}");
        assert_eq!(
            fs::read_to_string(busy.join("tasks")).unwrap(),
            "4243\n4244\n"
        );
        assert_eq!(fs::read_to_string(foreign.join("tasks")).unwrap(), "4242\n");
        assert_eq!(fs::read_to_string(root.join("tasks")).unwrap(), "");
    }

    /// A name match is not enough: a cpuset made again since (another inode), one whose
    /// inode was never journaled (killed at the mkdir), one of another boot, and a journal
    /// naming something that is not a partition are all left alone.
    #[test]
    fn a_name_alone_is_never_enough() {
        let (_base, root, dir) = hierarchy();
        let cpuset = root.join("jitterlab-111");
        fs::create_dir(&cpuset).unwrap();
        let stale = journal_of(&dir, "jitterlab-111", Some(inode(&cpuset) + 1));
        assert_eq!(undo(&stale, &root), (None, true));
        stale.remove(&dir);
        let stale = journal_of(&dir, "jitterlab-111", None);
        let (said, done) = undo(&stale, &root);
        assert!(done && said.unwrap().contains("it is not certain"));
        let mut other_boot = Stale::fake(vec!["cpuset jitterlab-111".into()]);
        other_boot.this_boot = false;
        assert_eq!(undo(&other_boot, &root), (None, true));
        for name in ["../jitterlab-111", "other-111"] {
            let (said, done) = undo(&Stale::fake(vec![format!("cpuset {name}")]), &root);
            assert!(!done && said.unwrap().contains("left alone"), "{name}");
        }
        assert!(cpuset.is_dir());
    }

    /// R15: an existing `jitterlab-<pid>` is named for what it is, not blamed on privileges;
    /// it is left as it was and no journal stays.
    #[test]
    fn an_existing_cpuset_of_this_name_is_said_to_exist() {
        let (_base, root, dir) = hierarchy();
        let cpuset = root.join(format!("{PREFIX}{}", std::process::id()));
        fs::create_dir(&cpuset).unwrap();
        let e = V1Partition::create_in(&root, &dir, &[1]).unwrap_err();
        assert!(
            e.contains("already exists, and this run did not make it"),
            "{e}"
        );
        assert!(!e.contains("run as root"), "{e}");
        assert!(cpuset.is_dir());
        assert!(dir.names().is_empty(), "{:?}", dir.names());
    }

    /// Without a v1 hierarchy the option is refused with the reason, and nothing is made.
    #[test]
    fn no_hierarchy_is_refused_and_nothing_made() {
        let root = tempfile::tempdir().unwrap();
        let e = V1Partition::create(root.path(), &[1]).unwrap_err();
        assert!(e.contains("no cgroup v1 cpuset hierarchy"), "{e}");
        assert_eq!(fs::read_dir(root.path()).unwrap().count(), 0);
    }
}

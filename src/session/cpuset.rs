//! `--cpuset-partition`: the measuring threads in a cpuset of their own for the run, as a
//! production system partitions its real-time CPUs.
//!
//! On a cgroup v1 cpuset hierarchy (`/sys/fs/cgroup/cpuset`, as on this project's VM) the
//! partition is a child cpuset `jitterlab-<pid>` holding the measured CPUs, exclusive
//! (`cpuset.cpu_exclusive`: no sibling cpuset may hold them) and without load balancing of its
//! own (`cpuset.sched_load_balance` 0: the scheduler does not move tasks across its CPUs; the
//! root's balancing still spans them unless the root's is turned off too, which jitterlab does
//! not do: it changes the whole machine). Only the measuring threads are moved there, each then
//! pinned to its CPU again (attaching a task to a v1 cpuset resets its affinity to the
//! cpuset's CPUs). The cpuset is removed when the run ends, once the threads have ended; one
//! left by a killed run (its pid gone) is removed at the next start. A cgroup v2 partition
//! (`cpuset.cpus.partition`) is not built yet: on a v2-only system the option is refused.
//! Whatever fails while the cpuset is being set up removes it again: no half state.

use crate::cpulist::format_cpu_list;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The cgroup v1 cpuset hierarchy.
pub(crate) const CPUSET_V1: &str = "/sys/fs/cgroup/cpuset";
/// The name of a partition: this prefix and the pid of the jitterlab that made it.
const PREFIX: &str = "jitterlab-";

/// A partition made for this run; removed on drop.
#[derive(Debug)]
pub(crate) struct CpusetPartition {
    dir: PathBuf,
}

impl CpusetPartition {
    /// Makes the partition for `cpus` under the v1 hierarchy at `root`.
    pub(crate) fn create(root: &Path, cpus: &[usize]) -> Result<CpusetPartition, String> {
        if !root.join("cpuset.cpus").is_file() || !root.join("tasks").is_file() {
            return Err(format!(
                "--cpuset-partition: no cgroup v1 cpuset hierarchy at {} (cgroup v2 partitions are not supported yet); mount one (`mount -t cgroup -o cpuset cpuset {}`) or leave the option out",
                root.display(),
                root.display()
            ));
        }
        let dir = root.join(format!("{PREFIX}{}", std::process::id()));
        fs::create_dir(&dir).map_err(|e| {
            format!(
                "--cpuset-partition: cannot make the cpuset {} ({e}); run as root",
                dir.display()
            )
        })?;
        // From here on a failure drops the partition, which removes the directory.
        let partition = CpusetPartition { dir };
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

impl Drop for CpusetPartition {
    fn drop(&mut self) {
        // The measuring threads have ended (the session drops this after them): the cpuset is
        // empty and can go.
        let _ = fs::remove_dir(&self.dir);
    }
}

/// Removes the partitions under `root` left by jitterlab processes that no longer exist (a
/// SIGKILL): tasks still in one (none, once its process is gone) go back to the root first.
/// Returns a warning for each that could not be removed.
pub(crate) fn remove_stale_in(root: &Path, proc_root: &Path) -> Vec<String> {
    let mut failed = Vec::new();
    for (_, dir) in super::stale::left_by_gone_runs(root, PREFIX, proc_root) {
        if let Ok(tasks) = fs::read_to_string(dir.join("tasks")) {
            for tid in tasks.lines() {
                let _ = fs::write(root.join("tasks"), tid);
            }
        }
        if let Err(e) = remove_when_empty(&dir) {
            failed.push(format!(
                "cannot remove the cpuset {} left by a jitterlab that was killed ({e}); remove it as root with `rmdir {}`",
                dir.display(),
                dir.display()
            ));
        }
    }
    failed
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

    /// Stale partitions are those of pids that are gone; others' and foreign names stay.
    #[test]
    fn only_partitions_of_gone_processes_are_removed() {
        let root = tempfile::tempdir().unwrap();
        let proc_root = tempfile::tempdir().unwrap();
        fs::write(root.path().join("tasks"), "").unwrap();
        for name in ["jitterlab-111", "jitterlab-222", "jitterlab-x", "other-333"] {
            fs::create_dir(root.path().join(name)).unwrap();
        }
        fs::create_dir(proc_root.path().join("222")).unwrap();
        let failed = remove_stale_in(root.path(), proc_root.path());
        assert!(failed.is_empty(), "{failed:?}");
        let mut left: Vec<String> = fs::read_dir(root.path())
            .unwrap()
            .flatten()
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["jitterlab-222", "jitterlab-x", "other-333"]);
    }

    /// Without a v1 hierarchy the option is refused with the reason, and nothing is made.
    #[test]
    fn no_hierarchy_is_refused_and_nothing_made() {
        let root = tempfile::tempdir().unwrap();
        let e = CpusetPartition::create(root.path(), &[1]).unwrap_err();
        assert!(e.contains("no cgroup v1 cpuset hierarchy"), "{e}");
        assert_eq!(fs::read_dir(root.path()).unwrap().count(), 0);
    }
}

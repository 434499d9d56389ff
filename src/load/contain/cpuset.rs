//! A load's `cpus=` as a bound its programs cannot undo (issue 39, N13): the affinity the worker
//! sets is only a start, since any process may change its own affinity without privilege
//! (`taskset -c 0 spin` in an `exec` load given `cpus=1` took CPU 0 at FIFO 98, where the plan
//! had left jitterlab's own threads, and hung the run beyond SIGKILL). A cpuset is what the
//! kernel checks every affinity against: a process in a cpuset cannot run on a CPU outside it,
//! and cannot leave it without write access to the cgroup files (root's), as RLIMIT_RTPRIO
//! bounds its priority.
//!
//! Only `exec` loads get one: the built-in generators are jitterlab's own code, which never
//! changes the affinity it was given. Where they are made:
//! - on a cgroup v1 cpuset hierarchy (this project's VM: `/sys/fs/cgroup/cpuset`), a cpuset
//!   `jitterlab-loads-<pid>-<n>` in this process's cpuset, with its memory nodes and the CPUs
//!   of the loads in it, and one `load-<k>` below it per load with the load's CPUs. It is journaled like the loads'
//!   cgroup v2 (a `load-cgroup` journal whose line is `cpuset DIR`), removed with it, and after
//!   a SIGKILL by the reaper or at the next start (`contain::undo`);
//! - on cgroup v2 where the cpuset controller is enabled for this process's cgroup's children
//!   (`cgroup.subtree_control`), the loads' own cgroup (`contain.rs`) enables it for its
//!   children and each load's cgroup gets the load's CPUs: nothing outside jitterlab's cgroup
//!   changes, so nothing more to journal. jitterlab does not enable the controller in a cgroup
//!   it did not make.
//!
//! Where neither is possible, [`place`] says why, once per process: the starvation rule
//! (plan/drain) then counts a real-time `exec` load on every CPU, and a load that does not
//! leave jitterlab's own threads one of their CPUs that way is refused before the run.
//! A failure to make a cpuset that [`place`] promised refuses a real-time `exec` load at its
//! start (exit 3): the plan counted it on its CPUs only.
//!
//! What a cpuset does not bound: a process with root's privileges can write to the cgroup
//! files, and so move itself to another cpuset or widen its own (docs/loads.md).

use super::{make_journaled, own_cgroup_dir};
use crate::cpulist::format_cpu_list;
use crate::journal::{Journal, TrustedDir};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// Where the loads' cpusets are made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Place {
    /// This process's cpuset in a cgroup v1 cpuset hierarchy.
    V1(PathBuf),
    /// cgroup v2, the cpuset controller enabled for the children of this process's cgroup.
    V2,
}

/// [`place`], found once per process: the plan and the loads' start must agree.
static PLACE: OnceLock<Result<Place, String>> = OnceLock::new();

/// Where the loads' cpusets can be made, or why not (for the messages: "no cgroup v1 cpuset
/// hierarchy is mounted, and ...").
pub(crate) fn place() -> Result<&'static Place, &'static str> {
    match PLACE.get_or_init(probe) {
        Ok(p) => Ok(p),
        Err(why) => Err(why.as_str()),
    }
}

/// Whether a load's CPUs can be enforced here: Ok, or why not.
pub(crate) fn enforceable() -> Result<(), &'static str> {
    place().map(|_| ())
}

fn probe() -> Result<Place, String> {
    let read = |p: &str| std::fs::read_to_string(p).map_err(|e| format!("cannot read {p}: {e}"));
    let (mountinfo, cgroup) = (read("/proc/self/mountinfo")?, read("/proc/self/cgroup")?);
    let why_v1 = match v1_place(&mountinfo, &cgroup) {
        Ok(dir) => {
            let pid = std::process::id() as crate::sys::process::Pid;
            match super::procs_of(&dir).contains(&pid) {
                true => return Ok(Place::V1(dir)),
                false => format!("{} does not list this process", dir.display()),
            }
        }
        Err(why) => why,
    };
    let why_v2 = match own_cgroup_dir() {
        Ok(dir) => {
            let file = dir.join("cgroup.subtree_control");
            let enabled = std::fs::read_to_string(&file).unwrap_or_default();
            if enabled.split_whitespace().any(|c| c == "cpuset") {
                return writable(&dir).map(|()| Place::V2);
            }
            format!(
                "the cgroup2 cpuset controller is not enabled for the children of this process's cgroup ({}: {:?})",
                file.display(),
                enabled.trim()
            )
        }
        Err(why) => why,
    };
    Err(format!("{why_v1}, and {why_v2}"))
}

/// This process's cpuset directory in the cgroup v1 cpuset hierarchy of `mountinfo`
/// (`/proc/self/mountinfo`), by its line in `cgroup` (`/proc/self/cgroup`), when that
/// hierarchy is mounted read-write and this user may make a cpuset there; else why not.
fn v1_place(mountinfo: &str, cgroup: &str) -> Result<PathBuf, String> {
    // Fields: id parent dev root mountpoint options... - fstype source super-options.
    let (root, mount, options) = mountinfo
        .lines()
        .find_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            let mut theirs = right.split_whitespace();
            let cpuset =
                theirs.next() == Some("cgroup") && theirs.nth(1)?.split(',').any(|o| o == "cpuset");
            let mine: Vec<&str> = left.split_whitespace().collect();
            (cpuset && mine.len() > 5).then(|| (mine[3], mine[4], mine[5]))
        })
        .ok_or("no cgroup v1 cpuset hierarchy is mounted")?;
    if options.split(',').any(|o| o == "ro") {
        return Err(format!(
            "the cgroup v1 cpuset hierarchy at {mount} is mounted read-only"
        ));
    }
    let path = cgroup
        .lines()
        .find_map(|l| {
            let mut f = l.splitn(3, ':');
            let (_, controllers, path) = (f.next()?, f.next()?, f.next()?);
            controllers
                .split(',')
                .any(|c| c == "cpuset")
                .then_some(path)
        })
        .ok_or("/proc/self/cgroup has no cpuset line")?;
    // A mount of a sub-tree (a container's) shows the cgroups below its root.
    let inside = Path::new(path).strip_prefix(root).map_err(|_| {
        format!("this process's cpuset {path} is outside the hierarchy mounted at {mount}")
    })?;
    let dir = Path::new(mount).join(inside);
    if !dir.join("cpuset.cpus").is_file() {
        return Err(format!("{} is no cpuset", dir.display()));
    }
    writable(&dir)?;
    Ok(dir)
}

/// Whether this user may make a cgroup in `dir` (root may; another user only in a directory
/// it owns and may write).
fn writable(dir: &Path) -> Result<(), String> {
    let uid = crate::sys::process::effective_user_id();
    let meta = std::fs::metadata(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    match uid == 0 || (meta.uid() == uid && meta.mode() & 0o200 != 0) {
        true => Ok(()),
        false => Err(format!(
            "this user (uid {uid}) may not make a cpuset in {}: run as root",
            dir.display()
        )),
    }
}

/// The parent cpuset of one supervisor's loads.
pub(crate) enum Parent {
    /// A cpuset made in this process's v1 cpuset, with its journal (removed once it is).
    V1 {
        dir: PathBuf,
        journal: Option<Journal>,
        /// The CPUs of its loads so far: its own (a v1 cpuset's CPUs include its children's).
        cpus: Mutex<Vec<usize>>,
    },
    /// The loads' cgroup v2, with the cpuset controller enabled for its children.
    V2(PathBuf),
}

impl Parent {
    /// The parent cpuset `name` of the loads (`v2` their cgroup v2, when they have one), made
    /// and journaled in `journal_dir`; or why there is none (nothing left behind then).
    pub(crate) fn make(
        name: &str,
        v2: Option<&Path>,
        journal_dir: Result<&TrustedDir, String>,
    ) -> Result<Parent, String> {
        match place()? {
            Place::V1(own) => {
                // The memory nodes of the cpuset it is in. Its CPUs are its loads', added as
                // they start: a CPU another cpuset holds exclusively (--cpuset-partition's)
                // then refuses only a load on that CPU.
                let mems = effective(own, "cpuset.mems")?;
                let (dir, journal) = make_journaled(&own.join(name), journal_dir?, "cpuset")?;
                let mut parent = Parent::V1 {
                    dir,
                    journal: Some(journal),
                    cpus: Mutex::new(Vec::new()),
                };
                if let Err(e) = parent.write("cpuset.mems", &mems) {
                    parent.remove();
                    return Err(e);
                }
                Ok(parent)
            }
            Place::V2 => {
                let dir = v2.ok_or("the loads' cgroup v2 could not be made")?;
                let parent = Parent::V2(dir.to_path_buf());
                parent.write("cgroup.subtree_control", "+cpuset")?;
                Ok(parent)
            }
        }
    }

    /// The parent's directory.
    pub(crate) fn dir(&self) -> &Path {
        match self {
            Parent::V1 { dir, .. } | Parent::V2(dir) => dir,
        }
    }

    /// The cpuset of load `k` with `cpus`: the v1 directory made for it (None on cgroup v2,
    /// where its cgroup `v2` is the cpuset), or why it could not be made.
    pub(crate) fn for_load(
        &self,
        k: usize,
        cpus: &[usize],
        v2: Option<&Path>,
    ) -> Result<Option<PathBuf>, String> {
        let list = format_cpu_list(cpus);
        match self {
            Parent::V1 {
                dir: parent,
                cpus: held,
                ..
            } => {
                let mut held = held.lock().unwrap_or_else(|e| e.into_inner());
                let mut wider = held.clone();
                wider.extend(cpus.iter().filter(|c| !held.contains(c)));
                wider.sort_unstable();
                if wider != *held {
                    write(parent, "cpuset.cpus", &format_cpu_list(&wider)).map_err(|e| {
                        format!("{e}; another cpuset may hold some of CPUs {list} exclusively (--cpuset-partition's, or the system's)")
                    })?;
                    *held = wider;
                }
                let dir = parent.join(format!("load-{k}"));
                std::fs::create_dir(&dir)
                    .map_err(|e| format!("cannot make the cpuset {}: {e}", dir.display()))?;
                let made = effective(parent, "cpuset.mems")
                    .and_then(|mems| write(&dir, "cpuset.mems", &mems))
                    .and_then(|()| write(&dir, "cpuset.cpus", &list));
                if let Err(e) = made {
                    let _ = std::fs::remove_dir(&dir);
                    return Err(e);
                }
                Ok(Some(dir))
            }
            Parent::V2(_) => {
                let dir = v2.ok_or("the load's cgroup v2 could not be made")?;
                write(dir, "cpuset.cpus", &list)?;
                Ok(None)
            }
        }
    }

    fn write(&self, file: &str, value: &str) -> Result<(), String> {
        write(self.dir(), file, value)
    }

    /// Removes a v1 parent (its loads' cpusets below it first: their processes have been
    /// killed), then its journal; one that cannot go keeps its journal, without a writer, for
    /// the next start. A v2 parent goes with the loads' cgroup.
    pub(crate) fn remove(&mut self) {
        if let Parent::V1 { dir, journal, .. } = self {
            super::kill_and_remove_cgroup(dir);
            if !dir.exists()
                && let Some(journal) = journal.take()
            {
                let _ = journal.remove();
            }
        }
    }
}

/// The effective value of cpuset file `file` of `dir` (`cpuset.effective_cpus` for
/// `cpuset.cpus`: those it really has), trimmed.
fn effective(dir: &Path, file: &str) -> Result<String, String> {
    let effective = file.replace("cpuset.", "cpuset.effective_");
    std::fs::read_to_string(dir.join(&effective))
        .or_else(|_| std::fs::read_to_string(dir.join(file)))
        .map(|v| v.trim().to_string())
        .map_err(|e| format!("cannot read {}: {e}", dir.join(file).display()))
}

fn write(dir: &Path, file: &str, value: &str) -> Result<(), String> {
    let path = dir.join(file);
    std::fs::write(&path, value)
        .map_err(|e| format!("cannot write {value} to {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
        32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n\
        34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n\
        41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

    /// The v1 cpuset hierarchy is found by its super-options, the process's cpuset by its
    /// line; a read-only mount, none at all, and a cpuset outside the mount are refused with
    /// the reason (this machine's directories stand in for the cpuset files: the tests check
    /// the parsing, `cpuset.cpus` must exist).
    #[test]
    fn the_v1_cpuset_is_found_by_the_mount_and_the_process_line() {
        let cgroup = "4:memory:/x\n3:cpuset:/\n0::/\n";
        let found = v1_place(MOUNTINFO, cgroup);
        if Path::new("/sys/fs/cgroup/cpuset/cpuset.cpus").is_file()
            && crate::sys::process::effective_user_id() == 0
        {
            assert_eq!(found, Ok(PathBuf::from("/sys/fs/cgroup/cpuset")));
        }
        let ro = MOUNTINFO.replace("/sys/fs/cgroup/cpuset rw,", "/sys/fs/cgroup/cpuset ro,");
        assert!(v1_place(&ro, cgroup).unwrap_err().contains("read-only"));
        let none = MOUNTINFO.replace("rw,cpuset", "rw,cpuacct");
        assert_eq!(
            v1_place(&none, cgroup).unwrap_err(),
            "no cgroup v1 cpuset hierarchy is mounted"
        );
        let sub = MOUNTINFO.replace("0:31 / ", "0:31 /ctr ");
        assert!(
            v1_place(&sub, "3:cpuset:/other\n")
                .unwrap_err()
                .contains("outside the hierarchy")
        );
        assert!(
            v1_place(MOUNTINFO, "0::/\n")
                .unwrap_err()
                .contains("no cpuset line")
        );
        // Several controllers on one line, one hierarchy.
        let joint = MOUNTINFO.replace("rw,cpuset", "rw,cpuset,cpu");
        assert_eq!(v1_place(&joint, "3:cpu,cpuset:/\n"), found);
    }
}

//! `--cpuset-partition` on cgroup v2: an isolated cpuset partition that only the measuring
//! threads move into.
//!
//! cgroup v2 moves whole processes between domain cgroups; only a threaded subtree holds the
//! threads of one process apart (Documentation/admin-guide/cgroup-v2.rst, "Threads"). So the
//! partition is a child `jitterlab-<pid>` of the process's own cgroup made `threaded`
//! (`cgroup.type`): the kernel then makes the process's cgroup the subtree's threaded domain
//! (the root cgroup already is one), and the measuring threads are written one by one to the
//! child's `cgroup.threads`. Their siblings (the drain side, tracing, loads) stay where they
//! were. The child gets the measured CPUs (`cpuset.cpus`), the parent's effective memory
//! nodes, and `cpuset.cpus.partition` = `isolated` (`root` where the kernel refuses
//! `isolated`, before 5.15): the kernel takes those CPUs from every other cgroup for the run.
//! What the kernel reads back is the truth: `isolated invalid (<reason>)` is refused with the
//! reason. Where the parent's `cgroup.subtree_control` lacks `+cpuset`, it is enabled for the
//! run and taken back after, journaled like the cgroup.
//!
//! The journal (kind `cgroup2-cpuset`) names the cgroup (relative to the cgroup2 mount)
//! before the `mkdir`, the parent's `+cpuset` before it is written, and the inode after the
//! `mkdir`. The next start after a SIGKILL removes the cgroup only when it still has that
//! inode and no thread in it, then takes `+cpuset` back when the parent has no other child
//! cgroup (one that may use the controller is never deprived of it). Whatever fails while
//! the partition is being set up undoes what was done: no half state.

use super::super::journal::{Journal, TrustedDir};
use super::PREFIX;
use crate::cpulist::format_cpu_list;
use crate::format::environment::CpusetPartitionRecord;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// The journals' kind (their names: `cgroup2-cpuset-<pid>`).
pub(crate) const KIND: &str = "cgroup2-cpuset";

/// The cgroup files, read and written: the kernel's in a run, a scripted fixture in the tests
/// (which plays the kernel's part: a refused write, a partition read back invalid).
pub(crate) trait Cgroupfs: Send + Sync + std::fmt::Debug {
    fn read(&self, path: &Path) -> io::Result<String>;
    fn write(&self, path: &Path, value: &str) -> io::Result<()>;
    fn mkdir(&self, path: &Path) -> io::Result<()>;
    fn rmdir(&self, path: &Path) -> io::Result<()>;
}

/// The kernel's cgroup2 files.
#[derive(Debug)]
pub(crate) struct Kernel;

impl Cgroupfs for Kernel {
    fn read(&self, path: &Path) -> io::Result<String> {
        fs::read_to_string(path)
    }
    fn write(&self, path: &Path, value: &str) -> io::Result<()> {
        fs::write(path, value)
    }
    fn mkdir(&self, path: &Path) -> io::Result<()> {
        fs::create_dir(path)
    }
    fn rmdir(&self, path: &Path) -> io::Result<()> {
        fs::remove_dir(path)
    }
}

/// Where the partition goes: the cgroup2 mount and the process's own cgroup in it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Place {
    pub(crate) mount: PathBuf,
    /// The process's cgroup, relative to the mount (empty for the root cgroup).
    pub(crate) parent: PathBuf,
}

impl Place {
    /// This process's place (/proc/self/mountinfo and /proc/self/cgroup), or why there is
    /// none: no cgroup2 mount, or no cpuset controller in its root's `cgroup.controllers`.
    pub(crate) fn of_this_process() -> Result<Place, String> {
        let read = |p: &str| fs::read_to_string(p).map_err(|e| format!("cannot read {p}: {e}"));
        let place = Place::from(&read("/proc/self/mountinfo")?, &read("/proc/self/cgroup")?)?;
        let controllers = place.mount.join("cgroup.controllers");
        let offered = fs::read_to_string(&controllers).unwrap_or_default();
        if !has_cpuset(&offered) {
            return Err(format!(
                "the cgroup2 hierarchy at {} offers no cpuset controller ({}: {:?}; it is bound to a v1 hierarchy, or the kernel lacks CONFIG_CPUSETS)",
                place.mount.display(),
                controllers.display(),
                offered.trim()
            ));
        }
        Ok(place)
    }

    /// The first cgroup2 mount in `mountinfo` and the cgroup2 line (`0::/path`) of `cgroup`.
    pub(crate) fn from(mountinfo: &str, cgroup: &str) -> Result<Place, String> {
        let mount = mountinfo
            .lines()
            .find_map(|l| {
                let (mine, theirs) = l.split_once(" - ")?;
                (theirs.split_whitespace().next() == Some("cgroup2"))
                    .then(|| mine.split_whitespace().nth(4).map(unescape))?
            })
            .ok_or("no cgroup2 hierarchy is mounted")?;
        let path = cgroup
            .lines()
            .find_map(|l| l.strip_prefix("0::"))
            .ok_or("/proc/self/cgroup has no cgroup2 line (0::)")?;
        let parent = PathBuf::from(path.trim_start_matches('/'));
        if !parent
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
        {
            return Err(format!(
                "this process's cgroup {path:?} is outside the cgroup2 mount it sees (another cgroup namespace)"
            ));
        }
        Ok(Place {
            mount: PathBuf::from(mount),
            parent,
        })
    }

    fn parent_dir(&self) -> PathBuf {
        self.mount.join(&self.parent)
    }
}

/// mountinfo escapes a space, tab, newline and backslash as `\ooo`.
fn unescape(field: &str) -> String {
    let mut out = String::new();
    let mut rest = field;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let code = rest
            .get(at + 1..at + 4)
            .and_then(|o| u8::from_str_radix(o, 8).ok());
        match code {
            Some(c) => {
                out.push(c as char);
                rest = &rest[at + 4..];
            }
            None => {
                out.push('\\');
                rest = &rest[at + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn has_cpuset(list: &str) -> bool {
    list.split_whitespace().any(|c| c == "cpuset")
}

/// A v2 partition made for this run; removed on drop, then `+cpuset` taken back from the
/// parent if this run enabled it, then its journal.
#[derive(Debug)]
pub(crate) struct V2Partition {
    fs: Arc<dyn Cgroupfs>,
    place: Place,
    dir: PathBuf,
    /// The directory was made (and is to be removed).
    made: bool,
    /// This run wrote `+cpuset` to the parent's `cgroup.subtree_control`.
    enabled: bool,
    /// What `cpuset.cpus.partition` read back.
    state: Option<String>,
    journal: Option<Journal>,
}

impl V2Partition {
    /// Makes the partition for `cpus` in `place`, journaled in this user's trusted directory.
    pub(crate) fn create(place: Place, cpus: &[usize]) -> Result<V2Partition, String> {
        let journal_dir = TrustedDir::for_this_user(true).map_err(|e| {
            format!(
                "--cpuset-partition: cannot keep the journal that lets the next start remove the cgroup of a killed run: {}",
                e.unwrap_or_default()
            )
        })?;
        V2Partition::create_in(Arc::new(Kernel), place, &journal_dir, cpus)
    }

    /// [`V2Partition::create`] on the cgroup files `fs`, with its journal in `journal_dir`.
    pub(crate) fn create_in(
        fs: Arc<dyn Cgroupfs>,
        place: Place,
        journal_dir: &TrustedDir,
        cpus: &[usize],
    ) -> Result<V2Partition, String> {
        let parent = place.parent_dir();
        let offered = fs
            .read(&parent.join("cgroup.controllers"))
            .unwrap_or_default();
        if !has_cpuset(&offered) {
            return Err(format!(
                "--cpuset-partition: the cpuset controller does not reach this process's cgroup {} (its cgroup.controllers: {:?}); enable it in each ancestor's cgroup.subtree_control from {} down (`echo +cpuset > {}/cgroup.subtree_control`, ...; with systemd, a unit with Delegate=cpuset), or start jitterlab from the root cgroup",
                parent.display(),
                offered.trim(),
                place.mount.display(),
                place.mount.display()
            ));
        }
        let name = format!("{PREFIX}{}", std::process::id());
        let rel = place.parent.join(&name);
        let journal = Journal::create(journal_dir, KIND, &[format!("cgroup {}", rel.display())])
            .map_err(|e| {
                format!(
                    "--cpuset-partition: cannot write the journal {KIND}-{} in {} ({e}): without it a killed run's cgroup could not be removed",
                    std::process::id(),
                    journal_dir.path().display()
                )
            })?;
        // From here on a failure drops the partition, which undoes what was done.
        let mut partition = V2Partition {
            fs,
            dir: parent.join(&name),
            place,
            made: false,
            enabled: false,
            state: None,
            journal: Some(journal),
        };
        partition.enable_cpuset()?;
        partition.mkdir_cgroup()?;
        partition.make_threaded()?;
        partition.configure(cpus)?;
        Ok(partition)
    }

    /// `+cpuset` in the parent's `cgroup.subtree_control` where it is not there yet,
    /// journaled first.
    fn enable_cpuset(&mut self) -> Result<(), String> {
        let control = self.place.parent_dir().join("cgroup.subtree_control");
        let enabled = self
            .fs
            .read(&control)
            .map_err(|e| self.failed("read", &control, e))?;
        if has_cpuset(&enabled) {
            return Ok(());
        }
        let line = format!("subtree_control {}", self.place.parent.display());
        self.journal_line(&line)?;
        self.fs.write(&control, "+cpuset").map_err(|e| {
            let why = match e.raw_os_error() {
                Some(crate::sys::errno::EBUSY) | Some(crate::sys::errno::ENOTSUP) => format!(
                    "; the kernel enables a controller in a cgroup with processes only when the cgroup can be a threaded domain (no populated child cgroup, no domain controller such as memory or io in {}: {:?}): start jitterlab in a cgroup of its own, or from the root cgroup",
                    control.display(),
                    enabled.trim()
                ),
                _ => "; run as root".into(),
            };
            format!("{}{why}", self.failed("write +cpuset to", &control, e))
        })?;
        self.enabled = true;
        Ok(())
    }

    fn mkdir_cgroup(&mut self) -> Result<(), String> {
        let dir = self.dir.clone();
        if let Err(e) = self.fs.mkdir(&dir) {
            return Err(match e.kind() {
                io::ErrorKind::AlreadyExists => format!(
                    "--cpuset-partition: the cgroup {} already exists, and this run did not make it (a jitterlab with the same pid in another container sharing this hierarchy, or one made by hand); jitterlab never takes over or removes a cgroup it did not journal: if `cat {}/cgroup.threads` is empty, remove it with `rmdir {}`, or run again (another pid is another name)",
                    dir.display(),
                    dir.display(),
                    dir.display()
                ),
                _ => format!(
                    "--cpuset-partition: cannot make the cgroup {} ({e}); run as root",
                    dir.display()
                ),
            });
        }
        self.made = true;
        let inode = fs::symlink_metadata(&dir)
            .map(|m| m.ino())
            .map_err(|e| self.failed("look at", &dir, e))?;
        self.journal_line(&format!("inode {inode}"))
    }

    /// The child threaded: only threads, not whole processes, move into it.
    fn make_threaded(&self) -> Result<(), String> {
        let file = self.dir.join("cgroup.type");
        self.fs.write(&file, "threaded").map_err(|e| {
            let parent = self.place.parent_dir();
            format!(
                "{}; the kernel makes a cgroup the root of a threaded subtree (which lets only the measuring threads move, not the whole process) only when it has no populated domain child cgroup and no domain controller (memory, io, ...) enabled in its cgroup.subtree_control ({}: {:?}): start jitterlab in a cgroup of its own (e.g. `systemd-run --scope`), or from the root cgroup",
                self.failed("write threaded to", &file, e),
                parent.join("cgroup.subtree_control").display(),
                self.fs
                    .read(&parent.join("cgroup.subtree_control"))
                    .unwrap_or_default()
                    .trim()
            )
        })
    }

    /// The memory nodes and CPUs, then the partition, checked by reading it back.
    fn configure(&mut self, cpus: &[usize]) -> Result<(), String> {
        let parent = self.place.parent_dir();
        let mems_file = parent.join("cpuset.mems.effective");
        let mems = self
            .fs
            .read(&mems_file)
            .map_err(|e| self.failed("read", &mems_file, e))?;
        self.set("cpuset.mems", mems.trim())?;
        let list = format_cpu_list(cpus);
        self.set("cpuset.cpus", &list)?;
        let file = self.dir.join("cpuset.cpus.partition");
        let asked = match self.fs.write(&file, "isolated") {
            Ok(()) => "isolated",
            // Kernels before 5.15 know only `root`.
            Err(isolated) => match self.fs.write(&file, "root") {
                Ok(()) => "root",
                Err(e) => {
                    return Err(format!(
                        "{} (and isolated: {isolated}); a partition needs CPUs that no cgroup beside it holds, a parent that is a partition root (start jitterlab from the root cgroup: `echo $$ > {}/cgroup.procs` in the shell that starts it), and Linux 5.2 or later",
                        self.failed("write root to", &file, e),
                        self.place.mount.display()
                    ));
                }
            },
        };
        let read = self
            .fs
            .read(&file)
            .map_err(|e| self.failed("read", &file, e))?;
        let state =
            partition_state(read.trim(), asked).map_err(|reason| self.invalid(&reason, &list))?;
        self.state = Some(state);
        Ok(())
    }

    /// The partition the kernel did not make valid: the reason it gives, and its fix.
    fn invalid(&self, reason: &str, list: &str) -> String {
        let lower = reason.to_ascii_lowercase();
        let fix = if lower.contains("not a partition root") {
            format!(
                "a partition's parent must be a partition root (before Linux 6.7 always; from 6.7 a remote partition needs cpuset.cpus.exclusive set down from the root): start jitterlab from the root cgroup (`echo $$ > {}/cgroup.procs` in the shell that starts it), where the partition is the root's child",
                self.place.mount.display()
            )
        } else if lower.contains("exclusive") || lower.contains("overlap") {
            format!(
                "another cgroup beside {} holds some of CPUs {list} (its cpuset.cpus or cpuset.cpus.exclusive): free them, or measure other CPUs",
                self.dir.display()
            )
        } else if lower.contains("distribute") || lower.contains("empty") {
            format!(
                "the parent cgroup would have no CPU left for its own tasks: keep at least one CPU out of --cpus (CPUs {list} were asked)"
            )
        } else {
            "see cpuset.cpus.partition in the kernel's Documentation/admin-guide/cgroup-v2.rst"
                .into()
        };
        format!(
            "--cpuset-partition: the kernel did not make {} a valid partition of CPUs {list}: {reason}; {fix}",
            self.dir.display()
        )
    }

    /// Moves thread `tid` into the partition and pins it to `cpu` again (a task that enters
    /// a cpuset gets the cpuset's CPUs as its affinity).
    pub(crate) fn add_thread(&self, tid: i32, cpu: usize) -> Result<(), String> {
        self.set("cgroup.threads", &tid.to_string())?;
        crate::sys::sched::set_affinity_of(tid, &[cpu]).map_err(|e| {
            format!("--cpuset-partition: cannot pin thread {tid} to CPU {cpu} again after moving it: {e}")
        })
    }

    /// What run.json says of it.
    pub(crate) fn record(&self) -> CpusetPartitionRecord {
        CpusetPartitionRecord {
            cgroup: "v2".into(),
            path: self.dir.display().to_string(),
            partition: self.state.clone(),
            enabled_in_parent: self.enabled,
        }
    }

    fn set(&self, file: &str, value: &str) -> Result<(), String> {
        let path = self.dir.join(file);
        self.fs
            .write(&path, value)
            .map_err(|e| self.failed(&format!("write {value} to"), &path, e))
    }

    fn journal_line(&mut self, line: &str) -> Result<(), String> {
        let journal = self.journal.as_mut().expect("the journal lives until drop");
        journal.append(line).map_err(|e| {
            format!(
                "--cpuset-partition: cannot journal {line:?} in the journal {KIND}-{} ({e}): without it a killed run's cgroup could not be undone",
                std::process::id()
            )
        })
    }

    fn failed(&self, what: &str, path: &Path, e: io::Error) -> String {
        format!("--cpuset-partition: cannot {what} {}: {e}", path.display())
    }
}

/// What `cpuset.cpus.partition` read back after `asked` was written: the state, or the
/// kernel's reason why the partition is invalid (`isolated invalid (<reason>)`).
pub(crate) fn partition_state(read: &str, asked: &str) -> Result<String, String> {
    if read == asked {
        return Ok(read.to_string());
    }
    match read.split_once(" invalid") {
        Some((_, rest)) => {
            let reason = rest
                .trim()
                .trim_start_matches('(')
                .trim_end_matches(')')
                .trim();
            Err(match reason.is_empty() {
                true => format!("it reads back {read:?} (the kernel gives no reason before 6.2)"),
                false => format!("it reads back {read:?}: {reason}"),
            })
        }
        None => Err(format!("it reads back {read:?}, not {asked}")),
    }
}

impl Drop for V2Partition {
    fn drop(&mut self) {
        // The measuring threads have ended (the session drops this after them): the cgroup
        // is empty and can go, then `+cpuset` from the parent, then the journal. What cannot
        // be undone keeps its journal (now without a writer), for the next start to retry.
        let gone = !self.made
            || match remove_partition(&*self.fs, &self.dir) {
                Ok(()) => true,
                Err(e) => e.kind() == io::ErrorKind::NotFound,
            };
        let restored =
            !(gone && self.enabled) || disable_cpuset(&*self.fs, &self.place.parent_dir()).is_ok();
        if gone
            && restored
            && let Some(journal) = self.journal.take()
        {
            let _ = journal.remove();
        }
    }
}

/// Takes `+cpuset` back from `parent`'s `cgroup.subtree_control`, unless another child cgroup
/// is there now (taking the controller away would take its cpuset with it): then it is
/// left, and Ok(false) says so.
fn disable_cpuset(fs: &dyn Cgroupfs, parent: &Path) -> io::Result<bool> {
    let others = std::fs::read_dir(parent)?
        .flatten()
        .any(|e| e.file_type().is_ok_and(|t| t.is_dir()));
    if others {
        return Ok(false);
    }
    fs.write(&parent.join("cgroup.subtree_control"), "-cpuset")?;
    Ok(true)
}

/// Removes the cgroup: first its partition (`member`), which gives its CPUs back to the
/// parent before this returns (a removed cgroup's cpuset goes offline later, asynchronously:
/// a run started right after the rmdir could find its CPUs still taken, as the lab's check 4
/// found on 6.1), then the directory, waiting up to 100 ms for the threads of a process that
/// just died to leave it (the kernel detaches exiting tasks asynchronously: rmdir says EBUSY
/// until then).
fn remove_partition(fs: &dyn Cgroupfs, dir: &Path) -> io::Result<()> {
    // A cgroup that is not (or no longer) a partition takes `member` as it is; one that is
    // gone fails here and below with NotFound.
    let _ = fs.write(&dir.join("cpuset.cpus.partition"), "member");
    let mut tries = 0;
    loop {
        match fs.rmdir(dir) {
            Err(e) if e.kind() == io::ErrorKind::ResourceBusy && tries < 10 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            other => return other,
        }
    }
}

mod stale;
pub(crate) use stale::undo_on_system;

#[cfg(test)]
mod tests;

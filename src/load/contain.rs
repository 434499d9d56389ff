//! Containment beyond the process group: which processes belong to a load, and how to end every
//! one of them, including descendants that left the load's process group (setsid, setpgid,
//! daemons that fork twice) and so escape the group's signals and the parent-death signals.
//!
//! Two memberships, used together:
//! - **cgroup v2**, where the system allows it: each load runs in a cgroup of its own,
//!   `<jitterlab's cgroup>/jitterlab-loads-<pid>-<n>/load-<k>`, which every descendant inherits
//!   and no unprivileged process can leave; `cgroup.kill` ends them all at once (or, on kernels
//!   before 5.14, a SIGKILL to each member until none is left). The cgroups are removed after.
//! - **the marker** `JITTERLAB_LOAD=<pid>:<k>` that the supervisor puts in the load's
//!   environment and every descendant inherits, found by scanning `/proc/*/environ`. It is the
//!   only membership where cgroups cannot be made or joined (no cgroup v2 mounted, a read-only
//!   or undelegated hierarchy), and catches a privileged process that moved itself out of the
//!   cgroup. A process that replaces its environment (`env -i`) loses it.
//!
//! An `exec` load whose `cpus=` are not every CPU also runs in a **cpuset** of its CPUs
//! (contain/cpuset.rs), which makes them a bound its programs cannot undo; on a cgroup v1
//! hierarchy its processes are found and killed through it too.
//!
//! After a SIGKILL of jitterlab, a **reaper** process ([`reaper_main`], `jitterlab
//! __load-reaper`) does the same: it waits on a pipe whose only writer is jitterlab, and at
//! end-of-file (jitterlab's exit, however it happened) kills what is left of jitterlab's loads
//! and removes their cgroups. It runs in a session of its own and ignores SIGINT, SIGTERM and
//! SIGHUP, so that what ends jitterlab (Ctrl-C, a closed terminal, a service stop) leaves it to
//! do its work.
//!
//! The cgroups are kernel state that outlives the process: each supervisor's is journaled
//! (journal.rs) before it is made, with its inode after, and the journal removed once the
//! cgroup is. A cgroup of a jitterlab that died together with its reaper is removed at the next
//! run's start (session/stale.rs, through [`undo`]) from its journal alone: only the very
//! directory the journal names (its inode), during this boot, never one found by its name. No
//! journal, no cgroup: where the journal cannot be kept, the loads have the marker alone.

pub(crate) mod cpuset;
mod reaper;

pub(crate) use reaper::reaper_main;
#[cfg(test)]
use reaper::sweep;

use super::protocol::MARKER_ENV;
use crate::journal::{Journal, Stale, TrustedDir};
use crate::sys::errno;
use crate::sys::file;
use crate::sys::process::{self, Pid};
use crate::sys::signal;
use std::fs::File;
use std::os::fd::RawFd;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Name prefix of the cgroup holding one supervisor's loads: `jitterlab-loads-<pid>-<n>`.
pub(crate) const CGROUP_PREFIX: &str = "jitterlab-loads-";
/// The journals' kind (their names: `load-cgroup-<pid>[-<n>]`).
pub(crate) const KIND: &str = "load-cgroup";
/// How long killing a load's processes, or removing its cgroup, may take before giving up.
const KILL_WAIT: Duration = Duration::from_secs(2);
/// How long the supervisor waits for the reaper to finish after a normal end.
const REAPER_WAIT: Duration = Duration::from_secs(3);

/// Supervisors started by this process (a sweep starts one per level), to name their cgroups.
static SEQUENCE: AtomicUsize = AtomicUsize::new(0);

/// The marker value of load `k` of jitterlab process `owner`.
pub(crate) fn marker(owner: u32, k: usize) -> String {
    format!("{owner}:{k}")
}

fn marker_entry(owner: u32, k: usize) -> Vec<u8> {
    format!("{MARKER_ENV}={}", marker(owner, k)).into_bytes()
}

fn owner_prefix(owner: u32) -> Vec<u8> {
    format!("{MARKER_ENV}={owner}:").into_bytes()
}

/// The processes of this user whose environment has an entry for which `matches` is true.
/// Zombies and kernel threads have no environment to read and are never listed. Only this
/// user's processes are read: a load runs as the user who started it, and reading every
/// process's environment let another user's processes make the search as long as she liked
/// (tenth hostile re-run, S2: 600 processes with 1.4 MB environments held root's start 6.9 s,
/// and a stop request 6.5 s). "This user's" is every one of its user ids, the real one too:
/// `/proc/PID` belongs to the effective uid, which for another user's setuid-root program (600
/// `su` left at their password prompts with 1.4 MB environments: eleventh re-run, S2b, 4 s at
/// each start and again at each load's stop) is root's. A load that changes its user is found
/// through its cgroup, not its marker.
fn marked(matches: &dyn Fn(&[u8]) -> bool) -> Vec<Pid> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let own = std::process::id() as Pid;
    let uid = process::effective_user_id();
    procs
        .flatten()
        .filter(|e| e.metadata().is_ok_and(|m| m.uid() == uid))
        .filter_map(|e| e.file_name().to_str()?.parse::<Pid>().ok())
        .filter(|&pid| pid != own)
        .filter(|&pid| {
            use std::io::Read;
            let Ok(mut file) = File::open(format!("/proc/{pid}/environ")) else {
                return false;
            };
            // A first page, so that a process without an environment (a kernel thread, whose
            // environ cannot be read: about 60 of root's 90-110 processes on the development
            // VM) is passed over without reading its status, which costs several times more
            // (issue 44: the status files of 89 took 3-6 ms there, the environments' first
            // pages 0.5 ms); another user's setuid program gives no more than this page before
            // its user ids are checked.
            let mut env = Vec::new();
            let first = (&mut file).take(4096).read_to_end(&mut env);
            first.is_ok_and(|n| n > 0)
                && process::user_ids(pid).is_some_and(|ids| ids.iter().all(|&id| id == uid))
                && file.read_to_end(&mut env).is_ok()
                && env.split(|&b| b == 0).any(matches)
        })
        .collect()
}

/// SIGKILLs every process `members` lists, again and again, until it lists none (a member may
/// fork between a listing and its kill) or [`KILL_WAIT`] has passed; the pids killed.
fn kill_until_none(members: &dyn Fn() -> Vec<Pid>) -> Vec<Pid> {
    let deadline = Instant::now() + KILL_WAIT;
    let mut killed = Vec::new();
    loop {
        let now = members();
        if now.is_empty() || Instant::now() > deadline {
            return killed;
        }
        for &pid in &now {
            let _ = process::kill(pid, signal::SIGKILL);
            if !killed.contains(&pid) {
                killed.push(pid);
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The cgroup v2 directory this process is in, when a cgroup v2 hierarchy is mounted (alone or
/// beside v1, e.g. at /sys/fs/cgroup/unified) and this process is listed in it.
fn own_cgroup_dir() -> Result<PathBuf, String> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("cannot read /proc/self/mountinfo: {e}"))?;
    // Fields: id parent dev root mountpoint options... - fstype source super-options.
    let mount = mountinfo
        .lines()
        .find_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            (right.split(' ').next() == Some("cgroup2")).then(|| left.split(' ').nth(4))?
        })
        .ok_or("no cgroup v2 hierarchy is mounted")?;
    let own = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("cannot read /proc/self/cgroup: {e}"))?;
    let path = own
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .ok_or("this process has no cgroup v2 path in /proc/self/cgroup")?;
    let dir = Path::new(mount).join(path.trim_start_matches('/'));
    // A cgroup namespace or a mount of a sub-tree can make the two disagree: check.
    let pid = std::process::id() as Pid;
    if !procs_of(&dir).contains(&pid) {
        return Err(format!("{} does not list this process", dir.display()));
    }
    Ok(dir)
}

/// The processes in cgroup `dir` (not in its children).
fn procs_of(dir: &Path) -> Vec<Pid> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// The processes in cgroup `dir` and every cgroup below it.
fn procs_below(dir: &Path) -> Vec<Pid> {
    let mut pids = procs_of(dir);
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                pids.extend(procs_below(&e.path()));
            }
        }
    }
    pids
}

/// Kills every process in cgroup `dir` and below, waits until it is empty, and removes it and
/// the cgroups below it; the pids killed (those listed before the kill). Nothing to do when it
/// does not exist.
fn kill_and_remove_cgroup(dir: &Path) -> Vec<Pid> {
    if !dir.exists() {
        return Vec::new();
    }
    let killed = procs_below(dir);
    // cgroup.kill (Linux 5.14) ends every process below at once, forks in flight included;
    // without it, each member is killed until none is left.
    let by_kill_file = std::fs::write(dir.join("cgroup.kill"), "1").is_ok();
    let deadline = Instant::now() + KILL_WAIT;
    loop {
        if !by_kill_file {
            kill_until_none(&|| procs_below(dir));
        }
        if remove_tree(dir) || Instant::now() > deadline {
            return killed;
        }
        // EBUSY: the killed are still exiting.
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// rmdir of `dir` after the cgroups below it; true once `dir` is gone.
fn remove_tree(dir: &Path) -> bool {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                remove_tree(&e.path());
            }
        }
    }
    match std::fs::remove_dir(dir) {
        Ok(()) => true,
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

/// Makes the cgroup `dir`, journaled in `journal_dir` as `<key> DIR` (`cgroup`: the loads'
/// cgroup v2; `cpuset`: their v1 cpuset, cpuset.rs) before the mkdir (a kill right after it
/// still leaves the journal) and with its inode after; why not (nothing left, no journal)
/// when either fails, the journal's failure first.
fn make_journaled(
    dir: &Path,
    journal_dir: &TrustedDir,
    key: &str,
) -> Result<(PathBuf, Journal), String> {
    let journal_failed = |e: std::io::Error| {
        format!(
            "cannot write a journal in {}: {e}",
            journal_dir.path().display()
        )
    };
    let mut journal = Journal::create(journal_dir, KIND, &[format!("{key} {}", dir.display())])
        .map_err(journal_failed)?;
    if let Err(e) = std::fs::create_dir(dir) {
        let _ = journal.remove();
        return Err(format!("cannot make {}: {e}", dir.display()));
    }
    let recorded =
        std::fs::symlink_metadata(dir).and_then(|m| journal.append(&format!("inode {}", m.ino())));
    if let Err(e) = recorded {
        let _ = std::fs::remove_dir(dir);
        // Kept (without a writer once this process ends) if the cgroup could not go.
        if !dir.exists() {
            let _ = journal.remove();
        }
        return Err(journal_failed(e));
    }
    Ok((dir.to_path_buf(), journal))
}

/// Says (once per process) that the loads get no cgroup, as it could not be journaled
/// because `why`.
fn unjournaled(why: &str) {
    crate::journal::say_unjournaled(
        "the loads' cgroup",
        why,
        "none is made: the loads run contained by their JITTERLAB_LOAD marker alone (a load that leaves its process group and replaces its environment escapes it)",
        "nothing would remove a cgroup of its loads",
    );
}

/// Undoes the journal of a killed run (session/stale.rs): kills what is left in the load
/// cgroup it names and removes it, when it is the very directory the run made (its inode)
/// during this boot. What is in it are that run's loads (the reaper, killed too, did not get
/// to them): a load is jitterlab's, not the user's. Returns what to say, if anything, and
/// whether the journal is done with (kept when the cgroup could not be removed, for the next
/// start to retry).
pub(crate) fn undo(stale: &Stale) -> (Option<String>, bool) {
    let inode = stale.parsed::<u64>("inode");
    // `cgroup DIR`: the loads' cgroup v2; `cpuset DIR`: their v1 cpuset (cpuset.rs).
    let named = stale.field("cgroup").or_else(|| stale.field("cpuset"));
    let Some(dir) = named.map(PathBuf::from).filter(|d| {
        d.is_absolute()
            && d.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(CGROUP_PREFIX))
    }) else {
        return stale.not_in_format("a load cgroup");
    };
    if !stale.this_boot {
        // A cgroup does not survive a reboot: the one this journal names is gone.
        return (None, true);
    }
    let shown = dir.display();
    let pid = stale.pid;
    let hint = format!("if `cat {shown}/cgroup.procs` is empty, remove it with `rmdir {shown}`");
    if let Err(undone) = stale.made_dir(&dir, inode, "the load cgroup", &hint) {
        return undone;
    }
    let killed = kill_and_remove_cgroup(&dir);
    if dir.exists() {
        return (
            Some(format!(
                "cannot remove the load cgroup {shown} left by a jitterlab (pid {pid}) that was killed; remove it with `rmdir {shown}` once `cat {shown}/cgroup.procs` is empty"
            )),
            false,
        );
    }
    let mut said = format!(
        "removed the load cgroup {shown} left by a jitterlab (pid {pid}) that was killed with its reaper"
    );
    if !killed.is_empty() {
        said.push_str(&format!(
            ", after killing the {} left in it (pids {})",
            load_processes(killed.len()),
            pid_list(&killed)
        ));
    }
    (Some(said), true)
}

/// "1 load process", "3 load processes": the count of a warning about killed loads.
fn load_processes(n: usize) -> String {
    format!("{n} load process{}", if n == 1 { "" } else { "es" })
}

/// The pids of a warning, "12, 15".
fn pid_list(pids: &[Pid]) -> String {
    let pids: Vec<String> = pids.iter().map(|p| p.to_string()).collect();
    pids.join(", ")
}

/// The largest pid Linux hands out (PID_MAX_LIMIT, 2^22): a marker naming an owner above it
/// is no jitterlab's (the unit tests use such owners, so that no run ever takes them for its
/// leftovers).
const PID_MAX_LIMIT: u32 = 1 << 22;

/// The owner pid in a marker entry `JITTERLAB_LOAD=<owner>:<k>`.
fn owner_of(entry: &[u8]) -> Option<u32> {
    let rest = entry.strip_prefix(format!("{MARKER_ENV}=").as_bytes())?;
    let owner = rest.split(|&b| b == b':').next()?;
    std::str::from_utf8(owner).ok()?.parse().ok()
}

/// Kills the load processes of jitterlab processes that no longer exist, wherever they are:
/// after a SIGKILL of jitterlab together with its reaper, a load that moved itself out of its
/// cgroup (a privileged one can) is in no cgroup the journal's undo looks at, but still carries
/// its marker. Found by scanning every process's environment for a marker whose owner is gone.
/// Called when a run starts, as stale CPU locks and tracing instances are dealt with; returns
/// a warning naming what was killed, if anything was.
pub(crate) fn kill_orphaned_loads() -> Option<String> {
    let orphaned = |entry: &[u8]| {
        owner_of(entry).is_some_and(|owner| {
            owner <= PID_MAX_LIMIT
                && owner != std::process::id()
                && process::kill(owner as Pid, 0)
                    .is_err_and(|e| e.raw_os_error() == Some(errno::ESRCH))
        })
    };
    let killed = kill_until_none(&|| marked(&orphaned));
    (!killed.is_empty()).then(|| {
        format!(
            "killed {} left running by a jitterlab that no longer exists (found by their {MARKER_ENV} marker; pids {}): they were disturbing the CPUs",
            load_processes(killed.len()),
            pid_list(&killed)
        )
    })
}

/// The containment of one load: its cgroup when it has one, its v1 cpuset when it has one
/// (cpuset.rs), and its marker.
pub(crate) struct LoadContainer {
    cgroup: Option<PathBuf>,
    /// Its cpuset in a cgroup v1 hierarchy (on cgroup v2, its cgroup is its cpuset).
    cpuset: Option<PathBuf>,
    /// Whether its CPUs are a bound (its cpuset holds them), or why not; None: none was
    /// asked for (a built-in generator keeps the CPUs it is given).
    bound: Option<Result<(), String>>,
    entry: Vec<u8>,
}

/// A `cgroup.procs` for a load's child to move itself into between fork and exec
/// ([`join_own_cgroup`]).
pub(crate) struct ProcsFile {
    pub file: File,
    /// It holds the load's CPUs: the child must not start outside it.
    pub(crate) bounds_cpus: bool,
}

impl LoadContainer {
    /// The `cgroup.procs` of the load's cgroup and of its v1 cpuset, opened for the child to
    /// move itself in between fork and exec ([`join_own_cgroup`]), so that nothing it starts
    /// can be born outside. Empty without either.
    pub(crate) fn procs_files(&self) -> Vec<ProcsFile> {
        let bounded = matches!(self.bound, Some(Ok(())));
        let v2_bounds = bounded && self.cpuset.is_none();
        [(&self.cgroup, v2_bounds), (&self.cpuset, bounded)]
            .into_iter()
            .filter_map(|(dir, bounds_cpus)| {
                let file = std::fs::OpenOptions::new()
                    .write(true)
                    .open(dir.as_ref()?.join("cgroup.procs"))
                    .ok()?;
                Some(ProcsFile { file, bounds_cpus })
            })
            .collect()
    }

    /// Whether the load's CPUs are a bound its programs cannot undo: None when none was asked
    /// for, else Ok or why not.
    pub(crate) fn cpus_bound(&self) -> Option<&Result<(), String>> {
        self.bound.as_ref()
    }

    /// Every process of the load: the members of its cgroup and cpuset and the carriers of
    /// its marker.
    pub(crate) fn pids(&self) -> Vec<Pid> {
        let mut pids = self.cgroup.as_deref().map(procs_of).unwrap_or_default();
        let cpuset = self.cpuset.as_deref().map(procs_of).unwrap_or_default();
        for p in cpuset
            .into_iter()
            .chain(marked(&|e| e == self.entry.as_slice()))
        {
            if !pids.contains(&p) {
                pids.push(p);
            }
        }
        pids
    }

    /// SIGKILLs every process of the load and removes its cgroup and cpuset; the pids killed,
    /// for the caller to reap those that come back to it.
    pub(crate) fn kill_all(&self) -> Vec<Pid> {
        let mut killed = self
            .cgroup
            .as_deref()
            .map(kill_and_remove_cgroup)
            .unwrap_or_default();
        let in_cpuset = self.cpuset.as_deref().map(kill_and_remove_cgroup);
        let marked_ones = kill_until_none(&|| marked(&|e| e == self.entry.as_slice()));
        for p in in_cpuset.into_iter().flatten().chain(marked_ones) {
            if !killed.contains(&p) {
                killed.push(p);
            }
        }
        killed
    }
}

/// Called in the child between fork and exec: moves the calling process into the cgroup whose
/// `cgroup.procs` is open as `fd` ("0" means the writer); whether it did. Async-signal-safe.
/// The caller decides what a refusal means: the load has the marker alone, or (a cpuset that
/// bounds its CPUs) it must not start.
pub(crate) fn join_own_cgroup(fd: RawFd) -> bool {
    // A descriptor the parent opened.
    file::write_raw(fd, b"0") > 0
}

/// The containment of one supervisor's loads: their parent cgroup (when cgroups can be used)
/// and the reaper that cleans up if jitterlab dies. Dropping it removes the parent cgroup and
/// lets the reaper finish.
pub(crate) struct Containment {
    owner: u32,
    cgroup: Option<PathBuf>,
    /// The cgroup's journal, removed once the cgroup is.
    journal: Option<Journal>,
    /// The parent cpuset of the `exec` loads (cpuset.rs), or why there is none.
    cpuset: Result<cpuset::Parent, String>,
    reaper: Option<(Child, File)>,
}

impl Containment {
    /// Makes the parent cgroup, journaled (or, where either fails, goes on with the marker
    /// alone), with `cpusets` (some load will ask for its CPUs to be bounded) the parent
    /// cpuset (cpuset.rs), and starts the reaper.
    pub(crate) fn start(cpusets: bool) -> std::io::Result<Self> {
        let owner = std::process::id();
        // Not reported here: a run reports what it killed at its start (`kill_orphaned_loads`).
        kill_orphaned_loads();
        let name = format!(
            "{CGROUP_PREFIX}{owner}-{}",
            SEQUENCE.fetch_add(1, Ordering::SeqCst)
        );
        let journal_dir = TrustedDir::for_this_user(true)
            .map_err(|e| e.unwrap_or_else(|| "this user has no trusted directory".into()));
        let made = own_cgroup_dir().ok().and_then(|parent| {
            let journal_dir = journal_dir.as_ref().map_err(|e| unjournaled(e)).ok()?;
            make_journaled(&parent.join(&name), journal_dir, "cgroup")
                .map_err(|e| {
                    if e.starts_with("cannot write a journal") {
                        unjournaled(&e)
                    }
                })
                .ok()
        });
        let (cgroup, journal) = made.unzip();
        let cpuset = match cpusets {
            true => cpuset::Parent::make(
                &name,
                cgroup.as_deref(),
                journal_dir.as_ref().map_err(|e| {
                    format!("the journal that removes a cpuset after a kill cannot be kept: {e}")
                }),
            ),
            false => Err("no load asked for a cpuset".into()),
        };
        let mut c = Containment {
            owner,
            cgroup,
            journal,
            cpuset,
            reaper: None,
        };
        c.reaper = Some(c.start_reaper()?);
        Ok(c)
    }

    /// `jitterlab __load-reaper --owner PID [--cgroup DIR]` with the read end of a pipe as its
    /// stdin; this process keeps the only write end (close-on-exec, so no load inherits it).
    fn start_reaper(&self) -> std::io::Result<(Child, File)> {
        let (read_fd, write_fd) = file::pipe()?;
        // SAFETY: fresh descriptors from pipe2, owned here.
        let (read, write) = unsafe {
            use std::os::fd::FromRawFd;
            (File::from_raw_fd(read_fd), File::from_raw_fd(write_fd))
        };
        let mut cmd = Command::new("/proc/self/exe");
        cmd.arg("__load-reaper")
            .arg("--owner")
            .arg(self.owner.to_string());
        if let Some(dir) = &self.cgroup {
            cmd.arg("--cgroup").arg(dir);
        }
        if let Ok(cpuset::Parent::V1 { dir, .. }) = &self.cpuset {
            cmd.arg("--cpuset").arg(dir);
        }
        // No stdout or stderr: a caller reading jitterlab's output to its end (a shell's $(...))
        // must not wait for the reaper, which outlives a killed jitterlab by a moment.
        cmd.env_remove(MARKER_ENV)
            .stdin(Stdio::from(read))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: setsid is async-signal-safe. In a session of its own, the reaper gets none of
        // the terminal's signals (Ctrl-C, hangup) that end jitterlab.
        unsafe {
            cmd.pre_exec(|| {
                process::new_session();
                Ok(())
            });
        }
        let child = cmd.spawn()?;
        Ok((child, write))
    }

    /// The container of load `k`: a cgroup of its own when this supervisor has one, and when
    /// `bound_to` is given (an `exec` load's CPUs) a cpuset holding those CPUs where one can
    /// be made (cpuset.rs).
    pub(crate) fn for_load(&self, k: usize, bound_to: Option<&[usize]>) -> LoadContainer {
        // Each load is started once per supervisor, so the name is new.
        let cgroup = self.cgroup.as_ref().and_then(|parent| {
            let dir = parent.join(format!("load-{k}"));
            std::fs::create_dir(&dir).ok().map(|_| dir)
        });
        let mut container = LoadContainer {
            cgroup,
            cpuset: None,
            bound: None,
            entry: marker_entry(self.owner, k),
        };
        if let Some(cpus) = bound_to {
            let made = self
                .cpuset
                .as_ref()
                .map_err(String::clone)
                .and_then(|p| p.for_load(k, cpus, container.cgroup.as_deref()));
            container.bound = Some(made.map(|dir| container.cpuset = dir));
        }
        container
    }
}

impl Drop for Containment {
    fn drop(&mut self) {
        if let Ok(cpuset) = &mut self.cpuset {
            cpuset.remove();
        }
        if let Some(dir) = &self.cgroup {
            kill_and_remove_cgroup(dir);
            // One that could not go keeps its journal (now without a writer) for the next
            // start to retry.
            if !dir.exists()
                && let Some(journal) = self.journal.take()
            {
                let _ = journal.remove();
            }
        }
        if let Some((mut child, write)) = self.reaper.take() {
            // End-of-file: the reaper makes its final sweep (nothing should be left) and exits.
            drop(write);
            let deadline = Instant::now() + REAPER_WAIT;
            while Instant::now() < deadline {
                if !matches!(child.try_wait(), Ok(None)) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    }
}

#[cfg(test)]
mod tests;

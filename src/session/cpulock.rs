//! Per-CPU locks. Two jitterlab runs measuring one CPU disturb each other, and each result
//! would look clean. A run holds `flock(LOCK_EX)` on `/run/jitterlab/cpu<N>.lock` for every CPU
//! it measures, for as long as it measures; the kernel releases it when the process ends, however
//! it ends (a SIGKILL leaves no stale lock). A second run on a CPU that is locked is refused
//! (exit 3, naming the holder), or with `--allow-shared-cpus` measures anyway and carries a
//! warning.
//!
//! `/run/jitterlab` is made sticky and world-writable (like /run/lock), so that unprivileged runs
//! lock too. A lock file is only opened for reading and locked, never written or truncated, and
//! is opened without following a link and only if it is a regular file: a name planted there
//! by another user can make a lock fail, not redirect anything.
//!
//! Since any user can lock those files, a root run does not let a lock there stop it unless a
//! jitterlab run or a root process holds it: the holders are found in /proc (every process
//! whose open file holds the flock, `/proc/PID/fdinfo`, so a locker that forked and exited is
//! not hidden) and told apart by what the kernel says of them (the uid; the executable,
//! `/proc/PID/exe`, the same file as this one's), never by a name they chose. A holder of
//! another user that is not jitterlab is named in a warning and the run proceeds. So that
//! root runs still exclude each other when a planted lock stops neither from taking the
//! shared one, a root run also locks `cpu<N>.lock` in root's own directory
//! (`/run/jitterlab-root`, journal.rs), which only root can open.

use super::journal::TrustedDir;
use super::open_files::{Openers, Search};
use crate::error::{Failure, Result};
use crate::sys::{errno, fs};
use std::collections::BTreeMap;
use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

/// How long the holders of busy locks are searched for in /proc, at most, by one take of the
/// locks or one look at a run's locks (open_files.rs): any user can make the search long.
const HOLDER_SEARCH_BUDGET: std::time::Duration = std::time::Duration::from_millis(250);

/// Where the lock files live.
pub(crate) const LOCK_DIR: &str = crate::journal::SHARED_DIR;

/// The locks of one run. Dropping it releases them, unless another holder in this process (a
/// sweep, around its levels' runs) still holds them.
#[derive(Debug)]
pub(crate) struct CpuLocks {
    _held: Vec<Arc<CpuLock>>,
}

/// The lock files of one CPU this process holds: the shared one and root's own (either may be
/// missing: see [`take`]).
#[derive(Debug)]
struct CpuLock {
    _shared: Option<File>,
    _own: Option<File>,
}

/// The CPUs this process holds a lock on. A second `flock` of the same file by the same process
/// through another open would conflict with the first, so holders in one process share the
/// open file.
static HELD: Mutex<BTreeMap<usize, Weak<CpuLock>>> = Mutex::new(BTreeMap::new());

/// Where the locks are taken: the shared directory, and root's own (None for another user).
struct Places {
    shared: PathBuf,
    own: Option<std::result::Result<TrustedDir, String>>,
    proc: PathBuf,
    root: bool,
    /// Taken by a tune's settings lock (settings.rs): every online CPU, never shared, so a
    /// refusal's advice is to wait (no --cpus or --allow-shared-cpus helps a tune).
    for_settings: bool,
}

/// Locks every CPU of `cpus` for this process. Returns the locks and the warnings to store with
/// the run: CPUs measured by another run anyway (`allow_shared`), shared locks held by a
/// process that is not jitterlab (a root run), or locks that could not be taken at all (e.g.
/// no write access to /run), where another run would go unnoticed.
pub(crate) fn take(cpus: &[usize], allow_shared: bool) -> Result<(CpuLocks, Vec<String>)> {
    take_in(cpus, allow_shared, &Places::of_this_user(false))
}

/// Locks every CPU of `cpus` for a tune's settings lock (settings.rs): never shared, and a
/// refusal says to wait rather than to choose other CPUs.
pub(crate) fn take_for_settings(cpus: &[usize]) -> Result<CpuLocks> {
    take_in(cpus, false, &Places::of_this_user(true)).map(|(locks, _)| locks)
}

impl Places {
    fn of_this_user(for_settings: bool) -> Places {
        let root = crate::sys::process::effective_user_id() == 0;
        Places {
            shared: PathBuf::from(LOCK_DIR),
            own: root.then(|| TrustedDir::for_this_user(true).map_err(Option::unwrap_or_default)),
            proc: PathBuf::from("/proc"),
            root,
            for_settings,
        }
    }
}

fn take_in(cpus: &[usize], allow_shared: bool, places: &Places) -> Result<(CpuLocks, Vec<String>)> {
    let mut held_here = HELD.lock().unwrap_or_else(|e| e.into_inner());
    let mut held = Vec::new();
    let mut warnings = Vec::new();
    let mut shared_dir: Option<io::Result<OwnedFd>> = None;
    let shared_path = places.shared.display().to_string();
    // One bounded search of /proc for every busy lock's holders (open_files.rs).
    let mut search = Search::new(HOLDER_SEARCH_BUDGET);
    for &cpu in cpus {
        if let Some(lock) = held_here.get(&cpu).and_then(Weak::upgrade) {
            held.push(lock);
            continue;
        }
        // Root's own lock first: only root runs can hold it.
        let mut own = None;
        let mut own_problem = None;
        match &places.own {
            Some(Ok(dir)) => match lock_in(dir.fd(), &dir.path().display().to_string(), cpu) {
                Locked::Held(file) => own = Some(file),
                Locked::Busy(file, path) => {
                    let found = holders(&file, &places.proc, true, &mut search);
                    let holder = describe_all(&found, &path, &search);
                    if !allow_shared {
                        return Err(refusal(cpu, &found, &holder, places.for_settings));
                    }
                    warnings.push(shared_warning(cpu, &holder));
                    continue;
                }
                Locked::Failed(why) => own_problem = Some(why),
            },
            Some(Err(why)) => own_problem = Some(why.clone()),
            None => {}
        }
        let dir = match &*shared_dir.get_or_insert_with(|| run_dir_at(&places.shared)) {
            Ok(d) => d.as_fd(),
            Err(e) => {
                let said = format!("cannot take the CPU locks in {shared_path} ({e})");
                if own.is_none() {
                    warnings.push(format!(
                        "{said}: another jitterlab measuring these CPUs at the same time would go unnoticed; run once as root to make {shared_path}"
                    ));
                    break;
                }
                // Root's own lock is held: only runs of other users go unnoticed. Said once.
                if !warnings.iter().any(|w| w.starts_with(&said)) {
                    warnings.push(format!(
                        "{said}: a jitterlab run of another user measuring these CPUs at the same time would go unnoticed (root runs exclude each other through {})",
                        super::journal::ROOT_DIR
                    ));
                }
                held.push(keep(&mut held_here, cpu, None, own));
                continue;
            }
        };
        match lock_in(dir, &shared_path, cpu) {
            Locked::Held(file) => held.push(keep(&mut held_here, cpu, Some(file), own)),
            Locked::Failed(why) => {
                warnings.push(format!(
                    "cannot take the lock of CPU {cpu} ({why}): another jitterlab measuring it at the same time would go unnoticed"
                ));
                if own.is_some() {
                    held.push(keep(&mut held_here, cpu, None, own));
                }
            }
            Locked::Busy(file, path) => {
                let found = holders(&file, &places.proc, false, &mut search);
                let text = describe_all(&found, &path, &search);
                if places.root && !found.is_empty() && found.iter().all(Holder::cannot_stop_root) {
                    warnings.push(planted_warning(cpu, &path, &text, own_problem.as_deref()));
                    held.push(keep(&mut held_here, cpu, None, own));
                    continue;
                }
                if !allow_shared {
                    return Err(refusal(cpu, &found, &text, places.for_settings));
                }
                warnings.push(shared_warning(cpu, &text));
                if own.is_some() {
                    held.push(keep(&mut held_here, cpu, None, own));
                }
            }
        }
    }
    Ok((CpuLocks { _held: held }, warnings))
}

/// The refusal of a CPU another run holds, with the advice that helps: a tune (taking the
/// settings lock) can only wait; a run refused by a tune, which holds every CPU, cannot avoid
/// it with --cpus (eighth hostile re-run, M1).
fn refusal(cpu: usize, found: &[Holder], holder: &str, for_settings: bool) -> Failure {
    let advice = if for_settings {
        "wait for it to end (a tune changes the whole machine's settings, so --cpus and --allow-shared-cpus do not apply to it)"
    } else if found.iter().any(|h| h.tune) {
        "a tune holds every CPU while it changes the whole machine's kernel settings, so no --cpus avoids it: wait for it to end, or pass --allow-shared-cpus to measure anyway (the results then carry a warning naming the tune)"
    } else {
        "two runs on one CPU disturb each other, and each result would look clean; wait for it to end, measure other CPUs with --cpus, or pass --allow-shared-cpus to measure anyway (the results then carry a warning)"
    };
    Failure::system(format!("CPU {cpu} is being measured by {holder}: {advice}"))
}

/// The warning of a CPU measured anyway (`--allow-shared-cpus`).
fn shared_warning(cpu: usize, holder: &str) -> String {
    format!(
        "CPU {cpu} was being measured by {holder} when this run started (--allow-shared-cpus): the two runs disturb each other"
    )
}

/// The warning of a root run that went past a shared lock held by another user's process
/// that is not jitterlab.
fn planted_warning(cpu: usize, path: &str, holder: &str, own_problem: Option<&str>) -> String {
    let own = match own_problem {
        None => format!(
            "root runs still exclude each other through {}/cpu{cpu}.lock",
            super::journal::ROOT_DIR
        ),
        Some(why) => format!(
            "and root's own lock could not be taken either ({why}): another root run on CPU {cpu} would go unnoticed too"
        ),
    };
    format!(
        "the lock of CPU {cpu} ({path}) is held by {holder}; a lock any user can take does not stop a root run, so this run measured anyway: a jitterlab run of another user started on CPU {cpu} while it lasts would go unnoticed ({own})"
    )
}

/// A lock file held by this process for `cpu` (and its entry in [`HELD`]).
fn keep(
    held_here: &mut BTreeMap<usize, Weak<CpuLock>>,
    cpu: usize,
    shared: Option<File>,
    own: Option<File>,
) -> Arc<CpuLock> {
    let lock = Arc::new(CpuLock {
        _shared: shared,
        _own: own,
    });
    held_here.insert(cpu, Arc::downgrade(&lock));
    lock
}

/// What locking one file came to.
enum Locked {
    Held(File),
    /// Another holds it: the open file, its path.
    Busy(File, String),
    /// It could not be opened or locked: why, with its path.
    Failed(String),
}

/// Locks `cpu<N>.lock` in the directory `dir` (shown as `shown`).
fn lock_in(dir: BorrowedFd, shown: &str, cpu: usize) -> Locked {
    let path = format!("{shown}/cpu{cpu}.lock");
    let file = match open_lock_file(dir, cpu) {
        Ok(f) => f,
        Err(e) => return Locked::Failed(format!("{path}: {e}")),
    };
    match fs::try_lock_exclusive(file.as_fd()) {
        Ok(true) => Locked::Held(file),
        Ok(false) => Locked::Busy(file, path),
        Err(e) => Locked::Failed(format!("{path}: {e}")),
    }
}

/// Opens /run/jitterlab (or the tests' `at`), making it (sticky, world-writable) if missing:
/// the CPU locks live there, and the trusted directories of users other than root (made by
/// journal.rs, which sits below the session).
fn run_dir_at(at: &Path) -> io::Result<OwnedFd> {
    crate::journal::shared_dir_at(at)
}

/// Opens (making it if missing) the lock file of `cpu`, for reading only: `flock` needs no
/// more, and nothing is ever written to it.
fn open_lock_file(dir: BorrowedFd, cpu: usize) -> io::Result<File> {
    let name = CString::new(format!("cpu{cpu}.lock")).expect("no NUL in the name");
    // An existing file is opened without O_CREAT: in a sticky world-writable directory the
    // kernel refuses O_CREAT on another user's file (fs.protected_regular).
    let file = loop {
        let opened = fs::open_read_at(dir, &name, false);
        if !opened
            .as_ref()
            .is_err_and(|e| e.raw_os_error() == Some(errno::ENOENT))
        {
            break opened?;
        }
        let made = fs::open_read_at(dir, &name, true);
        // Made by another run meanwhile: open it as an existing file.
        if !made
            .as_ref()
            .is_err_and(|e| e.raw_os_error() == Some(errno::EEXIST))
        {
            break made?;
        }
    };
    if !file.metadata()?.is_file() {
        return Err(io::Error::other("not a regular file; remove it"));
    }
    Ok(file)
}

/// Who holds the lock of each CPU of `cpus` now, as the kernel says: (CPU, holder) for each
/// CPU held, none when no process holds any. Only reads: no lock file or directory is made,
/// nothing locked. For a result directory whose run.json says `ended: running` (a killed run,
/// or one still running): `stale::owner_notice`. Err: why it cannot be told. `root_run`: the
/// run held root's own locks (a root run, read by root): those alone tell, since any user can
/// hold the shared ones (issue 39, sixth re-run, L6-b: another user's `flock` on the shared
/// `cpu0.lock` made a killed root run read "locked by a process that is not this jitterlab").
pub(crate) fn holders_of_run(
    cpus: &[usize],
    root_run: bool,
) -> std::result::Result<Vec<(usize, String)>, String> {
    let proc = Path::new("/proc");
    let search = &mut Search::new(HOLDER_SEARCH_BUDGET);
    if root_run && crate::sys::process::effective_user_id() == 0 {
        return holders_in(Path::new(super::journal::ROOT_DIR), proc, cpus, search);
    }
    let mut held = holders_in(Path::new(LOCK_DIR), proc, cpus, search)?;
    // A root run whose shared lock was planted holds only root's own; only root can read it,
    // and a user's run never holds it.
    if let Ok(own) = holders_in(Path::new(super::journal::ROOT_DIR), proc, cpus, search) {
        for (cpu, holder) in own {
            if !held.iter().any(|(c, _)| *c == cpu) {
                held.push((cpu, holder));
            }
        }
    }
    Ok(held)
}

fn holders_in(
    dir: &Path,
    proc: &Path,
    cpus: &[usize],
    search: &mut Search,
) -> std::result::Result<Vec<(usize, String)>, String> {
    let fd = match fs::open_dir_nofollow(dir) {
        Ok(fd) => fd,
        // No run has locked a CPU since the machine started.
        Err(e) if e.raw_os_error() == Some(errno::ENOENT) => return Ok(Vec::new()),
        Err(e) => return Err(format!("{}: {e}", dir.display())),
    };
    let mut held = Vec::new();
    for &cpu in cpus {
        let path = format!("{}/cpu{cpu}.lock", dir.display());
        let name = CString::new(format!("cpu{cpu}.lock")).expect("no NUL in the name");
        let file = match fs::open_read_at(fd.as_fd(), &name, false) {
            Ok(file) => file,
            Err(e) if e.raw_os_error() == Some(errno::ENOENT) => continue,
            Err(e) => return Err(format!("{path}: {e}")),
        };
        let found = holders(&file, proc, false, search);
        if !found.is_empty() {
            held.push((cpu, describe_all(&found, &path, search)));
        }
    }
    Ok(held)
}

/// A process holding a CPU's lock, as the kernel describes it.
#[derive(Debug)]
struct Holder {
    pid: u32,
    /// Its real uid, when /proc says.
    uid: Option<u32>,
    /// The same executable as this process.
    jitterlab: bool,
    /// jitterlab's `tune` (from its command line: for the advice only, it decides nothing).
    tune: bool,
    /// For the messages (see [`describe_holder`]).
    text: String,
}

impl Holder {
    /// Whether the lock it holds is no reason for a root run to stop: it is another user's,
    /// and not jitterlab.
    fn cannot_stop_root(&self) -> bool {
        !self.jitterlab && self.uid.is_some_and(|uid| uid != 0)
    }
}

/// Every process holding the flock of `file` (its open file holds it, as
/// `/proc/PID/fdinfo/FD` says: a locker that forked and exited leaves its children holding
/// it), jitterlab first, then root's; where this user cannot see them, or `search` did not
/// reach them, the pid /proc/locks names.
fn holders(file: &File, proc: &Path, root_only: bool, search: &mut Search) -> Vec<Holder> {
    let Ok(meta) = file.metadata() else {
        return Vec::new();
    };
    let locker = holder_pid(&meta, proc);
    let (dev, ino) = (meta.dev(), meta.ino());
    let holds_the_flock = |process: &Path, fd: &std::fs::DirEntry| {
        // stat through the descriptor's link: the open file itself.
        std::fs::metadata(fd.path()).is_ok_and(|m| m.dev() == dev && m.ino() == ino)
            && std::fs::read_to_string(process.join("fdinfo").join(fd.file_name()))
                .unwrap_or_default()
                .lines()
                .any(|l| l.starts_with("lock:") && l.contains("FLOCK"))
    };
    // A lock file is held by a read open: whoever may read it.
    let openers = Openers::of(&meta, 0o4);
    let mut pids = search.processes_with(proc, locker, openers, None, &holds_the_flock);
    if pids.is_empty() {
        pids.extend(locker.filter(|pid| proc.join(pid.to_string()).exists()));
    }
    let mut found: Vec<Holder> = pids
        .into_iter()
        .map(|pid| read_holder(proc, pid, root_only))
        .collect();
    found.sort_by_key(|h| (!h.jitterlab, h.uid != Some(0), h.pid));
    found
}

/// The holders, for a message: the first described, the others by pid; with what `search`
/// did not look at.
fn describe_all(found: &[Holder], path: &str, search: &Search) -> String {
    let Some(first) = found.first() else {
        return match search.note() {
            Some(note) => format!("a process not found (it holds {path}; {note})"),
            None => format!(
                "a process this user cannot see (it holds {path}; /proc/locks does not name it)"
            ),
        };
    };
    let listed = match found.len() {
        1 => first.text.clone(),
        n => format!(
            "{} (and {} more process{} sharing its lock: pid {})",
            first.text,
            n - 1,
            if n == 2 { "" } else { "es" },
            found[1..]
                .iter()
                .map(|h| h.pid.to_string())
                .collect::<Vec<_>>()
                .join(", pid ")
        ),
    };
    match search.note() {
        Some(note) => format!("{listed} ({note})"),
        None => listed,
    }
}

/// Who holds a CPU's lock, for the refusal: a lock file in the world-writable /run/jitterlab
/// can be locked by any local user, so the message says whose process it is (user, uid,
/// command line) and whether it is jitterlab at all, e.g. `pid 4242 of user nobody (uid
/// 65534), 'flock /run/jitterlab/cpu1.lock sleep 600', which is not jitterlab (...)`.
#[cfg(test)]
fn describe_holder(proc: &Path, pid: u32, root_only: bool) -> String {
    read_holder(proc, pid, root_only).text
}

/// A process as /proc describes it (what the kernel says of it, never a name it chose,
/// but for the message).
#[derive(Debug, Clone)]
pub(crate) struct Process {
    pub pid: u32,
    /// Its real uid, when /proc says.
    pub uid: Option<u32>,
    /// `user NAME (uid N)`, for messages.
    pub user: String,
    /// Its command line (its `comm` when it has none), shell-quoted, controls escaped.
    pub command: String,
    /// The same executable as this process.
    pub jitterlab: bool,
    /// Not the same executable, but it calls itself jitterlab (another build or path): for the
    /// message only.
    pub(crate) named_jitterlab: bool,
    /// Its first argument after the program that is not an option (jitterlab's subcommand,
    /// e.g. `tune`): for the message only.
    pub(crate) subcommand: Option<String>,
}

/// The process `pid` of `proc` (`/proc`, or a fixture tree).
/// At most this many characters of a process's command line are kept for the messages and
/// run.json (tenth hostile re-run, L10-g: a holder's 200 KB command line, copied three times,
/// made run.json 628 KB).
const MAX_COMMAND_CHARS: usize = 300;

/// `command` cut to [`MAX_COMMAND_CHARS`] characters, saying how much was left out.
fn shortened(command: &str) -> String {
    match command.char_indices().nth(MAX_COMMAND_CHARS) {
        None => command.to_string(),
        Some((at, _)) => format!("{}... ({} more bytes)", &command[..at], command.len() - at),
    }
}

pub(crate) fn identify(proc: &Path, pid: u32) -> Process {
    let dir = proc.join(pid.to_string());
    let uid = std::fs::read_to_string(dir.join("status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|l| l.split_whitespace().next()?.parse::<u32>().ok())
        });
    let user = uid.map_or(
        "an unknown user".to_string(),
        |uid| match crate::sys::process::user_name(uid) {
            Some(name) => format!("user {name} (uid {uid})"),
            None => format!("a user without a name (uid {uid})"),
        },
    );
    let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
    let comm = comm.trim();
    let cmdline: Vec<String> = std::fs::read(dir.join("cmdline"))
        .unwrap_or_default()
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let command = match cmdline.is_empty() {
        true => comm.to_string(),
        false => shell_words::join(&cmdline),
    };
    // The same executable as this process (a binary replaced since it started reads
    // `PATH (deleted)`: still the same path, which only its owner can write); where the link
    // cannot be read (another user's process, for a user other than root), the same name.
    let exe = |p: &Path| {
        std::fs::read_link(p.join("exe")).ok().map(|l| {
            let l = l.to_string_lossy().into_owned();
            l.strip_suffix(" (deleted)")
                .map(str::to_string)
                .unwrap_or(l)
        })
    };
    let jitterlab = match (exe(&dir), exe(&proc.join("self"))) {
        (Some(theirs), Some(ours)) => theirs == ours,
        _ => comm == "jitterlab",
    };
    // Another build or copy of jitterlab (`/tmp/jl2`, an upgraded one) is not the same
    // executable; what it calls itself or its threads (`jl-measure-0`) says so, for the
    // message only: a name is anyone's choice, so it decides nothing.
    let named_jitterlab = !jitterlab
        && (cmdline.first().is_some_and(|a| a.contains("jitterlab"))
            || comm.contains("jitterlab")
            || thread_names(&dir)
                .iter()
                .any(|n| n.starts_with("jl-measure")));
    Process {
        pid,
        uid,
        user,
        command: shortened(&crate::error::escape_controls(&command)),
        jitterlab,
        named_jitterlab,
        subcommand: cmdline
            .iter()
            .skip(1)
            .find(|a| !a.starts_with('-'))
            .cloned(),
    }
}

/// The CPUs whose lock files (the shared ones or root's own) the process `pid` of `proc` has
/// open, as its descriptors' links say: a jitterlab run's measured CPUs (a tune's: every online
/// CPU). Empty where they cannot be read (another user's process, for a user other than root).
pub(crate) fn cpus_with_locks_open(proc: &Path, pid: u32) -> Vec<usize> {
    let Ok(fds) = std::fs::read_dir(proc.join(pid.to_string()).join("fd")) else {
        return Vec::new();
    };
    let mut cpus: Vec<usize> = fds
        .flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter_map(|target| {
            let dir = target.parent()?.to_str()?;
            if dir != LOCK_DIR && dir != super::journal::ROOT_DIR {
                return None;
            }
            let name = target.file_name()?.to_str()?;
            name.strip_prefix("cpu")?
                .strip_suffix(".lock")?
                .parse()
                .ok()
        })
        .collect();
    cpus.sort_unstable();
    cpus.dedup();
    cpus
}

/// The holder `pid` as /proc describes it; `root_only`: of a lock in root's own directory,
/// which only root's processes can hold (issue 39 F2).
fn read_holder(proc: &Path, pid: u32, root_only: bool) -> Holder {
    let Process {
        pid,
        uid,
        user,
        command,
        jitterlab,
        named_jitterlab,
        subcommand,
    } = identify(proc, pid);
    let kill = format!("if it is not measuring, end it with kill {pid}");
    let what = match (jitterlab, named_jitterlab, root_only) {
        (true, _, _) => "another jitterlab run".to_string(),
        (false, true, _) => format!(
            "another jitterlab run of another build or path (its executable is not this one's; {kill})"
        ),
        (false, false, true) => format!(
            "a process of root that is not this jitterlab: another build of jitterlab, or another program of root (only root can lock the files of {}; {kill})",
            super::journal::ROOT_DIR
        ),
        (false, false, false) => format!(
            "a process that is not this jitterlab (any user can lock the files of {LOCK_DIR}; {kill})"
        ),
    };
    Holder {
        pid,
        uid,
        jitterlab,
        tune: (jitterlab || named_jitterlab) && subcommand.as_deref() == Some("tune"),
        text: format!("{what}: pid {pid} of {user}, '{command}'"),
    }
}

/// The names of the threads of the process at `dir` (`/proc/PID`), at most a few hundred read.
fn thread_names(dir: &Path) -> Vec<String> {
    let Ok(tasks) = std::fs::read_dir(dir.join("task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .take(512)
        .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
        .map(|n| n.trim().to_string())
        .collect()
}

/// The pid holding the flock of the file `meta` describes, from /proc/locks (lines such as
/// `1: FLOCK  ADVISORY  WRITE 1234 fe:00:5400194 0 EOF`, the file named by device and inode).
fn holder_pid(meta: &std::fs::Metadata, proc: &Path) -> Option<u32> {
    let (major, minor) = fs::major_minor(meta.dev());
    let id = format!("{:02x}:{:02x}:{}", major, minor, meta.ino());
    let locks = std::fs::read_to_string(proc.join("locks")).ok()?;
    holder_in(&locks, &id)
}

/// The holder of the flock on the file `id` (`major:minor:inode`) in the text of /proc/locks;
/// waiters (`->` lines) are not holders.
fn holder_in(locks: &str, id: &str) -> Option<u32> {
    locks.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            [_, "FLOCK", _, _, pid, file, ..] if *file == id => pid.parse().ok(),
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests;

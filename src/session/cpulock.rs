//! Per-CPU locks. Two jitterlab runs measuring one CPU disturb each other, and each result
//! would look clean. A run holds `flock(LOCK_EX)` on `/run/jitterlab/cpu<N>.lock` for every CPU
//! it measures, for as long as it measures; the kernel releases it when the process ends, however
//! it ends (a SIGKILL leaves no stale lock). A second run on a CPU that is locked is refused
//! (exit 3, naming the holder's pid from /proc/locks), or with `--allow-shared-cpus` measures
//! anyway and carries a warning.
//!
//! `/run/jitterlab` is made sticky and world-writable (like /run/lock), so that unprivileged runs
//! lock too. A lock file is only opened for reading and locked, never written or truncated, and
//! is opened without following a link and only if it is a regular file: a name planted there
//! by another user can make a lock fail, not redirect anything.

use crate::error::{Failure, Result};
use crate::sys::{errno, fs};
use std::collections::BTreeMap;
use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::{Arc, Mutex, Weak};

/// Where the lock files live.
pub(crate) const LOCK_DIR: &str = "/run/jitterlab";

/// The locks of one run. Dropping it releases them, unless another holder in this process (a
/// sweep, around its levels' runs) still holds them.
#[derive(Debug)]
pub struct CpuLocks {
    _held: Vec<Arc<File>>,
}

/// The CPUs this process holds a lock on. A second `flock` of the same file by the same process
/// through another open would conflict with the first, so holders in one process share the
/// open file.
static HELD: Mutex<BTreeMap<usize, Weak<File>>> = Mutex::new(BTreeMap::new());

/// Locks every CPU of `cpus` for this process. Returns the locks and the warnings to store with
/// the run: CPUs measured by another run anyway (`allow_shared`), or locks that could not be
/// taken at all (e.g. no write access to /run), where another run would go unnoticed.
pub fn take(cpus: &[usize], allow_shared: bool) -> Result<(CpuLocks, Vec<String>)> {
    let mut held_here = HELD.lock().unwrap_or_else(|e| e.into_inner());
    let mut held = Vec::new();
    let mut warnings = Vec::new();
    let mut dir: Option<io::Result<OwnedFd>> = None;
    for &cpu in cpus {
        if let Some(file) = held_here.get(&cpu).and_then(Weak::upgrade) {
            held.push(file);
            continue;
        }
        let dir = match dir.get_or_insert_with(run_dir) {
            Ok(d) => d,
            Err(e) => {
                warnings.push(format!(
                    "cannot take the CPU locks in {LOCK_DIR} ({e}): another jitterlab measuring these CPUs at the same time would go unnoticed; run once as root to make {LOCK_DIR}"
                ));
                break;
            }
        };
        let path = format!("{LOCK_DIR}/cpu{cpu}.lock");
        let file = match open_lock_file(dir, cpu) {
            Ok(f) => f,
            Err(e) => {
                warnings.push(format!(
                    "cannot take the lock of CPU {cpu} ({path}: {e}): another jitterlab measuring it at the same time would go unnoticed"
                ));
                continue;
            }
        };
        match fs::try_lock_exclusive(file.as_fd()) {
            Ok(true) => {
                let file = Arc::new(file);
                held_here.insert(cpu, Arc::downgrade(&file));
                held.push(file);
                continue;
            }
            Ok(false) => {}
            Err(e) => {
                warnings.push(format!(
                    "cannot take the lock of CPU {cpu} ({path}: {e}): another jitterlab measuring it at the same time would go unnoticed"
                ));
                continue;
            }
        }
        let holder = match holder_pid(&file) {
            Some(pid) => describe_holder(Path::new("/proc"), pid, &path),
            None => format!(
                "a process this user cannot see (it holds {path}; /proc/locks does not name it)"
            ),
        };
        if !allow_shared {
            return Err(Failure::system(format!(
                "CPU {cpu} is being measured by {holder}: two runs on one CPU disturb each other, and each result would look clean; wait for it to end, measure other CPUs with --cpus, or pass --allow-shared-cpus to measure anyway (the results then carry a warning)"
            )));
        }
        warnings.push(format!(
            "CPU {cpu} was being measured by {holder} when this run started (--allow-shared-cpus): the two runs disturb each other"
        ));
    }
    Ok((CpuLocks { _held: held }, warnings))
}

/// Opens /run/jitterlab, making it (sticky, world-writable) if missing: the CPU locks and the
/// idle-state journals (session/idle_states.rs) live there.
pub(crate) fn run_dir() -> io::Result<OwnedFd> {
    let made = fs::make_dir(Path::new(LOCK_DIR), 0o755).is_ok();
    let fd = fs::open_dir_nofollow(Path::new(LOCK_DIR))?;
    if made {
        // Not through mkdir's mode, which the umask trims.
        let _ = fs::set_mode(fd.as_fd(), 0o1777);
    }
    Ok(fd)
}

/// Opens (making it if missing) the lock file of `cpu`, for reading only: `flock` needs no
/// more, and nothing is ever written to it.
fn open_lock_file(dir: &OwnedFd, cpu: usize) -> io::Result<File> {
    let name = CString::new(format!("cpu{cpu}.lock")).expect("no NUL in the name");
    // An existing file is opened without O_CREAT: in a sticky world-writable directory the
    // kernel refuses O_CREAT on another user's file (fs.protected_regular).
    let file = loop {
        let opened = fs::open_read_at(dir.as_fd(), &name, false);
        if !opened
            .as_ref()
            .is_err_and(|e| e.raw_os_error() == Some(errno::ENOENT))
        {
            break opened?;
        }
        let made = fs::open_read_at(dir.as_fd(), &name, true);
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

/// Who holds a CPU's lock, for the refusal: a lock file in the world-writable /run/jitterlab
/// can be locked by any local user, so the message says whose process it is (user, uid,
/// command line) and whether it is jitterlab at all, e.g. `pid 4242 of user nobody (uid
/// 65534), 'flock /run/jitterlab/cpu1.lock sleep 600', which is not jitterlab (...)`.
fn describe_holder(proc: &Path, pid: u32, path: &str) -> String {
    let dir = proc.join(pid.to_string());
    let uid = std::fs::read_to_string(dir.join("status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|l| l.split_whitespace().next()?.parse::<u32>().ok())
        });
    let user = uid.map_or("an unknown user".to_string(), |uid| match user_name(uid) {
        Some(name) => format!("user {name} (uid {uid})"),
        None => format!("a user without a name (uid {uid})"),
    });
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
    // The same executable as this process (or, when its link cannot be read, the same name).
    let exe = |p: &Path| std::fs::read_link(p.join("exe")).ok();
    let jitterlab = match (exe(&dir), exe(&proc.join("self"))) {
        (Some(theirs), Some(ours)) => theirs == ours,
        _ => comm == "jitterlab",
    };
    let what = match jitterlab {
        true => "another jitterlab run".to_string(),
        false => format!(
            "a process that is not jitterlab (any user can lock the files of {LOCK_DIR}; if it is not measuring, end it with kill {pid}, or remove {path} so that the next run makes it anew)"
        ),
    };
    format!(
        "{what}: pid {pid} of {user}, '{}'",
        crate::error::escape_controls(&command)
    )
}

/// The name of the user `uid` in /etc/passwd.
fn user_name(uid: u32) -> Option<String> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() > 2 && f[2].parse() == Ok(uid)).then(|| f[0].to_string())
    })
}

/// The pid holding the flock of `file`, from /proc/locks (lines such as
/// `1: FLOCK  ADVISORY  WRITE 1234 fe:00:5400194 0 EOF`, the file named by device and inode).
fn holder_pid(file: &File) -> Option<u32> {
    let meta = file.metadata().ok()?;
    let (major, minor) = fs::major_minor(meta.dev());
    let id = format!("{:02x}:{:02x}:{}", major, minor, meta.ino());
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
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
mod tests {
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
        while std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default()
            != b"sleep\x0030\x00"
        {
            assert!(std::time::Instant::now() < deadline, "sleep did not start");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let text = describe_holder(Path::new("/proc"), pid, "/run/jitterlab/cpu1.lock");
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            text.starts_with("a process that is not jitterlab"),
            "{text}"
        );
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
        let text = describe_holder(Path::new("/proc"), me, "/run/jitterlab/cpu1.lock");
        assert!(text.starts_with("another jitterlab run: pid"), "{text}");
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
    }
}

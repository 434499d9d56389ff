//! Journals: the one mechanism for kernel state a run changes that outlives the process (a
//! cpuset of `--cpuset-partition`, the cpuidle states of `--idle-state-max`, the tracing
//! instance of `--trace`, the loads' cgroups, the process groups of the actions' programs).
//! Before changing anything, the holder writes a journal of what it is about to change; the
//! run's end undoes the change and removes the journal; after a SIGKILL the next start finds
//! the journal and undoes it (session/stale.rs, through the kind's module).
//!
//! Layer. This module knows nothing of what it journals, and needs only `sys`: it sits below
//! `load` and `trace`, so that the modules that make the state (trace/tracefs.rs,
//! load/contain.rs, session/...) journal it themselves, at the moment they make it, and each
//! kind's undo lives beside the code that knows the state. Only the dispatch of the kinds
//! (session/stale.rs) is above them all.
//!
//! Trust. A journal is read back by a later run, often root's, so it lives in a directory
//! only its user can write: root's is `/run/jitterlab-root` (in /run, where only root makes
//! entries), another user's `/run/jitterlab/uid-<uid>` (in the shared sticky directory of the
//! CPU locks: another user can plant that name first, which then only makes journaling fail).
//! Either is opened without following a link and trusted only when it is a directory owned by
//! the user, writable by nobody else; every later access goes through its descriptor. A
//! journal is obeyed only when it is a regular file of the user in that directory, in the
//! format below.
//!
//! Liveness is a lock, not a pid. The writer holds `flock(LOCK_EX)` on its journal for as long
//! as it lives; the kernel releases it when the process ends, however it ends. A journal whose
//! lock can be taken has no writer left: its state is to be undone. So a reused pid, or a
//! jitterlab in another pid namespace sharing the directory, is never taken for the writer,
//! and a live writer's journal is never touched. The journal is made nameless (O_TMPFILE),
//! written, synced and locked before it gets its name: it appears whole and locked, or not
//! at all.
//!
//! Format: `#jitterlab-journal 1 <kind>`, `boot <boot id>` (the kernel state it names does
//! not survive a reboot: a journal of another boot is removed without undoing anything),
//! `pid <pid>` (for the messages), then the kind's lines.
//!
//! One concern (issue 41's near-limit files): the journal's life, from its trusted directory to
//! its undo after a SIGKILL, which must agree on the file's format and its lock; the tests are
//! `journal/tests.rs`, and the helpers they share with the kinds' tests are at the end.

use crate::sys::fs;
use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Root's trusted directory: its journals and its own CPU locks (session/cpulock.rs).
pub(crate) const ROOT_DIR: &str = "/run/jitterlab-root";
/// The shared directory (sticky, world-writable): the CPU locks of every user
/// (session/cpulock.rs), and the trusted directories of users other than root.
pub(crate) const SHARED_DIR: &str = "/run/jitterlab";
/// A journal's first line, before its kind.
const MAGIC: &str = "#jitterlab-journal 1";
/// The most of a journal that is read: a real one is a few hundred bytes.
const MAX_BYTES: u64 = 1 << 16;

/// A directory only its user can write, opened and verified; see the module's text.
#[derive(Debug)]
pub(crate) struct TrustedDir {
    fd: OwnedFd,
    path: PathBuf,
}

impl TrustedDir {
    /// The trusted directory of this process's effective user; made when missing and `make`.
    /// Err(None) when it does not exist (and `make` is false), Err(Some(reason)) when it
    /// cannot be made, opened or trusted.
    pub(crate) fn for_this_user(make: bool) -> Result<TrustedDir, Option<String>> {
        let uid = crate::sys::process::effective_user_id();
        let (parent, name) = where_for(uid);
        if make && uid != 0 {
            // The shared directory is made by root; an unprivileged user may find it there.
            let _ = shared_dir_at(Path::new(SHARED_DIR));
        }
        TrustedDir::open_in(Path::new(&parent), &name, uid, make)
    }

    /// Why this user's trusted directory is there and not to be trusted (another user made it
    /// first, a link or a file planted in its place, writable by others), or None: trusted, or
    /// missing (then it is made, or journaling goes on without it, said). The options that need
    /// a journal are refused on Some, never run unjournaled: a directory planted by another
    /// user must not switch this user's journals off.
    pub(crate) fn untrusted_for_this_user() -> Option<String> {
        let uid = crate::sys::process::effective_user_id();
        let (parent, name) = where_for(uid);
        TrustedDir::open_in(Path::new(&parent), &name, uid, false).err()?
    }

    /// Opens (making it with mode 0700 if missing and `make`) the directory `name` in `parent`
    /// and verifies it: a directory, not a link, owned by `uid`, writable by no one else.
    pub(crate) fn open_in(
        parent: &Path,
        name: &str,
        uid: u32,
        make: bool,
    ) -> Result<TrustedDir, Option<String>> {
        let path = parent.join(name);
        let c_name = CString::new(name).expect("no NUL in the name");
        let parent_fd = match fs::open_dir_nofollow(parent) {
            Ok(fd) => fd,
            Err(e) if e.kind() == io::ErrorKind::NotFound && !make => return Err(None),
            Err(e) => return Err(Some(format!("cannot open {}: {e}", parent.display()))),
        };
        if make {
            match fs::make_dir_at(parent_fd.as_fd(), &c_name, 0o700) {
                Err(e) if e.kind() != io::ErrorKind::AlreadyExists => {
                    return Err(Some(format!("cannot make {}: {e}", path.display())));
                }
                _ => {}
            }
        }
        let fd = match fs::openat_dir(parent_fd.as_fd(), &c_name) {
            Ok(fd) => fd,
            Err(e) if e.kind() == io::ErrorKind::NotFound && !make => return Err(None),
            Err(e) => {
                return Err(Some(format!(
                    "cannot open {} as a directory ({e}; a link or another file there is not followed); remove it as root",
                    path.display()
                )));
            }
        };
        let meta = File::from(fd.try_clone().map_err(|e| Some(e.to_string()))?)
            .metadata()
            .map_err(|e| Some(format!("cannot read {}: {e}", path.display())))?;
        let mode = meta.permissions().mode() & 0o7777;
        if meta.uid() != uid || mode & 0o022 != 0 {
            return Err(Some(format!(
                "{} is not trusted: owned by uid {} with mode {mode:o}, where only uid {uid} may write it (someone else made it first); remove it as root, and the next run makes it anew",
                path.display(),
                meta.uid()
            )));
        }
        Ok(TrustedDir { fd, path })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The names in the directory, read through its descriptor.
    pub(crate) fn names(&self) -> Vec<String> {
        std::fs::read_dir(format!("/proc/self/fd/{}", self.fd.as_raw_fd()))
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Where the trusted directory of `uid` is: (parent, name).
pub(crate) fn where_for(uid: u32) -> (String, String) {
    match uid {
        0 => ("/run".into(), "jitterlab-root".into()),
        _ => (SHARED_DIR.into(), format!("uid-{uid}")),
    }
}

/// Opens the shared directory at `at` ([`SHARED_DIR`] but in the tests), making it (sticky,
/// world-writable) if missing.
pub(crate) fn shared_dir_at(at: &Path) -> io::Result<OwnedFd> {
    let made = fs::make_dir(at, 0o755).is_ok();
    let fd = fs::open_dir_nofollow(at)?;
    if made {
        // Not through mkdir's mode, which the umask trims.
        let _ = fs::set_mode(fd.as_fd(), 0o1777);
    }
    Ok(fd)
}

/// Set once this process has undone the journals of killed runs (session/stale.rs
/// `undo_at_start`, at the start of every command that changes the system).
static START_UNDONE: AtomicBool = AtomicBool::new(false);

/// Records that this process has undone the journals of killed runs: from then on it may
/// write journals of its own.
pub(crate) fn start_undone() {
    START_UNDONE.store(true, Ordering::SeqCst);
}

/// What this process changed or started without a journal, said once each
/// ([`say_unjournaled`]).
static UNJOURNALED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Says, once per process and `what`, that `what` goes without a journal because `why` (the
/// trusted directory cannot be had, or the journal cannot be written in it), what goes on
/// without one (`goes_on`: what runs unjournaled, or is not made), what that means
/// after a SIGKILL of jitterlab (`after_kill`), and the fix: on stderr at once, and for the
/// run.json of the session, if there is one ([`unjournaled`]). Kernel state that cannot be
/// given back without a journal is refused instead (its module's error), never changed
/// unjournaled.
pub(crate) fn say_unjournaled(what: &str, why: &str, goes_on: &str, after_kill: &str) {
    let fix = match crate::sys::process::effective_user_id() {
        0 => format!(
            "to keep journals, make {ROOT_DIR} possible (a writable /run, e.g. a tmpfs mounted there)"
        ),
        uid => format!(
            "to keep journals, have root make {SHARED_DIR} (`install -d -m 1777 {SHARED_DIR}`, which any run as root does) and remove {SHARED_DIR}/uid-{uid} if another user made it"
        ),
    };
    let head = format!("no journal for {what} (");
    let warning =
        format!("{head}{why}): {goes_on}; after a SIGKILL of this jitterlab, {after_kill}; {fix}");
    let mut said = UNJOURNALED.lock().unwrap_or_else(|e| e.into_inner());
    if said.iter().any(|w| w.starts_with(&head)) {
        return;
    }
    eprintln!(
        "jitterlab: warning: {}",
        crate::error::escape_controls(&warning)
    );
    said.push(warning);
}

/// Every warning of [`say_unjournaled`] so far, for run.json.
pub(crate) fn unjournaled() -> Vec<String> {
    UNJOURNALED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}

/// This boot's id (a random UUID the kernel draws at boot).
fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// A journal this process writes and holds (locked) while its change is in force. Dropped
/// without [`Journal::remove`] it stays, unlocked, for the next start to undo.
#[derive(Debug)]
pub(crate) struct Journal {
    dir: OwnedFd,
    name: CString,
    file: File,
}

impl Journal {
    /// Writes the journal of `kind` with `lines` in `dir`, named `<kind>-<pid>` (or
    /// `<kind>-<pid>-<n>` if that name is taken: an existing entry is never replaced), synced
    /// and locked before it gets its name.
    pub(crate) fn create(dir: &TrustedDir, kind: &str, lines: &[String]) -> io::Result<Journal> {
        // The guard of "every command that journals undoes killed runs' journals first": a
        // command that reaches here without `commands::dispatch` having called
        // `session::stale::undo_at_start` fails every debug build's test of it (the unit tests
        // of the kinds write journals on their own).
        debug_assert!(
            cfg!(test) || START_UNDONE.load(Ordering::SeqCst),
            "a {kind} journal is written before this process undid the journals of killed runs: call session::stale::undo_at_start at the command's start (commands::dispatch)"
        );
        let mut file = fs::anonymous_file_at(dir.fd())?;
        if !fs::try_lock_exclusive(file.as_fd())? {
            return Err(io::Error::other("a new file is locked by another process"));
        }
        let pid = std::process::id();
        let mut text = format!("{MAGIC} {kind}\nboot {}\npid {pid}\n", boot_id());
        for l in lines {
            text.push_str(l);
            text.push('\n');
        }
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        for n in 1..=100 {
            let name = match n {
                1 => format!("{kind}-{pid}"),
                n => format!("{kind}-{pid}-{n}"),
            };
            let c_name = CString::new(name.as_str()).expect("no NUL in the name");
            match fs::link_anonymous_at(file.as_fd(), dir.fd(), &c_name) {
                Ok(()) => {
                    return Ok(Journal {
                        dir: dir.fd.try_clone()?,
                        name: c_name,
                        file,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::other(format!(
            "the names {kind}-{pid} to {kind}-{pid}-100 are all taken in {}",
            dir.path.display()
        )))
    }

    /// Adds `line` to the journal, synced.
    pub(crate) fn append(&mut self, line: &str) -> io::Result<()> {
        self.file.write_all(format!("{line}\n").as_bytes())?;
        self.file.sync_all()
    }

    /// Its name in the trusted directory.
    #[cfg(test)]
    pub(crate) fn name(&self) -> String {
        self.name.to_string_lossy().into_owned()
    }

    /// Removes the journal: what it names has been undone.
    pub(crate) fn remove(self) -> io::Result<()> {
        fs::unlink_at(self.dir.as_fd(), &self.name, fs::Entry::File)
    }
}

/// A journal whose writer is gone, locked by this process while its change is undone.
#[derive(Debug)]
pub(crate) struct Stale {
    /// Its name in the trusted directory.
    pub(crate) name: String,
    /// Its path, for the messages.
    pub(crate) path: PathBuf,
    /// The pid that wrote it.
    pub(crate) pid: u32,
    /// Written during this boot: the state it names may still be in force.
    pub(crate) this_boot: bool,
    /// The kind's lines.
    pub(crate) lines: Vec<String>,
    _lock: File,
}

/// What a look at a trusted directory found for one kind.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    /// Journals of `kind` without a live writer.
    pub(crate) stale: Vec<Stale>,
    /// Entries named as a journal of `kind` that are not one this user wrote (not a regular
    /// file, another owner, writable by others, not in the format): never obeyed, never
    /// removed, only counted.
    pub(crate) foreign: Vec<String>,
}

/// Whether `name` is `<kind>-<pid>` or `<kind>-<pid>-<n>`.
pub(crate) fn is_journal_name(name: &str, kind: &str) -> bool {
    name.strip_prefix(kind)
        .and_then(|r| r.strip_prefix('-'))
        .is_some_and(|r| {
            let mut parts = r.split('-');
            let digits = |p: Option<&str>| {
                p.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            };
            digits(parts.next()) && {
                let rest: Vec<&str> = parts.collect();
                rest.is_empty() || (rest.len() == 1 && digits(Some(rest[0])))
            }
        })
}

/// The journals of `kind` in `dir` whose writer is gone (their lock could be taken), and
/// the entries under a journal's name that are not journals of this user.
pub(crate) fn scan(dir: &TrustedDir, kind: &str) -> Scan {
    let uid = crate::sys::process::effective_user_id();
    let boot = boot_id();
    let mut found = Scan::default();
    let mut names: Vec<String> = dir
        .names()
        .into_iter()
        .filter(|n| is_journal_name(n, kind))
        .collect();
    names.sort();
    for name in names {
        match read_stale(dir, &name, kind, uid, &boot) {
            Ok(Some(stale)) => found.stale.push(stale),
            Ok(None) => {}
            Err(()) => found.foreign.push(name),
        }
    }
    found
}

/// One entry: Ok(Some) a journal to undo, Ok(None) one with a live writer, Err a foreign one.
fn read_stale(
    dir: &TrustedDir,
    name: &str,
    kind: &str,
    uid: u32,
    boot: &str,
) -> Result<Option<Stale>, ()> {
    let c_name = CString::new(name).map_err(drop)?;
    // Without following a link or blocking on a FIFO, then checked as opened.
    let mut file = fs::open_read_at(dir.fd(), &c_name, false).map_err(drop)?;
    let meta = file.metadata().map_err(drop)?;
    if !meta.is_file() || meta.uid() != uid || meta.permissions().mode() & 0o022 != 0 {
        return Err(());
    }
    match fs::try_lock_exclusive(file.as_fd()) {
        Ok(true) => {}
        Ok(false) => return Ok(None),
        Err(_) => return Err(()),
    }
    // Removed by another start that undid it while this one waited for the lock.
    if file.metadata().map_err(drop)?.nlink() == 0 {
        return Ok(None);
    }
    let mut text = String::new();
    (&mut file)
        .take(MAX_BYTES)
        .read_to_string(&mut text)
        .map_err(drop)?;
    let mut lines = text.lines();
    if lines.next() != Some(&format!("{MAGIC} {kind}")) {
        return Err(());
    }
    let journal_boot = lines
        .next()
        .and_then(|l| l.strip_prefix("boot "))
        .ok_or(())?;
    let pid = lines
        .next()
        .and_then(|l| l.strip_prefix("pid "))
        .and_then(|p| p.parse().ok())
        .ok_or(())?;
    Ok(Some(Stale {
        name: name.to_string(),
        path: dir.path.join(name),
        pid,
        this_boot: !boot.is_empty() && journal_boot == boot,
        lines: lines.map(str::to_string).collect(),
        _lock: file,
    }))
}

impl Stale {
    /// The value of the kind's line `<key> <value>` (the last one, should there be several);
    /// the value is the rest of the line, spaces included (a path).
    pub(crate) fn field(&self, key: &str) -> Option<&str> {
        self.lines
            .iter()
            .rev()
            .filter_map(|l| l.split_once(' '))
            .find_map(|(k, v)| (k == key).then_some(v))
    }

    /// [`Stale::field`] parsed (None when absent or not a `T`).
    pub(crate) fn parsed<T: std::str::FromStr>(&self, key: &str) -> Option<T> {
        self.field(key).and_then(|v| v.parse().ok())
    }

    /// What a kind's undo returns for a journal not in its format (`what`: "a tracing
    /// instance"): said, and left alone (kept).
    pub(crate) fn not_in_format(&self, what: &str) -> (Option<String>, bool) {
        let said = format!(
            "{} is not {what} journal in its format; left alone",
            self.path.display()
        );
        (Some(said), false)
    }

    /// Whether `dir`, the directory this journal's writer made (`what` names it: "the cpuset",
    /// "the tracing instance"), is still the one it made: `inode` is what the journal says the
    /// directory's inode was (None: the writer was killed before it could say). Ok: it is, and
    /// the kind may undo it. Err: what the kind's undo returns (what to say, and whether the
    /// journal is done with): gone, made again by someone else, or not certain to be the one
    /// made (then left alone, with `how_to_remove` for the user).
    pub(crate) fn made_dir(
        &self,
        dir: &Path,
        inode: Option<u64>,
        what: &str,
        how_to_remove: &str,
    ) -> Result<(), (Option<String>, bool)> {
        let (shown, pid) = (dir.display(), self.pid);
        let found = match std::fs::symlink_metadata(dir) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err((None, true)),
            Err(e) => {
                let said = format!(
                    "cannot look at {what} {shown} a killed jitterlab (pid {pid}) made: {e}; left alone"
                );
                return Err((Some(said), false));
            }
        };
        let Some(inode) = inode else {
            let said = format!(
                "a jitterlab (pid {pid}) was killed while making {what} {shown}: it is not certain that {shown} is the one it made, so it is left alone; {how_to_remove}"
            );
            return Err((Some(said), true));
        };
        if !found.is_dir() || found.ino() != inode {
            // Made again since, by someone else: not ours.
            return Err((None, true));
        }
        Ok(())
    }

    /// Removes the journal: its change is undone (or gone with a reboot).
    pub(crate) fn remove(self, dir: &TrustedDir) {
        let c_name = CString::new(self.name.as_str()).expect("no NUL in a journal's name");
        // Only while the name is still this file (not a new journal given the same name).
        let ours = self._lock.metadata().ok().map(|m| (m.dev(), m.ino()));
        let named = fs::open_read_at(dir.fd(), &c_name, false)
            .and_then(|f| f.metadata())
            .ok()
            .map(|m| (m.dev(), m.ino()));
        if ours.is_some() && ours == named {
            let _ = fs::unlink_at(dir.fd(), &c_name, fs::Entry::File);
        }
    }
}

/// Waits (at most 5 s) until no journal in `dir` is locked: for the tests, which drop a
/// journal as a SIGKILL would and then expect it stale. A child that another test of the same
/// process is starting holds copies of every descriptor, the journal's lock among them, from
/// its fork to its exec, which on a loaded machine can last milliseconds; the lock is free
/// once that child has exec'd.
#[cfg(test)]
pub(crate) fn wait_until_unlocked(dir: &TrustedDir) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let held = dir.names().into_iter().any(|name| {
            CString::new(name)
                .ok()
                .and_then(|c| fs::open_read_at(dir.fd(), &c, false).ok())
                .is_some_and(|f| matches!(fs::try_lock_exclusive(f.as_fd()), Ok(false)))
        });
        if !held || std::time::Instant::now() > deadline {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// A trusted directory `trusted` made in `dir` for this user: for the kinds' tests.
#[cfg(test)]
pub(crate) fn test_dir(dir: &Path) -> TrustedDir {
    let uid = crate::sys::process::effective_user_id();
    TrustedDir::open_in(dir, "trusted", uid, true).expect("a trusted directory for the test")
}

/// The names in `dir`, sorted: the journals a kind's test left.
#[cfg(test)]
pub(crate) fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("the journal directory reads")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[cfg(test)]
impl Stale {
    /// A stale journal of `lines`, for the kinds' tests.
    pub(crate) fn fake(lines: Vec<String>) -> Stale {
        Stale {
            name: "fake-1".into(),
            path: PathBuf::from("/nowhere/fake-1"),
            pid: 1,
            this_boot: true,
            lines,
            _lock: File::open("/dev/null").expect("/dev/null"),
        }
    }
}

#[cfg(test)]
mod tests;

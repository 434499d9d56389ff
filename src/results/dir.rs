//! Where a run's files live, and how they are made so that nothing is overwritten and nothing is
//! written through a link.
//!
//! A result directory is always new: it is made with a plain `mkdir`, and an existing name
//! (directory, file, symbolic link, even a dangling one) is refused, never adopted. Every file in
//! it is made through the directory's descriptor with `O_CREAT|O_EXCL|O_NOFOLLOW`, and run.json
//! is replaced by a rename within that descriptor: a link planted by another user (say
//! `.run.json.tmp -> /etc/shadow`) makes the write fail instead of redirecting it; the directory's
//! mode is 0755, so no other user adds entries to it meanwhile. The checks of
//! output *files* (`report -o`, `export -o`, `--plots`) are here too, because what they must not
//! touch is a result directory's own files.

use super::run_record::{Ended, FILE_NAME as RUN_JSON, FORMAT, RunRecord};
use crate::error::Failure;
use std::ffi::{CStr, CString, OsStr};
use std::fs::{self, File};
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

/// Space kept allocated after the first run.json (beyond its end, the file's size unchanged) so
/// that the final record can still be written over it when the disk has filled up during the
/// run: a few KiB per measured CPU, with a wide margin.
pub(crate) const FINAL_RECORD_RESERVE_BYTES: i64 = 256 * 1024;

/// How many names `create_unique` tries (`base`, `base-2`, ... ) before giving up.
const UNIQUE_NAME_ATTEMPTS: usize = 100;

/// A result directory on disk, and a descriptor of it through which its files are made.
#[derive(Debug, Clone)]
pub struct ResultDir {
    pub path: PathBuf,
    fd: Arc<OwnedFd>,
}

/// The default result directory: `./jitterlab-results/<UTC time>-<host>-<pid>`, e.g.
/// `jitterlab-results/20261122T134501Z-vm-4242`. The pid keeps two runs started in the same
/// second apart; [`ResultDir::create_unique`] still moves on to another name if it is taken.
pub fn default_path(start: SystemTime, host: &str) -> PathBuf {
    let stamp = humantime::format_rfc3339_seconds(start)
        .to_string()
        .replace(['-', ':'], "");
    let host: String = host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    PathBuf::from("jitterlab-results").join(format!("{stamp}-{host}-{}", std::process::id()))
}

/// A result directory this process has just made. Dropped before [`Claim::keep`], it is removed
/// with everything in it (and the parents made for it): a run refused before it measured leaves
/// nothing behind.
#[derive(Debug)]
pub struct Claim {
    dir: ResultDir,
    /// The directory holding it, and its name there: removal goes through them.
    parent: OwnedFd,
    name: CString,
    /// Parents that did not exist and were made for it, outermost first.
    made_parents: Vec<PathBuf>,
    kept: bool,
}

impl Claim {
    pub fn dir(&self) -> &ResultDir {
        &self.dir
    }

    /// The directory now holds results: it stays.
    pub fn keep(mut self) -> ResultDir {
        self.kept = true;
        self.dir.clone()
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if self.kept {
            return;
        }
        // Best effort: the run is ending with the refusal that dropped the claim, which is what
        // the user must see; a leftover is only untidy.
        let _ = remove_contents(self.dir.fd.as_fd());
        let _ = unlinkat(self.parent.as_fd(), &self.name, libc::AT_REMOVEDIR);
        for p in self.made_parents.iter().rev() {
            let _ = fs::remove_dir(p);
        }
    }
}

impl ResultDir {
    /// Makes the new result directory `path` (and its missing parents) for `option` (e.g.
    /// `--out`, named in the messages). Any existing entry at `path` is refused: results are never
    /// written into a directory this process did not make. Errors are exit 2.
    pub fn create(path: &Path, option: &str) -> Result<Claim, Failure> {
        make(path).map_err(|e| Failure::usage(e.message(option, path)))
    }

    /// Makes a new result directory named `base`, or `base-2`, `base-3`... when the name is
    /// taken (a default name that another process got first).
    pub fn create_unique(base: &Path, option: &str) -> Result<Claim, Failure> {
        for k in 1..=UNIQUE_NAME_ATTEMPTS {
            let path = match k {
                1 => base.to_path_buf(),
                _ => {
                    let mut p = base.as_os_str().to_owned();
                    p.push(format!("-{k}"));
                    PathBuf::from(p)
                }
            };
            match make(&path) {
                Err(MakeError::Exists(_)) => continue,
                r => return r.map_err(|e| Failure::usage(e.message(option, &path))),
            }
        }
        Err(Failure::usage(format!(
            "{option} {}: this name and {} others like it are taken; pass {option} with a new directory",
            base.display(),
            UNIQUE_NAME_ATTEMPTS - 1
        )))
    }

    /// An existing result directory, checked to hold a run.json.
    pub fn open(path: &Path) -> Result<Self, String> {
        if !path.join(RUN_JSON).is_file() {
            return Err(format!(
                "{} is not a jitterlab result directory (no {RUN_JSON}); pass the directory a run wrote, e.g. jitterlab-results/<time>-<host>",
                path.display()
            ));
        }
        let fd = open_dir(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        Ok(ResultDir {
            path: path.to_path_buf(),
            fd: Arc::new(fd),
        })
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Makes the new file `name` in the directory, for appending (events.jsonl has two
    /// writers, the run and the load supervisor). An existing entry of that name, a symbolic link
    /// included, is an error (EEXIST): nothing is ever written through a link.
    pub fn create_file(&self, name: &str) -> io::Result<File> {
        let c = cstr(OsStr::new(name))?;
        // SAFETY: valid descriptor and C string; the new descriptor is owned by the File.
        let fd = check(unsafe {
            libc::openat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                libc::O_WRONLY
                    | libc::O_APPEND
                    | libc::O_CREAT
                    | libc::O_EXCL
                    | libc::O_NOFOLLOW
                    | libc::O_CLOEXEC,
                0o666 as libc::c_uint,
            )
        })?;
        // SAFETY: a fresh descriptor, owned from here on.
        Ok(unsafe { File::from_raw_fd(fd) })
    }

    /// Replaces the file `name` with `bytes` atomically: `.<name>.tmp` is made new and renamed
    /// over it (a reader sees the old or the new version). On failure the temporary file is
    /// removed and `name` is left as it was.
    pub fn replace_file(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        let tmp = cstr(OsStr::new(&format!(".{name}.tmp")))?;
        let target = cstr(OsStr::new(name))?;
        // One left by this process's own earlier write that died half-way; unlinking never
        // follows a link.
        match unlinkat(self.fd.as_fd(), &tmp, 0) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let written = self
            .create_file(&tmp.to_string_lossy())
            .and_then(|mut f| f.write_all(bytes))
            .and_then(|_| {
                // SAFETY: valid descriptor and C strings.
                check(unsafe {
                    libc::renameat(
                        self.fd.as_raw_fd(),
                        tmp.as_ptr(),
                        self.fd.as_raw_fd(),
                        target.as_ptr(),
                    )
                })
                .map(drop)
            });
        if written.is_err() {
            let _ = unlinkat(self.fd.as_fd(), &tmp, 0);
        }
        written
    }

    /// Writes run.json atomically (see [`ResultDir::replace_file`]).
    pub fn write_run_record(&self, record: &RunRecord) -> io::Result<()> {
        self.replace_file(RUN_JSON, &record_bytes(record)?)
    }

    /// The first run.json of a run: written, then space reserved after it for
    /// [`ResultDir::write_final_run_record`]. A file system that cannot reserve space
    /// (`fallocate` unsupported) only loses that fallback.
    pub fn write_first_run_record(&self, record: &RunRecord) -> io::Result<()> {
        self.write_run_record(record)?;
        if let Ok(f) = self.open_existing(RUN_JSON) {
            let len = f.metadata().map_or(0, |m| m.len() as i64);
            // SAFETY: valid descriptor; KEEP_SIZE allocates without changing the file's size.
            unsafe {
                libc::fallocate(
                    f.as_raw_fd(),
                    libc::FALLOC_FL_KEEP_SIZE,
                    0,
                    len + FINAL_RECORD_RESERVE_BYTES,
                )
            };
        }
        Ok(())
    }

    /// The last run.json of a run. When it cannot be written (a full disk), the record is
    /// marked `failed` with the reason (unless it had failed already) and written over the first
    /// run.json in place, into the space reserved after it, so that run.json does not keep saying
    /// `running`. Returns what went wrong, for the caller to report (exit 4).
    pub fn write_final_run_record(&self, record: &mut RunRecord) -> Result<(), String> {
        let Err(e) = self.write_run_record(record) else {
            return Ok(());
        };
        let what = format!("cannot write {}: {e}", self.file(RUN_JSON).display());
        if record.ended != Ended::Failed {
            record.ended = Ended::Failed;
            record.end_reason = Some(what.clone());
        }
        match self.overwrite_in_reserved_space(RUN_JSON, record) {
            Ok(()) => Err(format!(
                "{what}; written in place instead, with \"ended\": \"failed\""
            )),
            Err(e2) => Err(format!(
                "{what}; nor in place ({e2}): it still says \"running\" (the summary above is all there is of this run's statistics)"
            )),
        }
    }

    /// Writes `record` over the file `name` from its start, only if the space already allocated
    /// to the file holds it (so that a full disk cannot leave it half written).
    fn overwrite_in_reserved_space(&self, name: &str, record: &RunRecord) -> io::Result<()> {
        use std::os::unix::fs::{FileExt, MetadataExt};
        let bytes = record_bytes(record)?;
        let f = self.open_existing(name)?;
        let allocated = f.metadata()?.blocks() * 512;
        if (bytes.len() as u64) > allocated {
            return Err(io::Error::other(format!(
                "{} bytes needed, {allocated} allocated",
                bytes.len()
            )));
        }
        f.write_all_at(&bytes, 0)?;
        f.set_len(bytes.len() as u64)
    }

    /// Opens the existing regular file `name` for writing, without following a link.
    fn open_existing(&self, name: &str) -> io::Result<File> {
        let c = cstr(OsStr::new(name))?;
        // SAFETY: valid descriptor and C string.
        let fd = check(unsafe {
            libc::openat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                libc::O_WRONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        })?;
        // SAFETY: a fresh descriptor, owned from here on.
        Ok(unsafe { File::from_raw_fd(fd) })
    }

    pub fn read_run_record(&self) -> Result<RunRecord, String> {
        let path = self.path.join(RUN_JSON);
        let text = crate::input::read_result_file(&path, crate::input::RESULT_RECORD_MAX_BYTES)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        // A newer format may have changed what a field means, or made the record unreadable
        // to this version: either way the user needs a newer jitterlab, not a parse error.
        let newer = |format: u32| {
            format!(
                "{} is in result format {format}, newer than format {FORMAT}, the newest this jitterlab ({}) reads; use a newer jitterlab to read it",
                path.display(),
                env!("CARGO_PKG_VERSION")
            )
        };
        match serde_json::from_str::<RunRecord>(&text) {
            Ok(record) if record.format > FORMAT => Err(newer(record.format)),
            Ok(record) => Ok(record),
            Err(e) => match serde_json::from_str::<FormatOnly>(&text) {
                Ok(FormatOnly { format }) if format > FORMAT => Err(newer(format)),
                _ => Err(format!(
                    "{} is not a valid format-{FORMAT} run.json: {e}",
                    path.display()
                )),
            },
        }
    }
}

/// The one field of run.json that every format has, read alone to tell a newer format from a
/// damaged file.
#[derive(serde::Deserialize)]
struct FormatOnly {
    format: u32,
}

fn record_bytes(record: &RunRecord) -> io::Result<Vec<u8>> {
    let mut text = serde_json::to_vec_pretty(record).map_err(io::Error::other)?;
    text.push(b'\n');
    Ok(text)
}

/// Why a directory could not be made.
enum MakeError {
    /// Something is at the path already; the string says what.
    Exists(&'static str),
    /// The path has no final name (`/`, `..`).
    NoName,
    /// A missing parent could not be made.
    Parent(PathBuf, io::Error),
    /// The directory could not be made or opened.
    Io(io::Error),
    /// What was opened after `mkdir` is not what this process made (the name was replaced
    /// in between by another user).
    Replaced,
}

impl MakeError {
    fn message(&self, option: &str, path: &Path) -> String {
        let p = path.display();
        let fix = format!("pass {option} with a new directory in a writable place");
        match self {
            MakeError::Exists(what) => format!(
                "{option} {p}: already exists ({what}); jitterlab makes a new directory for its results and never writes into an existing one or through a link; {fix}"
            ),
            MakeError::NoName => format!("{option} {p}: names no new directory; {fix}"),
            MakeError::Parent(parent, e) => format!(
                "{option} {p}: its parent {} cannot be made or used: {}; {fix}",
                parent.display(),
                describe(e)
            ),
            MakeError::Io(e) => format!("{option} {p}: cannot make it: {}; {fix}", describe(e)),
            MakeError::Replaced => format!(
                "{option} {p}: was replaced by another user's directory while being made; {fix}"
            ),
        }
    }
}

/// An I/O error, with what it means for a path when the system's words are terse.
fn describe(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ENAMETOOLONG) => {
            format!("{e} (a name has at most 255 bytes, a path at most 4095)")
        }
        // mkdir in a directory that exists: a file system that makes no new entries.
        Some(libc::ENOENT) => {
            format!("{e} (a file system such as /proc that takes no new directories)")
        }
        _ => e.to_string(),
    }
}

/// Makes `path` and opens it; see [`ResultDir::create`].
fn make(path: &Path) -> Result<Claim, MakeError> {
    let name = cstr(path.file_name().ok_or(MakeError::NoName)?).map_err(MakeError::Io)?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if let Ok(meta) = fs::symlink_metadata(path) {
        return Err(MakeError::Exists(existing_kind(path, &meta)));
    }
    let made_parents = make_parents(parent)?;
    let undo = |e| {
        made_parents
            .iter()
            .rev()
            .for_each(|p| drop(fs::remove_dir(p)));
        e
    };
    // From here on everything goes through the parent's descriptor: the name is looked up once.
    let parent_fd = open_dir(parent).map_err(|e| undo(MakeError::Parent(parent.into(), e)))?;
    // Mode 0755 (the umask may take more away), never group- or world-writable: no other user
    // adds entries (say, links) while the run writes into it.
    // SAFETY: valid descriptor and C string.
    if let Err(e) = check(unsafe { libc::mkdirat(parent_fd.as_raw_fd(), name.as_ptr(), 0o755) }) {
        return Err(undo(match e.raw_os_error() {
            Some(libc::EEXIST) => MakeError::Exists("made by another process just now"),
            _ => MakeError::Io(e),
        }));
    }
    // Between mkdir and open, another user who can write the parent could have put a link or a
    // directory of theirs in its place: a link is not followed, and what is ours is owned by us.
    let opened = openat_dir(parent_fd.as_fd(), &name).and_then(|fd| Ok((owner(fd.as_fd())?, fd)));
    // SAFETY: geteuid has no failure mode.
    let me = unsafe { libc::geteuid() };
    let fd = match opened {
        Ok((uid, fd)) if uid == me => fd,
        Ok(_) => return Err(undo(MakeError::Replaced)),
        Err(e) => {
            // Only an empty directory is removed, so never someone else's files.
            let _ = unlinkat(parent_fd.as_fd(), &name, libc::AT_REMOVEDIR);
            return Err(undo(MakeError::Io(e)));
        }
    };
    Ok(Claim {
        dir: ResultDir {
            path: path.to_path_buf(),
            fd: Arc::new(fd),
        },
        parent: parent_fd,
        name,
        made_parents,
        kept: false,
    })
}

/// The owner of an open file.
fn owner(fd: BorrowedFd) -> io::Result<libc::uid_t> {
    // SAFETY: an all-zero stat is a valid out-buffer.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid descriptor and out-pointer.
    check(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) })?;
    Ok(st.st_uid)
}

/// What is at `path` already, in words.
fn existing_kind(path: &Path, meta: &fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_symlink() {
        if fs::metadata(path).is_ok() {
            "a symbolic link"
        } else {
            "a dangling symbolic link"
        }
    } else if t.is_dir() {
        "a directory"
    } else {
        "a file"
    }
}

/// Makes the missing directories of `dir`, outermost first; returns those it made.
fn make_parents(dir: &Path) -> Result<Vec<PathBuf>, MakeError> {
    let mut missing = Vec::new();
    let mut at = Some(dir);
    while let Some(p) = at.filter(|p| !p.as_os_str().is_empty()) {
        if fs::symlink_metadata(p).is_ok() {
            break;
        }
        missing.push(p.to_path_buf());
        at = p.parent();
    }
    let mut made = Vec::new();
    for p in missing.into_iter().rev() {
        match fs::create_dir(&p) {
            Ok(()) => made.push(p),
            // Made by another process meanwhile: a shared parent such as jitterlab-results/.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && p.is_dir() => {}
            Err(e) => {
                made.iter()
                    .rev()
                    .for_each(|m: &PathBuf| drop(fs::remove_dir(m)));
                return Err(MakeError::Parent(p, e));
            }
        }
    }
    Ok(made)
}

/// Removes everything inside the directory `dir`, never following a link.
fn remove_contents(dir: BorrowedFd) -> io::Result<()> {
    // The directory as the descriptor holds it, even if it was renamed meanwhile.
    for entry in fs::read_dir(format!("/proc/self/fd/{}", dir.as_raw_fd()))? {
        let entry = entry?;
        let name = cstr(&entry.file_name())?;
        if entry.file_type()?.is_dir() {
            let sub = openat_dir(dir, &name)?;
            remove_contents(sub.as_fd())?;
            unlinkat(dir, &name, libc::AT_REMOVEDIR)?;
        } else {
            unlinkat(dir, &name, 0)?;
        }
    }
    Ok(())
}

fn cstr(s: &OsStr) -> io::Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| io::Error::other("a name with a NUL byte"))
}

fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// Opens a directory (following links: a path the user gave).
fn open_dir(path: &Path) -> io::Result<OwnedFd> {
    let c = cstr(path.as_os_str())?;
    // SAFETY: valid C string.
    let fd = check(unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    })?;
    // SAFETY: a fresh descriptor, owned from here on.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Opens the directory `name` in `dir`, refusing a link.
fn openat_dir(dir: BorrowedFd, name: &CStr) -> io::Result<OwnedFd> {
    // SAFETY: valid descriptor and C string.
    let fd = check(unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    })?;
    // SAFETY: a fresh descriptor, owned from here on.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn unlinkat(dir: BorrowedFd, name: &CStr, flags: libc::c_int) -> io::Result<()> {
    // SAFETY: valid descriptor and C string.
    check(unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), flags) }).map(drop)
}

/// The names a result directory (holding run.json) or a sweep directory (holding sweep.json)
/// uses for its own files and folders.
fn is_own_file(name: &OsStr) -> bool {
    use crate::record::{hlog, samplelog};
    [
        RUN_JSON,
        ".run.json.tmp",
        hlog::FILE_NAME,
        samplelog::FILE_NAME,
        super::events::FILE_NAME,
        crate::runner::loads::SCENARIO_COPY,
        crate::load::supervisor::LOG_DIR,
        super::sweep::FILE_NAME,
        super::sweep::CSV_FILE_NAME,
    ]
    .iter()
    .any(|own| OsStr::new(own) == name)
}

/// Whether `dir` is a result directory or a sweep directory.
fn is_result_dir(dir: &Path) -> bool {
    dir.join(RUN_JSON).is_file() || dir.join(super::sweep::FILE_NAME).is_file()
}

/// Checks an output file path before anything is read or written (exit 2): its name is not
/// too long, it is not a directory, its directory exists, and it is not one of a result
/// directory's own files (`report RUN -o RUN/run.json` would destroy the run), also when
/// reached through a link.
pub fn check_output_file(path: &Path, option: &str) -> Result<(), Failure> {
    let refuse = |why: String| {
        Failure::usage(format!(
            "{option} {}: {why}; pass {option} with another file",
            path.display()
        ))
    };
    check_name_lengths(path).map_err(refuse)?;
    if path.is_dir() {
        return Err(refuse("is a directory".into()));
    }
    // The file as it will really be written: links resolved.
    let real = match fs::canonicalize(path) {
        Ok(real) => real,
        Err(_) => {
            let parent = match path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            let Some(name) = path.file_name() else {
                return Err(refuse("names no file".into()));
            };
            match fs::canonicalize(parent) {
                Ok(p) if p.is_dir() => p.join(name),
                _ => {
                    return Err(refuse(format!(
                        "its directory {} does not exist",
                        parent.display()
                    )));
                }
            }
        }
    };
    if let (Some(dir), Some(name)) = (real.parent(), real.file_name()) {
        let in_own_folder = dir.parent().is_some_and(is_result_dir)
            && dir.file_name() == Some(OsStr::new(crate::load::supervisor::LOG_DIR));
        if (is_result_dir(dir) && is_own_file(name)) || in_own_folder {
            return Err(refuse(format!(
                "is a file of the result directory {} (writing it would destroy the results)",
                dir.display()
            )));
        }
    }
    Ok(())
}

/// Checks an output directory path that is made if missing (`report --plots DIR`) before
/// anything is written (exit 2): names not too long, not an existing non-directory, and its
/// nearest existing ancestor a directory.
pub fn check_output_dir(path: &Path, option: &str) -> Result<(), Failure> {
    let refuse = |why: String| {
        Failure::usage(format!(
            "{option} {}: {why}; pass {option} with a directory (made if missing)",
            path.display()
        ))
    };
    check_name_lengths(path).map_err(refuse)?;
    let mut at = Some(path);
    while let Some(p) = at.filter(|p| !p.as_os_str().is_empty()) {
        match fs::metadata(p) {
            Ok(m) if m.is_dir() => return Ok(()),
            Ok(_) => return Err(refuse(format!("{} is not a directory", p.display()))),
            Err(_) if fs::symlink_metadata(p).is_ok() => {
                return Err(refuse(format!("{} is a dangling link", p.display())));
            }
            Err(_) => at = p.parent(),
        }
    }
    Ok(())
}

/// NAME_MAX and PATH_MAX of Linux, checked before anything is written.
fn check_name_lengths(path: &Path) -> Result<(), String> {
    if path.as_os_str().len() > 4095 {
        return Err("the path is longer than 4095 bytes".into());
    }
    match path.iter().find(|c| c.len() > 255) {
        Some(c) => Err(format!(
            "the name '{}...' is longer than 255 bytes",
            String::from_utf8_lossy(&c.as_bytes()[..40])
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;
    use std::time::Duration;

    #[test]
    fn default_path_is_utc_time_host_and_pid() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000);
        assert_eq!(
            default_path(t, "my host"),
            PathBuf::from(format!(
                "jitterlab-results/20261118T110640Z-my_host-{}",
                std::process::id()
            ))
        );
    }

    #[test]
    fn refuses_every_existing_entry_and_makes_missing_parents() {
        let base = tempfile::tempdir().unwrap();
        let at = |n: &str| base.path().join(n);
        fs::create_dir(at("empty")).unwrap();
        fs::write(at("file"), "x").unwrap();
        symlink(at("empty"), at("link")).unwrap();
        symlink(at("nowhere"), at("dangling")).unwrap();
        for (name, what) in [
            ("empty", "a directory"),
            ("file", "a file"),
            ("link", "a symbolic link"),
            ("dangling", "a dangling symbolic link"),
        ] {
            let e = ResultDir::create(&at(name), "--out").unwrap_err();
            assert_eq!(e.code, crate::error::ExitCode::Usage);
            assert!(e.message.contains(what), "{name}: {}", e.message);
        }
        assert!(!at("nowhere").exists(), "a dangling link is not followed");
        let e = ResultDir::create(&at("file/sub"), "--out").unwrap_err();
        assert!(e.message.contains("its parent"), "{}", e.message);
        let long = "x".repeat(300);
        let e = ResultDir::create(&at(&long), "--out").unwrap_err();
        assert!(e.message.contains("at most 255 bytes"), "{}", e.message);

        let claim = ResultDir::create(&at("new/deeper"), "--out").unwrap();
        assert!(at("new/deeper").is_dir());
        claim.keep();
        assert!(at("new/deeper").is_dir());
    }

    #[test]
    fn an_unkept_claim_leaves_nothing_behind() {
        let base = tempfile::tempdir().unwrap();
        let victim = base.path().join("victim");
        fs::write(&victim, "precious").unwrap();
        let claim = ResultDir::create(&base.path().join("a/b/run"), "--out").unwrap();
        let dir = claim.dir().clone();
        dir.create_file("latency.hlog").unwrap();
        fs::create_dir(dir.file("loads")).unwrap();
        fs::write(dir.file("loads/1-cpu.log"), "x").unwrap();
        symlink(&victim, dir.file("loads/link")).unwrap();
        drop(claim);
        assert_eq!(
            fs::read_dir(base.path()).unwrap().count(),
            1,
            "only the victim is left"
        );
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
    }

    #[test]
    fn unique_names_move_on_when_taken() {
        let base = tempfile::tempdir().unwrap();
        let name = base.path().join("run");
        fs::create_dir(&name).unwrap();
        let claim = ResultDir::create_unique(&name, "--out").unwrap();
        assert_eq!(claim.dir().path, base.path().join("run-2"));
    }

    #[test]
    fn files_are_never_written_through_a_planted_link() {
        let base = tempfile::tempdir().unwrap();
        let victim = base.path().join("victim");
        fs::write(&victim, "precious").unwrap();
        let dir = ResultDir::create(&base.path().join("run"), "--out")
            .unwrap()
            .keep();
        symlink(&victim, dir.file(".run.json.tmp")).unwrap();
        symlink(&victim, dir.file("latency.hlog")).unwrap();
        let e = dir.create_file("latency.hlog").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        dir.replace_file(RUN_JSON, b"{}\n").unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
        let run_json = fs::symlink_metadata(dir.file(RUN_JSON)).unwrap();
        assert!(run_json.is_file(), "run.json is a file of its own");
        assert!(!dir.file(".run.json.tmp").exists());
    }

    #[test]
    fn output_files_of_a_result_directory_are_refused() {
        let base = tempfile::tempdir().unwrap();
        let run = base.path().join("run");
        fs::create_dir_all(run.join("loads")).unwrap();
        fs::write(run.join(RUN_JSON), "{}").unwrap();
        symlink(run.join(RUN_JSON), base.path().join("link")).unwrap();
        for bad in [
            run.join(RUN_JSON),
            run.join("latency.hlog"),
            run.join("loads/1-cpu.log"),
            base.path().join("link"),
        ] {
            let e = check_output_file(&bad, "-o").unwrap_err();
            assert!(e.message.contains("would destroy"), "{}", e.message);
        }
        assert!(check_output_file(&run.join("report.html"), "-o").is_ok());
        assert!(check_output_file(&base.path().join("r.html"), "-o").is_ok());
        for bad in [run.clone(), base.path().join("missing/r.html")] {
            assert!(check_output_file(&bad, "-o").is_err(), "{}", bad.display());
        }
        assert!(check_output_dir(&base.path().join("plots/deeper"), "--plots").is_ok());
        let e = check_output_dir(&run.join("run.json/plots"), "--plots").unwrap_err();
        assert!(e.message.contains("not a directory"), "{}", e.message);
        let long = base.path().join("y".repeat(256));
        assert!(check_output_dir(&long, "--plots").is_err());
        assert!(check_output_file(&long, "-o").is_err());
    }
}

//! The one writer of every file a user names outside a result directory (`report -o`,
//! `export -o`, `--plots`, the drop-ins' `--json` and `--histfile`). Each path is checked before
//! the command reads or measures anything (`output_checks.rs`; [`OutputFile::claim`] also opens
//! the file's directory then), and written so that no link another user planted is followed and
//! no existing file is truncated: the file is written whole into a new temporary file made
//! (O_EXCL, O_NOFOLLOW) in the target's directory through its descriptor, then renamed over the
//! target's name. A link at that name is replaced, never written through; a file hard-linked
//! elsewhere keeps its contents; two writers of one file leave one whole version, the last
//! renamed (issue 24 D06, D07, D17; issue 39 R01, R13). What is not a file at the name is
//! written in place only when it is the caller's: one of this process's own descriptors
//! (`/dev/stdout`), or a FIFO or device of the caller's or root's, never waiting for a reader
//! past a SIGINT or SIGTERM (issue 39 N7; [`write_output`] says the rule).
//! `tests/offline/writers.rs` fails when code elsewhere opens a path for writing.
//!
//! One concern by design (issue 41's near-limit files): the one writer of user-named files
//! (`tests/offline/writers.rs`), its target classified and written in one place; the checks
//! made before the work are `output_checks.rs`; about 200 lines are tests.

use super::in_place::*;
use super::*;
use crate::error::ExitCode;
use crate::sys::path::{Kind, Stat};
use crate::sys::stop_aware::StopAware;
use std::ffi::OsString;

/// How many temporary names a write tries before giving up (each has the pid and a counter:
/// another name is needed only when a file of that name was planted).
const TEMP_NAME_ATTEMPTS: u32 = 100;

/// Writes the file `name` in the directory `dir` whole: `fill` writes into a new temporary
/// file, which is then renamed over `name`. On failure the temporary file is removed and
/// `name` is left as it was.
fn write_replacing(
    dir: BorrowedFd,
    name: &OsStr,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    use std::sync::atomic::{AtomicU32, Ordering};
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let target = cstr(name)?;
    // The name shortened to leave room for the rest within NAME_MAX (255 bytes).
    let short = String::from_utf8_lossy(&name.as_bytes()[..name.len().min(200)]).into_owned();
    // What killed writers left here goes first (issue 39 L4-c).
    super::stale_temps::remove_stale_temps(dir);
    let (tmp, file) = (|| {
        for _ in 0..TEMP_NAME_ATTEMPTS {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let tmp = cstr(OsStr::new(&super::stale_temps::temp_name(
                &short,
                std::process::id(),
                n,
            )))?;
            match create_new_at(dir, &tmp) {
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                r => return r.map(|f| (tmp, f)),
            }
        }
        Err(io::Error::other("no free temporary name beside it"))
    })()?;
    let mut out = io::BufWriter::new(file);
    let written = fill(&mut out)
        .and_then(|_| out.flush())
        .and_then(|_| rename_at(dir, &tmp, &target));
    if written.is_err() {
        let _ = unlink_at(dir, &tmp, Entry::File);
    }
    written
}

/// Where an output file's bytes go.
#[derive(Debug)]
enum Target {
    /// One of this process's own descriptors, held by a duplicate: `-` of the drop-ins
    /// (`--json=-`: standard output), or a path that leads to what one of them holds
    /// (`-o /dev/stdout`, `/dev/fd/3`, `>(gzip > x)`): what the caller handed to this process,
    /// written through it, as the shell's redirection set it up (a file at its offset, a pipe,
    /// a terminal, a socket).
    Descriptor(OwnedFd),
    /// A FIFO or a character device of the caller's or root's (`-o /dev/null`, `mkfifo p`),
    /// held by an `O_PATH` descriptor and reopened for writing at the write: written in place.
    InPlace(OwnedFd),
    /// A file: written new in its directory (held open since the claim) and renamed over `name`.
    Replace { dir: OwnedFd, name: OsString },
}

/// What a special file `st` at an output's name means for the writer (the rule of
/// [`write_output`]'s comment): written through this process's own descriptor of it, written
/// in place, or refused (`in_place.rs`).
fn special_target(entry: OwnedFd, st: &Stat) -> Result<Target, Refusal> {
    if let Some(own) = own_descriptor(st) {
        return Ok(Target::Descriptor(own));
    }
    check_special(st)?;
    Ok(Target::InPlace(entry))
}

/// Where `path` is written (see [`write_output`] for the rule): its directory is reached now,
/// following no other user's link (`resolve.rs`); another user's FIFO or device at its name,
/// a socket or a block device is refused (issue 39 N7).
fn target_of(path: &Path) -> Result<Target, Refusal> {
    let name = path
        .file_name()
        .ok_or_else(|| (ExitCode::Usage, "names no file".to_string()))?;
    let dir = walk_dir(parent_of(path), true, None).map_err(|e| (e.exit_code(), e.reason()))?;
    target_in(dir.fd, name)
}

/// Where the entry `name` of the directory `dir` is written: the rule of [`write_output`],
/// for a named output file and for each file of an output directory (`--plots`) alike (issue
/// 39 L4-e: the plots replaced another user's FIFO that `-o` refused).
fn target_in(dir: OwnedFd, name: &OsStr) -> Result<Target, Refusal> {
    use crate::sys::path::{open_entry, open_entry_following, stat};
    let replace = |dir: OwnedFd| Target::Replace {
        dir,
        name: name.to_os_string(),
    };
    let Some((entry, st)) = open_entry(dir.as_fd(), name)
        .ok()
        .and_then(|e| stat(e.as_fd()).ok().map(|st| (e, st)))
    else {
        return Ok(replace(dir));
    };
    match st.kind {
        Kind::Other => special_target(entry, &st),
        // This user's or root's link (`/dev/stdout` -> `/proc/self/fd/1`): the kernel follows
        // it (its target may be a pipe no path names); to one of this process's descriptors,
        // or to a special file, it is written as that; another user's link is replaced.
        Kind::Link if trusted_link_owner(st.uid) => {
            let Some((to, to_st)) = open_entry_following(dir.as_fd(), name)
                .ok()
                .and_then(|t| stat(t.as_fd()).ok().map(|st| (t, st)))
            else {
                return Ok(replace(dir));
            };
            if to_st.kind == Kind::Other {
                return special_target(to, &to_st);
            }
            match own_descriptor(&to_st) {
                Some(own) => Ok(Target::Descriptor(own)),
                None => Ok(replace(dir)),
            }
        }
        _ => Ok(replace(dir)),
    }
}

/// An output file a command names, claimed before the command reads or measures anything:
/// checked ([`check_output_file`]), its directory opened and found writable, on a file system
/// that holds files. Nothing is made on disk until [`OutputFile::write`], at the command's end.
#[derive(Debug)]
pub(crate) struct OutputFile {
    path: PathBuf,
    option: String,
    target: Target,
    /// What it names, registered among the claims held ([`CLAIMS`]) until it is dropped.
    key: Option<ClaimKey>,
}

/// What a claimed output file names: its directory's device and inode, and its name.
type ClaimKey = (u64, u64, OsString);

/// The output files claimed and not yet dropped in this process, with their option and path:
/// two outputs of one command that name one file would leave only the one written last
/// (issue 39, L5: `cyclictest --json=X --histfile=X` kept the histogram only), so the second
/// claim is refused (exit 2), in every command with several outputs.
static CLAIMS: std::sync::Mutex<Vec<(ClaimKey, String, PathBuf)>> =
    std::sync::Mutex::new(Vec::new());

/// The key of `target` when it is a file replaced; None for what is written in place or
/// through a descriptor (`/dev/null`, a FIFO, standard output: each write lands, none replaces
/// another).
fn claim_key(target: &Target) -> Option<ClaimKey> {
    let Target::Replace { dir, name } = target else {
        return None;
    };
    let st = crate::sys::path::stat(dir.as_fd()).ok()?;
    Some((st.dev, st.ino, name.clone()))
}

/// Registers `key` for `option` and `path`, or says which option claimed it already.
fn register_claim(key: &ClaimKey, option: &str, path: &Path) -> Result<(), Failure> {
    let mut claims = CLAIMS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, other, other_path)) = claims.iter().find(|(k, ..)| k == key) {
        return Err(Failure::usage(format!(
            "{option} {}: {other} {} names the same file, and one output would replace the other; give each output its own path",
            path.display(),
            other_path.display()
        )));
    }
    claims.push((key.clone(), option.to_string(), path.to_path_buf()));
    Ok(())
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            let mut claims = CLAIMS.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(at) = claims.iter().position(|(k, ..)| *k == key) {
                claims.remove(at);
            }
        }
    }
}

impl OutputFile {
    /// Claims `path` for `option` (e.g. `--json`, named in the messages), which must not be one
    /// of the files of the result directories `inputs`. Exit 2 for a path that cannot be
    /// written (no such directory, a directory, a path in a result directory, a pseudo file
    /// system, another user's FIFO), exit 3 when this user may not write its directory.
    /// `-` is standard output ([`means_stdout`]), the command's own text then going to
    /// standard error.
    pub(crate) fn claim(
        path: &Path,
        option: &str,
        inputs: &[&Path],
    ) -> Result<OutputFile, Failure> {
        if means_stdout(path) {
            return Self::stdout(path, option);
        }
        Self::claim_file(path, option, inputs)
    }

    /// [`OutputFile::claim`] of a path that names a file, `-` included.
    fn claim_file(path: &Path, option: &str, inputs: &[&Path]) -> Result<OutputFile, Failure> {
        check_output_file(path, option, inputs)?;
        let refuse = |code: ExitCode, why: String| {
            Failure::new(
                code,
                format!(
                    "{option} {}: {why}; pass {option} with a file in a directory you can write",
                    path.display()
                ),
            )
        };
        let target = target_of(path).map_err(|(code, why)| refuse(code, why))?;
        if let Target::Replace { dir, .. } = &target {
            let here = fd_path(dir.as_fd());
            let dir = parent_of(path);
            if let Ok(Some(fs)) = crate::sys::fs::pseudo_file_system(&here) {
                return Err(refuse(
                    ExitCode::Usage,
                    format!(
                        "{} is on {fs}, a file system of kernel interfaces that holds no files",
                        dir.display()
                    ),
                ));
            }
            crate::sys::fs::can_write_dir(&here).map_err(|e| {
                refuse(
                    ExitCode::of_io(&e, ExitCode::Usage),
                    format!("cannot make files in {}: {}", dir.display(), describe(&e)),
                )
            })?;
        }
        let key = claim_key(&target);
        if let Some(key) = &key {
            register_claim(key, option, path)?;
        }
        Ok(OutputFile {
            path: path.to_path_buf(),
            option: option.to_string(),
            target,
            key,
        })
    }

    /// As [`OutputFile::claim`], but `-` is a file named `-`: only for the one option whose
    /// original tool takes it so (rt-tests' `cyclictest --histfile=-`, docs/cyclictest.md).
    pub(crate) fn claim_dash_as_a_file(path: &Path, option: &str) -> Result<OutputFile, Failure> {
        Self::claim_file(path, option, &[])
    }

    /// Standard output as the output of `option` (`-`, [`means_stdout`]).
    fn stdout(path: &Path, option: &str) -> Result<OutputFile, Failure> {
        let stdout = stdout_target()
            .map_err(|e| Failure::run(format!("{option} -: cannot use standard output: {e}")))?;
        // The command's text goes to standard error from here on: stdout is this file.
        crate::stdout::reserve_for_data();
        Ok(OutputFile {
            path: path.to_path_buf(),
            option: option.to_string(),
            target: stdout,
            key: None,
        })
    }

    /// Writes the file whole (see the module's comment); a failure leaves what was at its name.
    pub(crate) fn write(
        &self,
        fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> io::Result<()> {
        let fd = match &self.target {
            Target::Replace { dir, name } => return write_replacing(dir.as_fd(), name, fill),
            Target::Descriptor(fd) => {
                // What this process printed before comes first.
                io::stdout().flush()?;
                fd.try_clone()?
            }
            // The very FIFO or device claimed, reopened without blocking.
            Target::InPlace(entry) => reopen_in_place(entry.as_fd())?,
        };
        let mut out = io::BufWriter::with_capacity(64 * 1024, StopAware::new(fd));
        match fill(&mut out).and_then(|_| out.flush()) {
            // `-o - | head`: a closed pipe on standard output is the reader's choice, not a
            // failure, as for the commands' own output.
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe && means_stdout(&self.path) => Ok(()),
            r => r,
        }
    }

    /// [`OutputFile::write`] of `bytes`, a failure said as the option and path's (exit 4: the
    /// path was checked before, so what fails now is the disk, or the reader of a FIFO).
    pub(crate) fn write_bytes(&self, bytes: &[u8]) -> Result<(), Failure> {
        self.write(|w| w.write_all(bytes)).map_err(|e| {
            Failure::run(format!(
                "cannot write {} {}: {e}",
                self.option,
                self.path.display()
            ))
        })
    }
}

/// Whether a path a user names for an output means standard output: `-`, wherever an output
/// file is named (`export -o -`, `report -o -`, the drop-ins' `--json=-`), as most tools read
/// it (eleventh hostile re-run, L11-c: `export -o -` wrote a file named `-`). The one rule: the
/// writer ([`OutputFile::claim`], [`write_output`]) and the checks (`check_output_file`) ask
/// it; an option that names a directory refuses `-` (`create.rs`); `./-` names a file `-`.
/// The one exception is `cyclictest --histfile=-`, a file named `-` as in rt-tests
/// ([`OutputFile::claim_dash_as_a_file`]).
pub(crate) fn means_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Standard output as a write target: a duplicate of descriptor 1 (said on standard error
/// when it was closed at the start: the file would go nowhere).
fn stdout_target() -> io::Result<Target> {
    crate::stdout::warn_if_closed_at_start();
    Ok(Target::Descriptor(
        io::stdout().as_fd().try_clone_to_owned()?,
    ))
}

/// The rule of the writer for what is at an output's name, checked before the work
/// ([`check_output_file`]) and again when written: an error in words, exit 2 or 3.
pub(super) fn check_target(path: &Path) -> Result<(), Refusal> {
    target_of(path).map(drop)
}

/// Writes the output file `path` (see the module's comment) without a claim: for a file whose
/// path was checked by [`check_output_file`] and is written right after (the exports). Its
/// directory is reached following only this user's and root's links (`resolve.rs`); its last
/// name is never followed, except by the rule for what is not a file, the same as a claim's:
/// - a path that leads to one of this process's own writing descriptors (`-o /dev/stdout`,
///   `/dev/fd/N`: what the caller redirected) is written through it;
/// - a FIFO or character device of this user's or root's (`/dev/null`, a FIFO you made),
///   named directly or reached by a link of this user's or root's, is written in place
///   (replacing it would destroy a device node; writing into it destroys no file), never
///   waiting for its reader past a SIGINT or SIGTERM; one of another user's is refused (its
///   owner would read the output, or hold the writer), and so are a socket and a block device;
/// - anything else (a file, another user's link, nothing) is replaced by the new file.
///
/// `-` is standard output ([`means_stdout`]).
pub(crate) fn write_output(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let target = match means_stdout(path) {
        true => stdout_target()?,
        false => target_of(path).map_err(|(_, why)| io::Error::other(why))?,
    };
    OutputFile {
        path: path.to_path_buf(),
        option: String::new(),
        target,
        key: None,
    }
    .write(fill)
}

/// The directory `report --plots` writes into, held by its descriptor.
#[derive(Debug)]
pub(crate) struct OutputDir {
    pub path: PathBuf,
    fd: OwnedFd,
}

impl OutputDir {
    /// Opens the directory `path` for `option`, made (with its parents) if missing. A link at
    /// `path` is refused (exit 2): its target may be anything, another user's choice.
    pub(crate) fn open_or_make(path: &Path, option: &str) -> Result<OutputDir, Failure> {
        let fail = |e: io::Error| {
            Failure::new(
                ExitCode::of_io(&e, ExitCode::Usage),
                format!(
                    "{option} {}: {}; pass {option} with a directory (made if missing)",
                    path.display(),
                    describe(&e)
                ),
            )
        };
        if means_stdout(path) {
            return Err(fail(io::Error::new(
                io::ErrorKind::InvalidInput,
                "`-` means standard output, and this names a directory (./- for one named `-`)",
            )));
        }
        let name = path.file_name().ok_or_else(|| {
            fail(io::Error::new(
                io::ErrorKind::InvalidInput,
                "names no directory",
            ))
        })?;
        // Made parents stay: the plots go into them.
        let parent = walk_dir(parent_of(path), true, Some(&mut Vec::new())).map_err(|e| {
            Failure::new(
                e.exit_code(),
                format!(
                    "{option} {}: {}; pass {option} with a directory (made if missing)",
                    path.display(),
                    e.reason()
                ),
            )
        })?;
        let c = cstr(name).map_err(fail)?;
        match make_dir_at(parent.fd.as_fd(), &c, 0o755) {
            Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(fail(e)),
            _ => {}
        }
        let fd = openat_dir(parent.fd.as_fd(), &c).map_err(|e| match e.raw_os_error() {
            Some(crate::sys::errno::ELOOP) | Some(crate::sys::errno::ENOTDIR) => {
                Failure::usage(link_refusal(path, option))
            }
            _ => fail(e),
        })?;
        Ok(OutputDir {
            path: path.to_path_buf(),
            fd,
        })
    }

    /// Where the file `name` of the directory goes, by the rule of [`write_output`]: another
    /// user's FIFO or device at that name, a socket or a block device is refused.
    fn target(&self, name: &str) -> Result<Target, Refusal> {
        let dir = self
            .fd
            .try_clone()
            .map_err(|e| (ExitCode::of_io(&e, ExitCode::Run), e.to_string()))?;
        target_in(dir, OsStr::new(name))
    }

    /// Checks, before anything is written, that every file of `names` can be written into
    /// the directory by the writer's rule (exit 2 naming the first that cannot).
    pub(crate) fn check_names<'a>(
        &self,
        option: &str,
        names: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), Failure> {
        for name in names {
            self.target(name).map_err(|(code, why)| {
                Failure::new(
                    code,
                    format!(
                        "{option} {}: {name} {why}; remove it, or pass {option} with another directory",
                        self.path.display()
                    ),
                )
            })?;
        }
        Ok(())
    }

    /// Writes the file `name` in the directory whole, by the rule of [`write_output`] (a
    /// file is replaced; a FIFO or device of the caller's or root's is written in place;
    /// another user's is refused).
    pub(crate) fn write(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        let target = self.target(name).map_err(|(_, why)| {
            io::Error::new(io::ErrorKind::InvalidInput, format!("{name} {why}"))
        })?;
        OutputFile {
            path: self.path.join(name),
            option: String::new(),
            target,
            key: None,
        }
        .write(|w| w.write_all(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;
    use std::os::unix::fs::symlink;

    /// Two outputs of one command naming one file (by another spelling too) are refused at the
    /// second claim, naming both options; once the first is dropped, the path is free (L5).
    #[test]
    fn a_second_claim_of_one_file_is_refused() {
        let base = tempfile::tempdir().unwrap();
        let path = base.path().join("out.json");
        let json = OutputFile::claim(&path, "--json", &[]).unwrap();
        let again = base.path().join(".").join("out.json");
        let e = OutputFile::claim(&again, "--histfile", &[]).unwrap_err();
        assert_eq!(e.code, ExitCode::Usage);
        assert!(e.message.starts_with("--histfile "), "{}", e.message);
        assert!(e.message.contains("--json "), "{}", e.message);
        assert!(e.message.contains("names the same file"), "{}", e.message);
        let other = OutputFile::claim(&base.path().join("hist.txt"), "--histfile", &[]).unwrap();
        drop(json);
        drop(other);
        OutputFile::claim(&path, "--histfile", &[]).unwrap();
    }

    #[test]
    fn an_output_replaces_a_link_and_never_truncates_another_name() {
        let base = tempfile::tempdir().unwrap();
        let victim = base.path().join("victim");
        fs::write(&victim, "precious").unwrap();
        let out = base.path().join("out.html");
        symlink(&victim, &out).unwrap();
        write_output(&out, |w| w.write_all(b"report")).unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
        assert!(fs::symlink_metadata(&out).unwrap().is_file());
        let hard = base.path().join("hard.html");
        fs::hard_link(&victim, &hard).unwrap();
        write_output(&hard, |w| w.write_all(b"report")).unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
        assert_eq!(fs::read_to_string(&hard).unwrap(), "report");
        // A failed write leaves the target as it was and no temporary file.
        let e = write_output(&out, |_| Err(io::Error::other("disk full"))).unwrap_err();
        assert_eq!(e.to_string(), "disk full");
        assert_eq!(fs::read_to_string(&out).unwrap(), "report");
        assert_eq!(fs::read_dir(base.path()).unwrap().count(), 3);
        // A device is written in place, never replaced by a file (`-o /dev/null`).
        write_output(Path::new("/dev/null"), |w| w.write_all(b"report")).unwrap();
        use std::os::unix::fs::FileTypeExt;
        assert!(
            fs::metadata("/dev/null")
                .unwrap()
                .file_type()
                .is_char_device()
        );
        // By device and inode: a hard link to an input's file is refused.
        let run = base.path().join("run");
        fs::create_dir(&run).unwrap();
        fs::write(run.join(RUN_JSON), "{}").unwrap();
        let saved = base.path().join("saved.json");
        fs::hard_link(run.join(RUN_JSON), &saved).unwrap();
        let e = check_output_file(&saved, "-o", &[&run]).unwrap_err();
        assert!(e.message.contains("hard link"), "{}", e.message);
        // The file itself, or a symbolic link to it, is said as such (issue 39 L3).
        let e = check_output_file(&run.join(RUN_JSON), "-o", &[&run]).unwrap_err();
        assert!(
            e.message.contains("is the file") && !e.message.contains("link"),
            "{}",
            e.message
        );
        let lnk = base.path().join("lnk.json");
        symlink(run.join(RUN_JSON), &lnk).unwrap();
        let e = check_output_file(&lnk, "-o", &[&run]).unwrap_err();
        assert!(
            e.message.contains("through a symbolic link") && !e.message.contains("hard"),
            "{}",
            e.message
        );
    }

    #[test]
    fn a_claimed_output_replaces_another_users_link_in_a_sticky_directory() {
        let base = tempfile::tempdir().unwrap();
        let shared = base.path().join("shared");
        fs::create_dir(&shared).unwrap();
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).unwrap();
        let victim = base.path().join("victim");
        fs::write(&victim, "precious").unwrap();
        let out = shared.join("out.json");
        symlink(&victim, &out).unwrap();
        if std::os::unix::fs::lchown(&out, Some(65534), Some(65534)).is_err() {
            eprintln!("skipped: giving a link to another user needs root");
            return;
        }
        let claimed = OutputFile::claim(&out, "--json", &[]).unwrap();
        // Nothing is made by the claim: the measurement comes first.
        assert!(fs::symlink_metadata(&out).unwrap().is_symlink());
        assert_eq!(fs::read_dir(&shared).unwrap().count(), 1);
        claimed.write_bytes(b"{}\n").unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
        let meta = fs::symlink_metadata(&out).unwrap();
        assert!(meta.is_file());
        assert_eq!(meta.uid(), crate::sys::process::effective_user_id());
        assert_eq!(fs::read_to_string(&out).unwrap(), "{}\n");
        assert_eq!(
            fs::read_dir(&shared).unwrap().count(),
            1,
            "no temporary left"
        );
    }

    #[test]
    fn a_claim_refuses_what_cannot_be_written() {
        let base = tempfile::tempdir().unwrap();
        let usage = crate::error::ExitCode::Usage;
        for (path, said) in [
            (base.path().join("missing/out.json"), "does not exist"),
            (PathBuf::from("/proc/jitterlab-out.json"), "on proc"),
            (base.path().to_path_buf(), "is a directory"),
        ] {
            let e = OutputFile::claim(&path, "--json", &[]).unwrap_err();
            assert_eq!(e.code, usage, "{}", e.message);
            assert!(e.message.contains(said), "{}", e.message);
            assert!(e.message.starts_with("--json "), "{}", e.message);
        }
        // `-` is standard output (L11-c), but for `cyclictest --histfile=-`, a file as in
        // rt-tests.
        let dash = OutputFile::claim(Path::new("-"), "-o", &[]).unwrap();
        assert!(matches!(dash.target, Target::Descriptor(_)));
        let file = OutputFile::claim_dash_as_a_file(Path::new("-"), "--histfile").unwrap();
        assert!(matches!(file.target, Target::Replace { .. }));
        let null = OutputFile::claim(Path::new("/dev/null"), "--json", &[]).unwrap();
        assert!(matches!(null.target, Target::InPlace(_)));
        null.write_bytes(b"x").unwrap();
    }

    #[test]
    fn output_files_of_a_result_directory_are_refused() {
        let base = tempfile::tempdir().unwrap();
        let run = base.path().join("run");
        fs::create_dir_all(run.join("loads")).unwrap();
        fs::create_dir_all(run.join("snapshots/deeper")).unwrap();
        fs::write(run.join(RUN_JSON), "{\n  \"format\": 1\n}\n").unwrap();
        fs::write(run.join("counters.log"), "#cpu 0\n").unwrap();
        symlink(run.join(RUN_JSON), base.path().join("link")).unwrap();
        // Any path in a result directory, at any depth, whatever its name (issue 39 N10: the
        // list of names missed counters.log and snapshots/), also through a link; report.html
        // beside the run's files too.
        for bad in [
            run.join(RUN_JSON),
            run.join("latency.hlog"),
            run.join("loads/1-cpu.log"),
            run.join("counters.log"),
            run.join("snapshots/spike-0001.csv"),
            run.join("snapshots/deeper/new.txt"),
            run.join("report.html"),
            base.path().join("link"),
        ] {
            let e = check_output_file(&bad, "-o", &[]).unwrap_err();
            assert!(
                e.message.contains("is in the result directory"),
                "{}",
                e.message
            );
            assert_eq!(e.code, crate::error::ExitCode::Usage, "{}", e.message);
            let e = OutputFile::claim(&bad, "-o", &[]).unwrap_err();
            assert!(
                e.message.contains("is in the result directory"),
                "{}",
                e.message
            );
        }
        assert_eq!(
            fs::read_to_string(run.join("counters.log")).unwrap(),
            "#cpu 0\n"
        );
        assert!(check_output_file(&base.path().join("r.html"), "-o", &[]).is_ok());
        // A run.json of another program's (not as jitterlab writes one) makes no result
        // directory: a directory above many others may hold one.
        let other = base.path().join("other");
        fs::create_dir_all(other.join("sub")).unwrap();
        fs::write(other.join(RUN_JSON), "{\"name\": \"build\"}").unwrap();
        assert!(check_output_file(&other.join("sub/r.html"), "-o", &[]).is_ok());
        assert!(check_output_dir(&other.join("plots"), "--plots", &[]).is_ok());
        for bad in [run.clone(), base.path().join("missing/r.html")] {
            assert!(
                check_output_file(&bad, "-o", &[]).is_err(),
                "{}",
                bad.display()
            );
        }
        assert!(check_output_dir(&base.path().join("plots/deeper"), "--plots", &[&run]).is_ok());
        let e = check_output_dir(&run.join("run.json/plots"), "--plots", &[]).unwrap_err();
        assert!(e.message.contains("not a directory"), "{}", e.message);
        let long = base.path().join("y".repeat(256));
        assert!(check_output_dir(&long, "--plots", &[]).is_err());
        // Never into an input or another result directory, also through a link (issue 39 L4).
        symlink(&run, base.path().join("to-run")).unwrap();
        for (plots, inputs, said) in [
            (run.clone(), vec![run.as_path()], "is in the input"),
            (run.join("loads"), vec![run.as_path()], "is in the input"),
            (
                run.join("plots/deeper"),
                vec![],
                "is in the result directory",
            ),
            (
                base.path().join("to-run/plots"),
                vec![],
                "is in the result directory",
            ),
        ] {
            let e = check_output_dir(&plots, "--plots", &inputs).unwrap_err();
            assert!(e.message.contains(said), "{}", e.message);
            assert_eq!(e.code, crate::error::ExitCode::Usage, "{}", e.message);
        }
        assert!(check_output_file(&long, "-o", &[]).is_err());
    }
}

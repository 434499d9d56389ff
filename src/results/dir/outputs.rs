//! The one writer of every file a user names outside a result directory (`report -o`,
//! `export -o`, `--plots`, the drop-ins' `--json` and `--histfile`). Each path is checked before
//! the command reads or measures anything (`output_checks.rs`; [`OutputFile::claim`] also opens
//! the file's directory then), and written so that no link another user planted is followed and
//! no existing file is truncated: the file is written whole into a new temporary file made
//! (O_EXCL, O_NOFOLLOW) in the target's directory through its descriptor, then renamed over the
//! target's name. A link at that name is replaced, never written through; a file hard-linked
//! elsewhere keeps its contents; two writers of one file leave one whole version, the last
//! renamed (issue 24 D06, D07, D17; issue 39 R01, R13). `tests/offline/writers.rs` fails when
//! code elsewhere opens a path for writing.

use super::*;
use crate::error::ExitCode;
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
    let (tmp, file) = (|| {
        for _ in 0..TEMP_NAME_ATTEMPTS {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let tmp = cstr(OsStr::new(&format!(
                ".{short}.{}-{n}.tmp",
                std::process::id()
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
    /// `-` of the drop-ins (`--json=-`): standard output.
    Stdout,
    /// A device or a pipe (`-o /dev/stdout`, `/dev/null`), held by an `O_PATH` descriptor:
    /// written in place.
    InPlace(OwnedFd),
    /// A file: written new in its directory (held open since the claim) and renamed over `name`.
    Replace { dir: OwnedFd, name: OsString },
}

/// Where `path` is written (see [`write_output`] for the rule): its directory is reached now,
/// following no other user's link (`resolve.rs`).
fn target_of(path: &Path) -> Result<Target, WalkError> {
    use crate::sys::path::{Kind, open_entry, open_entry_following, stat};
    let name = path.file_name().ok_or_else(|| {
        WalkError::Io(
            path.into(),
            io::Error::new(io::ErrorKind::InvalidInput, "names no file"),
        )
    })?;
    let dir = walk_dir(parent_of(path), true, None)?;
    if let Ok(entry) = open_entry(dir.fd.as_fd(), name)
        && let Ok(st) = stat(entry.as_fd())
    {
        match st.kind {
            Kind::Other => return Ok(Target::InPlace(entry)),
            // This user's or root's link to a device (`/dev/stdout`): the kernel follows it
            // (its target may be a pipe no path names); another user's link is replaced.
            Kind::Link if trusted_link_owner(st.uid) => {
                if let Ok(to) = open_entry_following(dir.fd.as_fd(), name)
                    && stat(to.as_fd()).is_ok_and(|t| t.kind == Kind::Other)
                {
                    return Ok(Target::InPlace(to));
                }
            }
            _ => {}
        }
    }
    Ok(Target::Replace {
        dir: dir.fd,
        name: name.to_os_string(),
    })
}

/// An output file a command names, claimed before the command reads or measures anything:
/// checked ([`check_output_file`]), its directory opened and found writable, on a file system
/// that holds files. Nothing is made on disk until [`OutputFile::write`], at the command's end.
#[derive(Debug)]
pub struct OutputFile {
    path: PathBuf,
    option: String,
    target: Target,
}

impl OutputFile {
    /// Claims `path` for `option` (e.g. `--json`, named in the messages), which must not be one
    /// of the files of the result directories `inputs`. Exit 2 for a path that cannot be
    /// written (no such directory, a directory, a result's own file, a pseudo file system),
    /// exit 3 when this user may not write its directory.
    pub fn claim(path: &Path, option: &str, inputs: &[&Path]) -> Result<OutputFile, Failure> {
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
        let target = target_of(path).map_err(|e| refuse(e.exit_code(), e.reason()))?;
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
        Ok(OutputFile {
            path: path.to_path_buf(),
            option: option.to_string(),
            target,
        })
    }

    /// As [`OutputFile::claim`], with `-` meaning standard output (rt-tests' `--json=-`).
    pub fn claim_or_stdout(path: &Path, option: &str) -> Result<OutputFile, Failure> {
        if path == Path::new("-") {
            return Ok(OutputFile {
                path: path.to_path_buf(),
                option: option.to_string(),
                target: Target::Stdout,
            });
        }
        Self::claim(path, option, &[])
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes the file whole (see the module's comment); a failure leaves what was at its name.
    pub fn write(&self, fill: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> io::Result<()> {
        match &self.target {
            Target::Stdout => {
                let mut out = io::stdout().lock();
                fill(&mut out)?;
                out.flush()
            }
            Target::InPlace(entry) => {
                // The very device or pipe claimed, reopened for writing without blocking (a
                // FIFO without a reader fails instead of hanging).
                let file = crate::sys::path::reopen_for_writing(entry.as_fd())?;
                let mut out = io::BufWriter::new(file);
                fill(&mut out)?;
                out.flush()
            }
            Target::Replace { dir, name } => write_replacing(dir.as_fd(), name, fill),
        }
    }

    /// [`OutputFile::write`] of `bytes`, a failure said as the option and path's (exit 4: the
    /// path was checked before, so what fails now is the disk).
    pub fn write_bytes(&self, bytes: &[u8]) -> Result<(), Failure> {
        self.write(|w| w.write_all(bytes)).map_err(|e| {
            Failure::run(format!(
                "cannot write {} {}: {e}",
                self.option,
                self.path.display()
            ))
        })
    }
}

/// Writes the output file `path` (see the module's comment) without a claim: for a file whose
/// path was checked by [`check_output_file`] and is written right after (the exports). Its
/// directory is reached following only this user's and root's links (`resolve.rs`); its last
/// name is never followed,
/// except to what is not a file: an existing device or pipe (`-o /dev/stdout`, `/dev/null`),
/// reached directly or by a link of this user's or root's, is written in place (replacing it
/// would destroy a device node; writing into it destroys no file). Another user's link is
/// replaced, never followed (it could name a disk).
pub fn write_output(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let target = target_of(path).map_err(|e| io::Error::other(e.reason()))?;
    OutputFile {
        path: path.to_path_buf(),
        option: String::new(),
        target,
    }
    .write(fill)
}

/// The directory `report --plots` writes into, held by its descriptor.
#[derive(Debug)]
pub struct OutputDir {
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

    /// Writes the file `name` in the directory whole (see the module's comment).
    pub fn write(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        write_replacing(self.fd.as_fd(), OsStr::new(name), |w| w.write_all(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;
    use std::os::unix::fs::symlink;

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
        // `-` is standard output where the option takes it so, else a file named `-`.
        let dash = OutputFile::claim_or_stdout(Path::new("-"), "--json").unwrap();
        assert!(matches!(dash.target, Target::Stdout));
        let null = OutputFile::claim(Path::new("/dev/null"), "--json", &[]).unwrap();
        assert!(matches!(null.target, Target::InPlace(_)));
        null.write_bytes(b"x").unwrap();
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
            let e = check_output_file(&bad, "-o", &[]).unwrap_err();
            assert!(e.message.contains("would destroy"), "{}", e.message);
        }
        assert!(check_output_file(&run.join("report.html"), "-o", &[]).is_ok());
        assert!(check_output_file(&base.path().join("r.html"), "-o", &[]).is_ok());
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

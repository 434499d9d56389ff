//! Making a result directory: a plain `mkdir` of a new name (with the parents it needs), opened
//! by descriptor and checked to be this process's.

use super::*;
use crate::error::ExitCode;
use crate::sys::errno;
use crate::sys::fs::{can_write_dir, pseudo_file_system};

/// Whether the directory that will hold a result directory is the user's choice (`--out`) or
/// jitterlab's (`./jitterlab-results` of the default name), which must then be safe from other
/// users: in a shared directory another user may have prepared it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Parent {
    AsGiven,
    Shared,
}

/// Why a directory could not be made.
pub(super) enum MakeError {
    /// Something is at the path already; the string says what.
    Exists(&'static str),
    /// The path has no final name (`/`, `..`).
    NoName,
    /// `-`, which means standard output wherever a user names an output
    /// (`outputs::means_stdout`), given for a directory.
    Dash,
    /// A missing parent could not be made.
    Parent(PathBuf, io::Error),
    /// The directory could not be made or opened.
    Io(io::Error),
    /// What was opened after `mkdir` is not what this process made (the name was replaced
    /// in between by another user).
    Replaced,
    /// A name or the path is longer than Linux allows; the string says which.
    TooLong(String),
    /// The nearest existing directory is on a pseudo file system (proc, sysfs...).
    PseudoFs(PathBuf, &'static str),
    /// The path is in this existing result or sweep directory (not one this process made).
    InResultDir(PathBuf),
    /// The default results directory is a link, or another user could replace what is in it;
    /// the string says why.
    Unsafe(PathBuf, String),
    /// A directory on the way could not be reached (another user's link, a loop...).
    Walk(WalkError),
}

impl MakeError {
    /// Exit 2 (the path is wrong: it exists, names nothing, is too long, is on a read-only
    /// file system), or exit 3 when this user is not allowed to make a directory there.
    pub(super) fn exit_code(&self) -> ExitCode {
        match self {
            MakeError::Parent(_, e) | MakeError::Io(e) => ExitCode::of_io(e, ExitCode::Usage),
            MakeError::Walk(e) => e.exit_code(),
            MakeError::Exists(_)
            | MakeError::NoName
            | MakeError::Dash
            | MakeError::Replaced
            | MakeError::TooLong(_)
            | MakeError::PseudoFs(..)
            | MakeError::InResultDir(_)
            | MakeError::Unsafe(..) => ExitCode::Usage,
        }
    }

    /// The failure for `option` (e.g. `--out`) at `path`, with its exit code.
    pub(super) fn failure(&self, option: &str, path: &Path) -> Failure {
        Failure::new(self.exit_code(), self.message(option, path, false))
    }

    /// As [`MakeError::failure`], for a default name the user did not give: the message names
    /// it as "the default result directory", not as an option the user never passed (ninth
    /// hostile re-run, L9-d), and says which option chooses another.
    pub(super) fn default_failure(&self, option: &str, path: &Path) -> Failure {
        Failure::new(self.exit_code(), self.message(option, path, true))
    }

    pub(super) fn message(&self, option: &str, path: &Path, default: bool) -> String {
        let (p, fix, option) = match default {
            false => (
                format!("{option} {}", path.display()),
                format!("pass {option} with a new directory in a writable place"),
                option.to_string(),
            ),
            true => {
                // What the user passes to choose another: the option's own word (`import
                // --out` is `--out`), with its value.
                let option = format!("{} DIR", option.rsplit(' ').next().unwrap_or(option));
                (
                    format!("the default result directory {}", path.display()),
                    format!(
                        "pass {option} to choose another result directory (a new one, in a writable place)"
                    ),
                    option,
                )
            }
        };
        match self {
            MakeError::Exists(what) => format!(
                "{p}: already exists ({what}); jitterlab makes a new directory for its results and never writes into an existing one or through a link; {fix}"
            ),
            MakeError::NoName => format!("{p}: names no new directory; {fix}"),
            MakeError::Dash => format!(
                "{p}: `-` means standard output, and this names a directory of results; {fix} (./- for a directory named `-`)"
            ),
            MakeError::Parent(parent, e) => format!(
                "{p}: its parent {} cannot be made or used: {}; {fix}",
                parent.display(),
                describe(e)
            ),
            MakeError::Io(e) => format!("{p}: cannot make it: {}; {fix}", describe(e)),
            MakeError::Replaced => {
                format!("{p}: was replaced by another user's directory while being made; {fix}")
            }
            MakeError::TooLong(why) => format!("{p}: {why}; {fix}"),
            MakeError::PseudoFs(dir, fs) => format!(
                "{p}: {} is on {fs}, a file system of kernel interfaces that holds no results; {fix}",
                dir.display()
            ),
            MakeError::Walk(e) => format!("{p}: {}; {fix}", e.reason()),
            MakeError::InResultDir(run) => format!(
                "{p}: is in the result directory {}: {}; {fix}, outside it",
                run.display(),
                output_checks::RESULT_DIR_RULE
            ),
            MakeError::Unsafe(dir, why) => format!(
                "{p}: {} {why}: another user could replace the results in it; remove or fix it (chown, chmod go-w), or pass {option} with a new directory in a place of your own",
                dir.display()
            ),
        }
    }
}

/// An I/O error, with what it means for a path when the system's words are terse.
pub(super) fn describe(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(errno::ENAMETOOLONG) => {
            format!("{e} (a name has at most 255 bytes, a path at most 4095)")
        }
        // mkdir in a directory that exists: a file system that makes no new entries.
        Some(errno::ENOENT) => {
            format!("{e} (a file system such as /proc that takes no new directories)")
        }
        _ => e.to_string(),
    }
}

/// The directory `path` would be made in ("." for a bare name).
pub(super) fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Everything that can be known about making `path` without making anything: the names fit,
/// the directories on the way are reached without another user's link (`resolve.rs`),
/// nothing is there, the nearest existing ancestor is a directory this user may write, on a
/// file system that holds files, and not in an existing result directory. The one check of a
/// real run and of `--dry-run` (issue 24 D09).
pub(super) fn check_new(path: &Path, kind: Parent) -> Result<(), MakeError> {
    if super::outputs::means_stdout(path) {
        return Err(MakeError::Dash);
    }
    output_checks::check_name_lengths(path).map_err(MakeError::TooLong)?;
    let name = path.file_name().ok_or(MakeError::NoName)?;
    let (at, missing) = walk_existing(parent_of(path), kind == Parent::AsGiven)
        .map_err(|e| walk_failure(e, kind))?;
    if missing.is_empty() && crate::sys::path::open_entry(at.fd.as_fd(), name).is_ok() {
        let what = fs::symlink_metadata(path).map_or("an entry", |m| existing_kind(path, &m));
        return Err(MakeError::Exists(what));
    }
    if kind == Parent::Shared {
        check_ancestors(&at).map_err(|(dir, why)| MakeError::Unsafe(dir, why))?;
    }
    let here = fd_path(at.fd.as_fd());
    if let Ok(Some(fs)) = pseudo_file_system(&here) {
        return Err(MakeError::PseudoFs(at.shown, fs));
    }
    // Never a result directory inside another's (issue 39 L3-g): one rule with the outputs',
    // but for a sweep's levels, made in the sweep directory this process writes.
    if let Some(run) = output_checks::enclosing_result_dir(&here)
        && !output_checks::is_own_sweep_dir(&run)
    {
        return Err(MakeError::InResultDir(run));
    }
    can_write_dir(&here).map_err(|e| MakeError::Parent(at.shown, e))
}

/// A lookup's failure for making a directory: a link at the default results directory is
/// [`MakeError::Unsafe`] as its other defects are; a directory on the way that is not one is
/// said as a parent that cannot be used.
fn walk_failure(e: WalkError, kind: Parent) -> MakeError {
    match e {
        WalkError::LastIsLink(at) if kind == Parent::Shared => {
            MakeError::Unsafe(at, "is a symbolic link".into())
        }
        WalkError::NotDir(at) => {
            MakeError::Parent(at, io::Error::from_raw_os_error(errno::ENOTDIR))
        }
        WalkError::Io(at, e) => MakeError::Parent(at, e),
        e => MakeError::Walk(e),
    }
}

/// Makes `path` and opens it; see [`ResultDir::create`].
pub(super) fn make(path: &Path, kind: Parent) -> Result<Claim, MakeError> {
    check_new(path, kind)?;
    let name = cstr(path.file_name().ok_or(MakeError::NoName)?).map_err(MakeError::Io)?;
    // From here on everything goes through descriptors: each name is looked up once.
    let mut made_parents = Vec::new();
    let parent = match walk_dir(
        parent_of(path),
        kind == Parent::AsGiven,
        Some(&mut made_parents),
    ) {
        Ok(parent) => parent,
        Err(e) => {
            unmake(&made_parents);
            return Err(walk_failure(e, kind));
        }
    };
    let undo = |e| {
        unmake(&made_parents);
        e
    };
    if kind == Parent::Shared {
        // Again on what was opened: a name may have been replaced since the check above.
        check_ancestors(&parent).map_err(|(dir, why)| undo(MakeError::Unsafe(dir, why)))?;
    }
    let parent_fd = parent.fd;
    // Mode 0755 (the umask may take more away), never group- or world-writable: no other user
    // adds entries (say, links) while the run writes into it.
    if let Err(e) = make_dir_at(parent_fd.as_fd(), &name, 0o755) {
        return Err(undo(match e.raw_os_error() {
            Some(errno::EEXIST) => MakeError::Exists("made by another process just now"),
            _ => MakeError::Io(e),
        }));
    }
    // Between mkdir and open, another user who can write the parent could have put a link or a
    // directory of theirs in its place: a link is not followed, and what is ours is owned by us.
    let opened = openat_dir(parent_fd.as_fd(), &name).and_then(|fd| Ok((owner(fd.as_fd())?, fd)));
    let me = crate::sys::process::effective_user_id();
    let fd = match opened {
        Ok((uid, fd)) if uid == me => fd,
        Ok(_) => return Err(undo(MakeError::Replaced)),
        Err(e) => {
            // Only an empty directory is removed, so never someone else's files.
            let _ = unlink_at(parent_fd.as_fd(), &name, Entry::Dir);
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

/// What is at `path` already, in words.
pub(super) fn existing_kind(path: &Path, meta: &fs::Metadata) -> &'static str {
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

/// Removes everything inside the directory `dir`, never following a link.
pub(super) fn remove_contents(dir: BorrowedFd) -> io::Result<()> {
    // The directory as the descriptor holds it, even if it was renamed meanwhile.
    for entry in fs::read_dir(format!("/proc/self/fd/{}", dir.as_raw_fd()))? {
        let entry = entry?;
        let name = cstr(&entry.file_name())?;
        if entry.file_type()?.is_dir() {
            let sub = openat_dir(dir, &name)?;
            remove_contents(sub.as_fd())?;
            unlink_at(dir, &name, Entry::Dir)?;
        } else {
            unlink_at(dir, &name, Entry::File)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_directory_is_never_made_inside_another_but_its_own_levels_are() {
        let base = tempfile::tempdir().unwrap();
        // Another run's directory (not made by this process), as a run leaves it.
        let theirs = base.path().join("run");
        fs::create_dir_all(theirs.join("snapshots")).unwrap();
        fs::write(theirs.join(RUN_JSON), "{\n  \"format\": 1\n}\n").unwrap();
        for path in [theirs.join("sub"), theirs.join("snapshots/a/b")] {
            // Issue 39 L3-g: `run --out RUN/sub` made a result directory inside a run.
            let e = ResultDir::check_new(&path, "--out").unwrap_err();
            assert_eq!(e.code, ExitCode::Usage, "{}", e.message);
            assert!(
                e.message.contains("is in the result directory"),
                "{}",
                e.message
            );
            let e = ResultDir::create(&path, "--out").unwrap_err();
            assert!(
                e.message.contains("is in the result directory"),
                "{}",
                e.message
            );
        }
        assert!(!theirs.join("sub").exists() && !theirs.join("snapshots/a").exists());
        // A sweep's levels: result directories made inside the sweep directory that this
        // process made, after its sweep.json was written.
        let sweep = ResultDir::create(&base.path().join("sweep"), "--out")
            .unwrap()
            .keep();
        sweep
            .replace_file(crate::results::sweep::FILE_NAME, b"{\n  \"format\": 1\n}\n")
            .unwrap();
        let level = ResultDir::create(&sweep.file("level-2"), "--out").unwrap();
        assert!(level.dir().path.is_dir());
        // Outputs are no exception: only the run's own writers write into it.
        let e = check_output_file(&sweep.file("r.html"), "-o", &[]).unwrap_err();
        assert!(
            e.message.contains("is in the result directory"),
            "{}",
            e.message
        );
    }
}

//! The checks of output paths (`report -o`, `export -o`, `--plots`, the drop-ins' `--json` and
//! `--histfile`, and where a result directory is made), made before anything is read, measured
//! or written (exit 2): names not too long, the directory there, never into a result directory
//! at any depth (its files are what its run wrote: issue 39 N10, L3-g), never one of an input's
//! files under another name (a hard link), never another user's FIFO (issue 24 D06, D07;
//! issue 39 N7, R13).

use super::*;
use std::os::unix::fs::MetadataExt;

/// The regular files under `dir` (a result or sweep directory: level directories and loads/
/// within), down to `depth` levels, links not followed: (device, inode) and path.
fn files_under(dir: &Path, depth: u32, out: &mut Vec<((u64, u64), PathBuf)>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(meta) = entry.metadata() else { continue };
        if meta.is_file() {
            out.push(((meta.dev(), meta.ino()), entry.path()));
        } else if meta.is_dir() && depth > 0 {
            files_under(&entry.path(), depth - 1, out);
        }
    }
}

/// Refuses an output path that is one of the input runs' files under another name: a hard
/// link (or a link to it), compared by device and inode, not by name.
fn check_not_an_input(path: &Path, option: &str, inputs: &[&Path]) -> Result<(), Failure> {
    let Ok(target) = fs::metadata(path) else {
        return Ok(());
    };
    let id = (target.dev(), target.ino());
    for input in inputs {
        let mut files = Vec::new();
        // A sweep directory holds level directories, each with loads/: three levels down.
        files_under(input, 3, &mut files);
        if let Some((_, file)) = files.iter().find(|(f, _)| *f == id) {
            // Said as it is (issue 39 L3): the file itself, a symbolic link to it, or a hard
            // link (another name of the same inode).
            let how = if fs::symlink_metadata(path).is_ok_and(|m| m.is_symlink()) {
                " through a symbolic link"
            } else if fs::canonicalize(path).ok() == fs::canonicalize(file).ok() {
                ""
            } else {
                " under another name (a hard link to it)"
            };
            return Err(Failure::usage(format!(
                "{option} {}: is the file {} of the input {}{how}; writing it would destroy the results; pass {option} with another file",
                path.display(),
                file.display(),
                input.display()
            )));
        }
    }
    Ok(())
}

/// The sweep directories this process writes (it wrote their sweep.json), held by their
/// descriptors: the one exception to "no result directory is made in another", for the sweep
/// making its own levels (`level-N/` result directories inside the sweep directory). Held, so
/// that their inodes cannot be another directory's while compared. Output files have no
/// exception.
static OWN_SWEEP_DIRS: std::sync::Mutex<Vec<Arc<OwnedFd>>> = std::sync::Mutex::new(Vec::new());

/// Notes the directory `fd` as a sweep directory this process writes (mod.rs, at its
/// sweep.json).
pub(super) fn note_own_sweep_dir(fd: &Arc<OwnedFd>) {
    let mut own = OWN_SWEEP_DIRS.lock().unwrap_or_else(|p| p.into_inner());
    if !own.iter().any(|o| Arc::ptr_eq(o, fd)) {
        own.push(Arc::clone(fd));
    }
}

/// Whether `dir` is a sweep directory this process writes.
pub(super) fn is_own_sweep_dir(dir: &Path) -> bool {
    let Ok(meta) = fs::metadata(dir) else {
        return false;
    };
    let own = OWN_SWEEP_DIRS.lock().unwrap_or_else(|p| p.into_inner());
    own.iter().any(|fd| {
        crate::sys::path::stat(fd.as_fd())
            .is_ok_and(|st| (st.dev, st.ino) == (meta.dev(), meta.ino()))
    })
}

/// How many bytes of a marker file are read to recognise it.
const MARKER_HEAD_BYTES: usize = 256;

/// Whether `dir` is a result directory or a sweep directory: it holds a regular file run.json
/// or sweep.json (not a link) that begins as every one jitterlab writes does, a JSON object
/// whose first member is `"format"` (result-format.md, "What jitterlab promises"): a run.json
/// of another program's does not make a directory, and every directory below it, a result
/// directory. And only a directory that jitterlab could have made: one that no one but its
/// owner may write (jitterlab makes them 0755), with the marker of that owner. Otherwise any
/// user could plant `/tmp/run.json` and have every output under /tmp refused (issue 39, fourth
/// hostile re-run): a marker in a directory others may write says nothing about who put it there.
pub(super) fn is_result_dir(dir: &Path) -> bool {
    let Ok(meta) = fs::metadata(dir) else {
        return false;
    };
    if meta.mode() & 0o022 != 0 {
        return false;
    }
    std::iter::once(RUN_JSON)
        .chain(crate::results::CONTAINER_RECORDS)
        .any(|marker| is_marker(&dir.join(marker), meta.uid()))
}

/// Whether `path` is a marker file of user `owner`.
fn is_marker(path: &Path, owner: u32) -> bool {
    use std::io::Read;
    // Through the reader of a result directory's files: never blocking (a FIFO of that name),
    // never through a link, a regular file or nothing.
    let Ok(file) = crate::input::open_result_file(path) else {
        return false;
    };
    if !file.metadata().is_ok_and(|m| m.uid() == owner) {
        return false;
    }
    let mut head = Vec::with_capacity(MARKER_HEAD_BYTES);
    if file
        .take(MARKER_HEAD_BYTES as u64)
        .read_to_end(&mut head)
        .is_err()
    {
        return false;
    }
    let text = String::from_utf8_lossy(&head);
    text.trim_start()
        .strip_prefix('{')
        .is_some_and(|rest| rest.trim_start().starts_with("\"format\""))
}

/// The result or sweep directory that the existing directory `dir` is, or is in at any depth
/// (its real path's ancestors, links resolved, so that no link is a way in): the nearest one;
/// None when there is none.
pub(super) fn enclosing_result_dir(dir: &Path) -> Option<PathBuf> {
    let real = fs::canonicalize(dir).ok()?;
    real.ancestors()
        .find(|a| is_result_dir(a))
        .map(Path::to_path_buf)
}

/// Why nothing is written into a result directory, for the messages that refuse it.
pub(super) const RESULT_DIR_RULE: &str = "a result directory holds only what its run wrote: no command writes into one afterwards, at any depth, so that no output can replace or add to a run's files";

/// Checks an output file path before anything is read or written (exit 2): its name is not
/// too long, it is not a directory, its directory exists, it is not in a result directory at
/// any depth (`report RUN -o RUN/run.json` would destroy the run, `-o B/counters.log` another
/// run's), also when reached through a link, and what is at its name may be written (the rule
/// of [`super::write_output`]: not another user's FIFO).
pub(crate) fn check_output_file(
    path: &Path,
    option: &str,
    inputs: &[&Path],
) -> Result<(), Failure> {
    // Standard output, not a file (`outputs::means_stdout`).
    if super::outputs::means_stdout(path) {
        return Ok(());
    }
    check_not_an_input(path, option, inputs)?;
    let refuse = |why: String| {
        Failure::usage(format!(
            "{option} {}: {why}; pass {option} with another file",
            path.display()
        ))
    };
    check_name_lengths(path).map_err(refuse)?;
    refuse_foreign_links(parent_of(path), option, path)?;
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
    if let Some(run) = real.parent().and_then(enclosing_result_dir) {
        return Err(refuse(format!(
            "is in the result directory {}: {RESULT_DIR_RULE}",
            run.display()
        )));
    }
    // What is at the name (another user's FIFO, a socket...): the writer's own rule, said now.
    super::outputs::check_target(path).map_err(|(code, why)| {
        Failure::new(
            code,
            format!(
                "{option} {}: {why}; pass {option} with another file",
                path.display()
            ),
        )
    })
}

/// Checks an output directory path that is made if missing (`report --plots DIR`) before
/// anything is written (exit 2): names not too long, not an existing non-directory, its
/// nearest existing ancestor a directory, and not in one of the `inputs` or any other result
/// or sweep directory (issue 39 L4: a result directory holds what jitterlab made when it made
/// it, and nothing is written into an input).
pub(crate) fn check_output_dir(path: &Path, option: &str, inputs: &[&Path]) -> Result<(), Failure> {
    let refuse = |why: String| {
        Failure::usage(format!(
            "{option} {}: {why}; pass {option} with a directory (made if missing)",
            path.display()
        ))
    };
    if super::outputs::means_stdout(path) {
        return Err(refuse(
            "`-` means standard output, and this names a directory (./- for one named `-`)".into(),
        ));
    }
    check_name_lengths(path).map_err(refuse)?;
    refuse_foreign_links(parent_of(path), option, path)?;
    if fs::symlink_metadata(path).is_ok_and(|m| m.is_symlink()) {
        return Err(Failure::usage(link_refusal(path, option)));
    }
    let mut at = Some(path);
    while let Some(p) = at.filter(|p| !p.as_os_str().is_empty()) {
        match fs::metadata(p) {
            Ok(m) if m.is_dir() => {
                return match result_dir_holding(p, inputs) {
                    Some(why) => Err(refuse(format!("{why}: {RESULT_DIR_RULE}"))),
                    None => Ok(()),
                };
            }
            Ok(_) => return Err(refuse(format!("{} is not a directory", p.display()))),
            Err(_) if fs::symlink_metadata(p).is_ok() => {
                return Err(refuse(format!("{} is a dangling link", p.display())));
            }
            Err(_) => at = p.parent(),
        }
    }
    Ok(())
}

/// Which input, or other result or sweep directory, holds the existing directory `dir` (is
/// it, or an ancestor of it), said for a refusal; None when none does. Compared by the real
/// paths (links resolved), so that a link to an input is no way in.
fn result_dir_holding(dir: &Path, inputs: &[&Path]) -> Option<String> {
    let real = fs::canonicalize(dir).ok()?;
    for input in inputs {
        if let Ok(input_real) = fs::canonicalize(input)
            && input_real.is_dir()
            && real.starts_with(&input_real)
        {
            return Some(format!("is in the input {}", input.display()));
        }
    }
    enclosing_result_dir(&real).map(|a| format!("is in the result directory {}", a.display()))
}

/// Refuses (exit 2) an output path whose directory `dir` is reached only through another
/// user's link or too many links (`resolve.rs`): said before anything is read or measured.
/// What else a lookup finds wrong (a directory missing) the other checks say in their words.
fn refuse_foreign_links(dir: &Path, option: &str, path: &Path) -> Result<(), Failure> {
    match walk_existing(dir, true) {
        Err(e @ (WalkError::ForeignLink(..) | WalkError::TooManyLinks(_))) => Err(Failure::new(
            e.exit_code(),
            format!(
                "{option} {}: {}; pass {option} with another path",
                path.display(),
                e.reason()
            ),
        )),
        _ => Ok(()),
    }
}

/// NAME_MAX and PATH_MAX of Linux, checked before anything is written.
pub(super) fn check_name_lengths(path: &Path) -> Result<(), String> {
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

pub(super) fn link_refusal(path: &Path, option: &str) -> String {
    format!(
        "{option} {}: is a symbolic link or not a directory; jitterlab writes plots only into a directory itself, never through a link; pass {option} with a directory (made if missing)",
        path.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A marker makes a result directory only where its owner alone may write: a run.json
    /// planted in a world-writable directory (/tmp) or one of another user's does not.
    #[test]
    fn a_marker_counts_only_in_a_directory_its_owner_alone_may_write() {
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("shared");
        fs::create_dir(&dir).unwrap();
        fs::write(dir.join(RUN_JSON), "{\"format\": 1}").unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        assert!(is_result_dir(&dir));
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o1777)).unwrap();
        assert!(!is_result_dir(&dir), "a sticky world-writable directory");
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o775)).unwrap();
        assert!(!is_result_dir(&dir), "a group-writable directory");
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        // Another user's marker in this user's directory (only root can make one here).
        if crate::sys::process::effective_user_id() == 0 {
            std::os::unix::fs::chown(dir.join(RUN_JSON), Some(65534), None).unwrap();
            assert!(!is_result_dir(&dir), "another user's marker");
        }
    }
}

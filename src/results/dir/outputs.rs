//! Output files (`report -o`, `export -o`, `--plots`): checked before anything is written,
//! refusing a result directory's own files (also through a symbolic or a hard link), and
//! written so that no link another user planted is followed and no existing file is truncated:
//! each file is written whole into a new temporary file made (O_EXCL, O_NOFOLLOW) in the
//! target's directory through its descriptor, then renamed over the target's name. A link at
//! that name is replaced, never written through; a file hard-linked elsewhere keeps its
//! contents; two writers of one file leave one whole version, the last renamed (issue 24 D06,
//! D07, D17).

use super::*;
use std::os::unix::fs::MetadataExt;

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

/// Writes the output file `path` (see the module's comment). Its directory is the one the user
/// named (links in it followed); its last name is never followed, except to what is not a
/// file: an existing device or pipe (`-o /dev/stdout`, `/dev/null`), reached directly or by a
/// link of this user's or root's, is written in place (replacing it would destroy a device
/// node; writing into it destroys no file). Another user's link is replaced, never followed
/// (it could name a disk).
pub fn write_output(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    if let Ok(lmeta) = fs::symlink_metadata(path) {
        let me = crate::sys::process::effective_user_id();
        let trusted_link = lmeta.is_symlink() && (lmeta.uid() == me || lmeta.uid() == 0);
        let target = if trusted_link {
            fs::metadata(path).ok()
        } else {
            Some(lmeta.clone())
        };
        if let Some(t) = target
            && !t.is_file()
            && !t.is_dir()
            && !t.is_symlink()
        {
            use std::os::unix::fs::OpenOptionsExt;
            // Non-blocking open: a FIFO without a reader fails instead of hanging.
            let file = fs::OpenOptions::new()
                .write(true)
                .custom_flags(crate::sys::file::O_NONBLOCK)
                .open(path)?;
            crate::sys::file::set_blocking(std::os::fd::AsRawFd::as_raw_fd(&file))?;
            let mut out = io::BufWriter::new(file);
            fill(&mut out)?;
            return out.flush();
        }
    }
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "names no file"))?;
    let dir = open_dir(parent_of(path))?;
    write_replacing(dir.as_fd(), name, fill)
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
                crate::error::ExitCode::of_io(&e, crate::error::ExitCode::Usage),
                format!(
                    "{option} {}: {}; pass {option} with a directory (made if missing)",
                    path.display(),
                    create::describe(&e)
                ),
            )
        };
        if fs::symlink_metadata(path).is_err() {
            fs::create_dir_all(parent_of(path)).map_err(fail)?;
            match crate::sys::fs::make_dir(path, 0o755) {
                Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(fail(e)),
                _ => {}
            }
        }
        let fd = open_dir_nofollow(path).map_err(|e| match e.raw_os_error() {
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

fn link_refusal(path: &Path, option: &str) -> String {
    format!(
        "{option} {}: is a symbolic link or not a directory; jitterlab writes plots only into a directory itself, never through a link; pass {option} with a directory (made if missing)",
        path.display()
    )
}

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
            return Err(Failure::usage(format!(
                "{option} {}: is the file {} of the input {} under another name (a hard link to it); writing it would destroy the results; pass {option} with another file",
                path.display(),
                file.display(),
                input.display()
            )));
        }
    }
    Ok(())
}

/// The names a result directory (holding run.json) or a sweep directory (holding sweep.json)
/// uses for its own files and folders.
pub(super) fn is_own_file(name: &OsStr) -> bool {
    use crate::format::{hlog, samplelog};
    [
        RUN_JSON,
        ".run.json.tmp",
        hlog::FILE_NAME,
        samplelog::FILE_NAME,
        crate::format::events::FILE_NAME,
        crate::format::SCENARIO_COPY,
        crate::format::LOAD_LOG_DIR,
        crate::results::sweep::FILE_NAME,
        crate::results::sweep::CSV_FILE_NAME,
    ]
    .iter()
    .any(|own| OsStr::new(own) == name)
        || name.to_str().is_some_and(|n| {
            // A log's summary is named after the log (`latency.hlog.summary`).
            let log = n
                .strip_suffix(crate::format::summary::FILE_SUFFIX)
                .unwrap_or(n);
            log == hlog::FILE_NAME
                || crate::format::segments::parse_file_name(log).is_some()
                || crate::format::segments::parse_events_file_name(n).is_some()
        })
}

/// Whether `dir` is a result directory or a sweep directory.
pub(super) fn is_result_dir(dir: &Path) -> bool {
    dir.join(RUN_JSON).is_file() || dir.join(crate::results::sweep::FILE_NAME).is_file()
}

/// Checks an output file path before anything is read or written (exit 2): its name is not
/// too long, it is not a directory, its directory exists, and it is not one of a result
/// directory's own files (`report RUN -o RUN/run.json` would destroy the run), also when
/// reached through a link.
pub fn check_output_file(path: &Path, option: &str, inputs: &[&Path]) -> Result<(), Failure> {
    check_not_an_input(path, option, inputs)?;
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
            && dir.file_name() == Some(OsStr::new(crate::format::LOAD_LOG_DIR));
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
    if fs::symlink_metadata(path).is_ok_and(|m| m.is_symlink()) {
        return Err(Failure::usage(link_refusal(path, option)));
    }
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

#[cfg(test)]
mod tests {
    use super::*;
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
        assert!(check_output_dir(&base.path().join("plots/deeper"), "--plots").is_ok());
        let e = check_output_dir(&run.join("run.json/plots"), "--plots").unwrap_err();
        assert!(e.message.contains("not a directory"), "{}", e.message);
        let long = base.path().join("y".repeat(256));
        assert!(check_output_dir(&long, "--plots").is_err());
        assert!(check_output_file(&long, "-o", &[]).is_err());
    }
}

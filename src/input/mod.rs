//! Files that jitterlab reads whole (import sources, scenario files, run.json, sweep.json):
//! read with a size cap, checked to be UTF-8 text, a leading byte-order mark
//! removed. One reader, so that every input behaves the same: a FIFO or a device (`/dev/zero`,
//! a terminal) is refused before a byte is read, a pipe that never ends or a multi-gigabyte
//! file after at most `max_bytes + 1` bytes instead of growing without bound, and a BOM written
//! by an editor never changes how a file is parsed.
//! The caps are documented in docs/user-guide.md ("Input limits"), a table of every file and
//! request a command reads with its limits, checked against the constants by
//! `spec_quotes_the_code` (a test of the whole crate).
//! events.jsonl, which can be gigabytes, is not read whole: `format::events::scan_events` opens
//! it here ([`open`]) and streams it a line at a time, with the same checks.

/// The most read of run.json or sweep.json: a run with the most scenario phases on 64 CPUs
/// writes about 250 MiB.
pub(crate) const RESULT_RECORD_MAX_BYTES: u64 = 1 << 30;
/// The most read of events.jsonl: a spike load at its default rate logs about 130 MiB a day. It
/// is streamed a line at a time (`format::events::scan_events`): the cap bounds the time.
pub(crate) const EVENTS_MAX_BYTES: u64 = 4 << 30;

pub(crate) mod json_values;
pub(crate) use json_values::check_counts;

use std::fmt;
use std::io::Read;
use std::path::Path;

/// Why a file could not be read as text. The caller names the file and the option.
#[derive(Debug)]
pub(crate) enum ReadError {
    Io(std::io::Error),
    /// Not what `source` accepts: `what` it is (a FIFO, a device, a directory).
    NotAFile {
        what: &'static str,
        source: Source,
    },
    /// A file of the kernel's interfaces (on proc, sysfs, tracefs...): not a saved file, and
    /// some are streams that a read consumes for their other readers (`/proc/kmsg`, tracefs's
    /// `trace_pipe`). Refused before a byte is read.
    KernelFile {
        file_system: &'static str,
    },
    /// A result directory's file that is a symbolic link (never followed: another user may
    /// have planted it).
    Link,
    /// A symbolic link of another user (neither this one nor root) on the way to the file:
    /// the words of [`walk_trusted`].
    ForeignLink(String),
    /// A directory on the way to a result directory that another user owns, or may write
    /// without a sticky bit: they could put another run (this user's private one) under the
    /// name while it is read ([`open_result_dir`]). The words, naming it and why.
    ForeignDir(String),
    /// More than `max_bytes` bytes (or a pipe that kept giving them).
    TooLarge {
        max_bytes: u64,
    },
    /// Not UTF-8; `offset` is the first byte that is not.
    NotText {
        offset: usize,
    },
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Io(e) => write!(f, "cannot read it: {e}"),
            ReadError::NotAFile {
                what,
                source: Source::ResultFile,
            } => write!(
                f,
                "it is {what}, not a regular file (a result directory holds only files jitterlab wrote)"
            ),
            ReadError::NotAFile {
                what,
                source: Source::UserFile,
            } => write!(f, "it is {what}, not a regular file; pass a regular file"),
            ReadError::NotAFile {
                what,
                source: Source::Stream,
            } => write!(
                f,
                "it is {what}, not a regular file (its reader could wait for ever); pass a regular file, or a command's output through your shell's pipe (`<(ssh board cat FILE)`)"
            ),
            ReadError::KernelFile { file_system } => write!(
                f,
                "it is a file of the kernel's interfaces (on {file_system}), not a saved file; nothing was read from it (a kernel stream such as /proc/kmsg or trace_pipe gives what it holds to one reader only, and reading it would take the kernel log or trace from its other readers); save what you mean to read to a file first and pass that file"
            ),
            ReadError::Link => write!(
                f,
                "it is a symbolic link (a result directory holds only files jitterlab wrote; a link is never followed)"
            ),
            ReadError::ForeignLink(why) | ReadError::ForeignDir(why) => f.write_str(why),
            ReadError::TooLarge { max_bytes } => write!(
                f,
                "it is larger than {}, the most jitterlab reads from such a file",
                format_bytes(*max_bytes)
            ),
            ReadError::NotText { offset } => {
                write!(f, "it is not UTF-8 text (byte {offset} is not valid UTF-8)")
            }
        }
    }
}

impl From<ReadError> for std::io::Error {
    /// For readers that return `io::Result`: an I/O error stays one (NotFound stays NotFound),
    /// the rest is invalid data with the words above.
    fn from(e: ReadError) -> Self {
        match e {
            ReadError::Io(e) => e,
            other => std::io::Error::new(std::io::ErrorKind::InvalidData, other.to_string()),
        }
    }
}

/// What a reader accepts at a path; see [`open`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// A file of a result directory (run.json, latency.hlog, samples.bin...): a regular file,
    /// not a link.
    ResultFile,
    /// A file the user named that must be a regular file (`--scenario`); a link is followed.
    UserFile,
    /// An import source: a regular file, or an anonymous pipe the caller's shell made (`import
    /// <(ssh board cat out.json)`, `... | jitterlab import /dev/stdin`), read until its writer
    /// closes it; a link is followed. A named FIFO is refused (whoever may write its directory
    /// could have made it and hold it open without writing: the read would wait for ever), and
    /// so is a device (a terminal waits for typing; `/dev/zero` never ends).
    Stream,
}

/// How many links [`walk_trusted`] follows (the kernel's MAXSYMLINKS).
const MAX_LINKS: u32 = 40;

/// Opens `path` for reading as `source` allows. The one way jitterlab opens a file it reads
/// (`tests/offline/readers.rs` fails on a read of a path elsewhere): the open never blocks (a
/// FIFO with no writer does not hang it), and what is not allowed (anything but a regular file,
/// but for the anonymous pipe of a [`Source::Stream`]; a link in a result directory) is refused
/// from the open descriptor's `fstat` (and `fstatfs`), before a byte is read, so that no read
/// waits on a FIFO or a device. An anonymous pipe is read blocking from then on: it is the
/// caller's own command's output, read to its end as `cat` would (SIGINT ends the wait).
pub(crate) fn open(path: &Path, source: Source) -> Result<std::fs::File, ReadError> {
    use std::os::fd::AsRawFd;
    let follow = source != Source::ResultFile;
    // The path is looked up one component at a time through descriptors, following only this
    // user's and root's links, and the file opened is the one reached: no second lookup by
    // path that another user could redirect in between (eighth hostile re-run, I1: a link
    // swapped in after the check was followed, 44 times in 1000). A result directory's file
    // is opened relative to the descriptor of its directory ([`open_result_entry`]).
    let opened = match follow {
        true => {
            let fd = walk_trusted(path, Dirs::Any)?;
            crate::sys::fs::open_read_nonblocking(
                Path::new(&format!("/proc/self/fd/{}", fd.as_raw_fd())),
                true,
            )
        }
        false => open_result_entry(path),
    };
    let file = opened.map_err(|e| {
        if !follow && e.raw_os_error() == Some(crate::sys::errno::ELOOP) {
            ReadError::Link
        } else if e.raw_os_error() == Some(crate::sys::errno::ENXIO) && socket_at(path, follow) {
            // A socket cannot be opened (ENXIO, "No such device or address"): a socket on
            // standard input is `/dev/stdin` -> `/proc/self/fd/0` (issue 39 L4-b).
            ReadError::NotAFile {
                what: "a socket",
                source,
            }
        } else {
            ReadError::Io(e)
        }
    })?;
    use std::os::fd::AsFd;
    let meta = file.metadata().map_err(ReadError::Io)?;
    let t = meta.file_type();
    if t.is_file()
        && let Some(file_system) =
            crate::sys::fs::pseudo_file_system_of(file.as_fd()).map_err(ReadError::Io)?
    {
        return Err(ReadError::KernelFile { file_system });
    }
    if !t.is_file() {
        use std::os::unix::fs::FileTypeExt;
        let what = if t.is_dir() {
            "a directory"
        } else if t.is_fifo() {
            "a FIFO (named pipe)"
        } else if t.is_char_device() || t.is_block_device() {
            "a device"
        } else if t.is_socket() {
            "a socket"
        } else {
            "not a file"
        };
        let anonymous_pipe = source == Source::Stream
            && t.is_fifo()
            && crate::sys::fs::is_anonymous_pipe(file.as_fd()).map_err(ReadError::Io)?;
        if !anonymous_pipe {
            return Err(ReadError::NotAFile { what, source });
        }
        crate::sys::file::set_blocking(file.as_raw_fd()).map_err(ReadError::Io)?;
    }
    Ok(file)
}

/// `path` looked up one component at a time (`O_PATH|O_NOFOLLOW` descriptors): a link is
/// followed only when it is this user's or root's (another user's is refused, as
/// inputs follow no other user's link: issue 39, sixth re-run, L6-c), at most [`MAX_LINKS`] of them; a link in /proc
/// (`/dev/stdin` -> `/proc/self/fd/0`, a pipe no path names) is followed by the kernel, from
/// the descriptor of its directory. Returns an `O_PATH` descriptor of what the path names,
/// which is then opened through `/proc/self/fd`: the file checked is the file read.
fn walk_trusted(path: &Path, dirs: Dirs) -> Result<std::os::fd::OwnedFd, ReadError> {
    use crate::sys::path::{Kind, open_entry, open_entry_following, open_start, read_link, stat};
    use std::collections::VecDeque;
    use std::ffi::OsString;
    use std::os::fd::AsFd;
    use std::path::{Component, PathBuf};
    let io = ReadError::Io;
    let errno = |n: i32| ReadError::Io(std::io::Error::from_raw_os_error(n));
    let components = |p: &Path| -> Vec<OsString> {
        p.components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n.to_os_string()),
                Component::ParentDir => Some("..".into()),
                _ => None,
            })
            .collect()
    };
    let mut at = open_start(path.has_root()).map_err(io)?;
    let mut shown = match path.has_root() {
        true => PathBuf::from("/"),
        false => PathBuf::new(),
    };
    let mut todo: VecDeque<OsString> = components(path).into();
    let mut links = 0;
    if path.as_os_str().is_empty() {
        return Err(errno(crate::sys::errno::ENOENT));
    }
    while let Some(name) = todo.pop_front() {
        let here = shown.join(&name);
        if dirs == Dirs::Trusted {
            let st = stat(at.as_fd()).map_err(io)?;
            if let Some(why) = open_to_others(&st) {
                let dir = match shown.as_os_str().is_empty() {
                    true => std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
                    false => shown.clone(),
                };
                return Err(ReadError::ForeignDir(format!(
                    "{} {why}: whoever may rename its entries could put another run (your own private one) under the name {} while jitterlab reads it, into an output anyone may read; read it as that user, or copy the run into a directory of your own (cp -r) and pass that",
                    dir.display(),
                    path.display()
                )));
            }
        }
        let fd = open_entry(at.as_fd(), &name).map_err(io)?;
        let st = stat(fd.as_fd()).map_err(io)?;
        match st.kind {
            Kind::Link => {
                let to = read_link(fd.as_fd()).map_err(io)?;
                let me = crate::sys::process::effective_user_id();
                if st.uid != me && st.uid != 0 {
                    return Err(ReadError::ForeignLink(format!(
                        "{} is a symbolic link of {} (to {}), neither yours nor root's: jitterlab reads through no other user's link, since its owner chooses what you read (your own private files, into a report anyone may read); if you trust it, pass the path it leads to",
                        here.display(),
                        crate::sys::process::user_in_words(st.uid),
                        Path::new(&to).display()
                    )));
                }
                links += 1;
                if links > MAX_LINKS {
                    return Err(errno(crate::sys::errno::ELOOP));
                }
                // A link of /proc (a process's fd, `self`): its target may be a kernel object
                // no path names; the kernel follows it from the directory held.
                if crate::sys::fs::pseudo_file_system_of(at.as_fd()).map_err(io)? == Some("proc") {
                    let followed = open_entry_following(at.as_fd(), &name).map_err(io)?;
                    if todo.is_empty() {
                        return Ok(followed);
                    }
                    at = followed;
                    shown = here;
                    continue;
                }
                let target = Path::new(&to);
                if target.has_root() {
                    at = open_start(true).map_err(io)?;
                    shown = PathBuf::from("/");
                }
                for c in components(target).into_iter().rev() {
                    todo.push_front(c);
                }
                if todo.is_empty() {
                    // A link to `/`.
                    return Ok(at);
                }
            }
            _ if todo.is_empty() => return Ok(fd),
            Kind::Dir => {
                at = fd;
                shown = here;
            }
            Kind::File | Kind::Other => return Err(errno(crate::sys::errno::ENOTDIR)),
        }
    }
    Ok(at)
}

/// Which directories [`walk_trusted`] looks names up in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dirs {
    /// Any directory (a file the user names: only the links on the way are judged).
    Any,
    /// Only directories no other user can rename entries of ([`open_to_others`]): on the way
    /// to a result directory.
    Trusted,
}

/// Why another user could rename the entries of the directory `st` (it is theirs, neither
/// this user's, root's, nor, for root under sudo, the sudo user's; or its group or all may
/// write it and it has no sticky bit, whoever owns it); None when no other user can.
fn open_to_others(st: &crate::sys::path::Stat) -> Option<String> {
    let me = crate::sys::process::effective_user_id();
    let sudo_user = me == 0
        && std::env::var("SUDO_UID")
            .ok()
            .and_then(|s| s.parse::<u32>().ok())
            == Some(st.uid);
    if st.uid != me && st.uid != 0 && !sudo_user {
        return Some(format!(
            "belongs to {} (not you, nor root)",
            crate::sys::process::user_in_words(st.uid)
        ));
    }
    if st.mode & 0o022 != 0 && st.mode & 0o1000 == 0 {
        return Some(format!(
            "is writable by other users (mode {:04o}, no sticky bit)",
            st.mode & 0o7777
        ));
    }
    None
}

/// A result directory opened: the path it was named by, and its descriptor.
type Registered = (std::path::PathBuf, std::sync::Arc<std::os::fd::OwnedFd>);

/// The result directories this process opened ([`open_result_dir`]): the path each was named
/// by and its descriptor. Every file of one is opened relative to that descriptor
/// ([`open_result_entry`]), so that the files read are the directory's that was checked,
/// whatever is renamed on the way meanwhile (ninth hostile re-run, I1-dir: `export` checked
/// the path, then read the sample log by path, and read root's private run through a link
/// swapped in between, 339 times in 800). Kept for the life of the process: one entry per
/// path, a path opened again replaced.
static RESULT_DIRS: std::sync::Mutex<Vec<Registered>> = std::sync::Mutex::new(Vec::new());

/// Opens the result directory `path` (it must be a directory; its contents are the caller's
/// to check) and registers its descriptor for every read of a file in it. The path is looked
/// up one component at a time through descriptors ([`walk_trusted`]): a link is followed only
/// when it is this user's or root's, and a name is looked up only in a directory that no other
/// user may rename entries of (owned by this user, root, or the sudo user; not writable by
/// others without a sticky bit): another user's directory on the way is refused, whoever's
/// run it holds.
pub(crate) fn open_result_dir(
    path: &Path,
) -> Result<std::sync::Arc<std::os::fd::OwnedFd>, ReadError> {
    use std::os::fd::AsFd;
    let reached = walk_trusted(path, Dirs::Trusted)?;
    // From the O_PATH descriptor of what was reached, a descriptor that lists it; not a
    // directory (a file, a device): ENOTDIR.
    let fd = crate::sys::fs::openat_dir(reached.as_fd(), c".").map_err(ReadError::Io)?;
    let fd = std::sync::Arc::new(fd);
    let mut dirs = RESULT_DIRS.lock().unwrap_or_else(|e| e.into_inner());
    dirs.retain(|(p, _)| p != path);
    dirs.push((path.to_path_buf(), fd.clone()));
    Ok(fd)
}

/// The registered result directory `path` is in (the deepest one), its descriptor and the
/// components of `path` below it.
fn registered_dir_of(
    path: &Path,
) -> Option<(
    std::sync::Arc<std::os::fd::OwnedFd>,
    Vec<std::ffi::OsString>,
)> {
    let dirs = RESULT_DIRS.lock().unwrap_or_else(|e| e.into_inner());
    dirs.iter()
        .filter_map(|(dir, fd)| {
            let rest = path.strip_prefix(dir).ok()?;
            let names: Vec<_> = rest
                .components()
                .map(|c| match c {
                    std::path::Component::Normal(n) => Some(n.to_os_string()),
                    _ => None,
                })
                .collect::<Option<_>>()?;
            (!names.is_empty()).then(|| (dir.components().count(), fd.clone(), names))
        })
        .max_by_key(|(depth, _, _)| *depth)
        .map(|(_, fd, names)| (fd, names))
}

/// Opens the result directory's file `path` for reading (non-blocking, no link followed at
/// any depth below the directory): relative to the descriptor of the registered result
/// directory it is in ([`open_result_dir`]), each subdirectory with `O_NOFOLLOW`; a path in no
/// registered directory (a sweep's or a tune's record, the head of a would-be output's
/// marker) relative to its parent's descriptor, reached as [`walk_trusted`] reaches it. Never
/// a lookup by path that a link swapped in meanwhile could redirect.
fn open_result_entry(path: &Path) -> std::io::Result<std::fs::File> {
    use crate::sys::fs::{cstr, open_read_at, openat_dir};
    use std::os::fd::AsFd;
    let invalid = || std::io::Error::from_raw_os_error(crate::sys::errno::EINVAL);
    if let Some((dir, names)) = registered_dir_of(path) {
        let (last, subdirs) = names.split_last().ok_or_else(invalid)?;
        let mut held: Option<std::os::fd::OwnedFd> = None;
        for name in subdirs {
            let at = held.as_ref().map_or(dir.as_fd(), |f| f.as_fd());
            held = Some(openat_dir(at, &cstr(name)?)?);
        }
        let at = held.as_ref().map_or(dir.as_fd(), |f| f.as_fd());
        return open_read_at(at, &cstr(last)?, false);
    }
    let name = path.file_name().ok_or_else(invalid)?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let dir = walk_trusted(parent, Dirs::Any).map_err(std::io::Error::from)?;
    open_read_at(dir.as_fd(), &cstr(name)?, false)
}

/// Whether the result directory's entry `path` is there (opened as [`open_result_entry`]
/// opens it: a link there counts, for its reader to refuse it by name; a missing one does not).
pub(crate) fn result_entry_exists(path: &Path) -> bool {
    match open_result_entry(path) {
        Ok(_) => true,
        Err(e) => !matches!(
            e.raw_os_error(),
            Some(crate::sys::errno::ENOENT) | Some(crate::sys::errno::ENOTDIR)
        ),
    }
}

/// The size in bytes of the result directory's file `path`, 0 when it cannot be opened.
pub(crate) fn result_file_len(path: &Path) -> u64 {
    open_result_entry(path)
        .and_then(|f| f.metadata())
        .map_or(0, |m| m.len())
}

/// The names in the result directory `path` (registered by [`open_result_dir`]: listed
/// through its descriptor).
pub(crate) fn list_result_dir(path: &Path) -> std::io::Result<Vec<std::ffi::OsString>> {
    use std::os::fd::AsRawFd;
    let fd = {
        let dirs = RESULT_DIRS.lock().unwrap_or_else(|e| e.into_inner());
        dirs.iter()
            .find(|(p, _)| p == path)
            .map(|(_, fd)| fd.clone())
    };
    let fd = match fd {
        Some(fd) => fd,
        None => open_result_dir(path)?,
    };
    // `/proc/self/fd/N` is the very directory held, not a lookup of its path.
    std::fs::read_dir(format!("/proc/self/fd/{}", fd.as_raw_fd()))?
        .map(|e| e.map(|e| e.file_name()))
        .collect()
}

/// Whether `path` (its last link followed when `follow`) is a socket.
fn socket_at(path: &Path, follow: bool) -> bool {
    use std::os::unix::fs::FileTypeExt;
    let meta = if follow {
        std::fs::metadata(path)
    } else {
        std::fs::symlink_metadata(path)
    };
    meta.is_ok_and(|m| m.file_type().is_socket())
}

/// Opens a result directory's file for reading (see [`open`], [`Source::ResultFile`]), for the
/// readers that return `io::Result`.
pub(crate) fn open_result_file(path: &Path) -> std::io::Result<std::fs::File> {
    Ok(open(path, Source::ResultFile)?)
}

/// Reads a result directory's file whole as bytes, at most `max_bytes` (see [`open`]).
pub(crate) fn read_result_bytes(path: &Path, max_bytes: u64) -> std::io::Result<Vec<u8>> {
    Ok(read_raw(path, max_bytes, Source::ResultFile)?)
}

/// Reads the file at `path` as text, at most `max_bytes` of it, without a leading UTF-8 BOM:
/// for tests (`import` reads bytes, [`read_bytes`], and makes text of them, [`text_from_bytes`]).
/// An anonymous pipe is accepted (`import <(ssh board cat out.json)`); a named FIFO or a device
/// is refused ([`Source::Stream`]).
#[cfg(test)]
pub(crate) fn read_text(path: &Path, max_bytes: u64) -> Result<String, ReadError> {
    read(path, max_bytes, Source::Stream)
}

/// Reads as text (as `read_text`) a file the user named that must be a regular file
/// (`--scenario`): a FIFO or a device is refused before reading.
pub(crate) fn read_user_file(path: &Path, max_bytes: u64) -> Result<String, ReadError> {
    read(path, max_bytes, Source::UserFile)
}

/// Reads as text (as `read_text`) a file of a result directory, which jitterlab wrote as a
/// regular file: anything else (a link, a FIFO, a device) is refused before reading.
pub(crate) fn read_result_file(path: &Path, max_bytes: u64) -> Result<String, ReadError> {
    read(path, max_bytes, Source::ResultFile)
}

fn read(path: &Path, max_bytes: u64, source: Source) -> Result<String, ReadError> {
    text_from_bytes(read_raw(path, max_bytes, source)?)
}

/// Reads the import source at `path` as bytes, at most `max_bytes` of it (a text format's are
/// made text by [`text_from_bytes`]). An anonymous pipe is accepted ([`Source::Stream`]).
pub(crate) fn read_bytes(path: &Path, max_bytes: u64) -> Result<Vec<u8>, ReadError> {
    read_raw(path, max_bytes, Source::Stream)
}

/// What the readers of text make of the bytes they read: UTF-8 text without a leading BOM.
pub(crate) fn text_from_bytes(bytes: Vec<u8>) -> Result<String, ReadError> {
    let mut text = String::from_utf8(bytes).map_err(|e| ReadError::NotText {
        offset: e.utf8_error().valid_up_to(),
    })?;
    if text.starts_with('\u{feff}') {
        text.drain(..'\u{feff}'.len_utf8());
    }
    Ok(text)
}

fn read_raw(path: &Path, max_bytes: u64, source: Source) -> Result<Vec<u8>, ReadError> {
    let file = open(path, source)?;
    let meta = file.metadata().map_err(ReadError::Io)?;
    // A regular file's size is known: refuse it without reading. A pipe is read up
    // to one byte past the cap, which bounds both the time and the memory.
    if meta.is_file() && meta.len() > max_bytes {
        return Err(ReadError::TooLarge { max_bytes });
    }
    let mut bytes = Vec::new();
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() as u64 > max_bytes {
        return Err(ReadError::TooLarge { max_bytes });
    }
    Ok(bytes)
}

/// `64 MiB`, `512 KiB`, `100 bytes`: a cap as the documentation states it.
pub(crate) fn format_bytes(n: u64) -> String {
    for (shift, unit) in [(30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if n >= 1 << shift && n.is_multiple_of(1 << shift) {
            return format!("{} {unit}", n >> shift);
        }
    }
    format!("{n} bytes")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Eighth hostile re-run, I1: another user swaps her link to a private file in and out of
    /// a name while the name is read. The lookup that judges the link is the one that opens:
    /// the private file is never read, whatever the timing (checked then opened by path, 17
    /// reads in 600 went through her link). As root, the link given to `nobody` (lchown);
    /// 20 000 opens against a thread renaming as fast as it can. About a second.
    #[test]
    fn a_link_swapped_in_while_the_name_is_read_is_never_followed() {
        use std::os::unix::fs::{MetadataExt, symlink};
        if crate::sys::process::effective_user_id() != 0 {
            eprintln!("skipped: needs root to give a link to another user");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "secret").unwrap();
        let secret_ino = std::fs::metadata(&secret).unwrap().ino();
        let decoy = dir.path().join("decoy");
        std::fs::write(&decoy, "decoy").unwrap();
        let name = dir.path().join("x");
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let swapper = {
            let (dir, secret, decoy, name, stop) = (
                dir.path().to_path_buf(),
                secret.clone(),
                decoy.clone(),
                name.clone(),
                stop.clone(),
            );
            std::thread::spawn(move || {
                let (file, link) = (dir.join("x.file"), dir.join("x.link"));
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let _ = std::fs::remove_file(&file);
                    let _ = std::fs::hard_link(&decoy, &file);
                    let _ = std::fs::rename(&file, &name);
                    let _ = std::fs::remove_file(&link);
                    let _ = symlink(&secret, &link);
                    let _ = std::os::unix::fs::lchown(&link, Some(65534), Some(65534));
                    let _ = std::fs::rename(&link, &name);
                }
            })
        };
        let (mut read, mut refused) = (0, 0);
        for _ in 0..20_000 {
            match open(&name, Source::UserFile) {
                Ok(f) => {
                    assert_ne!(
                        f.metadata().unwrap().ino(),
                        secret_ino,
                        "read through the other user's link"
                    );
                    read += 1;
                }
                Err(_) => refused += 1,
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        swapper.join().unwrap();
        eprintln!("{read} read the decoy, {refused} refused");
    }

    #[test]
    fn strips_a_bom_and_keeps_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "\u{feff}{\"a\": 1}\n").unwrap();
        assert_eq!(read_text(&path, 100).unwrap(), "{\"a\": 1}\n");
        // Only a leading BOM is a BOM.
        std::fs::write(&path, "a\u{feff}").unwrap();
        assert_eq!(read_text(&path, 100).unwrap(), "a\u{feff}");
    }

    #[test]
    fn refuses_what_is_too_large_or_never_ends() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, [b'x'; 101]).unwrap();
        let e = read_text(&path, 100).unwrap_err();
        assert!(matches!(e, ReadError::TooLarge { max_bytes: 100 }), "{e}");
        std::fs::write(&path, [b'x'; 100]).unwrap();
        assert_eq!(read_text(&path, 100).unwrap().len(), 100);
        // A pipe that never ends is read one byte past the cap, then refused.
        let mut yes = std::process::Command::new("yes")
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::os::fd::AsRawFd;
        let pipe = format!("/proc/self/fd/{}", yes.stdout.as_ref().unwrap().as_raw_fd());
        let e = read_text(Path::new(&pipe), 1 << 20).unwrap_err();
        assert!(e.to_string().contains("larger than 1 MiB"), "{e}");
        yes.kill().unwrap();
        yes.wait().unwrap();
    }

    #[test]
    fn result_files_must_be_regular_files() {
        let e = read_result_file(Path::new("/dev/zero"), 1 << 30).unwrap_err();
        assert!(matches!(e, ReadError::NotAFile { .. }), "{e}");
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            read_result_file(dir.path(), 100).unwrap_err(),
            ReadError::NotAFile { .. }
        ));
        let path = dir.path().join("run.json");
        std::fs::write(&path, "{}").unwrap();
        assert_eq!(read_result_file(&path, 100).unwrap(), "{}");
    }

    fn mkfifo(path: &Path) {
        let made = std::process::Command::new("mkfifo").arg(path).status();
        assert!(made.unwrap().success(), "mkfifo {}", path.display());
    }

    #[test]
    fn a_fifo_never_blocks_and_a_result_files_link_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("samples.bin");
        mkfifo(&fifo);
        // No writer: a blocking open would wait forever. Not even an import source may be a
        // named FIFO: its maker could hold it open without writing (N12).
        for source in [Source::ResultFile, Source::UserFile, Source::Stream] {
            let e = open(&fifo, source).unwrap_err();
            assert!(e.to_string().contains("a FIFO (named pipe)"), "{e}");
        }
        let file = dir.path().join("run.json");
        std::fs::write(&file, "{}").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(matches!(read_result_file(&link, 100), Err(ReadError::Link)));
        assert_eq!(read_user_file(&link, 100).unwrap(), "{}");
    }

    /// N12 (issue 39): a named FIFO whose writer holds it open without writing made `import`
    /// wait until it was signalled; it is refused before a byte is read, and so is a device. An
    /// anonymous pipe (the shell's `<(command)`) is still read to its end.
    #[test]
    fn an_import_source_is_a_regular_file_or_an_anonymous_pipe() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("in.json");
        mkfifo(&fifo);
        // Its writer holds it open and never writes: a read would wait for ever.
        let writer = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&fifo)
            .unwrap();
        let (done, waited) = std::sync::mpsc::channel();
        let path = fifo.clone();
        std::thread::spawn(move || done.send(read_bytes(&path, 100).map(drop)));
        let got = waited
            .recv_timeout(std::time::Duration::from_secs(5))
            .expect("the read of a held FIFO returns at once");
        let e = got.unwrap_err();
        assert!(
            e.to_string()
                .starts_with("it is a FIFO (named pipe), not a regular file"),
            "{e}"
        );
        drop(writer);
        for device in ["/dev/zero", "/dev/null"] {
            let e = read_bytes(Path::new(device), 100).unwrap_err();
            assert!(e.to_string().starts_with("it is a device"), "{device}: {e}");
        }
        // An anonymous pipe, as `<(printf ...)` gives one: read to its end.
        let mut printf = std::process::Command::new("printf")
            .arg("{\"a\": 1}")
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::os::fd::AsRawFd;
        let pipe = format!(
            "/proc/self/fd/{}",
            printf.stdout.as_ref().unwrap().as_raw_fd()
        );
        assert_eq!(read_text(Path::new(&pipe), 100).unwrap(), "{\"a\": 1}");
        printf.wait().unwrap();
    }

    /// L4-b (issue 39): a socket on standard input read "No such device or address (os error
    /// 6)", and /proc/kmsg or trace_pipe "Resource temporarily unavailable": each is now said
    /// as what it is, refused before a byte is read.
    #[test]
    fn a_socket_or_a_kernel_stream_is_said_as_such() {
        use std::os::fd::AsRawFd;
        let (ours, _theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        let stdin_like = format!("/proc/self/fd/{}", ours.as_raw_fd());
        let dir = tempfile::tempdir().unwrap();
        let named = dir.path().join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&named).unwrap();
        for path in [Path::new(&stdin_like), named.as_path()] {
            let e = read_bytes(path, 100).unwrap_err();
            assert!(
                e.to_string()
                    .starts_with("it is a socket, not a regular file")
                    && e.to_string().contains("pipe"),
                "{}: {e}",
                path.display()
            );
        }
        // Kernel interface files: refused by their file system before reading (a read of
        // /proc/kmsg or trace_pipe would take the kernel log or trace from its other readers).
        for (path, fs) in [
            ("/proc/self/status", "proc"),
            ("/proc/kmsg", "proc"),
            ("/sys/kernel/tracing/trace_pipe", "tracefs"),
        ] {
            match read_bytes(Path::new(path), 1 << 20) {
                Err(ReadError::KernelFile { file_system }) => assert_eq!(file_system, fs),
                // Not there, or not this user's to open: said as the kernel says it.
                Err(ReadError::Io(e)) if path != "/proc/self/status" => {
                    eprintln!("{path}: {e}")
                }
                other => panic!("{path}: {other:?}"),
            }
        }
        let e = read_bytes(Path::new("/proc/self/status"), 1 << 20).unwrap_err();
        assert!(e.to_string().contains("(on proc), not a saved file"), "{e}");
    }

    #[test]
    fn says_where_a_file_stops_being_text() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"abc\xffdef").unwrap();
        let e = read_text(&path, 100).unwrap_err();
        assert!(e.to_string().contains("byte 3"), "{e}");
    }

    #[test]
    fn formats_caps_in_binary_units() {
        assert_eq!(format_bytes(64 << 20), "64 MiB");
        assert_eq!(format_bytes(4 << 10), "4 KiB");
        assert_eq!(format_bytes(1 << 30), "1 GiB");
        assert_eq!(format_bytes(1000), "1000 bytes");
    }
}

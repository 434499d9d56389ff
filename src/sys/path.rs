//! Looking a path up one component at a time through directory descriptors (`O_PATH`), so that
//! the caller decides about every symbolic link on the way instead of the kernel following it:
//! the primitives of `results::dir`'s resolver (issue 39 F1).

use super::fs::cstr;
use std::ffi::{CStr, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;

/// What an entry is, as far as a path's lookup cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Dir,
    Link,
    File,
    /// A device, a FIFO or a socket.
    Other,
}

/// What a [`Kind::Other`] entry is, from its `mode`: for a writer deciding whether to write into
/// it in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Special {
    Fifo,
    Socket,
    CharDevice,
    BlockDevice,
}

impl Special {
    /// The kind of the entry of `mode` ([`Stat::mode`]); None for a file, directory or link.
    pub(crate) fn of(mode: u32) -> Option<Special> {
        match mode & libc::S_IFMT {
            libc::S_IFIFO => Some(Special::Fifo),
            libc::S_IFSOCK => Some(Special::Socket),
            libc::S_IFCHR => Some(Special::CharDevice),
            libc::S_IFBLK => Some(Special::BlockDevice),
            _ => None,
        }
    }

    /// In words, with its article ("a FIFO").
    pub(crate) fn words(self) -> &'static str {
        match self {
            Special::Fifo => "a FIFO",
            Special::Socket => "a socket",
            Special::CharDevice => "a character device",
            Special::BlockDevice => "a block device",
        }
    }
}

/// The facts of an entry a resolver needs: its kind and owner, and its identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub kind: Kind,
    pub uid: u32,
    pub mode: u32,
    pub(crate) dev: u64,
    pub(crate) ino: u64,
}

/// A descriptor (`O_PATH`) of the root directory, or of the working directory: where a
/// lookup starts.
pub(crate) fn open_start(absolute: bool) -> io::Result<OwnedFd> {
    let at: &CStr = if absolute { c"/" } else { c"." };
    // SAFETY: valid C string.
    owned(unsafe {
        libc::open(
            at.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    })
}

/// The entry `name` of `dir` as a descriptor (`O_PATH`), never following a link: a link is
/// opened itself, for [`stat`] to say whose it is and [`read_link`] where it points. Needs
/// search permission on `dir` only.
pub(crate) fn open_entry(dir: BorrowedFd, name: &OsStr) -> io::Result<OwnedFd> {
    let c = cstr(name)?;
    // SAFETY: valid descriptor and C string.
    owned(unsafe {
        libc::openat(
            dir.as_raw_fd(),
            c.as_ptr(),
            libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    })
}

/// The entry `name` of `dir` as a descriptor (`O_PATH`), the kernel following a link there
/// (and every link its target names): only for a link already judged trustworthy, whose
/// target may be a kernel object no path names (`/dev/stdout` -> `/proc/self/fd/1` -> a pipe).
pub(crate) fn open_entry_following(dir: BorrowedFd, name: &OsStr) -> io::Result<OwnedFd> {
    let c = cstr(name)?;
    // SAFETY: valid descriptor and C string.
    owned(unsafe { libc::openat(dir.as_raw_fd(), c.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) })
}

/// The kind, owner and identity of an open entry (an `O_PATH` descriptor included).
pub fn stat(fd: BorrowedFd) -> io::Result<Stat> {
    // SAFETY: an all-zero stat is a valid out-buffer.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid descriptor, empty C string and out-pointer (AT_EMPTY_PATH: the descriptor
    // itself, which fstat refuses for an O_PATH descriptor of a link on older kernels).
    super::check(unsafe {
        libc::fstatat(
            fd.as_raw_fd(),
            c"".as_ptr(),
            &mut st,
            libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
        )
    })?;
    let kind = match st.st_mode & libc::S_IFMT {
        libc::S_IFDIR => Kind::Dir,
        libc::S_IFLNK => Kind::Link,
        libc::S_IFREG => Kind::File,
        _ => Kind::Other,
    };
    // st_dev and st_ino are 32 bits on some 32-bit targets: widened.
    #[allow(clippy::useless_conversion)]
    Ok(Stat {
        kind,
        uid: st.st_uid,
        mode: st.st_mode as u32,
        dev: u64::from(st.st_dev),
        ino: u64::from(st.st_ino),
    })
}

/// Where the link held by `fd` (from [`open_entry`]) points, as written in it.
pub(crate) fn read_link(fd: BorrowedFd) -> io::Result<OsString> {
    // PATH_MAX: the kernel stores no longer target.
    let mut buf = vec![0u8; 4096];
    // SAFETY: valid descriptor, empty C string, and a buffer of that length.
    let n = unsafe {
        libc::readlinkat(
            fd.as_raw_fd(),
            c"".as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate(n as usize);
    Ok(OsString::from_vec(buf))
}

/// A descriptor of the directory `fd` (an `O_PATH` one) that reads it (`O_RDONLY`): what a
/// directory listing needs.
#[cfg(test)]
pub(crate) fn reopen_dir(fd: BorrowedFd) -> io::Result<OwnedFd> {
    // SAFETY: valid descriptor and C string.
    owned(unsafe {
        libc::openat(
            fd.as_raw_fd(),
            c".".as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    })
}

/// A descriptor that writes the device or FIFO `fd` (an `O_PATH` one) in place, opened and
/// left non-blocking (a FIFO without a reader fails at once, ENXIO, instead of hanging; a write
/// into a full pipe says EAGAIN, for the writer to wait with a bound of its choosing), through
/// `/proc/self/fd`, which reopens the very entry that was looked up, not a path.
pub(crate) fn reopen_for_writing(fd: BorrowedFd) -> io::Result<std::fs::File> {
    let path = std::ffi::CString::new(format!("/proc/self/fd/{}", fd.as_raw_fd()))
        .expect("no NUL in a number");
    // SAFETY: valid C string.
    owned(unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_WRONLY | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    })
    .map(std::fs::File::from)
}

fn owned(fd: libc::c_int) -> io::Result<OwnedFd> {
    let fd = super::check(fd)?;
    // SAFETY: a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn a_link_is_opened_itself_and_read() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("d")).unwrap();
        std::os::unix::fs::symlink("d/../d", tmp.path().join("l")).unwrap();
        let root = open_start(true).unwrap();
        assert_eq!(stat(root.as_fd()).unwrap().kind, Kind::Dir);
        let mut at = root;
        for c in tmp.path().iter().skip(1) {
            at = open_entry(at.as_fd(), c).unwrap();
        }
        let link = open_entry(at.as_fd(), OsStr::new("l")).unwrap();
        let st = stat(link.as_fd()).unwrap();
        assert_eq!(st.kind, Kind::Link);
        assert_eq!(st.uid, super::super::process::effective_user_id());
        assert_eq!(read_link(link.as_fd()).unwrap(), "d/../d");
        let d = open_entry(at.as_fd(), OsStr::new("d")).unwrap();
        assert_eq!(stat(d.as_fd()).unwrap().kind, Kind::Dir);
        reopen_dir(d.as_fd()).unwrap();
        let null = open_entry(open_start(true).unwrap().as_fd(), OsStr::new("dev")).unwrap();
        let null = open_entry(null.as_fd(), OsStr::new("null")).unwrap();
        assert_eq!(stat(null.as_fd()).unwrap().kind, Kind::Other);
        use std::io::Write;
        reopen_for_writing(null.as_fd())
            .unwrap()
            .write_all(b"x")
            .unwrap();
    }
}

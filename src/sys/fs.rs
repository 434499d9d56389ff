//! Paths and directory descriptors: opening, making, renaming and removing entries relative to
//! a directory's descriptor (never through a path that a link could redirect), owners, locks,
//! access checks and free space.

use std::ffi::{CStr, CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// A name or path as a C string.
pub(crate) fn cstr(s: &OsStr) -> io::Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| io::Error::other("a name with a NUL byte"))
}

/// A fresh descriptor from a libc return value, owned from here on.
fn owned(fd: libc::c_int) -> io::Result<OwnedFd> {
    let fd = super::check(fd)?;
    // SAFETY: a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Opens a directory (following links: a path the user gave).
#[cfg(test)]
pub(crate) fn open_dir(path: &Path) -> io::Result<OwnedFd> {
    let c = cstr(path.as_os_str())?;
    // SAFETY: valid C string.
    owned(unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    })
}

/// Opens a directory, refusing a link in its last component.
pub(crate) fn open_dir_nofollow(path: &Path) -> io::Result<OwnedFd> {
    let c = cstr(path.as_os_str())?;
    // SAFETY: valid C string.
    owned(unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    })
}

/// Opens `path` for reading without blocking (a FIFO with no writer opens at once instead of
/// waiting for one) and, unless `follow`, refusing a link in its last component. Reads on a
/// FIFO or device stay non-blocking until [`super::file::set_blocking`].
pub(crate) fn open_read_nonblocking(path: &Path, follow: bool) -> io::Result<File> {
    let c = cstr(path.as_os_str())?;
    let nofollow = if follow { 0 } else { libc::O_NOFOLLOW };
    // SAFETY: valid C string.
    owned(unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC | nofollow,
        )
    })
    .map(File::from)
}

/// Whether the open descriptor `fd` is an anonymous pipe (`pipe(2)`, a shell's `|` or
/// `<(command)`: its inode is on pipefs) rather than a FIFO with a name in a file system, which
/// whoever may write its directory could have made.
// The f_type field is __fsword_t (i64 on 64-bit glibc, i32 elsewhere).
#[allow(clippy::useless_conversion, clippy::unnecessary_cast)]
pub(crate) fn is_anonymous_pipe(fd: BorrowedFd) -> io::Result<bool> {
    /// PIPEFS_MAGIC of linux/magic.h.
    const PIPEFS_MAGIC: i64 = 0x5049_5045;
    // SAFETY: an all-zero statfs is a valid out-buffer.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a descriptor the caller holds open and a valid out-pointer.
    super::check(unsafe { libc::fstatfs(fd.as_raw_fd(), &mut st) })?;
    Ok(i64::from(st.f_type as i64) & 0xffff_ffff == PIPEFS_MAGIC)
}

/// The pseudo file systems that hold no results (their files are the kernel's interfaces),
/// by `statfs` magic number (linux/magic.h): a directory cannot be made there, or one made
/// there is not a place for data.
const PSEUDO_FILE_SYSTEMS: &[(i64, &str)] = &[
    (0x9fa0, "proc"),
    (0x6265_6572, "sysfs"),
    (0x0027_e0eb, "cgroup"),
    (0x6367_7270, "cgroup2"),
    (0x7472_6163, "tracefs"),
    (0x6462_6720, "debugfs"),
    (0x1cd1, "devpts"),
    (0x7363_6673, "securityfs"),
    (0xcafe_4a11, "bpf"),
    (0x6165_676c, "pstore"),
    (0x6265_6570, "configfs"),
    (0x6573_5543, "fusectl"),
    (0xde5e_81e4, "efivarfs"),
    (0x1980_0202, "mqueue"),
];

/// The name of the pseudo file system (proc, sysfs...) holding `path`, or None for any other.
// The f_type field is __fsword_t (i64 on 64-bit glibc, i32 elsewhere): widened for the table.
#[allow(clippy::useless_conversion, clippy::unnecessary_cast)]
pub(crate) fn pseudo_file_system(path: &Path) -> io::Result<Option<&'static str>> {
    let c = cstr(path.as_os_str())?;
    // SAFETY: an all-zero statfs is a valid out-buffer.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: valid C string and out-pointer.
    super::check(unsafe { libc::statfs(c.as_ptr(), &mut st) })?;
    // Magic numbers are 32-bit; a signed 32-bit f_type holds 0xcafe4a11 as a negative number.
    let magic = i64::from(st.f_type as i64) & 0xffff_ffff;
    Ok(PSEUDO_FILE_SYSTEMS
        .iter()
        .find(|(m, _)| *m == magic)
        .map(|(_, name)| *name))
}

/// The name of the pseudo file system (proc, sysfs, tracefs...) holding the open file `fd`,
/// or None for any other (see [`pseudo_file_system`]).
#[allow(clippy::useless_conversion, clippy::unnecessary_cast)]
pub(crate) fn pseudo_file_system_of(fd: BorrowedFd) -> io::Result<Option<&'static str>> {
    // SAFETY: an all-zero statfs is a valid out-buffer.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a descriptor the caller holds open and a valid out-pointer.
    super::check(unsafe { libc::fstatfs(fd.as_raw_fd(), &mut st) })?;
    let magic = i64::from(st.f_type as i64) & 0xffff_ffff;
    Ok(PSEUDO_FILE_SYSTEMS
        .iter()
        .find(|(m, _)| *m == magic)
        .map(|(_, name)| *name))
}

/// Opens the directory `name` in `dir`, refusing a link.
pub(crate) fn openat_dir(dir: BorrowedFd, name: &CStr) -> io::Result<OwnedFd> {
    // SAFETY: valid descriptor and C string.
    owned(unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    })
}

/// Makes the new file `name` in `dir` for appending (mode 0666 less the umask), refusing an
/// existing entry and a link.
pub(crate) fn create_new_at(dir: BorrowedFd, name: &CStr) -> io::Result<File> {
    // SAFETY: valid descriptor and C string.
    owned(unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            libc::O_WRONLY
                | libc::O_APPEND
                | libc::O_CREAT
                | libc::O_EXCL
                | libc::O_NOFOLLOW
                | libc::O_CLOEXEC,
            0o666 as libc::c_uint,
        )
    })
    .map(File::from)
}

/// Opens the existing file `name` in `dir` for writing, refusing a link.
pub(crate) fn open_write_at(dir: BorrowedFd, name: &CStr) -> io::Result<File> {
    // SAFETY: valid descriptor and C string.
    owned(unsafe {
        libc::openat(
            dir.as_raw_fd(),
            name.as_ptr(),
            libc::O_WRONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    })
    .map(File::from)
}

/// Opens the regular file `name` in `dir` read-only without blocking (on a FIFO) or following
/// a link; `create` makes it (mode 0644) and refuses an existing one.
pub(crate) fn open_read_at(dir: BorrowedFd, name: &CStr, create: bool) -> io::Result<File> {
    let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;
    // SAFETY: valid descriptor and C string.
    owned(unsafe {
        if create {
            libc::openat(
                dir.as_raw_fd(),
                name.as_ptr(),
                flags | libc::O_CREAT | libc::O_EXCL,
                0o644 as libc::c_uint,
            )
        } else {
            libc::openat(dir.as_raw_fd(), name.as_ptr(), flags)
        }
    })
    .map(File::from)
}

/// A read-write file in directory `dir` with no name (O_TMPFILE, mode 0600).
pub(crate) fn anonymous_file_in(dir: &Path) -> io::Result<File> {
    let c = cstr(dir.as_os_str())?;
    // SAFETY: valid C string.
    owned(unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_TMPFILE | libc::O_RDWR | libc::O_CLOEXEC,
            0o600,
        )
    })
    .map(File::from)
}

/// A read-write file with no name in the directory `dir` (O_TMPFILE, mode 0600): written and
/// locked before [`link_anonymous_at`] gives it a name, so that it appears whole or not at all.
pub(crate) fn anonymous_file_at(dir: BorrowedFd) -> io::Result<File> {
    // SAFETY: valid descriptor and C string.
    owned(unsafe {
        libc::openat(
            dir.as_raw_fd(),
            c".".as_ptr(),
            libc::O_TMPFILE | libc::O_RDWR | libc::O_CLOEXEC,
            0o600 as libc::c_uint,
        )
    })
    .map(File::from)
}

/// Gives the nameless file `file` (from [`anonymous_file_at`]) the name `name` in `dir`;
/// EEXIST when the name is taken (an existing entry is never replaced).
pub(crate) fn link_anonymous_at(file: BorrowedFd, dir: BorrowedFd, name: &CStr) -> io::Result<()> {
    // Through /proc/self/fd with AT_SYMLINK_FOLLOW: AT_EMPTY_PATH would need
    // CAP_DAC_READ_SEARCH.
    let from =
        CString::new(format!("/proc/self/fd/{}", file.as_raw_fd())).expect("no NUL in a number");
    // SAFETY: valid descriptors and C strings.
    super::check(unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            from.as_ptr(),
            dir.as_raw_fd(),
            name.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    })
    .map(drop)
}

/// Makes the directory `path` with `mode` (less the umask).
pub(crate) fn make_dir(path: &Path, mode: u32) -> io::Result<()> {
    let c = cstr(path.as_os_str())?;
    // SAFETY: valid C string.
    super::check(unsafe { libc::mkdir(c.as_ptr(), mode as libc::mode_t) }).map(drop)
}

/// Makes the directory `name` in `dir` with `mode` (less the umask).
pub(crate) fn make_dir_at(dir: BorrowedFd, name: &CStr, mode: u32) -> io::Result<()> {
    // SAFETY: valid descriptor and C string.
    super::check(unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), mode as libc::mode_t) })
        .map(drop)
}

/// Sets the mode of an open file exactly (the umask does not apply).
pub(crate) fn set_mode(fd: BorrowedFd, mode: u32) -> io::Result<()> {
    // SAFETY: valid descriptor.
    super::check(unsafe { libc::fchmod(fd.as_raw_fd(), mode as libc::mode_t) }).map(drop)
}

/// What [`unlink_at`] removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entry {
    /// A file (or link, or other non-directory).
    File,
    /// An empty directory (AT_REMOVEDIR).
    Dir,
}

/// Removes the entry `name` of `dir`.
pub(crate) fn unlink_at(dir: BorrowedFd, name: &CStr, entry: Entry) -> io::Result<()> {
    let flags = match entry {
        Entry::File => 0,
        Entry::Dir => libc::AT_REMOVEDIR,
    };
    // SAFETY: valid descriptor and C string.
    super::check(unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), flags) }).map(drop)
}

/// Renames `from` to `to`, both in `dir` (atomically replacing `to`).
pub(crate) fn rename_at(dir: BorrowedFd, from: &CStr, to: &CStr) -> io::Result<()> {
    // SAFETY: valid descriptor and C strings.
    super::check(unsafe {
        libc::renameat(dir.as_raw_fd(), from.as_ptr(), dir.as_raw_fd(), to.as_ptr())
    })
    .map(drop)
}

/// The owner (user id) of an open file.
pub fn owner(fd: BorrowedFd) -> io::Result<u32> {
    // SAFETY: an all-zero stat is a valid out-buffer.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid descriptor and out-pointer.
    super::check(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) })?;
    Ok(st.st_uid)
}

/// Takes an exclusive flock on `fd` without waiting: Ok(false) when another holds it.
pub(crate) fn try_lock_exclusive(fd: BorrowedFd) -> io::Result<bool> {
    // SAFETY: valid descriptor.
    match super::check(unsafe { libc::flock(fd.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) }) {
        Ok(_) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::EWOULDBLOCK) => Ok(false),
        Err(e) => Err(e),
    }
}

/// The major and minor numbers of a device number (`st_dev`, `st_rdev`).
pub(crate) fn major_minor(dev: u64) -> (u32, u32) {
    // The libc crate takes dev_t, 64 bits on every Linux target.
    (
        libc::major(dev as libc::dev_t),
        libc::minor(dev as libc::dev_t),
    )
}

/// Whether this process may write `path` (access W_OK, with the real ids).
pub(crate) fn can_write(path: &Path) -> io::Result<()> {
    let c = cstr(path.as_os_str())?;
    // SAFETY: valid C string.
    super::check(unsafe { libc::access(c.as_ptr(), libc::W_OK) }).map(drop)
}

/// Whether this process may make and remove entries in directory `path` (W_OK | X_OK).
pub(crate) fn can_write_dir(path: &Path) -> io::Result<()> {
    let c = cstr(path.as_os_str())?;
    // SAFETY: valid C string.
    super::check(unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) }).map(drop)
}

/// The bytes free to unprivileged users on the file system holding `path`.
// u64::from widens fsblkcnt_t and c_ulong on 32-bit targets; on 64-bit ones it is the identity.
#[allow(clippy::useless_conversion)]
pub(crate) fn free_bytes(path: &Path) -> io::Result<u64> {
    let c = cstr(path.as_os_str())?;
    // SAFETY: an all-zero statvfs is a valid out-buffer.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: valid C string and out-pointer.
    super::check(unsafe { libc::statvfs(c.as_ptr(), &mut st) })?;
    Ok(u64::from(st.f_bavail).saturating_mul(u64::from(st.f_frsize)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::fd::AsFd;

    #[test]
    fn entries_are_made_renamed_and_removed_through_the_directorys_descriptor() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = open_dir(tmp.path()).unwrap();
        let (a, b, sub) = (c"a", c"b", c"sub");
        create_new_at(dir.as_fd(), a)
            .unwrap()
            .write_all(b"hi")
            .unwrap();
        let e = create_new_at(dir.as_fd(), a).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EEXIST), "{e}");
        rename_at(dir.as_fd(), a, b).unwrap();
        let mut text = String::new();
        open_read_at(dir.as_fd(), b, false)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "hi");
        assert_eq!(
            owner(dir.as_fd()).unwrap(),
            crate::sys::process::effective_user_id()
        );
        make_dir_at(dir.as_fd(), sub, 0o755).unwrap();
        openat_dir(dir.as_fd(), sub).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("sub"), tmp.path().join("link")).unwrap();
        assert!(
            openat_dir(dir.as_fd(), c"link").is_err(),
            "a link is refused"
        );
        unlink_at(dir.as_fd(), b, Entry::File).unwrap();
        unlink_at(dir.as_fd(), sub, Entry::Dir).unwrap();
        unlink_at(dir.as_fd(), c"link", Entry::File).unwrap();
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
        assert!(free_bytes(tmp.path()).unwrap() > 0);
        can_write_dir(tmp.path()).unwrap();
    }

    #[test]
    fn a_second_exclusive_lock_is_refused_until_the_first_is_dropped() {
        let tmp = tempfile::NamedTempFile::new().unwrap();
        let first = File::open(tmp.path()).unwrap();
        let second = File::open(tmp.path()).unwrap();
        assert!(try_lock_exclusive(first.as_fd()).unwrap());
        assert!(!try_lock_exclusive(second.as_fd()).unwrap());
        drop(first);
        assert!(try_lock_exclusive(second.as_fd()).unwrap());
    }

    #[test]
    fn device_numbers_split_as_the_kernel_encodes_them() {
        // glibc's/musl's makedev layout: 8:1 (sda1) and 259:65536 (a large minor).
        assert_eq!(major_minor(0x801), (8, 1));
        assert_eq!(
            major_minor(libc::makedev(259, 65_536) as u64),
            (259, 65_536)
        );
    }
}

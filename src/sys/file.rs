//! File-descriptor calls: pipes, raw reads and writes (async-signal-safe, for forked
//! children and the measuring loop), descriptor flags, polling, and calls whose offsets must
//! be 64-bit on every target: `off_t` is 32 bits on armv7 glibc (the libc crate does not build
//! with _FILE_OFFSET_BITS=64), so the `64` variants are called there; musl's `off_t` is 64
//! bits everywhere.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// Allocates `len` bytes from `offset` without changing the file's size
/// (fallocate FALLOC_FL_KEEP_SIZE).
pub(crate) fn reserve(fd: BorrowedFd, offset: u64, len: u64) -> io::Result<()> {
    let too_large = || io::Error::new(io::ErrorKind::InvalidInput, "offset beyond 2^63");
    let offset = i64::try_from(offset).map_err(|_| too_large())?;
    let len = i64::try_from(len).map_err(|_| too_large())?;
    // SAFETY: plain syscall on a descriptor the caller keeps open.
    #[cfg(target_env = "gnu")]
    let ret = unsafe { libc::fallocate64(fd.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, offset, len) };
    // SAFETY: as above.
    #[cfg(not(target_env = "gnu"))]
    let ret = unsafe { libc::fallocate(fd.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, offset, len) };
    super::check(ret).map(drop)
}

/// O_NONBLOCK, for `OpenOptionsExt::custom_flags`: reads return EAGAIN instead of blocking.
pub(crate) const O_NONBLOCK: i32 = libc::O_NONBLOCK;

/// O_NOFOLLOW, for `OpenOptionsExt::custom_flags`: an open of a symbolic link fails (ELOOP).
pub(crate) const O_NOFOLLOW: i32 = libc::O_NOFOLLOW;

/// A pipe, both ends close-on-exec: (read end, write end), owned by the caller.
pub fn pipe() -> io::Result<(RawFd, RawFd)> {
    let mut fds = [0; 2];
    // SAFETY: valid array of two descriptors.
    super::check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    Ok((fds[0], fds[1]))
}

/// A connected pair of Unix stream sockets, close-on-exec, owned by the caller.
pub(crate) fn socket_pair() -> io::Result<(RawFd, RawFd)> {
    let mut fds = [0; 2];
    // SAFETY: valid array of two descriptors.
    super::check(unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    })?;
    Ok((fds[0], fds[1]))
}

/// Opens `path` read-only, close-on-exec; the descriptor is the caller's to close.
pub(crate) fn open_read_only(path: &std::ffi::CStr) -> io::Result<RawFd> {
    // SAFETY: valid C string.
    super::check(unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) })
}

/// Closes a descriptor the caller owns and no one else uses.
pub fn close(fd: RawFd) {
    // SAFETY: as the caller promises; a failed close leaves nothing to do.
    unsafe { libc::close(fd) };
}

/// read(2) into `buf`: the raw result (bytes read, 0 at the end, -1 with errno set).
/// Async-signal-safe and allocation-free: fit for forked children and the measuring loop.
#[inline(always)]
pub(crate) fn read_raw(fd: RawFd, buf: &mut [u8]) -> isize {
    // SAFETY: the slice bounds the read.
    unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) }
}

/// write(2) of `buf`: the raw result (bytes written, -1 with errno set). Async-signal-safe.
#[inline(always)]
pub(crate) fn write_raw(fd: RawFd, buf: &[u8]) -> isize {
    // SAFETY: the slice bounds the write.
    unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) }
}

/// dup2(2): makes `to` a copy of `from` (not close-on-exec). Async-signal-safe.
pub(crate) fn duplicate_to(from: RawFd, to: RawFd) -> io::Result<()> {
    // SAFETY: plain syscall on integer descriptors.
    super::check(unsafe { libc::dup2(from, to) }).map(drop)
}

/// Clears close-on-exec on `fd`, so that an exec'd program inherits it. Async-signal-safe.
pub(crate) fn inherit_on_exec(fd: RawFd) {
    // SAFETY: plain fcntl on an integer descriptor.
    unsafe { libc::fcntl(fd, libc::F_SETFD, 0) };
}

/// Whether `fd` is what Rust's runtime opens in place of a standard descriptor that was closed
/// when the process started: /dev/null (character device 1:3) opened read-write. A shell's
/// `> /dev/null` opens it write-only, so that one is not taken for a closed descriptor.
pub(crate) fn is_reopened_dev_null(fd: RawFd) -> bool {
    // SAFETY: plain fcntl on an integer descriptor.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 || flags & libc::O_ACCMODE != libc::O_RDWR {
        return false;
    }
    // SAFETY: an all-zero stat is a valid out-buffer.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid out-pointer.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return false;
    }
    st.st_mode & libc::S_IFMT == libc::S_IFCHR && st.st_rdev == libc::makedev(1, 3)
}

/// Makes reads and writes on `fd` return EAGAIN instead of blocking.
pub(crate) fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: plain fcntl calls on an integer descriptor.
    unsafe {
        let flags = super::check(libc::fcntl(fd, libc::F_GETFL))?;
        super::check(libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK)).map(drop)
    }
}

/// Makes reads on `fd` wait for data again (undoes O_NONBLOCK).
pub(crate) fn set_blocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: plain fcntl calls on an integer descriptor.
    unsafe {
        let flags = super::check(libc::fcntl(fd, libc::F_GETFL))?;
        super::check(libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK)).map(drop)
    }
}

/// poll(2) on one descriptor for input, waiting up to `timeout_ms` (-1: no limit): None when
/// the time ran out, Some(readable) when an event came (readable: POLLIN among them; a hang-up
/// alone is an event too). Async-signal-safe.
pub(crate) fn poll_input(fd: RawFd, timeout_ms: i32) -> io::Result<Option<bool>> {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let r = super::check(unsafe { libc::poll(&mut pfd, 1, timeout_ms) })?;
    Ok((r > 0).then_some(pfd.revents & libc::POLLIN != 0))
}

/// poll(2) on one descriptor for output, waiting up to `timeout_ms`: whether it can take a
/// write now (POLLOUT), or has an error or hang-up for the write to report.
pub(crate) fn poll_output(fd: BorrowedFd, timeout_ms: i32) -> io::Result<bool> {
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let r = super::check(unsafe { libc::poll(&mut pfd, 1, timeout_ms) })?;
    Ok(r > 0)
}

/// A new descriptor (close-on-exec) of what `fd` holds, sharing its offset and flags.
pub(crate) fn duplicate(fd: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: plain fcntl on an integer descriptor; the result is a fresh descriptor.
    let new = super::check(unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) })?;
    // SAFETY: a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

/// This process's open descriptors that write (opened write-only or read-write, `O_PATH`
/// ones left out), each with the device and inode of what it holds: what a path that leads to
/// one of them (`/dev/stdout`, `/dev/fd/3`) names.
pub(crate) fn writing_descriptors() -> Vec<(RawFd, u64, u64)> {
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return Vec::new();
    };
    let mut out: Vec<(RawFd, u64, u64)> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<RawFd>().ok())
        .filter_map(|fd| {
            // SAFETY: plain fcntl on an integer descriptor (EBADF for one closed meanwhile,
            // such as the listing's own).
            let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
            if flags < 0 || flags & libc::O_PATH != 0 || flags & libc::O_ACCMODE == libc::O_RDONLY {
                return None;
            }
            // SAFETY: an all-zero stat is a valid out-buffer.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            // SAFETY: valid out-pointer.
            (unsafe { libc::fstat(fd, &mut st) } == 0).then_some(())?;
            // st_dev and st_ino are 32 bits on some 32-bit targets: widened.
            #[allow(clippy::useless_conversion)]
            Some((fd, u64::from(st.st_dev), u64::from(st.st_ino)))
        })
        .collect();
    out.sort_unstable();
    out
}

/// Advises the kernel to drop the file's cached pages (written back already: clean ones go).
pub(crate) fn drop_cache(fd: BorrowedFd) {
    // SAFETY: plain syscall on an open descriptor; advice only.
    unsafe { libc::posix_fadvise(fd.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn a_reservation_keeps_the_size_and_allocates_blocks() {
        let file = tempfile::tempfile().unwrap();
        // 5 GiB from 0 would not fit a 32-bit off_t; 1 MiB at an offset beyond 4 GiB does
        // not fit either, and costs only 1 MiB of disk.
        match reserve(file.as_fd(), 5 << 30, 1 << 20) {
            Ok(()) => {
                use std::os::unix::fs::MetadataExt;
                let meta = file.metadata().unwrap();
                assert_eq!(meta.len(), 0, "KEEP_SIZE must not change the size");
                assert!(meta.blocks() * 512 >= 1 << 20, "{} blocks", meta.blocks());
            }
            // A file system without fallocate (tmpfs has it; some do not) cannot show it.
            Err(e) => assert_eq!(e.raw_os_error(), Some(libc::EOPNOTSUPP), "{e}"),
        }
    }

    #[test]
    fn bytes_pass_through_a_pipe_and_a_socket_pair_and_poll_sees_them() {
        for (r, w) in [pipe().unwrap(), socket_pair().unwrap()] {
            assert_eq!(poll_input(r, 0).unwrap(), None, "nothing written yet");
            assert_eq!(write_raw(w, b"abc"), 3);
            assert_eq!(poll_input(r, 0).unwrap(), Some(true));
            let mut buf = [0u8; 8];
            assert_eq!(read_raw(r, &mut buf), 3);
            assert_eq!(&buf[..3], b"abc");
            set_nonblocking(r).unwrap();
            assert_eq!(read_raw(r, &mut buf), -1, "empty and non-blocking");
            assert_eq!(
                io::Error::last_os_error().raw_os_error(),
                Some(libc::EAGAIN)
            );
            close(w);
            // The end of stream is an event (a pipe reports POLLHUP alone, a socket POLLIN too).
            assert!(
                poll_input(r, 0).unwrap().is_some(),
                "the hang-up is an event"
            );
            assert_eq!(read_raw(r, &mut buf), 0);
            close(r);
        }
    }
}

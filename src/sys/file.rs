//! File-descriptor calls whose offsets must be 64-bit on every target: `off_t` is 32 bits on
//! armv7 glibc (the libc crate does not build with _FILE_OFFSET_BITS=64), so the `64` variants
//! are called there; musl's `off_t` is 64 bits everywhere.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// Allocates `len` bytes from `offset` without changing the file's size
/// (fallocate FALLOC_FL_KEEP_SIZE).
pub fn reserve(fd: BorrowedFd, offset: u64, len: u64) -> io::Result<()> {
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
}

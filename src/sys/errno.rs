//! Error numbers (errno) as the kernel gives them, for matching `io::Error::raw_os_error()`.
//! The values are the same on every Linux target jitterlab builds for except where the
//! architecture says otherwise; taking them from libc here keeps that knowledge in `sys`.

pub(crate) const EACCES: i32 = libc::EACCES;
pub(crate) const EAGAIN: i32 = libc::EAGAIN;
pub(crate) const EBUSY: i32 = libc::EBUSY;
pub(crate) const EEXIST: i32 = libc::EEXIST;
pub(crate) const EINTR: i32 = libc::EINTR;
pub(crate) const EINVAL: i32 = libc::EINVAL;
pub(crate) const EIO: i32 = libc::EIO;
pub(crate) const EMFILE: i32 = libc::EMFILE;
pub(crate) const ENAMETOOLONG: i32 = libc::ENAMETOOLONG;
pub(crate) const ENOENT: i32 = libc::ENOENT;
pub(crate) const ELOOP: i32 = libc::ELOOP;
pub(crate) const ENOTDIR: i32 = libc::ENOTDIR;
pub(crate) const ENXIO: i32 = libc::ENXIO;
pub(crate) const ENOMEM: i32 = libc::ENOMEM;
pub(crate) const ENOSPC: i32 = libc::ENOSPC;
pub(crate) const ENOSYS: i32 = libc::ENOSYS;
pub(crate) const ENOTSUP: i32 = libc::ENOTSUP;
pub(crate) const EPERM: i32 = libc::EPERM;
pub(crate) const EPIPE: i32 = libc::EPIPE;
#[cfg(test)]
pub(crate) const EROFS: i32 = libc::EROFS;
pub(crate) const ESRCH: i32 = libc::ESRCH;

/// The symbolic name of `errno` (`EPERM`), for the errors probes report; None for those
/// jitterlab does not name.
pub(crate) fn name(errno: i32) -> Option<&'static str> {
    Some(match errno {
        EPERM => "EPERM",
        EINVAL => "EINVAL",
        ENOSYS => "ENOSYS",
        EBUSY => "EBUSY",
        ENOMEM => "ENOMEM",
        EACCES => "EACCES",
        EAGAIN => "EAGAIN",
        ENOENT => "ENOENT",
        ENOTSUP => "ENOTSUP",
        EMFILE => "EMFILE",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_the_kernels_numbers() {
        // include/uapi/asm-generic/errno-base.h and errno.h (the same on x86, ARM, RISC-V).
        assert_eq!(name(1), Some("EPERM"));
        assert_eq!(name(22), Some("EINVAL"));
        assert_eq!(name(38), Some("ENOSYS"));
        assert_eq!(name(95), Some("ENOTSUP"));
        assert_eq!(name(4), None, "EINTR is not among the named");
        assert_eq!((EINTR, ENOENT, EEXIST, ESRCH), (4, 2, 17, 3));
    }
}

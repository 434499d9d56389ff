//! ioctl(2) with integer arguments. The request is `unsigned long` on glibc and `int` on musl,
//! and a request number encodes its argument's size, which differs between 32- and 64-bit
//! boards: both are computed here.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// The request argument's C type in this libc.
#[cfg(target_env = "musl")]
type RawRequest = libc::c_int;
#[cfg(not(target_env = "musl"))]
type RawRequest = libc::c_ulong;

/// C's `unsigned long`: 32 bits on armv7, 64 on the 64-bit targets (ioctl arguments and the
/// RTC's reads are of this size).
pub(crate) type Ulong = libc::c_ulong;

/// An ioctl request number (the kernel's 32-bit encoding, asm-generic layout: direction in
/// bits 30-31, argument size in 16-29, type in 8-15, number in 0-7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Request(pub u32);

const IOC_WRITE: u32 = 1;

impl Request {
    /// `_IO(ty, nr)`: no argument (or an integer passed by value).
    pub(crate) const fn none(ty: u8, nr: u8) -> Request {
        Request(((ty as u32) << 8) | nr as u32)
    }

    /// `_IOW(ty, nr, T)` with `T` of `size` bytes.
    pub(crate) const fn write(ty: u8, nr: u8, size: usize) -> Request {
        Request((IOC_WRITE << 30) | ((size as u32) << 16) | ((ty as u32) << 8) | nr as u32)
    }

    fn raw(self) -> RawRequest {
        // Bit 31 set makes a negative int on musl: the kernel sees the same 32 bits.
        self.0 as RawRequest
    }
}

/// `ioctl(fd, request, arg)` with an `unsigned long` argument passed by value.
pub(crate) fn with_ulong(
    fd: BorrowedFd,
    request: Request,
    arg: libc::c_ulong,
) -> io::Result<libc::c_int> {
    // SAFETY: the requests callers pass take an integer, not a pointer.
    super::check(unsafe { libc::ioctl(fd.as_raw_fd(), request.raw(), arg) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_match_the_kernels_encoding() {
        // From include/uapi/linux/rtc.h on x86-64: RTC_PIE_ON _IO('p', 0x05);
        // RTC_IRQP_SET _IOW('p', 0x0c, unsigned long) with an 8-byte argument.
        assert_eq!(Request::none(b'p', 0x05).0, 0x7005);
        assert_eq!(Request::write(b'p', 0x0c, 8).0, 0x4008_700c);
        assert_eq!(Request::write(b'p', 0x0c, 4).0, 0x4004_700c);
    }
}

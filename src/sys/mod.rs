//! The one place that talks to libc (and reads the CPU's counter): scheduling, rlimits, capabilities, clocks, timers and sleeps, signals,
//! processes, memory mappings, ioctls, descriptors, directory-relative file calls, errno values
//! the IPC wake mechanisms and the doctor's IPC round trips. `tests/offline/sys_boundary.rs` fails if `libc::` appears anywhere
//! else in `src/`.
//!
//! jitterlab runs on glibc and musl, on 64-bit and 32-bit boards. The C types differ between
//! them: `rlim_t`, `time_t` and `off_t` are 32 bits on armv7 glibc, `sched_param` has extra fields on
//! musl, `RLIMIT_*` is `__rlimit_resource_t` on glibc and `int` on musl, and an ioctl request is
//! `unsigned long` on glibc and `int` on musl. Those differences are handled in this module and
//! nowhere else: what leaves it is plain Rust (`u64` nanoseconds and limits, `i32` priorities,
//! [`std::io::Result`]).

pub(crate) mod caps;
pub mod counter;
pub(crate) mod errno;
pub mod file;
pub mod fs;
pub mod host;
pub mod ioctl;
pub mod ipc;
pub(crate) mod ipc_probes;
pub mod mem;
pub mod path;
pub mod process;
pub mod rlimit;
pub mod sched;
pub mod signal;
pub(crate) mod stop_aware;
pub mod time;
pub(crate) mod timer;

use std::io;

/// A libc return value as a result: negative is failure, with the reason in errno.
pub fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

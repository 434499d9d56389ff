//! Facts about the host the kernel gives: uname(2). `utsname`'s field sizes differ between
//! libcs; what leaves this file is owned strings.

use std::ffi::CStr;

/// The fields of uname(2) as owned strings.
#[derive(Debug, Clone)]
pub struct Uname {
    pub sysname: String,
    pub nodename: String,
    pub release: String,
    pub version: String,
    pub machine: String,
}

/// Reads uname(2). It cannot fail on Linux; a failure would leave the fields empty.
pub fn uname() -> Uname {
    // SAFETY: utsname is plain old data; uname fills it with NUL-terminated strings.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    unsafe { libc::uname(&mut u) };
    let field = |f: &[libc::c_char]| {
        // SAFETY: the kernel NUL-terminates each field within its array.
        unsafe { CStr::from_ptr(f.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    };
    Uname {
        sysname: field(&u.sysname),
        nodename: field(&u.nodename),
        release: field(&u.release),
        version: field(&u.version),
        machine: field(&u.machine),
    }
}

//! Facts about the host that every part of jitterlab may need: its name and kernel.

pub(crate) use crate::sys::host::uname;

/// The host name, as used in default result-directory names.
pub(crate) fn hostname() -> String {
    uname().nodename
}

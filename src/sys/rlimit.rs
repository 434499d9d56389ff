//! Resource limits. `rlim_t` is 32 bits on armv7 glibc and the resource argument's type differs
//! between glibc and musl; limits leave this file as `u64`, unlimited as `u64::MAX`.

use std::io;

/// The limits jitterlab reads or raises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// RLIMIT_RTPRIO: the highest real-time priority an unprivileged task may take.
    RtPrio,
    /// RLIMIT_MEMLOCK: bytes an unprivileged task may lock.
    Memlock,
    /// RLIMIT_NOFILE: open file descriptors.
    Nofile,
    /// RLIMIT_NPROC: tasks (processes and threads) of the real user id.
    Nproc,
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
type RawResource = libc::__rlimit_resource_t;
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
type RawResource = libc::c_int;

impl Resource {
    fn raw(self) -> RawResource {
        match self {
            Resource::RtPrio => libc::RLIMIT_RTPRIO,
            Resource::Memlock => libc::RLIMIT_MEMLOCK,
            Resource::Nofile => libc::RLIMIT_NOFILE,
            Resource::Nproc => libc::RLIMIT_NPROC,
        }
    }
}

/// A soft and a hard limit; `u64::MAX` is unlimited (RLIM_INFINITY).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    pub soft: u64,
    pub hard: u64,
}

// u64::from widens the 32-bit rlim_t of armv7 glibc; elsewhere it is the identity.
#[allow(clippy::useless_conversion)]
fn from_raw(v: libc::rlim_t) -> u64 {
    if v == libc::RLIM_INFINITY {
        u64::MAX
    } else {
        u64::from(v)
    }
}

fn to_raw(v: u64) -> libc::rlim_t {
    // A finite limit too large for a 32-bit rlim_t is, for this system, unlimited.
    libc::rlim_t::try_from(v)
        .ok()
        .filter(|&r| r != libc::RLIM_INFINITY)
        .unwrap_or(libc::RLIM_INFINITY)
}

/// getrlimit(2).
pub fn get(resource: Resource) -> io::Result<Limit> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: valid out-pointer.
    if unsafe { libc::getrlimit(resource.raw(), &mut r) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(Limit {
        soft: from_raw(r.rlim_cur),
        hard: from_raw(r.rlim_max),
    })
}

/// setrlimit(2).
pub fn set(resource: Resource, limit: Limit) -> io::Result<()> {
    let r = libc::rlimit {
        rlim_cur: to_raw(limit.soft),
        rlim_max: to_raw(limit.hard),
    };
    // SAFETY: valid pointer.
    if unsafe { libc::setrlimit(resource.raw(), &r) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Raises the soft limit to the hard one (allowed without privilege).
pub(crate) fn raise_soft_to_hard(resource: Resource) -> io::Result<()> {
    let limit = get(resource)?;
    if limit.soft < limit.hard {
        set(
            resource,
            Limit {
                soft: limit.hard,
                hard: limit.hard,
            },
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unlimited_maps_to_u64_max_both_ways() {
        assert_eq!(from_raw(libc::RLIM_INFINITY), u64::MAX);
        assert_eq!(to_raw(u64::MAX), libc::RLIM_INFINITY);
        assert_eq!(from_raw(to_raw(65_536)), 65_536);
    }

    #[test]
    fn the_soft_limit_set_reads_back() {
        // RLIMIT_RTPRIO: lowering it for a moment cannot starve the other tests of this
        // process (none takes a real-time policy without privilege), unlike RLIMIT_NOFILE.
        let before = get(Resource::RtPrio).unwrap();
        assert!(before.soft <= before.hard);
        let lower = Limit {
            soft: 0,
            hard: before.hard,
        };
        set(Resource::RtPrio, lower).unwrap();
        assert_eq!(get(Resource::RtPrio).unwrap(), lower);
        raise_soft_to_hard(Resource::RtPrio).unwrap();
        assert_eq!(get(Resource::RtPrio).unwrap().soft, before.hard);
        set(Resource::RtPrio, before).unwrap();
    }
}

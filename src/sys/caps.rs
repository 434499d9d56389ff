//! Capabilities and the real-time limit: how a load's processes give up every way to a
//! real-time priority above the one they were given (issue 39, F4: an `exec:` load that made
//! itself SCHED_FIFO 60 on every CPU starved jitterlab's own threads, and not even a SIGKILL of
//! jitterlab could end the run; N2: the same from a load given `policy=fifo,prio=1`, which
//! the starvation check had counted at 1).

use std::io;

/// `sched_setscheduler` to a real-time policy at any priority, and negative nice values.
const CAP_SYS_NICE: u32 = 23;
/// Raising a hard resource limit: RLIMIT_RTPRIO back above 0, which allows a real-time policy
/// without CAP_SYS_NICE. Also exempts a fork from RLIMIT_NPROC.
pub(crate) const CAP_SYS_RESOURCE: u32 = 24;
/// Exempts a fork from RLIMIT_NPROC (as CAP_SYS_RESOURCE does; kernel/fork.c).
pub(crate) const CAP_SYS_ADMIN: u32 = 21;
/// The capabilities given up.
const RENOUNCED: [u32; 2] = [CAP_SYS_NICE, CAP_SYS_RESOURCE];

/// `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// [`renounce_realtime_above`]`(0)`: no real-time policy at all (a threshold program's case).
pub(crate) fn renounce_realtime() -> io::Result<()> {
    renounce_realtime_above(0)
}

/// From now on neither the calling thread nor anything it starts (its threads, the processes
/// they fork and the programs those exec, set-user-ID root ones included) can take a real-time
/// priority above `ceiling` (0: no real-time policy at all): RLIMIT_RTPRIO `ceiling` (or the
/// hard limit it had, if lower), soft and hard (for the whole process), and CAP_SYS_NICE and
/// CAP_SYS_RESOURCE (with which the limit could be raised again) dropped from the calling
/// thread's bounding set (no exec gives them back), its permitted, effective and inheritable
/// sets, and its ambient set. A process without CAP_SETPCAP (jitterlab run by a user other
/// than root) cannot change its bounding set; it has neither capability to lose, and the limit
/// alone holds its programs, set-user-ID ones excepted. A thread already at a real-time
/// priority keeps it: the limit only bounds what it asks for next. Async-signal-safe (raw
/// syscalls only).
pub(crate) fn renounce_realtime_above(ceiling: u32) -> io::Result<()> {
    let mut now = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: valid pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_RTPRIO, &mut now) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // Never above the hard limit the process has: raising it needs CAP_SYS_RESOURCE, which
    // root lacks in some containers. A lower limit still holds the ceiling, since a
    // real-time thread may always keep or lower its own priority.
    let bound = libc::rlim_t::from(ceiling).min(now.rlim_max);
    let limit = libc::rlimit {
        rlim_cur: bound,
        rlim_max: bound,
    };
    // SAFETY: valid pointer.
    if unsafe { libc::setrlimit(libc::RLIMIT_RTPRIO, &limit) } != 0 {
        return Err(io::Error::last_os_error());
    }
    for cap in RENOUNCED {
        // SAFETY: plain prctl with integer arguments.
        if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) } != 0 {
            let e = io::Error::last_os_error();
            // EPERM: no CAP_SETPCAP (see above); EINVAL: a kernel without this capability.
            if !matches!(e.raw_os_error(), Some(libc::EPERM | libc::EINVAL)) {
                return Err(e);
            }
        }
        // SAFETY: as above. EINVAL: a kernel before ambient capabilities (4.3), none to lower.
        unsafe {
            libc::prctl(
                libc::PR_CAP_AMBIENT,
                libc::PR_CAP_AMBIENT_LOWER as libc::c_ulong,
                cap as libc::c_ulong,
                0,
                0,
            )
        };
    }
    let mut header = CapHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: valid pointers to the header and two data words, as version 3 expects.
    if unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let mask = RENOUNCED.iter().fold(0u32, |m, &cap| m | (1 << cap));
    data[0].effective &= !mask;
    data[0].permitted &= !mask;
    data[0].inheritable &= !mask;
    // SAFETY: as above.
    if unsafe { libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether the calling thread's effective set holds `cap` (false when it cannot be read).
pub(crate) fn has_effective(cap: u32) -> bool {
    let mut header = CapHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: valid pointers to the header and two data words, as version 3 expects.
    if unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) } != 0 {
        return false;
    }
    let (word, bit) = ((cap / 32) as usize, cap % 32);
    word < 2 && data[word].effective & (1 << bit) != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// In a child process (the limit is the whole process's, and the bounding set cannot be
    /// given back): after `renounce_realtime`, SCHED_FIFO is refused, also to a root process,
    /// and the limit cannot be raised again.
    #[test]
    fn a_renounced_process_cannot_take_a_real_time_policy() {
        use crate::sys::rlimit::{Limit, Resource, set};
        use crate::sys::sched::{SCHED_FIFO, set_scheduler};
        // SAFETY: the child makes raw syscalls only, then _exit.
        let pid = unsafe {
            crate::sys::process::fork_child(|| {
                if renounce_realtime_above(0).is_err() {
                    return 10;
                }
                if set_scheduler(0, SCHED_FIFO, 1).is_ok() {
                    return 11;
                }
                let back = Limit { soft: 99, hard: 99 };
                if set(Resource::RtPrio, back).is_ok() {
                    return 12;
                }
                0
            })
        }
        .unwrap();
        let reaped = crate::sys::process::wait_for(pid, true).unwrap().unwrap();
        assert_eq!(crate::sys::process::exit_code(reaped.status), 0);
    }

    /// N2: a process given SCHED_FIFO 10 keeps it and may go lower, but not above, and cannot
    /// raise the limit again. Where this test may not take a real-time policy (not root, no
    /// RLIMIT_RTPRIO), the child says so and the test has nothing to check.
    #[test]
    fn a_process_kept_at_its_priority_cannot_rise_above_it() {
        use crate::sys::rlimit::{Limit, Resource, set};
        use crate::sys::sched::{SCHED_FIFO, set_scheduler};
        // SAFETY: the child makes raw syscalls only, then _exit.
        let pid = unsafe {
            crate::sys::process::fork_child(|| {
                if set_scheduler(0, SCHED_FIFO, 10).is_err() {
                    return 20;
                }
                if let Err(e) = renounce_realtime_above(10) {
                    return 100 + e.raw_os_error().unwrap_or(0);
                }
                if set_scheduler(0, SCHED_FIFO, 11).is_ok() {
                    return 11;
                }
                if set_scheduler(0, SCHED_FIFO, 10).is_err()
                    || set_scheduler(0, SCHED_FIFO, 5).is_err()
                {
                    return 12;
                }
                let back = Limit { soft: 99, hard: 99 };
                if set(Resource::RtPrio, back).is_ok() {
                    return 13;
                }
                0
            })
        }
        .unwrap();
        let reaped = crate::sys::process::wait_for(pid, true).unwrap().unwrap();
        match crate::sys::process::exit_code(reaped.status) {
            20 => eprintln!("SKIPPED: this process may not take SCHED_FIFO 10"),
            code => assert_eq!(code, 0),
        }
    }
}

//! Scheduling of threads: policies and priorities, SCHED_DEADLINE, CPU affinity, timer slack,
//! memory locking.

use std::io;

/// A `sched_param` with `priority`. musl's struct has fields beyond `sched_priority` (for
/// SCHED_SPORADIC), so it is zeroed first rather than written as a literal.
fn sched_param(priority: i32) -> libc::sched_param {
    // SAFETY: sched_param is plain integers; all-zero is valid.
    let mut param: libc::sched_param = unsafe { std::mem::zeroed() };
    param.sched_priority = priority;
    param
}

/// The policies of sched_setscheduler(2), as the kernel numbers them.
pub(crate) const SCHED_OTHER: i32 = libc::SCHED_OTHER;
pub const SCHED_FIFO: i32 = libc::SCHED_FIFO;
pub(crate) const SCHED_RR: i32 = libc::SCHED_RR;
pub(crate) const SCHED_BATCH: i32 = libc::SCHED_BATCH;
pub(crate) const SCHED_IDLE: i32 = libc::SCHED_IDLE;
/// Not in every libc's headers; the kernel's number (include/uapi/linux/sched.h).
pub(crate) const SCHED_DEADLINE: i32 = 6;
/// Or'ed into a policy: threads and processes the thread starts begin with SCHED_OTHER.
pub(crate) const SCHED_RESET_ON_FORK: i32 = libc::SCHED_RESET_ON_FORK;

/// Sets the policy and priority of task `tid` (0: the calling thread). Uses the raw syscall:
/// musl's sched_setscheduler wrapper returns ENOSYS by design (POSIX gives it process scope,
/// which Linux does not have), and glibc's is the same syscall.
pub fn set_scheduler(tid: libc::pid_t, policy: i32, priority: i32) -> io::Result<()> {
    let param = sched_param(priority);
    // SAFETY: param is a valid pointer for the duration of the call.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_sched_setscheduler,
            tid as libc::c_long,
            policy as libc::c_long,
            &param as *const libc::sched_param,
        )
    };
    if ret != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The policy of task `tid` (0: the calling thread), with SCHED_RESET_ON_FORK masked off.
pub(crate) fn scheduler(tid: libc::pid_t) -> io::Result<i32> {
    // SAFETY: plain syscall with an integer argument (musl's wrapper is ENOSYS, see above).
    let ret = unsafe { libc::syscall(libc::SYS_sched_getscheduler, tid as libc::c_long) };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(ret as i32 & !libc::SCHED_RESET_ON_FORK)
}

/// The real-time priority of task `tid` (0 for the normal policies).
pub fn priority(tid: libc::pid_t) -> io::Result<i32> {
    let mut param = sched_param(0);
    // SAFETY: valid out-pointer.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_sched_getparam,
            tid as libc::c_long,
            &mut param as *mut libc::sched_param,
        )
    };
    if ret != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(param.sched_priority)
}

/// The kernel's `struct sched_attr` (include/uapi/linux/sched/types.h), first version.
#[repr(C)]
struct SchedAttr {
    size: u32,
    sched_policy: u32,
    sched_flags: u64,
    sched_nice: i32,
    sched_priority: u32,
    sched_runtime: u64,
    sched_deadline: u64,
    sched_period: u64,
}

/// Puts the calling thread under SCHED_DEADLINE with this reservation, all in ns.
pub(crate) fn set_deadline(runtime_ns: u64, deadline_ns: u64, period_ns: u64) -> io::Result<()> {
    let attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        sched_policy: SCHED_DEADLINE as u32,
        sched_flags: 0,
        sched_nice: 0,
        sched_priority: 0,
        sched_runtime: runtime_ns,
        sched_deadline: deadline_ns,
        sched_period: period_ns,
    };
    // SAFETY: no libc has a wrapper; the syscall reads `attr` of the size it declares.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_sched_setattr,
            0 as libc::c_long,
            &attr as *const SchedAttr,
            0 as libc::c_long,
        )
    };
    if ret != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Restricts the calling thread to the CPUs in `cpus`. A CPU beyond the set's capacity
/// (CPU_SETSIZE, 1024) is an error, not memory corruption.
pub(crate) fn set_affinity(cpus: &[usize]) -> io::Result<()> {
    set_affinity_of(0, cpus)
}

/// Restricts thread `tid` (0: the calling thread) to the CPUs in `cpus`.
pub(crate) fn set_affinity_of(tid: libc::pid_t, cpus: &[usize]) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let capacity = 8 * std::mem::size_of::<libc::cpu_set_t>();
    for &cpu in cpus {
        if cpu >= capacity {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("CPU {cpu} is beyond the {capacity} CPUs an affinity mask holds"),
            ));
        }
        // SAFETY: cpu is below the set's capacity (checked above).
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: set is valid for its size.
    if unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The CPUs the calling thread may run on.
pub(crate) fn affinity() -> io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: set is valid for its size.
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0
    {
        return Err(io::Error::last_os_error());
    }
    let capacity = 8 * std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: every index is below the set's capacity.
    Ok((0..capacity)
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect())
}

/// Sets the calling thread's timer slack (PR_SET_TIMERSLACK), ns.
pub(crate) fn set_timer_slack_ns(ns: u64) {
    // SAFETY: PR_SET_TIMERSLACK takes a plain integer (unsigned long: saturate on 32 bits).
    let slack = libc::c_ulong::try_from(ns).unwrap_or(libc::c_ulong::MAX);
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, slack, 0, 0, 0) };
}

/// What [`lock_memory`] locks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MemoryLock {
    /// Current and future pages (MCL_CURRENT | MCL_FUTURE): what a measuring run needs.
    All,
    /// Current pages only (MCL_CURRENT).
    Current,
    /// Current pages as they are faulted in (MCL_CURRENT | MCL_ONFAULT, Linux 4.4+).
    CurrentOnFault,
}

/// mlockall(2).
pub(crate) fn lock_memory(what: MemoryLock) -> io::Result<()> {
    let flags = match what {
        MemoryLock::All => libc::MCL_CURRENT | libc::MCL_FUTURE,
        MemoryLock::Current => libc::MCL_CURRENT,
        MemoryLock::CurrentOnFault => libc::MCL_CURRENT | libc::MCL_ONFAULT,
    };
    // SAFETY: plain syscall with flags.
    if unsafe { libc::mlockall(flags) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// munlockall(2).
pub(crate) fn unlock_memory() {
    // SAFETY: no arguments.
    unsafe { libc::munlockall() };
}

/// The nice value of process `pid` (getpriority PRIO_PROCESS). getpriority may rightly
/// return -1, so errno is cleared first to tell a failure apart.
pub(crate) fn nice(pid: libc::pid_t) -> io::Result<i32> {
    // SAFETY: errno is this thread's; getpriority takes integers.
    unsafe {
        *libc::__errno_location() = 0;
        let nice = libc::getpriority(libc::PRIO_PROCESS, pid as libc::id_t);
        if nice == -1 && *libc::__errno_location() != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(nice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_calling_threads_policy_reads_back_as_set() {
        // SCHED_OTHER at priority 0 needs no privilege and is what a test thread has.
        set_scheduler(0, SCHED_OTHER, 0).unwrap();
        assert_eq!(scheduler(0).unwrap(), SCHED_OTHER);
        assert_eq!(priority(0).unwrap(), 0);
        // A priority SCHED_OTHER does not have is refused with EINVAL, not ignored.
        let err = set_scheduler(0, SCHED_OTHER, 5).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EINVAL));
    }

    #[test]
    fn affinity_beyond_the_mask_is_refused() {
        assert!(set_affinity(&[1 << 20]).is_err());
    }
}

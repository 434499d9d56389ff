//! Probes of the real-time scheduling policies and of memory locking.

use super::describe;
use crate::doctor::checks::sched::RUN_PRIORITY;
use crate::doctor::root;
use crate::doctor::verdict::{Check, Spec};
use crate::measure::Policy;

const RT_PERMISSION_FIX: &str = "run as root or grant CAP_SYS_NICE; without it raise RLIMIT_RTPRIO (`ulimit -r 99`); \
     in a container, also give its cgroup RT runtime (see scheduling.rt_group)";

/// Sets `policy` at `priority` on the calling thread and restores the previous policy.
fn try_policy(policy: i32, priority: i32) -> Result<(), i32> {
    use crate::sys::sched as os;
    let errno = |e: std::io::Error| e.raw_os_error().unwrap_or(crate::sys::errno::EINVAL);
    let (old_policy, old_priority) = (
        os::scheduler(0).map_err(errno)?,
        os::priority(0).map_err(errno)?,
    );
    let result = os::set_scheduler(0, policy, priority).map_err(errno);
    let _ = os::set_scheduler(0, old_policy, old_priority);
    result
}

const SCHED_FIFO: Spec = Spec {
    id: "posix.sched_fifo",
    area: "posix",
    why: "SCHED_FIFO is the real-time policy jitterlab measures with by default; without it \
          every task can delay the measurement.",
};

pub(super) fn sched_fifo() -> Check {
    match try_policy(crate::sys::sched::SCHED_FIFO, RUN_PRIORITY as i32) {
        Ok(()) => SCHED_FIFO.ok(format!(
            "SCHED_FIFO {RUN_PRIORITY} set on a probe thread and restored"
        )),
        Err(e) => SCHED_FIFO.fail(
            format!("SCHED_FIFO {RUN_PRIORITY} refused: {}", describe(e)),
            RT_PERMISSION_FIX,
        ),
    }
}

const SCHED_RR: Spec = Spec {
    id: "posix.sched_rr",
    area: "posix",
    why: "SCHED_RR is the round-robin real-time policy (`--policy rr`).",
};

pub(super) fn sched_rr() -> Check {
    match try_policy(crate::sys::sched::SCHED_RR, RUN_PRIORITY as i32) {
        Ok(()) => SCHED_RR.ok(format!(
            "SCHED_RR {RUN_PRIORITY} set on a probe thread and restored"
        )),
        Err(e) => SCHED_RR.warn(
            format!("SCHED_RR {RUN_PRIORITY} refused: {}", describe(e)),
            RT_PERMISSION_FIX,
        ),
    }
}

const SCHED_DEADLINE: Spec = Spec {
    id: "posix.sched_deadline",
    area: "posix",
    why: "SCHED_DEADLINE (earliest deadline first with bandwidth reservation) is the kernel's \
          policy for periodic real-time work with guaranteed runtime.",
};

pub(super) fn sched_deadline() -> Check {
    // 100 us every 10 ms: 1% of a CPU, small enough to pass admission control anywhere. Set
    // through the measuring threads' own code, so the probe tries exactly what `run` will do.
    let dl = Policy::Deadline {
        runtime_ns: 100_000,
        deadline_ns: 10_000_000,
        period_ns: 10_000_000,
    };
    match dl.apply_to_current_thread().map_err(|e| e.raw_os_error().unwrap_or(0)) {
        Ok(()) => {
            let restored = Policy::Other.apply_to_current_thread();
            let note = if restored.is_ok() { "restored" } else { "left on the probe thread, which then exited" };
            SCHED_DEADLINE.ok(format!("SCHED_DEADLINE 100 us / 10 ms set on a probe thread and {note}"))
        }
        Err(e) => SCHED_DEADLINE.warn(
            format!("sched_setattr(SCHED_DEADLINE 100 us / 10 ms) refused: {}", describe(e)),
            "SCHED_DEADLINE needs CAP_SYS_NICE (RLIMIT_RTPRIO is not enough), a CPU affinity spanning its \
             whole root domain (do not start jitterlab under taskset), and the root cgroup when RT group \
             scheduling is enabled",
        ),
    }
}

const MLOCKALL: Spec = Spec {
    id: "posix.mlockall",
    area: "posix",
    why: "jitterlab locks its memory with mlockall so the measuring thread never waits for a \
          page fault.",
};

/// The check of a run that locks its memory itself ([`super::MemoryLockCheck::LockedByRun`]):
/// not tried here, as the run's own lock follows within milliseconds and refuses the run
/// (exit 3, its result directory removed) if it fails.
pub(super) fn mlockall_by_the_run() -> Check {
    MLOCKALL.ok(
        "not probed: the run locks its memory itself (mlockall(MCL_CURRENT | MCL_FUTURE)) before it measures, and is refused if it cannot",
    )
}

pub(super) fn mlockall() -> Check {
    // If memory is already locked (a library caller that locked before it snapshots), probing
    // would end with munlockall and undo the caller's lock; the locked memory itself is the
    // evidence.
    let locked_kb = root::read(std::path::Path::new("/"), "proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmLck:"))?
                .split_whitespace()
                .next()?
                .parse::<u64>()
                .ok()
        });
    if let Some(kb) = locked_kb.filter(|&kb| kb > 0) {
        return MLOCKALL.ok(format!(
            "memory already locked by this process (VmLck {kb} kB); not probed again"
        ));
    }
    // MCL_ONFAULT locks pages as they are touched instead of faulting everything in now: the
    // permission check is the same, and the probe does not disturb the system by paging.
    use crate::sys::sched::{MemoryLock, lock_memory, unlock_memory};
    let mut r = lock_memory(MemoryLock::CurrentOnFault);
    if r.as_ref()
        .is_err_and(|e| e.raw_os_error() == Some(crate::sys::errno::EINVAL))
    {
        r = lock_memory(MemoryLock::Current); // kernels before 4.4
    }
    match r {
        Ok(()) => {
            unlock_memory();
            MLOCKALL.ok("mlockall(MCL_CURRENT) succeeded and was undone with munlockall")
        }
        Err(e) => MLOCKALL.fail(
            format!(
                "mlockall(MCL_CURRENT) failed: {}",
                describe(e.raw_os_error().unwrap_or(0))
            ),
            "run as root or grant CAP_IPC_LOCK, or raise RLIMIT_MEMLOCK (`ulimit -l unlimited`)",
        ),
    }
}

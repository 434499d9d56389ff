//! Scheduling setup of the calling thread: policy, priority, CPU affinity, and memory locking,
//! with diagnoses that name the cause of a refusal and the fix.

use crate::sys::errno;
use crate::sys::rlimit::{self, Resource};
use crate::sys::sched as os;
use std::fs;
use std::io;

/// A scheduling policy with its parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    Fifo(i32),
    RoundRobin(i32),
    Other,
    Batch,
    Idle,
    /// SCHED_DEADLINE with its reservation, all in ns.
    Deadline {
        runtime_ns: u64,
        deadline_ns: u64,
        period_ns: u64,
    },
}

impl Policy {
    /// The name as in `chrt` and the kernel docs.
    pub fn name(&self) -> &'static str {
        match self {
            Policy::Fifo(_) => "SCHED_FIFO",
            Policy::RoundRobin(_) => "SCHED_RR",
            Policy::Other => "SCHED_OTHER",
            Policy::Batch => "SCHED_BATCH",
            Policy::Idle => "SCHED_IDLE",
            Policy::Deadline { .. } => "SCHED_DEADLINE",
        }
    }

    pub fn priority(&self) -> i32 {
        match self {
            Policy::Fifo(p) | Policy::RoundRobin(p) => *p,
            _ => 0,
        }
    }

    /// Applies the policy to the calling thread.
    pub fn apply_to_current_thread(&self) -> io::Result<()> {
        if let Policy::Deadline {
            runtime_ns,
            deadline_ns,
            period_ns,
        } = *self
        {
            return os::set_deadline(runtime_ns, deadline_ns, period_ns);
        }
        let (policy, priority) = match *self {
            Policy::Fifo(p) => (os::SCHED_FIFO, p),
            Policy::RoundRobin(p) => (os::SCHED_RR, p),
            Policy::Other => (os::SCHED_OTHER, 0),
            Policy::Batch => (os::SCHED_BATCH, 0),
            Policy::Idle => (os::SCHED_IDLE, 0),
            Policy::Deadline { .. } => unreachable!("handled above"),
        };
        os::set_scheduler(0, policy, priority)
    }
}

/// A scheduling policy as the user names it (`--policy`), before its parameters are known: the
/// priority is chosen separately, and a SCHED_DEADLINE reservation follows each thread's period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyKind {
    Fifo,
    Rr,
    Other,
    Batch,
    Idle,
    Deadline,
}

impl PolicyKind {
    /// Every kind, in the order the command line lists them.
    pub(crate) const ALL: [PolicyKind; 6] = [
        PolicyKind::Fifo,
        PolicyKind::Rr,
        PolicyKind::Other,
        PolicyKind::Batch,
        PolicyKind::Idle,
        PolicyKind::Deadline,
    ];

    /// The name on the command line and in run.json (`plan.policy`).
    pub fn name(self) -> &'static str {
        match self {
            PolicyKind::Fifo => "fifo",
            PolicyKind::Rr => "rr",
            PolicyKind::Other => "other",
            PolicyKind::Batch => "batch",
            PolicyKind::Idle => "idle",
            PolicyKind::Deadline => "deadline",
        }
    }

    /// The kind of this name ([`PolicyKind::name`]).
    pub fn named(name: &str) -> Option<PolicyKind> {
        PolicyKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The priorities this kind accepts, and the default among them.
    pub(crate) fn priorities(self) -> (std::ops::RangeInclusive<i32>, i32) {
        match self {
            PolicyKind::Fifo | PolicyKind::Rr => (1..=99, 95),
            _ => (0..=0, 0),
        }
    }

    /// True for the kinds that preempt normal tasks (FIFO, RR, DEADLINE).
    pub(crate) fn is_realtime(self) -> bool {
        matches!(
            self,
            PolicyKind::Fifo | PolicyKind::Rr | PolicyKind::Deadline
        )
    }
}

/// Pins the calling thread to one CPU.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    os::set_affinity(&[cpu])
}

/// Sets the calling thread's timer slack to 1 ns, so that non-real-time policies are not
/// woken up to 50 us late on purpose (real-time threads have no slack anyway).
pub(crate) fn minimise_timer_slack() {
    os::set_timer_slack_ns(1);
}

/// The drain side's real-time priority (the recorder, the trace reader, the live view), held
/// by the thread that entered it until this is dropped (on that thread).
///
/// Why real-time: under a heavy normal load (hackbench's 1600 processes) a normal thread waits
/// seconds for a CPU, the measuring threads' rings fill and records are dropped, and the late
/// wakeups are exactly the ones lost. SCHED_FIFO at a priority below the measuring threads
/// runs ahead of every normal task and never ahead of a measuring thread. With
/// SCHED_RESET_ON_FORK, a thread or load process started from a drain thread begins with
/// SCHED_OTHER, as it would have without this.
#[derive(Debug)]
pub(crate) struct DrainPriority {
    raised: bool,
}

impl DrainPriority {
    /// Raises the calling thread to SCHED_FIFO `priority` (None: leaves it alone). A refusal
    /// is returned as a warning to record; the thread then drains at normal priority.
    pub(crate) fn enter(priority: Option<i32>) -> (DrainPriority, Option<String>) {
        let Some(priority) = priority else {
            return (DrainPriority { raised: false }, None);
        };
        match os::set_scheduler(0, os::SCHED_FIFO | os::SCHED_RESET_ON_FORK, priority) {
            Ok(()) => (DrainPriority { raised: true }, None),
            Err(e) => (
                DrainPriority { raised: false },
                Some(format!(
                    "--drain-priority {priority}: the kernel refused SCHED_FIFO {priority} for the drain side ({e}); it runs at normal priority, so a heavy normal load can make the rings overflow (dropped records are counted)"
                )),
            ),
        }
    }

    /// Back to normal scheduling, once the last drain is done (also on drop).
    pub(crate) fn leave(&mut self) {
        if std::mem::take(&mut self.raised) {
            // The reset-on-fork flag stays (clearing it would need CAP_SYS_NICE, and it
            // changes nothing for SCHED_OTHER).
            let _ = os::set_scheduler(0, os::SCHED_OTHER | os::SCHED_RESET_ON_FORK, 0);
        }
    }
}

impl Drop for DrainPriority {
    fn drop(&mut self) {
        self.leave();
    }
}

/// The calling thread confined to the housekeeping CPUs (`--housekeeping`) until this is
/// dropped (on that thread), when its former CPUs are given back. Every thread it starts
/// inherits the confinement: the trace reader, the load supervisor, the metrics server. The
/// measuring threads and their helpers pin themselves to their own CPUs, which a confined
/// parent does not prevent.
#[derive(Debug)]
pub(crate) struct Housekeeping {
    former: Option<Vec<usize>>,
}

impl Housekeeping {
    /// Confines the calling thread to `cpus` (None: leaves it alone).
    pub(crate) fn enter(cpus: Option<&[usize]>) -> io::Result<Housekeeping> {
        let Some(cpus) = cpus else {
            return Ok(Housekeeping { former: None });
        };
        let former = os::affinity()?;
        os::set_affinity(cpus)?;
        Ok(Housekeeping {
            former: Some(former),
        })
    }
}

impl Drop for Housekeeping {
    fn drop(&mut self) {
        if let Some(former) = self.former.take() {
            let _ = os::set_affinity(&former);
        }
    }
}

/// The timer callbacks that expire in the softirq thread `ktimers/N` (FIFO 1) on a PREEMPT_RT
/// kernel, of the wake methods' timers (src/measure/wake): itimers, POSIX timers, timerfd.
/// The sleepers' `hrtimer_wakeup` of a real-time thread expires in hard interrupt context.
pub(crate) const SOFT_TIMER_FUNCTIONS: &[&str] =
    &["it_real_fn", "posix_timer_fn", "timerfd_tmrproc"];

/// Where jitterlab's own threads (the main thread, the drain side, the recorder, the trace
/// reader: FIFO 1 with a drain priority) run when `--housekeeping` is not given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum OwnThreads {
    /// Where the process may run, as before: not a PREEMPT_RT kernel (its timer softirq runs
    /// at interrupt exit, which no thread holds off), or `--housekeeping` given.
    Anywhere,
    /// On these CPUs: a PREEMPT_RT kernel, where `ktimers/N` runs the soft timers at FIFO 1
    /// and a FIFO 1 thread of jitterlab on a measured CPU holds it off as any FIFO 1 task does
    /// (5-80 ms under qemu, lab check 1c): the CPUs the process may run on that are neither
    /// measured nor isolated (`isolcpus`, `nohz_full`).
    Housekeeping(Vec<usize>),
    /// A PREEMPT_RT kernel with no such CPU: they stay beside the measuring threads.
    NoneLeft,
}

/// [`OwnThreads`] from the facts: `realtime` (the kernel is PREEMPT_RT), `housekeeping_given`
/// (`--housekeeping`), the measured CPUs, the isolated ones and the CPUs this process may run
/// on (its affinity).
pub(crate) fn own_threads_placement(
    realtime: bool,
    housekeeping_given: bool,
    measured: &[usize],
    isolated: &[usize],
    allowed: &[usize],
) -> OwnThreads {
    if !realtime || housekeeping_given {
        return OwnThreads::Anywhere;
    }
    let free: Vec<usize> = allowed
        .iter()
        .copied()
        .filter(|c| !measured.contains(c) && !isolated.contains(c))
        .collect();
    if free.is_empty() {
        OwnThreads::NoneLeft
    } else {
        OwnThreads::Housekeeping(free)
    }
}

/// [`own_threads_placement`] on this system now: PREEMPT_RT from /sys/kernel/realtime (1),
/// the isolated CPUs from /sys/devices/system/cpu/isolated and .../nohz_full.
pub(crate) fn own_threads_now(housekeeping_given: bool, measured: &[usize]) -> OwnThreads {
    let read = |p: &str| fs::read_to_string(p).unwrap_or_default();
    let realtime = read("/sys/kernel/realtime").trim() == "1";
    if !realtime || housekeeping_given {
        return OwnThreads::Anywhere;
    }
    let mut isolated = Vec::new();
    for p in [
        "/sys/devices/system/cpu/isolated",
        "/sys/devices/system/cpu/nohz_full",
    ] {
        isolated.extend(crate::cpulist::parse_cpu_list(read(p).trim()).unwrap_or_default());
    }
    let allowed = os::affinity().unwrap_or_default();
    own_threads_placement(realtime, housekeeping_given, measured, &isolated, &allowed)
}

/// Locks all current and future pages of the process in memory.
pub(crate) fn lock_all_memory() -> io::Result<()> {
    os::lock_memory(os::MemoryLock::All)
}

/// Touches `bytes` of the calling thread's stack so that its pages are resident before the
/// first measured cycle (with mlockall they then stay resident: no page fault in the loop).
#[inline(never)]
pub(crate) fn prefault_stack(bytes: usize) {
    const CHUNK: usize = 8192;
    fn touch(remaining: usize) {
        let mut page = [0u8; CHUNK];
        // black_box keeps the compiler from eliding the writes.
        std::hint::black_box(&mut page);
        if remaining > CHUNK {
            touch(remaining - CHUNK);
        }
        std::hint::black_box(&page);
    }
    touch(bytes);
}

/// Explains why the kernel refused `policy` and what to do, from the errno and what the
/// process can see of its limits, capabilities and cgroup.
pub(crate) fn explain_policy_refusal(policy: &Policy, cpu: usize, err: &io::Error) -> String {
    explain_refusal_with(
        policy,
        cpu,
        err,
        "pass --policy other to measure without real-time priority",
    )
}

/// [`explain_policy_refusal`] for a thread that `--policy` does not govern (the spike load):
/// `alternative` is the last fix offered, after root, CAP_SYS_NICE and RLIMIT_RTPRIO.
pub(crate) fn explain_refusal_with(
    policy: &Policy,
    cpu: usize,
    err: &io::Error,
    alternative: &str,
) -> String {
    let what = match policy {
        Policy::Fifo(p) | Policy::RoundRobin(p) => format!("{} {p}", policy.name()),
        other => other.name().to_string(),
    };
    let mut causes = Vec::new();
    if err.raw_os_error() == Some(errno::EPERM) || err.raw_os_error() == Some(errno::EBUSY) {
        let rtprio = soft_limit(Resource::RtPrio);
        let has_nice = has_capability(CAP_SYS_NICE);
        if !has_nice {
            causes.push(format!(
                "the process lacks CAP_SYS_NICE and RLIMIT_RTPRIO is {}",
                rtprio.map_or("unknown".into(), |r| r.to_string())
            ));
        }
        if let Some((file, runtime)) = cgroup_rt_runtime_us().filter(|(_, r)| *r <= 0) {
            causes.push(format!(
                "this task's cgroup has no real-time runtime ({file} is {runtime}); \
                 give it some, e.g. echo 950000 > {file} (its parents' must hold as much), or run outside that cgroup"
            ));
        }
        if matches!(policy, Policy::Deadline { .. }) {
            causes.push(
                "SCHED_DEADLINE admission control refused the reservation (bandwidth over \
                 sched_rt_runtime_us/sched_rt_period_us, or the task's affinity does not span its root domain)"
                    .into(),
            );
        }
    }
    let cause = if causes.is_empty() {
        String::new()
    } else {
        format!(" ({})", causes.join("; "))
    };
    format!(
        "cannot set {what} on CPU {cpu}: {err}{cause}; run as root, or grant CAP_SYS_NICE \
         (setcap cap_sys_nice+ep $(which jitterlab)), or raise RLIMIT_RTPRIO (ulimit -r 99, or \
         rtprio in /etc/security/limits.conf), or {alternative}"
    )
}

/// Explains a refused mlockall; `fix` is the command's own way to measure without locking,
/// offered last (none: the fixes are root, CAP_IPC_LOCK or the limit).
pub(crate) fn explain_mlock_refusal(err: &io::Error, fix: Option<&str>) -> String {
    let limit = soft_limit(Resource::Memlock).map_or("unknown".to_string(), |v| {
        if v == u64::MAX {
            "unlimited".into()
        } else {
            format!("{v} bytes")
        }
    });
    let cap = if has_capability(CAP_IPC_LOCK) {
        "has"
    } else {
        "lacks"
    };
    let fix = fix.map_or(String::new(), |f| format!(", or {f}"));
    format!(
        "cannot lock memory (mlockall): {err} (RLIMIT_MEMLOCK is {limit}; the process {cap} \
         CAP_IPC_LOCK); run as root, or raise the limit (ulimit -l unlimited, or memlock in \
         /etc/security/limits.conf){fix}"
    )
}

const CAP_SYS_NICE: u32 = 23;
const CAP_IPC_LOCK: u32 = 14;

fn soft_limit(resource: Resource) -> Option<u64> {
    rlimit::get(resource).ok().map(|l| l.soft)
}

/// Whether the effective capability set (CapEff in /proc/self/status) holds `cap`.
fn has_capability(cap: u32) -> bool {
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        })
        .is_some_and(|mask| mask & (1 << cap) != 0)
}

/// The `cpu.rt_runtime_us` file of this process's cpu cgroup (RT group scheduling; v1 cpu
/// controller or v2) and its value, when it exists.
fn cgroup_rt_runtime_us() -> Option<(String, i64)> {
    let cgroups = fs::read_to_string("/proc/self/cgroup").ok()?;
    for line in cgroups.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let base = if controllers.split(',').any(|c| c == "cpu") {
            "/sys/fs/cgroup/cpu"
        } else if controllers.is_empty() {
            "/sys/fs/cgroup"
        } else {
            continue;
        };
        let file = format!("{base}{path}/cpu.rt_runtime_us");
        if let Ok(text) = fs::read_to_string(&file) {
            return Some((file, text.trim().parse().ok()?));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #[test]
    fn own_threads_leave_the_measured_and_isolated_cpus_on_preempt_rt_only() {
        use super::{OwnThreads, own_threads_placement as place};
        // The lab's RT guest measuring both CPUs (CPU 1 isolated): none left.
        assert_eq!(
            place(true, false, &[0, 1], &[1], &[0, 1]),
            OwnThreads::NoneLeft
        );
        // Measuring CPU 0 there: CPU 1 is isolated, so still none.
        assert_eq!(
            place(true, false, &[0], &[1], &[0, 1]),
            OwnThreads::NoneLeft
        );
        // Measuring the isolated CPU 1: CPU 0.
        assert_eq!(
            place(true, false, &[1], &[1], &[0, 1]),
            OwnThreads::Housekeeping(vec![0])
        );
        // Four CPUs, 2-3 measured and isolated, the process allowed 0-3.
        assert_eq!(
            place(true, false, &[2, 3], &[2, 3], &[0, 1, 2, 3]),
            OwnThreads::Housekeeping(vec![0, 1])
        );
        // Only the CPUs the process may run on.
        assert_eq!(
            place(true, false, &[2], &[], &[1, 2]),
            OwnThreads::Housekeeping(vec![1])
        );
        // Not PREEMPT_RT, or --housekeeping given: as before.
        assert_eq!(
            place(false, false, &[0], &[], &[0, 1]),
            OwnThreads::Anywhere
        );
        assert_eq!(place(true, true, &[0], &[], &[0, 1]), OwnThreads::Anywhere);
    }

    use super::*;

    /// The drain side runs SCHED_FIFO while it holds its priority, a thread it starts begins
    /// with SCHED_OTHER (reset on fork), and leaving returns it to SCHED_OTHER. Skipped where
    /// SCHED_FIFO is refused (the refusal is then the warning `enter` returns).
    #[test]
    fn the_drain_priority_is_held_not_inherited_and_given_back() {
        std::thread::spawn(|| {
            let (mut held, refused) = DrainPriority::enter(Some(1));
            if let Some(warning) = refused {
                assert!(warning.contains("--drain-priority 1"), "{warning}");
                eprintln!("SKIPPED: SCHED_FIFO is refused here");
                return;
            }
            assert_eq!(os::scheduler(0).unwrap(), os::SCHED_FIFO);
            assert_eq!(os::priority(0).unwrap(), 1);
            let child = std::thread::spawn(|| os::scheduler(0).unwrap())
                .join()
                .unwrap();
            assert_eq!(child, os::SCHED_OTHER, "a thread the drain side starts");
            held.leave();
            assert_eq!(os::scheduler(0).unwrap(), os::SCHED_OTHER);
            let (_none, refused) = DrainPriority::enter(None);
            assert!(refused.is_none());
            assert_eq!(os::scheduler(0).unwrap(), os::SCHED_OTHER);
        })
        .join()
        .unwrap();
    }
}

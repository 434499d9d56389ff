//! Live probes of the POSIX real-time features and eBPF: each feature is tried, not assumed.
//!
//! All probes run on one short-lived thread, so that what is per-thread (scheduling policy,
//! signal mask) dies with it even if a restore step were missed; what is per-process (locked
//! memory, named queues and shared memory) is undone by the probe itself, and named objects
//! are unlinked right after creation so that nothing can be left behind.

use std::ffi::CString;
use std::sync::atomic::{AtomicU32, Ordering};

use super::checks::kernel::clock_res_ns;
use super::checks::sched::RUN_PRIORITY;
use super::root;
use super::verdict::{Check, Spec};

/// Runs every probe on a fresh thread and returns their checks, in display order.
pub fn run_all() -> Vec<Check> {
    let probes = std::thread::Builder::new()
        .name("jitterlab-probe".into())
        .spawn(|| {
            vec![
                sched_fifo(),
                sched_rr(),
                sched_deadline(),
                mlockall(),
                posix_timers(),
                rt_signals(),
                message_queues(),
                pi_futex(),
                shared_memory(),
                bpf(),
            ]
        });
    match probes.map(|handle| handle.join()) {
        Ok(Ok(checks)) => checks,
        _ => vec![PROBE_THREAD.unknown(
            "the probe thread could not be started or stopped unexpectedly",
            "report this as a jitterlab bug, with `jitterlab doctor` output",
        )],
    }
}

const PROBE_THREAD: Spec = Spec {
    id: "posix.probes",
    area: "posix",
    why: "The POSIX real-time features are checked by trying them on a probe thread.",
};

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// `EPERM (Operation not permitted)` for an errno value.
fn describe(err: i32) -> String {
    let name = match err {
        libc::EPERM => "EPERM",
        libc::EINVAL => "EINVAL",
        libc::ENOSYS => "ENOSYS",
        libc::EBUSY => "EBUSY",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EAGAIN => "EAGAIN",
        libc::ENOENT => "ENOENT",
        libc::ENOTSUP => "ENOTSUP",
        libc::EMFILE => "EMFILE",
        _ => "",
    };
    let text = std::io::Error::from_raw_os_error(err).to_string();
    let text = text.split(" (os error").next().unwrap_or(&text).to_string();
    if name.is_empty() {
        format!("errno {err} ({text})")
    } else {
        format!("{name} ({text})")
    }
}

/// A name for a named POSIX object that no other process or probe uses.
fn unique_name(kind: &str) -> CString {
    static SEQ: AtomicU32 = AtomicU32::new(0);
    let n = SEQ.fetch_add(1, Ordering::Relaxed);
    CString::new(format!(
        "/jitterlab-doctor-{kind}-{}-{n}",
        std::process::id()
    ))
    .expect("no NUL in name")
}

const RT_PERMISSION_FIX: &str = "run as root or grant CAP_SYS_NICE; without it raise RLIMIT_RTPRIO (`ulimit -r 99`); \
     in a container, also give its cgroup RT runtime (see scheduling.rt_group)";

/// Sets `policy` at `priority` on the calling thread and restores the previous policy.
fn try_policy(policy: libc::c_int, priority: libc::c_int) -> Result<(), i32> {
    // SAFETY: plain calls on the current thread with valid pointers to local structs.
    unsafe {
        let me = libc::pthread_self();
        let mut old_policy = 0;
        let mut old = libc::sched_param { sched_priority: 0 };
        libc::pthread_getschedparam(me, &mut old_policy, &mut old);
        let param = libc::sched_param {
            sched_priority: priority,
        };
        let err = libc::pthread_setschedparam(me, policy, &param);
        libc::pthread_setschedparam(me, old_policy, &old);
        if err == 0 { Ok(()) } else { Err(err) }
    }
}

const SCHED_FIFO: Spec = Spec {
    id: "posix.sched_fifo",
    area: "posix",
    why: "SCHED_FIFO is the real-time policy jitterlab measures with by default; without it \
          every task can delay the measurement.",
};

fn sched_fifo() -> Check {
    match try_policy(libc::SCHED_FIFO, RUN_PRIORITY as i32) {
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

fn sched_rr() -> Check {
    match try_policy(libc::SCHED_RR, RUN_PRIORITY as i32) {
        Ok(()) => SCHED_RR.ok(format!(
            "SCHED_RR {RUN_PRIORITY} set on a probe thread and restored"
        )),
        Err(e) => SCHED_RR.warn(
            format!("SCHED_RR {RUN_PRIORITY} refused: {}", describe(e)),
            RT_PERMISSION_FIX,
        ),
    }
}

/// struct sched_attr of sched_setattr(2); libc does not export it.
#[repr(C)]
#[derive(Default)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime_ns: u64,
    deadline_ns: u64,
    period_ns: u64,
}

const SCHED_DEADLINE_POLICY: u32 = 6;

fn sched_setattr(attr: &SchedAttr) -> Result<(), i32> {
    // SAFETY: sched_setattr reads `size` bytes from a valid, initialised struct; tid 0 = us.
    let r = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, attr as *const SchedAttr, 0) };
    if r == 0 { Ok(()) } else { Err(errno()) }
}

const SCHED_DEADLINE: Spec = Spec {
    id: "posix.sched_deadline",
    area: "posix",
    why: "SCHED_DEADLINE (earliest deadline first with bandwidth reservation) is the kernel's \
          policy for periodic real-time work with guaranteed runtime.",
};

fn sched_deadline() -> Check {
    let size = std::mem::size_of::<SchedAttr>() as u32;
    // 100 us every 10 ms: 1% of a CPU, small enough to pass admission control anywhere.
    let dl = SchedAttr {
        size,
        policy: SCHED_DEADLINE_POLICY,
        runtime_ns: 100_000,
        deadline_ns: 10_000_000,
        period_ns: 10_000_000,
        ..Default::default()
    };
    match sched_setattr(&dl) {
        Ok(()) => {
            let restored = sched_setattr(&SchedAttr { size, policy: libc::SCHED_OTHER as u32, ..Default::default() });
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

fn mlockall() -> Check {
    // If memory is already locked (`run` locks before it snapshots), probing would end with
    // munlockall and undo the caller's lock; the locked memory itself is the evidence.
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
    // SAFETY: mlockall/munlockall take flags only.
    let mut r = unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_ONFAULT) };
    if r != 0 && errno() == libc::EINVAL {
        r = unsafe { libc::mlockall(libc::MCL_CURRENT) }; // kernels before 4.4
    }
    if r == 0 {
        unsafe { libc::munlockall() };
        MLOCKALL.ok("mlockall(MCL_CURRENT) succeeded and was undone with munlockall")
    } else {
        MLOCKALL.fail(
            format!("mlockall(MCL_CURRENT) failed: {}", describe(errno())),
            "run as root or grant CAP_IPC_LOCK, or raise RLIMIT_MEMLOCK (`ulimit -l unlimited`)",
        )
    }
}

const TIMERS: Spec = Spec {
    id: "posix.timers",
    area: "posix",
    why: "POSIX timers (timer_create, timer_settime) drive periodic real-time work and \
          jitterlab's timer-based wake methods.",
};

fn posix_timers() -> Check {
    let res = clock_res_ns(libc::CLOCK_MONOTONIC).map_or("unknown".into(), |r| format!("{r} ns"));
    // SAFETY: the sigevent is zeroed and fully valid for SIGEV_NONE; the timer id is only used
    // between a successful timer_create and the matching timer_delete.
    unsafe {
        let mut ev: libc::sigevent = std::mem::zeroed();
        ev.sigev_notify = libc::SIGEV_NONE;
        let mut id: libc::timer_t = std::mem::zeroed();
        if libc::timer_create(libc::CLOCK_MONOTONIC, &mut ev, &mut id) != 0 {
            return TIMERS.fail(
                format!(
                    "timer_create(CLOCK_MONOTONIC) failed: {}",
                    describe(errno())
                ),
                "use a kernel with CONFIG_POSIX_TIMERS=y",
            );
        }
        // Arm a 1 ms one-shot timer, sleep past it, and check that it expired.
        let zero = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let arm = libc::itimerspec {
            it_interval: zero,
            it_value: libc::timespec {
                tv_sec: 0,
                tv_nsec: 1_000_000,
            },
        };
        let set = libc::timer_settime(id, 0, &arm, std::ptr::null_mut());
        let nap = libc::timespec {
            tv_sec: 0,
            tv_nsec: 2_000_000,
        };
        libc::clock_nanosleep(libc::CLOCK_MONOTONIC, 0, &nap, std::ptr::null_mut());
        let mut left = libc::itimerspec {
            it_interval: zero,
            it_value: zero,
        };
        let get = libc::timer_gettime(id, &mut left);
        let err = errno();
        libc::timer_delete(id);
        if set != 0 || get != 0 {
            return TIMERS.fail(
                format!("timer_settime/timer_gettime failed: {}", describe(err)),
                "use a kernel with CONFIG_POSIX_TIMERS=y",
            );
        }
        let expired = left.it_value.tv_sec == 0 && left.it_value.tv_nsec == 0;
        if expired {
            TIMERS.ok(format!("a 1 ms CLOCK_MONOTONIC timer was created, expired and deleted; clock resolution {res}"))
        } else {
            TIMERS.fail(
                format!(
                    "a 1 ms timer had not expired after 2 ms ({} ns left); clock resolution {res}",
                    left.it_value.tv_nsec
                ),
                "check kernel.hrtimers and the clocksource",
            )
        }
    }
}

const RT_SIGNALS: Spec = Spec {
    id: "posix.rt_signals",
    area: "posix",
    why: "Real-time signals (SIGRTMIN..SIGRTMAX) are queued with a value and delivered in order; \
          timer and I/O notification in real-time applications rely on that.",
};

/// The head of siginfo_t for a queued signal: si_signo, si_errno, si_code, then the `_rt`
/// member of the union; the rest of the 128 bytes stays zero.
#[repr(C)]
struct QueuedInfo {
    signo: libc::c_int,
    errno: libc::c_int,
    code: libc::c_int,
    // A struct of its own because the kernel's union is pointer-aligned: on 64-bit targets it
    // starts at offset 16, not 12.
    rt: QueuedRt,
}

#[repr(C)]
struct QueuedRt {
    pid: libc::pid_t,
    uid: libc::uid_t,
    value: libc::sigval,
}

fn rt_signals() -> Check {
    let (min, max) = (libc::SIGRTMIN(), libc::SIGRTMAX());
    let count = max - min + 1;
    let sig = max;
    let values = [11usize, 22, 33];
    // SAFETY: signal-set and siginfo manipulation on local, zero-initialised structs. The
    // signal is blocked on this thread before it is queued to this thread only, and every
    // queued instance is taken back with sigtimedwait before the mask is restored, so it is
    // never delivered (the default action of a real-time signal terminates the process).
    let outcome = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        let mut pending: libc::sigset_t = std::mem::zeroed();
        libc::sigpending(&mut pending);
        let outcome = if libc::sigismember(&pending, sig) == 1 {
            Err(format!(
                "signal {sig} was already pending; not probed so as not to take it"
            ))
        } else {
            let tid = libc::syscall(libc::SYS_gettid) as libc::pid_t;
            let mut queued = 0;
            let mut err = 0;
            for &v in &values {
                let mut info: libc::siginfo_t = std::mem::zeroed();
                let head = &mut info as *mut libc::siginfo_t as *mut QueuedInfo;
                (*head).signo = sig;
                (*head).code = libc::SI_QUEUE;
                (*head).rt = QueuedRt {
                    pid: libc::getpid(),
                    uid: libc::getuid(),
                    value: libc::sigval {
                        sival_ptr: v as *mut libc::c_void,
                    },
                };
                // rt_tgsigqueueinfo is sigqueue(3) aimed at one thread (what pthread_sigqueue
                // uses): a process-directed sigqueue could be delivered to another thread that
                // does not block the signal, and kill the process.
                if libc::syscall(libc::SYS_rt_tgsigqueueinfo, libc::getpid(), tid, sig, &info) == 0
                {
                    queued += 1;
                } else {
                    err = errno();
                }
            }
            let mut got = Vec::new();
            let zero = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            loop {
                let mut info: libc::siginfo_t = std::mem::zeroed();
                if libc::sigtimedwait(&set, &mut info, &zero) != sig {
                    break;
                }
                got.push(info.si_value().sival_ptr as usize);
            }
            if queued < values.len() {
                Err(format!(
                    "sigqueue of signal {sig} failed: {}",
                    describe(err)
                ))
            } else if got != values {
                Err(format!(
                    "queued values {values:?} to signal {sig}, received {got:?}"
                ))
            } else {
                Ok(())
            }
        };
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        outcome
    };
    let range = format!("SIGRTMIN..SIGRTMAX = {min}..{max} ({count} signals)");
    match outcome {
        // POSIX requires at least RTSIG_MAX = 8 real-time signals.
        Ok(()) if count >= 8 => RT_SIGNALS.ok(format!(
            "{range}; signal {sig} queued 3 times with values {values:?} and received in order"
        )),
        Ok(()) => RT_SIGNALS.warn(
            format!("{range}: fewer than POSIX's 8"),
            "use a standard Linux C library",
        ),
        Err(e) => RT_SIGNALS.warn(
            format!("{range}; {e}"),
            "check RLIMIT_SIGPENDING (`ulimit -i`) and seccomp filters",
        ),
    }
}

const MQUEUE: Spec = Spec {
    id: "posix.mqueue",
    area: "posix",
    why: "POSIX message queues carry prioritised messages between real-time processes.",
};

fn message_queues() -> Check {
    let name = unique_name("mq");
    let msg = b"probe";
    // SAFETY: the queue name is a valid C string; buffers are local and sized as declared.
    unsafe {
        let mut attr: libc::mq_attr = std::mem::zeroed();
        attr.mq_maxmsg = 1;
        attr.mq_msgsize = 8;
        let q = libc::mq_open(
            name.as_ptr(),
            libc::O_CREAT | libc::O_EXCL | libc::O_RDWR,
            0o600 as libc::mode_t,
            &mut attr as *mut libc::mq_attr,
        );
        if q == -1 {
            return MQUEUE.warn(
                format!("mq_open failed: {}", describe(errno())),
                "use a kernel with CONFIG_POSIX_MQUEUE=y and mount the mqueue filesystem (`mount -t mqueue none /dev/mqueue`); \
                 check /proc/sys/fs/mqueue/queues_max and RLIMIT_MSGQUEUE",
            );
        }
        // Unlink at once: the queue lives on through the descriptor and disappears with it.
        libc::mq_unlink(name.as_ptr());
        let sent = libc::mq_send(q, msg.as_ptr() as *const libc::c_char, msg.len(), 7);
        let mut buf = [0u8; 8];
        let mut prio = 0u32;
        let got = libc::mq_receive(
            q,
            buf.as_mut_ptr() as *mut libc::c_char,
            buf.len(),
            &mut prio,
        );
        let err = errno();
        libc::mq_close(q);
        if sent == 0 && got == msg.len() as isize && &buf[..msg.len()] == msg && prio == 7 {
            MQUEUE.ok("a queue was created, a message with priority 7 sent and received, the queue removed")
        } else {
            MQUEUE.warn(
                format!("mq_send/mq_receive did not round-trip: {}", describe(err)),
                "check seccomp filters and RLIMIT_MSGQUEUE",
            )
        }
    }
}

const PI_FUTEX: Spec = Spec {
    id: "posix.pi_futex",
    area: "posix",
    why: "Priority-inheritance mutexes (PTHREAD_PRIO_INHERIT, built on PI futexes) prevent \
          priority inversion between real-time threads sharing a lock.",
};

fn pi_futex() -> Check {
    // SAFETY: the mutex and attribute live on this stack frame for their whole init..destroy
    // life; the futex word is a local owned by this thread.
    unsafe {
        let mut attr: libc::pthread_mutexattr_t = std::mem::zeroed();
        libc::pthread_mutexattr_init(&mut attr);
        let proto = libc::pthread_mutexattr_setprotocol(&mut attr, libc::PTHREAD_PRIO_INHERIT);
        let mut mutex: libc::pthread_mutex_t = std::mem::zeroed();
        let init = if proto == 0 {
            libc::pthread_mutex_init(&mut mutex, &attr)
        } else {
            proto
        };
        libc::pthread_mutexattr_destroy(&mut attr);
        if init != 0 {
            return PI_FUTEX.warn(
                format!("PTHREAD_PRIO_INHERIT mutex refused: {}", describe(init)),
                "use a kernel with CONFIG_FUTEX_PI=y",
            );
        }
        let lock = libc::pthread_mutex_lock(&mut mutex);
        let unlock = if lock == 0 {
            libc::pthread_mutex_unlock(&mut mutex)
        } else {
            lock
        };
        libc::pthread_mutex_destroy(&mut mutex);
        if unlock != 0 {
            return PI_FUTEX.warn(
                format!("PI mutex lock/unlock failed: {}", describe(unlock)),
                "use a kernel with CONFIG_FUTEX_PI=y",
            );
        }
        // An uncontended PI mutex is taken in user space without asking the kernel, so also
        // take a PI futex through the kernel directly.
        const FUTEX_LOCK_PI: libc::c_int = 6;
        const FUTEX_UNLOCK_PI: libc::c_int = 7;
        let word = AtomicU32::new(0);
        let futex = |op: libc::c_int| {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                op | libc::FUTEX_PRIVATE_FLAG,
                0,
                std::ptr::null::<libc::timespec>(),
                0,
                0,
            )
        };
        if futex(FUTEX_LOCK_PI) != 0 {
            return PI_FUTEX.warn(
                format!("FUTEX_LOCK_PI failed: {}", describe(errno())),
                "use a kernel with CONFIG_FUTEX_PI=y",
            );
        }
        let owner = word.load(Ordering::Relaxed) & 0x3fff_ffff;
        futex(FUTEX_UNLOCK_PI);
        PI_FUTEX.ok(format!(
            "a PTHREAD_PRIO_INHERIT mutex was locked and unlocked; FUTEX_LOCK_PI took the futex for thread {owner} and FUTEX_UNLOCK_PI released it"
        ))
    }
}

const SHM: Spec = Spec {
    id: "posix.shm",
    area: "posix",
    why: "POSIX shared memory (shm_open) is how real-time processes share data without copying.",
};

fn shared_memory() -> Check {
    let name = unique_name("shm");
    // SAFETY: valid C string name; the mapping is used only between mmap and munmap.
    unsafe {
        let fd = libc::shm_open(
            name.as_ptr(),
            libc::O_CREAT | libc::O_EXCL | libc::O_RDWR,
            0o600,
        );
        if fd < 0 {
            return SHM.warn(
                format!("shm_open failed: {}", describe(errno())),
                "mount a tmpfs at /dev/shm (`mount -t tmpfs tmpfs /dev/shm`)",
            );
        }
        // Unlink at once so nothing remains in /dev/shm whatever happens next.
        libc::shm_unlink(name.as_ptr());
        let len = 4096;
        let ok = libc::ftruncate(fd, len as libc::off_t) == 0 && {
            let p = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            );
            p != libc::MAP_FAILED && {
                *(p as *mut u8) = 1;
                libc::munmap(p, len);
                true
            }
        };
        let err = errno();
        libc::close(fd);
        if ok {
            SHM.ok("a shared memory object was created, sized, mapped, written and removed")
        } else {
            SHM.warn(
                format!(
                    "ftruncate/mmap of the shared memory object failed: {}",
                    describe(err)
                ),
                "check the size limit of /dev/shm",
            )
        }
    }
}

const BPF: Spec = Spec {
    id: "tracing.bpf",
    area: "tracing",
    why: "eBPF lets tracing aggregate in the kernel instead of streaming every event; it needs \
          the bpf(2) system call and the privilege to use it.",
};

fn bpf() -> Check {
    // union bpf_attr for BPF_MAP_CREATE: map_type, key_size, value_size, max_entries; the rest
    // must be zero.
    const BPF_MAP_CREATE: libc::c_long = 0;
    const BPF_MAP_TYPE_ARRAY: u32 = 2;
    let mut attr = [0u32; 32];
    attr[..4].copy_from_slice(&[BPF_MAP_TYPE_ARRAY, 4, 4, 1]);
    // SAFETY: the attribute buffer is valid for its full size for the duration of the call.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_MAP_CREATE,
            attr.as_ptr(),
            std::mem::size_of_val(&attr),
        )
    };
    if fd >= 0 {
        unsafe { libc::close(fd as libc::c_int) };
        return BPF.ok("bpf(BPF_MAP_CREATE) created a one-entry array map, closed again");
    }
    let err = errno();
    let setting = root::read_trim(
        std::path::Path::new("/"),
        "proc/sys/kernel/unprivileged_bpf_disabled",
    )
    .map(|v| format!("; kernel.unprivileged_bpf_disabled = {v}"))
    .unwrap_or_default();
    BPF.warn(
        format!("bpf(BPF_MAP_CREATE) failed: {}{setting}", describe(err)),
        if err == libc::ENOSYS {
            "use a kernel with CONFIG_BPF_SYSCALL=y"
        } else {
            "run as root or grant CAP_BPF and CAP_PERFMON"
        },
    )
}

//! Probes of POSIX timers and real-time signals.

use super::{describe, errno};
use crate::system::checks::kernel::clock_res_ns;
use crate::system::verdict::{Check, Spec};

const TIMERS: Spec = Spec {
    id: "posix.timers",
    area: "posix",
    why: "POSIX timers (timer_create, timer_settime) drive periodic real-time work and \
          jitterlab's timer-based wake methods.",
};

pub(super) fn posix_timers() -> Check {
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

pub(super) fn rt_signals() -> Check {
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

//! Probes of the inter-process mechanisms: message queues, PI futexes, shared memory.

use super::{describe, errno, unique_name};
use crate::system::verdict::{Check, Spec};
use std::sync::atomic::{AtomicU32, Ordering};

const MQUEUE: Spec = Spec {
    id: "posix.mqueue",
    area: "posix",
    why: "POSIX message queues carry prioritised messages between real-time processes.",
};

pub(super) fn message_queues() -> Check {
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

pub(super) fn pi_futex() -> Check {
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

pub(super) fn shared_memory() -> Check {
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

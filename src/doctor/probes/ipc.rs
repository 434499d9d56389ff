//! Probes of the inter-process mechanisms: message queues, PI futexes, shared memory.

use super::{describe, unique_name};
use crate::doctor::verdict::{Check, Spec};
use crate::sys::ipc_probes::{self as ipc, Refused};

const MQUEUE: Spec = Spec {
    id: "posix.mqueue",
    area: "posix",
    why: "POSIX message queues carry prioritised messages between real-time processes.",
};

pub(super) fn message_queues() -> Check {
    match ipc::message_queue_round_trip(&unique_name("mq")) {
        Ok(()) => MQUEUE.ok("a queue was created, a message with priority 7 sent and received, the queue removed"),
        Err(Refused::Create(err)) => MQUEUE.warn(
            format!("mq_open failed: {}", describe(err)),
            "use a kernel with CONFIG_POSIX_MQUEUE=y and mount the mqueue filesystem (`mount -t mqueue none /dev/mqueue`); \
             check /proc/sys/fs/mqueue/queues_max and RLIMIT_MSGQUEUE",
        ),
        Err(Refused::Use(err)) => MQUEUE.warn(
            format!("mq_send/mq_receive did not round-trip: {}", describe(err)),
            "check seccomp filters and RLIMIT_MSGQUEUE",
        ),
    }
}

const PI_FUTEX: Spec = Spec {
    id: "posix.pi_futex",
    area: "posix",
    why: "Priority-inheritance mutexes (PTHREAD_PRIO_INHERIT, built on PI futexes) prevent \
          priority inversion between real-time threads sharing a lock.",
};

pub(super) fn pi_futex() -> Check {
    match ipc::pi_mutex_round_trip() {
        Ok(()) => {}
        Err(Refused::Create(err)) => {
            return PI_FUTEX.warn(
                format!("PTHREAD_PRIO_INHERIT mutex refused: {}", describe(err)),
                "use a kernel with CONFIG_FUTEX_PI=y",
            );
        }
        Err(Refused::Use(err)) => {
            return PI_FUTEX.warn(
                format!("PI mutex lock/unlock failed: {}", describe(err)),
                "use a kernel with CONFIG_FUTEX_PI=y",
            );
        }
    }
    // An uncontended PI mutex is taken in user space without asking the kernel, so also
    // take a PI futex through the kernel directly.
    match ipc::futex_pi_round_trip() {
        Ok(owner) => PI_FUTEX.ok(format!(
            "a PTHREAD_PRIO_INHERIT mutex was locked and unlocked; FUTEX_LOCK_PI took the futex for thread {owner} and FUTEX_UNLOCK_PI released it"
        )),
        Err(err) => PI_FUTEX.warn(
            format!("FUTEX_LOCK_PI failed: {}", describe(err)),
            "use a kernel with CONFIG_FUTEX_PI=y",
        ),
    }
}

const SHM: Spec = Spec {
    id: "posix.shm",
    area: "posix",
    why: "POSIX shared memory (shm_open) is how real-time processes share data without copying.",
};

pub(super) fn shared_memory() -> Check {
    match ipc::shared_memory_round_trip(&unique_name("shm")) {
        Ok(()) => SHM.ok("a shared memory object was created, sized, mapped, written and removed"),
        Err(Refused::Create(err)) => SHM.warn(
            format!("shm_open failed: {}", describe(err)),
            "mount a tmpfs at /dev/shm (`mount -t tmpfs tmpfs /dev/shm`)",
        ),
        Err(Refused::Use(err)) => SHM.warn(
            format!(
                "ftruncate/mmap of the shared memory object failed: {}",
                describe(err)
            ),
            "check the size limit of /dev/shm",
        ),
    }
}

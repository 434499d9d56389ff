//! Round trips through the POSIX inter-process mechanisms and bpf(2), for the doctor's probes:
//! each tries the mechanism once and says which step the system refused, with its errno.
//! `mq_attr`, `pthread_mutex_t` and the futex and bpf calls differ between libcs and word
//! sizes; they stay here.

use std::ffi::CStr;
use std::sync::atomic::{AtomicU32, Ordering};

/// The step of a round trip that failed, and the errno it failed with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Making the object (mq_open, the PI mutex, shm_open).
    Create(i32),
    /// Using it once made (send/receive, lock/unlock, size/map).
    Use(i32),
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Makes the message queue `name` (removed again at once), sends a message with priority 7
/// and receives it back.
pub(crate) fn message_queue_round_trip(name: &CStr) -> Result<(), Refused> {
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
            return Err(Refused::Create(errno()));
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
            Ok(())
        } else {
            Err(Refused::Use(err))
        }
    }
}

/// Makes a PTHREAD_PRIO_INHERIT mutex, locks and unlocks it (errnos as pthread returns them).
pub(crate) fn pi_mutex_round_trip() -> Result<(), Refused> {
    // SAFETY: the mutex and attribute live on this stack frame for their whole init..destroy
    // life.
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
            return Err(Refused::Create(init));
        }
        let lock = libc::pthread_mutex_lock(&mut mutex);
        let unlock = if lock == 0 {
            libc::pthread_mutex_unlock(&mut mutex)
        } else {
            lock
        };
        libc::pthread_mutex_destroy(&mut mutex);
        if unlock != 0 {
            return Err(Refused::Use(unlock));
        }
        Ok(())
    }
}

/// Takes a PI futex through the kernel (FUTEX_LOCK_PI) and releases it: the owner the kernel
/// wrote into the futex word (this thread's id), or the errno. An uncontended PI mutex is
/// taken in user space without asking the kernel, which is why this is asked separately.
pub(crate) fn futex_pi_round_trip() -> Result<u32, i32> {
    const FUTEX_LOCK_PI: libc::c_int = 6;
    const FUTEX_UNLOCK_PI: libc::c_int = 7;
    let word = AtomicU32::new(0);
    // SAFETY: the futex word is a local owned by this thread, valid for every call.
    let futex = |op: libc::c_int| unsafe {
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
        return Err(errno());
    }
    let owner = word.load(Ordering::Relaxed) & 0x3fff_ffff;
    futex(FUTEX_UNLOCK_PI);
    Ok(owner)
}

/// Makes the shared memory object `name` (removed again at once), sizes it to a page, maps it
/// and writes to it.
pub(crate) fn shared_memory_round_trip(name: &CStr) -> Result<(), Refused> {
    // SAFETY: valid C string name; the mapping is used only between mmap and munmap.
    unsafe {
        let fd = libc::shm_open(
            name.as_ptr(),
            libc::O_CREAT | libc::O_EXCL | libc::O_RDWR,
            0o600,
        );
        if fd < 0 {
            return Err(Refused::Create(errno()));
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
        if ok { Ok(()) } else { Err(Refused::Use(err)) }
    }
}

/// bpf(BPF_MAP_CREATE) of a one-entry array map, closed again; the errno when refused.
pub(crate) fn bpf_map_round_trip() -> Result<(), i32> {
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
    if fd < 0 {
        return Err(errno());
    }
    super::file::close(fd as libc::c_int);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pi_futex_is_owned_by_the_calling_thread() {
        // CONFIG_FUTEX_PI is in every kernel jitterlab supports; a refusal names its errno.
        let me = crate::sys::signal::thread_id() as u32;
        assert_eq!(futex_pi_round_trip(), Ok(me));
        assert_eq!(pi_mutex_round_trip(), Ok(()));
    }

    #[test]
    fn a_second_queue_of_the_same_name_is_refused_at_creation() {
        let name =
            std::ffi::CString::new(format!("/jitterlab-sys-test-{}", std::process::id())).unwrap();
        match message_queue_round_trip(&name) {
            Ok(()) => {}
            // A kernel or container without mqueue: creation is what fails.
            Err(r) => assert!(matches!(r, Refused::Create(_)), "{r:?}"),
        }
        match shared_memory_round_trip(&name) {
            Ok(()) => {}
            Err(r) => assert!(matches!(r, Refused::Create(_)), "{r:?}"),
        }
    }
}

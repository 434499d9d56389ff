//! Mechanisms that carry no data: `mutex` (as ptsematest), `condvar`, `futex`, `sem` (POSIX)
//! and `sysv-sem` (as svsematest). The sender writes the stamp to an atomic before the wake;
//! the wake orders it (release before the wake, acquire after it). Opened with
//! [`Scope::Shared`], the mutex and the condition variable are PTHREAD_PROCESS_SHARED, the
//! semaphore `pshared`, the futex not private; a System V semaphore is the kernel's anyway.

use super::channel::{Channel, resume_after_signal};
use super::handover::FutexHandover;
use crate::sys::errno;
use crate::sys::ipc::{
    PosixSemaphore, RawCondvar, RawMutex, Scope, SysvSemaphore, futex_wait_in, futex_wake_one_in,
};
use std::io;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::*};

/// The receiver blocks in pthread_mutex_lock on a mutex that is locked; the sender unlocks it.
/// The receiver keeps the mutex it got, so its next lock blocks again until the next unlock:
/// ptsematest's "testmutex", locked by one thread and unlocked by the other.
pub struct Mutex {
    mutex: RawMutex,
    stamp: AtomicU64,
}

impl Channel for Mutex {
    type Handover = FutexHandover;

    fn open(scope: Scope) -> io::Result<Self> {
        let mutex = RawMutex::new(scope)?;
        mutex.lock()?;
        Ok(Mutex {
            mutex,
            stamp: AtomicU64::new(0),
        })
    }

    fn send(&self, stamp_ns: u64) -> io::Result<()> {
        self.stamp.store(stamp_ns, Release);
        self.mutex.unlock()
    }

    /// pthread_mutex_lock does not return on a signal: a stop reaches it through the
    /// sender's closing wake.
    #[inline(always)]
    fn receive(&self, _end: impl Fn() -> bool) -> io::Result<u64> {
        self.mutex.lock()?;
        Ok(self.stamp.load(Acquire))
    }
}

/// pthread_cond_wait on a count of wakes sent; the sender signals under the mutex. The
/// latency includes taking the mutex back after the sender released it.
pub(crate) struct Condvar {
    mutex: RawMutex,
    cond: RawCondvar,
    /// Wakes sent and wakes taken: written under the mutex only.
    sent: AtomicU64,
    taken: AtomicU64,
    stamp: AtomicU64,
}

impl Channel for Condvar {
    type Handover = FutexHandover;

    fn open(scope: Scope) -> io::Result<Self> {
        Ok(Condvar {
            mutex: RawMutex::new(scope)?,
            cond: RawCondvar::new(scope)?,
            sent: AtomicU64::new(0),
            taken: AtomicU64::new(0),
            stamp: AtomicU64::new(0),
        })
    }

    fn send(&self, stamp_ns: u64) -> io::Result<()> {
        self.mutex.lock()?;
        self.stamp.store(stamp_ns, Relaxed);
        self.sent.store(self.sent.load(Relaxed) + 1, Relaxed);
        let signalled = self.cond.signal();
        self.mutex.unlock()?;
        signalled
    }

    /// pthread_cond_wait does not end on a signal (it may wake spuriously): a stop reaches it
    /// through the sender's closing wake.
    #[inline(always)]
    fn receive(&self, _end: impl Fn() -> bool) -> io::Result<u64> {
        self.mutex.lock()?;
        while self.sent.load(Relaxed) == self.taken.load(Relaxed) {
            if let Err(e) = self.cond.wait(&self.mutex) {
                let _ = self.mutex.unlock();
                return Err(e);
            }
        }
        self.taken.store(self.sent.load(Relaxed), Relaxed);
        let stamp = self.stamp.load(Relaxed);
        self.mutex.unlock()?;
        Ok(stamp)
    }
}

/// FUTEX_WAIT on a count of wakes sent; the sender bumps it and calls FUTEX_WAKE.
pub(crate) struct Futex {
    scope: Scope,
    sent: AtomicU32,
    /// Receiver only.
    taken: AtomicU32,
    stamp: AtomicU64,
}

impl Channel for Futex {
    type Handover = FutexHandover;

    fn open(scope: Scope) -> io::Result<Self> {
        Ok(Futex {
            scope,
            sent: AtomicU32::new(0),
            taken: AtomicU32::new(0),
            stamp: AtomicU64::new(0),
        })
    }

    fn send(&self, stamp_ns: u64) -> io::Result<()> {
        self.stamp.store(stamp_ns, Relaxed);
        self.sent.fetch_add(1, Release);
        futex_wake_one_in(self.scope, &self.sent);
        Ok(())
    }

    #[inline(always)]
    fn receive(&self, end: impl Fn() -> bool) -> io::Result<u64> {
        loop {
            let sent = self.sent.load(Acquire);
            if sent != self.taken.load(Relaxed) {
                self.taken.store(sent, Relaxed);
                return Ok(self.stamp.load(Relaxed));
            }
            match futex_wait_in(self.scope, &self.sent, sent) {
                Ok(()) => {}
                // The count moved before the wait began.
                Err(e) if e.raw_os_error() == Some(errno::EAGAIN) => {}
                Err(e) if e.raw_os_error() == Some(errno::EINTR) => {
                    if end() {
                        return Err(io::ErrorKind::Interrupted.into());
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// sem_post / sem_wait on an unnamed POSIX semaphore.
pub(crate) struct Semaphore {
    sem: PosixSemaphore,
    stamp: AtomicU64,
}

impl Channel for Semaphore {
    type Handover = FutexHandover;

    fn open(scope: Scope) -> io::Result<Self> {
        Ok(Semaphore {
            sem: PosixSemaphore::new(scope)?,
            stamp: AtomicU64::new(0),
        })
    }

    fn send(&self, stamp_ns: u64) -> io::Result<()> {
        self.stamp.store(stamp_ns, Release);
        self.sem.post()
    }

    #[inline(always)]
    fn receive(&self, end: impl Fn() -> bool) -> io::Result<u64> {
        resume_after_signal(&end, || crate::sys::check(self.sem.wait_raw()).map(drop))?;
        Ok(self.stamp.load(Acquire))
    }
}

/// semop(+1) / semop(-1) on a private System V semaphore.
pub(crate) struct SysvSem {
    sem: SysvSemaphore,
    stamp: AtomicU64,
}

impl Channel for SysvSem {
    type Handover = FutexHandover;

    fn open(_scope: Scope) -> io::Result<Self> {
        Ok(SysvSem {
            sem: SysvSemaphore::new()?,
            stamp: AtomicU64::new(0),
        })
    }

    fn send(&self, stamp_ns: u64) -> io::Result<()> {
        self.stamp.store(stamp_ns, Release);
        crate::sys::check(self.sem.op_raw(1)).map(drop)
    }

    #[inline(always)]
    fn receive(&self, end: impl Fn() -> bool) -> io::Result<u64> {
        resume_after_signal(&end, || crate::sys::check(self.sem.op_raw(-1)).map(drop))?;
        Ok(self.stamp.load(Acquire))
    }
}

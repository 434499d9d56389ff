//! Wake mechanisms between threads, or between this process and a child it forks, for the IPC
//! wake methods (measure/wake/ipc/): futexes, pthread mutexes and condition variables, POSIX and
//! System V semaphores, POSIX message queues, pipes, eventfds, and queued real-time signals.
//! Each is a plain Rust type that is `Send + Sync` and frees its kernel object on drop; blocking
//! calls return the raw result (EINTR included) so that the caller decides whether to resume.
//! The pthread objects and semaphores live in [`SharedCell`]s, so that a child forked later
//! reaches them at the same address; made with [`Scope::Shared`] they work across the fork.
//!
//! The queued signals are in `signals.rs`, the shared cells in `shared.rs`. The other types
//! have the same layout on glibc and musl.
//!
//! One concern (issue 41's near-limit files): the kernel's wake mechanisms, one small type each
//! with its drop; the shared memory they live in is `shared.rs`, the signals `signals.rs`.

mod shared;
mod signals;

pub(crate) use shared::SharedCell;
pub(crate) use signals::{
    SIGNAL_VALUE_CARRIES_U64, SignalWaiter, ThreadSignal, calling_thread_ids, user_id,
};
use std::cell::UnsafeCell;
use std::io;
use std::sync::atomic::AtomicU32;

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    super::check(ret)
}

/// Who may use a synchronisation object: the threads of this process, or also the children it
/// forks (futexes without FUTEX_PRIVATE_FLAG, PTHREAD_PROCESS_SHARED, `sem_init(pshared=1)`).
/// Shared objects must lie in memory the child shares ([`SharedCell`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Process,
    Shared,
}

impl Scope {
    /// The futex operation `op` for objects of this scope.
    fn futex_op(self, op: libc::c_int) -> libc::c_int {
        match self {
            Scope::Process => op | libc::FUTEX_PRIVATE_FLAG,
            Scope::Shared => op,
        }
    }
}

/// Blocks while `*word == expected` (FUTEX_WAIT_PRIVATE). Returns at once if it differs;
/// EINTR and EAGAIN come back as errors.
pub(crate) fn futex_wait(word: &AtomicU32, expected: u32) -> io::Result<()> {
    futex_wait_in(Scope::Process, word, expected)
}

/// [`futex_wait`] on a word of `scope`.
pub(crate) fn futex_wait_in(scope: Scope, word: &AtomicU32, expected: u32) -> io::Result<()> {
    // SAFETY: the address is a live, aligned u32 for the call's duration; no timeout.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            scope.futex_op(libc::FUTEX_WAIT),
            expected,
            std::ptr::null::<libc::timespec>(),
        )
    };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Blocks while `*word == expected`, until the absolute time `deadline_ns` of `clock`
/// (CLOCK_MONOTONIC, or CLOCK_REALTIME; FUTEX_WAIT_BITSET). Ok(true) when the deadline came,
/// Ok(false) when woken or when the word differed; EINTR comes back as an error.
pub(crate) fn futex_wait_until(
    word: &AtomicU32,
    expected: u32,
    clock: libc::clockid_t,
    deadline_ns: u64,
) -> io::Result<bool> {
    futex_wait_until_in(Scope::Process, word, expected, clock, deadline_ns)
}

/// [`futex_wait_until`] on a word of `scope`.
pub(crate) fn futex_wait_until_in(
    scope: Scope,
    word: &AtomicU32,
    expected: u32,
    clock: libc::clockid_t,
    deadline_ns: u64,
) -> io::Result<bool> {
    let mut op = scope.futex_op(libc::FUTEX_WAIT_BITSET);
    if clock == libc::CLOCK_REALTIME {
        op |= libc::FUTEX_CLOCK_REALTIME;
    }
    let deadline = super::time::ns_to_timespec(deadline_ns);
    // SAFETY: a live, aligned u32 and a valid timespec for the call's duration.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op,
            expected,
            &deadline as *const libc::timespec,
            std::ptr::null::<u32>(),
            libc::FUTEX_BITSET_MATCH_ANY,
        )
    };
    if ret == 0 {
        return Ok(false);
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::ETIMEDOUT) => Ok(true),
        Some(libc::EAGAIN) => Ok(false),
        _ => Err(e),
    }
}

/// [`futex_wake_one`] on a word of `scope` (async-signal-safe).
pub(crate) fn futex_wake_one_in(scope: Scope, word: &AtomicU32) {
    // SAFETY: as above; waking never fails on a valid address.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            scope.futex_op(libc::FUTEX_WAKE),
            1,
        );
    }
}

/// Wakes every thread blocked in [`futex_wait`] on `word`.
pub(crate) fn futex_wake_all(word: &AtomicU32) {
    // SAFETY: as above.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            i32::MAX,
        );
    }
}

/// A default (normal) pthread mutex in a [`SharedCell`]. Used as ptsematest uses it: one
/// thread locks it (and blocks while it is held) and the other unlocks it, which POSIX leaves
/// undefined but glibc and musl implement for normal mutexes as a plain release.
pub(crate) struct RawMutex(SharedCell<UnsafeCell<libc::pthread_mutex_t>>);

// SAFETY: a pthread mutex is made to be shared between threads; it never moves.
unsafe impl Send for RawMutex {}
unsafe impl Sync for RawMutex {}

impl RawMutex {
    /// A normal mutex for `scope`.
    pub(crate) fn new(scope: Scope) -> io::Result<RawMutex> {
        RawMutex::init(scope, libc::PTHREAD_PRIO_NONE)
    }

    /// A mutex of this process with the priority protocol PTHREAD_PRIO_INHERIT (`inherit`: its
    /// holder runs at the priority of the highest thread blocked on it, the kernel's PI
    /// futexes) or PTHREAD_PRIO_NONE (a plain mutex: the holder keeps its own priority). Only
    /// the thread that locked a PI mutex may unlock it.
    pub(crate) fn with_protocol(inherit: bool) -> io::Result<RawMutex> {
        let protocol = if inherit {
            libc::PTHREAD_PRIO_INHERIT
        } else {
            libc::PTHREAD_PRIO_NONE
        };
        RawMutex::init(Scope::Process, protocol)
    }

    fn init(scope: Scope, protocol: libc::c_int) -> io::Result<RawMutex> {
        let mutex = RawMutex(SharedCell::new(UnsafeCell::new(
            libc::PTHREAD_MUTEX_INITIALIZER,
        ))?);
        // SAFETY: the attribute lives on this frame from init to destroy; the mutex is pinned
        // in its cell and not yet shared, so re-initialising it is sound.
        unsafe {
            let mut attr: libc::pthread_mutexattr_t = std::mem::zeroed();
            errno_result(libc::pthread_mutexattr_init(&mut attr))?;
            let set = errno_result(libc::pthread_mutexattr_setprotocol(&mut attr, protocol))
                .and_then(|()| {
                    errno_result(libc::pthread_mutexattr_setpshared(
                        &mut attr,
                        pshared(scope),
                    ))
                });
            let init = set.and_then(|()| {
                libc::pthread_mutex_destroy(mutex.0.get());
                errno_result(libc::pthread_mutex_init(mutex.0.get(), &attr))
            });
            libc::pthread_mutexattr_destroy(&mut attr);
            init?;
        }
        Ok(mutex)
    }

    /// pthread_mutex_lock: blocks while the mutex is held, by any thread (the caller too).
    pub(crate) fn lock(&self) -> io::Result<()> {
        // SAFETY: initialised, pinned mutex.
        errno_result(unsafe { libc::pthread_mutex_lock(self.0.get()) })
    }

    pub(crate) fn unlock(&self) -> io::Result<()> {
        // SAFETY: as above.
        errno_result(unsafe { libc::pthread_mutex_unlock(self.0.get()) })
    }
}

impl Drop for RawMutex {
    fn drop(&mut self) {
        // SAFETY: no thread uses it any more (we own it exclusively).
        unsafe { libc::pthread_mutex_destroy(self.0.get()) };
    }
}

/// PTHREAD_PROCESS_PRIVATE or PTHREAD_PROCESS_SHARED.
fn pshared(scope: Scope) -> libc::c_int {
    match scope {
        Scope::Process => libc::PTHREAD_PROCESS_PRIVATE,
        Scope::Shared => libc::PTHREAD_PROCESS_SHARED,
    }
}

/// A pthread condition variable in a [`SharedCell`], used with a [`RawMutex`] of the same
/// scope that the caller holds.
pub(crate) struct RawCondvar(SharedCell<UnsafeCell<libc::pthread_cond_t>>);

// SAFETY: as for RawMutex.
unsafe impl Send for RawCondvar {}
unsafe impl Sync for RawCondvar {}

impl RawCondvar {
    pub(crate) fn new(scope: Scope) -> io::Result<RawCondvar> {
        let cond = RawCondvar(SharedCell::new(UnsafeCell::new(
            libc::PTHREAD_COND_INITIALIZER,
        ))?);
        // SAFETY: as in RawMutex::init.
        unsafe {
            let mut attr: libc::pthread_condattr_t = std::mem::zeroed();
            errno_result(libc::pthread_condattr_init(&mut attr))?;
            let init = errno_result(libc::pthread_condattr_setpshared(&mut attr, pshared(scope)))
                .and_then(|()| {
                    libc::pthread_cond_destroy(cond.0.get());
                    errno_result(libc::pthread_cond_init(cond.0.get(), &attr))
                });
            libc::pthread_condattr_destroy(&mut attr);
            init?;
        }
        Ok(cond)
    }

    /// pthread_cond_wait; `mutex` must be locked by the caller. May return spuriously.
    pub(crate) fn wait(&self, mutex: &RawMutex) -> io::Result<()> {
        // SAFETY: both initialised and pinned; the caller holds the mutex.
        errno_result(unsafe { libc::pthread_cond_wait(self.0.get(), mutex.0.get()) })
    }

    pub(crate) fn signal(&self) -> io::Result<()> {
        // SAFETY: initialised, pinned.
        errno_result(unsafe { libc::pthread_cond_signal(self.0.get()) })
    }
}

impl Drop for RawCondvar {
    fn drop(&mut self) {
        // SAFETY: no thread waits on it any more.
        unsafe { libc::pthread_cond_destroy(self.0.get()) };
    }
}

/// An unnamed POSIX semaphore (sem_init) in a [`SharedCell`], starting at 0.
pub(crate) struct PosixSemaphore(SharedCell<UnsafeCell<libc::sem_t>>);

// SAFETY: made to be shared between threads; pinned in its cell.
unsafe impl Send for PosixSemaphore {}
unsafe impl Sync for PosixSemaphore {}

impl PosixSemaphore {
    pub(crate) fn new(scope: Scope) -> io::Result<PosixSemaphore> {
        // SAFETY: all-zero is valid storage for sem_init to initialise.
        let sem = PosixSemaphore(SharedCell::new(UnsafeCell::new(unsafe {
            std::mem::zeroed()
        }))?);
        let pshared = match scope {
            Scope::Process => 0,
            Scope::Shared => 1,
        };
        // SAFETY: pinned storage.
        check(unsafe { libc::sem_init(sem.0.get(), pshared, 0) })?;
        Ok(sem)
    }

    pub(crate) fn post(&self) -> io::Result<()> {
        // SAFETY: initialised.
        check(unsafe { libc::sem_post(self.0.get()) }).map(drop)
    }

    /// sem_wait: the raw return (0, or -1 with errno, EINTR included).
    pub(crate) fn wait_raw(&self) -> libc::c_int {
        // SAFETY: initialised.
        unsafe { libc::sem_wait(self.0.get()) }
    }
}

impl Drop for PosixSemaphore {
    fn drop(&mut self) {
        // SAFETY: nobody waits on it any more.
        unsafe { libc::sem_destroy(self.0.get()) };
    }
}

/// A private System V semaphore set of one semaphore, starting at 0; removed on drop.
pub(crate) struct SysvSemaphore {
    id: libc::c_int,
}

impl SysvSemaphore {
    pub(crate) fn new() -> io::Result<SysvSemaphore> {
        // SAFETY: plain syscall; IPC_PRIVATE always makes a new set.
        let id = check(unsafe { libc::semget(libc::IPC_PRIVATE, 1, libc::IPC_CREAT | 0o600) })?;
        Ok(SysvSemaphore { id })
    }

    /// semop of `delta` on the semaphore: the raw return (EINTR included).
    pub(crate) fn op_raw(&self, delta: i16) -> libc::c_int {
        let mut op = libc::sembuf {
            sem_num: 0,
            sem_op: delta,
            sem_flg: 0,
        };
        // SAFETY: one valid sembuf.
        unsafe { libc::semop(self.id, &mut op, 1) }
    }
}

impl Drop for SysvSemaphore {
    fn drop(&mut self) {
        // SAFETY: removes the set; waiters (none by now) would get EIDRM.
        unsafe { libc::semctl(self.id, 0, libc::IPC_RMID) };
    }
}

/// A POSIX message queue of 8-byte messages, unlinked as soon as it is open (only the two
/// descriptors hold it, so nothing is left in /dev/mqueue even after a crash).
pub(crate) struct MessageQueue {
    mqd: libc::mqd_t,
}

// SAFETY: a message queue descriptor is a file descriptor, usable from any thread.
unsafe impl Send for MessageQueue {}
unsafe impl Sync for MessageQueue {}

impl MessageQueue {
    /// A new queue holding up to `capacity` messages of 8 bytes.
    pub(crate) fn new(capacity: i64) -> io::Result<MessageQueue> {
        let name = format!(
            "/jitterlab-{}-{}\0",
            std::process::id(),
            super::signal::thread_id()
        );
        // SAFETY: all-zero mq_attr is valid; the fields set are the ones mq_open reads.
        let mut attr: libc::mq_attr = unsafe { std::mem::zeroed() };
        attr.mq_maxmsg = capacity as _;
        attr.mq_msgsize = 8;
        // SAFETY: NUL-terminated name; valid attr.
        let mqd = unsafe {
            libc::mq_open(
                name.as_ptr().cast(),
                libc::O_CREAT | libc::O_EXCL | libc::O_RDWR | libc::O_CLOEXEC,
                0o600 as libc::mode_t,
                &attr as *const libc::mq_attr,
            )
        };
        if mqd == -1 as libc::mqd_t {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: same name.
        unsafe { libc::mq_unlink(name.as_ptr().cast()) };
        Ok(MessageQueue { mqd })
    }

    pub(crate) fn send(&self, value: u64) -> io::Result<()> {
        let bytes = value.to_ne_bytes();
        // SAFETY: 8 valid bytes, the queue's message size.
        check(unsafe { libc::mq_send(self.mqd, bytes.as_ptr().cast(), 8, 0) }).map(drop)
    }

    /// mq_receive of one message: its value, or the error (EINTR included).
    pub(crate) fn receive(&self) -> io::Result<u64> {
        let mut bytes = [0u8; 8];
        // SAFETY: an 8-byte buffer for a queue of 8-byte messages.
        let n = unsafe {
            libc::mq_receive(self.mqd, bytes.as_mut_ptr().cast(), 8, std::ptr::null_mut())
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(u64::from_ne_bytes(bytes))
    }
}

impl Drop for MessageQueue {
    fn drop(&mut self) {
        // SAFETY: our descriptor.
        unsafe { libc::mq_close(self.mqd) };
    }
}

/// A file descriptor that 8-byte values are written to and read from whole: a pipe's two
/// ends, or one eventfd for both.
pub(crate) struct ValueFds {
    read: libc::c_int,
    write: libc::c_int,
}

impl ValueFds {
    /// A pipe (writes of 8 bytes are atomic: less than PIPE_BUF).
    pub(crate) fn pipe() -> io::Result<ValueFds> {
        let mut fds = [0; 2];
        // SAFETY: a two-int array.
        check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
        Ok(ValueFds {
            read: fds[0],
            write: fds[1],
        })
    }

    /// An eventfd counting from 0: a write adds its value, a read returns the sum and resets it.
    pub(crate) fn eventfd() -> io::Result<ValueFds> {
        // SAFETY: plain syscall.
        let fd = check(unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) })?;
        Ok(ValueFds {
            read: fd,
            write: fd,
        })
    }

    pub(crate) fn write(&self, value: u64) -> io::Result<()> {
        let bytes = value.to_ne_bytes();
        // SAFETY: 8 valid bytes.
        let n = unsafe { libc::write(self.write, bytes.as_ptr().cast(), 8) };
        match n {
            8 => Ok(()),
            n if n < 0 => Err(io::Error::last_os_error()),
            _ => Err(io::Error::new(io::ErrorKind::WriteZero, "short write")),
        }
    }

    /// Reads one 8-byte value (blocking): the value or the error (EINTR included).
    pub(crate) fn read(&self) -> io::Result<u64> {
        let mut bytes = [0u8; 8];
        // SAFETY: an 8-byte buffer.
        let n = unsafe { libc::read(self.read, bytes.as_mut_ptr().cast(), 8) };
        match n {
            8 => Ok(u64::from_ne_bytes(bytes)),
            n if n < 0 => Err(io::Error::last_os_error()),
            _ => Err(io::Error::new(io::ErrorKind::UnexpectedEof, "short read")),
        }
    }
}

impl Drop for ValueFds {
    fn drop(&mut self) {
        // SAFETY: our descriptors (one, for an eventfd).
        unsafe {
            libc::close(self.read);
            if self.write != self.read {
                libc::close(self.write);
            }
        }
    }
}

/// A pthread-style return (0, or the error number) as a result.
fn errno_result(ret: libc::c_int) -> io::Result<()> {
    if ret == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(ret))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn queues_and_fds_carry_values() {
        let mq = MessageQueue::new(2).unwrap();
        mq.send(42).unwrap();
        mq.send(7).unwrap();
        assert_eq!((mq.receive().unwrap(), mq.receive().unwrap()), (42, 7));
        let pipe = ValueFds::pipe().unwrap();
        pipe.write(u64::MAX - 1).unwrap();
        assert_eq!(pipe.read().unwrap(), u64::MAX - 1);
        // An eventfd adds up what was written before a read.
        let efd = ValueFds::eventfd().unwrap();
        efd.write(5).unwrap();
        efd.write(6).unwrap();
        assert_eq!(efd.read().unwrap(), 11);
    }

    #[test]
    fn semaphores_count() {
        let sem = PosixSemaphore::new(Scope::Process).unwrap();
        sem.post().unwrap();
        assert_eq!(sem.wait_raw(), 0);
        let sysv = SysvSemaphore::new().unwrap();
        assert_eq!(sysv.op_raw(1), 0);
        assert_eq!(sysv.op_raw(-1), 0);
    }
}

//! The contract between a wake method and the cycle loop: the [`Waker`] a method sleeps
//! with, the [`Schedule`] that says how its due times are known, and how a waker is made
//! ([`MakeWaker`]). Apart from `wake/` so that
//! the loop (`cycle.rs`) needs nothing of the methods, and the hot path reads top to bottom:
//! `wake/` (the methods and the driver that runs each one's loop) -> `cycle.rs` -> this file.

use super::clock::Clock;
use std::io;
use std::sync::atomic::AtomicBool;

/// How the due time of each wakeup is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schedule {
    /// The thread asks for an absolute due time; due times follow a fixed grid.
    Absolute,
    /// The thread asks to sleep for the interval; the due time is the last clock read plus it.
    Relative,
    /// A kernel timer fires on a fixed grid armed once; the thread waits for each expiry.
    Periodic,
    /// Another thread, the sender, sleeps to each absolute due time and wakes the measuring
    /// thread through an IPC mechanism ([`mod@super::wake::ipc`]); latency is measured from the
    /// sender's clock read before the wake.
    Sender,
}

/// A way to sleep until the next wakeup is due.
pub trait Waker {
    /// Blocks until `due_ns` (absolute methods), for `interval_ns` (relative methods), or until
    /// the next expiry of the armed timer (periodic methods). Exactly one blocking syscall,
    /// except setitimer one-shot, which must re-arm first.
    ///
    /// A signal that interrupts the sleep resumes it, unless `stop` is set: then the wait ends
    /// with [`io::ErrorKind::Interrupted`]. That is how a stop reaches a thread asleep for a
    /// long interval at once ([`crate::measure::thread::interrupt`]).
    fn wait(&mut self, due_ns: u64, interval_ns: u64, stop: &AtomicBool) -> io::Result<()>;

    /// The due time of the first wakeup, for periodic methods whose grid the kernel sets.
    fn first_due_ns(&mut self, planned_ns: u64) -> io::Result<u64> {
        Ok(planned_ns)
    }

    /// Periodic methods only, and only after a wakeup a period or more late: the loop skipped
    /// the grid points that passed (counting them as missed) and will next expect `next_due_ns`.
    ///
    /// Every periodic timer must be re-aimed here. The kernel moves a periodic timer on at some
    /// moment of its own (setitimer in the interrupt, timerfd in read(), POSIX timers when the
    /// signal is taken), and the loop reads the clock only after the wait returns: a thread held
    /// between the two across a grid point finds that point skipped by the loop but still armed
    /// in the kernel, which would wake the next wait a period early and keep every later sample
    /// a period off the grid (tests/wake_grid.rs holds threads in exactly that window).
    ///
    /// Absolute and relative methods sleep to the time each wait is given and need nothing.
    fn skipped_to(&mut self, _next_due_ns: u64) -> io::Result<()> {
        Ok(())
    }

    /// The time a wakeup's latency is measured from: its due time, except for the methods
    /// where another thread sends the wake ([`Schedule::Sender`]), whose reference is the
    /// sender's clock read just before it sent. Inlined to `due_ns` for every other waker, so
    /// their loops are unchanged.
    #[inline(always)]
    fn reference_ns(&self, due_ns: u64) -> u64 {
        due_ns
    }

    /// Told each wakeup's latency, right after the loop measured it: for a method that judges
    /// its own wakeups (`pi-mutex` counts priority inversions, [`mod@super::wake::inversion`]). Inlined to
    /// nothing for every other waker.
    #[inline(always)]
    fn woke(&mut self, _latency_ns: i64) {}
}

/// A borrowed waker is a waker: lets tests run the loop with a lent `&mut dyn Waker`.
impl<W: Waker + ?Sized> Waker for &mut W {
    fn wait(&mut self, due_ns: u64, interval_ns: u64, stop: &AtomicBool) -> io::Result<()> {
        (**self).wait(due_ns, interval_ns, stop)
    }

    fn first_due_ns(&mut self, planned_ns: u64) -> io::Result<u64> {
        (**self).first_due_ns(planned_ns)
    }

    fn skipped_to(&mut self, next_due_ns: u64) -> io::Result<()> {
        (**self).skipped_to(next_due_ns)
    }

    #[inline(always)]
    fn reference_ns(&self, due_ns: u64) -> u64 {
        (**self).reference_ns(due_ns)
    }

    #[inline(always)]
    fn woke(&mut self, latency_ns: i64) {
        (**self).woke(latency_ns)
    }
}

/// How a waker is made for a run.
pub(crate) trait MakeWaker: Waker + Sized {
    /// Makes the waker in the measuring thread, after the start gate opened (a POSIX timer
    /// signals the thread that created it). The error is the thread's failure message.
    fn make(clock: Clock, interval_ns: u64) -> Result<Self, String>;
}

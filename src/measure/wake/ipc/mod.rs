//! Wake methods where another thread or process, the sender, wakes the measuring thread (the
//! receiver) through an IPC mechanism, as rt-tests' pmqtest, ptsematest, svsematest, signaltest
//! and sigwaittest do.
//!
//! Each receiver has a sender of its own ([`Between`]: a thread of jitterlab, or a process
//! forked for it, see `sender.rs`), started by the receiver's waker when the run starts and
//! ended when its loop ends, on every path. What the two share ([`Pair`]) lives in memory a
//! forked child shares, so one implementation serves both. Per cycle, with the default
//! [`Pace::SenderTimer`]:
//!
//! 1. the receiver hands the next due time to the sender (two stores and a futex wake; nothing
//!    blocks) and blocks on the mechanism;
//! 2. the sender sleeps with absolute `clock_nanosleep` to the due time, reads the clock (the
//!    stamp) and wakes the receiver through the mechanism, carrying the stamp in the message
//!    where the mechanism carries data, or else in an atomic written before the wake;
//! 3. the receiver reads the clock on waking; its latency is that read minus the stamp
//!    ([`super::Waker::reference_ns`]).
//!
//! Handing each due time over, rather than letting the sender run its own grid, keeps exactly
//! one wake in flight (rt-tests does the same with a second, "sync" mutex or queue): a late
//! receiver never finds a backlog of old wakes, and the two threads can never disagree about
//! when the run ends. It also keeps the arming of the sender's next timer out of the number: a
//! sender on its own grid would call `clock_nanosleep` right after its send, and on the same CPU
//! the receiver runs only once the sender blocks, i.e. after the timer was programmed (a VM exit
//! on a guest: 10-20 us here). Blocking in a futex instead costs what rt-tests' sender pays
//! blocking in its sync call.
//!
//! The span measured is rt-tests': from the sender's clock read right before the wake call to
//! the receiver's read right after its blocking call returns, with no syscall between the stamp
//! and the wake. What differs, by the definition, is how the sender gets to its stamp:
//! rt-tests' receiver sleeps the interval and wakes the sender through the sync object, so
//! the sender stamps a few microseconds after both threads ran; ours wakes from its own timer
//! after the CPU ran other work for an interval, so the send and the switch run on a cold cache.
//! docs/user-guide.md (the IPC methods) gives the figures.
//!
//! [`Pace::Receiver`] is rt-tests' structure instead: the receiver sleeps to the due time itself,
//! then hands it over and blocks; the sender, blocked in the handover's futex, stamps and sends
//! at once. The span measured is the same; the sender runs hot, right after the receiver. The
//! handover goes through the mechanism under test where rt-tests' does (a second queue, a
//! signal to the sender: [`Channel::Handover`], handover.rs), so that the timed send finds the
//! kernel's path as warm as rt-tests' does.
//!
//! Stopping: the runner interrupts the receiver and its sender
//! ([`crate::measure::ThreadCounters::sender_tid`], `sender_process`); a sender interrupted, or
//! told to close, wakes its receiver once more with `closing` set, so that receivers blocked in
//! calls that do not return on a signal (pthread mutexes and condition variables, sigwait) end
//! too.
//!
//! Adding a mechanism is a [`Channel`] (its two halves, usable across a fork when opened with
//! [`Scope::Shared`]) in one of this module's files, and a row
//! in [`super::WAKE_METHODS`] with `driver: ipc_driver::<TheChannel>()` and
//! `schedule: Schedule::Sender`. A scenario with other roles (e.g. priority inversion) reuses
//! [`SenderPlan`] and [`Pair`]: the sender side is [`Pair::sender_loop`].

pub(crate) mod handover;
pub mod locks;
mod options;
pub(crate) mod queues;
mod sender;
pub mod signals;

use super::Waker;
use super::driver::{Cycles, Driver};
use super::sleep::AbsoluteSleep;
use crate::measure::ThreadEnd;
use crate::measure::clock::Clock;
use crate::measure::sched::Policy;
use crate::sys::errno;
pub(crate) use crate::sys::ipc::Scope;
use crate::sys::ipc::{SharedCell, futex_wait_in, futex_wake_one_in};
use crate::sys::process::Pid;
use handover::Handover;
pub(crate) use options::{Between, Pace};
use sender::{SenderHandle, SenderStep};
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering::*};

/// Where and how a receiver's sender runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SenderPlan {
    /// The CPU to pin the sender to; None leaves it to the scheduler.
    pub cpu: Option<usize>,
    pub policy: Policy,
    pub between: Between,
    pub pace: Pace,
    /// A sender process locks its memory, as the run's mlockall locks a sender thread's
    /// (`--no-mlock`: neither).
    pub(crate) lock_memory: bool,
}

/// One IPC mechanism: how the sender wakes the receiver, handing it the stamp.
pub(crate) trait Channel: Send + Sync + Sized + 'static {
    /// Made in the receiving (measuring) thread: signals are aimed at the thread that makes it.
    /// With [`Scope::Shared`] it also works from a child forked afterwards, whose `send` must
    /// then be async-signal-safe (no allocation, no lock of this process).
    fn open(scope: Scope) -> io::Result<Self>;

    /// Sender side: wakes the receiver, handing it `stamp_ns`.
    fn send(&self, stamp_ns: u64) -> io::Result<()>;

    /// Receiver side: blocks until woken; the stamp. After a signal interrupts the call it is
    /// resumed, unless `end()` says to give up: then [`io::ErrorKind::Interrupted`].
    fn receive(&self, end: impl Fn() -> bool) -> io::Result<u64>;

    /// How a receiver paced by its own sleep ([`Pace::Receiver`]) wakes this mechanism's
    /// sender: rt-tests' "sync" object (handover.rs says which and why).
    type Handover: Handover;
}

/// [`Pair::setup`]: the sender has not said yet.
const SETUP_PENDING: u32 = 0;
const SETUP_DONE: u32 = 1;
const SETUP_FAILED: u32 = 2;

/// What a receiver and its sender share, in a [`SharedCell`]: plain atomics and the channel,
/// nothing that points into one process's private memory (a failure is a code, not a String).
pub(crate) struct Pair<C: Channel> {
    pub channel: C,
    scope: Scope,
    /// With [`Pace::Receiver`] only: how the receiver wakes the sender.
    handover: Option<C::Handover>,
    /// Bumped by the receiver for each due time it hands over; the sender's futex word.
    request_seq: AtomicU32,
    request_due_ns: AtomicU64,
    /// Set to end the pair: by the receiver when its loop ended, by the sender when it was
    /// interrupted or failed.
    closing: AtomicBool,
    /// SETUP_PENDING until the sender is pinned and scheduled (or failed to be); a futex word.
    setup: AtomicU32,
    /// What failed in the sender, if anything ([`SenderStep`] as u32, 0: nothing), and its
    /// errno; read only on the closing path.
    failed_step: AtomicU32,
    failed_errno: AtomicI32,
}

impl<C: Channel> Pair<C> {
    fn new(channel: C, scope: Scope, handover: Option<C::Handover>) -> Pair<C> {
        Pair {
            channel,
            scope,
            handover,
            request_seq: AtomicU32::new(0),
            request_due_ns: AtomicU64::new(0),
            closing: AtomicBool::new(false),
            setup: AtomicU32::new(SETUP_PENDING),
            failed_step: AtomicU32::new(0),
            failed_errno: AtomicI32::new(0),
        }
    }

    /// The sender's life: wait for a due time, sleep to it (with its own timer's pace), stamp,
    /// send; or, with [`Pace::Receiver`], wait for the receiver's handover, stamp, send; until
    /// closed. Async-signal-safe: it runs in a forked child too.
    pub(crate) fn sender_loop(&self, clock: Clock) {
        if let Some(handover) = &self.handover {
            return self.handed_over_loop(handover, clock);
        }
        // Any signal (only the stop's interrupt has a handler) ends the sleep.
        static END_ON_SIGNAL: AtomicBool = AtomicBool::new(true);
        let mut seen = 0u32;
        loop {
            let seq = self.request_seq.load(Acquire);
            if self.closing.load(Acquire) {
                return;
            }
            if seq == seen {
                match futex_wait_in(self.scope, &self.request_seq, seq) {
                    Ok(()) => {}
                    Err(e) if e.raw_os_error() == Some(errno::EAGAIN) => {}
                    Err(e) if e.raw_os_error() == Some(errno::EINTR) => return self.close(None),
                    Err(e) => return self.close(Some((SenderStep::FutexWait, e))),
                }
                continue;
            }
            seen = seq;
            let due = self.request_due_ns.load(Relaxed);
            match (AbsoluteSleep { clock }).wait(due, 0, &END_ON_SIGNAL) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => return self.close(None),
                Err(e) => return self.close(Some((SenderStep::Sleep, e))),
            }
            let stamp = clock.now_ns();
            if let Err(e) = self.channel.send(stamp) {
                return self.close(Some((SenderStep::Wake, e)));
            }
        }
    }

    /// [`Pace::Receiver`]'s sender, as rt-tests': blocked in the handover until the receiver
    /// has slept to its due time, then it stamps and sends at once.
    fn handed_over_loop(&self, handover: &C::Handover, clock: Clock) {
        loop {
            match handover.await_receiver() {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(errno::EINTR) => return self.close(None),
                Err(e) => return self.close(Some((SenderStep::AwaitReceiver, e))),
            }
            if self.closing.load(Acquire) {
                return;
            }
            let stamp = clock.now_ns();
            if let Err(e) = self.channel.send(stamp) {
                return self.close(Some((SenderStep::Wake, e)));
            }
        }
    }

    /// The sender's side of the handover, during its setup (nothing without one).
    fn attach_sender(&self) -> Result<(), (SenderStep, io::Error)> {
        match &self.handover {
            Some(handover) => handover
                .attach_sender()
                .map_err(|e| (SenderStep::AttachHandover, e)),
            None => Ok(()),
        }
    }

    /// Ends the pair from the sender's side and wakes the receiver once more to see it.
    fn close(&self, failure: Option<(SenderStep, io::Error)>) {
        if let Some((step, e)) = failure {
            self.record_failure(step, &e);
        }
        self.closing.store(true, Release);
        // The stamp of a closing wake is never used.
        let _ = self.channel.send(1);
    }

    fn record_failure(&self, step: SenderStep, e: &io::Error) {
        self.failed_errno
            .store(e.raw_os_error().unwrap_or(0), Relaxed);
        self.failed_step.store(step as u32, Release);
    }

    /// The sender's side of its setup: done, or what failed.
    fn report_setup(&self, result: Result<(), (SenderStep, io::Error)>) {
        let state = match result {
            Ok(()) => SETUP_DONE,
            Err((step, e)) => {
                self.record_failure(step, &e);
                SETUP_FAILED
            }
        };
        self.setup.store(state, Release);
        crate::sys::ipc::futex_wake_one_in(self.scope, &self.setup);
    }

    /// What the sender recorded as its failure, if anything.
    fn failure(&self) -> Option<(SenderStep, i32)> {
        let step = SenderStep::from_code(self.failed_step.load(Acquire))?;
        Some((step, self.failed_errno.load(Relaxed)))
    }
}

/// The receiver's waker: a channel shared with a running sender.
pub(crate) struct IpcWaker<C: Channel> {
    pair: Arc<SharedCell<Pair<C>>>,
    sender: Option<SenderHandle>,
    plan: SenderPlan,
    /// The sender's kernel thread id (a sender process's pid: its only thread).
    pub(crate) sender_tid: Pid,
    requests: u32,
    stamp_ns: u64,
    clock: Clock,
}

impl<C: Channel> IpcWaker<C> {
    /// Opens the channel in the calling (receiving) thread and starts its sender, set up per
    /// `plan`; the error is the measuring thread's failure message.
    pub fn start(clock: Clock, plan: SenderPlan) -> Result<Self, String> {
        let scope = plan.between.scope();
        let channel = C::open(scope).map_err(|e| format!("cannot open the IPC channel: {e}"))?;
        let handover = match plan.pace {
            Pace::Receiver => Some(
                C::Handover::open(scope)
                    .map_err(|e| format!("cannot open the receiver's wake of its sender: {e}"))?,
            ),
            Pace::SenderTimer => None,
        };
        let pair = SharedCell::new(Pair::new(channel, scope, handover))
            .map_err(|e| format!("cannot map the memory the IPC pair shares: {e}"))?;
        let pair = Arc::new(pair);
        let (handle, sender_tid) = SenderHandle::start(Arc::clone(&pair), clock, plan)?;
        let mut waker = IpcWaker {
            pair,
            sender: Some(handle),
            plan,
            sender_tid,
            requests: 0,
            stamp_ns: 0,
            clock,
        };
        waker.await_setup()?;
        Ok(waker)
    }

    /// Waits for the sender to say it is set up; the failure message if it is not.
    fn await_setup(&mut self) -> Result<(), String> {
        let pair = &**self.pair;
        loop {
            match pair.setup.load(Acquire) {
                SETUP_DONE => return Ok(()),
                SETUP_FAILED => {
                    self.finish();
                    return Err(self.failure_message().unwrap_or_default());
                }
                _ => {}
            }
            // Look every 20 ms whether the sender is still there.
            let deadline = Clock::Monotonic.now_ns() + 20_000_000;
            let _ = crate::sys::ipc::futex_wait_until_in(
                pair.scope,
                &pair.setup,
                SETUP_PENDING,
                Clock::Monotonic.id(),
                deadline,
            );
            if pair.setup.load(Acquire) == SETUP_PENDING
                && let Some(handle) = &mut self.sender
                && let Some(how) = handle.ended()
            {
                self.sender = None;
                return Err(format!(
                    "the sender {} ended during its setup ({how})",
                    self.plan.between.role()
                ));
            }
        }
    }

    /// Stops and ends the sender (joins the thread, reaps the process); its CPU time over its
    /// life, ns. Idempotent.
    pub fn finish(&mut self) -> u64 {
        let Some(handle) = self.sender.take() else {
            return 0;
        };
        let pair = &**self.pair;
        pair.closing.store(true, Release);
        pair.request_seq
            .store(self.requests.wrapping_add(1), Release);
        // A sender waiting for a due time sees this at once; one asleep towards a due time (the
        // receiver's wait failed) at that time, within an interval.
        futex_wake_one_in(pair.scope, &pair.request_seq);
        if let Some(handover) = &pair.handover {
            // Fails only if the sender is gone already.
            let _ = handover.wake_sender();
        }
        handle.end()
    }

    /// The sender's failure, as the measuring thread reports it.
    fn failure_message(&self) -> Option<String> {
        let (step, errno) = self.pair.failure()?;
        Some(step.message(&self.plan, errno))
    }
}

impl<C: Channel> Drop for IpcWaker<C> {
    fn drop(&mut self) {
        self.finish();
    }
}

impl<C: Channel> Waker for IpcWaker<C> {
    #[inline(always)]
    fn wait(&mut self, due_ns: u64, interval_ns: u64, stop: &AtomicBool) -> io::Result<()> {
        let pair = &**self.pair;
        if let Some(handover) = &pair.handover {
            // rt-tests' receiver: sleep the interval, then wake the sender, which sends at once.
            (AbsoluteSleep { clock: self.clock }).wait(due_ns, interval_ns, stop)?;
            handover.wake_sender()?;
        } else {
            self.requests = self.requests.wrapping_add(1);
            pair.request_due_ns.store(due_ns, Relaxed);
            pair.request_seq.store(self.requests, Release);
            futex_wake_one_in(pair.scope, &pair.request_seq);
        }
        let stamp = pair
            .channel
            .receive(|| stop.load(Relaxed) || pair.closing.load(Acquire))?;
        if pair.closing.load(Acquire) {
            return Err(self.closing_error());
        }
        self.stamp_ns = stamp;
        Ok(())
    }

    #[inline(always)]
    fn reference_ns(&self, _due_ns: u64) -> u64 {
        self.stamp_ns
    }
}

impl<C: Channel> IpcWaker<C> {
    #[cold]
    fn closing_error(&self) -> io::Error {
        match self.failure_message() {
            Some(message) => io::Error::other(message),
            None => io::ErrorKind::Interrupted.into(),
        }
    }
}

/// The driver of the IPC method whose channel is `C`.
pub(crate) const fn ipc_driver<C: Channel>() -> Driver {
    Driver {
        run: run_pair::<C>,
        lend: lend_pair::<C>,
    }
}

fn run_pair<C: Channel>(cycles: Cycles<'_>) -> ThreadEnd {
    let Some(plan) = cycles.sender else {
        return ThreadEnd::Failed("an IPC wake method needs a sender plan".into());
    };
    let mut waker = match IpcWaker::<C>::start(cycles.plan.clock, plan) {
        Ok(w) => w,
        Err(message) => return ThreadEnd::Failed(message),
    };
    let counters = cycles.counters;
    counters.sender_tid.store(waker.sender_tid, Relaxed);
    if plan.between == Between::Processes {
        counters.sender_process.store(waker.sender_tid, Relaxed);
    }
    let end = cycles.run(&mut waker);
    // Before the reaping: the runner must not signal a pid that may be reused.
    counters.sender_process.store(0, Relaxed);
    counters.sender_cpu_time_ns.store(waker.finish(), Relaxed);
    end
}

/// For tests that drive the loop themselves: a sender thread left to the scheduler,
/// SCHED_OTHER, on its own timer.
fn lend_pair<C: Channel>(
    clock: Clock,
    _interval_ns: u64,
    with: &mut dyn FnMut(&mut dyn Waker) -> ThreadEnd,
) -> ThreadEnd {
    let plan = SenderPlan {
        cpu: None,
        policy: Policy::Other,
        between: Between::Threads,
        pace: Pace::SenderTimer,
        lock_memory: false,
    };
    match IpcWaker::<C>::start(clock, plan) {
        Ok(mut waker) => with(&mut waker),
        Err(message) => ThreadEnd::Failed(message),
    }
}

/// Calls a blocking receive until it returns something other than EINTR; after EINTR, gives
/// up with [`io::ErrorKind::Interrupted`] if `end()` says so.
#[inline(always)]
fn resume_after_signal<T>(
    end: &impl Fn() -> bool,
    mut call: impl FnMut() -> io::Result<T>,
) -> io::Result<T> {
    loop {
        match call() {
            Err(e) if e.raw_os_error() == Some(errno::EINTR) => {
                if end() {
                    return Err(io::ErrorKind::Interrupted.into());
                }
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests;

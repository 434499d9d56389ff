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

mod channel;
pub(crate) mod handover;
pub mod locks;
pub(super) mod options;
mod pair;
pub(crate) mod queues;
mod sender;
pub mod signals;

use super::Waker;
use super::driver::{Cycles, Driver};
pub use super::plans::SenderPlan;
use super::sleep::AbsoluteSleep;
use crate::measure::clock::Clock;
use crate::measure::sample::ThreadEnd;
use crate::measure::sched::Policy;
pub use crate::sys::ipc::Scope;
use crate::sys::ipc::{SharedCell, futex_wake_one_in};
use crate::sys::process::Pid;
pub(crate) use channel::Channel;
use handover::Handover;
pub use options::{Between, Pace};
use pair::{Pair, SETUP_DONE, SETUP_FAILED, SETUP_PENDING};
use sender::SenderHandle;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::*};

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
    pub(crate) fn start(clock: Clock, plan: SenderPlan) -> Result<Self, String> {
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
    pub(crate) fn finish(&mut self) -> u64 {
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

#[cfg(test)]
mod tests;

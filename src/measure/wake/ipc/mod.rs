//! Wake methods where another thread, the sender, wakes the measuring thread (the receiver)
//! through an IPC mechanism, as rt-tests' pmqtest, ptsematest, svsematest, signaltest and
//! sigwaittest do.
//!
//! Each receiver has a sender thread of its own, started by the receiver's waker when the run
//! starts and joined when its loop ends, on every path. Per cycle:
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
//! Stopping: the runner interrupts both threads ([`crate::measure::ThreadCounters::sender_tid`]);
//! a sender interrupted, or told to close, wakes its receiver once more with `closing` set, so
//! that receivers blocked in calls that do not return on a signal (pthread mutexes and condition
//! variables, sigwait) end too.
//!
//! Adding a mechanism is a [`Channel`] (its two halves) in one of this module's files, and a row
//! in [`super::WAKE_METHODS`] with `driver: ipc_driver::<TheChannel>()` and
//! `schedule: Schedule::Sender`. A scenario with other roles (e.g. priority inversion) reuses
//! [`SenderPlan`] and [`Pair`]: the sender side is [`Pair::sender_loop`].

pub mod locks;
pub mod queues;
pub mod signals;

use super::Waker;
use super::driver::{Cycles, Driver};
use super::sleep::AbsoluteSleep;
use crate::measure::ThreadEnd;
use crate::measure::clock::{Clock, thread_cpu_time_ns};
use crate::measure::sched::{Policy, minimise_timer_slack, pin_current_thread};
use crate::sys::errno;
use crate::sys::ipc::{futex_wait, futex_wake_one};
use crate::sys::process::Pid;
use crate::sys::signal;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;

/// Where and how a receiver's sender runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SenderPlan {
    /// The CPU to pin the sender to; None leaves it to the scheduler.
    pub cpu: Option<usize>,
    pub policy: Policy,
}

/// One IPC mechanism: how the sender wakes the receiver, handing it the stamp.
pub trait Channel: Send + Sync + Sized + 'static {
    /// Made in the receiving (measuring) thread: signals are aimed at the thread that makes it.
    fn open() -> io::Result<Self>;

    /// Sender side: wakes the receiver, handing it `stamp_ns`.
    fn send(&self, stamp_ns: u64) -> io::Result<()>;

    /// Receiver side: blocks until woken; the stamp. After a signal interrupts the call it is
    /// resumed, unless `end()` says to give up: then [`io::ErrorKind::Interrupted`].
    fn receive(&self, end: impl Fn() -> bool) -> io::Result<u64>;
}

/// What a receiver and its sender share.
pub struct Pair<C> {
    pub channel: C,
    /// Bumped by the receiver for each due time it hands over; the sender's futex word.
    request_seq: AtomicU32,
    request_due_ns: AtomicU64,
    /// Set to end the pair: by the receiver when its loop ended, by the sender when it was
    /// interrupted or failed.
    closing: AtomicBool,
    /// Why the sender failed, if it did (read only on the closing path).
    failure: Mutex<Option<String>>,
}

impl<C: Channel> Pair<C> {
    fn new(channel: C) -> Pair<C> {
        Pair {
            channel,
            request_seq: AtomicU32::new(0),
            request_due_ns: AtomicU64::new(0),
            closing: AtomicBool::new(false),
            failure: Mutex::new(None),
        }
    }

    /// The sender's life: wait for a due time, sleep to it, stamp, send; until closed.
    pub fn sender_loop(&self, clock: Clock) {
        // Any signal (only the stop's interrupt has a handler) ends the sleep.
        static END_ON_SIGNAL: AtomicBool = AtomicBool::new(true);
        let mut seen = 0u32;
        loop {
            let seq = self.request_seq.load(Acquire);
            if self.closing.load(Acquire) {
                return;
            }
            if seq == seen {
                match futex_wait(&self.request_seq, seq) {
                    Ok(()) => {}
                    Err(e) if e.raw_os_error() == Some(errno::EAGAIN) => {}
                    Err(e) if e.raw_os_error() == Some(errno::EINTR) => return self.close(None),
                    Err(e) => {
                        return self.close(Some(format!("the sender's futex wait failed: {e}")));
                    }
                }
                continue;
            }
            seen = seq;
            let due = self.request_due_ns.load(Relaxed);
            match (AbsoluteSleep { clock }).wait(due, 0, &END_ON_SIGNAL) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => return self.close(None),
                Err(e) => return self.close(Some(format!("the sender's sleep failed: {e}"))),
            }
            let stamp = clock.now_ns();
            if let Err(e) = self.channel.send(stamp) {
                return self.close(Some(format!("the sender's wake failed: {e}")));
            }
        }
    }

    /// Ends the pair from the sender's side and wakes the receiver once more to see it.
    fn close(&self, failure: Option<String>) {
        if failure.is_some() {
            *self.failure.lock().unwrap_or_else(|p| p.into_inner()) = failure;
        }
        self.closing.store(true, Release);
        // The stamp of a closing wake is never used.
        let _ = self.channel.send(1);
    }
}

/// The receiver's waker: a channel shared with a running sender thread.
pub struct IpcWaker<C: Channel> {
    pair: Arc<Pair<C>>,
    sender: Option<JoinHandle<u64>>,
    pub sender_tid: Pid,
    requests: u32,
    stamp_ns: u64,
}

impl<C: Channel> IpcWaker<C> {
    /// Opens the channel in the calling (receiving) thread and starts its sender, set up per
    /// `plan`; the error is the measuring thread's failure message.
    pub fn start(clock: Clock, plan: SenderPlan) -> Result<Self, String> {
        let channel = C::open().map_err(|e| format!("cannot open the IPC channel: {e}"))?;
        let pair = Arc::new(Pair::new(channel));
        let (ready_tx, ready_rx) = mpsc::channel();
        let sender_pair = Arc::clone(&pair);
        let name = match plan.cpu {
            Some(cpu) => format!("jl-send-{cpu}"),
            None => "jl-send".into(),
        };
        let join = std::thread::Builder::new()
            .name(name)
            .stack_size(256 * 1024)
            .spawn(move || {
                let setup = set_up_sender(plan);
                let ok = setup.is_ok();
                let _ = ready_tx.send(setup);
                if ok {
                    sender_pair.sender_loop(clock);
                }
                thread_cpu_time_ns()
            })
            .map_err(|e| format!("cannot start the sender thread: {e}"))?;
        let mut waker = IpcWaker {
            pair,
            sender: Some(join),
            sender_tid: 0,
            requests: 0,
            stamp_ns: 0,
        };
        match ready_rx.recv() {
            Ok(Ok(tid)) => waker.sender_tid = tid,
            Ok(Err(message)) => return Err(message),
            Err(_) => return Err("the sender thread ended during its setup".into()),
        }
        Ok(waker)
    }

    /// Stops and joins the sender; its CPU time over its life, ns. Idempotent.
    pub fn finish(&mut self) -> u64 {
        let Some(join) = self.sender.take() else {
            return 0;
        };
        let pair = &self.pair;
        pair.closing.store(true, Release);
        pair.request_seq
            .store(self.requests.wrapping_add(1), Release);
        // A sender waiting for a due time sees this at once; one asleep towards a due time (the
        // receiver's wait failed) at that time, within an interval.
        futex_wake_one(&pair.request_seq);
        join.join().unwrap_or(0)
    }
}

impl<C: Channel> Drop for IpcWaker<C> {
    fn drop(&mut self) {
        self.finish();
    }
}

impl<C: Channel> Waker for IpcWaker<C> {
    #[inline(always)]
    fn wait(&mut self, due_ns: u64, _interval_ns: u64, stop: &AtomicBool) -> io::Result<()> {
        let pair = &*self.pair;
        self.requests = self.requests.wrapping_add(1);
        pair.request_due_ns.store(due_ns, Relaxed);
        pair.request_seq.store(self.requests, Release);
        futex_wake_one(&pair.request_seq);
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
        match self
            .pair
            .failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
        {
            Some(message) => io::Error::other(message),
            None => io::ErrorKind::Interrupted.into(),
        }
    }
}

/// Pins and schedules the sender; its thread id, or the failure message.
fn set_up_sender(plan: SenderPlan) -> Result<Pid, String> {
    if let Some(cpu) = plan.cpu {
        pin_current_thread(cpu).map_err(|e| {
            format!("cannot pin the sender thread to CPU {cpu}: {e}; check that the CPU is online and in this process's cpuset, or pass another --sender-cpu")
        })?;
    }
    minimise_timer_slack();
    plan.policy.apply_to_current_thread().map_err(|e| {
        format!(
            "cannot give the sender thread {} priority {}: {e}; run as root or grant CAP_SYS_NICE, or pass --sender-priority with a value the system allows",
            plan.policy.name(),
            plan.policy.priority()
        )
    })?;
    Ok(signal::thread_id())
}

/// The driver of the IPC method whose channel is `C`.
pub const fn ipc_driver<C: Channel>() -> Driver {
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
    let end = cycles.run(&mut waker);
    counters.sender_cpu_time_ns.store(waker.finish(), Relaxed);
    end
}

/// For tests that drive the loop themselves: a sender left to the scheduler, SCHED_OTHER.
fn lend_pair<C: Channel>(
    clock: Clock,
    _interval_ns: u64,
    with: &mut dyn FnMut(&mut dyn Waker) -> ThreadEnd,
) -> ThreadEnd {
    let plan = SenderPlan {
        cpu: None,
        policy: Policy::Other,
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

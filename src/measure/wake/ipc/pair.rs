//! What a receiver and its sender share ([`Pair`]: the channel, the due time handed over, the
//! closing flag, the setup's outcome) and the sender's side of it: its loops, and what it was
//! doing when it failed ([`SenderStep`]). Below the receiver's waker (`mod.rs`) and the sender's
//! start (`sender.rs`), which both hold a pair; it names neither.

use super::channel::Channel;
use super::handover::Handover;
use crate::measure::clock::Clock;
use crate::measure::wake::plans::SenderPlan;
use crate::measure::wake::sleep::AbsoluteSleep;
use crate::measure::waker::Waker;
use crate::sys::errno;
use crate::sys::ipc::{Scope, futex_wait_in};
use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering::*};

/// [`Pair::setup`]: the sender has not said yet.
pub(super) const SETUP_PENDING: u32 = 0;
pub(super) const SETUP_DONE: u32 = 1;
pub(super) const SETUP_FAILED: u32 = 2;

/// What a receiver and its sender share, in a [`SharedCell`]: plain atomics and the channel,
/// nothing that points into one process's private memory (a failure is a code, not a String).
pub(crate) struct Pair<C: Channel> {
    pub channel: C,
    pub(super) scope: Scope,
    /// With [`Pace::Receiver`] only: how the receiver wakes the sender.
    pub(super) handover: Option<C::Handover>,
    /// Bumped by the receiver for each due time it hands over; the sender's futex word.
    pub(super) request_seq: AtomicU32,
    pub(super) request_due_ns: AtomicU64,
    /// Set to end the pair: by the receiver when its loop ended, by the sender when it was
    /// interrupted or failed.
    pub(super) closing: AtomicBool,
    /// SETUP_PENDING until the sender is pinned and scheduled (or failed to be); a futex word.
    pub(super) setup: AtomicU32,
    /// What failed in the sender, if anything ([`SenderStep`] as u32, 0: nothing), and its
    /// errno; read only on the closing path.
    pub(super) failed_step: AtomicU32,
    pub(super) failed_errno: AtomicI32,
}

impl<C: Channel> Pair<C> {
    pub(super) fn new(channel: C, scope: Scope, handover: Option<C::Handover>) -> Pair<C> {
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
    pub(super) fn handed_over_loop(&self, handover: &C::Handover, clock: Clock) {
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
    pub(super) fn attach_sender(&self) -> Result<(), (SenderStep, io::Error)> {
        match &self.handover {
            Some(handover) => handover
                .attach_sender()
                .map_err(|e| (SenderStep::AttachHandover, e)),
            None => Ok(()),
        }
    }

    /// Ends the pair from the sender's side and wakes the receiver once more to see it.
    pub(super) fn close(&self, failure: Option<(SenderStep, io::Error)>) {
        if let Some((step, e)) = failure {
            self.record_failure(step, &e);
        }
        self.closing.store(true, Release);
        // The stamp of a closing wake is never used.
        let _ = self.channel.send(1);
    }

    pub(super) fn record_failure(&self, step: SenderStep, e: &io::Error) {
        self.failed_errno
            .store(e.raw_os_error().unwrap_or(0), Relaxed);
        self.failed_step.store(step as u32, Release);
    }

    /// The sender's side of its setup: done, or what failed.
    pub(super) fn report_setup(&self, result: Result<(), (SenderStep, io::Error)>) {
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
    pub(super) fn failure(&self) -> Option<(SenderStep, i32)> {
        let step = SenderStep::from_code(self.failed_step.load(Acquire))?;
        Some((step, self.failed_errno.load(Relaxed)))
    }
}

/// What a sender was doing when it failed: stored as a code in the shared pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub(super) enum SenderStep {
    Pin = 1,
    Schedule = 2,
    FutexWait = 3,
    Sleep = 4,
    Wake = 5,
    LockMemory = 6,
    AttachHandover = 7,
    AwaitReceiver = 8,
}

impl SenderStep {
    pub(super) fn from_code(code: u32) -> Option<SenderStep> {
        [
            SenderStep::Pin,
            SenderStep::Schedule,
            SenderStep::FutexWait,
            SenderStep::Sleep,
            SenderStep::Wake,
            SenderStep::LockMemory,
            SenderStep::AttachHandover,
            SenderStep::AwaitReceiver,
        ]
        .into_iter()
        .find(|s| *s as u32 == code)
    }

    /// The measuring thread's failure message for this step's `errno`.
    pub(super) fn message(self, plan: &SenderPlan, errno: i32) -> String {
        let e = io::Error::from_raw_os_error(errno);
        let role = plan.between.role();
        match self {
            SenderStep::Pin => format!(
                "cannot pin the sender {role} to CPU {}: {e}; check that the CPU is online and in this process's cpuset, or pass another --sender-cpu",
                plan.cpu.unwrap_or(0)
            ),
            SenderStep::Schedule => format!(
                "cannot give the sender {role} {} priority {}: {e}; run as root or grant CAP_SYS_NICE, or pass --sender-priority with a value the system allows",
                plan.policy.name(),
                plan.policy.priority()
            ),
            SenderStep::FutexWait => format!("the sender's futex wait failed: {e}"),
            SenderStep::Sleep => format!("the sender's sleep failed: {e}"),
            SenderStep::Wake => format!("the sender's wake failed: {e}"),
            SenderStep::AttachHandover => {
                format!("the sender cannot take its receiver's wake: {e}")
            }
            SenderStep::AwaitReceiver => {
                format!("the sender's wait for its receiver failed: {e}")
            }
            SenderStep::LockMemory => format!(
                "cannot lock the sender process's memory (mlockall): {e}; raise RLIMIT_MEMLOCK or grant CAP_IPC_LOCK, or pass --no-mlock"
            ),
        }
    }
}

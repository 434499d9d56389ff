//! The latency kind's measuring loop (`jitterlab run`, `monitor`, `sweep`, the cyclictest and
//! timerlat drop-ins): a thread's wakeups of a wake method, each sample how late one came. Its
//! [`WakeupPlan`] is the [`MeasuringLoop`] the plan hands the thread; `run` makes the cycle
//! plan and calls the method's row once (`cycle.rs`'s loop, monomorphised for its waker).

use super::clock::Clock;
use super::cycle::{CyclePlan, StopAt};
use super::sample::{Sample, ThreadCounters, ThreadEnd};
use super::thread::MeasuringLoop;
use super::wake::plans::{InversionPlan, SenderPlan};
use super::wake::{Cycles, WakeMethod};
use std::sync::atomic::AtomicBool;

/// A latency thread's wakeups: how it sleeps, on which clock, how often, and for how long.
#[derive(Debug, Clone)]
pub(crate) struct WakeupPlan {
    pub wake: &'static WakeMethod,
    pub clock: Clock,
    /// The thread's period (cyclictest -i plus its -d share).
    pub interval_ns: u64,
    /// Added to the period after every wakeup (`--interval-step`).
    pub interval_step_ns: u64,
    /// Stop after this many wakeups; otherwise at the gate's end time.
    pub loops: Option<u64>,
    /// Where the sender runs, for wake methods woken by another thread.
    pub sender: Option<SenderPlan>,
    /// The holder and the hog of `--wake pi-mutex`.
    pub inversion: Option<InversionPlan>,
}

impl MeasuringLoop for WakeupPlan {
    /// The wake method's cycles from `start_ns` to the loop count or `end_ns`.
    fn run(
        self: Box<Self>,
        start_ns: u64,
        end_ns: u64,
        producer: &mut rtrb::Producer<Sample>,
        counters: &ThreadCounters,
        stop: &AtomicBool,
    ) -> ThreadEnd {
        let plan = *self;
        let stop_at = match plan.loops {
            Some(n) => StopAt::Loops(n),
            None => StopAt::ClockTime(end_ns),
        };
        let mut cycle = CyclePlan {
            clock: plan.clock,
            schedule: plan.wake.schedule,
            interval_ns: plan.interval_ns,
            interval_step_ns: plan.interval_step_ns,
            first_due_ns: start_ns,
            stop_at,
            beat: Some(&super::guard::OWN_THREADS_BEAT),
        };
        // The one call through the method's row; the loop it runs is monomorphised for its
        // waker.
        plan.wake.run(Cycles {
            plan: &mut cycle,
            sink: producer,
            counters,
            stop,
            sender: plan.sender,
            inversion: plan.inversion,
        })
    }
}

//! How a row of [`super::WAKE_METHODS`] runs its method: it makes the method's waker in the
//! measuring thread and runs the cycle loop generic over it. Each method thus gets a straight
//! loop of its own; the only indirect call is the one through the row, once per thread.

use super::sleep::AbsoluteSleep;
use crate::measure::clock::Clock;
use crate::measure::cycle::{CyclePlan, run_cycles};
use crate::measure::sample::{Sample, ThreadCounters, ThreadEnd};
use crate::measure::waker::{MakeWaker, Schedule, Waker};
use std::sync::atomic::{AtomicBool, Ordering};

/// A measuring thread's loop, waiting for its waker.
pub(crate) struct Cycles<'a> {
    pub(crate) plan: &'a mut CyclePlan,
    pub(crate) sink: &'a mut rtrb::Producer<Sample>,
    pub(crate) counters: &'a ThreadCounters,
    pub(crate) stop: &'a AtomicBool,
    /// Where the sender runs, for methods woken by another thread ([`super::ipc`]).
    pub(crate) sender: Option<super::plans::SenderPlan>,
    /// The helpers of `--wake pi-mutex` ([`super::inversion`]).
    pub(crate) inversion: Option<super::plans::InversionPlan>,
}

impl Cycles<'_> {
    /// Arms the waker's first expiry, then runs the loop.
    pub(crate) fn run<W: Waker>(self, waker: &mut W) -> ThreadEnd {
        let (cycle, stop) = (self.plan, self.stop);
        match waker.first_due_ns(cycle.first_due_ns) {
            Ok(first) => cycle.first_due_ns = first,
            Err(e) => return ThreadEnd::Failed(format!("cannot arm the wake timer: {e}")),
        }
        if cycle.schedule == Schedule::Relative {
            // Relative methods measure from the clock read before their first sleep: start them
            // one interval before the common start, so that their first wakeup is due with the
            // rest.
            let lead_in = cycle.first_due_ns.saturating_sub(cycle.interval_ns);
            match (AbsoluteSleep { clock: cycle.clock }).wait(lead_in, 0, stop) {
                Ok(()) => {}
                Err(_) if stop.load(Ordering::Relaxed) => return ThreadEnd::Stopped,
                Err(_) => {
                    return ThreadEnd::Failed("the sleep until the run's start failed".into());
                }
            }
        }
        run_cycles(waker, cycle, self.sink, self.counters, stop)
    }
}

/// A method's waker, made and used: [`WakeMethod::run`](super::WakeMethod::run) in the
/// measuring thread; [`WakeMethod::lend_waker`](super::WakeMethod::lend_waker) for tests that
/// drive the loop with a clock of their own (tests/wake_grid.rs).
#[derive(Clone, Copy)]
pub(crate) struct Driver {
    pub(super) run: fn(Cycles<'_>) -> ThreadEnd,
    pub(super) lend: LendFn,
}

pub(super) type LendFn = fn(Clock, u64, &mut dyn FnMut(&mut dyn Waker) -> ThreadEnd) -> ThreadEnd;

/// The driver of the method whose waker is `W`: the one mention of the type in its row.
pub(crate) const fn driver<W: MakeWaker>() -> Driver {
    Driver {
        run: run_with::<W>,
        lend: lend_with::<W>,
    }
}

fn run_with<W: MakeWaker>(cycles: Cycles<'_>) -> ThreadEnd {
    match W::make(cycles.plan.clock, cycles.plan.interval_ns) {
        Ok(mut waker) => cycles.run(&mut waker),
        Err(message) => ThreadEnd::Failed(message),
    }
}

fn lend_with<W: MakeWaker>(
    clock: Clock,
    interval_ns: u64,
    with: &mut dyn FnMut(&mut dyn Waker) -> ThreadEnd,
) -> ThreadEnd {
    match W::make(clock, interval_ns) {
        Ok(mut waker) => with(&mut waker),
        Err(message) => ThreadEnd::Failed(message),
    }
}

//! Every wake method keeps its grid after a late wakeup, at every phase.
//!
//! The measuring loop reads the clock after the wait returns. If the thread is held between
//! the two (preempted, or its virtual CPU stalled) across a grid point, the kernel has already
//! moved its periodic timer on to that grid point while the loop, seeing a late wakeup,
//! skips it. A timer that is not re-aimed then fires for the skipped point and every later
//! sample is one period early. VM stalls hit that window only now and then; this test hits it
//! every time: it drives the real loop with the real wakers and a clock whose read is held
//! for a known time after chosen wakeups (the injected delay), at many phases of the grid.
//!
//! It runs without the test harness, because `itimer` and `itimer-periodic` signal the whole
//! process: SIGALRM must be blocked in every thread before any exists, as `jitterlab run` does.

mod common;

use jitterlab::measure::Sample;
use jitterlab::measure::clock::{Clock, monotonic_ns};
use jitterlab::measure::cycle::{CyclePlan, SampleSink, StopAt, TimeSource, run_cycles};
use jitterlab::measure::wake::{
    AbsoluteSleep, ItimerOneShot, ItimerPeriodic, PollSleep, PosixTimer, RelativeSleep,
    SelectSleep, TimerFd, WakeMethod, Waker, block_timer_signals,
};
use jitterlab::measure::{Policy, ThreadCounters, ThreadEnd};
use std::cell::Cell;
use std::sync::atomic::AtomicBool;

const INTERVAL_NS: u64 = 1_000_000;
const WAKEUPS: u64 = 120;
/// Every this many wakeups the clock read is held; 7 is prime to the delay list's length, so
/// every delay follows wakeups of every kind.
const HOLD_EVERY: u64 = 7;
/// The held times: less than a period, one period and more, and two and more, at phases
/// 0.05 .. 0.95 of the grid.
const DELAYS_NS: [u64; 8] = [
    450_000, 1_050_000, 1_350_000, 1_650_000, 1_950_000, 2_250_000, 2_550_000, 2_850_000,
];

/// The monotonic clock, with a known delay spun into chosen reads: as if the thread were held
/// right after its wait returned and before it read the clock.
struct HeldClock {
    reads: Cell<u64>,
    /// Per read: the delay spun into it (0: none), and the time the spin ended.
    holds: Cell<[(u64, u64); WAKEUPS as usize + 2]>,
}

impl TimeSource for HeldClock {
    fn now_ns(&self) -> u64 {
        let n = self.reads.get();
        self.reads.set(n + 1);
        let delay = if n > 0 && n.is_multiple_of(HOLD_EVERY) {
            DELAYS_NS[(n / HOLD_EVERY) as usize % DELAYS_NS.len()]
        } else {
            0
        };
        let start = monotonic_ns();
        let mut now = start;
        while now < start + delay {
            std::hint::spin_loop();
            now = monotonic_ns();
        }
        let mut holds = self.holds.get();
        if let Some(h) = holds.get_mut(n as usize) {
            *h = (delay, now);
        }
        self.holds.set(holds);
        now
    }
}

struct Collected(Vec<Sample>);

impl SampleSink for Collected {
    fn try_push(&mut self, sample: Sample) -> bool {
        self.0.push(sample);
        true
    }
}

/// Arms the waker's first expiry and runs the real loop with it.
fn drive<W: Waker>(
    waker: &mut W,
    plan: &mut CyclePlan<HeldClock>,
    sink: &mut Collected,
) -> ThreadEnd {
    plan.first_due_ns = waker
        .first_due_ns(plan.first_due_ns)
        .expect("the timer arms");
    let counters = ThreadCounters::default();
    run_cycles(waker, plan, sink, &counters, &AtomicBool::new(false))
}

/// The real waker of `method`, as `jitterlab run` builds it.
fn drive_method(
    method: WakeMethod,
    plan: &mut CyclePlan<HeldClock>,
    sink: &mut Collected,
) -> ThreadEnd {
    let clock = Clock::Monotonic;
    match method {
        WakeMethod::ClockNanosleep => drive(&mut AbsoluteSleep { clock }, plan, sink),
        WakeMethod::ClockNanosleepRel => drive(
            &mut RelativeSleep {
                clock,
                plain_nanosleep: false,
            },
            plan,
            sink,
        ),
        WakeMethod::Nanosleep => drive(
            &mut RelativeSleep {
                clock,
                plain_nanosleep: true,
            },
            plan,
            sink,
        ),
        WakeMethod::Select => drive(&mut SelectSleep, plan, sink),
        WakeMethod::Poll => drive(&mut PollSleep, plan, sink),
        WakeMethod::Itimer => drive(&mut ItimerOneShot::default(), plan, sink),
        WakeMethod::ItimerPeriodic => {
            drive(&mut ItimerPeriodic::new(clock, INTERVAL_NS), plan, sink)
        }
        WakeMethod::PosixTimer => drive(
            &mut PosixTimer::new(clock, INTERVAL_NS).unwrap(),
            plan,
            sink,
        ),
        WakeMethod::Timerfd => drive(&mut TimerFd::new(clock, INTERVAL_NS).unwrap(), plan, sink),
        WakeMethod::Rtc => unreachable!("no /dev/rtc case here"),
    }
}

/// Runs one method; returns the first violation.
fn check(method: WakeMethod) -> Result<(), String> {
    let name = method.name();
    let mut plan = CyclePlan {
        clock: HeldClock {
            reads: Cell::new(0),
            holds: Cell::new([(0, 0); WAKEUPS as usize + 2]),
        },
        schedule: method.schedule(),
        interval_ns: INTERVAL_NS,
        interval_step_ns: 0,
        first_due_ns: monotonic_ns() + 2 * INTERVAL_NS,
        stop_at: StopAt::Loops(WAKEUPS),
    };
    let mut sink = Collected(Vec::new());
    let end = drive_method(method, &mut plan, &mut sink);
    if end != ThreadEnd::Completed {
        return Err(format!("--wake {name}: the loop ended with {end:?}"));
    }
    let samples = sink.0;
    if let Some(s) = samples.iter().find(|s| s.latency_ns < 0) {
        return Err(format!(
            "--wake {name}: wakeup {} came {} ns before its due time: the timer lost the grid",
            s.seq, -s.latency_ns
        ));
    }
    // Relative methods read the clock once before the first sleep: read k is wakeup k-1's.
    let first_read = match method.schedule() {
        jitterlab::measure::wake::Schedule::Relative => 1,
        _ => 0,
    };
    let holds = plan.clock.holds.get();
    let mut held = 0;
    for s in &samples {
        let (delay, _) = holds[s.seq as usize + first_read];
        if delay == 0 {
            continue;
        }
        held += 1;
        // The sample includes the whole hold; the wait itself may have woken late too, so
        // only the lower bound is exact (the hold is measured, not assumed).
        if (s.latency_ns as u64) < delay {
            return Err(format!(
                "--wake {name}: wakeup {} was held {delay} ns but measured {} ns",
                s.seq, s.latency_ns
            ));
        }
        let forced = delay / INTERVAL_NS;
        if u64::from(s.missed) < forced {
            return Err(format!(
                "--wake {name}: wakeup {} held {delay} ns counted {} missed periods, at least {forced} passed",
                s.seq, s.missed
            ));
        }
    }
    if held < 10 {
        return Err(format!("--wake {name}: only {held} wakeups were held"));
    }
    Ok(())
}

fn main() {
    // Before any other thread exists, as in `jitterlab run`.
    block_timer_signals();
    let methods = [
        WakeMethod::ClockNanosleep,
        WakeMethod::ClockNanosleepRel,
        WakeMethod::Nanosleep,
        WakeMethod::Select,
        WakeMethod::Poll,
        WakeMethod::Itimer,
        WakeMethod::ItimerPeriodic,
        WakeMethod::PosixTimer,
        WakeMethod::Timerfd,
    ];
    let _g = common::exclusive();
    // Real-time priority keeps other tasks from adding holds of their own; without it the
    // test still holds (it checks lower bounds and the absence of early wakeups).
    let _ = jitterlab::measure::sched::pin_current_thread(1);
    let rt = Policy::Fifo(90).apply_to_current_thread().is_ok();
    let mut failed = 0;
    for method in methods {
        let mut errors = Vec::new();
        for _ in 0..2 {
            match check(method) {
                Ok(()) => break,
                Err(e) => errors.push(e),
            }
        }
        let ok = errors.len() < 2;
        println!(
            "test wake_grid::{} ... {}",
            method.name(),
            if ok { "ok" } else { "FAILED" }
        );
        if !ok {
            failed += 1;
            for e in &errors {
                println!("    {e}");
            }
        }
    }
    let _ = Policy::Other.apply_to_current_thread();
    println!(
        "\ntest result: {}. {} passed; {failed} failed (real-time priority: {rt})",
        if failed == 0 { "ok" } else { "FAILED" },
        methods.len() - failed
    );
    if failed > 0 {
        std::process::exit(101);
    }
}

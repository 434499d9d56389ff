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
use jitterlab::measure::clock::Clock;
use jitterlab::measure::cycle::{CyclePlan, SampleSink, StopAt, TimeSource, run_cycles};
use jitterlab::measure::wake::{Schedule, WAKE_METHODS, WakeMethod, block_timer_signals};
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

/// The method's clock, with a known delay spun into chosen reads: as if the thread were held
/// right after its wait returned and before it read the clock.
struct HeldClock {
    clock: Clock,
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
        let start = self.clock.now_ns();
        let mut now = start;
        while now < start + delay {
            std::hint::spin_loop();
            now = self.clock.now_ns();
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

/// Makes the real waker of `method` as `jitterlab run` does, arms its first expiry and runs
/// the real loop with it.
fn drive(method: &WakeMethod, plan: &mut CyclePlan<HeldClock>, sink: &mut Collected) -> ThreadEnd {
    method.lend_waker(plan.clock.clock, INTERVAL_NS, &mut |mut waker| {
        plan.first_due_ns = waker
            .first_due_ns(plan.first_due_ns)
            .expect("the timer arms");
        let counters = ThreadCounters::default();
        run_cycles(&mut waker, plan, sink, &counters, &AtomicBool::new(false))
    })
}

/// Why `method` cannot be checked here, if it cannot: its system requirement is missing, or
/// it does not take this test's interval (`rtc` ticks at power-of-two rates only).
fn cannot_check(method: &WakeMethod) -> Option<String> {
    method.check_system().err().or_else(|| {
        method
            .interval_rule
            .and_then(|rule| rule(INTERVAL_NS).err())
    })
}

/// Runs one method; returns the first violation.
fn check(method: &WakeMethod) -> Result<(), String> {
    let name = method.name;
    let clock = method
        .clock(Clock::DEFAULT)
        .expect("every method measures with the default --clock");
    let mut plan = CyclePlan {
        clock: HeldClock {
            clock,
            reads: Cell::new(0),
            holds: Cell::new([(0, 0); WAKEUPS as usize + 2]),
        },
        schedule: method.schedule,
        interval_ns: INTERVAL_NS,
        interval_step_ns: 0,
        first_due_ns: clock.now_ns() + 2 * INTERVAL_NS,
        stop_at: StopAt::Loops(WAKEUPS),
        beat: None,
    };
    let mut sink = Collected(Vec::new());
    let end = drive(method, &mut plan, &mut sink);
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
    let first_read = match method.schedule {
        Schedule::Relative => 1,
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
    let _g = common::exclusive();
    // Real-time priority keeps other tasks from adding holds of their own; without it the
    // test still holds (it checks lower bounds and the absence of early wakeups).
    let _ = jitterlab::measure::sched::pin_current_thread(1);
    let rt = Policy::Fifo(90).apply_to_current_thread().is_ok();
    let (mut failed, mut passed) = (0, 0);
    // Every method of the table: a new one is checked without an edit here.
    for method in WAKE_METHODS {
        if let Some(why) = cannot_check(method) {
            println!("test wake_grid::{} ... SKIPPED: {why}", method.name);
            continue;
        }
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
            method.name,
            if ok { "ok" } else { "FAILED" }
        );
        if ok {
            passed += 1;
        } else {
            failed += 1;
            for e in &errors {
                println!("    {e}");
            }
        }
    }
    let _ = Policy::Other.apply_to_current_thread();
    println!(
        "\ntest result: {}. {passed} passed; {failed} failed (real-time priority: {rt})",
        if failed == 0 { "ok" } else { "FAILED" },
    );
    if failed > 0 {
        std::process::exit(101);
    }
}

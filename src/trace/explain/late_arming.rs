//! The explanation of a relative sleep armed late (split.rs, `take_late_armed_cycle`), on
//! synthetic events split as the joiner splits them: the thread was held between its clock
//! read (which sets the due time) and its arming, so its timer's expiry lies that far after
//! the due time. From the due time on that lateness is two stretches, in neither the IRQ nor
//! the thread part: what held the thread before its arming (named), then the timer's own wait
//! from the arming to its new expiry (no holder: the thread only waited for its timer). With
//! the two parts they say every nanosecond of the latency once.

use super::tests::{push, who};
use super::{LateSample, Names, explain};
use crate::format::events::SpikeExplanation;
use crate::trace::decode::{Kind, TaskRef, task};
use crate::trace::reader::TaskPolicy;
use crate::trace::split::{ArmedLate, CpuTimeline, Split};
use std::collections::HashMap;

/// The measuring thread (77, FIFO 95) and CPU 1's idle task.
fn me() -> TaskRef {
    task(77, 4, "jl-measure-1")
}
fn idle() -> TaskRef {
    task(0, 120, "swapper/1")
}

/// `holder` preempts the measuring thread at `from` and gives it the CPU back at `to`.
fn held_by(t: &mut CpuTimeline, holder: TaskRef, from: u64, to: u64) {
    push(
        t,
        77,
        from,
        Kind::Switch {
            prev: me(),
            next: holder,
        },
    );
    push(
        t,
        holder.pid,
        to,
        Kind::Switch {
            prev: holder,
            next: me(),
        },
    );
}

/// The thread's timer armed at `armed_ts` for `expires`, then the CPU given to `next` at
/// `armed_ts` + 10 us; its interrupt 10 us after `expires` (1 us to the expiry, 3 us in all),
/// the thread switched in 2 us after it and woken in user space 5 us later. Returns the wakeup.
fn arm_and_expire(t: &mut CpuTimeline, armed_ts: u64, expires: i64, next: TaskRef) -> u64 {
    push(
        t,
        77,
        armed_ts,
        Kind::HrtimerStart {
            hrtimer: 5,
            expires,
            softexpires: expires,
        },
    );
    push(t, 77, armed_ts + 10_000, Kind::Switch { prev: me(), next });
    let irq = expires as u64 + 10_000;
    push(t, next.pid, irq, Kind::VectorEntry { vector: 0 });
    push(
        t,
        next.pid,
        irq + 1_000,
        Kind::HrtimerExpire {
            hrtimer: 5,
            now: irq as i64 + 1_000,
        },
    );
    push(t, next.pid, irq + 3_000, Kind::VectorExit { vector: 0 });
    push(
        t,
        next.pid,
        irq + 5_000,
        Kind::Switch {
            prev: next,
            next: me(),
        },
    );
    irq + 10_000
}

/// The sample due at 1 ms on CPU 1, split by the timeline as the joiner splits a relative
/// sleep (within half an interval of 1 ms), and explained.
fn split_and_explain(
    t: &mut CpuTimeline,
    wake_ns: u64,
    policies: &HashMap<(i32, i32), TaskPolicy>,
) -> (Split, SpikeExplanation) {
    let split = t
        .split(77, 1_000_000, wake_ns, 500_000)
        .expect("joined with the timer armed late");
    let s = LateSample {
        cpu: 1,
        tid: 77,
        due_ns: 1_000_000,
        wake_ns,
        split: Some(split),
    };
    (split, explain(&s, t, policies, &Names::default()))
}

fn spike_policy() -> HashMap<(i32, i32), TaskPolicy> {
    HashMap::from([(
        (900, 0),
        TaskPolicy {
            policy: "FIFO",
            prio: 99,
            kernel_prio: 0,
        },
    )])
}

/// The contributors' sum: what the explanation gives to holders.
fn held_ns(x: &SpikeExplanation) -> u64 {
    x.contributors.iter().map(|c| c.duration_ns).sum()
}

/// Lab check 1d (`--wake itimer`, a FIFO 99 spike above the measuring thread on the RT
/// kernel): the spike preempted the thread between its clock read (which sets the due time)
/// and its `setitimer`, for 20 ms; the thread armed its timer 20.29 ms late, and the timer then
/// expired and woke it on time. The time before the arming held no pending interrupt (the timer
/// was not armed yet): the spike is named, no "no trace event" made of its time (it was, for
/// 20.70 ms, before stop 58). From the arming to the expiry the thread only waited for its
/// timer on an idle CPU: the timer's own wait, said, and no holder (before this stop that idle
/// was `CPU idle (exit from idle)` for its 380 us, as lab check 1c's `itimer` capture had 940 us).
#[test]
fn a_task_that_held_the_thread_before_its_late_arming_is_named() {
    let spike = task(900, 0, "jl-spike-1");
    let mut t = CpuTimeline::default();
    // The spike preempts the thread after its clock read (due 1 ms), before its arming.
    held_by(&mut t, spike, 900_000, 20_900_000);
    let wake = arm_and_expire(&mut t, 20_910_000, 21_290_000, idle());
    let (sp, x) = split_and_explain(&mut t, wake, &spike_policy());
    // The split carries the arming's time.
    assert_eq!(
        sp.armed_late,
        Some(ArmedLate {
            late_ns: 20_290_000,
            armed_ts: 20_910_000,
            expiry_passed: false,
        })
    );
    assert_eq!((sp.irq_latency_ns, sp.thread_latency_ns), (11_000, 9_000));
    // Idle only in the interrupt's pending 10 us and the 2 us after it: never the wait.
    assert_eq!(
        who(&x),
        [
            ("jl-spike-1", 19_900_000),
            ("idle", 12_000),
            ("vector 0", 3_000)
        ],
        "{x:?}"
    );
    assert_eq!(
        x.verdict,
        "latency 20.31 ms: the thread armed its timer 20.29 ms late (its expiry that far after the due time; IRQ latency 11.0 us, thread latency 9.0 us after it): 19.91 ms to its arming, CPU held by jl-spike-1 (pid 900, FIFO 99) for 19.90 ms; then 380.0 us the timer's own wait until the late expiry it was armed for"
    );
    // Every part once: to the arming 19.91 ms, the wait 380 us, IRQ 11 us and thread 9 us
    // make the latency; of it the holders have all but the thread's own 15 us (10 us before
    // its arming, 5 us from its switch in to user space) and the wait.
    assert_eq!(19_910_000 + 380_000 + 11_000 + 9_000, x.latency_ns);
    assert_eq!(held_ns(&x) + 15_000 + 380_000, x.latency_ns as u64);
}

/// The wait after a late arming is no holder's whatever the CPU did then: a normal task and an
/// interrupt handler that ran between the arming and the new expiry did not hold the wakeup
/// back (the timer could not expire sooner); the same task after the expiry did.
#[test]
fn what_ran_while_a_late_armed_timer_waited_for_its_expiry_held_nothing() {
    let spike = task(900, 0, "jl-spike-1");
    let worker = task(300, 120, "kworker/1:1");
    let mut t = CpuTimeline::default();
    held_by(&mut t, spike, 900_000, 20_900_000);
    push(
        &mut t,
        77,
        20_910_000,
        Kind::HrtimerStart {
            hrtimer: 5,
            expires: 21_290_000,
            softexpires: 21_290_000,
        },
    );
    push(
        &mut t,
        77,
        20_920_000,
        Kind::Switch {
            prev: me(),
            next: worker,
        },
    );
    push(
        &mut t,
        300,
        21_000_000,
        Kind::IrqEntry {
            irq: 24,
            name: "virtio0-input.0".into(),
        },
    );
    push(&mut t, 300, 21_050_000, Kind::IrqExit { irq: 24 });
    push(&mut t, 300, 21_300_000, Kind::VectorEntry { vector: 0 });
    push(
        &mut t,
        300,
        21_301_000,
        Kind::HrtimerExpire {
            hrtimer: 5,
            now: 21_301_000,
        },
    );
    push(&mut t, 300, 21_303_000, Kind::VectorExit { vector: 0 });
    // The worker keeps the CPU 40 us after the expiry (kernel code without preemption).
    push(
        &mut t,
        300,
        21_343_000,
        Kind::Switch {
            prev: worker,
            next: me(),
        },
    );
    let (sp, x) = split_and_explain(&mut t, 21_348_000, &spike_policy());
    assert_eq!(sp.armed_late.map(|a| a.armed_ts), Some(20_910_000));
    // The worker: its 40 us after the expiry only (its 10 us of the interrupt's pending
    // stretch is a silence); the handler: nothing.
    assert_eq!(
        who(&x),
        [
            ("jl-spike-1", 19_900_000),
            ("kworker/1:1", 40_000),
            ("no trace event", 10_000),
            ("vector 0", 3_000)
        ],
        "{x:?}"
    );
    assert!(
        x.verdict.ends_with(
            ": 19.91 ms to its arming, CPU held by jl-spike-1 (pid 900, FIFO 99) for 19.90 ms; then 380.0 us the timer's own wait until the late expiry it was armed for"
        ),
        "{}",
        x.verdict
    );
    assert_eq!(held_ns(&x) + 15_000 + 380_000, x.latency_ns as u64);
}

/// Held for less than an interval between its clock read and its arming (here 610 us of a
/// 1 ms interval, beyond the join's 500 us), the thread armed its timer before the due time:
/// what held it lies before the latency, and the whole window up to the new expiry is the
/// timer's own wait, never the CPU's idle (it was `CPU idle (exit from idle)` for 620 us).
#[test]
fn a_timer_armed_late_before_the_due_time_leaves_only_its_wait_before_its_expiry() {
    let spike = task(900, 0, "jl-spike-1");
    let mut t = CpuTimeline::default();
    // The clock read at 0 (due 1 ms); the spike holds the thread from 10 us to 600 us.
    held_by(&mut t, spike, 10_000, 600_000);
    let wake = arm_and_expire(&mut t, 610_000, 1_610_000, idle());
    let (sp, x) = split_and_explain(&mut t, wake, &spike_policy());
    assert_eq!(
        sp.armed_late,
        Some(ArmedLate {
            late_ns: 610_000,
            armed_ts: 610_000,
            expiry_passed: false,
        })
    );
    assert_eq!(who(&x), [("idle", 12_000), ("vector 0", 3_000)], "{x:?}");
    assert_eq!(
        x.verdict,
        "latency 630.0 us: the thread armed its timer 610.0 us late (its expiry that far after the due time; IRQ latency 11.0 us, thread latency 9.0 us after it): armed 390.0 us before the due time, what held it lies before that; then 610.0 us the timer's own wait until the late expiry it was armed for"
    );
    // The wait, IRQ and thread parts make the latency; the holders have all but the wait and
    // the thread's 5 us from its switch in.
    assert_eq!(610_000 + 11_000 + 9_000, x.latency_ns);
    assert_eq!(held_ns(&x) + 5_000 + 610_000, x.latency_ns as u64);
}

/// Lab check 1c's `itimer` capture (tests/data/trace/rt-itimer-armed-late, the sample due at
/// 68.748785480 s) as events: the thread woke, read its clock, and then showed no event for
/// 19 ms until its `setitimer` (the vCPU stalled). The thread's own code there takes
/// microseconds: its silent time before the arming is no trace event, not the thread's own
/// (and not the 73 us interrupt handler it had as the longest holder there).
#[test]
fn a_silence_of_the_thread_before_its_late_arming_is_no_trace_event() {
    let mut t = CpuTimeline::default();
    push(
        &mut t,
        0,
        900_000,
        Kind::Switch {
            prev: idle(),
            next: me(),
        },
    );
    push(&mut t, 77, 5_000_000, Kind::VectorEntry { vector: 1 });
    push(&mut t, 77, 5_073_000, Kind::VectorExit { vector: 1 });
    let wake = arm_and_expire(&mut t, 20_910_000, 21_290_000, idle());
    let (_, x) = split_and_explain(&mut t, wake, &HashMap::new());
    assert_eq!(
        who(&x),
        [
            ("no trace event", 19_910_000 - 73_000),
            ("vector 1", 73_000),
            ("idle", 12_000),
            ("vector 0", 3_000)
        ],
        "{x:?}"
    );
    assert!(
        x.verdict.ends_with(
            ": 19.91 ms to its arming, no trace event for 19.84 ms: hypervisor, SMI or interrupts off; then 380.0 us the timer's own wait until the late expiry it was armed for"
        ),
        "{}",
        x.verdict
    );
    assert_eq!(held_ns(&x) + 5_000 + 380_000, x.latency_ns as u64);
}

use super::*;
use crate::trace::decode::task;

fn ev(ts: u64, pid: i32, kind: Kind) -> TraceEvent {
    TraceEvent {
        ts,
        common_pid: pid,
        kind,
    }
}

/// A synthetic chain: armed for 10_000, fired 2 us late, woken, switched in 50 us later
/// (another task held the CPU), in user space 3 us after that.
#[test]
fn splits_a_cycle_into_its_parts() {
    let me = task(77, 4, "jl-measure-0");
    let other = task(900, 0, "jl-spike-0");
    let mut t = CpuTimeline::default();
    let tids = [77];
    t.push(
        ev(
            1_000,
            77,
            Kind::HrtimerStart {
                hrtimer: 0xa,
                expires: 10_000,
                softexpires: 10_000,
            },
        ),
        &tids,
    );
    // Someone else's timer on the same CPU is not ours.
    t.push(
        ev(
            1_500,
            900,
            Kind::HrtimerStart {
                hrtimer: 0xb,
                expires: 10_000,
                softexpires: 10_000,
            },
        ),
        &tids,
    );
    t.push(
        ev(
            2_000,
            77,
            Kind::Switch {
                prev: me,
                next: other,
            },
        ),
        &tids,
    );
    t.push(
        ev(
            10_001,
            900,
            Kind::HrtimerExpire {
                hrtimer: 0xb,
                now: 10_001,
            },
        ),
        &tids,
    );
    t.push(
        ev(
            12_000,
            900,
            Kind::HrtimerExpire {
                hrtimer: 0xa,
                now: 12_000,
            },
        ),
        &tids,
    );
    t.push(ev(12_400, 900, Kind::waking(77)), &tids);
    t.push(
        ev(
            62_400,
            900,
            Kind::Switch {
                prev: other,
                next: me,
            },
        ),
        &tids,
    );
    let s = t.split(77, 10_000, 65_400, 0).unwrap();
    assert_eq!(
        s,
        Split {
            irq_latency_ns: 2_000,
            thread_latency_ns: 53_400,
            wake_to_switch_ns: Some(50_000),
            switch_to_user_ns: Some(3_000),
            expiry_ts: 12_000,
            expired_in: None,
            expired_on: None,
            woken_ts: Some(12_400),
            armed_late: None,
            held_in_softirq: None,
        }
    );
    // Joined once only.
    assert_eq!(t.split(77, 10_000, 65_400, 0), None);
}

/// PREEMPT_RT: the timer (soft) expires in ktimers/0, which its interrupt woke 5 us after
/// the expiry time and which a FIFO 50 task kept off the CPU for 20 ms. The IRQ part ends
/// at that wakeup; the wait is thread latency, with the thread named.
#[test]
fn a_timer_expired_in_a_softirq_thread_splits_at_the_threads_wakeup() {
    let me = task(77, 4, "jl-measure-0");
    let spike = task(900, 49, "jl-spike-0");
    let ktimers = task(16, 98, "ktimers/0");
    let mut t = CpuTimeline::default();
    let tids = [77];
    let start = |hrtimer| Kind::HrtimerStart {
        hrtimer,
        expires: 1_000_000,
        softexpires: 1_000_000,
    };
    t.push(ev(1_000, 77, start(0xa)), &tids);
    t.push(
        ev(
            2_000,
            77,
            Kind::Switch {
                prev: me,
                next: spike,
            },
        ),
        &tids,
    );
    // The interrupt wakes ktimers/0 (recorded on the CPU it interrupted).
    let woken = |ts, t: &mut CpuTimeline| {
        let kind = Kind::Waking {
            task: ktimers,
            target_cpu: 0,
        };
        t.push(ev(ts, 900, kind), &tids);
    };
    woken(1_005_000, &mut t);
    t.push(
        ev(
            21_000_000,
            900,
            Kind::Switch {
                prev: spike,
                next: ktimers,
            },
        ),
        &tids,
    );
    t.push(
        ev(
            21_010_000,
            16,
            Kind::HrtimerExpire {
                hrtimer: 0xa,
                now: 21_010_000,
            },
        ),
        &tids,
    );
    t.push(ev(21_012_000, 16, Kind::waking(77)), &tids);
    t.push(
        ev(
            21_015_000,
            16,
            Kind::Switch {
                prev: ktimers,
                next: me,
            },
        ),
        &tids,
    );
    let s = t.split(77, 1_000_000, 21_018_000, 0).unwrap();
    assert_eq!(s.irq_latency_ns, 5_000);
    assert_eq!(s.thread_latency_ns, 20_013_000);
    assert_eq!(
        s.expiry_ts, 1_005_000,
        "the thread part begins at the wakeup"
    );
    let x = s.expired_in.unwrap();
    assert_eq!(
        (x.thread.pid, x.woken_ts, x.expiry_ts),
        (16, 1_005_000, 21_010_000)
    );

    // Woken before the due time, even before the timer was armed (still waiting for the
    // CPU, the softirq pending): no IRQ part.
    let mut t = CpuTimeline::default();
    woken(500, &mut t);
    t.push(ev(1_000, 77, start(0xb)), &tids);
    t.push(
        ev(
            5_000_000,
            16,
            Kind::HrtimerExpire {
                hrtimer: 0xb,
                now: 5_000_000,
            },
        ),
        &tids,
    );
    let s = t.split(77, 1_000_000, 5_010_000, 0).unwrap();
    assert_eq!((s.irq_latency_ns, s.thread_latency_ns), (0, 4_010_000));
    assert_eq!(s.expiry_ts, 1_000_000);

    // A timer expired in an interrupt (common_pid is whoever ran) is split at its expiry.
    let mut t = CpuTimeline::default();
    t.push(ev(1_000, 77, start(0xc)), &tids);
    woken(1_001_000, &mut t);
    t.push(
        ev(
            1_003_000,
            900,
            Kind::HrtimerExpire {
                hrtimer: 0xc,
                now: 1_003_000,
            },
        ),
        &tids,
    );
    let s = t.split(77, 1_000_000, 1_010_000, 0).unwrap();
    assert_eq!((s.irq_latency_ns, s.expired_in), (3_000, None));
}

#[test]
fn relative_methods_match_within_the_tolerance() {
    let mut t = CpuTimeline::default();
    let tids = [5];
    for (k, soft) in [(0u64, 1_000_700i64), (1, 2_001_500)] {
        t.push(
            ev(
                k * 1_000_000,
                5,
                Kind::HrtimerStart {
                    hrtimer: 1,
                    expires: soft,
                    softexpires: soft,
                },
            ),
            &tids,
        );
        t.push(
            ev(
                soft as u64 + 900,
                0,
                Kind::HrtimerExpire {
                    hrtimer: 1,
                    now: soft + 900,
                },
            ),
            &tids,
        );
    }
    assert_eq!(t.split(5, 1_000_000, 1_010_000, 0), None, "not exact");
    // A failed join keeps the cycles after its due time; the next join drops the first.
    let s = t.split(5, 2_000_000, 2_010_000, 100_000).unwrap();
    assert_eq!(s.irq_latency_ns, 900);
    assert_eq!(s.thread_latency_ns, 2_010_000 - 2_002_400);
}

fn stack(ts: u64, pid: i32) -> TraceEvent {
    ev(
        ts,
        pid,
        Kind::KernelStack {
            ips: std::sync::Arc::from(vec![0xffff_ffff_8100_0000u64 + ts]),
        },
    )
}

/// Stacks stay out of the history, in time order whatever order they arrive in, trimmed
/// with the history and bounded in count.
#[test]
fn stacks_are_kept_beside_the_history_in_time_order_and_bounded() {
    let mut t = CpuTimeline::default();
    t.push(ev(5_000, 1, Kind::waking(3)), &[]);
    for ts in [4_000, 2_000, 6_000, 2_000] {
        t.push(stack(ts, 9), &[]);
    }
    assert_eq!(t.history.len(), 1, "stacks are not history");
    let times: Vec<u64> = t.stacks.iter().map(|e| e.ts).collect();
    assert_eq!(times, [2_000, 2_000, 4_000, 6_000]);
    t.trim_before_due(HISTORY_BEHIND_NS + 3_000);
    let times: Vec<u64> = t.stacks.iter().map(|e| e.ts).collect();
    assert_eq!(times, [4_000, 6_000]);
    for ts in 0..MAX_STACKS as u64 + 10 {
        t.push(stack(10_000 + ts, 9), &[]);
    }
    assert_eq!(t.stacks.len(), MAX_STACKS);
    // The oldest went first.
    assert_eq!(t.stacks.front().unwrap().ts, 10_000 + 10);
    assert_eq!(t.stacks.back().unwrap().ts, 10_000 + MAX_STACKS as u64 + 9);
}

#[test]
fn history_is_trimmed_behind_the_samples_keeping_the_running_task() {
    let mut t = CpuTimeline::default();
    let a = task(1, 120, "a");
    let b = task(2, 120, "b");
    t.push(ev(1_000, 1, Kind::Switch { prev: a, next: b }), &[]);
    t.push(ev(50_000_000, 2, Kind::waking(3)), &[]);
    t.trim_before_due(30_000_000);
    assert_eq!(t.history.len(), 1);
    assert_eq!(t.base_task, Some(b));
}

/// A nohz_full CPU 1's timer moved by the kernel to CPU 0: armed on CPU 1, expired on CPU 0
/// 3 us late, the thread woken from CPU 0 and switched in on CPU 1 after a FIFO 99 task held
/// it for 20 ms. Without CPU 0's timeline it is not joined; with it, split with the CPU named.
/// The arming stays for the join while the sample is not joined, and is forgotten after.
#[test]
fn a_timer_moved_to_another_cpu_is_joined_from_there() {
    let me = task(77, 4, "jl-measure-1");
    let spike = task(900, 0, "jl-spike-1");
    let tids = [77];
    let arm = |t: &mut CpuTimeline, ts, expires| {
        t.push(
            ev(
                ts,
                77,
                Kind::HrtimerStart {
                    hrtimer: 0xa,
                    expires,
                    softexpires: expires,
                },
            ),
            &tids,
        )
    };
    let mut cpu1 = CpuTimeline::default();
    let mut cpu0 = CpuTimeline::default();
    arm(&mut cpu1, 1_000, 1_000_000);
    let to_spike = Kind::Switch {
        prev: me,
        next: spike,
    };
    cpu1.push(ev(2_000, 77, to_spike), &tids);
    // Another timer of the same address long before: not this arming's expiry.
    cpu0.push(
        ev(
            500,
            0,
            Kind::HrtimerExpire {
                hrtimer: 0xa,
                now: 500,
            },
        ),
        &tids,
    );
    cpu0.push(
        ev(
            1_003_000,
            0,
            Kind::HrtimerExpire {
                hrtimer: 0xa,
                now: 1_003_000,
            },
        ),
        &tids,
    );
    cpu0.push(
        ev(
            1_004_000,
            0,
            Kind::Waking {
                task: me,
                target_cpu: 1,
            },
        ),
        &tids,
    );
    let to_me = Kind::Switch {
        prev: spike,
        next: me,
    };
    cpu1.push(ev(21_000_000, 900, to_me), &tids);
    // Re-armed for the next sample before this one is joined.
    arm(&mut cpu1, 21_010_000, 22_000_000);
    let wake = 21_005_000;
    assert_eq!(cpu1.split(77, 1_000_000, wake, 0), None, "CPU 1 alone");
    let s = cpu1
        .split_elsewhere(77, 1_000_000, wake, 0, &[(0, &cpu0)])
        .unwrap();
    assert_eq!(s.expired_on, Some(0));
    assert_eq!((s.irq_latency_ns, s.thread_latency_ns), (3_000, 20_002_000));
    assert_eq!(s.wake_to_switch_ns, Some(21_000_000 - 1_004_000));
    assert_eq!(s.switch_to_user_ns, Some(5_000));
    assert_eq!(s.expiry_ts, 1_003_000);
    // Joined once; the next sample's arming is still there.
    assert_eq!(
        cpu1.split_elsewhere(77, 1_000_000, wake, 0, &[(0, &cpu0)]),
        None
    );
    assert_eq!(cpu1.arms.len(), 1);
}

/// A thread woken while it still ran (its timer expired between its arming and its sleep, so
/// the interrupt woke it in its own context) gets no switch-in for that wakeup. A later switch
/// to it (here its next wakeup's, whose timer's events were lost) is not this wakeup's: taken
/// for it, the switch-to-user came out negative (-6.5 ms and -128 ms in two 3 s BPF runs at
/// 40 us on the development VM).
#[test]
fn a_thread_woken_while_running_gets_no_later_switch_as_its_own() {
    let me = task(77, 4, "jl-measure-0");
    let other = task(900, 120, "other");
    let mut t = CpuTimeline::default();
    let tids = [77];
    let start = |hrtimer, at: i64| Kind::HrtimerStart {
        hrtimer,
        expires: at,
        softexpires: at,
    };
    t.push(ev(9_000, 77, start(0xa, 10_000)), &tids);
    // The interrupt comes while the thread runs: expiry and wakeup in its own context.
    t.push(
        ev(
            10_500,
            77,
            Kind::HrtimerExpire {
                hrtimer: 0xa,
                now: 10_500,
            },
        ),
        &tids,
    );
    t.push(ev(10_600, 77, Kind::waking(77)), &tids);
    // Its sample (clock read at 11_000), its next arming, its sleep; the next wakeup's timer
    // events are lost, its switch-in (at 55_000) is in the trace.
    t.push(ev(11_500, 77, start(0xb, 50_000)), &tids);
    t.push(
        ev(
            12_000,
            77,
            Kind::Switch {
                prev: me,
                next: other,
            },
        ),
        &tids,
    );
    t.push(
        ev(
            55_000,
            900,
            Kind::Switch {
                prev: other,
                next: me,
            },
        ),
        &tids,
    );
    let s = t.split(77, 10_000, 11_000, 0).unwrap();
    assert_eq!(s.irq_latency_ns, 500);
    assert_eq!(s.thread_latency_ns, 500);
    assert_eq!(s.woken_ts, Some(10_600));
    assert_eq!(s.wake_to_switch_ns, None);
    assert_eq!(s.switch_to_user_ns, None);
}

/// The switch-in after a wakeup from another context is that wakeup's, and only the first.
#[test]
fn only_the_first_switch_after_a_wakeup_is_its_switch_in() {
    let me = task(77, 4, "jl-measure-0");
    let other = task(900, 120, "other");
    let mut t = CpuTimeline::default();
    let tids = [77];
    let sw = |prev, next| Kind::Switch { prev, next };
    t.push(
        ev(
            9_000,
            77,
            Kind::HrtimerStart {
                hrtimer: 0xa,
                expires: 10_000,
                softexpires: 10_000,
            },
        ),
        &tids,
    );
    t.push(ev(9_500, 77, sw(me, other)), &tids);
    t.push(
        ev(
            10_500,
            900,
            Kind::HrtimerExpire {
                hrtimer: 0xa,
                now: 10_500,
            },
        ),
        &tids,
    );
    t.push(ev(10_600, 900, Kind::waking(77)), &tids);
    t.push(ev(12_000, 900, sw(other, me)), &tids);
    // Preempted after its clock read (13_000) and given the CPU back.
    t.push(ev(14_000, 77, sw(me, other)), &tids);
    t.push(ev(20_000, 900, sw(other, me)), &tids);
    let s = t.split(77, 10_000, 13_000, 0).unwrap();
    assert_eq!(s.wake_to_switch_ns, Some(1_400));
    assert_eq!(s.switch_to_user_ns, Some(1_000));
}

/// Lab check 1f's `select` wakeup (the BPF back end, a FIFO 99 spike above the measuring thread,
/// RT 6.1 under qemu), in the order its events came: the thread read its clock after its last
/// wakeup (the due time is that read plus 1 ms) and called `select`, which read the kernel's
/// clock for its end time (5 us later); the spike preempted it inside the call, before its
/// arming, for 20 ms; the thread armed its timer with an expiry long past, and the interrupt
/// came at once and woke it where it ran. No interrupt was pending before that arming: the
/// spike's time is the arming's lateness, in neither part, and the spike is named. Before, the
/// IRQ part ran from the expiry time (19.52 ms of "the timer interrupt came late"), and the
/// spike's time in it was "no trace event for 19.24 ms" (a task cannot hold an interrupt off).
#[test]
fn a_timer_armed_after_its_expiry_is_a_sleep_armed_late_and_its_holder_is_named() {
    use crate::trace::explain::{LateSample, Names, explain};
    use crate::trace::reader::TaskPolicy;
    let me = task(77, 4, "jl-measure-1");
    let spike = task(900, 0, "jl-spike-1");
    let idle = task(0, 120, "swapper/1");
    let mut t = CpuTimeline::default();
    let tids = [77];
    let sw = |prev, next| Kind::Switch { prev, next };
    let start = |hrtimer, at: i64| Kind::HrtimerStart {
        hrtimer,
        expires: at,
        softexpires: at,
    };
    // Its last wakeup's switch-in; it reads its clock at 0.
    t.push(ev(0, 0, sw(idle, me)), &tids);
    // Preempted inside `select` at 130 us: its end time read (1.005 ms), its timer not armed.
    t.push(ev(130_000, 77, sw(me, spike)), &tids);
    t.push(ev(20_200_000, 900, sw(spike, me)), &tids);
    t.push(ev(20_210_000, 77, start(0xa, 1_005_000)), &tids);
    t.push(ev(20_212_000, 77, Kind::VectorEntry { vector: 0 }), &tids);
    t.push(
        ev(
            20_215_000,
            77,
            Kind::HrtimerExpire {
                hrtimer: 0xa,
                now: 20_215_000,
            },
        ),
        &tids,
    );
    t.push(ev(20_216_000, 77, Kind::waking(77)), &tids);
    t.push(ev(20_218_000, 77, Kind::VectorExit { vector: 0 }), &tids);
    // Its clock read at 20.23 ms: 19.23 ms late. select's tolerance: half the interval.
    let s = t.split(77, 1_000_000, 20_230_000, 500_000).unwrap();
    assert_eq!(
        s.armed_late.map(|a| (a.late_ns, a.expiry_passed)),
        Some((19_210_000, true)),
        "{s:?}"
    );
    // From the arming to the expiry, then to the clock read.
    assert_eq!(s.irq_latency_ns, 5_000, "{s:?}");
    assert_eq!(s.thread_latency_ns, 15_000, "{s:?}");
    let policies = HashMap::from([(
        (900, 0),
        TaskPolicy {
            policy: "FIFO",
            prio: 99,
            kernel_prio: 0,
        },
    )]);
    let late = LateSample {
        cpu: 1,
        tid: 77,
        due_ns: 1_000_000,
        wake_ns: 20_230_000,
        split: Some(s),
    };
    let x = explain(&late, &t, &policies, &Names::default());
    let who: Vec<(&str, u64)> = x
        .contributors
        .iter()
        .map(|c| (c.name.as_str(), c.duration_ns))
        .collect();
    assert_eq!(who[0], ("jl-spike-1", 19_200_000), "{x:?}");
    assert!(!who.iter().any(|(n, _)| *n == "no trace event"), "{x:?}");
    assert!(
        x.verdict
            .starts_with("latency 19.23 ms: the thread armed its timer 19.21 ms late"),
        "{}",
        x.verdict
    );
    assert!(
        x.verdict
            .ends_with("CPU held by jl-spike-1 (pid 900, FIFO 99) for 19.20 ms"),
        "{}",
        x.verdict
    );
    // Its expiry was on time, its arming late: no wait of the timer's own is said.
    assert!(
        x.verdict
            .contains("(after its expiry time had passed: its interrupt came at once;")
            && !x.verdict.contains("own wait"),
        "{}",
        x.verdict
    );
}

/// A timer armed before its expiry keeps its IRQ part from the expiry, armed late or not: the
/// arming's time moves the IRQ part's start only when it came after the expiry time.
#[test]
fn a_timer_armed_on_time_counts_its_irq_part_from_its_expiry() {
    let mut t = CpuTimeline::default();
    let tids = [77];
    t.push(
        ev(
            999_990,
            77,
            Kind::HrtimerStart {
                hrtimer: 0xa,
                expires: 1_000_000,
                softexpires: 1_000_000,
            },
        ),
        &tids,
    );
    t.push(
        ev(
            1_004_000,
            77,
            Kind::HrtimerExpire {
                hrtimer: 0xa,
                now: 1_004_000,
            },
        ),
        &tids,
    );
    t.push(ev(1_005_000, 77, Kind::waking(77)), &tids);
    let s = t.split(77, 1_000_000, 1_006_000, 0).unwrap();
    assert_eq!(s.armed_late, None);
    assert_eq!((s.irq_latency_ns, s.thread_latency_ns), (4_000, 2_000));
}

/// The removal a join makes: what goes at the front is popped, what goes behind a kept element
/// goes too, and the rest keeps its order.
#[test]
fn remove_where_takes_the_front_and_the_middle_and_keeps_the_order() {
    let mut q: VecDeque<u32> = (1..=8).collect();
    remove_where(&mut q, |&x| x <= 2);
    assert_eq!(q, [3, 4, 5, 6, 7, 8]);
    remove_where(&mut q, |&x| x == 3 || x == 6);
    assert_eq!(q, [4, 5, 7, 8]);
    remove_where(&mut q, |&x| x == 8);
    assert_eq!(q, [4, 5, 7]);
    remove_where(&mut q, |_| false);
    assert_eq!(q, [4, 5, 7]);
    remove_where(&mut q, |_| true);
    assert!(q.is_empty());
}

/// Two threads on one CPU: joining one thread's sample takes its cycle and its older ones,
/// wherever they lie, and leaves the other thread's cycles in order.
#[test]
fn a_join_leaves_the_other_threads_cycles_in_order() {
    let mut t = CpuTimeline::default();
    let tids = [1, 2];
    let mut ts = 0;
    for (tid, timer, expiry) in [
        (1, 0xa, 1_000),
        (2, 0xb, 1_100),
        (1, 0xa, 2_000),
        (2, 0xb, 2_100),
        (1, 0xa, 3_000),
    ] {
        ts += 10;
        t.push(
            ev(
                ts,
                tid,
                Kind::HrtimerStart {
                    hrtimer: timer,
                    expires: expiry,
                    softexpires: expiry,
                },
            ),
            &tids,
        );
        ts += 10;
        t.push(
            ev(
                ts,
                0,
                Kind::HrtimerExpire {
                    hrtimer: timer,
                    now: expiry,
                },
            ),
            &tids,
        );
    }
    // Thread 1's sample due at 2 000: its cycle at 1 000 (never joined) and 2 000 go.
    let c = t.take_cycle(1, 2_000, 500).expect("the cycle due at 2 000");
    assert_eq!((c.tid, c.softexpires), (1, 2_000));
    let left: Vec<(i32, i64)> = t.cycles.iter().map(|c| (c.tid, c.softexpires)).collect();
    assert_eq!(left, [(2, 1_100), (2, 2_100), (1, 3_000)]);
    // Thread 2's at 2 100: both of its cycles go, thread 1's stays.
    assert_eq!(
        t.take_cycle(2, 2_100, 500).map(|c| c.softexpires),
        Some(2_100)
    );
    let left: Vec<(i32, i64)> = t.cycles.iter().map(|c| (c.tid, c.softexpires)).collect();
    assert_eq!(left, [(1, 3_000)]);
}

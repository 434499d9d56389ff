//! The chain behind one sample of an IPC wake method (`--wake mq`, `mutex`, `signal`...), from
//! the trace of the sender's and the receiver's CPUs: the IPC analogue of [`super::split`].
//!
//! An IPC sample's latency runs from the sender's clock read (the stamp) to the receiver's
//! (see `measure::wake::ipc`). The trace shows the chain around it:
//!
//! ```text
//! sender's CPU:   hrtimer_start (by the sender, expires = the due time)  the sender's sleep
//!                 hrtimer_expire_entry (now = N)                          its timer fires
//!                 sched_waking (pid = sender), sched_switch (next = sender)  the sender runs: S
//!                 ... return to user space, the stamp, the mechanism's call ...
//!                 sched_waking (pid = receiver, by the sender)             the wake: K
//! receiver's CPU: sched_switch (next = receiver)                          the receiver runs: R
//!                 ... return to user space, the receiver's clock read
//! ```
//!
//! and the chain splits into
//!
//! - **sender late** = stamp − due: the sender's own lateness (its timer's IRQ latency, then its
//!   wait for its CPU). It is *not* in the sample's latency, which starts at the stamp. The
//!   receiver hands each due time over after its previous wakeup; when that wakeup ran past
//!   the due time, the sender's timer is armed already expired, and the sender is late by the
//!   handover too (the IRQ latency then counts from the arming);
//! - **wake call** = K − stamp: the mechanism's kernel path up to the wakeup, and any
//!   preemption of the sender in between;
//! - **kept off** = R − K: the receiver woken but off its CPU (the scheduling delay).
//!
//! The stamp itself is not in the trace (a vDSO clock read). It follows S, and since the
//! sample's latency L is the receiver's read W minus the stamp, with W after R (after K), it is
//! no earlier than R − L (K − L): the stamp is placed at the latest of S, K − L and R − L. That
//! is exact but for the receiver's return to user space (W − R, a few microseconds), which
//! moves it that much too early; and it keeps a preemption of the sender after S but before its
//! stamp in "sender late", where it belongs. A switch in of the receiver later than K + L
//! cannot be its wakeup's (W = stamp + L ≤ K + L): the trace then lacks it.

use super::decode::{Kind, TraceEvent};
use super::split::CpuTimeline;

/// What the trace shows of one IPC sample's chain (trace clock = CLOCK_MONOTONIC, ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IpcChain {
    /// The sample: its due time and latency (the receiver's read minus the sender's stamp).
    pub due_ns: u64,
    pub latency_ns: i64,
    /// The sender's timer: its expiry's `now` minus the later of the programmed expiry (the
    /// due time) and the arming.
    pub(crate) sender_irq_latency_ns: i64,
    /// How long after the due time the sender's timer was armed (0 when before it): the due
    /// time was handed over late, after a late previous wakeup.
    pub(crate) handed_late_ns: u64,
    /// When the sender's timer expired.
    pub(crate) sender_expiry_ts: u64,
    /// When the sender got its CPU after the timer (S); None if the trace lacks the switch.
    pub(crate) sender_running_ts: Option<u64>,
    /// The sender's sched_waking of the receiver (K).
    pub(crate) waking_ts: Option<u64>,
    /// The receiver's sched_switch in after that (R).
    pub(crate) receiver_running_ts: Option<u64>,
}

impl IpcChain {
    /// Where the sender's stamp lies (see the module documentation): the latest of the sender
    /// running (its timer's expiry when its switch is missing), K − L and R − L.
    pub(crate) fn stamp_ts(&self) -> u64 {
        let latency = self.latency_ns.max(0) as u64;
        let running = self.sender_running_ts.unwrap_or(self.sender_expiry_ts);
        [self.waking_ts, self.receiver_running_ts]
            .into_iter()
            .flatten()
            .map(|t| t.saturating_sub(latency))
            .fold(running, u64::max)
    }

    /// stamp − due: how late the sender stamped.
    pub(crate) fn sender_late_ns(&self) -> i64 {
        self.stamp_ts() as i64 - self.due_ns as i64
    }

    /// K − stamp.
    pub(crate) fn wake_call_ns(&self) -> Option<i64> {
        Some(self.waking_ts? as i64 - self.stamp_ts() as i64)
    }

    /// R − K.
    pub(crate) fn kept_off_ns(&self) -> Option<i64> {
        Some(self.receiver_running_ts? as i64 - self.waking_ts? as i64)
    }
}

/// The sender's timer cycle for the sample due at `due_ns` with `latency_ns`, taken out of
/// the sender CPU's timeline (the sender sleeps with an absolute clock_nanosleep to exactly the
/// due time).
pub(crate) fn take_sender_cycle(
    sender_cpu: &mut CpuTimeline,
    sender_tid: i32,
    due_ns: u64,
    latency_ns: i64,
) -> Option<IpcChain> {
    let c = sender_cpu.take_cycle(sender_tid, due_ns, 0)?;
    Some(IpcChain {
        due_ns,
        latency_ns,
        sender_irq_latency_ns: c.now - c.expires.max(c.armed_ts as i64),
        handed_late_ns: c.armed_ts.saturating_sub(due_ns),
        sender_expiry_ts: c.expiry_ts,
        sender_running_ts: c.switch_in_ts,
        waking_ts: None,
        receiver_running_ts: None,
    })
}

/// Completes `chain` with the wake of `receiver` by `sender` (on the sender's CPU) and the
/// receiver's switch in after it (on the receiver's CPU, which may be the same timeline). The
/// wake is looked for before the sender's next sleep (its next hrtimer_start): a receiver that
/// had not blocked yet when the sender sent needs no wakeup, and the next one is another
/// sample's.
pub(crate) fn follow_wake(
    chain: &mut IpcChain,
    sender_cpu: &CpuTimeline,
    receiver_cpu: &CpuTimeline,
    sender: i32,
    receiver: i32,
) {
    let from = chain.sender_expiry_ts;
    let next_sleep = first_from(sender_cpu, from, |e| {
        e.common_pid == sender && matches!(e.kind, Kind::HrtimerStart { .. })
    });
    chain.waking_ts = first_from(sender_cpu, from, |e| {
        e.common_pid == sender
            && matches!(e.kind, Kind::Waking { task, .. } if task.pid == receiver)
    })
    .filter(|&k| next_sleep.is_none_or(|n| k < n));
    // The sender ran before it woke the receiver, or slept again: a switch in after that is a
    // later one (the trace lacks this one's, which happens), and says nothing.
    if let (Some(s), Some(limit)) = (chain.sender_running_ts, chain.waking_ts.or(next_sleep))
        && s > limit
    {
        chain.sender_running_ts = None;
    }
    chain.receiver_running_ts = chain.waking_ts.and_then(|k| {
        first_from(
            receiver_cpu,
            k,
            |e| matches!(&e.kind, Kind::Switch { next, .. } if next.pid == receiver),
        )
        .filter(|&r| r <= k + chain.latency_ns.max(0) as u64)
    });
}

/// The time of the first event at or after `from` that `wanted` accepts.
fn first_from(tl: &CpuTimeline, from: u64, wanted: impl Fn(&TraceEvent) -> bool) -> Option<u64> {
    let start = tl.history.partition_point(|e| e.ts < from);
    tl.history
        .iter()
        .skip(start)
        .find(|e| wanted(e))
        .map(|e| e.ts)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::trace::decode::TaskRef;
    use crate::trace::decode::task;

    pub(crate) fn push(t: &mut CpuTimeline, ts: u64, pid: i32, kind: Kind, measuring: &[i32]) {
        t.push(
            TraceEvent {
                ts,
                common_pid: pid,
                kind,
            },
            measuring,
        );
    }

    /// One IPC cycle on two CPUs: the sender (tid 8, `jl-send-1`) on CPU 1 arms its timer for
    /// 1 ms and leaves the CPU to `held_by_1`; the timer fires at `expire_ns` (its waking of
    /// the sender 200 ns later), the sender gets the CPU back at `sender_back_ns` and wakes the
    /// receiver (tid 7, `jl-measure-0`) at `wake_ns`. On CPU 0 the receiver left at 0.9 ms to
    /// `held_by_0` and is switched in again at `home_ns`.
    pub(crate) struct Scene {
        pub(crate) held_by_1: TaskRef,
        pub(crate) expire_ns: u64,
        pub(crate) sender_back_ns: u64,
        pub(crate) wake_ns: u64,
        pub(crate) held_by_0: TaskRef,
        pub(crate) home_ns: u64,
    }

    pub(crate) fn scene(s: Scene) -> (CpuTimeline, CpuTimeline) {
        let tids = [7, 8];
        let sender = task(8, 4, "jl-send-1");
        let receiver = task(7, 4, "jl-measure-0");
        let (on1, on0) = (s.held_by_1.pid, s.held_by_0.pid);
        let mut cpu1 = CpuTimeline::default();
        let start = Kind::HrtimerStart {
            hrtimer: 0x51,
            expires: 1_000_000,
            softexpires: 1_000_000,
        };
        push(&mut cpu1, 10_000, 8, start, &tids);
        let out = Kind::Switch {
            prev: sender,
            next: s.held_by_1,
        };
        push(&mut cpu1, 11_000, 8, out, &tids);
        let expire = Kind::HrtimerExpire {
            hrtimer: 0x51,
            now: s.expire_ns as i64,
        };
        push(&mut cpu1, s.expire_ns, on1, expire, &tids);
        push(&mut cpu1, s.expire_ns + 200, on1, Kind::waking(8), &tids);
        let back = Kind::Switch {
            prev: s.held_by_1,
            next: sender,
        };
        push(&mut cpu1, s.sender_back_ns, on1, back, &tids);
        push(&mut cpu1, s.wake_ns, 8, Kind::waking(7), &tids);
        let mut cpu0 = CpuTimeline::default();
        let away = Kind::Switch {
            prev: receiver,
            next: s.held_by_0,
        };
        push(&mut cpu0, 900_000, 7, away, &tids);
        let home = Kind::Switch {
            prev: s.held_by_0,
            next: receiver,
        };
        push(&mut cpu0, s.home_ns, on0, home, &tids);
        (cpu0, cpu1)
    }

    /// The sender's timer fires 2 us late on an idle CPU 1, the sender runs 1 us later and
    /// wakes the receiver 4 us after that; CPU 0 switches the receiver in 300 us later.
    /// `spinner` is what held CPU 0 meanwhile.
    pub(crate) fn two_cpus(spinner: TaskRef) -> (CpuTimeline, CpuTimeline) {
        scene(Scene {
            held_by_1: task(0, 120, "swapper/1"),
            expire_ns: 1_002_000,
            sender_back_ns: 1_003_000,
            wake_ns: 1_007_000,
            held_by_0: spinner,
            home_ns: 1_307_000,
        })
    }

    #[test]
    fn follows_the_chain_across_two_cpus() {
        let (cpu0, mut cpu1) = two_cpus(task(900, 0, "jl-spike-0"));
        let mut chain = take_sender_cycle(&mut cpu1, 8, 1_000_000, 306_000).unwrap();
        follow_wake(&mut chain, &cpu1, &cpu0, 8, 7);
        assert_eq!(chain.sender_irq_latency_ns, 2_000);
        assert_eq!(chain.sender_late_ns(), 3_000);
        assert_eq!(chain.wake_call_ns(), Some(4_000));
        assert_eq!(chain.kept_off_ns(), Some(300_000));
        assert_eq!(chain.handed_late_ns, 0);
        // Taken once.
        assert!(take_sender_cycle(&mut cpu1, 8, 1_000_000, 306_000).is_none());
    }

    /// The receiver had not blocked when the sender sent: no wakeup before the sender's next
    /// sleep; the one after it belongs to the next sample.
    #[test]
    fn a_wake_after_the_senders_next_sleep_is_not_this_samples() {
        let (cpu0, mut cpu1) = two_cpus(task(900, 0, "jl-spike-0"));
        let mut chain = take_sender_cycle(&mut cpu1, 8, 1_000_000, 306_000).unwrap();
        // Replace the wake by: the next arming, then a wake.
        cpu1.history.pop_back();
        let next = Kind::HrtimerStart {
            hrtimer: 0x51,
            expires: 2_000_000,
            softexpires: 2_000_000,
        };
        push(&mut cpu1, 1_005_000, 8, next, &[7, 8]);
        push(&mut cpu1, 2_004_000, 8, Kind::waking(7), &[7, 8]);
        follow_wake(&mut chain, &cpu1, &cpu0, 8, 7);
        assert_eq!(chain.waking_ts, None);
    }

    /// The sender's switch in after its timer is missing from the trace: the next one (after
    /// its wake of the receiver) is not taken for it.
    #[test]
    fn a_switch_in_after_the_wake_is_not_the_senders_start() {
        let (cpu0, mut cpu1) = two_cpus(task(900, 0, "jl-spike-0"));
        let mut chain = take_sender_cycle(&mut cpu1, 8, 1_000_000, 306_000).unwrap();
        chain.sender_running_ts = Some(1_500_000);
        follow_wake(&mut chain, &cpu1, &cpu0, 8, 7);
        assert_eq!(chain.waking_ts, Some(1_007_000));
        assert_eq!(chain.sender_running_ts, None);
        // The stamp: the later of the timer's expiry and R − L (1_001_000).
        assert_eq!(chain.stamp_ts(), 1_002_000);
    }

    /// A due time handed over after it passed: the timer is armed already expired.
    #[test]
    fn a_due_time_handed_over_late_is_not_irq_latency() {
        let tids = [8];
        let mut t = CpuTimeline::default();
        let start = Kind::HrtimerStart {
            hrtimer: 1,
            expires: 1_000_000,
            softexpires: 1_000_000,
        };
        push(&mut t, 1_400_000, 8, start, &tids);
        let expire = Kind::HrtimerExpire {
            hrtimer: 1,
            now: 1_405_000,
        };
        push(&mut t, 1_405_000, 0, expire, &tids);
        let chain = take_sender_cycle(&mut t, 8, 1_000_000, 10_000).unwrap();
        assert_eq!(chain.handed_late_ns, 400_000);
        assert_eq!(chain.sender_irq_latency_ns, 5_000);
        assert_eq!(chain.sender_late_ns(), 405_000);
    }

    /// The sender ran at S, was preempted for 577 us, then stamped and woke the receiver; the
    /// receiver's latency (40 us) places the stamp after the preemption: the sender was late,
    /// its wake call was not.
    #[test]
    fn a_preemption_before_the_stamp_makes_the_sender_late() {
        let tids = [7, 8];
        let sender = task(8, 4, "jl-send-1");
        let other = task(30, 130, "lto");
        let receiver = task(7, 4, "jl-measure-0");
        let idle = task(0, 120, "swapper/0");
        let mut cpu1 = CpuTimeline::default();
        let start = Kind::HrtimerStart {
            hrtimer: 1,
            expires: 1_000_000,
            softexpires: 1_000_000,
        };
        push(&mut cpu1, 10_000, 8, start, &tids);
        let expire = Kind::HrtimerExpire {
            hrtimer: 1,
            now: 1_001_000,
        };
        push(&mut cpu1, 1_001_000, 30, expire, &tids);
        push(&mut cpu1, 1_001_500, 30, Kind::waking(8), &tids);
        let cycle = [(1_003_000, other, sender), (1_005_000, sender, other)];
        for (ts, prev, next) in cycle {
            push(&mut cpu1, ts, prev.pid, Kind::Switch { prev, next }, &tids);
        }
        let back = Kind::Switch {
            prev: other,
            next: sender,
        };
        push(&mut cpu1, 1_580_000, 30, back, &tids);
        push(&mut cpu1, 1_590_000, 8, Kind::waking(7), &tids);
        let mut cpu0 = CpuTimeline::default();
        let away = Kind::Switch {
            prev: receiver,
            next: idle,
        };
        push(&mut cpu0, 900_000, 7, away, &tids);
        let home = Kind::Switch {
            prev: idle,
            next: receiver,
        };
        push(&mut cpu0, 1_620_000, 0, home, &tids);
        let mut chain = take_sender_cycle(&mut cpu1, 8, 1_000_000, 40_000).unwrap();
        follow_wake(&mut chain, &cpu1, &cpu0, 8, 7);
        assert_eq!(chain.sender_running_ts, Some(1_003_000));
        assert_eq!(chain.stamp_ts(), 1_580_000);
        assert_eq!(chain.sender_late_ns(), 580_000);
        assert_eq!(chain.wake_call_ns(), Some(10_000));
        assert_eq!(chain.kept_off_ns(), Some(30_000));
        // A switch in later than the wake plus the latency is not this wakeup's.
        let mut chain = IpcChain {
            latency_ns: 20_000,
            waking_ts: None,
            receiver_running_ts: None,
            ..chain
        };
        follow_wake(&mut chain, &cpu1, &cpu0, 8, 7);
        assert_eq!(chain.waking_ts, Some(1_590_000));
        assert_eq!(chain.receiver_running_ts, None);
    }

    #[test]
    fn a_wake_by_another_task_is_not_the_senders() {
        let (cpu0, mut cpu1) = two_cpus(task(900, 0, "jl-spike-0"));
        let mut chain = take_sender_cycle(&mut cpu1, 8, 1_000_000, 306_000).unwrap();
        follow_wake(&mut chain, &cpu1, &cpu0, 9, 7);
        assert_eq!(chain.waking_ts, None);
        assert_eq!(chain.kept_off_ns(), None);
        assert_eq!(chain.wake_call_ns(), None);
    }
}

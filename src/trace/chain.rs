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
//! - **sender late** = S − due: the sender's own lateness (its timer's IRQ latency N − due,
//!   then its wait for its CPU). It is *not* in the sample's latency, which starts at the stamp;
//! - **wake call** = K − S: from the sender running to its wake of the receiver: its return to
//!   user space and clock read (before the stamp, under a microsecond), then the mechanism's
//!   kernel path up to the wakeup, and any preemption of the sender in between;
//! - **kept off** = R − K: the receiver woken but off its CPU (the scheduling delay).
//!
//! The stamp itself is not in the trace (a vDSO clock read), so the wake call is measured from
//! S, an upper bound of the stamp-to-wake part by the sender's return to user space.

use super::decode::{Kind, TraceEvent};
use super::split::CpuTimeline;

/// What the trace shows of one IPC sample's chain (trace clock = CLOCK_MONOTONIC, ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpcChain {
    /// The sender's timer: its expiry's `now` minus the programmed expiry (the due time).
    pub sender_irq_latency_ns: i64,
    /// When the sender's timer expired.
    pub sender_expiry_ts: u64,
    /// When the sender got its CPU after the timer (S); None if the trace lacks the switch.
    pub sender_running_ts: Option<u64>,
    /// The sender's sched_waking of the receiver (K).
    pub waking_ts: Option<u64>,
    /// The receiver's sched_switch in after that (R).
    pub receiver_running_ts: Option<u64>,
}

impl IpcChain {
    /// S − due: how late the sender ran (its timer's expiry when its switch is missing).
    pub fn sender_late_ns(&self, due_ns: u64) -> i64 {
        self.sender_running_ts.unwrap_or(self.sender_expiry_ts) as i64 - due_ns as i64
    }

    /// K − S.
    pub fn wake_call_ns(&self) -> Option<i64> {
        Some(self.waking_ts? as i64 - self.sender_running_ts? as i64)
    }

    /// R − K.
    pub fn kept_off_ns(&self) -> Option<i64> {
        Some(self.receiver_running_ts? as i64 - self.waking_ts? as i64)
    }
}

/// The sender's timer cycle for the sample due at `due_ns`, taken out of the sender CPU's
/// timeline (the sender sleeps with an absolute clock_nanosleep to exactly the due time).
pub fn take_sender_cycle(
    sender_cpu: &mut CpuTimeline,
    sender_tid: i32,
    due_ns: u64,
) -> Option<IpcChain> {
    let c = sender_cpu.take_cycle(sender_tid, due_ns, 0)?;
    Some(IpcChain {
        sender_irq_latency_ns: c.now - c.expires,
        sender_expiry_ts: c.expiry_ts,
        sender_running_ts: c.switch_in_ts,
        waking_ts: None,
        receiver_running_ts: None,
    })
}

/// Completes `chain` with the wake of `receiver` by `sender` (on the sender's CPU) and the
/// receiver's switch in after it (on the receiver's CPU, which may be the same timeline).
pub fn follow_wake(
    chain: &mut IpcChain,
    sender_cpu: &CpuTimeline,
    receiver_cpu: &CpuTimeline,
    sender: i32,
    receiver: i32,
) {
    let from = chain.sender_running_ts.unwrap_or(chain.sender_expiry_ts);
    chain.waking_ts = first_from(sender_cpu, from, |e| {
        e.common_pid == sender && matches!(e.kind, Kind::Waking { pid } if pid == receiver)
    });
    chain.receiver_running_ts = chain.waking_ts.and_then(|k| {
        first_from(
            receiver_cpu,
            k,
            |e| matches!(&e.kind, Kind::Switch { next, .. } if next.pid == receiver),
        )
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
    use crate::trace::decode::{Comm, TaskRef};

    pub fn task(pid: i32, prio: i32, comm: &str) -> TaskRef {
        let mut c = [0u8; 16];
        c[..comm.len()].copy_from_slice(comm.as_bytes());
        TaskRef {
            pid,
            prio,
            comm: Comm(c),
        }
    }

    pub fn push(t: &mut CpuTimeline, ts: u64, pid: i32, kind: Kind, measuring: &[i32]) {
        t.push(
            TraceEvent {
                ts,
                common_pid: pid,
                kind,
            },
            measuring,
        );
    }

    /// The sender (tid 8) on CPU 1 sleeps to 1 ms; its timer fires 2 us late, it runs 1 us
    /// later and wakes the receiver (tid 7) 4 us after that; CPU 0 switches the receiver in
    /// 300 us later. `spinner` is what held CPU 0 meanwhile.
    pub fn two_cpus(spinner: TaskRef) -> (CpuTimeline, CpuTimeline) {
        let tids = [7, 8];
        let sender = task(8, 4, "jl-send-1");
        let receiver = task(7, 4, "jl-measure-0");
        let idle1 = task(0, 120, "swapper/1");
        let mut cpu1 = CpuTimeline::default();
        let start = Kind::HrtimerStart {
            hrtimer: 0x51,
            expires: 1_000_000,
            softexpires: 1_000_000,
        };
        push(&mut cpu1, 10_000, 8, start, &tids);
        let out = Kind::Switch {
            prev: sender,
            next: idle1,
        };
        push(&mut cpu1, 11_000, 8, out, &tids);
        let expire = Kind::HrtimerExpire {
            hrtimer: 0x51,
            now: 1_002_000,
        };
        push(&mut cpu1, 1_002_000, 0, expire, &tids);
        push(&mut cpu1, 1_002_200, 0, Kind::Waking { pid: 8 }, &tids);
        let back = Kind::Switch {
            prev: idle1,
            next: sender,
        };
        push(&mut cpu1, 1_003_000, 0, back, &tids);
        push(&mut cpu1, 1_007_000, 8, Kind::Waking { pid: 7 }, &tids);
        let mut cpu0 = CpuTimeline::default();
        let away = Kind::Switch {
            prev: receiver,
            next: spinner,
        };
        push(&mut cpu0, 900_000, 7, away, &tids);
        let home = Kind::Switch {
            prev: spinner,
            next: receiver,
        };
        push(&mut cpu0, 1_307_000, spinner.pid, home, &tids);
        (cpu0, cpu1)
    }

    #[test]
    fn follows_the_chain_across_two_cpus() {
        let (cpu0, mut cpu1) = two_cpus(task(900, 0, "jl-spike-0"));
        let mut chain = take_sender_cycle(&mut cpu1, 8, 1_000_000).unwrap();
        follow_wake(&mut chain, &cpu1, &cpu0, 8, 7);
        assert_eq!(chain.sender_irq_latency_ns, 2_000);
        assert_eq!(chain.sender_late_ns(1_000_000), 3_000);
        assert_eq!(chain.wake_call_ns(), Some(4_000));
        assert_eq!(chain.kept_off_ns(), Some(300_000));
        // Taken once.
        assert!(take_sender_cycle(&mut cpu1, 8, 1_000_000).is_none());
    }

    #[test]
    fn a_wake_by_another_task_is_not_the_senders() {
        let (cpu0, mut cpu1) = two_cpus(task(900, 0, "jl-spike-0"));
        let mut chain = take_sender_cycle(&mut cpu1, 8, 1_000_000).unwrap();
        follow_wake(&mut chain, &cpu1, &cpu0, 9, 7);
        assert_eq!(chain.waking_ts, None);
        assert_eq!(chain.kept_off_ns(), None);
        assert_eq!(chain.wake_call_ns(), None);
    }
}

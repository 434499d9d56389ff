//! The IRQ vs thread split of one sample, from one CPU's trace.
//!
//! A measuring thread's sleep shows in the trace as a chain of events on its CPU:
//!
//! ```text
//! hrtimer_start (by the thread: its timer, expires = E)          the thread arms its wakeup
//! hrtimer_expire_entry (same hrtimer, now = N)                    the timer interrupt runs it
//! sched_waking (pid = the thread)                                 the timer's callback wakes it
//! sched_switch (next_pid = the thread)                            the thread gets the CPU
//! ... return to user space, clock read W (the sample's wakeup)
//! ```
//!
//! and the sample's latency splits into
//!
//! - **IRQ latency** = N − E: from the timer's programmed expiry to the hrtimer interrupt
//!   running it. Includes interrupt-off sections, exit from idle, the hardware and (in a VM)
//!   the hypervisor delivering the interrupt, and the interrupt entry code.
//! - **thread latency** = W − N: from the timer's expiry to the thread running in user space.
//!   Includes the rest of the timer interrupt up to the wakeup, the wait for the CPU (other
//!   tasks, IRQ handlers, softirqs), the context switch and the return to user space with the
//!   clock read. Its two parts:
//!   - **wake-to-switch** = sched_switch − sched_waking: the scheduling delay;
//!   - **switch-to-user** = W − sched_switch: context switch and return to user space.
//!
//! **A timer that expires in a softirq thread.** On PREEMPT_RT every hrtimer not marked hard
//! (those of timerfd, POSIX timers, itimers; not a real-time task's clock_nanosleep) expires in
//! the thread `ktimers/N` (FIFO 1), which the timer interrupt only wakes; elsewhere a softirq
//! deferred to `ksoftirqd/N` does the same. A task above that thread then holds the expiry back
//! as it would hold back the measuring thread: a thread-side delay. So when the expiry ran in
//! such a thread, the IRQ part ends at the thread's last wakeup (its `sched_waking`, on the
//! timer's clock) and the wait of that thread for the CPU is thread latency, with the thread
//! named ([`Split::expired_in`]). A thread woken before the due time leaves no IRQ part: it was
//! already waiting for the CPU (and while the timer softirq is pending, the kernel does not
//! even program the interrupt for a soft timer: the thread runs them all when it gets the CPU).
//!
//! With an absolute sleep (`--wake clock-nanosleep`) E is the due time itself, so the latency
//! is IRQ latency plus thread latency. A sample is joined to its chain by the timer's soft expiry
//! (the time asked for; the hard expiry E adds the timer slack, 0 for real-time threads, 1 ns
//! for the others since jitterlab sets the slack to 1 ns): equal to the sample's due time for
//! absolute and periodic wake methods; for relative methods (nanosleep, select, poll, itimer,
//! clock-nanosleep-rel) the kernel computes it from its own clock read a little after the
//! thread's, so the first expiry within a tolerance after the due time is taken.

use super::decode::{Kind, TaskRef, TraceEvent};
use std::collections::{HashMap, VecDeque};

/// Trace events kept behind the last sample joined, for the explanation of the next one.
const HISTORY_BEHIND_NS: u64 = 10_000_000;
/// A bound on the history, should samples stop arriving (a failed thread): about 15 MB.
const MAX_HISTORY: usize = 200_000;
/// A bound on the unmatched timer cycles kept.
const MAX_CYCLES: usize = 100_000;
/// A bound on the kernel stacks kept (one per late wakeup; a thread at 1 kHz, every wakeup
/// late, keeps 10 in the history's horizon): about 300 KB.
const MAX_STACKS: usize = 1_024;

/// One sleep of a measuring thread as the trace shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TimerCycle {
    pub tid: i32,
    pub hrtimer: u64,
    /// Hard and soft expiry on the timer's clock, ns.
    pub expires: i64,
    pub softexpires: i64,
    /// Trace time of hrtimer_start (the arming).
    pub armed_ts: u64,
    /// Trace time of hrtimer_expire_entry, and the timer base's `now` in it.
    pub expiry_ts: u64,
    pub now: i64,
    pub waking_ts: Option<u64>,
    pub switch_in_ts: Option<u64>,
    /// The softirq thread that ran the expiry, when it did (see the module documentation).
    pub expired_in: Option<SoftirqThread>,
}

/// A softirq thread (`ktimers/N`, `ksoftirqd/N`) that ran a timer's expiry: the thread, and
/// when the timer interrupt woke it (trace clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SoftirqThread {
    pub thread: TaskRef,
    pub woken_ts: u64,
    /// When it ran the expiry (trace clock).
    pub expiry_ts: u64,
}

/// Whether `comm` names a kernel thread that runs softirqs, and with them soft timers' expiry.
fn runs_softirqs(comm: &str) -> bool {
    comm.starts_with("ktimers/") || comm.starts_with("ksoftirqd/")
}

/// The parts of one sample's latency (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Split {
    pub irq_latency_ns: i64,
    pub thread_latency_ns: i64,
    pub wake_to_switch_ns: Option<i64>,
    pub switch_to_user_ns: Option<i64>,
    /// Where the thread part begins (trace clock): when the timer expired, or, for a timer
    /// that expired in a softirq thread, when its interrupt woke that thread.
    pub expiry_ts: u64,
    /// The softirq thread the timer expired in, when it did.
    pub expired_in: Option<SoftirqThread>,
}

#[derive(Debug, Clone, Copy)]
struct Armed {
    tid: i32,
    expires: i64,
    softexpires: i64,
    ts: u64,
}

/// What the trace says about one CPU: the measuring threads' timer cycles, and the recent
/// events for explanations.
#[derive(Debug, Default)]
pub struct CpuTimeline {
    armed: HashMap<u64, Armed>,
    cycles: VecDeque<TimerCycle>,
    /// Recent events in time order.
    pub history: VecDeque<TraceEvent>,
    /// The culprits' kernel stacks (`Kind::KernelStack`) in time order, kept beside `history`
    /// rather than in it: they may arrive out of time order with the CPU's other events.
    /// Trimmed with the history, and at most [`MAX_STACKS`].
    pub stacks: VecDeque<TraceEvent>,
    /// The task running when `history` begins (from the switches trimmed off its front).
    pub base_task: Option<TaskRef>,
    /// The last wakeup on this CPU of a softirq thread, and when (trace clock).
    softirq_woken: Option<(TaskRef, u64)>,
    /// Every event of this CPU before this CLOCK_MONOTONIC time has arrived.
    pub complete_until_ns: u64,
    /// The reader's last batch of this CPU has arrived: every event of the run is in.
    pub finished: bool,
}

impl CpuTimeline {
    /// Adds the next event of this CPU. `measuring` holds the measuring threads' tids.
    pub fn push(&mut self, e: TraceEvent, measuring: &[i32]) {
        if let Kind::KernelStack { .. } = e.kind {
            self.push_stack(e);
            return;
        }
        match &e.kind {
            Kind::HrtimerStart {
                hrtimer,
                expires,
                softexpires,
            } if measuring.contains(&e.common_pid) => {
                self.armed.insert(
                    *hrtimer,
                    Armed {
                        tid: e.common_pid,
                        expires: *expires,
                        softexpires: *softexpires,
                        ts: e.ts,
                    },
                );
            }
            Kind::HrtimerExpire { hrtimer, now } => {
                if let Some(a) = self.armed.remove(hrtimer) {
                    let expired_in = self
                        .softirq_woken
                        .filter(|(t, _)| t.pid == e.common_pid)
                        .map(|(thread, woken_ts)| SoftirqThread {
                            thread,
                            woken_ts,
                            expiry_ts: e.ts,
                        });
                    if self.cycles.len() >= MAX_CYCLES {
                        self.cycles.pop_front();
                    }
                    self.cycles.push_back(TimerCycle {
                        tid: a.tid,
                        hrtimer: *hrtimer,
                        expires: a.expires,
                        softexpires: a.softexpires,
                        armed_ts: a.ts,
                        expiry_ts: e.ts,
                        now: *now,
                        waking_ts: None,
                        switch_in_ts: None,
                        expired_in,
                    });
                }
            }
            Kind::Waking { task, .. } if runs_softirqs(&task.comm.as_string()) => {
                self.softirq_woken = Some((*task, e.ts));
            }
            Kind::Waking { task, .. } if measuring.contains(&task.pid) => {
                if let Some(c) = self
                    .cycles
                    .iter_mut()
                    .rev()
                    .find(|c| c.tid == task.pid && c.waking_ts.is_none() && c.expiry_ts <= e.ts)
                {
                    c.waking_ts = Some(e.ts);
                }
            }
            Kind::Switch { next, .. } if measuring.contains(&next.pid) => {
                if let Some(c) = self.cycles.iter_mut().rev().find(|c| {
                    c.tid == next.pid && c.waking_ts.is_some() && c.switch_in_ts.is_none()
                }) {
                    c.switch_in_ts = Some(e.ts);
                }
            }
            _ => {}
        }
        if self.history.len() >= MAX_HISTORY {
            self.pop_history();
        }
        self.history.push_back(e);
    }

    /// Keeps a stack in time order, forgetting the oldest beyond the bound.
    fn push_stack(&mut self, e: TraceEvent) {
        if self.stacks.len() >= MAX_STACKS {
            self.stacks.pop_front();
        }
        let at = self.stacks.partition_point(|s| s.ts <= e.ts);
        self.stacks.insert(at, e);
    }

    fn pop_history(&mut self) {
        if let Some(old) = self.history.pop_front()
            && let Kind::Switch { next, .. } = old.kind
        {
            self.base_task = Some(next);
        }
    }

    /// The split of the sample of thread `tid` due at `due_ns` that woke in user space at
    /// `wake_ns` (both CLOCK_MONOTONIC), joined by soft expiry within `tolerance_ns` after the
    /// due time. Cycles of `tid` before the match are dropped: samples come in order.
    pub fn split(
        &mut self,
        tid: i32,
        due_ns: u64,
        wake_ns: u64,
        tolerance_ns: u64,
    ) -> Option<Split> {
        let c = self.take_cycle(tid, due_ns, tolerance_ns)?;
        let wake = wake_ns as i64;
        // The end of the IRQ part on the timer's clock: its expiry, or the interrupt's waking
        // of the softirq thread that expired it (the trace clock's distance before the expiry).
        // A thread woken before the due time (for an earlier timer, and still waiting) leaves
        // no IRQ part: the whole delay is its wait.
        let (irq_end, thread_from_ts) = match c.expired_in {
            Some(t) => {
                let woken = c.now - (c.expiry_ts - t.woken_ts) as i64;
                let end = woken.max(c.expires);
                (end, t.woken_ts + (end - woken) as u64)
            }
            None => (c.now, c.expiry_ts),
        };
        Some(Split {
            irq_latency_ns: irq_end - c.expires,
            thread_latency_ns: wake - irq_end,
            wake_to_switch_ns: match (c.waking_ts, c.switch_in_ts) {
                (Some(w), Some(s)) => Some(s as i64 - w as i64),
                _ => None,
            },
            switch_to_user_ns: c.switch_in_ts.map(|s| wake - s as i64),
            expiry_ts: thread_from_ts,
            expired_in: c.expired_in,
        })
    }

    /// The timer cycle of thread `tid` whose soft expiry lies within `tolerance_ns` after
    /// `due_ns`, taken out of the timeline with this thread's cycles before it (samples come in
    /// order).
    pub(crate) fn take_cycle(
        &mut self,
        tid: i32,
        due_ns: u64,
        tolerance_ns: u64,
    ) -> Option<TimerCycle> {
        let due = due_ns as i64;
        let found = self.cycles.iter().position(|c| {
            c.tid == tid && c.softexpires >= due && c.softexpires - due <= tolerance_ns as i64
        });
        // Drop this thread's cycles that lie before the sample (never matched: a dropped
        // record, or the lead-in sleep before the run's start), and the match itself.
        let matched = found.map(|i| self.cycles[i]);
        let keep_from = matched.map_or(due, |c| c.softexpires);
        let mut index = 0;
        self.cycles.retain(|c| {
            let keep = Some(index) != found && (c.tid != tid || c.softexpires > keep_from);
            index += 1;
            keep
        });
        matched
    }

    /// Forgets the history older than what the next sample (due after `due_ns`) can need.
    pub(crate) fn trim_before_due(&mut self, due_ns: u64) {
        let keep_from = due_ns.saturating_sub(HISTORY_BEHIND_NS);
        while self.history.front().is_some_and(|e| e.ts < keep_from) {
            self.pop_history();
        }
        while self.stacks.front().is_some_and(|e| e.ts < keep_from) {
            self.stacks.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
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
}

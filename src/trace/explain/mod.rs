//! Spike attribution: what one CPU did between a late sample's due time and its wakeup,
//! reconstructed from the trace, and a one-line verdict.
//!
//! The window is replayed from the last context switch before the due time (at a switch no
//! interrupt is in progress, so the nesting of IRQ handlers, interrupt vectors and softirqs is
//! known from there). Every instant of the window goes to the innermost thing the CPU was doing:
//! an IRQ handler (`irq`, by handler name or interrupt vector), a softirq (`softirq`, by vector
//! name), a task (`task`: comm, pid, policy, priority) or idle (`idle_exit`: the CPU was idle
//! after the due time, waiting for the interrupt). The measuring thread's own time is not a
//! contributor. Durations are exclusive: a task's time does not include the interrupts it
//! suffered.
//!
//! The policy of a task is what the kernel reported (sched_getscheduler) when the trace reader
//! first saw the task run with that priority; when that is unknown or no longer fits the
//! priority in the trace (the task changed policy or exited), it is derived from the kernel
//! priority: below 0 `DEADLINE`, 0-99 `RT` (FIFO or RR, with rt priority 99 − prio), 100-139
//! `OTHER` (nice = prio − 120).
//!
//! The parts: `replay` rebuilds who held the CPU when, `contributors` names and sums the
//! holders, `verdict` words the one-line verdict; this file puts them together. `gap` does
//! the same for the gaps of a noise loop (`jitterlab noise --trace`), `ipc` for the chain of
//! an IPC wake method (sender, wake, receiver). `stacks` attaches the culprit's kernel stack
//! (BPF back end) to the task that gave the late thread its CPU.

mod contributors;
pub(crate) mod gap;
pub(crate) mod ipc;
#[cfg(test)]
mod late_arming;
mod replay;
#[cfg(test)]
mod rt_captures;
mod stacks;
mod verdict;

pub(crate) use contributors::Names;
pub(crate) use contributors::Policies;
pub(crate) use gap::{Gap, explain_gap};
pub(crate) use ipc::{IpcSample, explain_ipc};

use super::split::{CpuTimeline, Split};
use crate::format::events::SpikeExplanation;
use crate::trace::kallsyms::Symbols;

/// The sample to explain.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LateSample {
    pub cpu: usize,
    pub tid: i32,
    /// Due time and wakeup in user space, CLOCK_MONOTONIC ns.
    pub due_ns: u64,
    pub(crate) wake_ns: u64,
    pub split: Option<Split>,
}

/// Reconstructs the window of `s` from `timeline` and writes the verdict.
pub(crate) fn explain(
    s: &LateSample,
    timeline: &CpuTimeline,
    policies: &Policies,
    names: &Names,
) -> SpikeExplanation {
    let mut window = replay::replay(s, timeline);
    replay::without_evidence(&mut window, s);
    let contributors =
        |parts: &[(u64, u64)]| contributors::between_parts(&window, parts, policies, names);
    let mut whole = contributors(&[(s.due_ns, s.wake_ns)]);
    let verdict = verdict::verdict(s, &window, &whole, contributors);
    stacks::attach(&mut whole, s, timeline, Symbols::shared);
    SpikeExplanation {
        time_ns: s.wake_ns,
        cpu: s.cpu,
        due_ns: s.due_ns,
        latency_ns: s.wake_ns as i64 - s.due_ns as i64,
        irq_latency_ns: s.split.map(|sp| sp.irq_latency_ns),
        thread_latency_ns: s.split.map(|sp| sp.thread_latency_ns),
        verdict,
        contributors: whole,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::decode::task;
    use crate::trace::decode::{Kind, TraceEvent};
    use crate::trace::reader::TaskPolicy;
    use std::collections::HashMap;

    /// Adds an event recorded while `pid` ran.
    pub(super) fn push(t: &mut CpuTimeline, pid: i32, ts: u64, kind: Kind) {
        t.push(
            TraceEvent {
                ts,
                common_pid: pid,
                kind,
            },
            &[77],
        );
    }

    /// A late sample of thread 77 with no split, from the due time to the wakeup.
    fn late(cpu: usize, due_ns: u64, wake_ns: u64) -> LateSample {
        LateSample {
            cpu,
            tid: 77,
            due_ns,
            wake_ns,
            split: None,
        }
    }

    /// The contributors by name and time, longest first.
    pub(super) fn who(x: &SpikeExplanation) -> Vec<(&str, u64)> {
        x.contributors
            .iter()
            .map(|c| (c.name.as_str(), c.duration_ns))
            .collect()
    }

    /// The spike load's shape: a FIFO 99 task holds the CPU from before the due time until
    /// 1.47 ms after it; the timer interrupt comes on time and is handled inside that; a
    /// softirq runs after it.
    #[test]
    fn names_the_task_that_held_the_cpu() {
        let me = task(77, 4, "jl-measure-0");
        let spike = task(900, 0, "jl-spike-0");
        let mut t = CpuTimeline::default();
        push(
            &mut t,
            77,
            100,
            Kind::Switch {
                prev: me,
                next: spike,
            },
        );
        push(&mut t, 900, 1_000_000, Kind::VectorEntry { vector: 0 });
        push(
            &mut t,
            900,
            1_002_000,
            Kind::HrtimerExpire {
                hrtimer: 1,
                now: 1_002_000,
            },
        );
        push(&mut t, 900, 1_003_000, Kind::VectorExit { vector: 0 });
        push(&mut t, 900, 1_003_000, Kind::SoftirqEntry { vec: 1 });
        push(&mut t, 900, 1_008_000, Kind::SoftirqExit { vec: 1 });
        push(
            &mut t,
            900,
            2_470_000,
            Kind::Switch {
                prev: spike,
                next: me,
            },
        );
        let policies = HashMap::from([(
            (900, 0),
            TaskPolicy {
                policy: "FIFO",
                prio: 99,
                kernel_prio: 0,
            },
        )]);
        let names = Names {
            vectors: vec!["local_timer".into()],
            softirqs: vec![(1, "TIMER".into())],
        };
        let s = LateSample {
            cpu: 0,
            tid: 77,
            due_ns: 1_000_000,
            wake_ns: 2_475_000,
            split: Some(Split {
                irq_latency_ns: 2_000,
                thread_latency_ns: 1_473_000,
                wake_to_switch_ns: Some(1_467_000),
                switch_to_user_ns: Some(5_000),
                expiry_ts: 1_002_000,
                expired_in: None,
                expired_on: None,
                woken_ts: None,
                armed_late: None,
                held_in_softirq: None,
            }),
        };
        let x = explain(&s, &t, &policies, &names);
        assert_eq!(x.contributors[0].name, "jl-spike-0");
        assert_eq!(x.contributors[0].pid, Some(900));
        assert_eq!(x.contributors[0].policy.as_deref(), Some("FIFO"));
        assert_eq!(x.contributors[0].prio, Some(99));
        // 1.47 ms minus the 3 us interrupt and the 5 us softirq inside it.
        assert_eq!(x.contributors[0].duration_ns, 1_470_000 - 8_000);
        let names: Vec<(&str, &str, u64)> = x
            .contributors
            .iter()
            .map(|c| (c.kind.as_str(), c.name.as_str(), c.duration_ns))
            .collect();
        assert_eq!(
            names[1..],
            [("softirq", "TIMER", 5_000), ("irq", "local_timer", 3_000)]
        );
        assert_eq!(
            x.verdict,
            "thread latency 1.47 ms: CPU held by jl-spike-0 (pid 900, FIFO 99) for 1.46 ms"
        );
        assert_eq!(x.latency_ns, 1_475_000);
    }

    /// An idle CPU, and the timer interrupt `late_ns` after the due time (1 ms): the trace
    /// shows idle, the interrupt (1 us) and the switch to the measuring thread 1 us later.
    fn idle_then_interrupt(late_ns: u64) -> SpikeExplanation {
        let me = task(77, 4, "jl-measure-0");
        let idle = task(0, 120, "swapper/0");
        let mut t = CpuTimeline::default();
        let irq = 1_000_000 + late_ns;
        push(
            &mut t,
            77,
            100,
            Kind::Switch {
                prev: me,
                next: idle,
            },
        );
        push(&mut t, 0, irq, Kind::VectorEntry { vector: 0 });
        push(&mut t, 0, irq + 1_000, Kind::VectorExit { vector: 0 });
        push(
            &mut t,
            0,
            irq + 2_000,
            Kind::Switch {
                prev: idle,
                next: me,
            },
        );
        let s = LateSample {
            cpu: 0,
            tid: 77,
            due_ns: 1_000_000,
            wake_ns: irq + 5_000,
            split: Some(Split {
                irq_latency_ns: late_ns as i64 + 500,
                thread_latency_ns: 4_500,
                wake_to_switch_ns: Some(1_000),
                switch_to_user_ns: Some(3_000),
                expiry_ts: irq + 500,
                expired_in: None,
                expired_on: None,
                woken_ts: None,
                armed_late: None,
                held_in_softirq: None,
            }),
        };
        explain(&s, &t, &HashMap::new(), &Names::default())
    }

    /// Issue 23 defect 10: a 4.67 ms silence on an idle CPU was "leaving an idle state". Idle
    /// exit explains at most `IDLE_EXIT_MAX_NS`; a longer silence is its own cause.
    #[test]
    fn a_long_silence_on_an_idle_cpu_is_no_trace_event_not_idle_exit() {
        let x = idle_then_interrupt(4_670_000);
        assert_eq!(x.cause(), "no_event");
        assert_eq!(x.contributors[0].name, "no trace event");
        assert_eq!(x.contributors[0].duration_ns, 4_670_000);
        assert_eq!(
            x.verdict,
            "IRQ latency 4.67 ms: the timer interrupt came late; no trace event for 4.67 ms: hypervisor, SMI or interrupts off"
        );
        // A short wait is the idle exit it looks like.
        let x = idle_then_interrupt(20_000);
        assert_eq!(x.cause(), "idle_exit");
        assert_eq!(who(&x)[0], ("idle", 21_000));
    }

    /// Issue 23 defect 10: a SCHED_OTHER task switched in before the due time and a silence of
    /// 4.73 ms until the timer interrupt came was headlined "CPU held by tokio-rt-worker
    /// (OTHER) for 4.73 ms". A running task does not hold an interrupt off; only its own
    /// events after the interrupt blame it.
    #[test]
    fn a_task_is_not_blamed_for_a_late_interrupt_it_cannot_hold_off() {
        let me = task(77, 4, "jl-measure-0");
        let tokio = task(300, 120, "tokio-rt-worker");
        let mut t = CpuTimeline::default();
        push(
            &mut t,
            77,
            100,
            Kind::Switch {
                prev: me,
                next: tokio,
            },
        );
        let irq = 1_000_000 + 4_730_000;
        push(&mut t, 300, irq, Kind::VectorEntry { vector: 0 });
        push(&mut t, 300, irq + 1_000, Kind::VectorExit { vector: 0 });
        // The normal task keeps the CPU 10 us more (kernel code), then the switch.
        push(
            &mut t,
            300,
            irq + 11_000,
            Kind::Switch {
                prev: tokio,
                next: me,
            },
        );
        let s = LateSample {
            cpu: 0,
            tid: 77,
            due_ns: 1_000_000,
            wake_ns: irq + 14_000,
            split: Some(Split {
                irq_latency_ns: 4_730_500,
                thread_latency_ns: 13_500,
                wake_to_switch_ns: Some(10_500),
                switch_to_user_ns: Some(3_000),
                expiry_ts: irq + 500,
                expired_in: None,
                expired_on: None,
                woken_ts: None,
                armed_late: None,
                held_in_softirq: None,
            }),
        };
        let x = explain(&s, &t, &HashMap::new(), &Names::default());
        assert_eq!(
            who(&x),
            [
                ("no trace event", 4_730_000),
                ("tokio-rt-worker", 10_000),
                ("vector 0", 1_000)
            ]
        );
        assert_eq!(
            x.verdict,
            "IRQ latency 4.73 ms: the timer interrupt came late; no trace event for 4.73 ms: hypervisor, SMI or interrupts off"
        );
    }

    /// A context switch the kernel left out: the events after it still name the task.
    #[test]
    fn follows_the_running_task_through_a_missing_switch() {
        let me = task(77, 4, "jl-measure-0");
        let a = task(5, 120, "a");
        let b = task(6, 120, "b");
        let mut t = CpuTimeline::default();
        push(&mut t, 77, 100, Kind::Switch { prev: me, next: a });
        push(&mut t, 5, 200, Kind::Switch { prev: a, next: b });
        // b -> a is missing; a runs from before 1_000_000 to 1_500_000.
        push(&mut t, 5, 1_000_000, Kind::VectorEntry { vector: 0 });
        push(&mut t, 5, 1_001_000, Kind::VectorExit { vector: 0 });
        push(&mut t, 5, 1_500_000, Kind::Switch { prev: a, next: me });
        let s = late(0, 900_000, 1_500_000);
        let x = explain(&s, &t, &HashMap::new(), &Names::default());
        // b until the first event that shows a, then a.
        assert_eq!(
            who(&x),
            [("a", 499_000), ("b", 100_000), ("vector 0", 1_000)]
        );
    }

    /// A real-time task woken while a normal task runs, with its switch in traced 44 us after
    /// the interrupt (the normal task was in kernel code on a kernel without preemption): the
    /// normal task held the CPU until the switch, not the woken task.
    #[test]
    fn a_traced_switch_says_when_the_woken_task_got_the_cpu() {
        let me = task(77, 4, "jl-measure-0");
        let kw = task(30, 120, "kworker");
        let spike = task(900, 0, "jl-spike-0");
        let mut t = CpuTimeline::default();
        push(&mut t, 77, 100, Kind::Switch { prev: me, next: kw });
        push(&mut t, 30, 1_005_000, Kind::VectorEntry { vector: 0 });
        push(
            &mut t,
            30,
            1_005_500,
            Kind::Waking {
                task: spike,
                target_cpu: 0,
            },
        );
        push(&mut t, 30, 1_006_000, Kind::VectorExit { vector: 0 });
        push(
            &mut t,
            30,
            1_050_000,
            Kind::Switch {
                prev: kw,
                next: spike,
            },
        );
        push(
            &mut t,
            900,
            1_500_000,
            Kind::Switch {
                prev: spike,
                next: me,
            },
        );
        let s = late(0, 1_000_000, 1_500_000);
        let x = explain(&s, &t, &HashMap::new(), &Names::default());
        assert_eq!(
            who(&x),
            [
                ("jl-spike-0", 450_000),
                ("kworker", 49_000),
                ("vector 0", 1_000)
            ]
        );
    }

    /// The spike load on a CPU whose kernel never traces a switch out of idle (CPU 1 of the
    /// development VM): the spike is woken from idle, its switch in is missing, and it drops to
    /// SCHED_OTHER before its switch out. Its wakeup is all that shows its priority while it
    /// held the CPU, and when it took the CPU: as the interrupt that woke it ended.
    #[test]
    fn knows_a_task_switched_in_from_idle_by_its_wakeup() {
        let me = task(77, 4, "jl-measure-1");
        let idle = task(0, 120, "swapper/1");
        let spike = task(900, 0, "jl-spike-1");
        let spike_other = task(900, 120, "jl-spike-1");
        let mut t = CpuTimeline::default();
        push(
            &mut t,
            77,
            100,
            Kind::Switch {
                prev: me,
                next: idle,
            },
        );
        push(&mut t, 0, 700_000, Kind::VectorEntry { vector: 0 });
        // A task woken onto the other CPU does not take this one.
        push(
            &mut t,
            0,
            700_500,
            Kind::Waking {
                task: task(950, 100, "elsewhere"),
                target_cpu: 0,
            },
        );
        push(
            &mut t,
            0,
            701_000,
            Kind::Waking {
                task: spike,
                target_cpu: 1,
            },
        );
        push(&mut t, 0, 702_000, Kind::VectorExit { vector: 0 });
        // idle -> spike is missing; the spike's first own event is the measuring timer's IRQ.
        push(&mut t, 900, 1_010_000, Kind::VectorEntry { vector: 0 });
        push(&mut t, 900, 1_012_000, Kind::VectorExit { vector: 0 });
        push(
            &mut t,
            900,
            2_200_000,
            Kind::Switch {
                prev: spike_other,
                next: me,
            },
        );
        let s = late(1, 1_000_000, 2_200_000);
        // The reader looked the spike up when it had already dropped to SCHED_OTHER.
        let stale = HashMap::from([(
            (900, 0),
            TaskPolicy {
                policy: "OTHER",
                prio: 0,
                kernel_prio: 0,
            },
        )]);
        let x = explain(&s, &t, &stale, &Names::default());
        let top = &x.contributors[0];
        assert_eq!(top.name, "jl-spike-1");
        assert_eq!(top.policy.as_deref(), Some("RT"));
        assert_eq!(top.prio, Some(99));
        // It took the CPU when the interrupt that woke it ended: the whole window but the
        // measuring timer's interrupt inside it.
        assert_eq!(top.duration_ns, 1_200_000 - 2_000);
        assert_eq!(x.contributors.len(), 2, "{:?}", x.contributors);
    }
}

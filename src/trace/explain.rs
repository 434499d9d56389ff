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

use super::decode::{Kind, TaskRef};
use super::reader::TaskPolicy;
use super::split::{CpuTimeline, Split};
use crate::results::events::{Contributor, SpikeExplanation};
use crate::units::format_ns;
use std::collections::HashMap;
use std::sync::Arc;

/// Task policies the trace reader looked up, by (pid, kernel prio at the lookup): a task that
/// changes policy (the spike load drops to SCHED_OTHER before it exits) keeps both.
pub type Policies = HashMap<(i32, i32), TaskPolicy>;

/// Names the decoder knows: interrupt vectors and softirqs.
#[derive(Debug, Clone, Default)]
pub struct Names {
    pub vectors: Vec<String>,
    pub softirqs: Vec<(i64, String)>,
}

impl Names {
    fn softirq(&self, vec: u32) -> String {
        self.softirqs
            .iter()
            .find(|(v, _)| *v == vec as i64)
            .map_or_else(|| format!("softirq {vec}"), |(_, n)| n.clone())
    }
}

/// The priority of a task known only by its pid (from a resynchronisation).
const UNKNOWN_PRIO: i32 = i32::MIN;

/// What held the CPU at an instant.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Holder {
    Task(i32),
    Idle,
    Measuring,
    Irq(Arc<str>),
    Vector(u16),
    Softirq(u32),
    /// Before the first event known.
    Unknown,
}

/// A stretch of the window held by one holder.
#[derive(Debug, Clone)]
struct Segment {
    from: u64,
    to: u64,
    holder: Holder,
}

/// The sample to explain.
#[derive(Debug, Clone, Copy)]
pub struct LateSample {
    pub cpu: usize,
    pub tid: i32,
    /// Due time and wakeup in user space, CLOCK_MONOTONIC ns.
    pub due_ns: u64,
    pub wake_ns: u64,
    pub split: Option<Split>,
}

/// Reconstructs the window of `s` from `timeline` and writes the verdict.
pub fn explain(
    s: &LateSample,
    timeline: &CpuTimeline,
    policies: &Policies,
    names: &Names,
) -> SpikeExplanation {
    let (segments, tasks, lost, widest_gap) = replay(s, timeline);
    let contributors = |from: u64, to: u64| -> Vec<Contributor> {
        let mut sums: HashMap<Holder, u64> = HashMap::new();
        for seg in &segments {
            let (a, b) = (seg.from.max(from), seg.to.min(to));
            if b > a && seg.holder != Holder::Measuring && seg.holder != Holder::Unknown {
                *sums.entry(seg.holder.clone()).or_default() += b - a;
            }
        }
        let mut out: Vec<Contributor> = sums
            .into_iter()
            .map(|(h, d)| contributor(&h, d, &tasks, policies, names))
            .collect();
        out.sort_by(|a, b| b.duration_ns.cmp(&a.duration_ns).then(a.name.cmp(&b.name)));
        out
    };
    let latency = s.wake_ns as i64 - s.due_ns as i64;
    let whole = contributors(s.due_ns, s.wake_ns);
    let mut verdict = match s.split {
        Some(sp) if sp.thread_latency_ns >= sp.irq_latency_ns => {
            let part = contributors(sp.expiry_ts, s.wake_ns);
            let t = sp.thread_latency_ns;
            match part.first() {
                Some(top) if top.duration_ns as i64 * 10 >= t => {
                    format!("thread latency {}: {}", fmt(t), held(top))
                }
                _ => format!(
                    "thread latency {}: no other work held the CPU (wake-to-switch {}, switch-to-user {})",
                    fmt(t),
                    sp.wake_to_switch_ns.map_or("-".into(), fmt),
                    sp.switch_to_user_ns.map_or("-".into(), fmt)
                ),
            }
        }
        Some(sp) => {
            let part = contributors(s.due_ns, sp.expiry_ts);
            let i = sp.irq_latency_ns;
            let mut v = format!("IRQ latency {}: the timer interrupt came late", fmt(i));
            if let Some(top) = part.first() {
                v.push_str(&format!("; {}", held(top)));
            }
            if widest_gap as i64 * 2 >= i {
                v.push_str(&format!(
                    "; no trace event for {} (interrupts off, or the CPU stalled by the hypervisor)",
                    format_ns(widest_gap)
                ));
            }
            v
        }
        None => {
            let mut v = format!(
                "latency {} (the timer's events are not in the trace)",
                fmt(latency)
            );
            if let Some(top) = whole.first() {
                v.push_str(&format!(": {}", held(top)));
            }
            v
        }
    };
    if lost {
        verdict.push_str(" [trace incomplete: the kernel lost events in this window]");
    }
    SpikeExplanation {
        time_ns: s.wake_ns,
        cpu: s.cpu,
        due_ns: s.due_ns,
        latency_ns: latency,
        irq_latency_ns: s.split.map(|sp| sp.irq_latency_ns),
        thread_latency_ns: s.split.map(|sp| sp.thread_latency_ns),
        verdict,
        contributors: whole,
    }
}

fn fmt(ns: i64) -> String {
    if ns < 0 {
        format!("-{}", format_ns(ns.unsigned_abs()))
    } else {
        format_ns(ns as u64)
    }
}

/// "CPU held by jl-spike-0 (pid 1234, FIFO 99) for 1.47 ms", and the like.
fn held(c: &Contributor) -> String {
    let d = format_ns(c.duration_ns);
    match c.kind.as_str() {
        "task" => {
            let policy = match (&c.policy, c.prio) {
                (Some(p), Some(prio)) => format!(", {p} {prio}"),
                (Some(p), None) => format!(", {p}"),
                _ => String::new(),
            };
            format!(
                "CPU held by {} (pid {}{policy}) for {d}",
                c.name,
                c.pid.unwrap_or(-1)
            )
        }
        "irq" => format!("CPU in IRQ handler {} for {d}", c.name),
        "softirq" => format!("CPU in softirq {} for {d}", c.name),
        _ => format!("CPU idle (exit from idle) for {d}"),
    }
}

/// The policy and priority of a task: what the kernel reported, when it fits the priority in
/// the trace; otherwise derived from that priority (see the module documentation).
fn policy_of(t: &TaskRef, policies: &Policies) -> (String, Option<i32>) {
    let class_fits = |p: &TaskPolicy| match p.policy {
        "FIFO" | "RR" => (0..100).contains(&t.prio) && p.prio == 99 - t.prio,
        "DEADLINE" => t.prio < 0,
        _ => t.prio >= 100,
    };
    match policies.get(&(t.pid, t.prio)) {
        Some(p) if class_fits(p) => (
            p.policy.to_string(),
            (p.policy != "DEADLINE").then_some(p.prio),
        ),
        _ if t.prio < 0 => ("DEADLINE".into(), None),
        _ if t.prio < 100 => ("RT".into(), Some(99 - t.prio)),
        _ => ("OTHER".into(), Some(t.prio - 120)),
    }
}

fn contributor(
    h: &Holder,
    duration_ns: u64,
    tasks: &HashMap<i32, TaskRef>,
    policies: &Policies,
    names: &Names,
) -> Contributor {
    let simple = |kind: &str, name: String| Contributor {
        kind: kind.into(),
        name,
        pid: None,
        policy: None,
        prio: None,
        duration_ns,
    };
    match h {
        Holder::Task(pid) => {
            let t = tasks.get(pid).copied().filter(|t| t.prio != UNKNOWN_PRIO);
            let (policy, prio) = match t {
                Some(t) => {
                    let (p, prio) = policy_of(&t, policies);
                    (Some(p), prio)
                }
                // Known by pid only: what the kernel reported, if anything.
                None => policies
                    .iter()
                    .find(|((p, _), _)| p == pid)
                    .map_or((None, None), |(_, p)| {
                        (Some(p.policy.to_string()), Some(p.prio))
                    }),
            };
            Contributor {
                kind: "task".into(),
                name: t.map_or_else(|| format!("pid {pid}"), |t| t.comm.as_string()),
                pid: Some(*pid),
                policy,
                prio,
                duration_ns,
            }
        }
        Holder::Irq(name) => simple("irq", name.to_string()),
        Holder::Vector(v) => simple(
            "irq",
            names
                .vectors
                .get(*v as usize)
                .cloned()
                .unwrap_or_else(|| format!("vector {v}")),
        ),
        Holder::Softirq(vec) => simple("softirq", names.softirq(*vec)),
        Holder::Idle | Holder::Measuring | Holder::Unknown => simple("idle_exit", "idle".into()),
    }
}

/// Replays the window: the segments, the tasks seen, whether events were lost in the window,
/// and the widest stretch without any event between the due time and the timer's expiry.
fn replay(s: &LateSample, tl: &CpuTimeline) -> (Vec<Segment>, HashMap<i32, TaskRef>, bool, u64) {
    let h = &tl.history;
    let first_after_due = h.partition_point(|e| e.ts <= s.due_ns);
    let start = (0..first_after_due)
        .rev()
        .find(|&i| matches!(h[i].kind, Kind::Switch { .. }));
    let mut tasks: HashMap<i32, TaskRef> = HashMap::new();
    let mut current: Option<TaskRef> = match start {
        Some(i) => match &h[i].kind {
            Kind::Switch { next, .. } => Some(*next),
            _ => unreachable!(),
        },
        None => tl.base_task,
    };
    let holder_of = |t: &Option<TaskRef>| match t {
        None => Holder::Unknown,
        Some(t) if t.pid == 0 => Holder::Idle,
        Some(t) if t.pid == s.tid => Holder::Measuring,
        Some(t) => Holder::Task(t.pid),
    };
    // Names for every task the history shows, also those only seen before the replay starts.
    // A task is known as it was when it last got the CPU: its priority when it is switched
    // out may already be another (the spike load drops to SCHED_OTHER at its end).
    let learn = |tasks: &mut HashMap<i32, TaskRef>, prev: &TaskRef, next: &TaskRef| {
        tasks.entry(prev.pid).or_insert(*prev);
        tasks.insert(next.pid, *next);
    };
    for e in h.iter().take(first_after_due) {
        if let Kind::Switch { prev, next } = &e.kind {
            learn(&mut tasks, prev, next);
        }
    }
    if let Some(t) = current {
        tasks.insert(t.pid, t);
    }
    let mut stack: Vec<Holder> = Vec::new();
    let mut segments: Vec<Segment> = Vec::new();
    let mut at = s.due_ns;
    let mut lost = false;
    let irq_end = s.split.map_or(s.wake_ns, |sp| sp.expiry_ts);
    let mut widest_gap = 0u64;
    let mut last_event_ts = s.due_ns;
    for e in h.iter().skip(start.map_or(0, |i| i + 1)) {
        if e.ts > s.wake_ns {
            break;
        }
        if e.ts > at {
            let holder = stack.last().cloned().unwrap_or_else(|| holder_of(&current));
            segments.push(Segment {
                from: at,
                to: e.ts,
                holder,
            });
            at = e.ts;
        }
        if e.ts >= s.due_ns && e.ts <= irq_end {
            widest_gap = widest_gap.max(e.ts - last_event_ts);
            last_event_ts = e.ts;
        }
        // Every event is recorded in the context of the task running on the CPU (interrupts
        // too). The kernel occasionally leaves a context switch out of a trace read while it
        // is written (see tests/trace.rs); the next event's common_pid still names the task.
        let resync = !matches!(e.kind, Kind::Lost { .. })
            && e.common_pid >= 0
            && current.is_some_and(|c| c.pid != e.common_pid);
        if resync {
            let pid = e.common_pid;
            current = Some(tasks.get(&pid).copied().unwrap_or(TaskRef {
                pid,
                prio: UNKNOWN_PRIO,
                comm: Default::default(),
            }));
            stack.clear();
        }
        match &e.kind {
            Kind::Switch { prev, next } => {
                current = Some(*next);
                learn(&mut tasks, prev, next);
                stack.clear();
            }
            Kind::IrqEntry { name, .. } => stack.push(Holder::Irq(name.clone())),
            Kind::VectorEntry { vector } => stack.push(Holder::Vector(*vector)),
            Kind::SoftirqEntry { vec } => stack.push(Holder::Softirq(*vec)),
            Kind::IrqExit { .. } | Kind::VectorExit { .. } | Kind::SoftirqExit { .. } => {
                stack.pop();
            }
            Kind::Lost { .. } if e.ts >= s.due_ns => lost = true,
            _ => {}
        }
    }
    if s.wake_ns > at {
        let holder = stack.last().cloned().unwrap_or_else(|| holder_of(&current));
        segments.push(Segment {
            from: at,
            to: s.wake_ns,
            holder,
        });
    }
    if irq_end > last_event_ts {
        widest_gap = widest_gap.max(irq_end - last_event_ts);
    }
    (segments, tasks, lost, widest_gap)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::decode::{Comm, TraceEvent};

    fn task(pid: i32, prio: i32, comm: &str) -> TaskRef {
        let mut c = [0u8; 16];
        c[..comm.len()].copy_from_slice(comm.as_bytes());
        TaskRef {
            pid,
            prio,
            comm: Comm(c),
        }
    }

    /// Adds an event recorded while `pid` ran.
    fn push(t: &mut CpuTimeline, pid: i32, ts: u64, kind: Kind) {
        t.push(
            TraceEvent {
                ts,
                common_pid: pid,
                kind,
            },
            &[77],
        );
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

    /// A late interrupt on an idle CPU with no event for most of the wait.
    #[test]
    fn blames_idle_and_silence_for_a_late_interrupt() {
        let me = task(77, 4, "jl-measure-0");
        let idle = task(0, 120, "swapper/0");
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
        push(&mut t, 0, 1_400_000, Kind::VectorEntry { vector: 0 });
        push(&mut t, 0, 1_401_000, Kind::VectorExit { vector: 0 });
        push(
            &mut t,
            0,
            1_402_000,
            Kind::Switch {
                prev: idle,
                next: me,
            },
        );
        let s = LateSample {
            cpu: 0,
            tid: 77,
            due_ns: 1_000_000,
            wake_ns: 1_405_000,
            split: Some(Split {
                irq_latency_ns: 400_500,
                thread_latency_ns: 4_500,
                wake_to_switch_ns: Some(1_000),
                switch_to_user_ns: Some(3_000),
                expiry_ts: 1_400_500,
            }),
        };
        let x = explain(&s, &t, &HashMap::new(), &Names::default());
        assert_eq!(x.contributors[0].kind, "idle_exit");
        // Idle until the interrupt, and again from its end to the switch.
        assert_eq!(x.contributors[0].duration_ns, 401_000);
        assert!(
            x.verdict.starts_with("IRQ latency 400.5 us: the timer interrupt came late; CPU idle (exit from idle) for 400.0 us; no trace event for 400.0 us"),
            "{}",
            x.verdict
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
        let s = LateSample {
            cpu: 0,
            tid: 77,
            due_ns: 900_000,
            wake_ns: 1_500_000,
            split: None,
        };
        let x = explain(&s, &t, &HashMap::new(), &Names::default());
        let who: Vec<(&str, u64)> = x
            .contributors
            .iter()
            .map(|c| (c.name.as_str(), c.duration_ns))
            .collect();
        // b until the first event that shows a, then a.
        assert_eq!(who, [("a", 499_000), ("b", 100_000), ("vector 0", 1_000)]);
    }

    #[test]
    fn policy_falls_back_to_the_traced_priority() {
        let t = task(5, 10, "x");
        let stale = HashMap::from([(
            (5, 10),
            TaskPolicy {
                policy: "OTHER",
                prio: 0,
                kernel_prio: 120,
            },
        )]);
        assert_eq!(policy_of(&t, &stale), ("RT".into(), Some(89)));
        assert_eq!(
            policy_of(&task(6, 125, "y"), &HashMap::new()),
            ("OTHER".into(), Some(5))
        );
        assert_eq!(
            policy_of(&task(7, -1, "z"), &HashMap::new()),
            ("DEADLINE".into(), None)
        );
    }
}

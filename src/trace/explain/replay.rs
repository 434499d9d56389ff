//! Replaying a late sample's window from the CPU's trace history: which holder (task, IRQ
//! handler, interrupt vector, softirq, idle) had the CPU at each instant between the due time
//! and the wakeup. Kept apart from naming and judging the holders because it is the one part
//! that must follow the kernel's event semantics (nesting, lost events, missing switches).

use super::LateSample;
use crate::trace::decode::{Kind, TaskRef};
use crate::trace::split::CpuTimeline;
use std::collections::HashMap;
use std::sync::Arc;

/// The priority of a task known only by its pid (from a resynchronisation).
pub(super) const UNKNOWN_PRIO: i32 = i32::MIN;

/// What held the CPU at an instant.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Holder {
    Task(i32),
    Idle,
    Measuring,
    Irq(Arc<str>),
    Vector(u16),
    Softirq(u32),
    /// Before the first event known.
    Unknown,
    /// Time the trace shows nothing for that could explain it (see [`without_evidence`]).
    NoEvent,
}

/// The longest an exit from an idle state is taken to last: above the exit latency of the
/// C-states most CPUs declare up to C6, and far above the ~1 us of those jitterlab's PM QoS
/// hold (/dev/cpu_dma_latency 0) leaves. An idle stretch longer than this before the timer
/// interrupt is not an idle exit.
pub(super) const IDLE_EXIT_MAX_NS: u64 = 100_000;

/// A stretch of the window held by one holder.
#[derive(Debug, Clone)]
pub(super) struct Segment {
    pub from: u64,
    pub to: u64,
    pub holder: Holder,
}

/// The replayed window of one late sample.
#[derive(Debug)]
pub(super) struct Window {
    /// Consecutive stretches from the due time to the wakeup.
    pub segments: Vec<Segment>,
    /// Every task the history shows, as it was when it last got the CPU, by pid.
    pub tasks: HashMap<i32, TaskRef>,
    /// The kernel lost events after the due time.
    pub lost: bool,
    /// The widest stretch without any event between the due time and the timer's expiry.
    pub widest_gap_ns: u64,
}

/// Replays the window of `s` from the last context switch before its due time (at a switch no
/// interrupt is in progress, so the nesting is known from there).
pub(super) fn replay(s: &LateSample, tl: &CpuTimeline) -> Window {
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
    // A task is known as it was when it last got the CPU (or was woken to get it: some kernels
    // never trace a switch out of idle on some CPUs, and the wakeup is then all there is). Its
    // priority when it is switched out may already be another (the spike load drops to
    // SCHED_OTHER at its end).
    let learn = |tasks: &mut HashMap<i32, TaskRef>, e: &Kind| match e {
        Kind::Switch { prev, next } => {
            tasks.entry(prev.pid).or_insert(*prev);
            tasks.insert(next.pid, *next);
        }
        Kind::Waking { task, .. } => {
            tasks.insert(task.pid, *task);
        }
        _ => {}
    };
    for e in h.iter().take(first_after_due) {
        learn(&mut tasks, &e.kind);
    }
    if let Some(t) = current {
        tasks.insert(t.pid, t);
    }
    let mut stack: Vec<Holder> = Vec::new();
    let mut segments: Vec<Segment> = Vec::new();
    let mut at = s.due_ns;
    // A task woken onto this CPU takes it when the interrupt that woke it ends, if the CPU
    // idles, or if the task is real-time and more urgent than the one running (on a kernel
    // that preempts there). A normal task's wakeup preempts at the fair scheduler's
    // discretion, so it is left to the switch or the task's own events.
    let mut woken: Option<TaskRef> = None;
    // Such a task once that interrupt ended, the holder it would replace and the first segment
    // since. The switch normally follows; if the task's own events come first, the trace
    // lacks its switch in (see `learn`) and those segments were the task's.
    let mut unswitched: Option<(TaskRef, Holder, usize)> = None;
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
        // is written (see tests/measuring/trace.rs); the next event's common_pid still names the task.
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
            woken = None;
            if let Some((t, replaced, since)) = unswitched.take()
                && t.pid == pid
            {
                let holder = holder_of(&current);
                for seg in &mut segments[since..] {
                    if seg.holder == replaced {
                        seg.holder = holder.clone();
                    }
                }
            }
        }
        match &e.kind {
            Kind::Switch { next, .. } => {
                current = Some(*next);
                learn(&mut tasks, &e.kind);
                stack.clear();
                woken = None;
                unswitched = None;
            }
            Kind::Waking { task, target_cpu } => {
                learn(&mut tasks, &e.kind);
                let preempts = |c: &TaskRef| c.pid == 0 || (task.prio < 100 && task.prio < c.prio);
                let here = *target_cpu as usize == s.cpu;
                // Of several, the scheduler picks the most urgent (the lowest kernel prio).
                if here
                    && current.as_ref().is_some_and(preempts)
                    && woken.is_none_or(|w| task.prio < w.prio)
                {
                    woken = Some(*task);
                }
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
        if stack.is_empty()
            && let Some(t) = woken.take()
        {
            unswitched = Some((t, holder_of(&current), segments.len()));
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
    Window {
        segments,
        tasks,
        lost,
        widest_gap_ns: widest_gap,
    }
}

/// Takes from the replay what it has a task or idle hold without evidence, and gives it to
/// [`Holder::NoEvent`]:
///
/// - While the timer interrupt was pending (from the due time to its expiry, when the sample
///   was joined to its timer), no task held it up: a task, real-time or not, is interrupted
///   the moment the interrupt arrives. The replay's holder there is only who ran last; the
///   delay is code with interrupts off, an SMI or the hypervisor, none of which leaves a trace
///   event. Interrupt handlers and softirqs, which show by their events, keep their time.
/// - Idle before the interrupt is an idle exit for at most [`IDLE_EXIT_MAX_NS`] in all; a
///   longer idle silence is not (an idle CPU leaves idle for any interrupt). Without the
///   timer's events the whole window counts as before the interrupt for idle.
pub(super) fn without_evidence(window: &mut Window, s: &LateSample) {
    let pending_end = s.split.map_or(s.wake_ns, |sp| sp.expiry_ts.min(s.wake_ns));
    // Cut the segment that straddles the interrupt's expiry, so each lies on one side.
    if let Some(k) = window
        .segments
        .iter()
        .position(|g| g.from < pending_end && g.to > pending_end)
    {
        let mut after = window.segments[k].clone();
        after.from = pending_end;
        window.segments[k].to = pending_end;
        window.segments.insert(k + 1, after);
    }
    let pending = |g: &Segment| g.to <= pending_end;
    let idle_ns: u64 = window
        .segments
        .iter()
        .filter(|g| pending(g) && g.holder == Holder::Idle)
        .map(|g| g.to - g.from)
        .sum();
    let joined = s.split.is_some();
    for g in window.segments.iter_mut().filter(|g| pending(g)) {
        let silent = match g.holder {
            Holder::Task(_) => joined,
            Holder::Idle => idle_ns > IDLE_EXIT_MAX_NS,
            _ => false,
        };
        if silent {
            g.holder = Holder::NoEvent;
        }
    }
}

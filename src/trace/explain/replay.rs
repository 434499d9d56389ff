//! Replaying a late sample's window from the CPU's trace history: which holder (task, IRQ
//! handler, interrupt vector, softirq, idle) had the CPU at each instant between the due time
//! and the wakeup. Kept apart from naming and judging the holders because it is the one part
//! that must follow the kernel's event semantics (nesting, lost events, missing switches).

use super::LateSample;
use crate::trace::decode::{Kind, TaskRef, TraceEvent};
use crate::trace::split::{CpuTimeline, HRTIMER_SOFTIRQ};
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
    /// Before the expiry of a timer that expired on another CPU: nothing this CPU did held
    /// the wakeup back (see [`without_evidence`]).
    Elsewhere,
    /// From the arming of a timer armed late to its soft expiry: the thread only waited for
    /// its timer, which could not expire sooner; nothing held it (see [`without_evidence`]).
    TimerWait,
}

/// The longest an exit from an idle state is taken to last: above the exit latency of the
/// C-states most CPUs declare up to C6, and far above the ~1 us of those jitterlab's PM QoS
/// hold (/dev/cpu_dma_latency 0) leaves. An idle stretch longer than this before the timer
/// interrupt is not an idle exit.
pub(super) const IDLE_EXIT_MAX_NS: u64 = 100_000;

/// The longest the measuring thread's own code between its clock read and its arming of the
/// next sleep is taken to last, in all (recording the sample, the system call's entry: a few
/// microseconds). More of the thread's own time there with no event is a silence: the thread
/// stalled with its CPU (lab check 1c's `itimer` capture, tests/data/trace/rt-itimer-armed-late:
/// 19.0 ms without an event between the clock read and the `setitimer`).
pub(super) const OWN_TIME_MAX_NS: u64 = 100_000;

/// A stretch of the window held by one holder.
#[derive(Debug, Clone)]
pub(super) struct Segment {
    pub from: u64,
    pub to: u64,
    pub holder: Holder,
    /// The kernel priority of the task that held it, when a task did (as it was switched in:
    /// a task boosted by priority inheritance shows so from its switch in).
    pub prio: Option<i32>,
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
    pub(crate) widest_gap_ns: u64,
}

/// Replays the window of `s` from the last context switch before its due time (at a switch no
/// interrupt is in progress, so the nesting is known from there).
pub(super) fn replay(s: &LateSample, tl: &CpuTimeline) -> Window {
    let h = &tl.history;
    let first_after_due = h.partition_point(|e| e.ts <= s.due_ns);
    let start = (0..first_after_due)
        .rev()
        .find(|&i| matches!(h[i].kind, Kind::Switch { .. }));
    let current: Option<TaskRef> = match start {
        Some(i) => match &h[i].kind {
            Kind::Switch { next, .. } => Some(*next),
            _ => unreachable!(),
        },
        None => tl.base_task,
    };
    // Names for every task the history shows, also those only seen before the replay starts.
    let mut tasks: HashMap<i32, TaskRef> = HashMap::new();
    for e in h.iter().take(first_after_due) {
        learn(&mut tasks, &e.kind);
    }
    if let Some(t) = current {
        tasks.insert(t.pid, t);
    }
    let mut replayer = Replayer::new(s, current, tasks);
    for e in h.iter().skip(start.map_or(0, |i| i + 1)) {
        if e.ts > s.wake_ns {
            break;
        }
        replayer.step(e);
    }
    replayer.finish()
}

/// Records the task an event shows. A task is known as it was when it last got the CPU (or was
/// woken to get it: some kernels never trace a switch out of idle on some CPUs, and the wakeup
/// is then all there is). Its priority when it is switched out may already be another (the
/// spike load drops to SCHED_OTHER at its end).
fn learn(tasks: &mut HashMap<i32, TaskRef>, e: &Kind) {
    match e {
        Kind::Switch { prev, next } => {
            tasks.entry(prev.pid).or_insert(*prev);
            tasks.insert(next.pid, *next);
        }
        Kind::Waking { task, .. } => {
            tasks.insert(task.pid, *task);
        }
        _ => {}
    }
}

/// The replay's state while it walks the events of one window.
struct Replayer<'s> {
    s: &'s LateSample,
    tasks: HashMap<i32, TaskRef>,
    current: Option<TaskRef>,
    /// The interrupts in progress, innermost last.
    stack: Vec<Holder>,
    segments: Vec<Segment>,
    /// Where the next segment starts.
    at: u64,
    /// A task woken onto this CPU takes it when the interrupt that woke it ends, if the CPU
    /// idles, or if the task is real-time and more urgent than the one running (on a kernel
    /// that preempts there). A normal task's wakeup preempts at the fair scheduler's
    /// discretion, so it is left to the switch or the task's own events.
    woken: Option<TaskRef>,
    /// Such a task once that interrupt ended, the holder it would replace and the first
    /// segment since. The switch normally follows; if the task's own events come first, the
    /// trace lacks its switch in (see [`learn`]) and those segments were the task's.
    unswitched: Option<(TaskRef, Holder, usize)>,
    lost: bool,
    /// The end of the stretch whose event gaps are measured: the timer's expiry when known.
    irq_end: u64,
    widest_gap: u64,
    last_event_ts: u64,
}

impl<'s> Replayer<'s> {
    fn new(s: &'s LateSample, current: Option<TaskRef>, tasks: HashMap<i32, TaskRef>) -> Self {
        Replayer {
            s,
            tasks,
            current,
            stack: Vec::new(),
            segments: Vec::new(),
            at: s.due_ns,
            woken: None,
            unswitched: None,
            lost: false,
            irq_end: s.split.map_or(s.wake_ns, |sp| sp.expiry_ts),
            widest_gap: 0,
            last_event_ts: irq_start(s),
        }
    }

    /// The task holder of the CPU when no interrupt is in progress.
    fn task_holder(&self) -> Holder {
        match &self.current {
            None => Holder::Unknown,
            Some(t) if t.pid == 0 => Holder::Idle,
            Some(t) if t.pid == self.s.tid => Holder::Measuring,
            Some(t) => Holder::Task(t.pid),
        }
    }

    /// Ends the segment that runs from `at` at `to`, held by the innermost interrupt or else
    /// the current task.
    fn close_segment(&mut self, to: u64) {
        let holder = self
            .stack
            .last()
            .cloned()
            .unwrap_or_else(|| self.task_holder());
        let prio = match holder {
            Holder::Task(_) => self.current.map(|t| t.prio),
            _ => None,
        };
        self.segments.push(Segment {
            from: self.at,
            to,
            holder,
            prio,
        });
        self.at = to;
    }

    fn step(&mut self, e: &TraceEvent) {
        if e.ts > self.at {
            self.close_segment(e.ts);
        }
        if e.ts >= irq_start(self.s) && e.ts <= self.irq_end {
            self.widest_gap = self.widest_gap.max(e.ts - self.last_event_ts);
            self.last_event_ts = e.ts;
        }
        // Every event is recorded in the context of the task running on the CPU (interrupts
        // too). The kernel occasionally leaves a context switch out of a trace read while it
        // is written (see tests/measuring/trace.rs); the next event's common_pid still names the task.
        let resync = !matches!(e.kind, Kind::Lost { .. })
            && e.common_pid >= 0
            && self.current.is_some_and(|c| c.pid != e.common_pid);
        if resync {
            self.resync_to(e.common_pid);
        }
        self.apply(e);
        if self.stack.is_empty()
            && let Some(t) = self.woken.take()
        {
            self.unswitched = Some((t, self.task_holder(), self.segments.len()));
        }
    }

    /// Makes `pid` the current task after a switch the trace left out; if it is the task woken
    /// earlier, the segments since that wakeup were its own.
    fn resync_to(&mut self, pid: i32) {
        self.current = Some(self.tasks.get(&pid).copied().unwrap_or(TaskRef {
            pid,
            prio: UNKNOWN_PRIO,
            comm: Default::default(),
        }));
        self.stack.clear();
        self.woken = None;
        if let Some((t, replaced, since)) = self.unswitched.take()
            && t.pid == pid
        {
            let holder = self.task_holder();
            for seg in &mut self.segments[since..] {
                if seg.holder == replaced {
                    seg.holder = holder.clone();
                }
            }
        }
    }

    /// Follows the event's meaning: a switch, a wakeup that may preempt, interrupt nesting,
    /// lost events.
    fn apply(&mut self, e: &TraceEvent) {
        match &e.kind {
            Kind::Switch { next, .. } => {
                self.current = Some(*next);
                learn(&mut self.tasks, &e.kind);
                self.stack.clear();
                self.woken = None;
                self.unswitched = None;
            }
            Kind::Waking { task, target_cpu } => {
                learn(&mut self.tasks, &e.kind);
                let preempts = |c: &TaskRef| c.pid == 0 || (task.prio < 100 && task.prio < c.prio);
                let here = *target_cpu as usize == self.s.cpu;
                // Of several, the scheduler picks the most urgent (the lowest kernel prio).
                if here
                    && self.current.as_ref().is_some_and(preempts)
                    && self.woken.is_none_or(|w| task.prio < w.prio)
                {
                    self.woken = Some(*task);
                }
            }
            Kind::IrqEntry { name, .. } => self.stack.push(Holder::Irq(name.clone())),
            Kind::VectorEntry { vector } => self.stack.push(Holder::Vector(*vector)),
            Kind::SoftirqEntry { vec } => self.stack.push(Holder::Softirq(*vec)),
            Kind::IrqExit { .. } | Kind::VectorExit { .. } | Kind::SoftirqExit { .. } => {
                self.stack.pop();
            }
            Kind::Lost { .. } if e.ts >= self.s.due_ns => self.lost = true,
            _ => {}
        }
    }

    /// Closes the last segment at the wakeup and the gap measure at the timer's expiry.
    fn finish(mut self) -> Window {
        if self.s.wake_ns > self.at {
            self.close_segment(self.s.wake_ns);
        }
        if self.irq_end > self.last_event_ts {
            self.widest_gap = self.widest_gap.max(self.irq_end - self.last_event_ts);
        }
        Window {
            segments: self.segments,
            tasks: self.tasks,
            lost: self.lost,
            widest_gap_ns: self.widest_gap,
        }
    }
}

/// Takes from the replay what it has a task or idle hold without evidence, and gives it to
/// [`Holder::NoEvent`]:
///
/// - While the timer interrupt was pending (from the due time to its expiry, when the sample
///   was joined to its timer), no task held it up: a task, real-time or not, is interrupted
///   the moment the interrupt arrives. The replay's holder there is only who ran last; the
///   delay is code with interrupts off, an SMI or the hypervisor, none of which leaves a trace
///   event. Interrupt handlers, which show by their events, keep their time. Softirqs run
///   with interrupts on (in a thread on PREEMPT_RT), so they cannot hold the interrupt off
///   either; only the timer softirq (`HRTIMER`), which expires the timers marked soft, keeps
///   its time: it is where such a timer's expiry waits.
/// - Idle before the interrupt is an idle exit for at most [`IDLE_EXIT_MAX_NS`] in all; a
///   longer idle silence is not (an idle CPU leaves idle for any interrupt). Without the
///   timer's events the whole window counts as before the interrupt for idle.
/// - A timer that expired on another CPU (the kernel's timer migration, see
///   [`crate::trace::split::CpuTimeline::take_moved_cycle`]) was late there, if at all: until
///   the thread's wakeup there ([`elsewhere_until`]) this CPU's holders did not hold the wakeup
///   back, and go to [`Holder::Elsewhere`]: what delayed the expiry or the softirq thread that
///   ran it on that CPU is not in this CPU's trace.
/// - A soft timer that came due while its softirq thread was inside the timer softirq
///   ([`crate::trace::split::Split::held_in_softirq`]) had no interrupt programmed until that
///   softirq's exit: the interrupt is pending from there only, and the holders before it (what
///   kept the softirq thread inside it) keep their time.
/// - A relative sleep armed late ([`crate::trace::split::Split::armed_late`]) had no timer
///   until its arming, and no interrupt pending before the expiry it was armed for: the
///   holders before the arming (what kept the thread from arming) keep their time, and from
///   the arming to that expiry ([`timer_wait`]) the thread only waited for its timer, which
///   could not expire sooner: whatever the CPU did then (idle, another task, an interrupt)
///   held nothing, and goes to [`Holder::TimerWait`]. The thread's own time before the
///   arming is a silence when it exceeds [`OWN_TIME_MAX_NS`] in all.
pub(super) fn without_evidence(window: &mut Window, s: &LateSample) {
    let pending_end = s.split.map_or(s.wake_ns, |sp| sp.expiry_ts.min(s.wake_ns));
    let pending_start = irq_start(s).min(pending_end);
    // Cut the segments that straddle the interrupt's pending stretch, so each lies on one side.
    cut(window, pending_end);
    cut(window, pending_start);
    if let Some((from, to)) = timer_wait(s) {
        cut(window, from);
        cut(window, to);
        for g in window
            .segments
            .iter_mut()
            .filter(|g| g.from >= from && g.to <= to)
        {
            g.holder = Holder::TimerWait;
        }
        // Before the arming, the thread's own time beyond its few microseconds of code.
        let own = |g: &Segment| g.to <= from && g.holder == Holder::Measuring;
        let own_ns: u64 = window
            .segments
            .iter()
            .filter(|g| own(g))
            .map(|g| g.to - g.from)
            .sum();
        if own_ns > OWN_TIME_MAX_NS {
            for g in window.segments.iter_mut().filter(|g| own(g)) {
                g.holder = Holder::NoEvent;
            }
        }
    }
    if let Some(until) = elsewhere_until(s) {
        cut(window, until);
        for g in window.segments.iter_mut().filter(|g| g.to <= until) {
            g.holder = Holder::Elsewhere;
        }
        return;
    }
    let pending = |g: &Segment| g.from >= pending_start && g.to <= pending_end;
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
            Holder::Softirq(vec) => joined && vec != HRTIMER_SOFTIRQ,
            Holder::Idle => idle_ns > IDLE_EXIT_MAX_NS,
            _ => false,
        };
        if silent {
            g.holder = Holder::NoEvent;
        }
    }
}

/// Where the wait for the timer's interrupt begins (trace clock): the due time, or the exit of
/// the timer softirq its softirq thread was inside at the due time, or, for a relative sleep
/// armed late (split.rs, `take_late_armed_cycle`), the late expiry it was armed for: until
/// then no interrupt was pending (the thread had not even armed its timer, then waited for
/// it: [`timer_wait`]), and what held the CPU between its clock read and its arming keeps its
/// time (lab check 1d: a FIFO 99 spike that preempted an `itimer` thread there for 20 ms was
/// "no trace event for 20.70 ms").
pub(super) fn irq_start(s: &LateSample) -> u64 {
    let Some(sp) = s.split else {
        return s.due_ns;
    };
    let from = sp
        .held_in_softirq
        .map_or(s.due_ns, |h| h.exited_ts.max(s.due_ns));
    match sp.armed_late {
        Some(a) if a.late_ns > 0 => from.max(a.expiry_ts(s.due_ns)),
        _ => from,
    }
}

/// For a relative sleep armed late: the timer's own wait (trace clock, from, to), from its
/// arming (or the due time, when it was armed before it) to the soft expiry it was armed for,
/// within the window. The thread had armed its timer and only waited for it to expire.
pub(super) fn timer_wait(s: &LateSample) -> Option<(u64, u64)> {
    let a = s.split?.armed_late.filter(|a| a.late_ns > 0)?;
    let to = a.expiry_ts(s.due_ns).min(s.wake_ns);
    let from = a.wait_from_ts(s.due_ns).min(to);
    (to > from).then_some((from, to))
}

/// Splits the segment that straddles `at`, so that each lies on one side of it.
fn cut(window: &mut Window, at: u64) {
    if let Some(k) = window
        .segments
        .iter()
        .position(|g| g.from < at && g.to > at)
    {
        let mut after = window.segments[k].clone();
        after.from = at;
        window.segments[k].to = at;
        window.segments.insert(k + 1, after);
    }
}

/// For a sample whose timer expired on another CPU: until when what delayed it happened there,
/// not on this CPU. The thread's wakeup there, when traced; else its switch in here (the
/// wakeup is somewhere before it); else the wakeup in user space.
pub(super) fn elsewhere_until(s: &LateSample) -> Option<u64> {
    let sp = s.split.filter(|sp| sp.expired_on.is_some())?;
    let switch_in = sp
        .switch_to_user_ns
        .map(|u| (s.wake_ns as i64 - u).max(0) as u64);
    Some(
        sp.woken_ts
            .or(switch_in)
            .unwrap_or(s.wake_ns)
            .min(s.wake_ns),
    )
}

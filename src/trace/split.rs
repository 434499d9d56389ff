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
//! A timer that comes due while its softirq thread is already inside the timer softirq (entered
//! before the due time, its clock base's `now` read then) is not expired by that run, and
//! until the run ends the kernel programs no interrupt for soft timers (`softirq_activated`):
//! the time from the due time to that softirq's exit is thread latency (whatever held the
//! softirq thread inside it: a task above it, named), and the IRQ part runs only from that exit
//! to the interrupt's waking of the thread ([`Split::held_in_softirq`]; lab check 1c, the
//! capture tests/data/trace/rt-ktimers-in-softirq-posix-timer).
//!
//! With an absolute sleep (`--wake clock-nanosleep`) E is the due time itself, so the latency
//! is IRQ latency plus thread latency. A sample is joined to its chain by the timer's soft expiry
//! (the time asked for; the hard expiry E adds the timer slack, 0 for real-time threads, 1 ns
//! for the others since jitterlab sets the slack to 1 ns): equal to the sample's due time for
//! absolute and periodic wake methods; for relative methods (nanosleep, select, poll, itimer,
//! clock-nanosleep-rel) the kernel computes it from its own clock read a little after the
//! thread's, so the first expiry within a tolerance after the due time is taken.
//!
//! **A relative sleep armed late.** A thread held between its clock read (which sets the due
//! time) and its arming arms its timer that much later, and the timer expires that far after
//! the due time, beyond the tolerance: the sample is joined to that timer
//! ([`CpuTimeline::take_late_armed_cycle`]), its parts are that timer's, and the lateness is in
//! neither. The split carries the arming's time ([`ArmedLate`]), which cuts the lateness in
//! two: up to the arming, what held the thread; from the arming to the late expiry, the
//! timer's own wait (nothing held the wakeup then: the timer could not expire sooner).

use super::decode::{Comm, Kind, TaskRef, TraceEvent};
use std::collections::{HashMap, VecDeque};

mod moved;

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
    pub(crate) hrtimer: u64,
    /// Hard and soft expiry on the timer's clock, ns.
    pub(crate) expires: i64,
    pub(crate) softexpires: i64,
    /// Trace time of hrtimer_start (the arming).
    pub(crate) armed_ts: u64,
    /// Trace time of hrtimer_expire_entry, and the timer base's `now` in it.
    pub(crate) expiry_ts: u64,
    pub now: i64,
    pub(crate) waking_ts: Option<u64>,
    pub(crate) switch_in_ts: Option<u64>,
    /// The thread was woken from its own context: it was still running (its timer expired
    /// between its arming and its sleep), so no switch gives it the CPU for this wakeup.
    pub(crate) woken_running: bool,
    /// The softirq thread that ran the expiry, when it did (see the module documentation).
    pub(crate) expired_in: Option<SoftirqThread>,
    /// The CPU the timer expired on when it was not the thread's own (see
    /// [`CpuTimeline::take_moved_cycle`]).
    pub(crate) expired_on: Option<usize>,
}

/// A softirq thread (`ktimers/N`, `ksoftirqd/N`) that ran a timer's expiry: the thread, and
/// when the timer interrupt woke it (trace clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SoftirqThread {
    pub thread: TaskRef,
    pub(crate) woken_ts: u64,
    /// When it ran the expiry (trace clock).
    pub(crate) expiry_ts: u64,
}

/// Whether `comm` names a kernel thread that runs softirqs, and with them soft timers' expiry.
fn runs_softirqs(comm: &Comm) -> bool {
    comm.0.starts_with(b"ktimers/") || comm.0.starts_with(b"ksoftirqd/")
}

/// Removes the elements `drop` selects, keeping the others in order. The queues this serves are
/// in time order and the samples join in order, so what goes is almost always at the front:
/// that is popped, and the rest is only read unless one of it goes too. A `retain` over the
/// whole queue moved every cycle waiting behind the joined one, for every sample: a third of a
/// traced run's main-thread time (bench/README.md, "Issue 44, stop 64").
fn remove_where<T>(queue: &mut VecDeque<T>, mut drop: impl FnMut(&T) -> bool) {
    while queue.front().is_some_and(&mut drop) {
        queue.pop_front();
    }
    if queue.iter().any(&mut drop) {
        queue.retain(|x| !drop(x));
    }
}

/// The parts of one sample's latency (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Split {
    pub irq_latency_ns: i64,
    pub thread_latency_ns: i64,
    pub(crate) wake_to_switch_ns: Option<i64>,
    pub(crate) switch_to_user_ns: Option<i64>,
    /// Where the thread part begins (trace clock): when the timer expired, or, for a timer
    /// that expired in a softirq thread, when its interrupt woke that thread.
    pub(crate) expiry_ts: u64,
    /// The softirq thread the timer expired in, when it did.
    pub(crate) expired_in: Option<SoftirqThread>,
    /// The CPU the timer expired on, when the kernel had moved it off the thread's CPU.
    pub(crate) expired_on: Option<usize>,
    /// When the measuring thread was woken (its `sched_waking`, trace clock), when traced. For
    /// a timer that expired on another CPU, what came before that wakeup happened there.
    pub(crate) woken_ts: Option<u64>,
    /// A sleep armed late ([`ArmedLate`]): a relative sleep whose timer's soft expiry lies
    /// beyond the join's tolerance after the due time ([`CpuTimeline::take_late_armed_cycle`]),
    /// or a timer armed once its expiry time had already passed (its interrupt then comes at
    /// once: see [`CpuTimeline::split_elsewhere`]).
    pub(crate) armed_late: Option<ArmedLate>,
    /// The timer softirq the softirq thread that expired the timer was already inside at the
    /// due time, when it was: the time from the due time to that softirq's exit is thread
    /// latency, the IRQ part only what follows it (see the module documentation).
    pub(crate) held_in_softirq: Option<SoftirqSpan>,
}

/// A relative sleep armed late: the thread was held between its clock read (which set the due
/// time) and its arming, so its timer's soft expiry lies `late_ns` after the due time. That
/// time is in neither part, and is two stretches from the due time on: up to the arming
/// (`armed_ts`), what held the thread before it armed its timer; from the arming (or the due
/// time, when it was armed before it) to the soft expiry, the timer's own wait, during which
/// nothing on the CPU held the wakeup back (the timer could not expire sooner).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ArmedLate {
    /// The soft expiry less the due time; for a timer armed after its expiry time had
    /// passed (`expiry_passed`), the arming less the due time (it expired at once then).
    pub(crate) late_ns: i64,
    /// The arming: the trace time of the timer's `hrtimer_start`.
    pub(crate) armed_ts: u64,
    /// Armed once its expiry time had passed (the expiry was on time, the arming late: the
    /// thread was held inside its call, between the clock read its expiry came from and its
    /// arming, as a `select` preempted in the kernel); no wait of the timer's own follows.
    pub(crate) expiry_passed: bool,
}

impl ArmedLate {
    /// The soft expiry on the trace clock, for the sample due at `due_ns`.
    pub(crate) fn expiry_ts(&self, due_ns: u64) -> u64 {
        due_ns.saturating_add_signed(self.late_ns)
    }

    /// Where the timer's own wait begins for the sample due at `due_ns`: the arming, or the
    /// due time when the timer was armed before it (never after the soft expiry).
    pub(crate) fn wait_from_ts(&self, due_ns: u64) -> u64 {
        self.armed_ts.max(due_ns).min(self.expiry_ts(due_ns))
    }
}

/// One run of the timer softirq (`HRTIMER`) in a softirq thread, trace clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SoftirqSpan {
    /// Its `softirq_entry` (the softirq reads its clock base's `now` right after it).
    pub(crate) entered_ts: u64,
    /// Its `softirq_exit`.
    pub(crate) exited_ts: u64,
}

/// The timer softirq's vector (`HRTIMER_SOFTIRQ`, the same number in every kernel since 2.6.30).
pub(crate) const HRTIMER_SOFTIRQ: u32 = 8;

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
pub(crate) struct CpuTimeline {
    armed: HashMap<u64, Armed>,
    /// Every arming of a measuring thread's timer not yet joined, in time order: a timer the
    /// kernel moved to another CPU expires there, and is found from its arming here
    /// ([`CpuTimeline::take_moved_cycle`]).
    arms: VecDeque<(u64, Armed)>,
    cycles: VecDeque<TimerCycle>,
    /// Recent events in time order.
    pub(crate) history: VecDeque<TraceEvent>,
    /// The culprits' kernel stacks (`Kind::KernelStack`) in time order, kept beside `history`
    /// rather than in it: they may arrive out of time order with the CPU's other events.
    /// Trimmed with the history, and at most [`MAX_STACKS`].
    pub(crate) stacks: VecDeque<TraceEvent>,
    /// The task running when `history` begins (from the switches trimmed off its front).
    pub(crate) base_task: Option<TaskRef>,
    /// The last wakeup on this CPU of a softirq thread, and when (trace clock).
    softirq_woken: Option<(TaskRef, u64)>,
    /// Every event of this CPU before this CLOCK_MONOTONIC time has arrived.
    pub(crate) complete_until_ns: u64,
    /// The reader's last batch of this CPU has arrived: every event of the run is in.
    pub finished: bool,
}

impl CpuTimeline {
    /// Adds the next event of this CPU. `measuring` holds the measuring threads' tids.
    pub(crate) fn push(&mut self, e: TraceEvent, measuring: &[i32]) {
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
                let armed = Armed {
                    tid: e.common_pid,
                    expires: *expires,
                    softexpires: *softexpires,
                    ts: e.ts,
                };
                self.armed.insert(*hrtimer, armed);
                if self.arms.len() >= MAX_CYCLES {
                    self.arms.pop_front();
                }
                self.arms.push_back((*hrtimer, armed));
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
                        woken_running: false,
                        expired_in,
                        expired_on: None,
                    });
                }
            }
            Kind::Waking { task, .. } if runs_softirqs(&task.comm) => {
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
                    c.woken_running = e.common_pid == task.pid;
                }
            }
            // The switch that gives the thread the CPU after its last wakeup, if that wakeup
            // needs one: a thread woken while it ran gets none, and a later switch (after a
            // preemption, or for a wakeup whose events were lost) is not this wakeup's; taken
            // for it, its switch-to-user came out negative, by up to the time to the next
            // join (-6.5 ms and -128 ms in two 3 s runs at 40 us).
            Kind::Switch { next, .. } if measuring.contains(&next.pid) => {
                if let Some(c) = self
                    .cycles
                    .iter_mut()
                    .rev()
                    .find(|c| c.tid == next.pid && c.waking_ts.is_some())
                    && c.switch_in_ts.is_none()
                    && !c.woken_running
                {
                    c.switch_in_ts = Some(e.ts);
                }
            }
            _ => {}
        }
        if self.history.len() >= MAX_HISTORY {
            self.pop_history();
        }
        // The BPF back end sends a followed thread's timer expiry and wakeup from another
        // CPU's timer (moved here) at once, ahead of this CPU's older records still staged in
        // the kernel: such an event may come before older ones. The history stays in time
        // order (tracefs's events come in order: always pushed at the back).
        match self.history.back() {
            Some(last) if last.ts > e.ts => {
                let at = self.history.partition_point(|h| h.ts <= e.ts);
                self.history.insert(at, e);
            }
            _ => self.history.push_back(e),
        }
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
    #[cfg_attr(
        not(test),
        expect(
            dead_code,
            reason = "dead since pub(crate) (issue 41 sweep): read by its unit tests only; trace's owner decides"
        )
    )]
    pub(crate) fn split(
        &mut self,
        tid: i32,
        due_ns: u64,
        wake_ns: u64,
        tolerance_ns: u64,
    ) -> Option<Split> {
        self.split_elsewhere(tid, due_ns, wake_ns, tolerance_ns, &[])
    }

    /// [`CpuTimeline::split`], the timer also looked for on the CPUs of `elsewhere` (CPU,
    /// timeline) when it did not expire on this one: the kernel moves the timers armed on a
    /// `nohz_full` CPU to a housekeeping CPU (split/moved.rs).
    pub(crate) fn split_elsewhere(
        &mut self,
        tid: i32,
        due_ns: u64,
        wake_ns: u64,
        tolerance_ns: u64,
        elsewhere: &[(usize, &CpuTimeline)],
    ) -> Option<Split> {
        let mut armed_late = None;
        let c = match self.take_cycle(tid, due_ns, tolerance_ns) {
            Some(c) => c,
            None => match self.take_late_armed_cycle(tid, due_ns, wake_ns, tolerance_ns) {
                Some(c) => {
                    armed_late = Some(ArmedLate {
                        late_ns: c.softexpires - due_ns as i64,
                        armed_ts: c.armed_ts,
                        expiry_passed: false,
                    });
                    c
                }
                None => {
                    let c = self.take_moved_cycle(tid, due_ns, wake_ns, tolerance_ns, elsewhere)?;
                    self.forget_arms(tid, c.softexpires);
                    c
                }
            },
        };
        let wake = wake_ns as i64;
        // On the timer's clock, the trace time `ts` (at or before the expiry).
        let on_clock = |ts: u64| c.now - c.expiry_ts.saturating_sub(ts) as i64;
        // A timer armed after its expiry had passed: the thread was held between the clock
        // read its expiry came from and its arming (`select` computes its end time at the
        // call's start, before it arms; an absolute sleep's due time is the thread's own), and
        // its interrupt came at once. No interrupt was pending before the arming: the wait
        // for it is in neither part (lab check 1f: a FIFO 99 spike that preempted a `select`
        // thread inside its call for 19.2 ms was "IRQ latency 19.52 ms ... no trace event").
        // Only a timer expired in interrupt context on this CPU: a soft timer on PREEMPT_RT
        // expires in the softirq thread, and one re-armed past its expiry time there came with
        // the thread waiting on that softirq thread, boosted, which the thread-side verdicts
        // say (tests/data/trace/rt-ktimers-boosted-timerfd, whose `timerfd` is re-aimed past
        // its expiry time many times); a moved timer's expiry is on another CPU's trace clock.
        let armed_on_clock = on_clock(c.armed_ts);
        let from = match armed_late {
            None if armed_on_clock > c.expires
                && c.expired_in.is_none()
                && c.expired_on.is_none() =>
            {
                armed_late = Some(ArmedLate {
                    late_ns: armed_on_clock - due_ns as i64,
                    armed_ts: c.armed_ts,
                    expiry_passed: true,
                });
                armed_on_clock
            }
            _ => c.expires,
        };
        // The softirq thread's timer softirq the timer came due in, if it did (not for a timer
        // expired on another CPU: this CPU's history is not that thread's).
        let held = match c.expired_in {
            Some(t) if c.expired_on.is_none() => {
                let due_ts = c
                    .expiry_ts
                    .saturating_sub((c.now - c.expires).max(0) as u64);
                self.timer_softirq_at(t.thread.pid, due_ts, t.woken_ts)
            }
            _ => None,
        };
        // The IRQ part on the timer's clock: from the expiry (or the exit of the timer softirq
        // its softirq thread was inside at the due time: until then no interrupt is programmed
        // for it) to the interrupt running it, or the interrupt's waking of the softirq thread
        // that expired it (the trace clock's distance before the expiry). A thread woken
        // before that start (for an earlier timer, and still waiting) leaves no IRQ part: the
        // whole delay is its wait.
        let irq_start = held.map_or(from, |h| on_clock(h.exited_ts).max(from));
        let (irq_end, thread_from_ts) = match c.expired_in {
            Some(t) => {
                let woken = on_clock(t.woken_ts);
                let end = woken.max(irq_start);
                (end, t.woken_ts + (end - woken) as u64)
            }
            None => (c.now, c.expiry_ts),
        };
        let irq_latency_ns = irq_end - irq_start;
        Some(Split {
            irq_latency_ns,
            thread_latency_ns: wake - from - irq_latency_ns,
            wake_to_switch_ns: match (c.waking_ts, c.switch_in_ts) {
                (Some(w), Some(s)) => Some(s as i64 - w as i64),
                _ => None,
            },
            switch_to_user_ns: c.switch_in_ts.map(|s| wake - s as i64),
            expiry_ts: thread_from_ts,
            expired_in: c.expired_in,
            expired_on: c.expired_on,
            woken_ts: c.waking_ts,
            armed_late,
            held_in_softirq: held,
        })
    }

    /// The run of the timer softirq in the softirq thread `pid` that was in progress at the
    /// trace time `due_ts` and had ended by `until` (that thread's wakeup for the expiry), when
    /// the history shows one. Such a run read its clock base's `now` when it began, before the
    /// due time, so it did not expire a timer due after that; and while it runs the kernel
    /// programs no interrupt for the soft timers (`softirq_activated`): that timer's
    /// interrupt can only come after its exit. Walked back from `until`: a sample whose thread
    /// was woken on time looks at only the events of its own latency.
    fn timer_softirq_at(&self, pid: i32, due_ts: u64, until: u64) -> Option<SoftirqSpan> {
        let end = self.history.partition_point(|e| e.ts <= until);
        let mut exited_ts = None;
        for e in self.history.range(..end).rev() {
            if exited_ts.is_none() && e.ts <= due_ts {
                return None;
            }
            if e.common_pid != pid {
                continue;
            }
            match (&e.kind, exited_ts) {
                (Kind::SoftirqExit { vec }, None) if *vec == HRTIMER_SOFTIRQ => {
                    exited_ts = Some(e.ts)
                }
                // Still inside a timer softirq when woken: not a run that ended before.
                (Kind::SoftirqEntry { vec }, None) if *vec == HRTIMER_SOFTIRQ => return None,
                // Its start: before the due time, or else it read a `now` past the due time
                // and would have expired the timer.
                (Kind::SoftirqEntry { vec }, Some(exited_ts)) if *vec == HRTIMER_SOFTIRQ => {
                    return (e.ts <= due_ts).then_some(SoftirqSpan {
                        entered_ts: e.ts,
                        exited_ts,
                    });
                }
                _ => {}
            }
        }
        None
    }

    /// The cycle of a relative sleep (`tolerance_ns` > 0) that thread `tid` armed late: the
    /// first of its cycles with a soft expiry after `due_ns`, beyond the tolerance, that was
    /// armed and expired before the wakeup at `wake_ns`. The thread arms once per sleep, after
    /// its last wakeup and its clock read (the due time is that read plus the interval); held
    /// between the two, it arms later by that much. On PREEMPT_RT an `itimer` thread woken by
    /// `ktimers/N` blocks at once on a lock that thread holds (priority inheritance boosts
    /// it), and under qemu the vCPU stalled after that for 20 ms (lab check 1c, the capture
    /// tests/data/trace/rt-itimer-armed-late): its timer expired 20 ms after the due time, and
    /// the sample was left unjoined. Cycles of earlier samples are gone (samples come in
    /// order), and the next sample's timer is armed after this wakeup.
    fn take_late_armed_cycle(
        &mut self,
        tid: i32,
        due_ns: u64,
        wake_ns: u64,
        tolerance_ns: u64,
    ) -> Option<TimerCycle> {
        if tolerance_ns == 0 {
            return None;
        }
        let due = due_ns as i64;
        let i = self.cycles.iter().position(|c| {
            c.tid == tid
                && c.softexpires - due > tolerance_ns as i64
                && c.armed_ts <= wake_ns
                && c.expiry_ts <= wake_ns
        })?;
        let c = self.cycles.remove(i)?;
        self.forget_arms(tid, c.softexpires);
        Some(c)
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
        // The match is one of them: this thread's, its soft expiry at `keep_from`.
        let matched = found.map(|i| self.cycles[i]);
        let keep_from = matched.map_or(due, |c| c.softexpires);
        remove_where(&mut self.cycles, |c| {
            c.tid == tid && c.softexpires <= keep_from
        });
        // The armings for this sample stay while it is not joined: its timer may have expired
        // on another CPU (take_moved_cycle).
        self.forget_arms(tid, matched.map_or(due - 1, |c| c.softexpires));
        matched
    }

    /// Forgets the armings of `tid` for soft expiries up to `until`: of samples joined or past.
    fn forget_arms(&mut self, tid: i32, until: i64) {
        remove_where(&mut self.arms, |(_, a)| {
            a.tid == tid && a.softexpires <= until
        });
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
mod tests;

//! The measuring threads of a session as one guard, [`Threads`]: started and set up before
//! anything else runs, released from the start gate when the session begins, and joined on
//! every exit path.
//!
//! The end is served whatever the loads do (issue 39, F8): a measuring thread below a
//! real-time load on its CPU cannot run, so it cannot see its end or a stop. [`Threads`]
//! notes when the end was due ([`Threads::overdue`]); the session then stops the loads
//! (returning a real-time load to SCHED_OTHER first), which lets the thread run and end, and
//! the threads still running then are recorded as starved. Should one still not end
//! [`GIVE_UP_AFTER`] later (a task outside jitterlab holds its CPU), it is left behind,
//! recorded as failed, so that the results are written all the same.

use crate::error::{Failure, Result};
use crate::measure::{MeasuringThread, StartGate, ThreadEnd, ThreadPlan, spawn_measuring_thread};
use crate::plan::{PREFAULT_STACK_BYTES, RunPlan};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

/// How long the measuring threads have, after their end time or a stop, before the loads are
/// stopped under them: an unhindered thread ends within microseconds (a noisy VM's stalls are
/// milliseconds), so one still running after this is held off its CPU.
pub(super) const END_GRACE: Duration = Duration::from_millis(200);
/// How long, once the loads are stopped, a thread that has not ended is waited for before it is
/// left behind (recorded as failed): longer than the loads' stop (SIGTERM, 300 ms, SIGKILL).
pub(super) const GIVE_UP_AFTER: Duration = Duration::from_secs(2);

/// What is known of a measuring thread once it has been joined.
pub(crate) struct JoinedThread {
    pub cpu: usize,
    pub index: usize,
    pub tid: i32,
    /// CPU time the thread used (CLOCK_THREAD_CPUTIME_ID at its end), ns.
    pub(crate) cpu_time_ns: u64,
    pub end: ThreadEnd,
}

/// The measuring threads, from their start to their join. Until [`Threads::open`] they wait at
/// the start gate; dropped before that (any refusal or error on the way to the start), the gate
/// is aborted, so that they end without measuring, and they are joined: no exit path leaves a
/// thread blocked at the gate. Dropped later, it stops and joins what is left.
pub(super) struct Threads {
    gate: Arc<StartGate>,
    stop: Arc<AtomicBool>,
    pub(super) list: Vec<MeasuringThread>,
    opened: bool,
    /// When the end (the end time, or a stop) was first seen with a thread still running.
    end_seen: Option<Instant>,
    /// When the loads were stopped because a thread had not ended by [`END_GRACE`].
    loads_stopped: Option<Instant>,
    /// The plan indices of the threads still running then, each with the reason (the loads
    /// above it), in plan order.
    pub(super) starved: Vec<(usize, String)>,
}

impl Threads {
    /// Starts one thread per planned CPU; returns once each is set up and at the gate, or the
    /// first setup refusal (exit 3).
    pub(super) fn start(plan: &RunPlan, stop: &Arc<AtomicBool>) -> Result<Threads> {
        let gate = StartGate::new(plan.cpus.len());
        let list = start_measuring_threads(plan, &gate, stop)?;
        Ok(Threads {
            gate,
            stop: Arc::clone(stop),
            list,
            opened: false,
            end_seen: None,
            loads_stopped: None,
            starved: Vec::new(),
        })
    }

    /// Opens the gate: the first wakeups are due at `start_ns`, none at or after `end_ns`
    /// (`u64::MAX`: no end in time).
    pub(super) fn open(&mut self, start_ns: u64, end_ns: u64) {
        self.gate.open(start_ns, end_ns);
        self.opened = true;
    }

    /// Ends every thread's sleep now rather than at its next wakeup (once the stop flag is
    /// set). To be repeated until they have ended: a signal sent just before a thread went to
    /// sleep finds nothing to interrupt.
    pub(super) fn interrupt(&self) {
        self.list.iter().for_each(MeasuringThread::interrupt);
    }

    /// Whether every thread has returned.
    pub(super) fn all_ended(&self) -> bool {
        self.list.iter().all(|t| t.join.is_finished())
    }

    /// Whether the threads are done with: all returned, or, once the loads were stopped under
    /// them, [`GIVE_UP_AFTER`] has passed (the rest are left behind by [`Threads::join`]).
    pub(super) fn done(&self) -> bool {
        self.all_ended()
            || self
                .loads_stopped
                .is_some_and(|at| at.elapsed() >= GIVE_UP_AFTER)
    }

    /// Called at every poll with whether the end is due (the end time passed, or a stop): true
    /// when a thread is still running [`END_GRACE`] after the end was first seen and the loads
    /// have not been stopped for it yet: time to stop them ([`Threads::loads_stopped`]).
    pub(super) fn overdue(&mut self, end_due: bool) -> bool {
        if !end_due || self.loads_stopped.is_some() || self.all_ended() {
            return false;
        }
        let seen = *self.end_seen.get_or_insert_with(Instant::now);
        seen.elapsed() >= END_GRACE
    }

    /// The loads have just been stopped because of [`Threads::overdue`]: the threads still
    /// running are recorded with `why` (their plan index, CPU and how long they were held off:
    /// the loads above them), and the threads get [`GIVE_UP_AFTER`] to end. Returns the plan
    /// indices and CPUs of those threads.
    pub(super) fn loads_stopped(&mut self) -> Vec<(usize, usize)> {
        self.loads_stopped = Some(Instant::now());
        self.list
            .iter()
            .filter(|t| !t.join.is_finished())
            .map(|t| (t.index, t.cpu))
            .collect()
    }

    /// One warning per measuring thread that gave its CPU up to jitterlab's own threads (the
    /// loop's starvation guard, `measure::guard`): how often, how long, and why.
    pub(super) fn guard_warnings(&self) -> Vec<String> {
        self.list
            .iter()
            .filter_map(|t| {
                let yields = t.counters.guard_yields.load(Ordering::Relaxed);
                let ns = t.counters.guard_yielded_ns.load(Ordering::Relaxed);
                (yields > 0).then(|| format!(
                    "the measuring thread on CPU {} gave its CPU up {yields} time(s), {:.1} ms in all, to jitterlab's own threads, which had not run for {} s (it kept them from draining its ring and serving a stop: an interval shorter than a wakeup costs here, or a higher-priority task); the due times that passed meanwhile count as missed periods",
                    t.cpu,
                    ns as f64 / 1e6,
                    crate::measure::guard::STARVED_AFTER_NS / 1_000_000_000
                ))
            })
            .collect()
    }

    /// Whether some thread has returned.
    pub(super) fn any_ended(&self) -> bool {
        self.list.iter().any(|t| t.join.is_finished())
    }

    /// The kernel thread ids, in plan order (0 for a thread not started yet).
    pub(super) fn tids(&self) -> Vec<i32> {
        self.list
            .iter()
            .map(|t| t.counters.tid.load(Ordering::Relaxed))
            .collect()
    }

    /// Joins every thread: per thread its CPU, its kernel thread id and how it ended (a panic
    /// is a failure). A thread that has not returned once [`Threads::done`] gave up on it is
    /// left behind (detached: it ends with the process) and recorded as failed.
    pub(super) fn join(&mut self) -> Vec<JoinedThread> {
        let give_up = self.loads_stopped.is_some() && !self.all_ended();
        self.list
            .drain(..)
            .map(|t| {
                let end = if give_up && !t.join.is_finished() {
                    ThreadEnd::Failed(format!(
                        "it had not ended {} s after the loads were stopped for it: a task outside this run's loads holds CPU {} at or above its priority",
                        GIVE_UP_AFTER.as_secs(),
                        t.cpu
                    ))
                } else {
                    t.join.join().unwrap_or_else(|_| {
                        ThreadEnd::Failed("the measuring thread panicked".into())
                    })
                };
                JoinedThread {
                    cpu: t.cpu,
                    index: t.index,
                    tid: t.counters.tid.load(Ordering::Relaxed),
                    // Stored by the thread as its last act, so final once it is joined.
                    cpu_time_ns: t.counters.cpu_time_ns.load(Ordering::Relaxed),
                    end,
                }
            })
            .collect()
    }
}

impl Drop for Threads {
    fn drop(&mut self) {
        if !self.opened {
            self.gate.abort();
        }
        self.stop.store(true, Ordering::SeqCst);
        // The loads were stopped before (the session's fields drop in that order); a thread
        // that a task outside them still holds is left behind after GIVE_UP_AFTER, as by
        // `join`, rather than waited for without end.
        let until = Instant::now() + GIVE_UP_AFTER;
        for t in self.list.drain(..) {
            while !t.join.is_finished() && Instant::now() < until {
                t.interrupt();
                std::thread::sleep(Duration::from_millis(5));
            }
            if t.join.is_finished() {
                let _ = t.join.join();
            }
        }
    }
}

fn start_measuring_threads(
    plan: &RunPlan,
    gate: &Arc<StartGate>,
    stop: &Arc<AtomicBool>,
) -> Result<Vec<MeasuringThread>> {
    let (ready_tx, ready_rx) = mpsc::channel();
    let mut threads = Vec::new();
    for (index, &cpu) in plan.cpus.iter().enumerate() {
        let policy = plan.thread_policy(index);
        let thread_plan = ThreadPlan {
            index,
            cpu,
            pin: !matches!(policy, crate::measure::Policy::Deadline { .. }),
            policy,
            prefault_stack_bytes: if plan.mlock { PREFAULT_STACK_BYTES } else { 0 },
            ring_capacity: plan.ring_size,
            kind: plan.thread_loop(index),
        };
        match spawn_measuring_thread(
            thread_plan,
            Arc::clone(gate),
            Arc::clone(stop),
            ready_tx.clone(),
        ) {
            Ok(t) => threads.push(t),
            Err(e) => {
                // The threads already started wait at the gate for the full count, which can no
                // longer be reached; this error ends the process, and them with it.
                return Err(Failure::system(format!(
                    "cannot start the measuring thread for CPU {cpu}: {e}"
                )));
            }
        }
    }
    let mut refusals = Vec::new();
    for _ in 0..threads.len() {
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => refusals.push(e),
            Err(_) => refusals.push(crate::measure::SetupError {
                cpu: usize::MAX,
                message: "a measuring thread ended during setup".into(),
            }),
        }
    }
    if let Some(first) = refusals.into_iter().next() {
        gate.abort();
        threads.into_iter().for_each(|t| drop(t.join.join()));
        return Err(Failure::system(first.message));
    }
    Ok(threads)
}

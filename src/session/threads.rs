//! The measuring threads of a session as one guard, [`Threads`]: started and set up before
//! anything else runs, released from the start gate when the session begins, and joined on
//! every exit path.

use crate::error::{Failure, Result};
use crate::measure::{MeasuringThread, StartGate, ThreadEnd, ThreadPlan, spawn_measuring_thread};
use crate::plan::{PREFAULT_STACK_BYTES, RunPlan};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};

/// What is known of a measuring thread once it has been joined.
pub(crate) struct JoinedThread {
    pub cpu: usize,
    pub index: usize,
    pub tid: i32,
    /// CPU time the thread used (CLOCK_THREAD_CPUTIME_ID at its end), ns.
    pub cpu_time_ns: u64,
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
    /// is a failure).
    pub(super) fn join(&mut self) -> Vec<JoinedThread> {
        self.list
            .drain(..)
            .map(|t| {
                let end = t
                    .join
                    .join()
                    .unwrap_or_else(|_| ThreadEnd::Failed("the measuring thread panicked".into()));
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
        for t in self.list.drain(..) {
            t.interrupt();
            let _ = t.join.join();
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
            kind: plan.thread_kind(index),
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

//! The load supervisor: starts each generator as a child process, switches them on and off
//! along a timeline of phases, collects their counters, and makes sure none outlives its phase
//! or jitterlab.
//!
//! Containment, per load:
//! - the worker is `/proc/self/exe __load-worker SPEC` in a process group of its own, so the
//!   whole load (threads, forked children, programs it runs) is signalled at once;
//! - it gets PR_SET_PDEATHSIG(SIGKILL) before exec, and exits at once if jitterlab already died;
//!   the signal follows the *thread* that forked, so every load is forked by the supervisor's
//!   own thread, which lives until every load is reaped; the worker's children do the same
//!   against the worker (`worker_kit::die_with_parent`);
//! - at the end of its phase: SIGTERM to the group (the worker reports its last counters),
//!   [`GRACE`](link::GRACE) later SIGKILL to the group, then every member is reaped. jitterlab is a child
//!   subreaper while loads run, so members orphaned by the worker's death come back to it;
//! - its stdout and stderr go to `loads/<k>-<name>.log` in the result directory (in a
//!   segmented run through a copying thread that keeps it bounded, `log.rs`).
//!
//! Every process of a load carries `JITTERLAB_LOAD=<jitterlab pid>:<k>` in its environment and,
//! where the system allows, lives in a cgroup of the load's own: descendants that leave the
//! process group (setsid, setpgid, daemons) are found and killed through those, also by a reaper
//! process after a SIGKILL of jitterlab (`contain.rs`). An `exec` load runs in a cpuset of its
//! CPUs, which its programs cannot leave (`contain/cpuset.rs`, issue 39 N13).
//!
//! A load that ends before it is stopped is reported: killed by a signal (the OOM killer's
//! SIGKILL, a user's kill) or failed, it fails the run; ended by itself, it is a warning.
//!
//! The supervisor is in three parts: `timeline.rs` (the supervisor thread: phases on and off
//! along the run's clock, loads that end early), `spawn.rs` (a worker process, contained, and
//! waiting until it is ready) and `link.rs` (the supervisor's end of one worker: its reports,
//! its exit, and stopping it).
//!
//! The supervisor writes no file of the run: its events (phase boundaries, warnings about
//! loads) are handed back through [`Supervisor::drain_events`] and the end of
//! [`Supervisor::finish`], each stamped when it happened.

mod link;
mod log;
mod setup;
mod spawn;
mod timeline;

pub(crate) use log::RUN_LOG_BYTES;
pub use setup::{Outcome, PhasePlan, PhaseResult};
pub(crate) use setup::{PlannedLoad, Setup};

use crate::error::Failure;
use crate::format::events::Event;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use timeline::{Msg, State};

/// A running supervisor thread. Dropping it stops and reaps every load.
pub(crate) struct Supervisor {
    tx: mpsc::Sender<Msg>,
    join: Option<std::thread::JoinHandle<Outcome>>,
    all_ended: Arc<AtomicBool>,
    events: mpsc::Receiver<Event>,
    /// [`Setup::wakeup_count`], for the recorder and the session.
    wakeup_count: Option<Arc<crate::load::scenario_count::WakeupCount>>,
}

impl Supervisor {
    /// Starts the supervisor thread and the loads that run for the whole run, and waits until
    /// they are ready. `stop` is set when a load fails during the run.
    pub(crate) fn start(setup: Setup, stop: Arc<AtomicBool>) -> Result<Self, Failure> {
        let (tx, rx) = mpsc::channel();
        let (ready_tx, ready_rx) = mpsc::channel();
        let (events_tx, events) = mpsc::channel();
        let all_ended = Arc::new(AtomicBool::new(false));
        let ended = Arc::clone(&all_ended);
        let wakeup_count = setup.wakeup_count.clone();
        let join = std::thread::Builder::new()
            .name("jl-loads".into())
            .spawn(move || {
                let mut s = State::new(setup, stop, ended, events_tx);
                s.run(rx, ready_tx)
            })
            .map_err(|e| {
                Failure::system(format!("cannot start the load supervisor thread: {e}"))
            })?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(Supervisor {
                tx,
                join: Some(join),
                all_ended,
                events,
                wakeup_count,
            }),
            Ok(Err(f)) => {
                let _ = join.join();
                Err(f)
            }
            Err(_) => {
                let _ = join.join();
                Err(Failure::run("the load supervisor ended during setup"))
            }
        }
    }

    /// Fixes the run's start (CLOCK_MONOTONIC); phases are timed from it.
    pub(crate) fn begin(&self, start_ns: u64) {
        let _ = self.tx.send(Msg::Begin(start_ns));
    }

    /// The count of thread 0's wakeups that ends the phases of `wakeups = N`, when the
    /// scenario has such phases.
    pub(crate) fn wakeup_count(&self) -> Option<Arc<crate::load::scenario_count::WakeupCount>> {
        self.wakeup_count.clone()
    }

    /// Whether every load has ended by itself (hackbench once, an exec without restart).
    pub(crate) fn all_ended(&self) -> bool {
        self.all_ended.load(Ordering::SeqCst)
    }

    /// The events since the last call (phase starts and ends, warnings), in the order they
    /// happened.
    pub(crate) fn drain_events(&self) -> Vec<Event> {
        self.events.try_iter().collect()
    }

    /// Stops every load, reaps them, and returns what they did, with the events not drained
    /// yet (among them the ends of the phases still running).
    pub(crate) fn finish(mut self) -> (Outcome, Vec<Event>) {
        let outcome = self.stop_and_join().unwrap_or_default();
        (outcome, self.drain_events())
    }

    fn stop_and_join(&mut self) -> Option<Outcome> {
        let _ = self.tx.send(Msg::Stop);
        self.join.take().and_then(|j| j.join().ok())
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

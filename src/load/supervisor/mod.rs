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
//!   against the worker (`kit::die_with_parent`);
//! - at the end of its phase: SIGTERM to the group (the worker reports its last counters),
//!   [`GRACE`] later SIGKILL to the group, then every member is reaped. jitterlab is a child
//!   subreaper while loads run, so members orphaned by the worker's death come back to it;
//! - its stdout and stderr go to `loads/<k>-<name>.log` in the result directory.
//!
//! Every process of a load carries `JITTERLAB_LOAD=<jitterlab pid>:<k>` in its environment and,
//! where the system allows, lives in a cgroup of the load's own: descendants that leave the
//! process group (setsid, setpgid, daemons) are found and killed through those, also by a reaper
//! process after a SIGKILL of jitterlab (`contain.rs`).
//!
//! A load that ends before it is stopped is reported: killed by a signal (the OOM killer's
//! SIGKILL, a user's kill) or failed, it fails the run; ended by itself, it is a warning.
//!
//! The supervisor is in three parts: `timeline.rs` (the supervisor thread: phases on and off
//! along the run's clock, loads that end early), `spawn.rs` (a worker process, contained, and
//! waiting until it is ready) and `link.rs` (the supervisor's end of one worker: its reports,
//! its exit, and stopping it).

mod link;
mod spawn;
mod timeline;

use super::generator::GeneratorSpec;
use crate::error::Failure;
use crate::results::run_record::{LoadEnded, LoadRecord, Throughput};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;
use timeline::State;

/// Time a load has, after SIGTERM, to report and exit before its group is killed.
pub const GRACE: Duration = Duration::from_millis(300);
/// Time a worker has to set itself up and say it is ready.
const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// How often the supervisor looks at its loads between phase boundaries.
const POLL: Duration = Duration::from_millis(20);
/// Name of the log directory inside a result directory.
pub const LOG_DIR: &str = "loads";

/// One generator to run, for the whole run or for one phase.
#[derive(Debug, Clone)]
pub struct PlannedLoad {
    pub spec: GeneratorSpec,
    /// None: from before the start to the end of the run.
    pub phase: Option<usize>,
}

/// One phase on the timeline, offsets from the run's start.
#[derive(Debug, Clone, PartialEq)]
pub struct PhasePlan {
    pub label: String,
    pub start_ns: u64,
    pub end_ns: u64,
    pub loads: Vec<String>,
}

/// What the supervisor is to do.
#[derive(Debug, Clone, Default)]
pub struct Setup {
    pub loads: Vec<PlannedLoad>,
    pub phases: Vec<PhasePlan>,
    pub online: Vec<usize>,
    /// The measured CPUs, for `cpus=housekeeping`.
    pub measured: Vec<usize>,
    /// The result directory: logs go to its `loads/`; None: the loads share jitterlab's
    /// stdout and stderr.
    pub result_dir: Option<PathBuf>,
    /// Index in run.json `loads[]` of the first load here (the spike loads come first).
    pub record_index_base: usize,
    /// events.jsonl to append phase boundaries and warnings to.
    pub events: Option<PathBuf>,
    /// Run hackbench once instead of repeating it (`jitterlab load` without --duration).
    pub once: bool,
}

/// What one load did.
#[derive(Debug, Clone)]
pub struct LoadResult {
    pub spec: GeneratorSpec,
    pub phase: Option<usize>,
    /// The counters of its last report, and the work time they cover.
    pub values: Vec<u64>,
    pub elapsed_ns: u64,
    /// CPU time of the worker and the children it reaped (from wait4), ns.
    pub cpu_time_ns: u64,
    /// Monotonic times it was started and reaped.
    pub started_ns: u64,
    pub ended_ns: u64,
    /// How it ended, and in words when it ended before it was stopped.
    pub ended: LoadEnded,
    pub end_reason: Option<String>,
}

impl LoadResult {
    pub fn throughput(&self) -> Vec<Throughput> {
        let mut t = self.spec.throughput(&self.values, self.elapsed_ns);
        t.push(Throughput {
            name: "cpu time".into(),
            value: self.cpu_time_ns as f64 / 1e9,
            unit: "s".into(),
        });
        t
    }

    pub fn record(&self) -> LoadRecord {
        LoadRecord {
            spec: self.spec.text.clone(),
            kind: self.spec.name().into(),
            throughput: self.throughput(),
            ended: Some(self.ended),
            end_reason: self.end_reason.clone(),
        }
    }
}

/// A phase as it ran.
#[derive(Debug, Clone)]
pub struct PhaseResult {
    pub index: usize,
    pub plan: PhasePlan,
    /// Monotonic: when its loads were all started, and when they were all reaped.
    pub started_ns: u64,
    pub ended_ns: u64,
}

#[derive(Debug, Default)]
pub struct Outcome {
    /// The loads that were started, in plan order.
    pub loads: Vec<LoadResult>,
    pub phases: Vec<PhaseResult>,
    /// A load that failed while running: the run failed.
    pub failure: Option<String>,
    pub warnings: Vec<String>,
}

/// What the handle tells the supervisor thread.
enum Msg {
    Begin(u64),
    Stop,
}

/// A running supervisor thread. Dropping it stops and reaps every load.
pub struct Supervisor {
    tx: mpsc::Sender<Msg>,
    join: Option<std::thread::JoinHandle<Outcome>>,
    all_ended: Arc<AtomicBool>,
}

impl Supervisor {
    /// Starts the supervisor thread and the loads that run for the whole run, and waits until
    /// they are ready. `stop` is set when a load fails during the run.
    pub fn start(setup: Setup, stop: Arc<AtomicBool>) -> Result<Self, Failure> {
        let (tx, rx) = mpsc::channel();
        let (ready_tx, ready_rx) = mpsc::channel();
        let all_ended = Arc::new(AtomicBool::new(false));
        let ended = Arc::clone(&all_ended);
        let join = std::thread::Builder::new()
            .name("jl-loads".into())
            .spawn(move || {
                let mut s = State::new(setup, stop, ended);
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
    pub fn begin(&self, start_ns: u64) {
        let _ = self.tx.send(Msg::Begin(start_ns));
    }

    /// Whether every load has ended by itself (hackbench once, an exec without restart).
    pub fn all_ended(&self) -> bool {
        self.all_ended.load(Ordering::SeqCst)
    }

    /// Stops every load, reaps them, and returns what they did.
    pub fn finish(mut self) -> Outcome {
        self.stop_and_join().unwrap_or_default()
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

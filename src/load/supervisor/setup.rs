//! The supervisor's plain data: what it is asked to run ([`Setup`]) and what the loads and
//! phases did ([`Outcome`]).

use crate::format::run_record::{LoadEnded, LoadLogRecord, LoadRecord, Throughput};
use crate::load::generator::GeneratorSpec;
use crate::results::dir::ResultDir;

/// One generator to run, for the whole run or for one phase.
#[derive(Debug, Clone)]
pub(crate) struct PlannedLoad {
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
    /// `wakeups = N`: the phase ends after N wakeups of thread 0 (`scenario_count.rs`); its
    /// times are then where the count really began and ended.
    pub wakeups: Option<u64>,
    pub loads: Vec<String>,
}

/// What the supervisor is to do.
#[derive(Debug, Clone, Default)]
pub(crate) struct Setup {
    pub loads: Vec<PlannedLoad>,
    pub phases: Vec<PhasePlan>,
    pub online: Vec<usize>,
    /// The measured CPUs, for `cpus=housekeeping`.
    pub measured: Vec<usize>,
    /// `--housekeeping`: where `cpus=housekeeping` loads and the workers' reporting threads
    /// run; None: the online CPUs not measured.
    pub(crate) housekeeping: Option<Vec<usize>>,
    /// The result directory: logs go to its `loads/`; None: the loads share jitterlab's
    /// stdout and stderr.
    pub result_dir: Option<ResultDir>,
    /// The bound of each load's log (`SegmentPlan::load_log_cap` in a segmented run, else
    /// `log::RUN_LOG_BYTES`); None: unbounded (no result directory: the terminal's).
    pub(crate) log_cap: Option<u64>,
    /// Index in run.json `loads[]` of the first load here (the spike loads come first).
    pub(crate) record_index_base: usize,
    /// Run hackbench once instead of repeating it (`jitterlab load` without --duration).
    pub once: bool,
    /// The SCHED_FIFO priority of the supervisor thread: the run's drain priority, above the
    /// real-time loads it must be able to stop (plan/drain.rs); None: normal scheduling.
    pub priority: Option<i32>,
    /// A scenario with phases that end after a number of wakeups: the count the recorder
    /// keeps of thread 0's wakeups.
    pub(crate) wakeup_count: Option<std::sync::Arc<crate::load::scenario_count::WakeupCount>>,
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
    pub(crate) cpu_time_ns: u64,
    /// Monotonic times it was started and reaped.
    pub started_ns: u64,
    pub ended_ns: u64,
    /// How it ended, and in words when it ended before it was stopped.
    pub ended: LoadEnded,
    pub end_reason: Option<String>,
    /// What its bounded log kept of its output.
    pub log: Option<LoadLogRecord>,
}

impl LoadResult {
    pub fn throughput(&self) -> Vec<Throughput> {
        let mut t = self.spec.throughput(&self.values, self.elapsed_ns);
        t.push(Throughput::new(
            "cpu time",
            self.cpu_time_ns as f64 / 1e9,
            "s",
        ));
        t
    }

    pub fn record(&self) -> LoadRecord {
        LoadRecord {
            spec: self.spec.text.clone(),
            kind: self.spec.name().into(),
            throughput: self.throughput(),
            ended: Some(self.ended),
            end_reason: self.end_reason.clone(),
            log: self.log.clone(),
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
    /// When the phase ended before its planned end because its loads with `loops=` had all
    /// finished: the offset from the run's start, ns (as `plan.end_ns`); None otherwise.
    pub early_end_ns: Option<u64>,
    /// A phase of `wakeups = N`: the wakeups of thread 0 counted in its window (N, or fewer
    /// when the run ended first).
    pub counted: Option<u64>,
}

impl PhaseResult {
    /// Where its window ends, offset from the run's start: the planned end, or the earlier
    /// end its loads' loops made.
    pub(crate) fn window_end_ns(&self) -> u64 {
        self.early_end_ns
            .map_or(self.plan.end_ns, |e| e.min(self.plan.end_ns))
    }
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

//! run.json: what a run was asked to do, what it found, and what it measured.
//! The fields are specified in docs/result-format.md; every quantity carries its unit in its name.

pub use super::cpu_time::CpuTimeRecord;
pub use super::cpu_time::ThreadCpuTime;
pub use super::environment::EnvironmentRecord;
pub(crate) use super::environment::{
    IdleStateRecord, IdleStatesRecord, PmQosHolderRecord, PmQosRecord,
};
pub use super::inversion::InversionRecord;
pub use super::inversion::{InversionCount, RoleRecord};
pub use super::kind::RunKind;
pub use super::noise::NoiseCause;
pub use super::noise::NoiseSummary;
pub use super::plan_record::IpcRecord;
pub use super::plan_record::PlanRecord;
pub use super::throughput::Throughput;
pub(crate) use super::throughput::format_throughput;
use crate::format::stats::LatencySummary;
use serde::{Deserialize, Serialize};

/// The version of the result-directory format this build writes.
pub const FORMAT: u32 = 1;
pub const FILE_NAME: &str = "run.json";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRecord {
    pub format: u32,
    pub(crate) jitterlab_version: String,
    /// `latency` (`jitterlab run`) or `noise` (`jitterlab noise`); absent in older files, which
    /// are latency runs.
    #[serde(default)]
    pub kind: RunKind,
    pub command_line: Vec<String>,
    pub plan: PlanRecord,
    /// The system snapshot and readiness verdicts (see docs/doctor.md).
    pub system: serde_json::Value,
    /// What jitterlab itself changed on the system for the run.
    pub(crate) environment: EnvironmentRecord,
    pub(crate) started_utc: String,
    pub(crate) ended_utc: Option<String>,
    /// The run's start on CLOCK_MONOTONIC (the time base of events.jsonl), ns.
    pub start_monotonic_ns: u64,
    pub duration_ns: Option<u64>,
    pub ended: Ended,
    /// Why the run failed or was interrupted, when it did not complete.
    pub end_reason: Option<String>,
    pub threads: Vec<ThreadSummary>,
    pub loads: Vec<LoadRecord>,
    pub warnings: Vec<String>,
    /// Per-phase statistics of a scenario run (`--scenario`); empty otherwise.
    #[serde(default)]
    pub phases: Vec<PhaseRecord>,
    /// The verdict of `--budget`, when one was given.
    #[serde(default)]
    pub budget: Option<BudgetVerdict>,
    /// What `--trace` did and found, when it was given.
    #[serde(default)]
    pub trace: Option<TraceRecord>,
    /// Set when the directory was made by `jitterlab import` from another tool's output.
    #[serde(default)]
    pub imported: Option<ImportRecord>,
    /// The CPU time jitterlab itself used, read at the end of a run; None in imported runs and
    /// in files written before this field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_time: Option<CpuTimeRecord>,
    /// The interval log's segments, when it is written in segments (a continuous run); None:
    /// one latency.hlog. Updated at every segment boundary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segments: Option<super::segments::SegmentsRecord>,
    /// `--wake pi-mutex`: the priority-inversion scenario's roles and the inversions found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inversion: Option<InversionRecord>,
    /// Steal time of the measured CPUs over the run (a virtual machine's hypervisor taking
    /// their time); None where /proc/stat has no steal field, and in older or imported runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal: Option<super::steal::StealRecord>,
    /// `--on-threshold` / `--on-end`: each action and what it did; absent without them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actions: Option<super::actions::ActionsRecord>,
    /// The context counters of the measured CPUs and what moved with the late wakeups
    /// (counters.log, docs/counters.md); absent with `--no-counters` and in imported runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<super::counters::CountersRecord>,
    /// The bulk events (wakeup summaries, noise intervals) that events.jsonl's budget left
    /// out (`format::events::BULK_EVENTS_BUDGET_BYTES`); absent when none was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) events_not_written: Option<super::events::EventsNotWritten>,
    /// When each start-up step ended and the CPU the start-up cost (session/startup.rs,
    /// issue 44); absent in older and imported runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) startup: Option<StartupRecord>,
}

/// A run's start-up timeline: each step's end on CLOCK_MONOTONIC, in order, up to the opening
/// of the start gate; the first due time; the process's CPU time when the gate opened.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct StartupRecord {
    pub(crate) steps: Vec<StartupStep>,
    /// The first due time (the end of the lead-in), ns on CLOCK_MONOTONIC.
    pub(crate) first_due_monotonic_ns: u64,
    /// User and system CPU time of every thread of the process when the gate opened, ns.
    pub(crate) process_cpu_ns: u64,
}

/// One step of [`StartupRecord`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct StartupStep {
    pub(crate) step: String,
    /// When the step ended, ns on CLOCK_MONOTONIC (it began where the previous one ended).
    pub(crate) end_monotonic_ns: u64,
}

impl RunRecord {
    /// Whether `field` (a run.json field name as `imported.absent` lists it, e.g.
    /// `missed_periods`, `plan.policy`) holds a placeholder: the run was imported from a
    /// source that did not have it. Readers show such a field as unknown (`-`).
    pub(crate) fn is_absent(&self, field: &str) -> bool {
        self.imported
            .as_ref()
            .is_some_and(|i| i.absent.iter().any(|a| a == field))
    }

    /// The record of a run that has just started, in this build's format: what was asked
    /// (`command_line`, `plan`), the system, what jitterlab changed on it, and when measuring
    /// started. Everything measured is empty and the run is `running`; whoever builds a record
    /// (the runner, importers, synthetic runs) fills in the rest as it learns it, e.g.
    /// `RunRecord { threads, ended: Ended::Completed, ..RunRecord::new(...) }`.
    pub fn new(
        command_line: Vec<String>,
        plan: PlanRecord,
        system: serde_json::Value,
        environment: EnvironmentRecord,
        started_utc: String,
        start_monotonic_ns: u64,
    ) -> Self {
        RunRecord {
            format: FORMAT,
            jitterlab_version: env!("CARGO_PKG_VERSION").to_string(),
            kind: RunKind::default(),
            command_line,
            plan,
            system,
            environment,
            started_utc,
            ended_utc: None,
            start_monotonic_ns,
            duration_ns: None,
            ended: Ended::Running,
            end_reason: None,
            threads: Vec::new(),
            loads: Vec::new(),
            warnings: Vec::new(),
            phases: Vec::new(),
            budget: None,
            trace: None,
            imported: None,
            cpu_time: None,
            steal: None,
            actions: None,
            segments: None,
            inversion: None,
            counters: None,
            startup: None,
            events_not_written: None,
        }
    }
}

/// One phase of a scenario and the latency measured while it ran. Statistics come from the
/// interval histograms whose intervals lie inside the phase.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PhaseRecord {
    pub index: usize,
    pub label: String,
    /// Phase start and end on CLOCK_MONOTONIC (the time base of events.jsonl), ns.
    pub start_ns: u64,
    pub end_ns: u64,
    pub loads: Vec<String>,
    /// The window whose whole log intervals `threads` cover (CLOCK_MONOTONIC, ns): the planned
    /// start and end, or the earlier end the loads' `loops=` made. Readers that cut the log to
    /// a phase (`compare --phase`, per-phase exports) use it so that they cover the same
    /// intervals. Absent in files written before this field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) window_start_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) window_end_ns: Option<u64>,
    /// A phase of `wakeups = N` (scenario files): whose wakeups ended it, how many were asked
    /// and how many were counted in the window (fewer when the run ended first). Absent for a
    /// phase timed by the clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) wakeups: Option<PhaseWakeups>,
    pub threads: Vec<PhaseThreadSummary>,
}

/// The count that ended a phase of `wakeups = N`: the wakeups of the measuring thread on `cpu`
/// (the run's first measured CPU, thread 0) due from the window's start to its end.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct PhaseWakeups {
    pub cpu: usize,
    pub asked: u64,
    pub counted: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PhaseThreadSummary {
    pub cpu: usize,
    #[serde(flatten)]
    pub latency: LatencySummary,
}

/// The outcome of a `--budget` expression.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BudgetVerdict {
    /// The expression as given.
    pub expression: String,
    pub passed: bool,
    pub clauses: Vec<ClauseVerdict>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClauseVerdict {
    /// The clause as written, e.g. `p99.9<50us`.
    pub clause: String,
    pub passed: bool,
    /// The worst measured value the clause was judged on, with its unit, and where (e.g.
    /// `cpu1: 63.2 us`).
    pub actual: String,
}

/// The tracing side of a `--trace` run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TraceRecord {
    /// What collected the trace: `bpf` or `tracefs` (absent in older files: tracefs).
    #[serde(default = "tracefs_backend")]
    pub backend: String,
    /// Why that back end: the option, or what `auto` found.
    #[serde(default)]
    pub backend_reason: String,
    /// The tracefs instance used (removed at the end); empty with the BPF back end.
    pub instance: String,
    /// Samples above this latency were explained in events.jsonl, ns.
    pub explain_above_ns: u64,
    /// Events the kernel dropped because the reader fell behind.
    pub events_lost: u64,
    /// BPF: of `events_lost`, those a CPU's stage of 1024 records wrapped over before its late
    /// wakeup was decided (absent for tracefs and in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events_lost_in_stage: Option<u64>,
    /// Number of spike explanations written.
    pub explained: u64,
    /// The tracepoints enabled (`system:event`).
    #[serde(default)]
    pub events: Vec<String>,
    /// The event filters set (`system/event: filter`); other events are limited to the
    /// measured CPUs by the instance's CPU mask only. With BPF, the filters the programs apply
    /// in the kernel, in words.
    #[serde(default)]
    pub filters: Vec<String>,
    /// tracefs: the ring buffer per measured CPU, KiB; BPF: the one ring buffer, KiB.
    #[serde(default)]
    pub buffer_kb: u64,
    /// Events read and decoded.
    #[serde(default)]
    pub events_read: u64,
    /// BPF: wakeups not later than `explain_above_ns` were reduced in the kernel to one record
    /// each (docs/tracing.md, "In-kernel reduction"); their other events never left it.
    #[serde(default)]
    pub reduced: bool,
    /// BPF: the events the programs handled on the traced CPUs, reduced or not (absent for
    /// tracefs and in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events_in_kernel: Option<u64>,
    /// CPU time of the trace reader thread, ns.
    #[serde(default)]
    pub reader_cpu_ns: u64,
    /// Per measuring thread: how many samples were joined, and the parts of the latency.
    #[serde(default)]
    pub threads: Vec<TraceThreadRecord>,
    /// The worst explanations (highest latency first, at most 5); all are in events.jsonl.
    #[serde(default)]
    pub worst: Vec<crate::format::events::SpikeExplanation>,
}

fn tracefs_backend() -> String {
    "tracefs".into()
}

/// The trace side of one measuring thread (`--trace`). IRQ latency is in
/// `ThreadSummary.irq_latency`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TraceThreadRecord {
    pub cpu: usize,
    /// Samples later than this were explained, ns.
    pub explain_above_ns: u64,
    /// Samples joined with their timer in the trace (they have an IRQ latency).
    pub samples_joined: u64,
    /// Samples whose trace arrived but held no timer for them (e.g. `--wake rtc`, or events
    /// lost), and samples whose trace came too late: recorded without IRQ latency.
    pub samples_unmatched: u64,
    pub samples_trace_late: u64,
    /// From the timer's expiry to the thread in user space.
    pub thread_latency: LatencySummary,
    /// From sched_waking to sched_switch (scheduling delay).
    pub wake_to_switch: LatencySummary,
    /// From sched_switch to the clock read in user space.
    pub switch_to_user: LatencySummary,
    /// A noise run: the explained gaps' time by cause, most first (docs/noise.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub noise_causes: Vec<NoiseCause>,
}

/// Where an imported result came from. What the source lacks is absent, never invented.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ImportRecord {
    /// The `import --format` name of the source (`results::import::SOURCE_FORMATS`).
    pub source_format: String,
    /// The file imported, as given.
    pub source_file: String,
    /// Whether latency.hlog holds per-interval data (false: one interval for the whole run).
    pub per_interval: bool,
    /// run.json fields the source did not have, written as 0, "" or "unknown" placeholders
    /// (e.g. `tid`, `missed_periods`, `plan.interval_ns`); consumers treat them as unknown.
    #[serde(default)]
    pub absent: Vec<String>,
    /// Figures the source printed per CPU that run.json has no field for (rtla osnoise top's
    /// interference counts and largest noise in one period), as printed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub figures: Vec<SourceFigure>,
    /// Per CPU and column, the samples beyond the source's histogram (its overflows), recorded
    /// in latency.hlog at the lowest value they can have: a percentile among them is a lower
    /// bound (`compare` marks it so). Empty when nothing overflowed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overflows: Vec<SourceOverflow>,
}

impl ImportRecord {
    /// The least value, ns, of CPU `cpu`'s latency samples that the source held only as
    /// overflows: a percentile of that CPU at or above it is a lower bound (compare's table,
    /// its regression check and every budget say so). None when none overflowed.
    pub(crate) fn latency_overflow_from(&self, cpu: usize) -> Option<u64> {
        self.overflow_from(cpu, "latency")
    }

    /// As [`ImportRecord::latency_overflow_from`] for the source's `column` (`latency`, `irq`
    /// or `thr`: rtla's timer IRQ and thread columns have overflows of their own).
    pub(crate) fn overflow_from(&self, cpu: usize, column: &str) -> Option<u64> {
        self.overflows
            .iter()
            .filter(|o| o.cpu == cpu && o.column == column && o.samples > 0)
            .map(|o| o.from_ns)
            .min()
    }
}

/// One entry of [`ImportRecord::overflows`]:
/// `{"cpu": 0, "column": "latency", "samples": 320, "from_ns": 30000}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceOverflow {
    pub cpu: usize,
    /// `latency` (the CPU's wakeup latency, hlog tag `cpuN`), `irq` or `thr` (rtla's columns).
    pub column: String,
    /// Samples beyond the histogram.
    pub samples: u64,
    /// The lowest value they can have, ns: the histogram's end, where they are recorded.
    pub from_ns: u64,
}

/// One figure of [`ImportRecord::figures`]: `{"cpu": 0, "name": "irq", "value": 1204, "unit": "events"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceFigure {
    pub cpu: usize,
    pub name: String,
    pub value: u64,
    /// `events`, `periods` or `ns`.
    pub unit: String,
}

/// How a run ended. `running` is what a run killed by SIGKILL leaves behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Ended {
    Running,
    Completed,
    Interrupted,
    /// Ended by an `--on-threshold stop` action (`end_reason` names the spike).
    Stopped,
    Failed,
}

impl Ended {
    pub fn as_str(self) -> &'static str {
        match self {
            Ended::Running => "running",
            Ended::Completed => "completed",
            Ended::Interrupted => "interrupted",
            Ended::Stopped => "stopped",
            Ended::Failed => "failed",
        }
    }
}

/// One measuring thread's results.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ThreadSummary {
    pub cpu: usize,
    pub(crate) thread_index: usize,
    pub tid: i32,
    pub interval_ns: u64,
    pub deadline_ns: u64,
    #[serde(flatten)]
    pub latency: LatencySummary,
    /// Periods that passed unserved because a wakeup came a period or more late.
    pub missed_periods: u64,
    /// Samples lost because the ring was full (the recorder fell behind).
    pub dropped_records: u64,
    /// Wakeups later than `deadline_ns`.
    pub(crate) deadline_misses: u64,
    /// Wakeups with a negative latency (a clock step or an early-waking method).
    pub(crate) early_wakeups: u64,
    /// `completed`, `stopped` or `failed: <reason>`.
    pub end: String,
    /// Timer IRQ latency (hrtimer expiry minus programmed expiry), with `--trace`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq_latency: Option<LatencySummary>,
    /// Shares within thresholds, spikes, (m,k)-firm windows, the extrapolated worst case
    /// (docs/tails.md); empty in imported runs and files written before them.
    #[serde(flatten, default)]
    pub tails: super::tails::ThreadTails,
    /// Noise runs: the noise figures besides the gap statistics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<NoiseSummary>,
}

/// One load generator's report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadRecord {
    pub spec: String,
    pub kind: String,
    pub throughput: Vec<Throughput>,
    /// How the load ended; None in files written before this field.
    #[serde(default)]
    pub ended: Option<LoadEnded>,
    /// In words, when it ended before it was stopped: `killed by signal 9 (SIGKILL) after 2.1 s`.
    #[serde(default)]
    pub end_reason: Option<String>,
    /// What its log (`loads/<k>-<name>.log`, bounded) kept of its output; None for a load
    /// without a log (spike) and in files written before this field.
    #[serde(default)]
    pub log: Option<LoadLogRecord>,
}

/// What a load's bounded log kept of its output (docs/loads.md "Output").
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadLogRecord {
    /// Bytes the load wrote to its stdout and stderr.
    pub(crate) output_bytes: u64,
    /// Bytes of it the log no longer holds (older parts dropped at a rotation, or output after
    /// a failed write).
    pub(crate) dropped_bytes: u64,
    /// The bound of each of the log's two files (`<k>-<name>.log.1` and `<k>-<name>.log`).
    pub(crate) bound_bytes: u64,
}

/// How a load ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoadEnded {
    /// Stopped by jitterlab at the end of its phase or of the run: the normal end.
    Stopped,
    /// Did what it was asked and ended (hackbench's one exchange in `jitterlab load`).
    Completed,
    /// Ended by itself before it was stopped (a warning).
    Exited,
    /// Reported a failure (the run failed).
    Failed,
    /// Killed by a signal jitterlab did not send, e.g. the OOM killer's SIGKILL (the run failed).
    Killed,
}

impl LoadEnded {
    pub fn as_str(self) -> &'static str {
        match self {
            LoadEnded::Stopped => "stopped",
            LoadEnded::Completed => "completed",
            LoadEnded::Exited => "exited",
            LoadEnded::Failed => "failed",
            LoadEnded::Killed => "killed",
        }
    }
}

/// The warnings about a load's figures that have no value: `load hackbench:groups=40: no mean
/// exchange time: no exchange finished in 1.00 s`. In run.json's and `jitterlab load`'s
/// warnings, so that a missing figure is never only a dash in a table.
pub(crate) fn no_value_warnings(load: &LoadRecord) -> Vec<String> {
    load.throughput
        .iter()
        .filter(|t| t.value.is_none())
        .map(|t| {
            format!(
                "load {}: no {}: {}",
                load.spec,
                t.name,
                t.no_value.as_deref().unwrap_or("the load reported none")
            )
        })
        .collect()
}

/// `load SPEC: FIGURES`, and how it ended when that was not the normal end:
/// `load cpu: spin 3176 M iterations/s, cpu time 0.114 s (killed by signal 9 (SIGKILL) after 0.2 s)`.
pub(crate) fn load_line(load: &LoadRecord) -> String {
    let mut line = format!(
        "load {}: {}",
        load.spec,
        format_throughput(&load.throughput)
    );
    if let Some(reason) = &load.end_reason {
        line.push_str(&format!(" ({reason})"));
    }
    line
}

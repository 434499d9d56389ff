//! A validated `jitterlab run`, [`RunPlan`]: what the runner, the sweep and run.json work from,
//! and the rules a plan must keep (periods within bounds, the wake method's needs). [`build`]
//! makes it from the option groups of [`options`] (which `cli` and the drop-ins fill), so that
//! every bad input is found before any thread starts or any file is created. The segmented interval log of long runs
//! ([`SegmentPlan`]) is in `plan/segments.rs`.

use crate::error::{Failure, Result};
pub use crate::format::run_record::RunKind;
use crate::load::LoadSpec;
pub use crate::measure::NoiseSpec;
use crate::measure::wake::{ClockUse, Schedule, WAKE_METHODS};
use crate::measure::{Clock, MeasuringLoop, Policy, PolicyKind, WakeMethod};
use crate::units::format_ns;
use std::path::PathBuf;

pub mod actions;
pub(crate) mod build;
pub(crate) mod drain;
pub(crate) mod measurement;
pub mod options;
mod segments;
mod targets;
pub use measurement::LatencySpec;
pub use measurement::Measurement;
pub use measurement::SenderCpu;
pub use measurement::{InversionSpec, SenderSpec};
pub use segments::{DEFAULT_SEGMENT_NS, MIN_RETAIN_BYTES, Retain, SegmentPlan};

/// Default run length when neither --duration nor --loops is given.
pub(crate) const DEFAULT_DURATION_NS: u64 = 60_000_000_000;
/// The longest period a measuring thread may sleep (interval, plus distance, plus steps).
/// Longer periods measure nothing useful, and the bound keeps every due-time sum in the
/// measuring loop far from overflowing.
pub(crate) const MAX_PERIOD_NS: u64 = 3_600_000_000_000;
/// The longest `--duration`: ten years keeps the run's end time (start + duration) and every
/// sum of due times far inside 64-bit nanoseconds.
pub(crate) const MAX_DURATION_NS: u64 = 3650 * 86_400_000_000_000;
/// Stack each measuring thread touches before measuring (with mlockall it stays resident).
pub(crate) const PREFAULT_STACK_BYTES: usize = 256 * 1024;

/// The largest `--ring-size`: 4 Mi samples, 128 MiB per thread (32 bytes a sample, locked in
/// memory with mlockall): 4 s of samples at the smallest interval (1 us), 40 drains of the
/// recorder. A larger ring only postpones drops that a recorder this far behind will make
/// anyway, and would make an allocation failure abort the process.
pub(crate) const MAX_RING_SIZE: usize = 1 << 22;

/// `--trace-backend`: which collector `--trace` uses (docs/tracing.md, "Back ends"): BPF
/// programs on the tracepoints, tracefs (an ftrace instance), or BPF where the kernel allows
/// it and tracefs otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TraceBackendChoice {
    #[default]
    Auto,
    Bpf,
    Tracefs,
}

impl TraceBackendChoice {
    pub(crate) const ALL: [TraceBackendChoice; 3] = [Self::Auto, Self::Bpf, Self::Tracefs];

    pub fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Bpf => "bpf",
            Self::Tracefs => "tracefs",
        }
    }

    pub fn named(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }
}

/// When the measuring threads stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunLength {
    /// After this many ns from the first due time (`--duration`).
    Duration(u64),
    /// After this many wakeups per thread (`--loops`).
    Loops(u64),
    /// Never by itself: the run measures until it is stopped (SIGINT, SIGTERM or
    /// `session::Session::stop`), for continuous monitoring. No command line makes it yet.
    Endless,
}

impl RunLength {
    /// How long the run is expected to last from its first due time: exact for a duration;
    /// for loops, the sum of their sleeps, `interval_ns` growing by `step_ns` after each
    /// wakeup (`--interval-step`: n·interval + step·n(n−1)/2); None without an end.
    pub fn expected_ns(self, interval_ns: u64, step_ns: u64) -> Option<u64> {
        match self {
            RunLength::Duration(ns) => Some(ns),
            RunLength::Loops(n) => {
                let steps = u128::from(n) * u128::from(n.saturating_sub(1)) / 2;
                let total = (u128::from(n) * u128::from(interval_ns))
                    .saturating_add(steps.saturating_mul(u128::from(step_ns)));
                Some(u64::try_from(total).unwrap_or(u64::MAX))
            }
            RunLength::Endless => None,
        }
    }

    /// The planned length in time, when it is one (`--duration`).
    pub fn duration_ns(self) -> Option<u64> {
        match self {
            RunLength::Duration(ns) => Some(ns),
            RunLength::Loops(_) | RunLength::Endless => None,
        }
    }

    /// The planned number of wakeups per thread, when it is one (`--loops`).
    pub fn loops(self) -> Option<u64> {
        match self {
            RunLength::Loops(n) => Some(n),
            RunLength::Duration(_) | RunLength::Endless => None,
        }
    }
}

/// A validated `jitterlab run`.
#[derive(Debug, Clone)]
pub struct RunPlan {
    pub cpus: Vec<usize>,
    pub policy: PolicyKind,
    /// The priority of `policy` (0 for the kinds without one).
    pub priority: i32,
    /// What each thread measures, with what only that kind needs.
    pub measurement: Measurement,
    pub length: RunLength,
    pub log_interval_ns: u64,
    /// Read the measured CPUs' context counters at each log interval into counters.log (on
    /// unless `--no-counters`).
    pub counters: bool,
    pub loads: Vec<LoadSpec>,
    pub(crate) load_texts: Vec<String>,
    /// `--scenario`: phases of loads on the run's timeline.
    pub scenario: Option<crate::load::scenario::Scenario>,
    pub samples: bool,
    /// The layout samples.bin is written in (`--samples-format`).
    pub samples_format: crate::format::samples::SampleLogFormat,
    /// `--summary-every N`: min, mean and max of every N samples per thread, to events.jsonl.
    pub(crate) summary_every: Option<u64>,
    pub ring_size: usize,
    /// The drain side's SCHED_FIFO priority (`--drain-priority`, below the measuring
    /// threads'); None: normal scheduling.
    pub(crate) drain_priority: Option<i32>,
    /// `--housekeeping`: the CPUs of everything but the measuring threads and their helpers
    /// (the drain side, the load supervisor, `cpus=housekeeping` loads); None: anywhere.
    pub(crate) housekeeping: Option<Vec<usize>>,
    /// `--cpuset-partition`: the measuring threads in a cpuset of the measured CPUs.
    pub(crate) cpuset_partition: bool,
    /// `--load-cpus`: the CPUs of a generator load whose spec names no `cpus=` (already
    /// applied to `loads` and the scenario's; kept for run.json).
    pub(crate) load_cpus: crate::load::generator::CpuChoice,
    pub(crate) mlock: bool,
    pub(crate) pm_qos_us: Option<u32>,
    /// `--idle-state-max`: the deepest cpuidle state left enabled on the measured CPUs during
    /// the run; None: idle states left alone.
    pub(crate) idle_state_max: Option<u32>,
    /// `--trace`: the IRQ vs thread split and spike explanations.
    pub trace: bool,
    /// `--trace-backend`: what collects the trace.
    pub(crate) trace_backend: TraceBackendChoice,
    /// `--explain-above`; None: each thread's deadline.
    pub explain_above_ns: Option<u64>,
    /// None: the default, named when the run starts.
    pub out: Option<PathBuf>,
    /// `out` is a default name the command chose (a drop-in's, in the state directory), not
    /// the user's: made with a default name's checks of the directories above it
    /// (`ResultDir::create_unique`), as `run`'s default is.
    pub(crate) out_is_default: bool,
    /// The option that names the result directory, as the user types it: `--out`, or the
    /// drop-ins' `--jitterlab-out` (commands/dropin.rs), for the messages about it.
    pub(crate) out_option: &'static str,
    /// The command's own way to measure without locking memory, the last fix offered when
    /// mlockall is refused: `run`'s `--no-mlock`, cyclictest's "leave out -m"; None where the
    /// command has none (oslat and timerlat lock as their tools do: raising the limit is the
    /// fix). Issue 39, fifth hostile re-run N22: the drop-ins named `--no-mlock` and refused it.
    pub(crate) mlock_fix: Option<&'static str>,
    /// `--allow-shared-cpus`: measure CPUs another jitterlab run holds (session/cpulock.rs).
    pub(crate) allow_shared_cpus: bool,
    /// `--budget`, judged when the run ends.
    pub budget: Option<crate::analysis::budget::Budget>,
    /// The interval log in segments with retention (a continuous run); None: one latency.hlog
    /// (`run` always). See [`SegmentPlan`].
    pub segments: Option<SegmentPlan>,
    /// `--under`: thresholds whose share of wakeups within is counted exactly (each thread's
    /// deadline always is, and 10x the median is added at the end, docs/tails.md).
    pub(crate) under_ns: Vec<u64>,
    /// `--on-threshold` and `--on-end` (`run` only): what a spike and the end set off.
    pub actions: actions::ActionPlan,
}

impl RunPlan {
    /// The wakeups the thread at `index` would make: its loops, or the most whose (stepped)
    /// intervals fit in the duration; None for a run without an end.
    pub(crate) fn thread_wakeups(&self, index: usize) -> Option<u64> {
        match self.length {
            RunLength::Loops(n) => Some(n),
            // The most wakeups whose stepped intervals fit in the duration (fourth hostile
            // re-run, N18: 3000 were said for a 3 s run at 1 ms stepped by 20 ms, which makes
            // 17).
            RunLength::Duration(ns) => {
                let (interval, step) = (
                    self.thread_interval_ns(index).max(1),
                    self.interval_step_ns(),
                );
                let fits = |n: u64| RunLength::Loops(n).expected_ns(interval, step) <= Some(ns);
                let (mut low, mut high) = (0, ns / interval);
                while low < high {
                    let mid = low + (high - low).div_ceil(2);
                    match fits(mid) {
                        true => low = mid,
                        false => high = mid - 1,
                    }
                }
                Some(low)
            }
            RunLength::Endless => None,
        }
    }

    /// The period of the measuring thread at `index` (cyclictest -d). A noise thread has no
    /// period; run.json stores its threshold there (the least a gap can be; docs/noise.md).
    pub(crate) fn thread_interval_ns(&self, index: usize) -> u64 {
        self.measurement.interval_ns(index)
    }

    /// How long the thread at `index` is expected to measure ([`RunLength::expected_ns`] at
    /// its interval and `--interval-step`); None for a run without an end.
    pub(crate) fn thread_expected_ns(&self, index: usize) -> Option<u64> {
        self.length
            .expected_ns(self.thread_interval_ns(index), self.interval_step_ns())
    }

    /// What each wakeup adds to a measuring thread's period (`--interval-step`); 0 for noise.
    pub(crate) fn interval_step_ns(&self) -> u64 {
        self.measurement.interval_step_ns()
    }

    /// The deadline of the thread at `index`: --deadline, or its interval (a noise thread's:
    /// its threshold).
    pub(crate) fn thread_deadline_ns(&self, index: usize) -> u64 {
        self.measurement
            .deadline_ns()
            .unwrap_or_else(|| self.thread_interval_ns(index))
    }

    /// The clock of the run's timeline (due times, interval starts): the wake method's for a
    /// latency run; CLOCK_MONOTONIC for a noise run, whose loop converts every gap to it.
    pub fn clock(&self) -> Clock {
        self.measurement.clock()
    }

    /// The wake method whose row the system checks and the trace's timer filter use. A noise
    /// run sleeps on no timer; it keeps the default method's row, as it always has, so that
    /// its trace sees timer events as before.
    pub(crate) fn wake_method(&self) -> &'static WakeMethod {
        self.measurement.wake_method()
    }

    /// The loop the thread at `index` runs, with what its kind needs of the plan.
    pub(crate) fn thread_loop(&self, index: usize) -> Box<dyn MeasuringLoop> {
        self.measurement.thread_loop(measurement::ThreadSlot {
            interval_ns: self.thread_interval_ns(index),
            loops: self.length.loops(),
            sender: self.thread_sender(index),
            inversion: self.thread_inversion(index),
        })
    }

    /// What the recorder counts for the tail figures of the thread at `index`: the `--under`
    /// thresholds and its deadline, the thresholds of `under(...)` and `max<` budget
    /// clauses (for their exact counts and the run-length bound), the k of `firm(m,k)` clauses,
    /// the thresholds of `spikes(...)` clauses, the scenario's phases (the tail fit's
    /// stationarity segments).
    pub(crate) fn thread_tail_plan(&self, index: usize) -> TailPlan {
        use crate::analysis::metric::Metric;
        let clauses = self.budget.iter().flat_map(|b| &b.clauses);
        let mut within_ns = self.under_ns.clone();
        within_ns.push(self.thread_deadline_ns(index));
        within_ns.extend(clauses.clone().filter_map(|c| match c.metric {
            Metric::Under(t) => Some(t),
            Metric::Max => Some(c.limit as u64),
            _ => None,
        }));
        within_ns.sort_unstable();
        within_ns.dedup();
        let run_length_ns = clauses
            .clone()
            .filter(|c| c.metric == Metric::Max)
            .map(|c| c.limit as u64)
            .min()
            .unwrap_or(self.thread_deadline_ns(index));
        let mut firm_k: Vec<u64> = clauses
            .clone()
            .filter_map(|c| match c.metric {
                Metric::Firm(k) => Some(k),
                _ => None,
            })
            .collect();
        firm_k.sort_unstable();
        firm_k.dedup();
        let mut spike_ns: Vec<u64> = clauses
            .filter_map(|c| match c.metric {
                Metric::Spikes(t) | Metric::SpikeRate(t) => Some(t),
                _ => None,
            })
            .collect();
        spike_ns.sort_unstable();
        spike_ns.dedup();
        TailPlan {
            interval_ns: self.thread_interval_ns(index),
            noise: self.measurement.kind().spec().time_lost,
            within_ns,
            firm_k,
            spike_ns,
            run_length_ns: Some(run_length_ns),
            phases: self
                .scenario
                .iter()
                .flat_map(|s| &s.phases)
                .map(|p| crate::analysis::tails::evt::PhaseSpan {
                    label: p.label.clone(),
                    start_ns: p.start_ns,
                    end_ns: p.end_ns,
                })
                .collect(),
        }
    }

    /// Samples of the thread at `index` later than this are explained (`--trace`).
    pub(crate) fn thread_explain_above_ns(&self, index: usize) -> u64 {
        self.explain_above_ns
            .unwrap_or_else(|| self.thread_deadline_ns(index))
    }

    /// Where and how the sender of the thread at `index` runs (IPC wake methods only): pinned
    /// to its CPU, under the run's policy at the senders' priority.
    pub(crate) fn thread_sender(
        &self,
        index: usize,
    ) -> Option<crate::measure::wake::ipc::SenderPlan> {
        let spec = self.measurement.sender()?;
        let policy = match self.thread_policy(index) {
            Policy::Fifo(_) => Policy::Fifo(spec.priority),
            Policy::RoundRobin(_) => Policy::RoundRobin(spec.priority),
            other => other,
        };
        Some(crate::measure::wake::ipc::SenderPlan {
            cpu: Some(spec.cpus[index]),
            policy,
            between: spec.between,
            pace: spec.pace,
            lock_memory: self.mlock,
        })
    }

    /// The holder and the hog of the thread at `index` (`--wake pi-mutex` only): pinned to its
    /// CPU, under the run's policy at their priorities.
    pub(crate) fn thread_inversion(
        &self,
        index: usize,
    ) -> Option<crate::measure::wake::inversion::InversionPlan> {
        let spec = self.measurement.inversion()?;
        let at = |priority| match self.thread_policy(index) {
            Policy::RoundRobin(_) => Policy::RoundRobin(priority),
            _ => Policy::Fifo(priority),
        };
        Some(crate::measure::wake::inversion::InversionPlan {
            cpu: Some(self.cpus[index]),
            holder: at(spec.holder_priority),
            hog: at(spec.hog_priority),
            hold_ns: spec.hold_ns,
            hog_ns: spec.hog_ns,
            inherit: spec.inherit,
        })
    }

    /// The scheduling policy of the thread at `index`. SCHED_DEADLINE reserves a tenth of the
    /// period (at least 10 us, at most the period): far more than one wakeup needs, well within
    /// the kernel's default 95% real-time bandwidth for any number of threads per CPU.
    pub(crate) fn thread_policy(&self, index: usize) -> Policy {
        match self.policy {
            PolicyKind::Fifo => Policy::Fifo(self.priority),
            PolicyKind::Rr => Policy::RoundRobin(self.priority),
            PolicyKind::Other => Policy::Other,
            PolicyKind::Batch => Policy::Batch,
            PolicyKind::Idle => Policy::Idle,
            PolicyKind::Deadline => {
                let period = self.thread_interval_ns(index);
                Policy::Deadline {
                    runtime_ns: deadline_runtime_ns(period),
                    deadline_ns: period,
                    period_ns: period,
                }
            }
        }
    }
}

/// The SCHED_DEADLINE runtime for a period (see [`RunPlan::thread_policy`]).
pub(crate) fn deadline_runtime_ns(period_ns: u64) -> u64 {
    (period_ns / 10).clamp(10_000.min(period_ns), period_ns)
}

/// Every thread's period, at the start and (with --loops) after its last step, stays within
/// [`MAX_PERIOD_NS`], and the run within [`MAX_DURATION_NS`]: checked arithmetic here, so that
/// the measuring loop's plain arithmetic cannot overflow (a period wrapping to 0 would divide
/// by zero in the loop, a huge one would sleep past the run's end).
pub(crate) fn check_periods(
    cpus: &[usize],
    interval: u64,
    distance: u64,
    step: u64,
    length: RunLength,
) -> Result<()> {
    let limit = format_ns(MAX_PERIOD_NS);
    if interval > MAX_PERIOD_NS {
        return Err(Failure::usage(format!(
            "--interval {}: above the longest period, {limit}",
            format_ns(interval)
        )));
    }
    if step > MAX_PERIOD_NS {
        return Err(Failure::usage(format!(
            "--interval-step {}: above the longest period, {limit}",
            format_ns(step)
        )));
    }
    if let RunLength::Duration(d) = length
        && d > MAX_DURATION_NS
    {
        return Err(Failure::usage(format!(
            "--duration {}: above the longest run, 3650d (for an endless measurement, stop the run with SIGINT or SIGTERM)",
            format_ns(d)
        )));
    }
    for (index, cpu) in cpus.iter().enumerate() {
        let period = (index as u64)
            .checked_mul(distance)
            .and_then(|d| d.checked_add(interval))
            .filter(|p| *p <= MAX_PERIOD_NS)
            .ok_or_else(|| {
                Failure::usage(format!(
                    "--distance {}: the thread on CPU {cpu} (thread {index}) would sleep interval + {index} x distance, above the longest period, {limit}; use a smaller --distance or fewer CPUs",
                    format_ns(distance)
                ))
            })?;
        if let RunLength::Loops(n) = length {
            // The sleep before wakeup k lasts period + k x step (FirmTimers -i).
            (n - 1)
                .checked_mul(step)
                .and_then(|s| s.checked_add(period))
                .filter(|p| *p <= MAX_PERIOD_NS)
                .ok_or_else(|| {
                    Failure::usage(format!(
                        "--interval-step {}: with --loops {n}, the thread on CPU {cpu} would reach a period above the longest, {limit}; use a smaller step or fewer loops",
                        format_ns(step)
                    ))
                })?;
        }
    }
    Ok(())
}

/// The wake method's rules (its row in [`WAKE_METHODS`]) against the other options; returns
/// the clock the run measures on.
pub(crate) fn check_wake(
    wake: &WakeMethod,
    chosen_clock: Clock,
    cpus: &[usize],
    interval: u64,
    distance: u64,
    step: u64,
) -> Result<Clock> {
    let name = wake.name;
    if let Some(resource) = wake.per_process
        && cpus.len() > 1
    {
        return Err(Failure::usage(format!(
            "--wake {name} serves one measuring thread (the process has one {resource}), but --cpus selects {} CPUs; pass --cpus N with one CPU",
            cpus.len()
        )));
    }
    let Some(clock) = wake.clock(chosen_clock) else {
        let sleeps_on = match wake.clocks {
            ClockUse::OneOf(clocks) => or_list(clocks.iter().map(|c| c.name())),
            ClockUse::Own(own) => own.name().to_string(),
        };
        let others = methods_where(|m| m.clock(chosen_clock) == Some(chosen_clock));
        return Err(Failure::usage(format!(
            "--wake {name} always sleeps on the {sleeps_on} clock; drop --clock {}, or use {others}",
            chosen_clock.name()
        )));
    };
    if step > 0 && wake.schedule == Schedule::Periodic {
        return Err(Failure::usage(format!(
            "--interval-step needs a wake method that is armed every cycle, and {name} is a fixed-period timer; use {}",
            methods_where(|m| m.schedule != Schedule::Periodic)
        )));
    }
    if wake.whole_microseconds {
        for (flag, v) in [
            ("--interval", interval),
            ("--distance", distance),
            ("--interval-step", step),
        ] {
            if v % 1_000 != 0 {
                return Err(Failure::usage(format!(
                    "{flag} {v}ns: --wake {name} takes a timeval, whole microseconds only; round it to a multiple of 1us"
                )));
            }
        }
    }
    if let Some(rule) = wake.interval_rule {
        rule(interval).map_err(Failure::usage)?;
    }
    Ok(clock)
}

/// The names of the wake methods that satisfy `keep`, as "a, b or c".
fn methods_where(keep: impl Fn(&WakeMethod) -> bool) -> String {
    or_list(WAKE_METHODS.iter().filter(|m| keep(m)).map(|m| m.name))
}

/// "a", "a or b", "a, b or c".
fn or_list<'a>(items: impl Iterator<Item = &'a str>) -> String {
    let items: Vec<&str> = items.collect();
    match items.split_last() {
        None => String::new(),
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

/// What the recorder counts for one thread, fixed before the run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TailPlan {
    /// The thread's period (the resolution of its spike times); a noise thread's threshold.
    pub interval_ns: u64,
    /// A noise thread (`jitterlab noise`): every sample is a gap of its own, so consecutive
    /// samples over a threshold are separate events (not one run of late wakeups), and the
    /// exposure of the rates is the time the loop measured, not the time up to its last
    /// sample.
    pub noise: bool,
    /// `--under` thresholds (and the limits of `under(...)` and `max<` budget clauses).
    pub(crate) within_ns: Vec<u64>,
    /// The k of each `firm(m,k)` budget clause.
    pub(crate) firm_k: Vec<u64>,
    /// The thresholds of `spikes(...)` budget clauses (spikes over the deadline are always
    /// counted).
    pub spike_ns: Vec<u64>,
    /// The scenario's phases: the stretches whose tails must agree before the tail is
    /// extrapolated (without phases, the run's halves).
    pub phases: Vec<crate::analysis::tails::evt::PhaseSpan>,
    /// The limit the live view's "how long to run" line answers for (the smallest `max<`
    /// budget limit, else the deadline); counted in `within_ns`.
    pub(crate) run_length_ns: Option<u64>,
}

//! What a plan measures ([`Measurement`]): a latency run's wakeups, with its IPC senders or its
//! priority-inversion scenario, or a noise run's loop.

use super::{NoiseSpec, RunKind};
use crate::measure::wake::inversion::InversionPlan;
use crate::measure::wake::ipc::SenderPlan;
use crate::measure::{Clock, MeasureKind, WakeMethod, WakeupPlan};

/// What a run measures: the kind, with the settings only that kind has. Everything a kind
/// needs is here, so that no field of [`super::RunPlan`] is unused by one kind or overwritten by
/// another. A new kind is one variant with its spec type; [`Measurement::kind`] names it for
/// run.json, whose [`RunKind`] gives it its words and figures (format/kind/).
#[derive(Debug, Clone)]
pub enum Measurement {
    /// `jitterlab run`: how late each wakeup comes.
    Latency(LatencySpec),
    /// `jitterlab noise`: the gaps in a loop that never sleeps.
    Noise(NoiseSpec),
}

/// A latency run's wakeups (`jitterlab run`, `monitor`, `sweep`).
#[derive(Debug, Clone)]
pub struct LatencySpec {
    pub wake: &'static WakeMethod,
    /// The clock due times and wakeups are read from: `--clock`, or the wake method's own.
    pub clock: Clock,
    /// The first thread's period; thread k's is `interval_ns + k * distance_ns`.
    pub interval_ns: u64,
    pub(crate) distance_ns: u64,
    /// `--interval-step`: added to a thread's period after every wakeup.
    pub interval_step_ns: u64,
    /// `--deadline`; None: each thread's interval.
    pub deadline_ns: Option<u64>,
    /// IPC wake methods ([`crate::measure::wake::Schedule::Sender`]) only: where and how each thread's sender runs.
    pub sender: Option<SenderSpec>,
    /// `--wake pi-mutex` only: the holder and the hog of each measuring thread.
    pub inversion: Option<InversionSpec>,
}

impl Measurement {
    /// The kind run.json stores, which gives the run's figures their words.
    pub fn kind(&self) -> RunKind {
        match self {
            Measurement::Latency(_) => RunKind::Latency,
            Measurement::Noise(_) => RunKind::Noise,
        }
    }

    /// The latency settings; None for a noise run.
    pub fn latency(&self) -> Option<&LatencySpec> {
        match self {
            Measurement::Latency(spec) => Some(spec),
            Measurement::Noise(_) => None,
        }
    }

    /// The IPC senders' settings: a latency run with an IPC wake method only.
    pub(crate) fn sender(&self) -> Option<&SenderSpec> {
        self.latency()?.sender.as_ref()
    }

    /// The holder and the hog of each measuring thread: a `--wake pi-mutex` run only.
    pub(crate) fn inversion(&self) -> Option<InversionSpec> {
        self.latency()?.inversion
    }

    /// The period of the measuring thread at `index` (cyclictest -d). A noise thread has no
    /// period; run.json stores its threshold there (the least a gap can be; docs/noise.md).
    pub(crate) fn interval_ns(&self, index: usize) -> u64 {
        match self {
            Measurement::Latency(l) => l.interval_ns + index as u64 * l.distance_ns,
            Measurement::Noise(n) => n.threshold_ns,
        }
    }

    /// What each wakeup adds to a measuring thread's period (`--interval-step`); 0 for noise.
    pub(crate) fn interval_step_ns(&self) -> u64 {
        match self {
            Measurement::Latency(l) => l.interval_step_ns,
            Measurement::Noise(_) => 0,
        }
    }

    /// The deadline every thread shares: `--deadline` (None: each thread's interval, which
    /// [`super::RunPlan::thread_deadline_ns`] then takes), a noise thread's threshold.
    pub(crate) fn deadline_ns(&self) -> Option<u64> {
        match self {
            Measurement::Latency(l) => l.deadline_ns,
            Measurement::Noise(n) => Some(n.threshold_ns),
        }
    }

    /// The clock of the run's timeline (due times, interval starts): the wake method's for a
    /// latency run; CLOCK_MONOTONIC for a noise run, whose loop converts every gap to it.
    pub(crate) fn clock(&self) -> Clock {
        match self {
            Measurement::Latency(l) => l.clock,
            Measurement::Noise(_) => Clock::Monotonic,
        }
    }

    /// The wake method whose row the system checks and the trace's timer filter use. A noise
    /// run sleeps on no timer; it keeps the default method's row, as it always has, so that
    /// its trace sees timer events as before.
    pub(crate) fn wake_method(&self) -> &'static WakeMethod {
        match self {
            Measurement::Latency(l) => l.wake,
            Measurement::Noise(_) => WakeMethod::default_method(),
        }
    }

    /// What a measuring thread runs, for its own loop: at `interval_ns`, for `loops`, with
    /// its sender and its inversion's helpers (asked only of a latency run).
    pub(crate) fn measure_kind(
        &self,
        interval_ns: u64,
        loops: Option<u64>,
        sender: impl FnOnce() -> Option<SenderPlan>,
        inversion: impl FnOnce() -> Option<InversionPlan>,
    ) -> MeasureKind {
        match self {
            Measurement::Latency(l) => MeasureKind::Latency(WakeupPlan {
                wake: l.wake,
                clock: l.clock,
                interval_ns,
                interval_step_ns: l.interval_step_ns,
                loops,
                sender: sender(),
                inversion: inversion(),
            }),
            Measurement::Noise(n) => MeasureKind::Noise(*n),
        }
    }

    /// The noise settings; None for a latency run.
    pub fn noise(&self) -> Option<&NoiseSpec> {
        match self {
            Measurement::Noise(spec) => Some(spec),
            Measurement::Latency(_) => None,
        }
    }
}

/// The priority-inversion scenario of a `--wake pi-mutex` run, resolved
/// (measure/wake/inversion.rs). The helpers run under the run's policy, below the measuring
/// threads' priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InversionSpec {
    pub(crate) hold_ns: u64,
    pub(crate) hog_ns: u64,
    /// PTHREAD_PRIO_INHERIT; false for `--no-pi`.
    pub inherit: bool,
    pub(crate) holder_priority: i32,
    pub(crate) hog_priority: i32,
}

/// `--sender-cpu`, as given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SenderCpu {
    /// The receiver's CPU (the default).
    Same,
    /// The next online CPU after the receiver's.
    Other,
    Cpu(usize),
}

impl SenderCpu {
    /// The name run.json stores (`same`, `other`, or the number).
    pub fn name(self) -> String {
        match self {
            SenderCpu::Same => "same".into(),
            SenderCpu::Other => "other".into(),
            SenderCpu::Cpu(n) => n.to_string(),
        }
    }
}

/// The senders of an IPC run, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SenderSpec {
    pub cpu: SenderCpu,
    /// The sender CPU of each measuring thread, in `cpus` order.
    pub cpus: Vec<usize>,
    /// The senders' priority under the run's policy (0 for the kinds without one).
    pub priority: i32,
    /// `--ipc-between`: sender threads or sender processes.
    pub between: crate::measure::wake::ipc::Between,
    /// `--ipc-pace`: what wakes each sender for a due time.
    pub pace: crate::measure::wake::ipc::Pace,
}

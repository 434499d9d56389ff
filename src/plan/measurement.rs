//! What a plan measures ([`Measurement`]): a latency run's wakeups, with its IPC senders or its
//! priority-inversion scenario, or a noise run's loop.

use super::{NoiseSpec, RunKind};
use crate::measure::{Clock, WakeMethod};

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

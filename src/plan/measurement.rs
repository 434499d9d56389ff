//! What a plan measures ([`Measurement`]): one measured kind's settings behind the
//! [`MeasuredKind`] trait, implemented in `plan/build/`: once for every kind measured by its
//! period alone, from what its file of `format/kind/` declares (`period.rs`), and by each kind
//! with options of its own beside their resolution (the latency kind with its IPC senders or
//! its priority-inversion scenario: `latency.rs`; the noise loop: `noise.rs`). Nothing here or
//! in [`super::RunPlan`] asks which kind it is.

use super::{NoiseSpec, RunKind};
use crate::measure::wake::inversion::InversionPlan;
use crate::measure::wake::ipc::SenderPlan;
use crate::measure::{Clock, MeasuringLoop, WakeMethod};
use std::any::Any;
use std::sync::Arc;

/// A measured kind: its settings, and what every part of a run asks of them. A kind measured
/// by its period alone declares its clock and its loop in its file of `format/kind/`, and one
/// type implements this for every such kind (`plan/build/period.rs`); a kind with options of
/// its own implements it beside their resolution, in its file of `plan/build/` (`latency.rs`,
/// `noise.rs`).
pub(crate) trait MeasuredKind: std::fmt::Debug + Send + Sync + 'static {
    /// The kind run.json stores, which gives the run's figures their words.
    fn kind(&self) -> RunKind;

    /// The period of the measuring thread at `index` (cyclictest -d). A kind without a period
    /// stores its own figure there (a noise run its threshold, the least a gap can be).
    fn interval_ns(&self, index: usize) -> u64;

    /// What each wakeup adds to a measuring thread's period (`--interval-step`).
    fn interval_step_ns(&self) -> u64 {
        0
    }

    /// The deadline every thread shares (None: each thread's interval, which
    /// [`super::RunPlan::thread_deadline_ns`] then takes).
    fn deadline_ns(&self) -> Option<u64>;

    /// The clock of the run's timeline (due times, interval starts).
    fn clock(&self) -> Clock;

    /// The wake method whose row the system checks and the trace's timer filter use. A kind
    /// that sleeps on no timer keeps the default method's row, so that its trace sees timer
    /// events as before.
    fn wake_method(&self) -> &'static WakeMethod {
        WakeMethod::default_method()
    }

    /// The senders of an IPC wake method, if the kind has them.
    fn sender(&self) -> Option<&SenderSpec> {
        None
    }

    /// The holder and the hog of each measuring thread, if the kind has them.
    fn inversion(&self) -> Option<InversionSpec> {
        None
    }

    /// The loop one measuring thread runs.
    fn thread_loop(&self, thread: ThreadSlot) -> Box<dyn MeasuringLoop>;

    /// The settings as their own type, for the typed views of [`Measurement`].
    fn as_any(&self) -> &dyn Any;
}

/// What the plan resolved for one measuring thread, for its kind's loop.
#[derive(Debug)]
pub(crate) struct ThreadSlot {
    /// Its period ([`MeasuredKind::interval_ns`] at its index).
    pub(crate) interval_ns: u64,
    /// `--loops`: stop after this many wakeups.
    pub(crate) loops: Option<u64>,
    /// Its IPC sender (a kind with senders only).
    pub(crate) sender: Option<SenderPlan>,
    /// Its inversion's helpers (a kind with an inversion scenario only).
    pub(crate) inversion: Option<InversionPlan>,
}

/// What a run measures: one measured kind with its settings (the `MeasuredKind` trait). Everything a
/// kind needs is there, so that no field of [`super::RunPlan`] is unused by one kind or
/// overwritten by another; [`Measurement::kind`] names it for run.json, whose [`RunKind`] gives
/// it its words and figures (format/kind/).
#[derive(Debug, Clone)]
pub struct Measurement(Arc<dyn MeasuredKind>);

impl Measurement {
    /// A measurement of `kind`'s settings.
    pub(crate) fn of(kind: impl MeasuredKind) -> Measurement {
        Measurement(Arc::new(kind))
    }

    /// The kind run.json stores, which gives the run's figures their words.
    pub fn kind(&self) -> RunKind {
        self.0.kind()
    }

    /// The latency settings; None for another kind.
    pub fn latency(&self) -> Option<&LatencySpec> {
        self.0.as_any().downcast_ref()
    }

    /// The noise settings; None for another kind.
    pub fn noise(&self) -> Option<&NoiseSpec> {
        self.0.as_any().downcast_ref()
    }

    /// The IPC senders' settings: a latency run with an IPC wake method only.
    pub(crate) fn sender(&self) -> Option<&SenderSpec> {
        self.0.sender()
    }

    /// The holder and the hog of each measuring thread: a `--wake pi-mutex` run only.
    pub(crate) fn inversion(&self) -> Option<InversionSpec> {
        self.0.inversion()
    }

    /// The period of the measuring thread at `index` ([`MeasuredKind::interval_ns`]).
    pub(crate) fn interval_ns(&self, index: usize) -> u64 {
        self.0.interval_ns(index)
    }

    /// What each wakeup adds to a measuring thread's period (`--interval-step`).
    pub(crate) fn interval_step_ns(&self) -> u64 {
        self.0.interval_step_ns()
    }

    /// The deadline every thread shares ([`MeasuredKind::deadline_ns`]).
    pub(crate) fn deadline_ns(&self) -> Option<u64> {
        self.0.deadline_ns()
    }

    /// The clock of the run's timeline ([`MeasuredKind::clock`]).
    pub(crate) fn clock(&self) -> Clock {
        self.0.clock()
    }

    /// The wake method whose row the system checks ([`MeasuredKind::wake_method`]).
    pub(crate) fn wake_method(&self) -> &'static WakeMethod {
        self.0.wake_method()
    }

    /// The loop one measuring thread runs ([`MeasuredKind::thread_loop`]).
    pub(crate) fn thread_loop(&self, thread: ThreadSlot) -> Box<dyn MeasuringLoop> {
        self.0.thread_loop(thread)
    }
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

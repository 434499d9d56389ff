//! Options to a validated [`RunPlan`]: the one place a run is planned, whichever command asks
//! (`run`, `noise`, `monitor`, `sweep`, the cyclictest, oslat and timerlat drop-ins). It takes
//! the plain option groups of [`crate::plan::options`], never a command line, and finds every
//! bad input (exit 2, the option and its value named, what is accepted) or what the system
//! cannot do (exit 3) before any thread starts or any file is made.
//!
//! One file per concern: the groups every kind shares (`shared.rs`), the latency kind
//! (`latency.rs`) with its IPC senders (`sender.rs`) and inversion scenario (`inversion.rs`),
//! the noise kind (`noise.rs`), the shared builder of a kind measured by its period alone
//! (`period.rs`), and the actions (`actions.rs`); and here the table of the kinds `jitterlab
//! run --kind` measures ([`MEASURED_KINDS`], made from `kinds!`).

mod actions;
mod inversion;
mod latency;
mod noise;
mod period;
mod sender;
mod shared;

use crate::error::{Failure, Result};
use crate::format::kind::{RunMeasured, RunSettings};
use crate::plan::actions::ActionPlan;
use crate::plan::options::{ActionOptions, LatencyRunOptions, NoiseRunOptions};
use crate::plan::{RunKind, RunPlan};
use std::sync::LazyLock;

#[cfg(test)]
pub(crate) use noise::DEFAULT_RING_GAPS;
pub(crate) use noise::RtThrottling;
pub(crate) use shared::own_cpus;

/// This system's online CPUs, which every plan is checked against (exit 3 if unreadable).
pub(crate) fn online() -> Result<Vec<usize>> {
    crate::cpulist::online_cpus().map_err(Failure::system)
}

/// A latency run without actions on `online` (a sweep level, a drop-in).
pub(crate) fn latency(options: &LatencyRunOptions, online: &[usize]) -> Result<RunPlan> {
    latency::resolve_latency(options, online)
}

/// A measured kind that `jitterlab run --kind` measures: a kind of `kinds!` whose file says so
/// (`format::kind::Kind::run`), with its name, its line of help and where its settings come
/// from. The table is made from `kinds!` ([`RunKind::ALL`]), so that a kind measured by its
/// period alone (its threads from `--cpus` and the scheduling options, its length, loads,
/// output, trace and budget from the shared groups) is its file and its row there, and
/// nothing here: its plan is made by the shared builder (`period.rs`) from what its file
/// declares. A kind with options of its own has their resolution here (`run`'s latency group:
/// `latency.rs`), or a command of its own (`noise`: a gap threshold, a loop clock, another
/// default policy).
pub(crate) struct MeasuredKindRow {
    /// `--kind`'s value: the kind's name.
    pub(crate) name: &'static str,
    /// What `run --help` says of it.
    pub(crate) help: &'static str,
    /// The kind.
    kind: RunKind,
    /// Where its settings come from.
    settings: &'static RunSettings,
}

impl std::fmt::Debug for MeasuredKindRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// The kinds `jitterlab run --kind` measures, the default first: the kinds of `kinds!` whose
/// file has a [`RunMeasured`], in the order of its rows.
pub(crate) static MEASURED_KINDS: LazyLock<Vec<MeasuredKindRow>> = LazyLock::new(|| {
    RunKind::ALL
        .iter()
        .filter_map(|&kind| {
            let run: &'static RunMeasured = kind.spec().run.as_ref()?;
            Some(MeasuredKindRow {
                name: kind.name(),
                help: run.help,
                kind,
                settings: &run.settings,
            })
        })
        .collect()
});

impl MeasuredKindRow {
    /// The default kind (`kinds!`'s `#[default]` row, latency), which `run` measures without
    /// `--kind`.
    pub(crate) fn default_kind() -> &'static MeasuredKindRow {
        Self::named(RunKind::default().name()).expect("the default kind is measured by run")
    }

    /// The row of `--kind name`.
    pub(crate) fn named(name: &str) -> Option<&'static MeasuredKindRow> {
        MEASURED_KINDS.iter().find(|k| k.name == name)
    }

    /// Its plan from `run`'s groups on the online CPUs.
    fn plan(&self, options: &LatencyRunOptions, online: &[usize]) -> Result<RunPlan> {
        match *self.settings {
            RunSettings::LatencyGroup => latency::resolve_latency(options, online),
            RunSettings::Period { clock, thread_loop } => {
                period::resolve_period(options, online, self.kind, clock, thread_loop)
            }
        }
    }
}

/// A run of `options.kind` (latency unless `run --kind` says otherwise) with its actions on
/// `online` (`run`, `monitor`).
pub(crate) fn run(
    options: &LatencyRunOptions,
    actions: &ActionOptions,
    online: &[usize],
) -> Result<RunPlan> {
    let mut plan = options.kind.plan(options, online)?;
    plan.actions = self::actions(actions)?;
    Ok(plan)
}

/// The actions alone, checked once for every level of a sweep.
pub(crate) fn actions(options: &ActionOptions) -> Result<ActionPlan> {
    actions::resolve_actions(options)
}

/// A noise run on `online`, with the kernel's RT `throttling`.
pub(crate) fn noise(
    options: &NoiseRunOptions,
    throttling: Option<RtThrottling>,
    online: &[usize],
) -> Result<RunPlan> {
    noise::resolve_noise(options, throttling, online)
}

//! Options to a validated [`RunPlan`]: the one place a run is planned, whichever command asks
//! (`run`, `noise`, `monitor`, `sweep`, the cyclictest, oslat and timerlat drop-ins). It takes
//! the plain option groups of [`crate::plan::options`], never a command line, and finds every
//! bad input (exit 2, the option and its value named, what is accepted) or what the system
//! cannot do (exit 3) before any thread starts or any file is made.
//!
//! One file per concern: the groups every kind shares (`shared.rs`), the latency kind
//! (`latency.rs`) with its IPC senders (`sender.rs`) and inversion scenario (`inversion.rs`),
//! the noise kind (`noise.rs`), and the actions (`actions.rs`); and here the table of the kinds
//! `jitterlab run --kind` measures ([`MEASURED_KINDS`]).

mod actions;
mod inversion;
mod latency;
mod noise;
mod sender;
mod shared;

use crate::error::{Failure, Result};
use crate::plan::RunPlan;
use crate::plan::actions::ActionPlan;
use crate::plan::options::{ActionOptions, LatencyRunOptions, NoiseRunOptions};

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

/// A measured kind that `jitterlab run` drives from its own options (`--kind`): its name, one
/// line of help, and how its plan is built from `run`'s option groups. A new measured kind whose
/// settings those options give (its period from `--interval`, its threads from `--cpus` and the
/// scheduling options, its length, loads, output, trace and budget from the shared groups) is
/// one row here, beside its plan file: it needs no command of its own, no clap group and no
/// file in `cli/` or `commands/`. A kind with options of its own (`noise`: a gap threshold, a
/// loop clock, another default policy) keeps its command.
pub(crate) struct MeasuredKindRow {
    /// `--kind`'s value.
    pub(crate) name: &'static str,
    /// What `run --help` says of it.
    pub(crate) help: &'static str,
    /// Its plan from `run`'s groups on the online CPUs.
    plan: fn(&LatencyRunOptions, &[usize]) -> Result<RunPlan>,
}

impl std::fmt::Debug for MeasuredKindRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// The kinds `jitterlab run --kind` measures, the default first.
pub(crate) static MEASURED_KINDS: &[MeasuredKindRow] = &[MeasuredKindRow {
    name: "latency",
    help: "how late each wakeup of the wake method comes (the default)",
    plan: latency::resolve_latency,
}];

impl MeasuredKindRow {
    /// The default kind, `latency`.
    pub(crate) fn default_kind() -> &'static MeasuredKindRow {
        &MEASURED_KINDS[0]
    }

    /// The row of `--kind name`.
    pub(crate) fn named(name: &str) -> Option<&'static MeasuredKindRow> {
        MEASURED_KINDS.iter().find(|k| k.name == name)
    }
}

/// A run of `options.kind` (latency unless `run --kind` says otherwise) with its actions on
/// `online` (`run`, `monitor`).
pub(crate) fn run(
    options: &LatencyRunOptions,
    actions: &ActionOptions,
    online: &[usize],
) -> Result<RunPlan> {
    let mut plan = (options.kind.plan)(options, online)?;
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

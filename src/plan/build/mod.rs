//! Options to a validated [`RunPlan`]: the one place a run is planned, whichever command asks
//! (`run`, `noise`, `monitor`, `sweep`, the cyclictest, oslat and timerlat drop-ins). It takes
//! the plain option groups of [`crate::plan::options`], never a command line, and finds every
//! bad input (exit 2, the option and its value named, what is accepted) or what the system
//! cannot do (exit 3) before any thread starts or any file is made.
//!
//! One file per concern: the groups every kind shares (`shared.rs`), the latency kind
//! (`latency.rs`) with its IPC senders (`sender.rs`) and inversion scenario (`inversion.rs`),
//! the noise kind (`noise.rs`), and the actions (`actions.rs`).

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

/// A latency run with its actions on `online` (`run`, `monitor`).
pub(crate) fn run(
    options: &LatencyRunOptions,
    actions: &ActionOptions,
    online: &[usize],
) -> Result<RunPlan> {
    let mut plan = latency::resolve_latency(options, online)?;
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

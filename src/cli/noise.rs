//! `jitterlab noise`'s options: the groups it shares with `run`, and what a loop that never
//! sleeps has instead of the latency group: its policy (default other), its clock and the gap
//! threshold (docs/noise.md).

// Doc comments are clap's help text; `<name>` is a placeholder, not HTML.
#![allow(rustdoc::invalid_html_tags)]

use super::groups::{
    BudgetArgs, CpuArgs, LengthArgs, LoadsArgs, NOISE, OutputArgs, SamplesAndJsonArgs,
    ScenarioArgs, TraceArgs,
};
use crate::measure::PolicyKind;
use clap::Args;
use clap::builder::{PossibleValuesParser, TypedValueParser};

#[derive(Debug, Args, Clone)]
pub struct NoiseArgs {
    #[command(flatten)]
    pub length: LengthArgs,

    #[command(flatten)]
    pub scenario: ScenarioArgs,

    #[command(flatten)]
    pub cpus: CpuArgs,

    #[command(flatten)]
    pub noise: NoiseMeasurementArgs,

    #[command(flatten)]
    pub loads: LoadsArgs,

    #[command(flatten)]
    pub output: OutputArgs,

    #[command(flatten)]
    pub(crate) samples_and_json: SamplesAndJsonArgs,

    #[command(flatten)]
    pub trace: TraceArgs,

    #[command(flatten)]
    pub budget: BudgetArgs,
}

// What the spinning loop reads and what it counts as a gap.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = NOISE)]
pub struct NoiseMeasurementArgs {
    /// A gap between two clock reads longer than this is a noise event (at least 100ns).
    #[arg(
        long,
        default_value = crate::plan::options::DEFAULT_THRESHOLD,
        value_name = "DURATION",
        allow_hyphen_values = true
    )]
    pub threshold: String,

    /// What the loop reads: tsc (x86_64) or cntvct (aarch64), the CPU's counter read directly
    /// as oslat does, calibrated against CLOCK_MONOTONIC; monotonic (the vDSO); auto: the
    /// counter where the kernel keeps time with it, else monotonic (docs/noise.md).
    #[arg(
        long,
        default_value = crate::plan::options::DEFAULT_NOISE_CLOCK,
        value_name = "CLOCK",
        value_parser = PossibleValuesParser::new(["auto", "tsc", "cntvct", "monotonic"])
    )]
    pub clock: String,

    /// Scheduling policy of the spinning threads. Default other, as oslat's (no -f); with fifo
    /// or rr and RT throttling on, long gaps are counted as throttling (docs/noise.md).
    #[arg(long, default_value = PolicyKind::Other.name(), value_parser = noise_policy_value())]
    pub policy: PolicyKind,
}

/// `noise --policy`: the policies a thread that never sleeps can have (deadline needs sleeps,
/// batch and idle measure nothing oslat users ask for).
fn noise_policy_value() -> impl TypedValueParser<Value = PolicyKind> {
    let kinds = [PolicyKind::Other, PolicyKind::Fifo, PolicyKind::Rr];
    PossibleValuesParser::new(kinds.map(PolicyKind::name))
        .map(|name| PolicyKind::named(&name).expect("clap admits only the kinds' names"))
}

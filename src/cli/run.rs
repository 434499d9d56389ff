//! `jitterlab run`'s options: those of every level of a `jitterlab sweep` (the shared groups,
//! the latency group, and what only a latency run that ends takes: `--loops`,
//! `--interval-step`, `--samples-format`, `--summary-every`), and a scenario, which a sweep has
//! no use for (it sweeps one --load).

// Doc comments are clap's help text; `<name>` is a placeholder, not HTML.
#![allow(rustdoc::invalid_html_tags)]

use super::groups::{
    ActionArgs, BudgetArgs, CpuArgs, DryRunArgs, LATENCY, LENGTH, LatencyArgs, LengthArgs,
    LoadsArgs, OUTPUT, OutputArgs, SamplesAndJsonArgs, ScenarioArgs, TraceArgs,
};
use super::values::{loops_value, measured_kind_value, samples_format_value, summary_every_value};
use super::{InversionArgs, SenderArgs};
use crate::format::samples::SampleLogFormat;
use crate::plan::build::MeasuredKindRow;
use clap::{ArgGroup, Args};

// `--loops` and `--scenario` both set the length: one or the other (each already conflicts with
// `--duration`). Named here, where both are flattened, as a sweep has no scenario.
#[derive(Debug, Args, Clone)]
#[command(group = ArgGroup::new("length_set_by").args(["loops", "scenario"]))]
pub struct RunArgs {
    /// What each sample measures: a kind of the measured kinds' table, planned from the options
    /// below (latency, the default: how late each wakeup of --wake comes).
    #[arg(
        long,
        value_name = "KIND",
        help_heading = LATENCY,
        default_value = MeasuredKindRow::default_kind().name,
        value_parser = measured_kind_value()
    )]
    pub(crate) kind: &'static MeasuredKindRow,

    #[command(flatten)]
    pub run: LatencyRunArgs,

    #[command(flatten)]
    pub scenario: ScenarioArgs,

    #[command(flatten)]
    pub actions: ActionArgs,
}

// Every option of a latency run that ends but the scenario: `run`'s, and each sweep level's.
#[derive(Debug, Args, Clone)]
pub struct LatencyRunArgs {
    #[command(flatten)]
    pub length: LengthArgs,

    /// Stop each thread after this many wakeups instead of after a duration.
    #[arg(
        long,
        short = 'l',
        value_name = "N",
        help_heading = LENGTH,
        conflicts_with = "duration",
        allow_negative_numbers = true,
        value_parser = loops_value
    )]
    pub loops: Option<u64>,

    #[command(flatten)]
    pub cpus: CpuArgs,

    #[command(flatten)]
    pub latency: LatencyArgs,

    /// Added to the interval after every wakeup, so the period grows each loop (FirmTimers -i):
    /// the sleep before wakeup n lasts interval + n x step. Only with one-shot wake methods.
    #[arg(
        long,
        value_name = "DURATION",
        help_heading = LATENCY,
        allow_hyphen_values = true
    )]
    pub(crate) interval_step: Option<String>,

    #[command(flatten)]
    pub sender: SenderArgs,

    #[command(flatten)]
    pub inversion: InversionArgs,

    #[command(flatten)]
    pub loads: LoadsArgs,

    #[command(flatten)]
    pub output: OutputArgs,

    #[command(flatten)]
    pub(crate) samples_and_json: SamplesAndJsonArgs,

    /// The layout of samples.bin: 2, compact checksummed blocks of about 4 bytes a sample (the
    /// default), or 1, fixed 40-byte records, for tools that read only format 1.
    #[arg(
        long,
        value_name = "1|2",
        help_heading = OUTPUT,
        value_parser = samples_format_value(),
        requires = "samples"
    )]
    pub samples_format: Option<SampleLogFormat>,

    /// Every N recorded samples of each thread, write their min, mean and max (with their
    /// sequence range, due times and missed periods) to events.jsonl as a `wakeup_summary`
    /// (FirmTimers measure_latency -w); a thread's last block may be shorter. `export --format
    /// summaries` prints them. Refused when the run's summaries would pass the 1 GiB
    /// events.jsonl keeps for them (the smallest N that fits is named); past it (lines
    /// longer than estimated) they are counted in run.json, not written.
    #[arg(
        long,
        value_name = "N",
        help_heading = OUTPUT,
        allow_negative_numbers = true,
        value_parser = summary_every_value
    )]
    pub(crate) summary_every: Option<u64>,

    #[command(flatten)]
    pub check: DryRunArgs,

    #[command(flatten)]
    pub trace: TraceArgs,

    #[command(flatten)]
    pub budget: BudgetArgs,
}

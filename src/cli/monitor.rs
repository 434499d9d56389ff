//! `jitterlab monitor`'s options: where the metrics are served and how long the result
//! directory keeps its segments, and the groups of `run` that apply to a run without end
//! (docs/monitor.md). Not the length (`--duration`, `--loops`, `--scenario`), nor what would
//! grow without bound or never be final (`--interval-step`, `--samples`, `--summary-every`,
//! `--json`): clap refuses those as unexpected arguments.

// Doc comments are clap's help text; `<name>` is a placeholder, not HTML.
#![allow(rustdoc::invalid_html_tags)]

use super::groups::{
    ActionArgs, BudgetArgs, CpuArgs, DryRunArgs, LatencyArgs, LoadsArgs, OutputArgs, TraceArgs,
};
use super::{InversionArgs, SenderArgs};
use clap::Args;

// The monitor's own options come first: clap keeps the heading of the last flattened group for
// the options declared after it.
#[derive(Debug, Args)]
#[command(
    after_help = "The options of `jitterlab run` that apply to a run without end. The run ends on \
                  SIGINT or SIGTERM (exit 0, run.json `interrupted`). Metrics: docs/monitor.md."
)]
pub struct MonitorArgs {
    /// The address /metrics is served on (HOST:PORT). Loopback only unless --listen-public.
    #[arg(long, default_value = "127.0.0.1:9467", value_name = "ADDR")]
    pub listen: String,

    /// Allow a --listen address other than loopback (the metrics then reach the network).
    #[arg(long)]
    pub(crate) listen_public: bool,

    /// The window of the max, quantile and budget metrics: the last this long (e.g. 1m, 5m, 1h).
    #[arg(
        long,
        default_value = "5m",
        value_name = "DURATION",
        allow_hyphen_values = true
    )]
    pub window: String,

    /// Length of each latency.hlog segment (each a complete interval log).
    #[arg(
        long,
        default_value = "1h",
        value_name = "DURATION",
        allow_hyphen_values = true
    )]
    pub(crate) segment: String,

    /// Delete hlog segments older than this (e.g. 7d); `forever` keeps every segment.
    #[arg(
        long,
        default_value = "7d",
        value_name = "DURATION|forever",
        allow_hyphen_values = true,
        conflicts_with = "retain_size"
    )]
    pub retain: String,

    /// Instead of --retain: delete the oldest segments while the result directory would exceed this
    /// size (e.g. 500MiB, 1GiB; at least 64KiB).
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true)]
    pub(crate) retain_size: Option<String>,

    #[command(flatten)]
    pub cpus: CpuArgs,

    #[command(flatten)]
    pub latency: LatencyArgs,

    #[command(flatten)]
    pub sender: SenderArgs,

    #[command(flatten)]
    pub inversion: InversionArgs,

    #[command(flatten)]
    pub loads: LoadsArgs,

    #[command(flatten)]
    pub output: OutputArgs,

    #[command(flatten)]
    pub check: DryRunArgs,

    #[command(flatten)]
    pub trace: TraceArgs,

    #[command(flatten)]
    pub budget: BudgetArgs,

    #[command(flatten)]
    pub actions: ActionArgs,
}

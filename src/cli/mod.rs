//! The command-line surface (README, "Usage"; docs/user-guide.md).
//!
//! Values are kept as text here, handed to the plan as its option groups (`options.rs`) and
//! validated there ([`crate::plan::build`]), so that every bad input is reported with the value, what
//! is accepted, and exit code 2, before anything starts. Option values that name an entry of a
//! table (wake methods, clocks, policies, export formats) come from that table (`values.rs`).
//!
//! Options that take a number or a duration accept values that start with '-' (e.g.
//! `--priority -1`), so that those are refused by our own range check, which names the option
//! and what it accepts, rather than by clap as an "unexpected argument".

// The doc comments below are also clap's help text, where `<name>` is a placeholder the user
// reads, not HTML: rustdoc must not take it for a tag.
#![allow(rustdoc::invalid_html_tags)]

mod cyclictest;
pub mod groups;
pub mod habits;
mod inversion;
mod monitor;
mod noise;
mod options;
mod oslat;
mod run;
mod sender;
#[cfg(test)]
mod tests;
mod timerlat;
mod values;

pub use cyclictest::CyclictestArgs;
pub use inversion::InversionArgs;
pub use monitor::MonitorArgs;
pub use noise::NoiseArgs;
pub use oslat::OslatArgs;
pub use run::LatencyRunArgs;
pub use run::RunArgs;
pub use sender::SenderArgs;
pub use timerlat::TimerlatArgs;

use crate::report::export::ExportFormat;
use crate::results::import::SourceFormat;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use values::{export_format_value, import_format_value};

#[derive(Debug, Parser)]
#[command(
    name = "jitterlab",
    version,
    about = "Real-time latency lab: measure how late a real-time task wakes, per CPU, and keep every result",
    after_help = "Exit codes: 0 fine; 1 a budget or regression check failed; 2 bad usage or input; \
                  3 the system cannot do what was asked; 4 failure during the run."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Measure wakeup latency on each selected CPU and write a result directory.
    Run(Box<RunArgs>),
    /// Export a result directory: samples, histograms, its summary, CI formats, counters (every
    /// format: `jitterlab export --help`).
    Export(ExportArgs),
    /// Check whether this system is ready for real-time work, with the fix for each problem.
    Doctor(DoctorArgs),
    /// Compare runs per CPU and overall: ratios to the first run, 95% intervals of differences.
    Compare(CompareArgs),
    /// Make a result directory from the output of cyclictest, rtla, oslat, stress-ng, rteval or
    /// jitterdebugger (every format: `jitterlab import --help`).
    Import(ImportArgs),
    /// Run load generators alone, without measuring (like FirmTimers generate_load).
    Load(LoadArgs),
    /// One run per load level (e.g. hackbench groups 1..40), with a summary of all levels.
    Sweep(Box<SweepArgs>),
    /// Measure what each tuning fix buys here (IRQ affinity, RT throttling, timer migration...):
    /// interleaved runs with and without it, each setting set back after (docs/tune.md).
    Tune(Box<TuneArgs>),
    /// Internal: the process of one load generator, started by jitterlab itself.
    #[command(name = "__load-worker", hide = true)]
    LoadWorker(LoadWorkerArgs),
    /// Internal: kills what is left of a jitterlab's loads when it dies (load/contain.rs).
    #[command(name = "__load-reaper", hide = true)]
    LoadReaper(LoadReaperArgs),
    /// Write a self-contained HTML report (tables and plots) of result directories or sweeps.
    Report(ReportArgs),
    /// Measure like `run` without an end, serving Prometheus metrics at /metrics, until
    /// SIGINT or SIGTERM (docs/monitor.md).
    Monitor(Box<MonitorArgs>),
    /// Measure OS noise: per CPU, the gaps in a loop that never sleeps (like oslat), with the
    /// same result directory as `run` (docs/noise.md).
    Noise(Box<NoiseArgs>),
    /// cyclictest's command line and output (rt-tests 2.x), measured by jitterlab, with a
    /// result directory beside it (docs/cyclictest.md); `jitterlab cyclictest --help`.
    Cyclictest(CyclictestArgs),
    /// oslat's command line and output (rt-tests 2.40), measured by jitterlab's noise loop,
    /// with a result directory beside it (docs/oslat.md); `jitterlab oslat --help`.
    Oslat(OslatArgs),
    /// `rtla timerlat hist`'s command line and histogram, measured by jitterlab without the
    /// timerlat tracer, with a result directory beside it (docs/timerlat.md).
    Timerlat(TimerlatArgs),
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The result directory to export from.
    pub run_dir: PathBuf,
    /// The output format (each with what it writes: `jitterlab export --help`; the table of
    /// report/export/mod.rs).
    #[arg(long, value_parser = export_format_value())]
    pub format: &'static ExportFormat,
    /// Write here instead of stdout. For gnuplot: the name of both files, FILE.dat and FILE.gp
    /// (default: ./<run directory name>-histogram.dat and .gp).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Judge the run against this latency budget (e.g. 'max<200us,p99.9<50us', docs/budget.md)
    /// instead of the one stored with it, for json, junit, lava, prometheus and openmetrics. The
    /// verdict is in the file; export itself exits 0.
    #[arg(long, value_name = "EXPR")]
    pub budget: Option<String>,
    /// With --format gnuplot: one distribution per scenario phase, each CPU's column the share
    /// of the phase's wakeups per bin (sums to 1), as FILE.dat and FILE.gp (default
    /// ./<run directory name>-phases.dat and .gp).
    #[arg(long)]
    pub per_phase: bool,
    /// With --format csv or columns: only these CPUs' samples (a list such as 1 or 0,2-3), e.g.
    /// one CPU's `time_s latency_us irq_latency_us` rows, the SH7780 study's file for it.
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// With --format gnuplot: the script's latency axis, FROM:TO with units, either end left
    /// out (e.g. :2ms); it labels per CPU the wakeups it cut off.
    #[arg(long, value_name = "FROM:TO")]
    pub latency_range: Option<String>,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Result directories; the first (A) is the reference every other run is compared with.
    #[arg(value_name = "RUN_DIR", num_args = 2.., required = true)]
    pub runs: Vec<PathBuf>,
    /// Print the comparison as JSON (schema in docs/compare.md).
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// Print the comparison as Markdown tables.
    #[arg(long)]
    pub(crate) markdown: bool,
    /// Exit 1 when a run is worse than A by more than this margin (e.g. 10%), for any CPU or
    /// overall, with the 95% interval of the difference above zero for percentiles. Judged at
    /// p99.9 unless --at names other statistics: the max is not judged by default.
    #[arg(long, value_name = "PERCENT", allow_hyphen_values = true)]
    pub(crate) fail_if_worse: Option<String>,
    /// The statistics --fail-if-worse judges, one or several separated by commas (e.g.
    /// max,p99.9; any worse fails): min, mean, p50, p99, p99.9, p99.99, max, missed. Default
    /// p99.9.
    #[arg(long, value_name = "STAT[,STAT...]", requires = "fail_if_worse")]
    pub at: Option<String>,
    /// Judge every run against a latency budget, e.g. 'max<200us,p99.9<50us' (docs/budget.md);
    /// a violation exits 1.
    #[arg(long, value_name = "EXPR")]
    pub budget: Option<String>,
    /// Compare one scenario phase (its label, e.g. io) of every run: its whole log intervals
    /// and run.json's per-phase figures (docs/compare.md).
    #[arg(long, value_name = "NAME")]
    pub phase: Option<String>,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The file another tool wrote, in any format of --format (docs/import.md).
    pub file: PathBuf,
    /// The result directory to create. Default: ./jitterlab-results/imported-<file name>.
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The file's format; auto recognises it from its content (each format with what it
    /// reads: `jitterlab import --help`; docs/import.md).
    #[arg(long, default_value = "auto", value_parser = import_format_value())]
    pub format: ImportFormat,
    /// For rtla hist output saved without its header (rtla --no-header, as LAVA's jobs save
    /// it): the CPUs its columns are of, e.g. 0-3. rtla prints them in increasing order and
    /// leaves out a CPU without samples. Needs --columns (docs/import.md).
    #[arg(
        long,
        value_name = "LIST",
        requires = "columns",
        allow_hyphen_values = true
    )]
    pub cpus: Option<String>,
    /// With --cpus: the columns rtla printed for each CPU, in rtla's order: irq,thr (rtla
    /// timerlat hist), irq,thr,usr (with -u), thr (--no-irq), irq (--no-thread); cpu (rtla
    /// osnoise hist). Each row must then hold CPUs x columns values.
    #[arg(long, value_name = "irq,thr[,usr]|cpu", requires = "cpus")]
    pub columns: Option<String>,
    /// With --cpus and --columns: the unit of the values, us (rtla's default) or ns (rtla -n);
    /// the header that says it is not in the file. Default us.
    #[arg(long, value_name = "us|ns", requires = "cpus", value_parser = ["us", "ns"])]
    pub(crate) time_unit: Option<String>,
}

/// `import --format`: recognise the content, or read it as one row of the importers' table.
#[derive(Debug, Clone, Copy)]
pub enum ImportFormat {
    Auto,
    Named(&'static SourceFormat),
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print the checks as JSON (schema in docs/doctor.md).
    #[arg(long)]
    pub json: bool,
    /// The CPUs you intend to measure (default: every online CPU).
    #[arg(long, value_name = "LIST", allow_hyphen_values = true)]
    pub cpus: Option<String>,
}

#[derive(Debug, Args)]
pub struct LoadArgs {
    /// The loads, e.g. hackbench:groups=10 cpu:workers=2 'exec:stress-ng --cpu 1' (see docs/loads.md).
    #[arg(required = true, value_name = "SPEC")]
    pub specs: Vec<String>,

    /// Run the loads this long, then stop them (with a unit: 30s, 10m). Without it hackbench
    /// runs one exchange and prints its Time: like rt-tests' hackbench, and the other loads run
    /// until Ctrl-C.
    #[arg(long, short = 'D', value_name = "DURATION", allow_hyphen_values = true)]
    pub duration: Option<String>,

    /// Print the loads' records (as in run.json `loads`) as JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Every `jitterlab run` option but --scenario applies to each level's run (with --no-measure: \
                        --duration, --load, --out, --json, --dry-run and --quiet). Exactly one --load holds `{}`, \
                        replaced by each level; other --load values run unchanged at every level. \
                        --out names the sweep directory (default ./jitterlab-results/<UTC time>-<host>-<pid>-sweep); \
                        each level's run goes to <out>/level-<value>/."
)]
pub struct SweepArgs {
    /// The levels to put in place of `{}` in the swept --load, comma-separated (e.g. 1,2,4,8).
    #[arg(long, value_name = "LIST", required = true, allow_hyphen_values = true)]
    pub levels: String,

    /// Run each level's loads alone for --duration, without measuring (the "without driver"
    /// series of a load-vs-latency study): sweep.json gets each level's throughput and no
    /// latency, and no level directories are made. Nothing is measured, so --loops, --trace,
    /// --budget and --samples have nothing to apply to and are refused.
    #[arg(long, conflicts_with_all = ["loops", "trace", "budget", "samples"])]
    pub(crate) no_measure: bool,

    #[command(flatten)]
    pub run: LatencyRunArgs,

    /// Each level's run has these actions (its own --on-end too, with JITTERLAB_OUT its level
    /// directory); `stop` ends that level's run and the sweep goes on to the next level.
    #[command(flatten)]
    pub actions: crate::cli::groups::ActionArgs,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Every option of `jitterlab run` sets each arm's run. The fixes, how each is \
                  measured and how to read the table: docs/tune.md. --out names the tune \
                  directory (default ./jitterlab-results/<UTC time>-<host>-<pid>-tune); each arm \
                  is a result directory in it, tune.json its record, deploy/ the files to deploy. \
                  --json prints tune.json (every figure with its interval and unit) instead of \
                  the table."
)]
pub struct TuneArgs {
    /// The fixes to measure, comma-separated (default: every fix that applies here): \
    /// irq-affinity, rt-throttling, pm-qos, timer-migration, workqueues, cpuset, nmi-watchdog,
    /// soft-watchdog, thp, ksm, vmstat.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub(crate) fixes: Vec<String>,
    /// Rounds of arms: each round runs the baseline and every fix once, in a rotated order
    /// (at least 2; the together phase runs as many).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 5,
        allow_hyphen_values = true
    )]
    pub(crate) rounds: i64,
    #[command(flatten)]
    pub run: LatencyRunArgs,
}

#[derive(Debug, Args)]
pub struct LoadWorkerArgs {
    pub spec: String,
    #[arg(long)]
    pub cpus: String,
    #[arg(long)]
    pub(crate) report_cpus: String,
    #[arg(long)]
    pub once: bool,
}

#[derive(Debug, Args)]
pub struct LoadReaperArgs {
    /// The jitterlab process whose loads to clean up after.
    #[arg(long)]
    pub owner: u32,
    /// Its loads' parent cgroup, when it made one.
    #[arg(long)]
    pub cgroup: Option<PathBuf>,
    /// Its `exec` loads' parent cpuset in a cgroup v1 hierarchy, when it made one.
    #[arg(long)]
    pub(crate) cpuset: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Result directories of runs (holding run.json) or of sweeps (holding sweep.json). Two or
    /// more runs are also overlaid and compared with the first.
    #[arg(required = true, value_name = "RUN_DIR")]
    pub(crate) run_dirs: Vec<PathBuf>,
    /// The HTML file to write (overwritten if it exists).
    #[arg(long, short = 'o', default_value = "report.html", value_name = "FILE")]
    pub output: PathBuf,
    /// Also write every plot as <name>.svg and <name>.png into DIR (created if missing); names
    /// in docs/report.md.
    #[arg(long, value_name = "DIR")]
    pub plots: Option<PathBuf>,

    /// Judge every run against a budget, e.g. 'max<200us,p99.9<50us,missed=0' (grammar in
    /// docs/budget.md): the report shows this verdict instead of the stored one, each clause is
    /// printed, and a violation exits 1. Runs are not modified.
    #[arg(long, value_name = "EXPR", allow_hyphen_values = true)]
    pub budget: Option<String>,
    /// The latency axis of every plot, FROM:TO with units, either end left out (e.g. :2ms,
    /// 10us:300us): the histograms' and exceedance curves' x, the timeline's y. Each plot says
    /// what it cut off ("CPU 0: 12 wakeups above 2.00 ms not shown").
    #[arg(long, value_name = "FROM:TO")]
    pub latency_range: Option<String>,
    /// The time axis of every time plot, FROM:TO since the run's start (e.g. 10s:20s, 5m:),
    /// the latency axis then fitting what is in it; each plot says what it cut off.
    #[arg(long, value_name = "FROM:TO")]
    pub time_range: Option<String>,
}

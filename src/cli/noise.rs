//! `jitterlab noise`'s options: the shared run options it takes as given, and what a loop
//! that never sleeps adds (docs/noise.md).

// Doc comments are clap's help text; `<name>` is a placeholder, not HTML.
#![allow(rustdoc::invalid_html_tags)]

use super::*;

#[derive(Debug, Args, Clone)]
pub struct NoiseArgs {
    /// How long to measure (with a unit: 500ms, 30s, 10m, 24h). Default 60s.
    #[arg(long, short = 'D', value_name = "DURATION", allow_hyphen_values = true)]
    pub duration: Option<String>,

    /// CPUs to measure, one pinned spinning thread each (e.g. 0-3,6). Default: every online CPU.
    #[arg(long, short = 'a', value_name = "LIST", allow_hyphen_values = true)]
    pub cpus: Option<String>,

    /// Scheduling policy of the spinning threads. Default other, as oslat's (no -f); with fifo
    /// or rr and RT throttling on, long gaps are counted as throttling (docs/noise.md).
    #[arg(long, default_value = PolicyKind::Other.name(), value_parser = noise_policy_value())]
    pub policy: PolicyKind,

    /// Priority of the spinning threads: 1-99 for fifo and rr (default 95); 0 for other.
    #[arg(
        long,
        short = 'p',
        value_name = "PRIO",
        allow_negative_numbers = true,
        value_parser = priority_value
    )]
    pub priority: Option<i32>,

    /// A gap between two clock reads longer than this is a noise event (at least 100ns).
    #[arg(
        long,
        default_value = "1us",
        value_name = "DURATION",
        allow_hyphen_values = true
    )]
    pub threshold: String,

    /// Length of the recorder's intervals: one gap histogram per CPU per interval in latency.hlog.
    #[arg(
        long,
        default_value = "1s",
        value_name = "DURATION",
        allow_hyphen_values = true
    )]
    pub log_interval: String,

    /// What the loop reads: tsc (x86_64) or cntvct (aarch64), the CPU's counter read directly
    /// as oslat does, calibrated against CLOCK_MONOTONIC; monotonic (the vDSO); auto: the
    /// counter where the kernel keeps time with it, else monotonic (docs/noise.md).
    #[arg(
        long,
        default_value = "auto",
        value_name = "CLOCK",
        value_parser = PossibleValuesParser::new(["auto", "tsc", "cntvct", "monotonic"])
    )]
    pub clock: String,

    /// A load to run while measuring (as for `run`; docs/loads.md). Repeatable.
    #[arg(long, value_name = "SPEC")]
    pub load: Vec<String>,

    /// A scenario file (as for `run`); it sets the run's length, so --duration is refused.
    #[arg(long, value_name = "FILE.toml", conflicts_with = "duration")]
    pub scenario: Option<PathBuf>,

    /// A noise budget judged at the end, e.g. 'noise_pct<0.1,max<20us' (docs/budget.md);
    /// a violation exits 1.
    #[arg(long, value_name = "EXPR")]
    pub budget: Option<String>,

    /// Also write every gap (its start, length, and whether it was throttling) to samples.bin.
    #[arg(long)]
    pub samples: bool,

    /// Capacity of each thread's gap ring, in gaps (default 65536: 0.1 s at 655k gaps/s).
    #[arg(
        long,
        value_name = "N",
        allow_negative_numbers = true,
        value_parser = ring_size_value
    )]
    pub ring_size: Option<usize>,

    /// Do not lock memory (mlockall) or pre-fault the threads' stacks.
    #[arg(long)]
    pub no_mlock: bool,

    /// Hold /dev/cpu_dma_latency at N microseconds during the run ("off" to leave it alone).
    #[arg(
        long,
        default_value = "0",
        value_name = "off|N",
        allow_hyphen_values = true
    )]
    pub pm_qos: String,

    /// The result directory, made new. Default: ./jitterlab-results/<UTC time>-<host>-<pid>.
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Measure CPUs that another jitterlab run is measuring (refused otherwise, exit 3).
    #[arg(long)]
    pub allow_shared_cpus: bool,

    /// Attribute each gap to what took the CPU (IRQs by name, softirqs, NMIs, other tasks, or no
    /// trace event: a hardware, firmware or hypervisor stall), from kernel tracepoints in a
    /// tracefs instance of jitterlab's own; noise by cause per CPU in run.json (docs/noise.md).
    #[arg(long)]
    pub trace: bool,

    /// With --trace: explain and attribute every gap longer than this (each in events.jsonl).
    /// Default: the threshold (every gap).
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub explain_above: Option<String>,

    /// Print run.json on stdout at the end instead of the summary table.
    #[arg(long)]
    pub json: bool,

    /// No live view or status lines; errors and the final summary only.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// `noise --policy`: the policies a thread that never sleeps can have (deadline needs sleeps,
/// batch and idle measure nothing oslat users ask for).
fn noise_policy_value() -> impl TypedValueParser<Value = PolicyKind> {
    let kinds = [PolicyKind::Other, PolicyKind::Fifo, PolicyKind::Rr];
    PossibleValuesParser::new(kinds.map(PolicyKind::name))
        .map(|name| PolicyKind::named(&name).expect("clap admits only the kinds' names"))
}

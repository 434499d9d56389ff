//! The options a run is planned from, as plain values in groups (no clap types): what `cli`
//! makes of clap's parse and what the rt-tests drop-ins make of their tools' options, the one
//! input of [`crate::plan::build`]. A group holds the text the user gave where a bad value's
//! message must quote it (durations, lists), and the parsed value where the parse cannot fail
//! after clap or a drop-in chose it (a wake method, a clock, a policy).
//!
//! The defaults are the commands' defaults: clap's `default_value`s name the constants here,
//! and `cli`'s tests check that `jitterlab run` without options gives [`LatencyRunOptions`]'s
//! `Default`, which the drop-ins start from.

use crate::format::samples::SampleLogFormat;
use crate::measure::{Clock, PolicyKind, WakeMethod};
use crate::plan::TraceBackendChoice;
use crate::plan::build::MeasuredKindRow;
use std::path::PathBuf;

/// `--pm-qos` when not given: hold /dev/cpu_dma_latency at 0.
pub(crate) const DEFAULT_PM_QOS: &str = "0";
/// `--drain-priority` when not given.
pub(crate) const DEFAULT_DRAIN_PRIORITY: &str = "auto";
/// `--load-cpus` when not given.
pub(crate) const DEFAULT_LOAD_CPUS: &str = "all";
/// `--log-interval` when not given.
pub(crate) const DEFAULT_LOG_INTERVAL: &str = "1s";
/// `--interval` when not given.
pub(crate) const DEFAULT_INTERVAL: &str = "1ms";
/// `--distance` when not given.
pub(crate) const DEFAULT_DISTANCE: &str = "0ns";
/// `noise --threshold` when not given.
pub(crate) const DEFAULT_THRESHOLD: &str = "1us";
/// `noise --clock` when not given.
pub(crate) const DEFAULT_NOISE_CLOCK: &str = "auto";

/// How long a run that ends lasts: `--duration`, `--loops` (latency only) or a scenario's
/// timeline; none of them is 60 s.
#[derive(Debug, Clone, Default)]
pub struct LengthOptions {
    pub duration: Option<String>,
    pub loops: Option<u64>,
    pub scenario: Option<PathBuf>,
}

/// Where the measuring threads run and how they are kept there.
#[derive(Debug, Clone)]
pub struct CpuOptions {
    /// A CPU list; None: every online CPU.
    pub cpus: Option<String>,
    pub priority: Option<i32>,
    pub(crate) no_mlock: bool,
    /// `off` or microseconds.
    pub(crate) pm_qos: String,
    pub(crate) idle_state_max: Option<u32>,
    pub(crate) allow_shared_cpus: bool,
    pub ring_size: Option<usize>,
    /// `auto`, `off` or a priority.
    pub(crate) drain_priority: String,
    pub(crate) housekeeping: Option<String>,
    pub(crate) cpuset_partition: bool,
}

impl Default for CpuOptions {
    fn default() -> Self {
        CpuOptions {
            cpus: None,
            priority: None,
            no_mlock: false,
            pm_qos: DEFAULT_PM_QOS.into(),
            idle_state_max: None,
            allow_shared_cpus: false,
            ring_size: None,
            drain_priority: DEFAULT_DRAIN_PRIORITY.into(),
            housekeeping: None,
            cpuset_partition: false,
        }
    }
}

/// The loads run beside the measurement.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Each `--load` spec as given.
    pub load: Vec<String>,
    /// `all`, `measured` or `housekeeping`.
    pub(crate) load_cpus: String,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            load: Vec::new(),
            load_cpus: DEFAULT_LOAD_CPUS.into(),
        }
    }
}

/// Where the results go and what the recorder writes at each interval.
#[derive(Debug, Clone)]
pub struct OutputOptions {
    /// The result directory; None: a new default name.
    pub out: Option<PathBuf>,
    pub(crate) log_interval: String,
    pub(crate) no_counters: bool,
}

impl Default for OutputOptions {
    fn default() -> Self {
        OutputOptions {
            out: None,
            log_interval: DEFAULT_LOG_INTERVAL.into(),
            no_counters: false,
        }
    }
}

/// The kernel trace.
#[derive(Debug, Clone, Default)]
pub struct TraceOptions {
    pub trace: bool,
    pub(crate) explain_above: Option<String>,
    pub backend: Option<TraceBackendChoice>,
}

/// The groups every measuring kind shares.
#[derive(Debug, Clone)]
pub struct SharedOptions {
    /// None: a run without end (`monitor`).
    pub length: Option<LengthOptions>,
    pub cpus: CpuOptions,
    pub loads: LoadOptions,
    pub output: OutputOptions,
    pub trace: TraceOptions,
    /// The `--budget` expression.
    pub budget: Option<String>,
}

impl Default for SharedOptions {
    fn default() -> Self {
        SharedOptions {
            length: Some(LengthOptions::default()),
            cpus: CpuOptions::default(),
            loads: LoadOptions::default(),
            output: OutputOptions::default(),
            trace: TraceOptions::default(),
            budget: None,
        }
    }
}

/// How a wakeup is scheduled and judged.
#[derive(Debug, Clone)]
pub struct LatencyOptions {
    pub interval: String,
    pub(crate) distance: String,
    /// Added to the period after every wakeup (`run`, `sweep`).
    pub(crate) interval_step: Option<String>,
    pub wake: &'static WakeMethod,
    pub clock: Clock,
    pub policy: PolicyKind,
    pub deadline: Option<String>,
    /// The `--under` thresholds, each as given.
    pub under: Vec<String>,
}

impl Default for LatencyOptions {
    fn default() -> Self {
        LatencyOptions {
            interval: DEFAULT_INTERVAL.into(),
            distance: DEFAULT_DISTANCE.into(),
            interval_step: None,
            wake: WakeMethod::default_method(),
            clock: Clock::DEFAULT,
            policy: PolicyKind::Fifo,
            deadline: None,
            under: Vec::new(),
        }
    }
}

/// The IPC wake methods' sender: its CPU (`same`, `other` or a number), priority, whether it
/// is a thread or a process, and what paces it.
#[derive(Debug, Clone, Default)]
pub struct SenderOptions {
    pub sender_cpu: Option<String>,
    pub(crate) sender_priority: Option<i32>,
    pub(crate) ipc_between: Option<String>,
    pub(crate) ipc_pace: Option<String>,
}

/// `--wake pi-mutex`'s scenario.
#[derive(Debug, Clone, Default)]
pub struct InversionOptions {
    pub(crate) hold: Option<String>,
    pub hog: Option<String>,
    pub no_pi: bool,
}

/// What a run records beyond its histograms (`run`, `sweep`; `noise` has `samples` only).
#[derive(Debug, Clone, Default)]
pub struct RecordOptions {
    pub samples: bool,
    pub samples_format: Option<SampleLogFormat>,
    pub(crate) summary_every: Option<u64>,
}

/// A latency run: the shared groups, the latency group, its helpers and its records; or a run
/// of another kind `jitterlab run --kind` takes from these groups (`plan::build::MEASURED_KINDS`).
#[derive(Debug, Clone)]
pub struct LatencyRunOptions {
    /// `run --kind`: what each sample measures (latency but for `run`).
    pub(crate) kind: &'static MeasuredKindRow,
    pub shared: SharedOptions,
    pub latency: LatencyOptions,
    pub sender: SenderOptions,
    pub inversion: InversionOptions,
    pub records: RecordOptions,
}

impl Default for LatencyRunOptions {
    fn default() -> Self {
        LatencyRunOptions {
            kind: MeasuredKindRow::default_kind(),
            shared: SharedOptions::default(),
            latency: LatencyOptions::default(),
            sender: SenderOptions::default(),
            inversion: InversionOptions::default(),
            records: RecordOptions::default(),
        }
    }
}

/// What a spike and the end of the run set off, each as given.
#[derive(Debug, Clone, Default)]
pub(crate) struct ActionOptions {
    pub(crate) on_threshold: Vec<String>,
    pub(crate) on_end: Vec<String>,
    pub(crate) action_gap: Option<String>,
    pub(crate) action_wait: Option<String>,
    pub snapshot_limit: Option<String>,
}

/// What the spinning loop reads and what it counts as a gap.
#[derive(Debug, Clone)]
pub struct NoiseOptions {
    pub threshold: String,
    /// `auto`, `tsc`, `cntvct` or `monotonic`.
    pub clock: String,
    pub policy: PolicyKind,
}

impl Default for NoiseOptions {
    fn default() -> Self {
        NoiseOptions {
            threshold: DEFAULT_THRESHOLD.into(),
            clock: DEFAULT_NOISE_CLOCK.into(),
            policy: PolicyKind::Other,
        }
    }
}

/// A noise run: the shared groups, the noise group, and whether every gap is kept.
#[derive(Debug, Clone, Default)]
pub struct NoiseRunOptions {
    pub shared: SharedOptions,
    pub noise: NoiseOptions,
    pub samples: bool,
}

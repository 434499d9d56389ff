//! The option groups the measuring subcommands are composed of (`run`, `sweep`, `monitor`,
//! `noise`). Each subcommand flattens only the groups whose options it accepts, so its `--help`
//! lists nothing it refuses, and each group is one section of that help (its heading).
//!
//! The groups carry no `///` comment: clap would take a flattened struct's doc comment for the
//! subcommand's description. The help texts of the groups `noise` shares with the latency
//! commands are written to be true for both.

// Doc comments are clap's help text; `<name>` is a placeholder, not HTML.
#![allow(rustdoc::invalid_html_tags)]

use super::values::{
    policy_value, priority_value, ring_size_value, trace_backend_value, wake_value,
};
use crate::measure::PolicyKind;
use crate::measure::clock::Clock;
use crate::measure::wake::WakeMethod;
use crate::plan::TraceBackendChoice;
use crate::plan::options as defaults;
use clap::Args;
use std::path::PathBuf;

// The help headings: a section of `--help` each. An option declared outside a group names its
// section with `help_heading` (clap keeps the heading of the last flattened group otherwise).
pub(crate) const LENGTH: &str = "Length";
pub(crate) const CPUS: &str = "CPUs and scheduling";
pub(crate) const LATENCY: &str = "Latency measurement";
pub(crate) const NOISE: &str = "Noise measurement";
pub(crate) const LOADS: &str = "Loads";
pub(crate) const OUTPUT: &str = "Output";
pub(crate) const TRACE: &str = "Trace";
pub const BUDGET: &str = "Budget";
pub(crate) const SENDER: &str = "IPC wake methods (signal, sigwait, mq, mutex, sem, ...)";
pub(crate) const INVERSION: &str = "Priority inversion (--wake pi-mutex)";
pub(crate) const ACTIONS: &str = "Actions";

// The length of a run that ends (`run`, `sweep`, `noise`; a monitor has none).
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = LENGTH)]
pub struct LengthArgs {
    /// How long to measure (with a unit: 500ms, 30s, 10m, 24h). Default 60s, unless --loops
    /// (run, sweep) or --scenario (run, noise) sets the length.
    #[arg(long, short = 'D', value_name = "DURATION", allow_hyphen_values = true)]
    pub duration: Option<String>,
}

// A timeline of loads (`run`, `noise`; a sweep sweeps one load, and a monitor has no end).
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = LENGTH)]
pub struct ScenarioArgs {
    /// A scenario file: phases on a timeline, each with its loads (see examples/ and
    /// docs/loads.md). The scenario sets the run's length, so --duration (and --loops) are
    /// refused.
    #[arg(long, value_name = "FILE.toml", conflicts_with = "duration")]
    pub scenario: Option<PathBuf>,
}

// Where the measuring threads run and how they are kept there (every measuring command).
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = CPUS)]
pub struct CpuArgs {
    /// CPUs to measure, one pinned thread each (e.g. 0-3,6). Default: every online CPU.
    #[arg(long, short = 'a', value_name = "LIST", allow_hyphen_values = true)]
    pub cpus: Option<String>,

    /// Priority of the measuring threads: 1-99 for fifo and rr (default 95); 0 for the others.
    #[arg(
        long,
        short = 'p',
        value_name = "PRIO",
        allow_negative_numbers = true,
        value_parser = priority_value
    )]
    pub priority: Option<i32>,

    /// Do not lock memory (mlockall) or pre-fault the measuring threads' stacks.
    #[arg(long)]
    pub(crate) no_mlock: bool,

    /// Hold /dev/cpu_dma_latency at N microseconds during the run ("off" to leave it alone).
    #[arg(
        long,
        default_value = defaults::DEFAULT_PM_QOS,
        value_name = "off|N",
        allow_hyphen_values = true
    )]
    pub(crate) pm_qos: String,

    /// Disable the cpuidle states deeper than N on the measured CPUs for the run (0: only the
    /// shallowest, usually POLL), and enable them again when it ends, or at the next start
    /// after a kill. Refused (exit 3) where a measured CPU has no cpuidle states.
    #[arg(long, value_name = "N")]
    pub(crate) idle_state_max: Option<u32>,

    /// Measure CPUs that another jitterlab run is measuring (refused otherwise, exit 3); the
    /// results carry a warning that the two runs disturbed each other.
    #[arg(long)]
    pub(crate) allow_shared_cpus: bool,

    /// Capacity of each thread's ring, in samples (gaps for noise); a full ring drops (and
    /// counts) records. Default: four seconds of samples at the thread's interval, at least
    /// 4096; for noise 65536 gaps (0.1 s at 655k gaps/s).
    #[arg(
        long,
        value_name = "N",
        allow_negative_numbers = true,
        value_parser = ring_size_value
    )]
    pub ring_size: Option<usize>,

    /// Real-time priority of jitterlab's own threads (the recorder, the trace reader, the live
    /// view, the signal handling, the load supervisor): SCHED_FIFO N, below every real-time
    /// thread of the run, so that no load can starve them into dropping records or ignoring a
    /// stop. "auto": one above the highest real-time load beside them (1 without one), below
    /// every real-time thread of the run (measuring, IPC senders, pi-mutex holder and hog);
    /// off when those are not real-time, and for noise (its threads never sleep); "off":
    /// normal scheduling. Loads at or above it on every CPU of these threads are refused.
    #[arg(
        long,
        default_value = defaults::DEFAULT_DRAIN_PRIORITY,
        value_name = "auto|off|N",
        allow_hyphen_values = true
    )]
    pub(crate) drain_priority: String,

    /// CPUs for everything but the measurement: the drain side (recorder, trace reader, live
    /// view), the load supervisor, the metrics server, and the `cpus=housekeeping` loads. Not
    /// a measured CPU. Default: the drain side may run anywhere, and `cpus=housekeeping` is
    /// every online CPU not measured.
    #[arg(long, value_name = "CPUS")]
    pub(crate) housekeeping: Option<String>,

    /// Put the measuring threads in a cpuset of their own for the run: the measured CPUs,
    /// exclusive, without load balancing (a cgroup v1 cpuset named jitterlab-PID), removed when
    /// the run ends, or at the next start after a kill.
    #[arg(long)]
    pub(crate) cpuset_partition: bool,
}

// How a wakeup is scheduled and judged (`run`, `sweep`, `monitor`; noise has its own group).
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = LATENCY)]
pub struct LatencyArgs {
    /// The wakeup period of the first thread (at least 1us).
    #[arg(
        long,
        short = 'i',
        default_value = defaults::DEFAULT_INTERVAL,
        value_name = "DURATION",
        allow_hyphen_values = true
    )]
    pub interval: String,

    /// Added to the interval of each further thread: thread k sleeps interval + k*distance (cyclictest -d).
    #[arg(
        long,
        short = 'd',
        default_value = defaults::DEFAULT_DISTANCE,
        value_name = "DURATION",
        allow_hyphen_values = true
    )]
    pub(crate) distance: String,

    /// How the measuring threads sleep until each wakeup is due.
    #[arg(long, default_value = WakeMethod::default_method().name, value_parser = wake_value())]
    pub wake: &'static WakeMethod,

    /// The clock that due times and wakeups are read from.
    #[arg(long, default_value = Clock::DEFAULT.name(), value_parser = super::values::clock_value())]
    pub clock: Clock,

    /// Scheduling policy of the measuring threads.
    #[arg(long, default_value = PolicyKind::Fifo.name(), value_parser = policy_value())]
    pub policy: PolicyKind,

    /// A wakeup later than this counts as a deadline miss. Default: the thread's interval.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub deadline: Option<String>,

    /// Count exactly, per CPU, the wakeups at or below each threshold, e.g. 2us,50us,250us
    /// (docs/tails.md). Each thread's deadline and 10x its median are always counted too.
    #[arg(
        long,
        value_name = "DURATIONS",
        value_delimiter = ',',
        allow_hyphen_values = true
    )]
    pub(crate) under: Vec<String>,
}

// The loads run beside the measurement (every measuring command).
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = LOADS)]
pub struct LoadsArgs {
    /// A load to run while measuring, e.g. spike:cpu=0,every=100ms,len=500us,prio=99 or
    /// hackbench:groups=4 (see docs/loads.md for every generator). Repeatable.
    #[arg(long, value_name = "SPEC")]
    pub load: Vec<String>,

    /// Where a generator load (--load or a scenario's) that names no cpus= runs: all (every
    /// online CPU), measured (beside the measuring threads: a "load the measured CPUs" test)
    /// or housekeeping (--housekeeping, else the CPUs not measured: an isolation test).
    /// Stored in run.json plan.load_cpus.
    #[arg(long, default_value = defaults::DEFAULT_LOAD_CPUS, value_name = "all|measured|housekeeping")]
    pub(crate) load_cpus: String,
}

// Where the results go and what is printed (every measuring command).
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = OUTPUT)]
pub struct OutputArgs {
    /// The result directory, made new (an existing name is refused). Default:
    /// ./jitterlab-results/<UTC time>-<host>-<pid>.
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Length of the recorder's intervals: one histogram (of latencies, or of gaps for noise)
    /// per thread per interval in latency.hlog.
    #[arg(
        long,
        default_value = defaults::DEFAULT_LOG_INTERVAL,
        value_name = "DURATION",
        allow_hyphen_values = true
    )]
    pub(crate) log_interval: String,

    /// Do not read the measured CPUs' context counters (interrupts per line, softirqs, steal
    /// time, context switches, idle states, frequency, temperature, throttling, SMIs) at each
    /// log interval into counters.log (docs/counters.md).
    #[arg(long)]
    pub(crate) no_counters: bool,

    /// No live view or status lines; errors and the final summary only.
    #[arg(long, short = 'q')]
    pub quiet: bool,

    /// The final summary in full: every CPU (above 16 CPUs the default shows the worst and
    /// sums up the rest), each CPU's percentiles, and its tail statements (docs/tails.md).
    #[arg(long)]
    pub(crate) verbose: bool,
}

// What only a run that ends can write: a monitor's samples.bin would grow without bound, and
// its run.json is never final (`run`, `sweep`, `noise`).
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = OUTPUT)]
pub(crate) struct SamplesAndJsonArgs {
    /// Also write every sample (for noise every gap: its start, length, and whether it was
    /// throttling) to samples.bin (see docs/result-format.md).
    #[arg(long)]
    pub samples: bool,

    /// Print run.json (sweep: sweep.json) on stdout at the end instead of the summary table.
    #[arg(long)]
    pub json: bool,
}

// `--dry-run` (`run`, `sweep`, `monitor`).
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = OUTPUT)]
pub struct DryRunArgs {
    /// Check the plan as a run's start would (options, loads, scenario, CPUs, real-time
    /// priority, budget, output directory; a monitor's port) and print what would run, for how
    /// long, and what it would write; start nothing and write nothing. Exit codes as for the
    /// run's checks.
    #[arg(long)]
    pub dry_run: bool,
}

// The kernel trace (every measuring command).
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = TRACE)]
pub struct TraceArgs {
    /// From kernel tracepoints in a tracefs instance of jitterlab's own: split each sample's
    /// latency into timer IRQ latency and thread latency and explain late wakeups
    /// (docs/tracing.md); for noise, attribute each gap to what took the CPU (IRQs by name,
    /// softirqs, NMIs, other tasks, or no trace event: a hardware, firmware or hypervisor
    /// stall), with the noise by cause per CPU in run.json (docs/noise.md).
    #[arg(long)]
    pub trace: bool,

    /// With --trace: explain every sample (for noise every gap) longer than this in
    /// events.jsonl (what held the CPU). Default: each thread's deadline (for noise the
    /// threshold: every gap).
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub(crate) explain_above: Option<String>,

    /// With --trace: what collects the trace. bpf: BPF programs on the tracepoints, filtered in
    /// the kernel (needs the kernel's BTF and permission to use bpf()); tracefs: an ftrace
    /// instance of jitterlab's own; auto (the default): bpf where the kernel allows it, else
    /// tracefs. The back end and the reason for it are in run.json; `doctor` shows what auto
    /// would choose (docs/tracing.md).
    #[arg(long, value_name = "auto|bpf|tracefs", value_parser = trace_backend_value(), requires = "trace")]
    pub(crate) trace_backend: Option<TraceBackendChoice>,
}

// The verdict at the end (every measuring command).
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = BUDGET)]
pub struct BudgetArgs {
    /// A budget judged at the end, e.g. 'max<200us,p99.9<50us,missed=0', for noise e.g.
    /// 'noise_pct<0.1,max<20us' (docs/budget.md); the verdict goes to run.json and a violation
    /// exits 1 (a monitor judges it on its window, at /metrics).
    #[arg(long, value_name = "EXPR")]
    pub budget: Option<String>,
}

// What a spike and the end of the run set off (`run`).
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = ACTIONS)]
pub struct ActionArgs {
    /// What to do when a spike starts (a run of wakeups later than --deadline, counted once):
    /// continue (record it), stop (end the run, marked stopped), signal:SIG,pid=N or
    /// signal:SIG,parent, exec:PROGRAM ARGS (no shell; JITTERLAB_CPU, JITTERLAB_TIME_NS,
    /// JITTERLAB_LATENCY_NS and JITTERLAB_OUT in its environment), or
    /// snapshot[:before=2s,after=1s] (every measured CPU's samples around it, in
    /// snapshots/). Repeat for several; each firing is an `action` event in events.jsonl.
    #[arg(long, value_name = "ACTION")]
    pub(crate) on_threshold: Vec<String>,

    /// What to do when the run has ended, its results are written and its CPU locks and PM
    /// QoS are released: continue, signal:SIG,pid=N, signal:SIG,parent or exec:PROGRAM ARGS
    /// (waited for, at most --action-wait). Repeatable.
    #[arg(long, value_name = "ACTION")]
    pub(crate) on_end: Vec<String>,

    /// The least time between two firings of one --on-threshold action, 1ms to 24h; spikes
    /// within it are counted as suppressed (in the next firing's event and in run.json).
    /// Default 1s.
    #[arg(
        long,
        value_name = "DURATION",
        requires = "on_threshold",
        allow_hyphen_values = true
    )]
    pub(crate) action_gap: Option<String>,

    /// At the end, the most jitterlab waits for the exec: programs still running, and then
    /// for each --on-end program, before it kills them (SIGKILL to the program's process
    /// group and everything it started); SIGINT or SIGTERM during the wait kills them at
    /// once. 0s to 1h, default 10s. Each outcome is recorded (docs/user-guide.md).
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub(crate) action_wait: Option<String>,

    /// The most bytes the --on-threshold snapshots of the run write in all, 1MiB to 1TiB,
    /// default 256MiB (and at most 10 000 snapshots): a snapshot that would pass it is not
    /// written, and the spikes after it are counted, not snapshotted (run.json, events.jsonl
    /// and the summary say so).
    #[arg(
        long,
        value_name = "SIZE",
        requires = "on_threshold",
        allow_hyphen_values = true
    )]
    pub snapshot_limit: Option<String>,
}

//! The command-line surface (DESIGN.md, "Command-line surface").
//!
//! Values are kept as text here and validated in [`crate::plan`], so that every bad input is
//! reported with the value, what is accepted, and exit code 2, before anything starts.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

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
    /// Export the sample log of a result directory as CSV or as three-column text.
    Export(ExportArgs),
    /// Check whether this system is ready for real-time work, with the fix for each problem.
    Doctor(DoctorArgs),
}

#[derive(Debug, Args, Clone)]
pub struct RunArgs {
    /// How long to measure (with a unit: 500ms, 30s, 10m, 24h). Default 60s unless --loops is given.
    #[arg(long, short = 'D', value_name = "DURATION", allow_hyphen_values = true)]
    pub duration: Option<String>,

    /// Stop each thread after this many wakeups instead of after a duration.
    #[arg(long, short = 'l', value_name = "N", conflicts_with = "duration")]
    pub loops: Option<u64>,

    /// The wakeup period of the first thread (at least 1us).
    #[arg(
        long,
        short = 'i',
        default_value = "1ms",
        value_name = "DURATION",
        allow_hyphen_values = true
    )]
    pub interval: String,

    /// Added to the interval of each further thread: thread k sleeps interval + k*distance (cyclictest -d).
    #[arg(
        long,
        short = 'd',
        default_value = "0ns",
        value_name = "DURATION",
        allow_hyphen_values = true
    )]
    pub distance: String,

    /// Added to the interval after every wakeup, so the period grows each loop (FirmTimers -i).
    /// Only with one-shot wake methods.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub interval_step: Option<String>,

    /// CPUs to measure, one pinned thread each (e.g. 0-3,6). Default: every online CPU.
    #[arg(long, short = 'a', value_name = "LIST")]
    pub cpus: Option<String>,

    /// Scheduling policy of the measuring threads.
    #[arg(long, value_enum, default_value_t = PolicyArg::Fifo)]
    pub policy: PolicyArg,

    /// Priority of the measuring threads: 1-99 for fifo and rr (default 95); 0 for the others.
    #[arg(long, short = 'p', value_name = "PRIO")]
    pub priority: Option<i32>,

    /// How the measuring threads sleep until each wakeup is due.
    #[arg(long, value_enum, default_value_t = WakeArg::ClockNanosleep)]
    pub wake: WakeArg,

    /// The clock that due times and wakeups are read from.
    #[arg(long, value_enum, default_value_t = ClockArg::Monotonic)]
    pub clock: ClockArg,

    /// Do not lock memory (mlockall) or pre-fault the measuring threads' stacks.
    #[arg(long)]
    pub no_mlock: bool,

    /// Hold /dev/cpu_dma_latency at N microseconds during the run ("off" to leave it alone).
    #[arg(long, default_value = "0", value_name = "off|N")]
    pub pm_qos: String,

    /// A wakeup later than this counts as a deadline miss. Default: the thread's interval.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub deadline: Option<String>,

    /// Length of the recorder's intervals: one histogram per thread per interval in latency.hlog.
    #[arg(long, default_value = "1s", value_name = "DURATION")]
    pub log_interval: String,

    /// A load to run while measuring, e.g. spike:cpu=0,every=100ms,len=500us,prio=99. Repeatable.
    #[arg(long, value_name = "SPEC")]
    pub load: Vec<String>,

    /// Also write every sample to samples.bin (see docs/result-format.md).
    #[arg(long)]
    pub samples: bool,

    /// Capacity of each thread's sample ring, in samples; a full ring drops (and counts) records.
    /// Default: one second of samples at the thread's interval, at least 1024.
    #[arg(long, value_name = "N")]
    pub ring_size: Option<usize>,

    /// The result directory. Default: ./jitterlab-results/<UTC time>-<host>.
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Split each sample's latency into timer IRQ latency and thread latency, and explain late
    /// wakeups, from kernel tracepoints in a tracefs instance of jitterlab's own (docs/tracing.md).
    #[arg(long)]
    pub trace: bool,

    /// With --trace: explain every sample later than this in events.jsonl (what held the CPU).
    /// Default: each thread's deadline.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub explain_above: Option<String>,

    /// Print run.json on stdout at the end instead of the summary table.
    #[arg(long)]
    pub json: bool,

    /// No live view or status lines; errors and the final summary only.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PolicyArg {
    Fifo,
    Rr,
    Other,
    Batch,
    Idle,
    Deadline,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WakeArg {
    /// clock_nanosleep to an absolute due time (TIMER_ABSTIME); the default, as cyclictest.
    ClockNanosleep,
    /// clock_nanosleep for the interval, relative to the clock read before sleeping.
    ClockNanosleepRel,
    /// nanosleep for the interval (relative).
    Nanosleep,
    /// select() with no descriptors and a timeout of the interval (relative, microsecond resolution).
    Select,
    /// ppoll() with no descriptors and a timeout of the interval (relative).
    Poll,
    /// setitimer(ITIMER_REAL) one-shot, re-armed each cycle; wait for SIGALRM (one CPU only).
    Itimer,
    /// setitimer(ITIMER_REAL) periodic; wait for SIGALRM (one CPU only).
    ItimerPeriodic,
    /// timer_create periodic POSIX timer signalling the thread; wait with sigwaitinfo.
    PosixTimer,
    /// timerfd periodic timer; wait with read().
    Timerfd,
    /// Periodic interrupts of /dev/rtc (interval must give a power-of-two rate; one CPU only).
    Rtc,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClockArg {
    Monotonic,
    Realtime,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The result directory to export from.
    pub run_dir: PathBuf,
    /// csv: one row per sample with units in the header; columns: `time_s latency_us irq_latency_us`.
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// Write here instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    Csv,
    Columns,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print the checks as JSON (schema in docs/doctor.md).
    #[arg(long)]
    pub json: bool,
    /// The CPUs you intend to measure (default: every online CPU).
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
}

//! The options of `run`, `sweep` and `monitor` for `--wake pi-mutex`, the priority-inversion
//! scenario.

use clap::Args;

#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = super::groups::INVERSION)]
pub struct InversionArgs {
    /// The CPU time the low-priority holder keeps the mutex for, from half of
    /// it before each due time (default 200us). With inheritance it bounds the latency.
    #[arg(
        long,
        hide_short_help = true,
        value_name = "DURATION",
        allow_hyphen_values = true
    )]
    pub(crate) hold: Option<String>,

    /// How long the medium-priority hog spins from each due time (default
    /// 500us). Without inheritance the measuring thread waits for it.
    #[arg(
        long,
        hide_short_help = true,
        value_name = "DURATION",
        allow_hyphen_values = true
    )]
    pub hog: Option<String>,

    /// A plain mutex (PTHREAD_PRIO_NONE) instead of one with priority
    /// inheritance (PTHREAD_PRIO_INHERIT): the inversion is left to happen, and is counted.
    #[arg(long, hide_short_help = true)]
    pub no_pi: bool,
}

//! `jitterlab run`'s options for `--wake pi-mutex`, the priority-inversion scenario.

use super::*;

#[derive(Debug, Args, Clone, Default)]
pub struct InversionArgs {
    /// --wake pi-mutex: the CPU time the low-priority holder keeps the mutex for, from half of
    /// it before each due time (default 200us). With inheritance it bounds the latency.
    #[arg(long, value_name = "DURATION")]
    pub hold: Option<String>,

    /// --wake pi-mutex: how long the medium-priority hog spins from each due time (default
    /// 500us). Without inheritance the measuring thread waits for it.
    #[arg(long, value_name = "DURATION")]
    pub hog: Option<String>,

    /// --wake pi-mutex: a plain mutex (PTHREAD_PRIO_NONE) instead of one with priority
    /// inheritance (PTHREAD_PRIO_INHERIT): the inversion is left to happen, and is counted.
    #[arg(long)]
    pub no_pi: bool,
}

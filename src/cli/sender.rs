//! The options of `run`, `sweep` and `monitor` for the wake methods where another thread sends
//! the wake (`--wake signal|sigwait|mq|mutex|sem|sysv-sem|futex|pipe|eventfd|condvar`).

use clap::Args;

#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = super::groups::SENDER)]
pub struct SenderArgs {
    /// Where each measuring thread's sender runs: `same` (its receiver's CPU,
    /// the default, as rt-tests' pmqtest/ptsematest/svsematest/sigwaittest pin a pair with -a),
    /// `other` (the next online CPU), or a CPU number.
    #[arg(long, hide_short_help = true, value_name = "same|other|N")]
    pub sender_cpu: Option<String>,

    /// The senders' priority (fifo and rr). Default: the receivers' (--priority),
    /// as rt-tests gives both threads of a pair the same priority.
    #[arg(
        long,
        hide_short_help = true,
        value_name = "PRIO",
        allow_negative_numbers = true
    )]
    pub(crate) sender_priority: Option<i32>,

    /// Each sender is a thread of jitterlab (`threads`, the default) or a
    /// process of its own (`processes`, as svsematest and sigwaittest -f), with process-shared
    /// objects.
    #[arg(long, hide_short_help = true, value_name = "threads|processes")]
    pub(crate) ipc_between: Option<String>,

    /// What wakes each sender for a due time: its own timer (`sender-timer`,
    /// the default), or the receiver, which sleeps to the due time and wakes it (`receiver`,
    /// rt-tests' structure: numbers comparable with pmqtest, ptsematest, svsematest and
    /// sigwaittest).
    #[arg(long, hide_short_help = true, value_name = "sender-timer|receiver")]
    pub(crate) ipc_pace: Option<String>,
}

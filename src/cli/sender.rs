//! `jitterlab run`'s options for the wake methods where another thread sends the wake
//! (`--wake signal|sigwait|mq|mutex|sem|sysv-sem|futex|pipe|eventfd|condvar`).

use super::*;

#[derive(Debug, Args, Clone, Default)]
pub struct SenderArgs {
    /// IPC wake methods: where each measuring thread's sender runs: `same` (its receiver's CPU,
    /// the default, as rt-tests' pmqtest/ptsematest/svsematest/sigwaittest pin a pair with -a),
    /// `other` (the next online CPU), or a CPU number.
    #[arg(long, value_name = "same|other|N")]
    pub sender_cpu: Option<String>,

    /// IPC wake methods: the senders' priority (fifo and rr). Default: the receivers' (--priority),
    /// as rt-tests gives both threads of a pair the same priority.
    #[arg(long, value_name = "PRIO", allow_negative_numbers = true)]
    pub sender_priority: Option<i32>,

    /// IPC wake methods: each sender is a thread of jitterlab (`threads`, the default) or a
    /// process of its own (`processes`, as svsematest and sigwaittest -f), with process-shared
    /// objects.
    #[arg(long, value_name = "threads|processes")]
    pub ipc_between: Option<String>,

    /// IPC wake methods: what wakes each sender for a due time: its own timer (`sender-timer`,
    /// the default), or the receiver, which sleeps to the due time and wakes it (`receiver`,
    /// rt-tests' structure: numbers comparable with pmqtest, ptsematest, svsematest and
    /// sigwaittest).
    #[arg(long, value_name = "sender-timer|receiver")]
    pub ipc_pace: Option<String>,
}

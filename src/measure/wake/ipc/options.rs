//! The choices of `--ipc-between` and `--ipc-pace`: what a sender is, and what wakes it.

use super::Scope;

/// Whether a receiver's sender is a thread of jitterlab or a process of its own
/// (`--ipc-between`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Between {
    #[default]
    Threads,
    /// A child forked by the receiver's thread; the pair's objects are process-shared.
    Processes,
}

impl Between {
    pub(crate) const NAMES: [&str; 2] = ["threads", "processes"];

    pub fn named(name: &str) -> Option<Between> {
        match name {
            "threads" => Some(Between::Threads),
            "processes" => Some(Between::Processes),
            _ => None,
        }
    }

    /// The name the command line and run.json use.
    pub fn name(self) -> &'static str {
        match self {
            Between::Threads => "threads",
            Between::Processes => "processes",
        }
    }

    /// What a sender is, in messages.
    pub(crate) fn role(self) -> &'static str {
        match self {
            Between::Threads => "thread",
            Between::Processes => "process",
        }
    }

    /// Who may use the pair's synchronisation objects.
    pub fn scope(self) -> Scope {
        match self {
            Between::Threads => Scope::Process,
            Between::Processes => Scope::Shared,
        }
    }
}

/// What wakes the sender for each due time (`--ipc-pace`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pace {
    /// The sender sleeps to the due time on its own timer, then stamps and sends (jitterlab's
    /// definition: the sender runs after the CPU did other work for an interval).
    #[default]
    SenderTimer,
    /// The receiver sleeps to the due time, then wakes the sender, which stamps and sends at
    /// once, as rt-tests' pmqtest, ptsematest, svsematest and sigwaittest do (their "sync"
    /// object): numbers comparable with theirs. A delay of the pair before the stamp (e.g. a
    /// load holding the receiver's CPU at the due time) is not in the latency.
    Receiver,
}

impl Pace {
    pub(crate) const NAMES: [&str; 2] = ["sender-timer", "receiver"];

    pub fn named(name: &str) -> Option<Pace> {
        match name {
            "sender-timer" => Some(Pace::SenderTimer),
            "receiver" => Some(Pace::Receiver),
            _ => None,
        }
    }

    /// The name the command line and run.json use.
    pub fn name(self) -> &'static str {
        match self {
            Pace::SenderTimer => "sender-timer",
            Pace::Receiver => "receiver",
        }
    }
}

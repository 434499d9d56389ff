//! The cyclictest options jitterlab cyclictest refuses, each with why and what to use instead
//! (docs/cyclictest.md lists the same). A refusal is exit 2 before anything runs: a script that
//! relies on one of these must not get figures measured some other way.

/// (long name, why it is refused and what to use instead).
pub(crate) const REFUSED: &[(&str, &str)] = &[
    (
        "tracemark",
        "jitterlab writes no ftrace trace_marker; `jitterlab run --trace` records a trace of its own and explains each late wakeup",
    ),
    (
        "context",
        "context-switch tracing (-C) was removed from cyclictest in rt-tests 2.0; `jitterlab run --trace` explains what delayed each late wakeup",
    ),
    (
        "smi",
        "jitterlab does not read the SMI counter MSR; an SMI shows as a gap with no trace event in `jitterlab noise --trace`",
    ),
    (
        "verbose",
        "jitterlab does not print every sample on stdout; `jitterlab run --samples` keeps every sample and `jitterlab export --format csv` prints them",
    ),
    ("oscope", "it only goes with -v (see there)"),
    (
        "aligned",
        "jitterlab's threads are not aligned to a common start offset",
    ),
    (
        "secaligned",
        "jitterlab's threads are not aligned to a full second",
    ),
    (
        "priospread",
        "jitterlab runs every measuring thread at the same priority",
    ),
    (
        "fifo",
        "jitterlab writes no status FIFO; its result directory holds the figures",
    ),
    (
        "spike",
        "jitterlab does not list spikes this way; `jitterlab run --trace --explain-above <N>us` explains each one in events.jsonl",
    ),
    ("spike-nodes", "it only goes with --spike (see there)"),
    (
        "resolution",
        "jitterlab does not measure the clock's resolution",
    ),
    (
        "dbg_cyclictest",
        "it prints cyclictest's internal state, which jitterlab does not have",
    ),
];

/// Why `long` is refused, or None for an option jitterlab cyclictest takes.
pub fn reason(long: &str) -> Option<&'static str> {
    REFUSED
        .iter()
        .find(|(name, _)| *name == long)
        .map(|(_, why)| *why)
}

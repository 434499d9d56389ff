//! `rtla timerlat hist`'s command line (tools/tracing/rtla, `timerlat_hist_parse_args`), in its
//! terms and units: `-p` in us, `-d` in seconds or with s, m, h, d, `-P` as `f:95`. What
//! jitterlab cannot honour is refused by name, with why and what to use instead ([`REFUSED`],
//! docs/timerlat.md). jitterlab's own: `--jitterlab-out DIR`, `--jitterlab-engine kernel|own`
//! (the kernel's timerlat tracer or jitterlab's threads), and `--jitterlab-trace` /
//! `--jitterlab-no-trace`: whether jitterlab's own threads are traced (`run --trace`), which
//! fills their IRQ column (by default, wherever tracefs is usable).

use crate::commands::getopt::{self, Found, Spec, Takes, Tool, spec};
use crate::error::{Failure, Result};
use crate::trace::timerlat::Engine;
use std::path::PathBuf;

/// The options given, in rtla's terms and units.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimerlatOptions {
    /// `-c`, as written; None: every online CPU.
    pub cpus: Option<String>,
    /// `-H`: jitterlab's drain side there.
    pub(crate) housekeeping: Option<String>,
    /// `-d`, s; None: until Ctrl-C.
    pub duration_s: Option<u64>,
    /// `-p`, us.
    pub(crate) period_us: u64,
    /// `-P`: (policy name, priority).
    pub policy: (&'static str, i32),
    pub bucket_size: u64,
    pub entries: usize,
    pub(crate) nano: bool,
    pub no_irq: bool,
    pub(crate) no_thread: bool,
    pub(crate) no_header: bool,
    pub(crate) no_summary: bool,
    pub(crate) no_index: bool,
    pub(crate) with_zeros: bool,
    /// `--dma-latency`, us.
    pub(crate) dma_latency_us: Option<u32>,
    pub(crate) jitterlab_out: Option<PathBuf>,
    pub(crate) jitterlab_trace: bool,
    /// `--jitterlab-no-trace`: jitterlab's own engine without its trace (its default is the
    /// trace wherever tracefs is usable, for the IRQ columns).
    pub(crate) jitterlab_no_trace: bool,
    /// `--jitterlab-engine`: None, the kernel's timerlat tracer where there is one.
    pub(crate) engine: Option<Engine>,
    pub help: bool,
}

impl Default for TimerlatOptions {
    fn default() -> Self {
        TimerlatOptions {
            cpus: None,
            housekeeping: None,
            duration_s: None,
            period_us: 1000,
            // The timerlat threads' default: SCHED_FIFO 95.
            policy: ("fifo", 95),
            bucket_size: 1,
            entries: 256,
            nano: false,
            no_irq: false,
            no_thread: false,
            no_header: false,
            no_summary: false,
            no_index: false,
            with_zeros: false,
            dma_latency_us: None,
            jitterlab_out: None,
            jitterlab_trace: false,
            jitterlab_no_trace: false,
            engine: None,
            help: false,
        }
    }
}

static SPECS: &[Spec] = &[
    spec(Some('a'), "auto", Takes::Value),
    spec(Some('b'), "bucket-size", Takes::Value),
    spec(Some('c'), "cpus", Takes::Value),
    spec(Some('C'), "cgroup", Takes::Optional(|_| false)),
    spec(Some('d'), "duration", Takes::Value),
    spec(Some('D'), "debug", Takes::Nothing),
    spec(Some('e'), "event", Takes::Value),
    spec(Some('E'), "entries", Takes::Value),
    spec(Some('h'), "help", Takes::Nothing),
    spec(Some('H'), "house-keeping", Takes::Value),
    spec(Some('i'), "irq", Takes::Value),
    spec(Some('k'), "kernel-threads", Takes::Nothing),
    spec(Some('n'), "nano", Takes::Nothing),
    spec(Some('p'), "period", Takes::Value),
    spec(Some('P'), "priority", Takes::Value),
    spec(Some('s'), "stack", Takes::Value),
    spec(Some('t'), "trace", Takes::Optional(|_| false)),
    spec(Some('T'), "thread", Takes::Value),
    spec(Some('u'), "user-threads", Takes::Nothing),
    spec(Some('U'), "user-load", Takes::Nothing),
    spec(None, "no-irq", Takes::Nothing),
    spec(None, "no-thread", Takes::Nothing),
    spec(None, "no-header", Takes::Nothing),
    spec(None, "no-summary", Takes::Nothing),
    spec(None, "no-index", Takes::Nothing),
    spec(None, "with-zeros", Takes::Nothing),
    spec(None, "dma-latency", Takes::Value),
    spec(None, "no-aa", Takes::Nothing),
    spec(None, "dump-tasks", Takes::Nothing),
    spec(None, "filter", Takes::Value),
    spec(None, "trigger", Takes::Value),
    spec(None, "warm-up", Takes::Value),
    spec(None, "trace-buffer-size", Takes::Value),
    spec(None, "deepest-idle-state", Takes::Value),
    spec(None, "on-threshold", Takes::Value),
    spec(None, "on-end", Takes::Value),
    spec(None, "jitterlab-out", Takes::Value),
    spec(None, "jitterlab-trace", Takes::Nothing),
    spec(None, "jitterlab-no-trace", Takes::Nothing),
    spec(None, "jitterlab-engine", Takes::Value),
];

static TOOL: Tool = Tool {
    name: "timerlat",
    origin: "rtla timerlat hist",
    specs: SPECS,
    example: "-d 60",
};

/// (long name, why jitterlab timerlat refuses it and what to use instead).
pub(crate) const REFUSED: &[(&str, &str)] = &[
    (
        "auto",
        "jitterlab does not stop on a threshold and save a kernel trace; `jitterlab run --trace` explains every late wakeup over --explain-above",
    ),
    (
        "irq",
        "jitterlab does not stop the run on a threshold; `--budget 'max<...'` fails a `jitterlab run` on one",
    ),
    (
        "thread",
        "jitterlab does not stop the run on a threshold; `--budget 'max<...'` fails a `jitterlab run` on one",
    ),
    ("stack", "jitterlab records no kernel stack traces"),
    (
        "trace",
        "jitterlab saves no timerlat trace file; --jitterlab-trace fills the IRQ column from jitterlab's own trace, and `jitterlab run --trace` keeps the explanations in events.jsonl",
    ),
    (
        "event",
        "jitterlab's trace instance enables its own events (docs/tracing.md)",
    ),
    (
        "filter",
        "jitterlab's trace instance enables its own events (docs/tracing.md)",
    ),
    (
        "trigger",
        "jitterlab's trace instance enables its own events (docs/tracing.md)",
    ),
    (
        "cgroup",
        "jitterlab places its threads itself; `jitterlab run --cpuset-partition` gives them a cpuset",
    ),
    (
        "user-load",
        "jitterlab measures its own threads, not a workload's",
    ),
    (
        "dump-tasks",
        "there is no auto-analysis to dump tasks from; `jitterlab run --trace` names the task that delayed each late wakeup",
    ),
    ("warm-up", "jitterlab counts every wakeup from the start"),
    (
        "trace-buffer-size",
        "jitterlab sizes its trace buffers itself (docs/tracing.md)",
    ),
    (
        "deepest-idle-state",
        "not built in jitterlab (this project's VM has no cpuidle driver to test it on)",
    ),
    ("on-threshold", "jitterlab runs no actions on a threshold"),
    ("on-end", "jitterlab runs no actions at the end"),
];

/// Parses rtla timerlat hist's options (the words after `timerlat`, or after `timerlat hist`).
pub fn parse(args: &[String]) -> Result<TimerlatOptions> {
    let args = match args.first().map(String::as_str) {
        Some("hist") => &args[1..],
        Some("top") => {
            return Err(Failure::usage(
                "timerlat: jitterlab timerlat prints `rtla timerlat hist`'s output; top's periodic redraw is not built (`jitterlab run` shows a live view)",
            ));
        }
        _ => args,
    };
    let mut o = TimerlatOptions::default();
    for found in getopt::split(&TOOL, args)? {
        apply(&mut o, &found)?;
    }
    if o.jitterlab_trace && o.jitterlab_no_trace {
        return Err(Failure::usage(
            "timerlat: --jitterlab-trace and --jitterlab-no-trace together: give one (the trace is on by default wherever tracefs is usable)",
        ));
    }
    if o.no_irq && o.no_thread {
        return Err(Failure::usage(
            "timerlat: --no-irq and --no-thread together leave nothing to print (rtla refuses it too)",
        ));
    }
    Ok(o)
}

fn bad(found: &Found, what: &str) -> Failure {
    Failure::usage(format!(
        "timerlat: {} '{}': {what}",
        found.written,
        found.value.as_deref().unwrap_or("")
    ))
}

fn apply(o: &mut TimerlatOptions, found: &Found) -> Result<()> {
    if let Some((_, reason)) = REFUSED.iter().find(|(n, _)| *n == found.spec.long) {
        return Err(Failure::usage(format!(
            "timerlat: {} is not supported by jitterlab timerlat: {reason}",
            found.written
        )));
    }
    let value = found.value.as_deref().unwrap_or("");
    let number = |what: &str| -> Result<u64> { getopt::number(&TOOL, found, what) };
    match found.spec.long {
        "bucket-size" => {
            o.bucket_size = number("a bucket size")?;
            if !(1..1_000_000).contains(&o.bucket_size) {
                return Err(bad(found, "expected 1 to 999999"));
            }
        }
        "entries" => {
            let n = number("a number of entries")?;
            if !(10..10_000_000).contains(&n) {
                return Err(bad(found, "expected 10 to 9999999 entries"));
            }
            o.entries = n as usize;
        }
        "cpus" => o.cpus = Some(value.to_string()),
        "house-keeping" => o.housekeeping = Some(value.to_string()),
        "duration" => {
            o.duration_s = Some(
                getopt::duration_seconds(value)
                    .filter(|&s| s > 0)
                    .ok_or_else(|| bad(found, "expected seconds above 0, or with s, m, h or d"))?,
            )
        }
        "period" => {
            o.period_us = number("a period in us")?;
            if !(100..=1_000_000).contains(&o.period_us) {
                return Err(bad(
                    found,
                    "expected a period of 100 to 1000000 us, as rtla",
                ));
            }
        }
        "priority" => o.policy = priority(found, value)?,
        "nano" => o.nano = true,
        "no-irq" => o.no_irq = true,
        "no-thread" => o.no_thread = true,
        "no-header" => o.no_header = true,
        "no-summary" => o.no_summary = true,
        "no-index" => o.no_index = true,
        "with-zeros" => o.with_zeros = true,
        "dma-latency" => o.dma_latency_us = Some(getopt::number(&TOOL, found, "a latency in us")?),
        "jitterlab-out" => o.jitterlab_out = Some(PathBuf::from(value)),
        "jitterlab-trace" => o.jitterlab_trace = true,
        "jitterlab-no-trace" => o.jitterlab_no_trace = true,
        "jitterlab-engine" => {
            o.engine = Some(match value {
                "kernel" => Engine::Kernel,
                "own" => Engine::Own,
                _ => return Err(bad(found, "expected kernel or own")),
            })
        }
        "help" => o.help = true,
        // Debug output, the auto-analysis, and the choice of kernel or user threads: jitterlab's
        // threads are its own user-space threads whatever is asked (docs/timerlat.md).
        "debug" | "no-aa" | "kernel-threads" | "user-threads" => {}
        other => unreachable!("option --{other} has a spec but no meaning"),
    }
    Ok(())
}

/// `-P o:prio|r:prio|f:prio` (`d:` refused).
fn priority(found: &Found, value: &str) -> Result<(&'static str, i32)> {
    if value.starts_with("d:") {
        return Err(bad(
            found,
            "SCHED_DEADLINE threads wake by their own period, not the timerlat period; use `jitterlab run --policy deadline`",
        ));
    }
    let (kind, prio) = value
        .split_once(':')
        .ok_or_else(|| bad(found, "expected o:prio, r:prio or f:prio"))?;
    let prio: i32 = prio
        .parse()
        .map_err(|_| bad(found, "expected o:prio, r:prio or f:prio"))?;
    match kind {
        "o" => Ok(("other", 0)),
        "r" if (1..=99).contains(&prio) => Ok(("rr", prio)),
        "f" if (1..=99).contains(&prio) => Ok(("fifo", prio)),
        "r" | "f" => Err(bad(found, "expected a real-time priority 1 to 99")),
        _ => Err(bad(found, "expected o:prio, r:prio or f:prio")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(line: &str) -> TimerlatOptions {
        let args: Vec<String> = line.split_whitespace().map(String::from).collect();
        parse(&args).unwrap()
    }

    fn refused(line: &str) -> String {
        let args: Vec<String> = line.split_whitespace().map(String::from).collect();
        parse(&args).unwrap_err().message
    }

    #[test]
    fn rtlas_spellings() {
        let o = parsed("hist -c 0-1 -d 10m -p 500 -P f:80 -b 2 -E 100 -n --no-irq --with-zeros");
        assert_eq!(o.cpus.as_deref(), Some("0-1"));
        assert_eq!((o.duration_s, o.period_us), (Some(600), 500));
        assert_eq!(o.policy, ("fifo", 80));
        assert_eq!((o.bucket_size, o.entries), (2, 100));
        assert!(o.nano && o.no_irq && o.with_zeros);
        assert_eq!(parsed("").policy, ("fifo", 95));
        assert_eq!(parsed("-P o:0").policy, ("other", 0));
        assert_eq!(parsed("").engine, None);
        assert_eq!(
            parsed("--jitterlab-engine kernel").engine,
            Some(Engine::Kernel)
        );
        assert_eq!(parsed("--jitterlab-engine=own").engine, Some(Engine::Own));
    }

    #[test]
    fn what_is_refused_says_why() {
        assert!(refused("-t").contains("--jitterlab-trace"));
        assert!(refused("-a 50").contains("--explain-above"));
        assert!(refused("-P d:1ms:10ms").contains("deadline"));
        assert!(refused("--no-irq --no-thread").contains("nothing to print"));
        assert!(refused("top").contains("hist"));
        assert!(refused("-E 5").contains("10 to"));
        assert!(refused("-p 10").contains("100 to"));
        assert!(refused("--jitterlab-engine bpf").contains("kernel or own"));
    }
}

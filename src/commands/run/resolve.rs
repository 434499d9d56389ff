//! `jitterlab run`'s options to a validated [`RunPlan`]: every bad input is found here, with the
//! option and value named and what is accepted, before any thread starts or any file is made.

use crate::cli::RunArgs;
use crate::cpulist::{format_cpu_list, online_cpus, parse_cpu_list};
use crate::error::{Failure, Result};
use crate::load::LoadSpec;
use crate::measure::wake::ClockUse;
use crate::measure::{Clock, PolicyKind, WakeMethod};
use crate::plan::{
    DEFAULT_DURATION_NS, LatencySpec, MAX_RING_SIZE, Measurement, RunLength, RunPlan,
    check_periods, check_wake,
};
use crate::units::parse_duration_ns;

fn duration_arg(flag: &str, text: &str) -> Result<u64> {
    parse_duration_ns(text).map_err(|e| Failure::usage(format!("{flag}: {e}")))
}

/// Validates `args` against this system's online CPUs.
pub fn resolve(args: &RunArgs) -> Result<RunPlan> {
    let online = online_cpus().map_err(Failure::system)?;
    resolve_with_online(args, &online)
}

/// [`resolve`] with the online CPUs given, for tests.
pub fn resolve_with_online(args: &RunArgs, online: &[usize]) -> Result<RunPlan> {
    let interval_ns = duration_arg("--interval", &args.interval)?;
    if interval_ns < 1_000 {
        return Err(Failure::usage(format!(
            "--interval {}: below 1us; the interval must be at least 1us (e.g. 100us, 1ms)",
            args.interval
        )));
    }
    let distance_ns = duration_arg("--distance", &args.distance)?;
    let interval_step_ns = args
        .interval_step
        .as_deref()
        .map(|s| duration_arg("--interval-step", s))
        .transpose()?
        .unwrap_or(0);

    let length = match (&args.duration, args.loops) {
        (_, Some(0)) => return Err(Failure::usage("--loops 0: at least one loop is needed")),
        (_, Some(n)) => RunLength::Loops(n),
        (Some(d), None) => {
            let ns = duration_arg("--duration", d)?;
            if ns == 0 {
                return Err(Failure::usage(format!(
                    "--duration {d}: a run needs a duration above zero (e.g. 30s)"
                )));
            }
            RunLength::Duration(ns)
        }
        (None, None) => RunLength::Duration(DEFAULT_DURATION_NS),
    };

    let online_text = format_cpu_list(online);
    let cpus = match &args.cpus {
        None => online.to_vec(),
        Some(text) => parse_cpu_list(text).map_err(|e| Failure::usage(format!("--cpus: {e}")))?,
    };
    check_online("--cpus", &cpus, online, &online_text)?;

    let (range, default_priority) = args.policy.priorities();
    let priority = args.priority.unwrap_or(default_priority);
    if !range.contains(&priority) {
        return Err(Failure::usage(format!(
            "--priority {priority}: outside the range of --policy {} ({}..={}); {}",
            args.policy.name(),
            range.start(),
            range.end(),
            if *range.end() == 0 {
                "omit --priority, or use --policy fifo or rr for a real-time priority"
            } else {
                "real-time priorities are 1 to 99"
            }
        )));
    }

    let wake = args.wake;
    let clock = check_wake(
        wake,
        args.clock,
        &cpus,
        interval_ns,
        distance_ns,
        interval_step_ns,
    )?;

    let deadline_ns = args
        .deadline
        .as_deref()
        .map(|d| duration_arg("--deadline", d))
        .transpose()?;
    if deadline_ns == Some(0) {
        return Err(Failure::usage(
            "--deadline 0: a deadline must be above zero",
        ));
    }
    let log_interval_ns = duration_arg("--log-interval", &args.log_interval)?;
    if log_interval_ns < 10_000_000 {
        return Err(Failure::usage(format!(
            "--log-interval {}: below 10ms; each interval writes one histogram per CPU, so use 10ms or more (default 1s)",
            args.log_interval
        )));
    }

    let mut loads = Vec::new();
    for text in &args.load {
        let load = LoadSpec::parse(text).map_err(|e| Failure::usage(format!("--load: {e}")))?;
        check_online(
            &format!("--load {text}"),
            &load.cpus(),
            online,
            &online_text,
        )?;
        load.check_on_system(&cpus, online)
            .map_err(|e| Failure::usage(format!("--load: {e}")))?;
        loads.push(load);
    }
    let scenario = args
        .scenario
        .as_deref()
        .map(|path| {
            crate::load::scenario::load_file(path, online)
                .and_then(|s| s.check_cpus(&cpus, online).map(|_| s))
        })
        .transpose()
        .map_err(|e| Failure::usage(format!("--scenario: {e}")))?;
    crate::load::memory_guard::check_run(&loads, scenario.as_ref()).map_err(Failure::usage)?;
    // The scenario sets the length (clap refuses --duration and --loops with it).
    let length = scenario
        .as_ref()
        .map_or(length, |s| RunLength::Duration(s.length_ns));
    check_periods(&cpus, interval_ns, distance_ns, interval_step_ns, length)?;

    // One second of samples: the recorder drains every 100 ms, so a tenfold margin, while the
    // ring stays small enough to live in the cache (a cold slot per push costs a cache miss in
    // the measuring loop; see bench/README.md).
    let ring_size = args
        .ring_size
        .unwrap_or_else(|| (1_000_000_000 / interval_ns).clamp(1024, 262_144) as usize);
    if !(16..=MAX_RING_SIZE).contains(&ring_size) {
        return Err(Failure::usage(format!(
            "--ring-size {ring_size}: outside 16..={MAX_RING_SIZE} samples per thread (the largest ring takes 128 MiB of locked memory per thread and holds 4 s of samples at a 1us interval); the default, one second of samples at the interval, suits almost every run"
        )));
    }

    let pm_qos_us = match args.pm_qos.as_str() {
        "off" => None,
        n => Some(n.parse::<u32>().ok().filter(|v| *v <= i32::MAX as u32).ok_or_else(|| {
            Failure::usage(format!("--pm-qos {n}: expected 'off' or a latency in microseconds from 0 to 2147483647 (0 keeps CPUs out of deep idle states)"))
        })?),
    };
    let budget = crate::analysis::budget::Budget::from_option(args.budget.as_deref())?;
    if let Some(cpu) = budget
        .iter()
        .flat_map(|b| b.named_cpus())
        .find(|c| !cpus.contains(c))
    {
        return Err(Failure::usage(format!(
            "--budget: a clause names cpu{cpu}, which this run does not measure (CPUs {}); name a measured CPU or add it to --cpus",
            format_cpu_list(&cpus)
        )));
    }
    let explain_above_ns = check_trace(args, wake, clock)?;
    let sender =
        super::sender::resolve_sender(&args.sender, wake, args.policy, priority, &cpus, online)?;
    let inversion = super::inversion::resolve_inversion(
        &args.inversion,
        wake,
        args.policy,
        priority,
        interval_ns,
    )?;
    let under_ns = args
        .under
        .iter()
        .map(|d| duration_arg("--under", d))
        .collect::<Result<Vec<u64>>>()?;

    Ok(RunPlan {
        cpus,
        policy: args.policy,
        priority,
        measurement: Measurement::Latency(LatencySpec {
            wake,
            clock,
            interval_ns,
            distance_ns,
            interval_step_ns,
            deadline_ns,
            sender,
            inversion,
        }),
        length,
        log_interval_ns,
        loads,
        load_texts: args.load.clone(),
        scenario,
        samples: args.samples,
        samples_format: args.samples_format.unwrap_or_default(),
        summary_every: args.summary_every,
        ring_size,
        mlock: !args.no_mlock,
        pm_qos_us,
        trace: args.trace,
        explain_above_ns,
        out: args.out.clone(),
        allow_shared_cpus: args.allow_shared_cpus,
        segments: None,
        budget,
        under_ns,
    })
}

/// `--trace` and `--explain-above`: the split needs pinned threads on CLOCK_MONOTONIC.
fn check_trace(args: &RunArgs, wake: &WakeMethod, clock: Clock) -> Result<Option<u64>> {
    let explain = args
        .explain_above
        .as_deref()
        .map(|d| duration_arg("--explain-above", d))
        .transpose()?;
    if !args.trace {
        if let Some(text) = &args.explain_above {
            return Err(Failure::usage(format!(
                "--explain-above {text}: explanations come from the kernel trace; add --trace"
            )));
        }
        return Ok(None);
    }
    if clock != Clock::Monotonic {
        // The option that chose the clock.
        let option = match wake.clocks {
            ClockUse::Own(_) => format!("--wake {}", wake.name),
            ClockUse::OneOf(_) => format!("--clock {}", clock.name()),
        };
        return Err(Failure::usage(format!(
            "--trace with {option}: trace times are CLOCK_MONOTONIC (trace_clock=mono) and a {} wakeup cannot be placed on them exactly; drop {option}",
            clock.name()
        )));
    }
    if args.policy == PolicyKind::Deadline {
        return Err(Failure::usage(
            "--trace with --policy deadline: the split follows each thread on its CPU, and SCHED_DEADLINE threads cannot be pinned; use --policy fifo or rr",
        ));
    }
    Ok(explain)
}

fn check_online(what: &str, cpus: &[usize], online: &[usize], online_text: &str) -> Result<()> {
    match cpus.iter().find(|c| !online.contains(c)) {
        Some(c) => Err(Failure::usage(format!(
            "{what}: CPU {c} is not online; this system's online CPUs are {online_text}"
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::Policy;
    use crate::plan::deadline_runtime_ns;
    use clap::Parser;

    fn args(extra: &[&str]) -> RunArgs {
        let mut argv = vec!["jitterlab", "run"];
        argv.extend_from_slice(extra);
        match crate::cli::Cli::try_parse_from(argv).unwrap().command {
            crate::cli::Command::Run(a) => *a,
            _ => unreachable!(),
        }
    }

    fn err(extra: &[&str]) -> String {
        let e = resolve_with_online(&args(extra), &[0, 1]).unwrap_err();
        assert_eq!(e.code, crate::error::ExitCode::Usage, "{}", e.message);
        e.message
    }

    #[test]
    fn defaults_follow_the_design() {
        let p = resolve_with_online(&args(&[]), &[0, 1]).unwrap();
        assert_eq!(p.cpus, vec![0, 1]);
        assert_eq!(p.priority, 95);
        assert_eq!(p.thread_interval_ns(0), 1_000_000);
        assert_eq!(p.length, RunLength::Duration(60_000_000_000));
        assert_eq!(p.pm_qos_us, Some(0));
        assert!(p.mlock);
        assert_eq!(p.thread_deadline_ns(1), 1_000_000);
        assert_eq!(p.thread_policy(0), Policy::Fifo(95));
    }

    /// Periods that would wrap to 0 (a divide by zero in the loop), to a tiny value, or sleep
    /// for centuries are refused here, naming the option (issue: M2).
    #[test]
    fn period_arithmetic_is_checked_at_plan_time() {
        for (extra, named) in [
            (&["--distance", "18446744073708551616ns"][..], "--distance"),
            (&["--distance", "18446744073708551617ns"][..], "--distance"),
            (&["--distance", "18446744073708551615ns"][..], "--distance"),
            (&["--distance", "3600s"][..], "--distance"),
            (&["--interval", "2h"][..], "--interval"),
            (
                &["--interval-step", "18446744073708551616ns"][..],
                "--interval-step",
            ),
            (
                &["--interval-step", "1s", "--loops", "4000"][..],
                "--interval-step",
            ),
            (&["--duration", "3651d"][..], "--duration"),
        ] {
            let message = err(extra);
            assert!(message.starts_with(named), "{extra:?}: {message}");
            assert!(message.contains("longest"), "{extra:?}: {message}");
        }
        // At the limits: thread 1 sleeps exactly an hour; 3599 steps of 1 s from 1 s.
        assert!(
            resolve_with_online(&args(&["--interval", "1s", "--distance", "3599s"]), &[0, 1])
                .is_ok()
        );
        assert!(
            resolve_with_online(
                &args(&[
                    "--interval",
                    "1s",
                    "--interval-step",
                    "1s",
                    "--loops",
                    "3600"
                ]),
                &[0, 1]
            )
            .is_ok()
        );
    }

    #[test]
    fn distance_and_deadline_per_thread() {
        let p = resolve_with_online(
            &args(&[
                "--interval",
                "200us",
                "--distance",
                "50us",
                "--policy",
                "deadline",
            ]),
            &[0, 1],
        )
        .unwrap();
        assert_eq!(p.thread_interval_ns(1), 250_000);
        assert_eq!(
            p.thread_policy(1),
            Policy::Deadline {
                runtime_ns: 25_000,
                deadline_ns: 250_000,
                period_ns: 250_000
            }
        );
        assert_eq!(deadline_runtime_ns(1_000_000), 100_000);
        assert_eq!(deadline_runtime_ns(20_000), 10_000);
        assert_eq!(deadline_runtime_ns(5_000), 5_000);
    }

    #[test]
    fn bad_inputs_name_the_value() {
        assert!(err(&["--interval", "0ms"]).contains("below 1us"));
        assert!(err(&["--interval", "500ns"]).contains("below 1us"));
        assert!(err(&["--interval", "-1ms"]).contains("'-1ms'"));
        assert!(err(&["--interval", "1"]).contains("no unit"));
        assert!(err(&["--cpus", "7"]).contains("CPU 7 is not online"));
        assert!(err(&["--cpus", "x"]).contains("'x'"));
        assert!(err(&["--priority", "100"]).contains("outside the range"));
        assert!(err(&["--priority", "0"]).contains("outside the range"));
        assert!(err(&["--policy", "other", "--priority", "5"]).contains("omit --priority"));
        assert!(err(&["--duration", "0s"]).contains("above zero"));
        assert!(err(&["--duration", "soon"]).contains("'soon'"));
        assert!(err(&["--loops", "0"]).contains("at least one"));
        assert!(err(&["--load", "tornado:cpu=0"]).contains("unknown load 'tornado'"));
        assert!(err(&["--load", "spike:cpu=9"]).contains("CPU 9 is not online"));
        assert!(err(&["--load", "spike:len=2ms,every=1ms"]).contains("below every"));
        assert!(err(&["--wake", "itimer"]).contains("one measuring thread"));
        assert!(err(&["--wake", "nanosleep", "--clock", "realtime"]).contains("monotonic"));
        assert!(err(&["--wake", "timerfd", "--interval-step", "1us"]).contains("fixed-period"));
        assert!(err(&["--wake", "select", "--interval", "1500ns"]).contains("whole microseconds"));
        assert!(
            err(&["--wake", "rtc", "--cpus", "0", "--interval", "1ms"]).contains("power of two")
        );
        assert!(err(&["--pm-qos", "low"]).contains("'off' or a latency"));
        assert!(err(&["--log-interval", "1ms"]).contains("below 10ms"));
        assert!(err(&["--ring-size", "15"]).contains("--ring-size 15: outside 16..=4194304"));
        for huge in ["4194305", "100000000000", "4611686018427387904"] {
            assert!(err(&["--ring-size", huge]).contains(&format!("--ring-size {huge}: outside")));
        }
        assert!(err(&["--budget", "max<1ms,p99<<2us"]).contains("clause 2 'p99<<2us'"));
        assert!(
            err(&["--cpus", "1", "--budget", "cpu0:max<1ms"]).contains("does not measure (CPUs 1)")
        );
        assert!(err(&["--explain-above", "1ms"]).contains("add --trace"));
        assert!(err(&["--trace", "--explain-above", "soon"]).contains("--explain-above: 'soon'"));
        assert!(err(&["--trace", "--clock", "realtime"]).contains("drop --clock realtime"));
        assert!(err(&["--trace", "--policy", "deadline"]).contains("cannot be pinned"));
    }

    /// A method with a clock of its own measures on it, and refuses another --clock and --trace.
    #[test]
    fn a_method_with_its_own_clock_measures_on_it() {
        let p = resolve_with_online(&args(&["--wake", "clock-nanosleep-tai"]), &[0, 1]).unwrap();
        assert_eq!(p.clock(), Clock::Tai);
        assert!(
            err(&["--wake", "clock-nanosleep-tai", "--clock", "realtime"])
                .contains("always sleeps on the tai clock; drop --clock realtime")
        );
        assert!(err(&["--wake", "clock-nanosleep-tai", "--trace"]).contains(
            "a tai wakeup cannot be placed on them exactly; drop --wake clock-nanosleep-tai"
        ));
    }

    /// The IPC methods are traced too: the explanations follow each receiver's sender.
    #[test]
    fn ipc_methods_can_be_traced() {
        let p = resolve_with_online(
            &args(&["--wake", "mq", "--trace", "--sender-cpu", "other"]),
            &[0, 1],
        )
        .unwrap();
        assert!(p.trace);
        assert_eq!(
            p.measurement
                .latency()
                .unwrap()
                .sender
                .as_ref()
                .unwrap()
                .cpus,
            [1, 0]
        );
        assert!(err(&["--wake", "mq", "--trace", "--clock", "realtime"]).contains("drop --clock"));
    }

    #[test]
    fn explanations_default_to_each_deadline() {
        let p = resolve_with_online(&args(&["--trace", "--distance", "100us"]), &[0, 1]).unwrap();
        assert!(p.trace);
        assert_eq!(p.thread_explain_above_ns(1), 1_100_000);
        let p =
            resolve_with_online(&args(&["--trace", "--explain-above", "80us"]), &[0, 1]).unwrap();
        assert_eq!(p.thread_explain_above_ns(1), 80_000);
    }
}

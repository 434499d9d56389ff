//! The latency options (`run`, `sweep`, `monitor`) to a validated [`RunPlan`]: every bad input
//! is found here, with the option and value named and what is accepted, before any thread
//! starts or any file is made. The groups every measuring command shares are resolved by
//! `shared.rs`; this file resolves the latency group and fills the plan's latency fields.

use super::shared::{self, Records, SharedGroups, duration_arg};
use crate::cli::{InversionArgs, LatencyArgs, LatencyRunArgs, RunArgs, SenderArgs};
use crate::cpulist::online_cpus;
use crate::error::{Failure, Result};
use crate::measure::wake::ClockUse;
use crate::measure::{Clock, PolicyKind, WakeMethod};
use crate::plan::actions::{self, Action, ActionPlan};
use crate::plan::{LatencySpec, MAX_RING_SIZE, Measurement, RunPlan, check_periods, check_wake};
use std::path::Path;

/// The option groups a latency run is made of, as `run`, `sweep` and `monitor` have them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LatencyGroups<'a> {
    pub shared: SharedGroups<'a>,
    pub latency: &'a LatencyArgs,
    /// `--interval-step` (`run`, `sweep`).
    pub interval_step: Option<&'a str>,
    pub sender: &'a SenderArgs,
    pub inversion: &'a InversionArgs,
    /// `--samples`, `--samples-format`, `--summary-every` (`run`, `sweep`).
    pub samples: bool,
    pub samples_format: Option<crate::format::samples::SampleLogFormat>,
    pub summary_every: Option<u64>,
}

impl<'a> LatencyGroups<'a> {
    /// `run`'s groups: all of them.
    pub(crate) fn of_run(args: &'a RunArgs) -> Self {
        Self::of_latency_run(&args.run, args.scenario.scenario.as_deref())
    }

    /// A latency run that ends, with `scenario` (a sweep level has none).
    pub(crate) fn of_latency_run(args: &'a LatencyRunArgs, scenario: Option<&'a Path>) -> Self {
        LatencyGroups {
            shared: SharedGroups {
                length: Some(&args.length),
                scenario,
                loops: args.loops,
                cpus: &args.cpus,
                loads: &args.loads,
                output: &args.output,
                trace: &args.trace,
                budget: &args.budget,
            },
            latency: &args.latency,
            interval_step: args.interval_step.as_deref(),
            sender: &args.sender,
            inversion: &args.inversion,
            samples: args.samples_and_json.samples,
            samples_format: args.samples_format,
            summary_every: args.summary_every,
        }
    }
}

/// Validates `args` against this system's online CPUs.
pub fn resolve(args: &RunArgs) -> Result<RunPlan> {
    let online = online_cpus().map_err(Failure::system)?;
    resolve_with_online(args, &online)
}

/// [`resolve`] with the online CPUs given, for tests.
pub(crate) fn resolve_with_online(args: &RunArgs, online: &[usize]) -> Result<RunPlan> {
    let mut plan = resolve_latency(&LatencyGroups::of_run(args), online)?;
    plan.actions = resolve_actions(&args.actions)?;
    Ok(plan)
}

/// `--on-threshold`, `--on-end` and `--action-gap`: spelled right (exit 2) and possible here
/// (the program exists, the process is ours to signal: exit 2 too, before anything starts).
pub(crate) fn resolve_actions(args: &crate::cli::groups::ActionArgs) -> Result<ActionPlan> {
    let parse = |flag: &str, texts: &[String], on_end: bool| {
        texts
            .iter()
            .map(|t| {
                let a = Action::parse(t, on_end)
                    .and_then(|a| a.check_system().map(|_| a))
                    .map_err(|e| Failure::usage(format!("{flag} {t}: {e}")))?;
                Ok(a)
            })
            .collect::<Result<Vec<Action>>>()
    };
    if args.action_wait.is_some() && args.on_threshold.is_empty() && args.on_end.is_empty() {
        return Err(Failure::usage(
            "--action-wait: there is no --on-threshold or --on-end action to wait for",
        ));
    }
    let on_threshold = parse("--on-threshold", &args.on_threshold, false)?;
    if args.snapshot_limit.is_some()
        && !on_threshold
            .iter()
            .any(|a| matches!(a, Action::Snapshot { .. }))
    {
        return Err(Failure::usage(
            "--snapshot-limit: there is no --on-threshold snapshot to bound",
        ));
    }
    Ok(ActionPlan {
        on_threshold,
        on_end: parse("--on-end", &args.on_end, true)?,
        gap_ns: match &args.action_gap {
            Some(t) => actions::parse_gap(t).map_err(Failure::usage)?,
            None => actions::DEFAULT_ACTION_GAP_NS,
        },
        wait_ns: match &args.action_wait {
            Some(t) => actions::parse_wait(t).map_err(Failure::usage)?,
            None => actions::DEFAULT_ACTION_WAIT_NS,
        },
        snapshot_limit_bytes: match &args.snapshot_limit {
            Some(t) => actions::parse_snapshot_limit(t).map_err(Failure::usage)?,
            None => actions::DEFAULT_SNAPSHOT_LIMIT_BYTES,
        },
    })
}

/// The interval, distance and step of the threads' periods, ns.
#[derive(Debug, Clone, Copy)]
struct Periods {
    interval_ns: u64,
    distance_ns: u64,
    step_ns: u64,
}

/// Validates a latency run's groups against `online`: the periods, the shared groups, then
/// what the wake method, the trace and the senders need of them.
pub(crate) fn resolve_latency(groups: &LatencyGroups, online: &[usize]) -> Result<RunPlan> {
    let latency = groups.latency;
    let periods = resolve_periods(latency, groups.interval_step)?;
    let shared = shared::resolve(
        &groups.shared,
        crate::plan::RunKind::Latency,
        latency.policy,
        default_ring_size(periods.interval_ns),
        online,
    )?;
    let clock = check_wake(
        latency.wake,
        latency.clock,
        &shared.cpus,
        periods.interval_ns,
        periods.distance_ns,
        periods.step_ns,
    )?;
    check_periods(
        &shared.cpus,
        periods.interval_ns,
        periods.distance_ns,
        periods.step_ns,
        shared.length,
    )?;
    if shared.trace {
        check_trace(latency.wake, clock, latency.policy)?;
    }
    let measurement = latency_fields(groups, &shared, periods, clock, online)?;
    let records = Records {
        samples: groups.samples,
        samples_format: groups.samples_format.unwrap_or_default(),
        summary_every: groups.summary_every,
        under_ns: latency
            .under
            .iter()
            .map(|d| duration_arg("--under", d))
            .collect::<Result<Vec<u64>>>()?,
    };
    shared.into_plan(measurement, records)
}

/// `--interval`, `--distance` and `--interval-step`.
fn resolve_periods(latency: &LatencyArgs, interval_step: Option<&str>) -> Result<Periods> {
    let interval_ns = duration_arg("--interval", &latency.interval)?;
    if interval_ns < 1_000 {
        return Err(Failure::usage(format!(
            "--interval {}: below 1us; the interval must be at least 1us (e.g. 100us, 1ms)",
            latency.interval
        )));
    }
    Ok(Periods {
        interval_ns,
        distance_ns: duration_arg("--distance", &latency.distance)?,
        step_ns: interval_step
            .map(|s| duration_arg("--interval-step", s))
            .transpose()?
            .unwrap_or(0),
    })
}

/// How long a ring holds by default: [`RING_SECONDS`] of samples at the thread's interval.
///
/// Sized in time, not in samples, because what a ring must outlast is a time: the longest the
/// drain side may be kept from draining (a starved recorder, a stall of the whole machine),
/// whatever the interval. Four seconds is forty rounds of the recorder, and ten times the
/// longest stall of both vCPUs seen on this project's VM. The memory is small at ordinary
/// intervals (32 bytes a sample: 128 KiB at 1 ms, 1.25 MiB at 100 us) and bounded by
/// [`MAX_RING_SIZE`] at the smallest (4 s at 1 us).
fn default_ring_size(interval_ns: u64) -> usize {
    let samples = RING_SECONDS * 1_000_000_000 / interval_ns.max(1);
    samples.clamp(MIN_DEFAULT_RING, MAX_RING_SIZE as u64) as usize
}

/// The time a default ring holds, s (see [`default_ring_size`]).
pub(crate) const RING_SECONDS: u64 = 4;
/// The smallest default ring, samples: long periods still get room for a burst.
const MIN_DEFAULT_RING: u64 = 4096;

/// What a latency run measures: the wake method on its clock, the periods, the deadline,
/// and the senders or the inversion scenario of the methods that have them.
fn latency_fields(
    groups: &LatencyGroups,
    shared: &shared::Shared,
    periods: Periods,
    clock: Clock,
    online: &[usize],
) -> Result<Measurement> {
    let latency = groups.latency;
    let deadline_ns = latency
        .deadline
        .as_deref()
        .map(|d| duration_arg("--deadline", d))
        .transpose()?;
    if deadline_ns == Some(0) {
        return Err(Failure::usage(
            "--deadline 0: a deadline must be above zero",
        ));
    }
    let sender = super::sender::resolve_sender(
        groups.sender,
        latency.wake,
        latency.policy,
        shared.priority,
        &shared.cpus,
        online,
    )?;
    let inversion = super::inversion::resolve_inversion(
        groups.inversion,
        latency.wake,
        latency.policy,
        shared.priority,
        periods.interval_ns,
    )?;
    Ok(Measurement::Latency(LatencySpec {
        wake: latency.wake,
        clock,
        interval_ns: periods.interval_ns,
        distance_ns: periods.distance_ns,
        interval_step_ns: periods.step_ns,
        deadline_ns,
        sender,
        inversion,
    }))
}

/// `--trace`: the split needs pinned threads on CLOCK_MONOTONIC.
fn check_trace(wake: &WakeMethod, clock: Clock, policy: PolicyKind) -> Result<()> {
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
    if policy == PolicyKind::Deadline {
        return Err(Failure::usage(
            "--trace with --policy deadline: the split follows each thread on its CPU, and SCHED_DEADLINE threads cannot be pinned; use --policy fifo or rr",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::Policy;
    use crate::plan::{RunLength, deadline_runtime_ns};
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

    /// Issue 39, N8: the time `--loops` takes counts `--interval-step` (60 loops from 1 ms
    /// stepping 5 ms: 60 ms + 5 ms x 60 x 59 / 2 = 8.91 s), with `--distance` per thread.
    #[test]
    fn the_expected_length_of_loops_counts_the_interval_step() {
        let p = resolve_with_online(
            &args(&[
                "-l",
                "60",
                "-i",
                "1ms",
                "--interval-step",
                "5ms",
                "--distance",
                "1ms",
            ]),
            &[0, 1],
        )
        .unwrap();
        assert_eq!(p.thread_expected_ns(0), Some(8_910_000_000));
        assert_eq!(p.thread_expected_ns(1), Some(8_970_000_000));
        let p = resolve_with_online(&args(&["-l", "60", "-i", "1ms"]), &[0, 1]).unwrap();
        assert_eq!(p.thread_expected_ns(0), Some(60_000_000));
        let p = resolve_with_online(&args(&["-D", "3s"]), &[0, 1]).unwrap();
        assert_eq!(p.thread_expected_ns(1), Some(3_000_000_000));
        // No overflow at the extremes: saturates.
        assert_eq!(
            RunLength::Loops(u64::MAX).expected_ns(u64::MAX, u64::MAX),
            Some(u64::MAX)
        );
    }

    /// `--load-cpus` places the generator loads that name no `cpus=` (those that do keep
    /// theirs), and is kept in the plan for run.json; a list or a bad name is exit 2.
    #[test]
    fn load_cpus_places_the_loads_without_cpus() {
        use crate::load::LoadSpec;
        use crate::load::generator::CpuChoice;
        let p = resolve_with_online(
            &args(&[
                "--cpus",
                "1",
                "--load-cpus",
                "measured",
                "--load",
                "cpu",
                "--load",
                "cpu:cpus=0",
                "--load",
                "cpu:cpus=all",
            ]),
            &[0, 1],
        )
        .unwrap();
        let placed: Vec<CpuChoice> = p
            .loads
            .iter()
            .map(|l| match l {
                LoadSpec::Generator(g) => g.common.cpus.clone(),
                LoadSpec::Spike(_) => unreachable!(),
            })
            .collect();
        assert_eq!(
            placed,
            [
                CpuChoice::Measured,
                CpuChoice::List(vec![0]),
                CpuChoice::All
            ]
        );
        assert_eq!(p.load_cpus, CpuChoice::Measured);
        assert_eq!(
            CpuChoice::Measured.resolve(&[0, 1], &p.cpus, None).unwrap(),
            [1]
        );
        let p = resolve_with_online(&args(&[]), &[0, 1]).unwrap();
        assert_eq!(p.load_cpus, CpuChoice::All);
        assert!(err(&["--load-cpus", "0-1"]).contains("not all, measured or housekeeping"));
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

//! `jitterlab run`'s command line to its plan: what clap parses, converted to the plan's option
//! groups and built by `plan::build`, as `commands::run` does; every bad value refused with the
//! option named (moved from `commands/run/resolve.rs` with the resolution it tests).

use crate::cli::RunArgs;
use crate::error::Result;
use crate::measure::{Clock, Policy};
use crate::plan::{RunLength, RunPlan, deadline_runtime_ns};
use clap::Parser;

fn args(extra: &[&str]) -> RunArgs {
    let mut argv = vec!["jitterlab", "run"];
    argv.extend_from_slice(extra);
    match crate::cli::Cli::try_parse_from(argv).unwrap().command {
        crate::cli::Command::Run(a) => *a,
        _ => unreachable!(),
    }
}

/// `run`'s plan from its parse, as `commands::run` builds it.
fn resolve_with_online(args: &RunArgs, online: &[usize]) -> Result<RunPlan> {
    crate::plan::build::run(&args.options(), &args.action_options(), online)
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
        resolve_with_online(&args(&["--interval", "1s", "--distance", "3599s"]), &[0, 1]).is_ok()
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
    assert!(err(&["--wake", "rtc", "--cpus", "0", "--interval", "1ms"]).contains("power of two"));
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
    let p = resolve_with_online(&args(&["--trace", "--explain-above", "80us"]), &[0, 1]).unwrap();
    assert_eq!(p.thread_explain_above_ns(1), 80_000);
}

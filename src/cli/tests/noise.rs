//! `jitterlab noise`'s command line to its plan: what clap parses, converted to the plan's
//! option groups and built by `plan::build`, as `commands::noise` does (moved from
//! `commands/noise.rs` with the resolution it tests).

use crate::cli::NoiseArgs;
use crate::error::Result;
use crate::measure::PolicyKind;
use crate::measure::noise_clock::NoiseClock;
use crate::plan::build::{DEFAULT_RING_GAPS, RtThrottling};
use crate::plan::{NoiseSpec, RunPlan};
use clap::Parser;

/// `noise`'s plan from its parse, as `commands::noise` builds it.
fn resolve(args: &NoiseArgs, throttling: Option<RtThrottling>) -> Result<RunPlan> {
    let online = crate::plan::build::online().unwrap();
    crate::plan::build::noise(&args.options(), throttling, &online)
}

fn args(extra: &[&str]) -> NoiseArgs {
    let mut argv = vec!["jitterlab", "noise", "--cpus", "0"];
    argv.extend_from_slice(extra);
    match crate::cli::Cli::try_parse_from(argv).unwrap().command {
        crate::cli::Command::Noise(a) => *a,
        _ => unreachable!(),
    }
}

const THROTTLED: Option<RtThrottling> = Some(RtThrottling {
    runtime_us: 950_000,
    period_us: 1_000_000,
});

#[test]
fn defaults_are_oslats() {
    let p = resolve(&args(&[]), THROTTLED).unwrap();
    assert_eq!(p.policy, PolicyKind::Other);
    assert_eq!(
        p.measurement.noise().copied(),
        Some(NoiseSpec {
            threshold_ns: 1_000,
            throttle_min_ns: u64::MAX,
            clock: NoiseClock::resolve("auto").unwrap().unwrap(),
        }),
        "SCHED_OTHER is not throttled"
    );
    assert_eq!(p.ring_size, DEFAULT_RING_GAPS);
    assert_eq!(p.length.duration_ns(), Some(60_000_000_000));
}

/// With FIFO and the kernel's default throttling (950 of 1000 ms), gaps of 25 ms or more
/// are throttling; without throttling none is.
#[test]
fn fifo_counts_half_the_throttle_window_as_throttling() {
    let p = resolve(
        &args(&[
            "--policy",
            "fifo",
            "--threshold",
            "2us",
            "--clock",
            "monotonic",
        ]),
        THROTTLED,
    )
    .unwrap();
    assert_eq!(p.priority, 95);
    assert_eq!(
        p.measurement.noise().copied(),
        Some(NoiseSpec {
            threshold_ns: 2_000,
            throttle_min_ns: 25_000_000,
            clock: NoiseClock::Monotonic,
        })
    );
    let p = resolve(&args(&["--policy", "fifo"]), None).unwrap();
    assert!(matches!(
        p.measurement.noise().copied(),
        Some(NoiseSpec {
            throttle_min_ns: u64::MAX,
            ..
        })
    ));
}

/// `--clock` names the loop's clock; a counter this CPU does not have is refused as
/// something the system cannot do (exit 3), naming the way out.
#[test]
fn the_clock_is_chosen_or_refused_with_the_reason() {
    let kind = |extra: &[&str]| resolve(&args(extra), None).map(|p| p.measurement.noise().copied());
    assert!(matches!(
        kind(&["--clock", "monotonic"]),
        Ok(Some(NoiseSpec {
            clock: NoiseClock::Monotonic,
            ..
        }))
    ));
    let other_arch = if cfg!(target_arch = "aarch64") {
        "tsc"
    } else {
        "cntvct"
    };
    let e = kind(&["--clock", other_arch]).unwrap_err();
    assert_eq!(e.code, crate::error::ExitCode::System, "{}", e.message);
    assert!(e.message.contains("use --clock monotonic"), "{}", e.message);
    let parse = crate::cli::Cli::try_parse_from(["jitterlab", "noise", "--clock", "hpet"]);
    assert!(parse.is_err(), "not a clock");
}

#[test]
fn bad_inputs_name_the_value() {
    let err = |extra: &[&str]| {
        let e = resolve(&args(extra), None).unwrap_err();
        assert_eq!(e.code, crate::error::ExitCode::Usage, "{}", e.message);
        e.message
    };
    assert!(err(&["--threshold", "50ns"]).contains("--threshold 50ns: outside 100ns..=1s"));
    assert!(err(&["--threshold", "2s"]).contains("outside"));
    assert!(err(&["--threshold", "soon"]).contains("--threshold: 'soon'"));
    assert!(err(&["--threshold", "-1us"]).contains("'-1us'"));
    assert!(err(&["--duration", "0s"]).contains("above zero"));
    assert!(err(&["--priority", "5"]).contains("omit --priority"));
    assert!(err(&["--log-interval", "1ms"]).contains("below 10ms"));
    assert!(err(&["--budget", "noise_pct<<1"]).contains("--budget"));
    let parse = |extra: &[&str]| {
        let mut argv = vec!["jitterlab", "noise"];
        argv.extend_from_slice(extra);
        crate::cli::Cli::try_parse_from(argv).is_err()
    };
    assert!(
        parse(&["--policy", "deadline"]),
        "a spinner cannot be SCHED_DEADLINE"
    );
    assert!(
        parse(&["--wake", "timerfd"]),
        "nothing wakes in a noise run"
    );
}

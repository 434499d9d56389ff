//! `jitterlab noise`: OS noise per CPU (docs/noise.md). The option groups it shares with `run`
//! are resolved by the same code (`run::shared`), its own here, into a `RunPlan` of the noise
//! kind; then the same runner, result directory and outcome as `run`.

use super::run::shared::{self, Records, SharedGroups};
use crate::cli::NoiseArgs;
use crate::cpulist::online_cpus;
use crate::error::{Failure, Result};
use crate::measure::noise_clock::NoiseClock;
use crate::plan::{Measurement, NoiseSpec, RunPlan};
use crate::units::{format_ns, parse_duration_ns};

/// The shortest `--threshold`: below it a gap is hard to tell from the loop's own iteration
/// (20-60 ns of clock read on common hardware, more in a VM).
pub(crate) const MIN_THRESHOLD_NS: u64 = 100;
/// The longest `--threshold`: a gap of a second is no longer noise but a stall.
pub(crate) const MAX_THRESHOLD_NS: u64 = 1_000_000_000;
/// Default ring per thread, in gaps: the recorder drains every 100 ms, so this holds 655k gaps
/// a second (a VM at a 100 ns threshold sees far fewer), in 2 MiB of locked memory.
pub(crate) const DEFAULT_RING_GAPS: usize = 65_536;

pub fn run(args: &NoiseArgs) -> Result<i32> {
    let throttling = read_rt_throttling();
    let plan = resolve(args, throttling)?;
    warn_of_throttling(&plan, throttling);
    let outcome = crate::session::run(&plan, args.output.quiet, std::env::args().collect())?;
    super::run::print_outcome(&outcome, args.samples_and_json.json, args.output.verbose)
}

/// Before the run: the user asked for a real-time spinner on a system that throttles
/// real-time tasks. Not refused (the figures stay true, the throttled time is counted apart),
/// but said on stderr, with the fix.
pub(crate) fn warn_of_throttling(plan: &RunPlan, throttling: Option<RtThrottling>) {
    if let (true, Some(t)) = (plan.policy.is_realtime(), throttling) {
        eprintln!(
            "jitterlab noise: warning: RT throttling is on (sched_rt_runtime_us = {} of sched_rt_period_us = {}): \
             a {} thread that never sleeps is stopped for up to {} per period; gaps of {} or more are counted \
             as throttled time, not noise. For a run without it: sysctl kernel.sched_rt_runtime_us=-1 \
             (or --policy other)",
            t.runtime_us,
            t.period_us,
            plan.policy.name().to_uppercase(),
            format_ns(t.window_ns()),
            format_ns(t.throttle_min_ns())
        );
    }
}

/// The kernel's RT throttling: real-time tasks may use `runtime_us` of every `period_us`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtThrottling {
    pub runtime_us: u64,
    pub period_us: u64,
}

impl RtThrottling {
    /// The time a real-time task that never sleeps loses per period, ns.
    pub(crate) fn window_ns(self) -> u64 {
        self.period_us.saturating_sub(self.runtime_us) * 1_000
    }

    /// A gap at least this long in a real-time noise run is taken for throttling: half the
    /// window. OS noise of that length (tens of ms) would be a stall of its own; a real-time
    /// task of higher priority spinning that long is counted as throttling too (docs/noise.md).
    pub(crate) fn throttle_min_ns(self) -> u64 {
        (self.window_ns() / 2).max(1)
    }
}

/// RT throttling as /proc/sys/kernel says; None when off (runtime -1, or the whole period) or
/// unreadable.
pub(crate) fn read_rt_throttling() -> Option<RtThrottling> {
    let read = |name: &str| -> Option<i64> {
        std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    let (runtime, period) = (read("sched_rt_runtime_us")?, read("sched_rt_period_us")?);
    (runtime >= 0 && runtime < period).then_some(RtThrottling {
        runtime_us: runtime as u64,
        period_us: period as u64,
    })
}

/// The noise options to a validated plan; `throttling` as the system has it.
pub fn resolve(args: &NoiseArgs, throttling: Option<RtThrottling>) -> Result<RunPlan> {
    let threshold_ns = resolve_threshold(&args.noise.threshold)?;
    let clock = NoiseClock::resolve(&args.noise.clock)
        .expect("clap admits only the clocks' names")
        .map_err(Failure::system)?;
    let groups = SharedGroups {
        length: Some(&args.length),
        scenario: args.scenario.scenario.as_deref(),
        loops: None,
        cpus: &args.cpus,
        loads: &args.loads,
        output: &args.output,
        trace: &args.trace,
        budget: &args.budget,
    };
    let online = online_cpus().map_err(Failure::system)?;
    let shared = shared::resolve(
        &groups,
        crate::plan::RunKind::Noise,
        args.noise.policy,
        DEFAULT_RING_GAPS,
        &online,
    )?;
    let throttle_min_ns = match (shared.policy.is_realtime(), throttling) {
        (true, Some(t)) => t.throttle_min_ns().max(threshold_ns + 1),
        _ => u64::MAX,
    };
    let records = Records {
        samples: args.samples_and_json.samples,
        ..Records::default()
    };
    let measurement = Measurement::Noise(NoiseSpec {
        threshold_ns,
        throttle_min_ns,
        clock,
    });
    shared.into_plan(measurement, records)
}

/// `--threshold`, within what the loop can tell from its own clock read.
fn resolve_threshold(text: &str) -> Result<u64> {
    let threshold_ns =
        parse_duration_ns(text).map_err(|e| Failure::usage(format!("--threshold: {e}")))?;
    if !(MIN_THRESHOLD_NS..=MAX_THRESHOLD_NS).contains(&threshold_ns) {
        return Err(Failure::usage(format!(
            "--threshold {text}: outside 100ns..=1s; a gap shorter than 100ns cannot be told from the loop's own clock read (default 1us)"
        )));
    }
    Ok(threshold_ns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::PolicyKind;
    use clap::Parser;

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
        let kind =
            |extra: &[&str]| resolve(&args(extra), None).map(|p| p.measurement.noise().copied());
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
}

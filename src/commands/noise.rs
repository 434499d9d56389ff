//! `jitterlab noise`: OS noise per CPU (docs/noise.md). Its option groups are built into a
//! `RunPlan` of the noise kind by `plan::build`, with RT throttling as the kernel has it (read
//! here); then the same runner, result directory and outcome as `run`.

use crate::cli::NoiseArgs;
use crate::error::Result;
use crate::plan::RunPlan;
pub(crate) use crate::plan::build::RtThrottling;
use crate::units::format_ns;

pub fn run(args: &NoiseArgs) -> Result<i32> {
    let throttling = read_rt_throttling();
    let online = crate::plan::build::online()?;
    let plan = crate::plan::build::noise(&args.options(), throttling, &online)?;
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

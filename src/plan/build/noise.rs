//! The noise options (`noise`, the oslat drop-in) to a validated [`RunPlan`] of the noise kind:
//! the threshold, the loop's clock and policy, and the bound above which a gap of a real-time
//! spinner is counted as RT throttling (given as the kernel has it, [`RtThrottling`]).

use super::shared::{self, Records};
use crate::error::{Failure, Result};
use crate::measure::noise_clock::NoiseClock;
use crate::measure::{Clock, MeasuringLoop};
use crate::plan::measurement::{MeasuredKind, ThreadSlot};
use crate::plan::options::NoiseRunOptions;
use crate::plan::{Measurement, NoiseSpec, RunKind, RunPlan};
use crate::units::parse_duration_ns;

/// The shortest `--threshold`: below it a gap is hard to tell from the loop's own iteration
/// (20-60 ns of clock read on common hardware, more in a VM).
pub(crate) const MIN_THRESHOLD_NS: u64 = 100;
/// The longest `--threshold`: a gap of a second is no longer noise but a stall.
pub(crate) const MAX_THRESHOLD_NS: u64 = 1_000_000_000;
/// Default ring per thread, in gaps: the recorder drains every 100 ms, so this holds 655k gaps
/// a second (a VM at a 100 ns threshold sees far fewer), in 2 MiB of locked memory.
pub(crate) const DEFAULT_RING_GAPS: usize = 65_536;

/// The kernel's RT throttling: real-time tasks may use `runtime_us` of every `period_us`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RtThrottling {
    pub(crate) runtime_us: u64,
    pub(crate) period_us: u64,
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

/// The noise options to a validated plan on `online`; `throttling` as the system has it.
pub(crate) fn resolve_noise(
    o: &NoiseRunOptions,
    throttling: Option<RtThrottling>,
    online: &[usize],
) -> Result<RunPlan> {
    let threshold_ns = resolve_threshold(&o.noise.threshold)?;
    let clock = NoiseClock::resolve(&o.noise.clock)
        .ok_or_else(|| {
            Failure::usage(format!(
                "--clock {}: expected auto, tsc, cntvct or monotonic",
                o.noise.clock
            ))
        })?
        .map_err(Failure::system)?;
    let shared = shared::resolve(
        &o.shared,
        crate::plan::RunKind::Noise,
        o.noise.policy,
        DEFAULT_RING_GAPS,
        online,
    )?;
    let throttle_min_ns = match (shared.policy.is_realtime(), throttling) {
        (true, Some(t)) => t.throttle_min_ns().max(threshold_ns + 1),
        _ => u64::MAX,
    };
    let records = Records {
        samples: o.samples,
        ..Records::default()
    };
    let measurement = Measurement::of(NoiseSpec {
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

/// The noise kind: each thread's loop that never sleeps (`measure/noise.rs`). It has no
/// period: run.json stores its threshold there, and as its deadline (the least a gap can be;
/// docs/noise.md). Its timeline is CLOCK_MONOTONIC, to which the loop converts every gap.
impl MeasuredKind for NoiseSpec {
    fn kind(&self) -> RunKind {
        RunKind::Noise
    }

    fn interval_ns(&self, _index: usize) -> u64 {
        self.threshold_ns
    }

    fn deadline_ns(&self) -> Option<u64> {
        Some(self.threshold_ns)
    }

    fn clock(&self) -> Clock {
        Clock::Monotonic
    }

    fn thread_loop(&self, _thread: ThreadSlot) -> Box<dyn MeasuringLoop> {
        Box::new(self.noise_thread())
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

//! The latency options (`run`, `sweep`, `monitor`, the cyclictest and timerlat drop-ins) to a
//! validated [`RunPlan`]: every bad input is found here, with the option and value named and
//! what is accepted, before any thread starts or any file is made. The groups every measuring
//! kind shares are resolved by `shared.rs`; this file resolves the latency group and fills the
//! plan's latency fields.

use super::shared::{self, Records, duration_arg};
use crate::error::{Failure, Result};
use crate::measure::wake::ClockUse;
use crate::measure::{Clock, MeasuringLoop, PolicyKind, WakeMethod, WakeupPlan};
use crate::plan::measurement::{MeasuredKind, ThreadSlot};
use crate::plan::options::{LatencyOptions, LatencyRunOptions};
use crate::plan::{
    InversionSpec, LatencySpec, MAX_RING_SIZE, Measurement, RunKind, RunPlan, SenderSpec,
    check_periods, check_wake,
};

/// The interval, distance and step of the threads' periods, ns.
#[derive(Debug, Clone, Copy)]
struct Periods {
    interval_ns: u64,
    distance_ns: u64,
    step_ns: u64,
}

/// Validates a latency run's groups against `online`: the periods, the shared groups, then
/// what the wake method, the trace and the senders need of them.
pub(crate) fn resolve_latency(groups: &LatencyRunOptions, online: &[usize]) -> Result<RunPlan> {
    let latency = &groups.latency;
    let periods = resolve_periods(latency)?;
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
        samples: groups.records.samples,
        samples_format: groups.records.samples_format.unwrap_or_default(),
        summary_every: groups.records.summary_every,
        under_ns: latency
            .under
            .iter()
            .map(|d| duration_arg("--under", d))
            .collect::<Result<Vec<u64>>>()?,
    };
    let plan = shared.into_plan(measurement, records)?;
    check_summaries(&plan)?;
    Ok(plan)
}

/// The bytes the `wakeup_summary` lines of a run of `plan` would take (`--summary-every`), at
/// [`crate::format::wakeup_summary::LINE_BYTES`] a block; None without summaries or an end.
pub(crate) fn summaries_bytes(plan: &RunPlan, every: u64) -> Option<u64> {
    (0..plan.cpus.len()).try_fold(0u64, |sum, index| {
        let blocks = plan.thread_wakeups(index)?.div_ceil(every.max(1));
        Some(sum.saturating_add(blocks.saturating_mul(crate::format::wakeup_summary::LINE_BYTES)))
    })
}

/// `--summary-every` too small for the run's length and CPUs: its summaries alone would pass
/// events.jsonl's budget for them (`format::events::BULK_EVENTS_BUDGET_BYTES`), and the file
/// would keep only the run's first part of them. Refused before the run (exit 2), naming the
/// size and the smallest `--summary-every` that fits (issue 39, E1). What passes the budget
/// all the same (lines longer than estimated) is counted, not written (`format::events`).
fn check_summaries(plan: &RunPlan) -> Result<()> {
    let Some(every) = plan.summary_every else {
        return Ok(());
    };
    let budget = crate::format::events::BULK_EVENTS_BUDGET_BYTES;
    let Some(bytes) = summaries_bytes(plan, every).filter(|&b| b > budget) else {
        return Ok(());
    };
    // The smallest block size that fits: the bytes fall as the block grows.
    let (mut low, mut high) = (every, u64::MAX / 2);
    while low < high {
        let mid = low + (high - low) / 2;
        match summaries_bytes(plan, mid).is_some_and(|b| b <= budget) {
            true => high = mid,
            false => low = mid + 1,
        }
    }
    Err(Failure::usage(format!(
        "--summary-every {every}: this run's wakeup summaries would take about {} bytes of events.jsonl ({} a line, {} measured CPU(s)), more than the {} it keeps for them (its readers read {}); give --summary-every {low} or more, or a shorter run",
        crate::units::group_digits(bytes),
        crate::format::wakeup_summary::LINE_BYTES,
        plan.cpus.len(),
        crate::input::format_bytes(budget),
        crate::input::format_bytes(crate::input::EVENTS_MAX_BYTES),
    )))
}

/// `--interval`, `--distance` and `--interval-step`.
fn resolve_periods(latency: &LatencyOptions) -> Result<Periods> {
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
        step_ns: latency
            .interval_step
            .as_deref()
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
pub(super) fn default_ring_size(interval_ns: u64) -> usize {
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
    groups: &LatencyRunOptions,
    shared: &shared::Shared,
    periods: Periods,
    clock: Clock,
    online: &[usize],
) -> Result<Measurement> {
    let latency = &groups.latency;
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
        &groups.sender,
        latency.wake,
        latency.policy,
        shared.priority,
        &shared.cpus,
        online,
    )?;
    let inversion = super::inversion::resolve_inversion(
        &groups.inversion,
        latency.wake,
        latency.policy,
        shared.priority,
        periods.interval_ns,
    )?;
    Ok(Measurement::of(LatencySpec {
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

/// The latency kind: each thread's wakeups of the wake method (`measure/wakeups.rs`).
impl MeasuredKind for LatencySpec {
    fn kind(&self) -> RunKind {
        RunKind::Latency
    }

    fn interval_ns(&self, index: usize) -> u64 {
        self.interval_ns + index as u64 * self.distance_ns
    }

    fn interval_step_ns(&self) -> u64 {
        self.interval_step_ns
    }

    fn deadline_ns(&self) -> Option<u64> {
        self.deadline_ns
    }

    fn clock(&self) -> Clock {
        self.clock
    }

    fn wake_method(&self) -> &'static WakeMethod {
        self.wake
    }

    fn sender(&self) -> Option<&SenderSpec> {
        self.sender.as_ref()
    }

    fn inversion(&self) -> Option<InversionSpec> {
        self.inversion
    }

    fn thread_loop(&self, thread: ThreadSlot) -> Box<dyn MeasuringLoop> {
        Box::new(WakeupPlan {
            wake: self.wake,
            clock: self.clock,
            interval_ns: thread.interval_ns,
            interval_step_ns: self.interval_step_ns,
            loops: thread.loops,
            sender: thread.sender,
            inversion: thread.inversion,
        })
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

//! What run.json says about a run of this process: the plan as stored, the system snapshot
//! and its warnings, each thread's figures (latency or noise), the inversion counts, and the
//! warnings about what the run saw. The types are the format's (format/run_record.rs); this
//! file fills them from the plan and the recorder's results.

use super::threads::JoinedThread;
use crate::format::run_record::{NoiseSummary, PlanRecord, ThreadSummary};
use crate::measure::ThreadEnd;
use crate::plan::RunPlan;
use crate::recorder::ThreadResult;

/// The system snapshot for run.json, and the warnings to show before the results. `trace`:
/// the back end the run's trace set up, if it traces.
pub(crate) fn system_snapshot(
    plan: &RunPlan,
    trace: Option<&crate::trace::BackendChoice>,
) -> (serde_json::Value, Vec<String>) {
    let snapshot = crate::doctor::snapshot::snapshot_for_run(&plan.cpus, trace, plan.mlock);
    for &(step, end) in &snapshot.step_ends {
        super::startup::mark_at(step, end);
    }
    let mut warnings = snapshot.representativeness_warnings(!plan.policy.is_realtime());
    if plan.policy == crate::measure::PolicyKind::Deadline {
        warnings.push(
            "SCHED_DEADLINE threads are not pinned (the kernel refuses to pin a deadline task to one CPU): \
             a thread's `cpu` is the CPU it was planned for, not necessarily where it ran"
                .into(),
        );
    }
    (
        serde_json::to_value(&snapshot).unwrap_or(serde_json::Value::Null),
        warnings,
    )
}

/// The plan as run.json stores it.
pub(crate) fn plan_record(plan: &RunPlan) -> PlanRecord {
    let latency = plan.measurement.latency();
    // A noise run stores the fields a latency run has, as it always has (readers need them):
    // the default wake method and clock, its threshold as interval and deadline.
    let (wake, clock) = match latency {
        Some(l) => (l.wake, l.clock.name()),
        None => (
            crate::measure::WakeMethod::default_method(),
            crate::measure::Clock::Monotonic.name(),
        ),
    };
    PlanRecord {
        cpus: plan.cpus.clone(),
        policy: plan.policy.name().into(),
        priority: plan.priority,
        deadline_runtime_ns: match plan.thread_policy(0) {
            crate::measure::Policy::Deadline { runtime_ns, .. } => Some(runtime_ns),
            _ => None,
        },
        wake: wake.name.into(),
        clock: clock.into(),
        interval_ns: plan.thread_interval_ns(0),
        distance_ns: latency.map_or(0, |l| l.distance_ns),
        interval_step_ns: latency.map_or(0, |l| l.interval_step_ns),
        duration_ns: plan.length.duration_ns(),
        loops: plan.length.loops(),
        deadline_ns: plan.measurement.deadline_ns(),
        log_interval_ns: plan.log_interval_ns,
        loads: plan.load_texts.clone(),
        samples: plan.samples,
        samples_format: plan.samples.then(|| plan.samples_format.number()),
        summary_every: plan.summary_every,
        ring_size: plan.ring_size,
        drain_priority: plan.drain_priority,
        housekeeping: plan.housekeeping.clone(),
        cpuset_partition: plan.cpuset_partition,
        load_cpus: plan.load_cpus.name().into(),
        mlock: plan.mlock,
        pm_qos_us: plan.pm_qos_us,
        trace: plan.trace,
        explain_above_ns: plan.explain_above_ns,
        noise_threshold_ns: plan.measurement.noise().map(|n| n.threshold_ns),
        ipc: latency.and_then(|l| l.sender.as_ref()).map(|spec| {
            crate::format::run_record::IpcRecord {
                mechanism: wake.name.into(),
                sender_cpu: spec.cpu.name(),
                sender_cpus: spec.cpus.clone(),
                sender_policy: plan.policy.name().into(),
                sender_priority: spec.priority,
                between: spec.between.name().into(),
                pace: spec.pace.name().into(),
                // Known once the senders have started (Session::start).
                sender_tids: Vec::new(),
            }
        }),
    }
}

/// run.json's `inversion` of a `--wake pi-mutex` run: the roles, and each thread's count.
pub(crate) fn inversion_record(
    plan: &RunPlan,
    results: &[ThreadResult],
) -> Option<crate::format::run_record::InversionRecord> {
    use crate::format::run_record::{InversionCount, InversionRecord, RoleRecord};
    let spec = plan.measurement.inversion()?;
    let role = |role: &str, priority| RoleRecord {
        role: role.into(),
        policy: plan.policy.name().into(),
        priority,
    };
    Some(InversionRecord {
        mechanism: format!(
            "pthread_mutex {}",
            if spec.inherit {
                "PTHREAD_PRIO_INHERIT"
            } else {
                "PTHREAD_PRIO_NONE"
            }
        ),
        priority_inheritance: spec.inherit,
        hold_ns: spec.hold_ns,
        hog_ns: spec.hog_ns,
        inversion_above_ns: spec.hold_ns + crate::measure::wake::inversion::INVERSION_MARGIN_NS,
        roles: vec![
            role("measuring", plan.priority),
            role("hog", spec.hog_priority),
            role("holder", spec.holder_priority),
        ],
        threads: results
            .iter()
            .map(|r| InversionCount {
                cpu: r.cpu,
                inversions: r.loop_counts.inversions,
                worst_inversion_ns: r.loop_counts.worst_inversion_ns,
            })
            .collect(),
    })
}

/// Per thread, its figures for run.json.
pub(crate) fn thread_summaries(
    plan: &RunPlan,
    results: &[ThreadResult],
    ends: &[JoinedThread],
) -> Vec<ThreadSummary> {
    let ends = ends.iter().map(|joined| {
        let end = match &joined.end {
            ThreadEnd::Completed => "completed".into(),
            ThreadEnd::Stopped => "stopped".into(),
            ThreadEnd::Failed(m) => format!("failed: {m}"),
        };
        (joined.tid, end)
    });
    summaries(plan, results, ends)
}

/// Per thread still measuring (kernel thread ids in plan order), its figures so far for the
/// run.json of a run in progress: `end` is `running`.
pub(crate) fn running_thread_summaries(
    plan: &RunPlan,
    results: &[ThreadResult],
    tids: &[i32],
) -> Vec<ThreadSummary> {
    summaries(
        plan,
        results,
        tids.iter().map(|&tid| (tid, "running".to_string())),
    )
}

/// Per thread, its figures with its (tid, end) in plan order.
fn summaries(
    plan: &RunPlan,
    results: &[ThreadResult],
    ends: impl Iterator<Item = (i32, String)>,
) -> Vec<ThreadSummary> {
    results
        .iter()
        .zip(ends)
        .map(|(r, (tid, end))| ThreadSummary {
            cpu: r.cpu,
            thread_index: r.index,
            tid,
            interval_ns: plan.thread_interval_ns(r.index),
            deadline_ns: plan.thread_deadline_ns(r.index),
            latency: r.latency.clone(),
            missed_periods: r.missed_periods,
            dropped_records: r.dropped_records,
            deadline_misses: r.deadline_misses,
            early_wakeups: r.early_wakeups,
            end,
            irq_latency: r.trace.as_ref().map(|t| t.irq_latency.clone()),
            tails: r.tails.clone(),
            noise: plan.measurement.noise().map(|n| noise_summary(r, n.clock)),
        })
        .collect()
}

/// A noise thread's figures: its own counters, and its gap count (recorded and dropped).
fn noise_summary(r: &ThreadResult, clock: crate::measure::noise_clock::NoiseClock) -> NoiseSummary {
    use crate::format::noise::{LoopClock, LoopClockSource};
    use crate::measure::noise_clock::NoiseClock;
    let c = &r.loop_counts;
    let (ticks_per_s, recalibrations, largest_correction_ns) = c.calibration;
    NoiseSummary {
        clock: Some(LoopClock {
            source: match clock {
                NoiseClock::Monotonic => LoopClockSource::Monotonic,
                NoiseClock::Counter if cfg!(target_arch = "aarch64") => LoopClockSource::Cntvct,
                NoiseClock::Counter => LoopClockSource::Tsc,
            },
            ticks_per_s: ticks_per_s as f64,
            recalibrations,
            largest_correction_ns,
        }),
        gaps_over: crate::format::noise::GapsOver::from_spikes(&r.tails.spikes),
        ..NoiseSummary::new(
            c.span_ns,
            c.iterations,
            (r.latency.samples + r.dropped_records, c.noise_ns),
            (c.throttled_gaps, c.throttled_ns),
        )
    }
}

/// Warnings about what the run itself saw.
pub(crate) fn run_warnings(results: &[ThreadResult]) -> Vec<String> {
    let mut w = Vec::new();
    for r in results {
        if r.dropped_records > 0 {
            w.push(format!(
                "CPU {}: {} of {} samples were dropped because the recorder fell behind (ring full); the statistics miss them, and the late wakeups may be among them. Raise --ring-size, and see that the drain side runs real-time (--drain-priority)",
                r.cpu,
                r.dropped_records,
                r.latency.samples + r.dropped_records
            ));
        }
        if r.early_wakeups > 0 {
            w.push(format!(
                "CPU {}: {} wakeups came before their due time (negative latency): a clock step (--clock realtime) or an early-waking method; they are counted as 0 in the percentiles",
                r.cpu, r.early_wakeups
            ));
        }
    }
    w
}

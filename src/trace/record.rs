//! What a traced run needs from the plan and gives to run.json: the per-thread join settings,
//! and the `trace` section of run.json.

use super::{SenderTrace, ThreadTrace, TraceConfig, TraceStats};
use crate::format::events::SpikeExplanation;
use crate::format::run_record::{TraceRecord, TraceThreadRecord};
use crate::measure::wake::{Expiry, WakeMethod};
use crate::plan::RunPlan;
use crate::recorder::ThreadResult;

/// The join settings of each measuring thread, from `(index, cpu, tid)`: where the timer's
/// expiry lies for the run's wake method (its row's [`TraceJoin`](crate::measure::wake::TraceJoin)).
pub(crate) fn thread_traces(plan: &RunPlan, threads: &[(usize, usize, i32)]) -> Vec<ThreadTrace> {
    threads
        .iter()
        .map(|&(index, cpu, tid)| ThreadTrace {
            cpu,
            tid,
            tolerance_ns: match plan.wake_method().trace.expiry {
                Expiry::AtDue => 0,
                Expiry::NearDue => plan.thread_interval_ns(index) / 2,
            },
            explain_above_ns: plan.thread_explain_above_ns(index),
            gaps: plan.measurement.kind().spec().time_lost,
            sender: plan
                .thread_sender(index)
                .and_then(|s| s.cpu)
                .map(|cpu| SenderTrace { cpu, tid: 0 }),
        })
        .collect()
}

/// The CPUs to trace: the measured ones, and those of IPC senders (the sender's timer and its
/// wake of the receiver are recorded on the sender's CPU), ascending.
pub(crate) fn traced_cpus(plan: &RunPlan) -> Vec<usize> {
    let mut cpus = plan.cpus.clone();
    if let Some(spec) = plan.measurement.sender() {
        cpus.extend(&spec.cpus);
    }
    cpus.sort_unstable();
    cpus.dedup();
    cpus
}

/// The kernel callbacks of the timers the run's wake method sleeps on, for filtering the timer
/// expiries (none for `rtc`, which sleeps on the RTC interrupt, not a hrtimer).
pub(crate) fn timer_functions(wake: &WakeMethod) -> &'static [&'static str] {
    wake.trace.timer_functions
}

/// Whether the wake method allows the BPF back end's in-kernel reduction: its thread arms its
/// own hrtimer for each sleep (absolute and relative sleeps; not periodic timers, which the
/// kernel re-arms, nor IPC, whose wakeups come from another thread).
pub(crate) fn reduction(wake: &WakeMethod) -> Option<super::Reduction> {
    use crate::measure::wake::Schedule;
    let own_timer = matches!(wake.schedule, Schedule::Absolute | Schedule::Relative);
    (own_timer && !wake.trace.timer_functions.is_empty()).then_some(super::Reduction {
        near_due: wake.trace.expiry == Expiry::NearDue,
    })
}

/// The `trace` section of run.json.
pub(crate) fn trace_record(
    plan: &RunPlan,
    config: &TraceConfig,
    stats: &TraceStats,
    results: &[ThreadResult],
    worst: Vec<SpikeExplanation>,
    explained: u64,
) -> TraceRecord {
    TraceRecord {
        backend: config.backend.to_string(),
        backend_reason: config.backend_reason.clone(),
        instance: config.instance.clone(),
        explain_above_ns: plan.thread_explain_above_ns(0),
        events_lost: stats.events_lost,
        events_lost_in_stage: stats.events_lost_in_stage,
        explained,
        events: config.events.clone(),
        filters: config.filters.clone(),
        buffer_kb: config.buffer_kb,
        events_read: stats.reader.events,
        reduced: config.reduced,
        events_in_kernel: stats.reader.kernel_events,
        reader_cpu_ns: stats.reader.cpu_time_ns,
        threads: results
            .iter()
            .filter_map(|r| {
                let t = r.trace.as_ref()?;
                Some(TraceThreadRecord {
                    cpu: r.cpu,
                    explain_above_ns: plan.thread_explain_above_ns(r.index),
                    samples_joined: t.joined,
                    samples_unmatched: t.unmatched,
                    samples_trace_late: t.timed_out,
                    thread_latency: t.thread_latency.clone(),
                    wake_to_switch: t.wake_to_switch.clone(),
                    switch_to_user: t.switch_to_user.clone(),
                    noise_causes: t.noise_causes.clone(),
                })
            })
            .collect(),
        worst,
    }
}

/// Warnings about the trace: lost events, samples left without IRQ latency.
pub(crate) fn trace_warnings(stats: &TraceStats, results: &[ThreadResult]) -> Vec<String> {
    let mut w = Vec::new();
    let in_stage = stats.events_lost_in_stage.unwrap_or(0);
    if stats.events_lost > in_stage {
        w.push(format!(
            "--trace: the kernel lost {} trace events (the reader fell behind); IRQ latencies and explanations near the losses may be missing or incomplete",
            stats.events_lost - in_stage
        ));
    }
    if in_stage > 0 {
        w.push(format!(
            "--trace: {in_stage} trace events lost in the kernel's per-CPU stage (more than 1024 events on one CPU while a wakeup was late, in a program that could not send them early: docs/tracing.md, \"In-kernel reduction\"); the explanations of those wakeups lack their earliest events. --trace-backend tracefs keeps every event"
        ));
    }
    for r in results {
        let Some(t) = &r.trace else { continue };
        let absent = t.unmatched + t.timed_out;
        if absent > 0 {
            w.push(format!(
                "CPU {}: {absent} of {} samples have no IRQ latency ({} without their timer in the trace, {} whose trace came too late)",
                r.cpu,
                t.joined + absent,
                t.unmatched,
                t.timed_out
            ));
        }
    }
    w
}

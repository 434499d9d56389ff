//! What a traced run needs from the plan and gives to run.json: the per-thread join settings,
//! and the `trace` section of run.json.

use super::{ThreadTrace, TraceConfig, TraceStats};
use crate::measure::wake::{Schedule, WakeMethod};
use crate::plan::RunPlan;
use crate::record::ThreadResult;
use crate::results::events::SpikeExplanation;
use crate::results::run_record::{TraceRecord, TraceThreadRecord};

/// The join settings of each measuring thread, from `(index, cpu, tid)`.
///
/// Absolute and periodic wake methods sleep until exactly the due time, so the timer's soft
/// expiry must equal it. Relative methods (nanosleep, select, poll, itimer,
/// clock-nanosleep-rel) arm the timer from the kernel's own clock read, a little after the
/// thread's, and so does itimer-periodic (setitimer takes only a relative first expiry, so the
/// kernel's grid lies that little gap after jitterlab's); half an interval is far more than
/// that gap and far less than the next period.
pub fn thread_traces(plan: &RunPlan, threads: &[(usize, usize, i32)]) -> Vec<ThreadTrace> {
    threads
        .iter()
        .map(|&(index, cpu, tid)| ThreadTrace {
            cpu,
            tid,
            tolerance_ns: match (plan.wake, plan.wake.schedule()) {
                (WakeMethod::ItimerPeriodic, _) | (_, Schedule::Relative) => {
                    plan.thread_interval_ns(index) / 2
                }
                (_, Schedule::Absolute | Schedule::Periodic) => 0,
            },
            explain_above_ns: plan.thread_explain_above_ns(index),
        })
        .collect()
}

/// The kernel callbacks of the timers each wake method sleeps on, for filtering the timer
/// expiries (none for `rtc`, which sleeps on the RTC interrupt, not a hrtimer).
pub fn timer_functions(wake: WakeMethod) -> &'static [&'static str] {
    match wake {
        // hrtimer_sleeper: nanosleep, and the timeouts of select and poll.
        WakeMethod::ClockNanosleep
        | WakeMethod::ClockNanosleepRel
        | WakeMethod::Nanosleep
        | WakeMethod::Select
        | WakeMethod::Poll => &["hrtimer_wakeup"],
        WakeMethod::Itimer | WakeMethod::ItimerPeriodic => &["it_real_fn"],
        WakeMethod::PosixTimer => &["posix_timer_fn"],
        WakeMethod::Timerfd => &["timerfd_tmrproc"],
        WakeMethod::Rtc => &[],
    }
}

/// The `trace` section of run.json.
pub fn trace_record(
    plan: &RunPlan,
    config: &TraceConfig,
    stats: &TraceStats,
    results: &[ThreadResult],
    worst: Vec<SpikeExplanation>,
    explained: u64,
) -> TraceRecord {
    TraceRecord {
        instance: config.instance.clone(),
        explain_above_ns: plan.thread_explain_above_ns(0),
        events_lost: stats.events_lost,
        explained,
        events: config.events.clone(),
        filters: config.filters.clone(),
        buffer_kb: config.buffer_kb,
        events_read: stats.reader.events,
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
                })
            })
            .collect(),
        worst,
    }
}

/// Warnings about the trace: lost events, samples left without IRQ latency.
pub fn trace_warnings(stats: &TraceStats, results: &[ThreadResult]) -> Vec<String> {
    let mut w = Vec::new();
    if stats.events_lost > 0 {
        w.push(format!(
            "--trace: the kernel lost {} trace events (the reader fell behind); IRQ latencies and explanations near the losses may be missing or incomplete",
            stats.events_lost
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

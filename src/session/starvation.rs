//! Which loads held a measuring thread off its CPU (issue 39, F8): the words of the warning and
//! of the thread's `end` in run.json when the run's end had to stop the loads under a thread
//! that could not run to see it (`Session::serve_the_end`).

use crate::measure::Policy;
use crate::plan::drain::{Contention, RtLoad};
use crate::plan::{RunLength, RunPlan};

/// `--loops N` has no end time: a thread a load holds off its CPU would hold the end until a
/// stop. Its end is taken as due [`LOOPS_FACTOR`] times the loops' expected time (N times the
/// longest thread interval) and [`LOOPS_SLACK_NS`] after the start: a thread whose wakeups are
/// late by as much as its interval, each one, still ends before it; one held off its CPU is
/// served then as at a duration's end (`Session::serve_the_end`).
pub(super) const LOOPS_FACTOR: u64 = 2;
pub(super) const LOOPS_SLACK_NS: u64 = 5_000_000_000;

/// The time (on the plan's clock) after which a `--loops` run's end is due (see
/// [`LOOPS_FACTOR`]); `u64::MAX` for a run of another length.
pub(super) fn loops_end_ns(plan: &RunPlan, start_ns: u64) -> u64 {
    let RunLength::Loops(_) = plan.length else {
        return u64::MAX;
    };
    // The longest thread's loops, `--interval-step` included (issue 39, N8: without it 60
    // loops stepping 5 ms, 8.9 s, were cut at 7.7 s and every thread called starved).
    let longest = (0..plan.cpus.len())
        .filter_map(|i| plan.thread_expected_ns(i))
        .max()
        .unwrap_or(0);
    start_ns
        .saturating_add(longest.saturating_mul(LOOPS_FACTOR))
        .saturating_add(LOOPS_SLACK_NS)
}

/// Why the measuring thread `index`, on `cpu`, could not run: the real-time loads of the run
/// (whole-run and scenario phases) that may run on `cpu` at or above its priority, or, when
/// there are none, that something outside the run's loads held it.
pub(super) fn reason(plan: &RunPlan, index: usize, cpu: usize) -> String {
    let policy = plan.thread_policy(index);
    let own = words(&policy);
    let above = loads_above(plan, &policy, cpu);
    if !above.is_empty() {
        return format!(
            "held off CPU {cpu} by load {}, at or above it ({own})",
            named(&above)
        );
    }
    // An IPC method's receiver waits for its sender, which may be the one held off, on a CPU
    // of its own (issue 39, N6: `--sender-cpu 1` under a FIFO 99 load on CPU 1 was put on
    // "something else").
    if let Some((sender_cpu, sender_policy)) = sender_of(plan, index, &policy)
        && sender_cpu != cpu
    {
        let above = loads_above(plan, &sender_policy, sender_cpu);
        if !above.is_empty() {
            return format!(
                "its sender was held off CPU {sender_cpu} by load {}, at or above the sender ({})",
                named(&above),
                words(&sender_policy)
            );
        }
    }
    format!(
        "no load of this run is at or above it ({own}) on CPU {cpu}: something else held it (another real-time task, or a stall of the machine)"
    )
}

/// A policy as the words say it: `SCHED_FIFO 95`, or the name alone.
fn words(policy: &Policy) -> String {
    match policy {
        Policy::Fifo(p) | Policy::RoundRobin(p) => format!("{} {p}", policy.name()),
        p => p.name().to_string(),
    }
}

/// Loads as the words name them: `'cpu:prio=99' (SCHED_FIFO 99) and ...`.
fn named(loads: &[RtLoad]) -> String {
    let named: Vec<String> = loads
        .iter()
        .map(|l| {
            format!(
                "'{}' (SCHED_{} {})",
                l.text,
                l.policy.to_uppercase(),
                l.priority
            )
        })
        .collect();
    named.join(" and ")
}

/// The CPU and policy of thread `index`'s sender, for the wake methods that have one: the
/// run's policy at the senders' priority.
fn sender_of(plan: &RunPlan, index: usize, policy: &Policy) -> Option<(usize, Policy)> {
    let sender = plan.measurement.sender()?;
    let cpu = *sender.cpus.get(index)?;
    let policy = match policy {
        Policy::Fifo(_) => Policy::Fifo(sender.priority),
        Policy::RoundRobin(_) => Policy::RoundRobin(sender.priority),
        p => *p,
    };
    Some((cpu, policy))
}

/// Per thread (plan order), why the live view may see it held off its CPU: `by load 'X'
/// (SCHED_FIFO 99)`, or that no load of the run is above it.
pub(super) fn live_reasons(plan: &RunPlan) -> Vec<String> {
    plan.cpus
        .iter()
        .enumerate()
        .map(|(index, &cpu)| {
            let above = loads_above(plan, &plan.thread_policy(index), cpu);
            match above.is_empty() {
                true => "not by a load of this run (another real-time task, or a stall)".into(),
                false => format!(
                    "by load {}",
                    above
                        .iter()
                        .map(|l| format!(
                            "'{}' (SCHED_{} {})",
                            l.text,
                            l.policy.to_uppercase(),
                            l.priority
                        ))
                        .collect::<Vec<_>>()
                        .join(" and ")
                ),
            }
        })
        .collect()
}

/// The real-time loads of `plan` that may run on `cpu` at or above a thread of `policy`
/// (every real-time load is above a thread of a normal policy; none is above SCHED_DEADLINE),
/// each once. Every spike of the run counts, not only those the own threads' rule counts
/// (`plan::drain`, spikes holding their CPU longer than 500 ms): a 400 ms spike that held a
/// thread at the run's end is this run's load, not "something else" (issue 39, N19).
fn loads_above(plan: &RunPlan, policy: &Policy, cpu: usize) -> Vec<RtLoad> {
    let level = match policy {
        Policy::Deadline { .. } => return Vec::new(),
        Policy::Fifo(p) | Policy::RoundRobin(p) => *p,
        _ => 0,
    };
    let online = crate::cpulist::online_cpus().unwrap_or_default();
    let contention = Contention::of_run(
        &plan.loads,
        plan.scenario.as_ref(),
        &[],
        &online,
        &plan.cpus,
        plan.housekeeping.as_deref(),
    );
    let spikes = plan.loads.iter().filter_map(|l| match l {
        crate::load::LoadSpec::Spike(s) => Some(crate::plan::drain::spike_load(s)),
        crate::load::LoadSpec::Generator(_) => None,
    });
    let mut above: Vec<RtLoad> = Vec::new();
    for l in contention.together.into_iter().flatten().chain(spikes) {
        if l.cpus.contains(&cpu) && l.priority >= level && !above.iter().any(|a| a.text == l.text) {
            above.push(l);
        }
    }
    above
}

/// The warning of a run stopped during its start-up, naming what it did not start.
pub(super) fn not_started_for_a_stop(plan: &RunPlan) -> String {
    let mut skipped = Vec::new();
    if plan.scenario.is_some()
        || plan
            .loads
            .iter()
            .any(|l| !matches!(l, crate::load::LoadSpec::Spike(_)))
    {
        skipped.push("its loads");
    }
    if plan.counters {
        skipped.push("its context counters");
    }
    let what = match skipped.is_empty() {
        true => String::new(),
        false => format!(": {} were not started", skipped.join(" and ")),
    };
    format!(
        "a stop request (SIGINT or SIGTERM) came during the start-up; the run stopped as soon as it started{what}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::options::LatencyRunOptions;

    /// A run measuring CPU 0 with `loads`, at the default FIFO 95.
    fn plan_with(loads: &[&str]) -> RunPlan {
        let mut options = LatencyRunOptions::default();
        options.shared.cpus.cpus = Some("0".into());
        options.shared.loads.load = loads.iter().map(|l| l.to_string()).collect();
        crate::plan::build::latency(&options, &[0, 1]).expect("the plan resolves")
    }

    /// N19's attribution: a spike of this run under the own threads' 500 ms rule (not counted
    /// there) that held the thread at the end is named as the holder, in the run.json words
    /// and in the live view's; a spike below the thread, or on another CPU, is not.
    #[test]
    fn a_short_spike_of_this_run_is_named_as_what_held_the_thread() {
        let spike = "spike:cpu=0,prio=99,len=400ms,every=1s";
        let plan = plan_with(&[spike]);
        let why = reason(&plan, 0, 0);
        assert!(
            why.starts_with("held off CPU 0 by load 'spike:cpu=0,prio=99,len=400ms")
                && why.contains("(SCHED_FIFO 99), at or above it (SCHED_FIFO 95)"),
            "{why}"
        );
        let live = live_reasons(&plan);
        assert!(
            live[0].starts_with("by load 'spike:cpu=0,prio=99,len=400ms"),
            "{live:?}"
        );
        for other in [
            "spike:cpu=0,prio=90,len=400ms,every=1s",
            "spike:cpu=1,prio=99,len=400ms,every=1s",
        ] {
            let plan = plan_with(&[other]);
            assert!(
                reason(&plan, 0, 0).starts_with("no load of this run is at or above it"),
                "{other}: {}",
                reason(&plan, 0, 0)
            );
            assert!(live_reasons(&plan)[0].starts_with("not by a load of this run"));
        }
    }
}

//! Which loads held a measuring thread off its CPU (issue 39, F8): the words of the warning and
//! of the thread's `end` in run.json when the run's end had to stop the loads under a thread
//! that could not run to see it (`Session::serve_the_end`).

use crate::measure::Policy;
use crate::plan::RunPlan;
use crate::plan::drain::{Contention, RtLoad};

/// Why the measuring thread `index`, on `cpu`, could not run: the real-time loads of the run
/// (whole-run and scenario phases) that may run on `cpu` at or above its priority, or, when
/// there are none, that something outside the run's loads held it.
pub(super) fn reason(plan: &RunPlan, index: usize, cpu: usize) -> String {
    let policy = plan.thread_policy(index);
    let own = match policy {
        Policy::Fifo(p) | Policy::RoundRobin(p) => format!("{} {p}", policy.name()),
        p => p.name().to_string(),
    };
    let above = loads_above(plan, &policy, cpu);
    if above.is_empty() {
        return format!(
            "no load of this run is at or above it ({own}) on CPU {cpu}: something else held it (another real-time task, or a stall of the machine)"
        );
    }
    let named: Vec<String> = above
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
    format!(
        "held off CPU {cpu} by load {}, at or above it ({own})",
        named.join(" and ")
    )
}

/// The real-time loads of `plan` that may run on `cpu` at or above a thread of `policy`
/// (every real-time load is above a thread of a normal policy; none is above SCHED_DEADLINE),
/// each once.
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
    let mut above: Vec<RtLoad> = Vec::new();
    for l in contention.together.into_iter().flatten() {
        if l.cpus.contains(&cpu) && l.priority >= level && !above.iter().any(|a| a.text == l.text) {
            above.push(l);
        }
    }
    above
}

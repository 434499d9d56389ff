//! The permissions a run needs of the system, checked together: memory locking (mlockall,
//! unless `--no-mlock`) and the measuring threads' scheduling policy (SCHED_FIFO 95 by
//! default). An unprivileged run lacks both; each refusal alone sent the user to fix one and
//! meet the next (issue 42), so every missing permission is listed in one refusal (exit 3),
//! by the real start and by `--dry-run` alike.

use crate::error::{Failure, Result};
use crate::measure::sched::{explain_mlock_refusal, explain_policy_refusal, lock_all_memory};
use crate::plan::RunPlan;

/// Locks the process's memory (when the plan does) and probes the measuring threads' policy
/// on a thread of its own, which then ends. Err: one refusal naming every permission missing,
/// each with its fix. A dry run locks too: the lock ends with its process, and nothing else is
/// changed.
pub(crate) fn check(plan: &RunPlan) -> Result<()> {
    let mut missing = Vec::new();
    if plan.mlock
        && let Err(e) = lock_all_memory()
    {
        missing.push(explain_mlock_refusal(&e, plan.mlock_fix));
    }
    let policy = plan.thread_policy(0);
    let cpu = plan.cpus.first().copied().unwrap_or(0);
    let probed = std::thread::scope(|s| {
        s.spawn(|| policy.apply_to_current_thread())
            .join()
            .expect("the probe thread does not panic")
    });
    if let Err(e) = probed {
        missing.push(explain_policy_refusal(&policy, cpu, &e));
    }
    // Inside a container, its own fix (capabilities and limits given to it) is named too.
    let refused = |message: String| super::acquire::name_the_container(Failure::system(message));
    match missing.len() {
        0 => Ok(()),
        1 => Err(refused(missing.remove(0))),
        n => Err(refused(format!(
            "{n} permissions are missing: {}",
            missing
                .iter()
                .enumerate()
                .map(|(i, m)| format!("({}) {m}", i + 1))
                .collect::<Vec<_>>()
                .join("; ")
        ))),
    }
}

/// The warning of a run with `--no-mlock`, printed above the summary and stored with the
/// results: its latencies may include page faults.
pub(crate) const NO_MLOCK_WARNING: &str = "--no-mlock: jitterlab's memory is not locked, so a page fault (a page of the program, its stack or its rings paged out or touched for the first time) can delay a wakeup and shows up as latency";

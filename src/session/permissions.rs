//! The permissions a run needs of the system, checked together: memory locking (mlockall,
//! unless `--no-mlock`), the measuring threads' scheduling policy (SCHED_FIFO 95 by
//! default), and what the plan's options change or read: the kernel's trace (`--trace`), the
//! idle states' `disable` files (`--idle-state-max`), the cpuset hierarchy
//! (`--cpuset-partition`), and PM QoS's device (`--pm-qos`, a warning only: the run goes on
//! with idle states enabled). An unprivileged run lacks them all; each refusal alone sent the
//! user to fix one and meet the next (issue 42; issue 39, sixth re-run, L6-d: only the first
//! two were listed), so every missing permission is listed in one refusal (exit 3), by the
//! real start and by `--dry-run` alike. Each is probed without changing anything (access(2),
//! the capability sets, tracefs's directory read).

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
    missing.extend(option_refusals(plan));
    if !missing.is_empty()
        && let Some(us) = plan.pm_qos_us
        && let Err(e) = crate::sys::fs::can_write(std::path::Path::new(super::pmqos::DEVICE))
    {
        missing.push(format!(
            "--pm-qos {us}: cannot write {} ({e}): the run would go on with idle states enabled (a warning, not a refusal); run as root, or pass --pm-qos off",
            super::pmqos::DEVICE
        ));
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

/// What the plan's options need that this process may not do, each with its fix: the trace,
/// the idle states' files, the cpuset hierarchy. What is not a permission (no tracefs, no
/// cpuidle driver) is left to the option's own check.
fn option_refusals(plan: &RunPlan) -> Vec<String> {
    use crate::sys::caps::{CAP_SYS_ADMIN, has_effective};
    use crate::sys::fs::{can_write, can_write_dir};
    use std::path::Path;
    let mut missing = Vec::new();
    let root = crate::sys::process::effective_user_id() == 0;
    if plan.trace && !root && !has_effective(CAP_SYS_ADMIN) {
        let bpf = has_effective(CAP_BPF) && has_effective(CAP_PERFMON);
        let tracefs = match plan.trace_backend {
            crate::plan::TraceBackendChoice::Bpf => None,
            _ => crate::trace::tracefs::find().err(),
        };
        let refused = match plan.trace_backend {
            crate::plan::TraceBackendChoice::Bpf => !bpf,
            crate::plan::TraceBackendChoice::Tracefs => tracefs.is_some(),
            crate::plan::TraceBackendChoice::Auto => !bpf && tracefs.is_some(),
        };
        if refused {
            missing.push(format!(
                "--trace: the kernel's trace needs root: its BPF programs CAP_BPF and CAP_PERFMON, tracefs access to its directory{}; run as root, or measure without --trace",
                tracefs.map(|e| format!(" ({e})")).unwrap_or_default()
            ));
        }
    }
    if let Some(max) = plan.idle_state_max
        && let Ok(states) = super::idle_states::check(&plan.cpus, max)
    {
        let root = Path::new(super::idle_states::CPU_ROOT);
        if let Some((path, e)) = states.iter().find_map(|s| {
            let path = root.join(format!("cpu{}/cpuidle/state{}/disable", s.cpu, s.state));
            can_write(&path).err().map(|e| (path, e))
        }) {
            missing.push(format!(
                "--idle-state-max {max}: cannot write {} ({e}): disabling idle states needs root; run as root, or leave the option out",
                path.display()
            ));
        }
    }
    if plan.cpuset_partition {
        let v1 = Path::new(super::cpuset::CPUSET_V1);
        if v1.join("cpuset.cpus").is_file()
            && let Err(e) = can_write_dir(v1)
        {
            missing.push(format!(
                "--cpuset-partition: cannot make a cpuset in {} ({e}): it needs root; run as root, or leave the option out",
                v1.display()
            ));
        }
    }
    missing
}

/// The capabilities that load and attach BPF programs without CAP_SYS_ADMIN (Linux 5.8).
const CAP_BPF: u32 = 39;
const CAP_PERFMON: u32 = 38;

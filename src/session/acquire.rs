//! A session's hold on the system, taken in one step before the start (`Session::start`,
//! start.rs): the measuring threads set up and waiting at the gate, the cpuset partition, the
//! CPU locks, the spike loads, PM QoS, the idle-state limit and tracing, as [`Acquired`], whose
//! fields give them back in the session's teardown order; and the refusals of this step that
//! name their cause (a container's settings).

use super::idle_states::{self, IdleStateLimit};
use super::startup::mark;
use crate::error::{Failure, Result};
use crate::measure::MeasuringThread;
use crate::plan::RunPlan;
use crate::session::cpulock::{self, CpuLocks};
use crate::session::loads::RunLoads;
use crate::session::pmqos::{self, PmQosHold};
use crate::session::threads::Threads;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The parts that hold the system, in the session's teardown order (fields drop in
/// declaration order): an error after this step gives them back in that order.
pub(super) struct Acquired {
    pub(super) tracer: Option<crate::trace::Tracer>,
    pub(super) joiner: Option<crate::trace::Joiner>,
    pub(super) pm_qos: PmQosHold,
    pub(super) idle_states: Option<IdleStateLimit>,
    pub(super) loads: RunLoads,
    pub(super) cpu_locks: CpuLocks,
    pub(super) threads: Threads,
    pub(super) partition: Option<super::cpuset::CpusetPartition>,
}

/// Takes the parts in the reverse of the session's teardown order: the measuring threads set
/// up and waiting at the gate, the CPU locks, the spike loads, PM QoS, and tracing (which
/// needs the threads' ids).
pub(super) fn acquire(
    plan: &RunPlan,
    stop: &Arc<AtomicBool>,
    trace_setup: Option<crate::trace::TraceSetup>,
    warnings: &mut Vec<String>,
) -> Result<Acquired> {
    let threads = Threads::start(plan, stop).map_err(name_the_container)?;
    mark("measuring threads set up");
    let partition = plan
        .cpuset_partition
        .then(|| partition(&threads.list))
        .transpose()?;
    // Once the system has accepted everything and before anything runs: CPUs another run
    // is measuring are refused here (exit 3).
    let (cpu_locks, lock_warnings) = cpulock::take(&plan.cpus, plan.allow_shared_cpus)?;
    warnings.extend(lock_warnings);
    mark("CPU locks taken");
    let loads = RunLoads::start_spikes(plan, stop)?;
    let mut pm_qos = pmqos::hold(plan.pm_qos_us);
    mark("spike loads and PM QoS");
    if let Some(e) = &pm_qos.record.error {
        warnings.push(e.clone());
    }
    // Another process's lower request in force from the start (S1).
    warnings.extend(pm_qos.news());
    let idle_states = plan
        .idle_state_max
        .map(|max| limit_idle_states(&plan.cpus, max))
        .transpose()?;
    let (tracer, joiner) = match trace_setup {
        Some(setup) => {
            let (t, j) = start_trace(setup, plan, &threads.list).map_err(Failure::system)?;
            (Some(t), Some(j))
        }
        None => (None, None),
    };
    if tracer.is_some() {
        mark("trace started");
    }
    Ok(Acquired {
        tracer,
        joiner,
        pm_qos,
        idle_states,
        loads,
        cpu_locks,
        threads,
        partition,
    })
}

/// `--idle-state-max`: the deeper cpuidle states disabled on the measured CPUs, journaled in
/// this user's trusted directory for the next start should this run be killed.
fn limit_idle_states(cpus: &[usize], max: u32) -> Result<IdleStateLimit> {
    let journal_dir = super::journal::TrustedDir::for_this_user(true).map_err(|e| {
        Failure::system(format!(
            "--idle-state-max: cannot keep the journal that lets the next start restore the states of a killed run: {}",
            e.unwrap_or_default()
        ))
    })?;
    IdleStateLimit::apply(Path::new(idle_states::CPU_ROOT), &journal_dir, cpus, max)
        .map_err(Failure::system)
}

/// A real-time policy refused inside a container: the container's own settings are the likely
/// cause, so its fix comes first.
pub(super) fn name_the_container(mut failure: Failure) -> Failure {
    if (failure.message.starts_with("cannot set")
        || failure.message.starts_with("cannot lock memory")
        || failure.message.contains(" permissions are missing: "))
        && let Some(c) = crate::doctor::checks::container::detect(&crate::doctor::checks::Ctx::new(
            std::path::Path::new("/"),
            &[],
            true,
        ))
    {
        failure.message = format!(
            "{}; this runs inside a container ({}: {}): {}",
            failure.message,
            c.runtime,
            c.evidence,
            crate::doctor::checks::container::container_fix(&c.runtime)
        );
    }
    failure
}

/// `--cpuset-partition`: the cpuset of the measured CPUs, with every measuring thread moved
/// into it (set up and waiting at the gate, so none has measured yet).
fn partition(threads: &[MeasuringThread]) -> Result<super::cpuset::CpusetPartition> {
    let cpus: Vec<usize> = threads.iter().map(|t| t.cpu).collect();
    let partition = super::cpuset::CpusetPartition::create(&cpus).map_err(Failure::system)?;
    for t in threads {
        partition
            .add_thread(t.counters.tid.load(Ordering::Relaxed), t.cpu)
            .map_err(Failure::system)?;
    }
    Ok(partition)
}

/// Starts tracing for the measuring threads (their ids are known once they are set up).
fn start_trace(
    setup: crate::trace::TraceSetup,
    plan: &RunPlan,
    threads: &[MeasuringThread],
) -> std::result::Result<(crate::trace::Tracer, crate::trace::Joiner), String> {
    let ids: Vec<(usize, usize, i32)> = threads
        .iter()
        .map(|t| (t.index, t.cpu, t.counters.tid.load(Ordering::Relaxed)))
        .collect();
    setup.start(
        crate::trace::record::thread_traces(plan, &ids),
        crate::trace::record::timer_functions(plan.wake_method()),
        crate::trace::record::reduction(plan.wake_method()),
        plan.drain_priority,
    )
}

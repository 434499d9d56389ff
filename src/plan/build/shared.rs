//! The option groups every measuring kind shares (`run`, `sweep`, `monitor`, `noise` and the
//! drop-ins), resolved by the same code for each: the length, CPUs and priority, the ring, PM
//! QoS, the loads and scenario, the output, the trace and the budget. A kind's own group is
//! its file's (latency: `latency.rs`; noise: `noise.rs`); the two meet in
//! [`Shared::into_plan`], with the settings that depend on the kind in a [`Measurement`].

use crate::analysis::budget::Budget;
use crate::cpulist::{format_cpu_list, parse_cpu_list};
use crate::error::{Failure, Result};
use crate::format::samples::SampleLogFormat;
use crate::load::LoadSpec;
use crate::load::generator::CpuChoice;
use crate::load::scenario::Scenario;
use crate::measure::PolicyKind;
use crate::plan::drain::{self, Contention, DrainRequest};
use crate::plan::options::{CpuOptions, LengthOptions, SharedOptions, TraceOptions};
use crate::plan::{
    DEFAULT_DURATION_NS, MAX_DURATION_NS, MAX_RING_SIZE, Measurement, RunKind, RunLength, RunPlan,
};
use crate::units::{format_ns, parse_duration_ns};
use std::path::PathBuf;

pub(crate) fn duration_arg(flag: &str, text: &str) -> Result<u64> {
    parse_duration_ns(text).map_err(|e| Failure::usage(format!("{flag}: {e}")))
}

/// The shared groups resolved: what a plan of any kind takes from them.
#[derive(Debug)]
pub(crate) struct Shared {
    pub cpus: Vec<usize>,
    pub policy: PolicyKind,
    pub priority: i32,
    pub length: RunLength,
    pub ring_size: usize,
    /// `--drain-priority` as asked; resolved against every thread of the run by
    /// [`Shared::into_plan`].
    pub(crate) drain_priority: DrainRequest,
    /// Where jitterlab's own threads run and the real-time loads beside them, which the drain
    /// priority must stay ahead of (`plan::drain`).
    pub(crate) contention: Contention,
    pub(crate) housekeeping: Option<Vec<usize>>,
    pub(crate) cpuset_partition: bool,
    pub(crate) load_cpus: CpuChoice,
    pub(crate) mlock: bool,
    pub(crate) pm_qos_us: Option<u32>,
    pub(crate) idle_state_max: Option<u32>,
    pub(crate) allow_shared_cpus: bool,
    pub loads: Vec<LoadSpec>,
    pub(crate) load_texts: Vec<String>,
    pub scenario: Option<Scenario>,
    pub log_interval_ns: u64,
    pub counters: bool,
    pub out: Option<PathBuf>,
    pub trace: bool,
    pub(crate) trace_backend: crate::plan::TraceBackendChoice,
    pub explain_above_ns: Option<u64>,
    pub budget: Option<Budget>,
}

/// What a run records beyond its histograms, for the commands that offer it.
#[derive(Debug, Default)]
pub(crate) struct Records {
    pub samples: bool,
    pub samples_format: SampleLogFormat,
    pub(crate) summary_every: Option<u64>,
    pub(crate) under_ns: Vec<u64>,
}

/// Resolves the shared groups for threads of `kind` and `policy`, with `default_ring_size`
/// (the kind's) where `--ring-size` is not given; every bad value is exit 2, naming the option.
pub(super) fn resolve(
    groups: &SharedOptions,
    kind: RunKind,
    policy: PolicyKind,
    default_ring_size: usize,
    online: &[usize],
) -> Result<Shared> {
    let cpus = resolve_cpus(&groups.cpus, online)?;
    let housekeeping = resolve_housekeeping(&groups.cpus, &cpus, online)?;
    let priority = resolve_priority(groups.cpus.priority, policy)?;
    let drain_priority = parse_drain_priority(&groups.cpus.drain_priority, kind)?;
    let (loads, scenario, load_cpus) =
        resolve_loads(groups, &cpus, online, housekeeping.as_deref())?;
    if groups.cpus.cpuset_partition {
        check_partition_loads(
            &loads,
            &groups.loads.load,
            scenario.as_ref(),
            &cpus,
            online,
            housekeeping.as_deref(),
        )?;
    }
    let length = resolve_length(groups.length.as_ref(), scenario.as_ref())?;
    let contention = Contention::of_run(
        &loads,
        scenario.as_ref(),
        &own_cpus(housekeeping.as_deref(), online),
        online,
        &cpus,
        housekeeping.as_deref(),
    );
    Ok(Shared {
        contention,
        priority,
        policy,
        length,
        ring_size: resolve_ring_size(groups.cpus.ring_size, default_ring_size)?,
        drain_priority,
        housekeeping,
        cpuset_partition: groups.cpus.cpuset_partition,
        load_cpus,
        mlock: !groups.cpus.no_mlock,
        pm_qos_us: resolve_pm_qos(&groups.cpus.pm_qos)?,
        idle_state_max: groups.cpus.idle_state_max,
        allow_shared_cpus: groups.cpus.allow_shared_cpus,
        loads,
        load_texts: groups.loads.load.clone(),
        scenario,
        log_interval_ns: resolve_log_interval(&groups.output.log_interval)?,
        counters: !groups.output.no_counters,
        out: groups.output.out.clone(),
        trace: groups.trace.trace,
        trace_backend: groups.trace.backend.unwrap_or_default(),
        explain_above_ns: resolve_explain_above(&groups.trace)?,
        budget: resolve_budget(groups.budget.as_deref(), &cpus)?,
        cpus,
    })
}

/// `run`'s and `noise`'s fix for a refused mlockall ([`RunPlan::mlock_fix`]).
const NO_MLOCK_FIX: &str = "pass --no-mlock to measure with page faults possible";

impl Shared {
    /// The plan: these resolved groups, the kind's fields and what the run records; the drain
    /// side's priority is resolved here, below every real-time thread the measurement has.
    pub(crate) fn into_plan(self, measurement: Measurement, records: Records) -> Result<RunPlan> {
        let lowest = lowest_thread_priority(&measurement, self.policy, self.priority);
        let mut contention = self.contention;
        if measurement.kind().spec().spins {
            contention.spinning = self.cpus.clone();
        }
        let drain_priority = drain::resolve(self.drain_priority, lowest, &contention)?;
        let mut scenario = self.scenario;
        let mut length = self.length;
        if let Some(s) = scenario.as_mut().filter(|s| s.counts_wakeups()) {
            length = RunLength::Duration(lay_out_counted(s, &measurement)?);
        }
        Ok(RunPlan {
            cpus: self.cpus,
            policy: self.policy,
            priority: self.priority,
            measurement,
            length,
            log_interval_ns: self.log_interval_ns,
            counters: self.counters,
            loads: self.loads,
            load_texts: self.load_texts,
            scenario,
            samples: records.samples,
            samples_format: records.samples_format,
            summary_every: records.summary_every,
            ring_size: self.ring_size,
            drain_priority,
            actions: crate::plan::actions::ActionPlan::default(),
            housekeeping: self.housekeeping,
            cpuset_partition: self.cpuset_partition,
            load_cpus: self.load_cpus,
            mlock: self.mlock,
            pm_qos_us: self.pm_qos_us,
            idle_state_max: self.idle_state_max,
            trace: self.trace,
            trace_backend: self.trace_backend,
            explain_above_ns: self.explain_above_ns,
            out: self.out,
            out_is_default: false,
            out_option: "--out",
            mlock_fix: Some(NO_MLOCK_FIX),
            allow_shared_cpus: self.allow_shared_cpus,
            segments: None,
            budget: self.budget,
            under_ns: records.under_ns,
        })
    }
}

/// A scenario with phases of `wakeups = N`: plans its phases at thread 0's interval and
/// returns the run's longest length. The run ends when its last phase ends (the session ends
/// it `completed`); this length only bounds a run whose thread 0 is held off its CPU, as
/// `--loops`' end is bounded: twice the planned length (the counted wakeups' expected time
/// with `--interval-step`), and 5 s.
fn lay_out_counted(s: &mut Scenario, measurement: &Measurement) -> Result<u64> {
    if measurement.kind().spec().time_lost {
        return Err(Failure::usage(format!(
            "--scenario: {}: a phase of `wakeups = N` ends after N wakeups of the first measuring thread, and a {} run has no wakeups; give each phase a 'duration'",
            s.path.display(),
            measurement.kind().name()
        )));
    }
    let interval_ns = measurement.interval_ns(0);
    s.lay_out(interval_ns, MAX_DURATION_NS)
        .map_err(|e| Failure::usage(format!("--scenario: {e}")))?;
    let counted: u64 = s.phases.iter().filter_map(|p| p.wakeups).sum();
    let timed: u64 = s
        .phases
        .iter()
        .filter(|p| p.wakeups.is_none())
        .map(|p| p.end_ns - p.start_ns)
        .sum();
    let expected = RunLength::Loops(counted)
        .expected_ns(interval_ns, measurement.interval_step_ns())
        .unwrap_or(u64::MAX)
        .saturating_add(timed);
    Ok(expected
        .saturating_mul(2)
        .saturating_add(5_000_000_000)
        .min(MAX_DURATION_NS))
}

/// `--duration`, `--loops` and `--scenario` to the run's length; no length group is a run
/// without end.
pub(crate) fn resolve_length(
    length: Option<&LengthOptions>,
    scenario: Option<&Scenario>,
) -> Result<RunLength> {
    let Some(length) = length else {
        return Ok(RunLength::Endless);
    };
    // clap refuses --duration and --loops with a scenario: the scenario sets the length.
    // Past the longest run, refused as `--duration` is (a counted scenario's plan is checked
    // phase by phase when it is laid out at the interval, `lay_out_counted`).
    if let Some(s) = scenario {
        if s.length_ns > MAX_DURATION_NS && !s.counts_wakeups() {
            return Err(Failure::usage(format!(
                "--scenario: {}: the scenario lasts {}, above the longest run, 3650d; shorten its phases or its `duration`, or split it into several runs",
                s.path.display(),
                crate::units::format_span(s.length_ns)
            )));
        }
        return Ok(RunLength::Duration(s.length_ns));
    }
    match (&length.duration, length.loops) {
        (_, Some(0)) => Err(Failure::usage("--loops 0: at least one loop is needed")),
        (_, Some(n)) => Ok(RunLength::Loops(n)),
        (Some(d), None) => match duration_arg("--duration", d)? {
            0 => Err(Failure::usage(format!(
                "--duration {d}: a run needs a duration above zero (e.g. 30s)"
            ))),
            ns if ns > MAX_DURATION_NS => Err(Failure::usage(format!(
                "--duration {}: above the longest run, 3650d (for an endless measurement, stop the run with SIGINT or SIGTERM)",
                format_ns(ns)
            ))),
            ns => Ok(RunLength::Duration(ns)),
        },
        (None, None) => Ok(RunLength::Duration(DEFAULT_DURATION_NS)),
    }
}

fn resolve_cpus(args: &CpuOptions, online: &[usize]) -> Result<Vec<usize>> {
    let cpus = match &args.cpus {
        None => online.to_vec(),
        Some(text) => parse_cpu_list(text).map_err(|e| Failure::usage(format!("--cpus: {e}")))?,
    };
    check_online("--cpus", &cpus, online)?;
    Ok(cpus)
}

/// The CPUs jitterlab's own threads (all but the measuring threads and their helpers) run
/// on: `--housekeeping`, or the online CPUs this process may use.
pub(crate) fn own_cpus(housekeeping: Option<&[usize]>, online: &[usize]) -> Vec<usize> {
    if let Some(h) = housekeeping {
        return h.to_vec();
    }
    let allowed = crate::sys::sched::affinity().unwrap_or_else(|_| online.to_vec());
    let own: Vec<usize> = online
        .iter()
        .copied()
        .filter(|c| allowed.contains(c))
        .collect();
    if own.is_empty() { online.to_vec() } else { own }
}

/// `--housekeeping CPUS`: online, and none of them measured (a housekeeping CPU that is also
/// measured would put the drain side and the loads on a measured CPU, which is what the option
/// exists to avoid).
fn resolve_housekeeping(
    args: &CpuOptions,
    cpus: &[usize],
    online: &[usize],
) -> Result<Option<Vec<usize>>> {
    let Some(text) = &args.housekeeping else {
        return Ok(None);
    };
    let housekeeping =
        parse_cpu_list(text).map_err(|e| Failure::usage(format!("--housekeeping: {e}")))?;
    check_online("--housekeeping", &housekeeping, online)?;
    if let Some(both) = housekeeping.iter().find(|c| cpus.contains(c)) {
        return Err(Failure::usage(format!(
            "--housekeeping {text}: CPU {both} is also measured (--cpus {}); housekeeping CPUs run the drain side and the loads, so they must be other CPUs",
            format_cpu_list(cpus)
        )));
    }
    Ok(Some(housekeeping))
}

/// `--priority` within `policy`'s range, or the policy's default.
fn resolve_priority(given: Option<i32>, policy: PolicyKind) -> Result<i32> {
    let (range, default_priority) = policy.priorities();
    let priority = given.unwrap_or(default_priority);
    if !range.contains(&priority) {
        return Err(Failure::usage(format!(
            "--priority {priority}: outside the range of --policy {} ({}..={}); {}",
            policy.name(),
            range.start(),
            range.end(),
            if *range.end() == 0 {
                "omit --priority, or use --policy fifo or rr for a real-time priority"
            } else {
                "real-time priorities are 1 to 99"
            }
        )));
    }
    Ok(priority)
}

/// The syntax of `--drain-priority auto|off|N`. A kind whose threads never sleep (noise,
/// `Kind::spins`): a real-time drain on their CPUs would wait behind them, and be throttled
/// with them, so it drains at normal priority and refuses a priority.
fn parse_drain_priority(text: &str, kind: RunKind) -> Result<DrainRequest> {
    let noise = kind.spec().spins;
    match text {
        "off" => Ok(DrainRequest::Off),
        "auto" if noise => Ok(DrainRequest::Normal),
        "auto" => Ok(DrainRequest::Auto),
        _ => {
            let n: i32 = text.parse().map_err(|_| {
                Failure::usage(format!(
                    "--drain-priority {text}: not auto, off or a priority 1-99"
                ))
            })?;
            if noise {
                return Err(Failure::usage(format!(
                    "--drain-priority {n}: noise threads never sleep, so a real-time drain side on their CPUs would never run; omit it (noise drains at normal priority)"
                )));
            }
            Ok(DrainRequest::Fixed(n))
        }
    }
}

/// The lowest real-time priority among the run's threads: the measuring threads, the IPC
/// senders, the pi-mutex holder and hog; 100 when every one runs SCHED_DEADLINE (ahead of
/// every SCHED_FIFO priority); 0 when the measuring threads are not real-time.
fn lowest_thread_priority(measurement: &Measurement, policy: PolicyKind, priority: i32) -> i32 {
    let measuring = match policy {
        PolicyKind::Fifo | PolicyKind::Rr => priority,
        PolicyKind::Deadline => 100,
        PolicyKind::Other | PolicyKind::Batch | PolicyKind::Idle => return 0,
    };
    let sender = measurement.sender().map(|s| s.priority);
    let inversion = measurement.inversion();
    let helpers = [
        sender,
        inversion.map(|i| i.holder_priority),
        inversion.map(|i| i.hog_priority),
    ];
    // A helper under SCHED_DEADLINE has priority 0 here, and is ahead of every FIFO thread.
    helpers
        .into_iter()
        .flatten()
        .filter(|&p| p > 0)
        .fold(measuring, i32::min)
}

/// `--load` and `--scenario`, each checked against the measured and the online CPUs, and
/// together against the memory they would take.
fn resolve_loads(
    groups: &SharedOptions,
    cpus: &[usize],
    online: &[usize],
    housekeeping: Option<&[usize]>,
) -> Result<(Vec<LoadSpec>, Option<Scenario>, CpuChoice)> {
    let default = CpuChoice::parse_default(&groups.loads.load_cpus).ok_or_else(|| {
        Failure::usage(format!(
            "--load-cpus {}: not all, measured or housekeeping (a load's own cpus= takes a CPU list)",
            groups.loads.load_cpus
        ))
    })?;
    let mut loads = Vec::new();
    for text in &groups.loads.load {
        let mut load = LoadSpec::parse(text).map_err(|e| Failure::usage(format!("--load: {e}")))?;
        if let LoadSpec::Generator(g) = &mut load
            && !g.common.cpus_named
        {
            g.common.cpus = default.clone();
        }
        check_online(&format!("--load {text}"), &load.cpus(), online)?;
        load.check_on_system(cpus, online, housekeeping)
            .map_err(|e| Failure::usage(format!("--load: {e}")))?;
        loads.push(load);
    }
    let scenario = groups
        .length
        .as_ref()
        .and_then(|l| l.scenario.as_deref())
        .map(|path| {
            crate::load::scenario::load_file(path, online).and_then(|mut s| {
                for g in s.phases.iter_mut().flat_map(|p| p.loads.iter_mut()) {
                    if !g.common.cpus_named {
                        g.common.cpus = default.clone();
                    }
                }
                s.check_cpus(cpus, online, housekeeping).map(|_| s)
            })
        })
        .transpose()
        .map_err(|e| Failure::usage(format!("--scenario: {e}")))?;
    crate::load::memory_guard::check_run(&loads, scenario.as_ref()).map_err(Failure::usage)?;
    crate::load::task_guard::check_together(
        &crate::load::memory_guard::schedule(&loads, scenario.as_ref()),
        online,
    )
    .map_err(Failure::usage)?;
    Ok((loads, scenario, default))
}

/// `--cpuset-partition` with a load on a measured CPU: refused before anything is made (exit
/// 2, naming both). The partition is the measured CPUs for the measuring threads alone: on
/// cgroup v2 the kernel takes them from every other cgroup, so a load pinned there cannot
/// start (issue 40's lab, check 4 (d): the partition was made, then `spike load: cannot pin
/// to CPU 1: Invalid argument`, exit 3), and on v1 an exec load's cpuset cannot hold them.
fn check_partition_loads(
    loads: &[LoadSpec],
    texts: &[String],
    scenario: Option<&Scenario>,
    cpus: &[usize],
    online: &[usize],
    housekeeping: Option<&[usize]>,
) -> Result<()> {
    let phase_loads = scenario
        .into_iter()
        .flat_map(|s| s.phases.iter().flat_map(|p| p.loads.iter()));
    let on = |load_cpus: Vec<usize>| -> Vec<usize> {
        load_cpus.into_iter().filter(|c| cpus.contains(c)).collect()
    };
    let mut clashes: Vec<(String, Vec<usize>)> = Vec::new();
    for (load, text) in loads.iter().zip(texts) {
        let load_cpus = match load {
            LoadSpec::Spike(s) => vec![s.cpu],
            LoadSpec::Generator(g) => g
                .common
                .cpus
                .resolve(online, cpus, housekeeping)
                .unwrap_or_default(),
        };
        clashes.push((format!("--load {text}"), on(load_cpus)));
    }
    for g in phase_loads {
        let load_cpus = g
            .common
            .cpus
            .resolve(online, cpus, housekeeping)
            .unwrap_or_default();
        clashes.push((format!("--scenario's load '{}'", g.text), on(load_cpus)));
    }
    match clashes.into_iter().find(|(_, on)| !on.is_empty()) {
        Some((what, on)) => Err(Failure::usage(format!(
            "--cpuset-partition with {what}: the load runs on the measured CPU(s) {}, which the partition gives to the measuring threads alone (on cgroup v2 the kernel takes them from every other task, so the load could not run there); give the load CPUs outside {} (its cpus=, e.g. cpus=housekeeping, or --load-cpus housekeeping; a spike's cpu=), or leave --cpuset-partition out",
            format_cpu_list(&on),
            format_cpu_list(cpus)
        ))),
        None => Ok(()),
    }
}

fn resolve_ring_size(given: Option<usize>, default_ring_size: usize) -> Result<usize> {
    let ring_size = given.unwrap_or(default_ring_size);
    if !(16..=MAX_RING_SIZE).contains(&ring_size) {
        return Err(Failure::usage(format!(
            "--ring-size {ring_size}: outside 16..={MAX_RING_SIZE} samples per thread (the largest ring takes 128 MiB of locked memory per thread and holds 4 s of samples at a 1us interval); the default, four seconds of samples at the interval, suits almost every run"
        )));
    }
    Ok(ring_size)
}

fn resolve_pm_qos(text: &str) -> Result<Option<u32>> {
    match text {
        "off" => Ok(None),
        n => n.parse::<u32>().ok().filter(|v| *v <= i32::MAX as u32).map(Some).ok_or_else(|| {
            Failure::usage(format!("--pm-qos {n}: expected 'off' or a latency in microseconds from 0 to 2147483647 (0 keeps CPUs out of deep idle states)"))
        }),
    }
}

fn resolve_log_interval(text: &str) -> Result<u64> {
    let log_interval_ns = duration_arg("--log-interval", text)?;
    if log_interval_ns < 10_000_000 {
        return Err(Failure::usage(format!(
            "--log-interval {text}: below 10ms; each interval writes one histogram per CPU, so use 10ms or more (default 1s)"
        )));
    }
    Ok(log_interval_ns)
}

/// `--explain-above`, which needs `--trace`. What a kind's trace needs of its clock and policy
/// is the kind's to check.
fn resolve_explain_above(args: &TraceOptions) -> Result<Option<u64>> {
    let explain = args
        .explain_above
        .as_deref()
        .map(|d| duration_arg("--explain-above", d))
        .transpose()?;
    match (&args.explain_above, args.trace) {
        (Some(text), false) => Err(Failure::usage(format!(
            "--explain-above {text}: explanations come from the kernel trace; add --trace"
        ))),
        _ => Ok(explain),
    }
}

/// `--budget`, whose clauses may name only measured CPUs.
fn resolve_budget(text: Option<&str>, cpus: &[usize]) -> Result<Option<Budget>> {
    let budget = Budget::from_option(text)?;
    if let Some(cpu) = budget
        .iter()
        .flat_map(|b| b.named_cpus())
        .find(|c| !cpus.contains(c))
    {
        return Err(Failure::usage(format!(
            "--budget: a clause names cpu{cpu}, which this run does not measure (CPUs {}); name a measured CPU or add it to --cpus",
            format_cpu_list(cpus)
        )));
    }
    Ok(budget)
}

pub(crate) fn check_online(what: &str, cpus: &[usize], online: &[usize]) -> Result<()> {
    match cpus.iter().find(|c| !online.contains(c)) {
        Some(c) => Err(Failure::usage(format!(
            "{what}: CPU {c} is not online; this system's online CPUs are {}",
            format_cpu_list(online)
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auto(lowest: i32) -> Option<i32> {
        drain::resolve(DrainRequest::Auto, lowest, &Contention::default()).unwrap()
    }

    #[test]
    fn auto_drains_at_fifo_1_below_real_time_sleeping_threads_only() {
        assert_eq!(auto(95), Some(1));
        assert_eq!(auto(2), Some(1));
        assert_eq!(auto(100), Some(1), "SCHED_DEADLINE threads");
        // Nothing is below priority 1; normal threads must not be preempted by the drain.
        assert_eq!(auto(1), None);
        assert_eq!(auto(0), None);
        assert_eq!(
            parse_drain_priority("auto", RunKind::Noise).unwrap(),
            DrainRequest::Normal
        );
        assert_eq!(
            drain::resolve(DrainRequest::Off, 95, &Contention::default()).unwrap(),
            None
        );
        assert_eq!(
            drain::resolve(DrainRequest::Fixed(50), 95, &Contention::default()).unwrap(),
            Some(50)
        );
        assert_eq!(
            drain::resolve(DrainRequest::Fixed(99), 100, &Contention::default()).unwrap(),
            Some(99)
        );
    }

    #[test]
    fn the_lowest_priority_counts_senders_holder_and_hog() {
        use crate::plan::{InversionSpec, LatencySpec};
        let mut latency = LatencySpec {
            wake: crate::measure::WakeMethod::default_method(),
            clock: crate::measure::Clock::DEFAULT,
            interval_ns: 1_000_000,
            distance_ns: 0,
            interval_step_ns: 0,
            deadline_ns: None,
            sender: None,
            inversion: None,
        };
        let lowest = |l: &LatencySpec, policy, priority| {
            lowest_thread_priority(&Measurement::of(l.clone()), policy, priority)
        };
        assert_eq!(lowest(&latency, PolicyKind::Fifo, 95), 95);
        assert_eq!(lowest(&latency, PolicyKind::Other, 0), 0);
        latency.inversion = Some(InversionSpec {
            hold_ns: 1,
            hog_ns: 1,
            inherit: true,
            holder_priority: 1,
            hog_priority: 2,
        });
        // --priority 3: the holder at 1 leaves no priority for the drain side.
        assert_eq!(lowest(&latency, PolicyKind::Fifo, 3), 1);
        assert_eq!(
            drain::resolve(
                DrainRequest::Auto,
                lowest(&latency, PolicyKind::Fifo, 3),
                &Contention::default()
            )
            .unwrap(),
            None
        );
    }

    /// Issue 40's lab, check 4 (d): `--cpuset-partition` with a load on the measured CPU is
    /// refused before anything is made (exit 2), naming both; a load outside it is not.
    #[test]
    fn a_load_on_a_partitioned_cpu_is_refused_naming_both() {
        let check = |texts: &[&str], housekeeping: Option<&[usize]>| {
            let texts: Vec<String> = texts.iter().map(|t| t.to_string()).collect();
            let loads: Vec<LoadSpec> = texts.iter().map(|t| LoadSpec::parse(t).unwrap()).collect();
            check_partition_loads(&loads, &texts, None, &[1], &[0, 1], housekeeping)
        };
        let refused = |r: Result<()>| {
            let e = r.unwrap_err();
            assert_eq!(e.code, crate::error::ExitCode::Usage, "{}", e.message);
            e.message
        };
        let m = refused(check(&["spike:cpu=1,every=400ms,len=5ms,prio=50"], None));
        assert!(
            m.starts_with("--cpuset-partition with --load spike:cpu=1,every=400ms,len=5ms,prio=50: the load runs on the measured CPU(s) 1"),
            "{m}"
        );
        assert!(m.contains("leave --cpuset-partition out"), "{m}");
        // A generator without cpus= runs on every CPU (--load-cpus all), the measured one too.
        let m = refused(check(&["spike:cpu=0", "cpu"], Some(&[0])));
        assert!(m.contains("--load cpu: "), "{m}");
        let m = refused(check(&["cpu:cpus=0-1"], None));
        assert!(m.contains("measured CPU(s) 1,"), "{m}");
        // Outside the measured CPU: the partition and the loads go together.
        check(&["spike:cpu=0,prio=50", "cpu:cpus=0"], None).unwrap();
        check(&["cpu:cpus=housekeeping"], Some(&[0])).unwrap();
    }

    #[test]
    fn a_drain_priority_at_or_above_a_thread_or_for_noise_is_refused() {
        let refused = |r: Result<_>| {
            let e: Failure = r.map(|_: Option<i32>| ()).unwrap_err();
            assert_eq!(e.code, crate::error::ExitCode::Usage, "{}", e.message);
            e.message
        };
        let m = refused(drain::resolve(
            DrainRequest::Fixed(95),
            95,
            &Contention::default(),
        ));
        assert!(m.contains("must be 1 to 94"), "{m}");
        let m = refused(drain::resolve(
            DrainRequest::Fixed(1),
            0,
            &Contention::default(),
        ));
        assert!(m.contains("--drain-priority off"), "{m}");
        let e = parse_drain_priority("1", RunKind::Noise).unwrap_err();
        assert!(e.message.contains("never sleep"), "{}", e.message);
        for bad in ["high", "", "1.5"] {
            let e = parse_drain_priority(bad, RunKind::Latency).unwrap_err();
            assert_eq!(e.code, crate::error::ExitCode::Usage);
        }
        for out_of_range in [0, 100, -1] {
            let m = refused(drain::resolve(
                DrainRequest::Fixed(out_of_range),
                95,
                &Contention::default(),
            ));
            assert!(m.contains("must be 1 to 94"), "{m}");
        }
    }
}

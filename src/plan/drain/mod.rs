//! The priority of jitterlab's own threads (`--drain-priority`): the recorder and live view
//! on the main thread (which also runs the SIGINT/SIGTERM handlers), the trace reader and the
//! load supervisor. They must keep running whatever the user's loads do: a real-time load on
//! every CPU they may use, at or above their priority, starves them, and then nothing drains
//! the rings, starts the measurement, sees a stop request or stops the loads (issue 39: a run
//! with `cpu:policy=fifo,prio=50` on a 2-CPU machine hung until SIGKILL).
//!
//! The rule, one for every kind of request: the real-time loads that run at the same time at
//! or above the own threads' priority must leave them one of their CPUs. `auto` puts them one
//! above every real-time load that may share a CPU with them, still below every thread of the
//! measurement (at equal priority a drain would delay a wakeup); a load that cannot be stayed
//! above that way (at or above the measuring threads) must leave a CPU. Anything else is
//! refused before the run starts (exit 2), naming both priorities. Why not always refuse a
//! load on a shared CPU: one CPU left is enough (the scheduler moves a real-time thread that
//! a load preempts to a CPU where it can run), and a load above the measuring threads on some
//! CPUs is a documented experiment (docs/loads.md): the measuring thread it holds off its CPU
//! cannot see the run's end, so the session stops the loads when a thread has not ended soon
//! after it (`session::Session::serve_the_end`). A spike load counts only when its `len` is
//! above [`SPIKE_HOLD_UNCOUNTED_NS`], together with the other spikes of its CPU (they chain):
//! it spins for `len` at every `every` and then gives its CPU back, so a shorter hold delays a
//! stop by less than the promised second (and the drain by far less than a ring holds); a
//! longer one on every own CPU held a SIGINT for its whole `len` (issue 39, N5: 7.2 s), so it
//! is a real-time load like the others for this rule. Only
//! the priorities a load was given count: a load without a real-time policy cannot take one
//! (`sys::caps`). Only the CPUs a load is bound to count: an `exec` load's programs may change
//! their own affinity without privilege (issue 39, N13: `taskset -c 0` in a load given
//! `cpus=1` took CPU 0 at FIFO 98, where the rule had left the own threads), so its `cpus=`
//! counts only where a cpuset makes it a bound (load/contain/cpuset.rs) that its programs
//! cannot leave: where none can be made, or where they run as root (who can leave one through
//! the cgroup files, N14), a real-time `exec` load counts on every CPU, and the refusal says why.

use crate::error::{Failure, Result};
use crate::load::LoadSpec;
use crate::load::SpikeSpec;
use crate::load::generator::{CpuChoice, GeneratorSpec};
use crate::load::scenario::Scenario;

/// The longest spike the rule leaves out: half the promised second for a stop, so that the
/// signal handling, which runs once the spikes give their CPUs back, still has the other half.
/// The default ring holds 4 s of samples (`plan/build/latency.rs`, `RING_SECONDS`).
pub(crate) const SPIKE_HOLD_UNCOUNTED_NS: u64 = 500_000_000;

/// The shortest gap a spike leaves between two of its spins (`every - len`) that counts as a
/// break: a spike that gives its CPU back for less holds it without one (issue 39, N19: a
/// 500 ms spike every 500.01 ms on every CPU, a 10 us gap, held a SIGINT for the whole run;
/// the own threads cannot take a stop in microseconds between two spins of a FIFO 98 load).
/// 10 ms serves a stop (a poll round, and the threads' interrupts) many times over.
pub(crate) const SPIKE_GAP_FLOOR_NS: u64 = 10_000_000;

/// `--drain-priority` as asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DrainRequest {
    /// `auto`: above every real-time load sharing the own threads' CPUs, below every
    /// real-time thread of the measurement; at least 1.
    Auto,
    /// `off`: normal scheduling.
    Off,
    /// `auto` for noise: normal scheduling, as noise threads never sleep (a real-time drain
    /// on their CPUs would never run).
    Normal,
    /// `N`.
    Fixed(i32),
}

/// A load with a real-time policy, as the own threads see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RtLoad {
    /// The load as given, for messages.
    pub text: String,
    /// `fifo` or `rr`.
    pub policy: &'static str,
    pub priority: i32,
    /// The CPUs its processes may run on (where the rule counts it).
    pub cpus: Vec<usize>,
    /// The CPUs it is given (its `cpus=` resolved: its processes' affinity at their start);
    /// `cpus` but for an unbound load, which counts on every CPU while it starts on these
    /// (the refusal names both: seventh hostile re-run, L7-g).
    pub(crate) given: Vec<usize>,
    /// Why its `cpus=` cannot be enforced, when it cannot (then `cpus` are every online CPU).
    pub(crate) unbound: Option<String>,
}

/// Where jitterlab's own threads run and which real-time loads may run beside them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Contention {
    /// The CPUs the own threads may run on: `--housekeeping`, or the process's CPUs.
    pub(crate) own_cpus: Vec<usize>,
    /// The real-time loads that run at the same time, one set per moment that matters: the
    /// whole-run loads alone, and with each scenario phase those of the phases overlapping it.
    pub(crate) together: Vec<Vec<RtLoad>>,
    /// The CPUs where the measurement's own threads never sleep (noise), above the own
    /// threads as a load would be.
    pub(crate) spinning: Vec<usize>,
    /// Loads run alone (`jitterlab load`): no measurement, no recorder, no `--housekeeping`
    /// to offer as a fix (issue 39, L5: its refusal named that option).
    pub(crate) loads_alone: bool,
}

impl Contention {
    /// The real-time loads of `loads` (whole run) and `scenario`'s phases, their CPUs resolved
    /// against the online, measured and housekeeping CPUs, beside own threads on `own_cpus`.
    pub(crate) fn of_run(
        loads: &[LoadSpec],
        scenario: Option<&Scenario>,
        own_cpus: &[usize],
        online: &[usize],
        measured: &[usize],
        housekeeping: Option<&[usize]>,
    ) -> Contention {
        let cpus = Cpus {
            online,
            measured,
            housekeeping,
            bound: exec_cpus_bound(),
        };
        Contention::of_run_on(loads, scenario, own_cpus, &cpus)
    }

    /// [`Contention::of_run`] where `cpus.bound` says whether a load's CPUs can be enforced.
    fn of_run_on(
        loads: &[LoadSpec],
        scenario: Option<&Scenario>,
        own_cpus: &[usize],
        cpus: &Cpus,
    ) -> Contention {
        let rt = |g: &GeneratorSpec| rt_load(g, cpus);
        let spikes: Vec<&SpikeSpec> = loads
            .iter()
            .filter_map(|l| match l {
                LoadSpec::Spike(s) => Some(s),
                LoadSpec::Generator(_) => None,
            })
            .collect();
        let whole: Vec<RtLoad> = loads
            .iter()
            .filter_map(|l| match l {
                LoadSpec::Generator(g) => rt(g),
                LoadSpec::Spike(_) => None,
            })
            .chain(long_holding_spikes(&spikes))
            .collect();
        let mut together = vec![whole.clone()];
        let phases = scenario.map(|s| s.phases.as_slice()).unwrap_or_default();
        for p in phases {
            let mut set = whole.clone();
            for q in phases
                .iter()
                .filter(|q| q.start_ns < p.end_ns && p.start_ns < q.end_ns)
            {
                set.extend(q.loads.iter().filter_map(rt));
            }
            together.push(set);
        }
        Contention {
            own_cpus: own_cpus.to_vec(),
            together,
            spinning: Vec::new(),
            loads_alone: false,
        }
    }

    /// `jitterlab load`: the loads all run together, the own threads on `own_cpus`.
    pub(crate) fn of_loads_alone(
        loads: &[GeneratorSpec],
        own_cpus: &[usize],
        online: &[usize],
    ) -> Contention {
        let cpus = Cpus {
            online,
            measured: &[],
            housekeeping: None,
            bound: exec_cpus_bound(),
        };
        Contention::of_loads_alone_on(loads, own_cpus, &cpus)
    }

    /// [`Contention::of_loads_alone`] where `cpus.bound` says whether a load's CPUs can be
    /// enforced.
    fn of_loads_alone_on(loads: &[GeneratorSpec], own_cpus: &[usize], cpus: &Cpus) -> Contention {
        Contention {
            own_cpus: own_cpus.to_vec(),
            together: vec![loads.iter().filter_map(|g| rt_load(g, cpus)).collect()],
            spinning: Vec::new(),
            loads_alone: true,
        }
    }

    /// The real-time loads that may run on a CPU of the own threads.
    fn sharing(&self) -> impl Iterator<Item = &RtLoad> {
        self.together
            .iter()
            .flatten()
            .filter(|l| l.cpus.iter().any(|c| self.own_cpus.contains(c)))
    }

    /// Checks that the own threads at `priority` (None: normal scheduling, below every
    /// real-time load) keep a CPU at every moment: the loads at or above it together must not
    /// cover every own CPU. The error names the loads, their priority and the own threads'.
    fn check(
        &self,
        priority: Option<i32>,
        whose: &str,
        fix: &str,
    ) -> std::result::Result<(), String> {
        let level = priority.unwrap_or(0);
        for set in &self.together {
            let above: Vec<&RtLoad> = set.iter().filter(|l| l.priority >= level).collect();
            let covered =
                |c: &usize| self.spinning.contains(c) || above.iter().any(|l| l.cpus.contains(c));
            if above.is_empty() || !self.own_cpus.iter().all(covered) {
                continue;
            }
            // The CPUs each load is given; an unbound one's counted CPUs said after them (an
            // `exec` load given CPU 1 was said to run "on CPUs 0-1": L7-g).
            let loads: Vec<String> = above
                .iter()
                .map(|l| {
                    let counted = match l.given == l.cpus {
                        true => String::new(),
                        false => format!(
                            ", counted on CPUs {}",
                            crate::cpulist::format_cpu_list(&l.cpus)
                        ),
                    };
                    format!(
                        "'{}' (SCHED_{} {} on CPUs {}{counted})",
                        l.text,
                        l.policy.to_uppercase(),
                        l.priority,
                        crate::cpulist::format_cpu_list(&l.given)
                    )
                })
                .collect();
            let own = match priority {
                Some(p) => format!("SCHED_FIFO {p}"),
                None => "normal priority (SCHED_OTHER)".into(),
            };
            let noise = match self.spinning.is_empty() {
                true => String::new(),
                false => format!(
                    ", with the noise threads on CPUs {}",
                    crate::cpulist::format_cpu_list(&self.spinning)
                ),
            };
            let unbound: Vec<String> = above
                .iter()
                .filter_map(|l| {
                    Some(format!(
                        "; '{}' counts on every CPU: its cpus= cannot be enforced here ({}), and its programs may move themselves to any CPU (changing one's own affinity needs no privilege)",
                        l.text,
                        l.unbound.as_ref()?
                    ))
                })
                .collect();
            let spike = match above.iter().any(|l| l.text.starts_with("spike:")) {
                true => format!(
                    "; spikes count when those of one CPU can hold it longer than {} ms without a break, together, a gap (every - len) under {} ms being no break (a shorter hold gives the CPU back within the promised second): or give them lens, or every= far enough apart, that hold it at most that",
                    SPIKE_HOLD_UNCOUNTED_NS / 1_000_000,
                    SPIKE_GAP_FLOOR_NS / 1_000_000
                ),
                false => String::new(),
            };
            let (starved, cpus_fix) = match self.loads_alone {
                true => (
                    "the load supervisor and the signal handling would never run, and nothing could stop the loads",
                    "or give the load cpus= that leave one of those CPUs free",
                ),
                false => (
                    "the recorder, the load supervisor and the signal handling would never run, and nothing could stop the run",
                    "give the load cpus= that leave one of those CPUs free, or give --housekeeping CPUs the load does not use",
                ),
            };
            return Err(format!(
                "load {} at or above jitterlab's own threads ({own}, {whose}) on every CPU they run on ({}{noise}): {starved}; {fix}, {cpus_fix}{spike}{}",
                loads.join(" and "),
                crate::cpulist::format_cpu_list(&self.own_cpus),
                unbound.concat(),
            ));
        }
        Ok(())
    }
}

/// What a load's `cpus=` resolve against, and whether they can be enforced.
struct Cpus<'a> {
    online: &'a [usize],
    measured: &'a [usize],
    housekeeping: Option<&'a [usize]>,
    /// Ok where an `exec` load's CPUs are bounded by a cpuset; else why not.
    bound: std::result::Result<(), &'a str>,
}

/// Whether an `exec` load's `cpus=` bound its programs here: Ok where a cpuset holds them and
/// they cannot leave it, else why not. A program running as root leaves any cpuset by writing
/// its pid into the cgroup files, which needs no capability (issue 39, fourth hostile re-run,
/// N14: `echo $$ > /sys/fs/cgroup/cpuset/cgroup.procs` and then `taskset` brought N13's hang
/// back), and an `exec` load's programs run as the user who runs jitterlab.
fn exec_cpus_bound() -> std::result::Result<(), &'static str> {
    if crate::sys::process::effective_user_id() == 0 {
        return Err(
            "its programs run as root, who can leave any cpuset by writing the cgroup files, which needs no capability",
        );
    }
    crate::load::contain::cpuset::enforceable()
}

/// The generator whose programs are the user's, free to change their own affinity.
const EXEC: &str = "exec";

/// `g` as a real-time load, when it is one: on its CPUs, or on every online CPU when it runs
/// programs whose CPUs cannot be enforced here.
fn rt_load(g: &GeneratorSpec, on: &Cpus) -> Option<RtLoad> {
    let (policy, priority) = g.common.policy.realtime()?;
    // Checked when the load was parsed; a choice that cannot be resolved runs nowhere.
    let mut cpus = match &g.common.cpus {
        CpuChoice::List(l) => l.clone(),
        c => c
            .resolve(on.online, on.measured, on.housekeeping)
            .unwrap_or_default(),
    };
    let given = cpus.clone();
    let mut unbound = None;
    if let Err(why) = on.bound
        && g.name() == EXEC
        && !on.online.iter().all(|c| cpus.contains(c))
    {
        cpus = on.online.to_vec();
        unbound = Some(why.to_string());
    }
    Some(RtLoad {
        text: g.text.clone(),
        policy,
        priority,
        cpus,
        given,
        unbound,
    })
}

/// The spikes that count as real-time loads: every spike of a CPU whose spikes together can
/// hold it longer than [`SPIKE_HOLD_UNCOUNTED_NS`] without a break, each SCHED_FIFO at its
/// prio on its CPU. Spikes of several loads on one CPU chain: two 500 ms spikes every second,
/// offset by 500 ms, never give the CPU back (issue 39, fourth re-run: a SIGINT held for the
/// whole run), and a short frequent spike stretches a long rare one.
fn long_holding_spikes(spikes: &[&SpikeSpec]) -> Vec<RtLoad> {
    let mut counted = Vec::new();
    let mut cpus: Vec<usize> = spikes.iter().map(|s| s.cpu).collect();
    cpus.sort_unstable();
    cpus.dedup();
    for cpu in cpus {
        let on_cpu: Vec<&SpikeSpec> = spikes.iter().copied().filter(|s| s.cpu == cpu).collect();
        if longest_hold_ns(&on_cpu) <= SPIKE_HOLD_UNCOUNTED_NS {
            continue;
        }
        counted.extend(on_cpu.iter().copied().map(spike_load));
    }
    counted
}

/// A spike as a real-time load: SCHED_FIFO at its prio on its CPU, named by its parameters.
/// The rule above counts only the long-holding ones; the words that say what held a
/// measuring thread off its CPU (`session/starvation.rs`) name every spike (issue 39, N19).
pub(crate) fn spike_load(s: &SpikeSpec) -> RtLoad {
    RtLoad {
        text: format!(
            "spike:cpu={},prio={},len={}ms,every={}ms,offset={}ms",
            s.cpu,
            s.prio,
            s.len_ns as f64 / 1e6,
            s.every_ns as f64 / 1e6,
            s.offset_ns as f64 / 1e6
        ),
        policy: "fifo",
        priority: s.prio,
        cpus: vec![s.cpu],
        given: vec![s.cpu],
        unbound: None,
    }
}

/// The longest time `spikes` (of one CPU) can hold it without a break, ns, whatever their
/// offsets: the busy period that starts when all are due at once, the worst case of periodic
/// work with any phases (the response-time analysis of fixed-priority scheduling: w = Σ
/// ⌈w / every⌉ × len, from w = Σ len, to its fixed point). Without one (together they need the
/// whole CPU, or one of them gives it back for less than [`SPIKE_GAP_FLOOR_NS`]), or once past [`SPIKE_HOLD_UNCOUNTED_NS`], what is returned is above it.
fn longest_hold_ns(spikes: &[&SpikeSpec]) -> u64 {
    // A gap under the floor is no break: such a spike holds its CPU for ever.
    if spikes
        .iter()
        .any(|s| s.every_ns.saturating_sub(s.len_ns) < SPIKE_GAP_FLOOR_NS)
    {
        return u64::MAX;
    }
    let share: f64 = spikes
        .iter()
        .map(|s| s.len_ns as f64 / s.every_ns as f64)
        .sum();
    if share >= 1.0 {
        return u64::MAX;
    }
    let demand = |w: u64| -> u64 {
        spikes
            .iter()
            .map(|s| w.div_ceil(s.every_ns).saturating_mul(s.len_ns))
            .fold(0u64, u64::saturating_add)
    };
    let mut w: u64 = spikes
        .iter()
        .map(|s| s.len_ns)
        .fold(0u64, u64::saturating_add);
    // Each step that does not end adds at least one spike's len; the limit ends it early.
    while w <= SPIKE_HOLD_UNCOUNTED_NS {
        let next = demand(w);
        if next == w {
            break;
        }
        w = next;
    }
    w
}

/// The own threads' SCHED_FIFO priority in a run whose lowest real-time thread of the
/// measurement is at `lowest` (0: the measuring threads are not real-time; 100: all
/// SCHED_DEADLINE): `request` resolved, and checked against the loads (exit 2).
pub(crate) fn resolve(
    request: DrainRequest,
    lowest: i32,
    contention: &Contention,
) -> Result<Option<i32>> {
    let highest = (lowest - 1).min(99);
    let priority = match request {
        DrainRequest::Off | DrainRequest::Normal => None,
        DrainRequest::Auto if highest < 1 => None,
        DrainRequest::Auto => {
            let above_loads = contention
                .sharing()
                .map(|l| l.priority + 1)
                .max()
                .unwrap_or(1);
            Some(above_loads.min(highest))
        }
        DrainRequest::Fixed(n) if (1..=highest).contains(&n) => Some(n),
        DrainRequest::Fixed(n) if highest < 1 => {
            return Err(Failure::usage(format!(
                "--drain-priority {n}: no real-time priority is below every thread of this run (the lowest is {lowest}; 0: the measuring threads are not real-time), so a real-time drain side would run ahead of one; use --drain-priority off, or raise --priority"
            )));
        }
        DrainRequest::Fixed(n) => {
            return Err(Failure::usage(format!(
                "--drain-priority {n}: must be 1 to {highest}, below every real-time thread of this run (the lowest is at {lowest}), so that draining never delays a wakeup"
            )));
        }
    };
    let (whose, fix) = match (request, priority) {
        (DrainRequest::Auto, Some(p)) => (
            format!("--drain-priority auto, at most {p}: below the measurement's lowest real-time thread, {lowest}"),
            format!("give the load a prio below {p}"),
        ),
        (DrainRequest::Auto, None) => (
            "--drain-priority auto: the measuring threads are not real-time, so neither are they".to_string(),
            "give the load policy=other, or measure at a real-time --priority".to_string(),
        ),
        (DrainRequest::Normal, _) => (
            "normal priority: noise threads never sleep, so a real-time drain side on their CPUs would never run".to_string(),
            "give the load policy=other".to_string(),
        ),
        (DrainRequest::Off, _) => (
            "--drain-priority off".to_string(),
            "use --drain-priority auto (above the loads)".to_string(),
        ),
        (DrainRequest::Fixed(n), _) => (
            format!("--drain-priority {n}"),
            "use --drain-priority auto (above the loads)".to_string(),
        ),
    };
    contention
        .check(priority, &whose, &fix)
        .map_err(Failure::usage)?;
    Ok(priority)
}

/// The own threads' priority for loads run alone (`jitterlab load`, `sweep --no-measure`):
/// one above every real-time load that may share their CPUs (at most 99), None without one;
/// refused (exit 2) when loads at 99 leave them no CPU.
pub(crate) fn alone(contention: &Contention) -> Result<Option<i32>> {
    let priority = contention.sharing().map(|l| (l.priority + 1).min(99)).max();
    contention
        .check(
            priority,
            "one above the loads, at most 99",
            "give the load a prio below 99",
        )
        .map_err(Failure::usage)?;
    Ok(priority)
}

#[cfg(test)]
mod tests;

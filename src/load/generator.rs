//! The built-in load generators as plain data: the [`Generator`] trait every generator file
//! implements, its registry row ([`GeneratorInfo`], listed in `generators::GENERATORS`), the
//! parameters every generator shares, and a parsed load ([`GeneratorSpec`]).
//!
//! A generator is: parse its parameters ([`GeneratorInfo::parse`]) → check them against this
//! system ([`Generator::check_system`]) → run inside a worker process until stopped
//! ([`Generator::run`], see `worker.rs`) → turn the counters it kept into throughput with
//! units ([`Generator::throughput`]).

use super::spec::Params;
use super::worker_kit::{Counts, Ctx};
use crate::cpulist::{format_cpu_list, parse_cpu_list};
use crate::format::run_record::Throughput;
use crate::measure::Policy;
use std::fmt;
use std::sync::Arc;

/// A registry row: what the parser, the error messages and the docs know of a generator
/// before any load is parsed.
pub struct GeneratorInfo {
    /// The load's name, before the `:` of its spec.
    pub name: &'static str,
    /// One line on what it loads.
    #[expect(
        dead_code,
        reason = "dead since pub(crate) (issue 41 sweep): read by no code; load's owner removes it"
    )]
    pub(crate) about: &'static str,
    /// How its spec is written.
    pub(crate) syntax: Syntax,
    /// Its own parameters (the common ones are [`COMMON_PARAMETERS`]), in the docs' order.
    pub(crate) parameters: &'static [Parameter],
    /// Names of the counters it keeps in the worker, in slot order.
    pub counters: &'static [&'static str],
    /// What one loop of its work is, for `loops=N` (FirmTimers `generate_load -l`); None: its
    /// work has no loop to count, and `loops=` is refused.
    pub(crate) loop_unit: Option<LoopUnit>,
    /// Parses its own parameters from `p` (the registry parses the common ones and rejects
    /// keys no one read).
    pub parse: fn(&mut Params) -> Result<Box<dyn Generator>, String>,
}

/// One loop of a generator's work (`loops=N`): the counter that counts it, and what it is.
pub(crate) struct LoopUnit {
    /// The index in [`GeneratorInfo::counters`] of the counter that grows by one per loop.
    pub counter: usize,
    /// What one loop does, for docs and messages.
    #[expect(
        dead_code,
        reason = "dead since pub(crate) (issue 41 sweep): read by no code; load's owner removes it"
    )]
    pub what: &'static str,
}

/// How a generator's spec is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Syntax {
    /// `NAME:key=value,...`.
    Parameters,
    /// `NAME:COMMAND ARGS...` or `NAME[key=value,...]:COMMAND ARGS...`: everything after the
    /// `:` is the generator's command ([`Params::command`]), so it may hold `,` and `=`.
    /// `usage` ends the message for a spec not written so.
    Command { usage: &'static str },
}

/// One parameter of a generator, for messages and docs.
pub(crate) struct Parameter {
    pub name: &'static str,
    /// Its default, as it would be written in a spec ("" when it has none).
    #[cfg_attr(
        not(test),
        expect(
            dead_code,
            reason = "dead since pub(crate) (issue 41 sweep): read by unit tests only; load's owner removes it"
        )
    )]
    pub default: &'static str,
    #[expect(
        dead_code,
        reason = "dead since pub(crate) (issue 41 sweep): read by no code; load's owner removes it"
    )]
    pub help: &'static str,
}

impl GeneratorInfo {
    /// The names of its own parameters.
    pub(crate) fn parameter_names(&self) -> impl Iterator<Item = &'static str> {
        self.parameters.iter().map(|p| p.name)
    }
}

/// A parsed generator: what it does with its own parameters. Implemented once per file of
/// `generators/`; everything but [`Generator::info`], [`Generator::run`] and
/// [`Generator::throughput`] has a default that fits most generators.
pub trait Generator: fmt::Debug + Send + Sync {
    /// Its registry row.
    fn info(&self) -> &'static GeneratorInfo;

    /// The number of workers when `workers=` is not given.
    fn default_workers(&self, cpus: &[usize]) -> usize {
        let _ = cpus;
        1
    }

    /// Checks against this system what parsing cannot: a writable directory with space, a
    /// program that exists. `text` is the load as given, for messages; `workers` is `workers=`
    /// or 1. Errors are bad input (exit 2).
    fn check_system(&self, text: &str, workers: u64) -> Result<(), String> {
        let _ = (text, workers);
        Ok(())
    }

    /// The tasks (threads and processes) each worker starts at most at once, counted by the
    /// guard that sums the loads running together (`task_guard.rs`): its thread, by default.
    fn tasks_per_worker(&self) -> u64 {
        1
    }

    /// Bytes of memory each worker holds at once, counted by the guard that sums the loads
    /// running together (`memory_guard.rs`); 0 for loads that hold little.
    fn memory_bytes_per_worker(&self) -> u64 {
        0
    }

    /// Runs in the worker process before the generator's thread starts (on the main thread,
    /// which lives as long as the worker); errors fail the load (exit 4).
    fn prepare_worker(&self) -> Result<(), String> {
        Ok(())
    }

    /// Runs the generator in this (worker) process until `ctx.stopped()`, or, with `ctx.once`,
    /// until its single piece of work is done, if it has one.
    fn run(&self, ctx: &Ctx) -> Result<(), String>;

    /// Its throughput from its counters (in [`GeneratorInfo::counters`] order).
    fn throughput(&self, counts: &Counts) -> Vec<Throughput>;

    /// Whether, run once (`jitterlab load` without --duration), it ends by itself.
    fn ends_when_run_once(&self) -> bool {
        false
    }

    /// What to print before it runs once with `workers` workers (hackbench's banner).
    fn once_banner(&self, workers: usize) -> Option<String> {
        let _ = workers;
        None
    }

    /// What to print after it ran once, from its last counters (hackbench's `Time:`).
    fn once_result(&self, values: &[u64]) -> Option<String> {
        let _ = values;
        None
    }

    /// How its work ended when the load ended by itself, from its last counters, said in
    /// place of the worker's own exit status (which is 0 when the worker saw its work end):
    /// `exec`'s programs' exits and the last one's status. None: the worker's status says it.
    fn ended_text(&self, values: &[u64]) -> Option<String> {
        let _ = values;
        None
    }
}

/// The parameters every generator takes.
pub(crate) const COMMON_PARAMETERS: &[&str] = &["cpus", "workers", "policy", "prio"];

/// The parameter of the generators with a [`LoopUnit`]: each worker stops after this many loops.
pub(crate) const LOOPS_PARAMETER: &str = "loops";

/// Which CPUs a generator's processes may run on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpuChoice {
    /// Every online CPU (the default).
    All,
    /// The housekeeping CPUs (`cpus=housekeeping`): `--housekeeping`, else the online CPUs
    /// that are not measured.
    Housekeeping,
    /// The measured CPUs (`cpus=measured`): the load shares them with the measuring threads.
    Measured,
    List(Vec<usize>),
}

impl CpuChoice {
    /// `--load-cpus`: every choice but a list, by its name.
    pub(crate) fn parse_default(text: &str) -> Option<CpuChoice> {
        match text {
            "all" => Some(CpuChoice::All),
            "measured" => Some(CpuChoice::Measured),
            "housekeeping" => Some(CpuChoice::Housekeeping),
            _ => None,
        }
    }

    /// The name of a choice as `cpus=` spells it (a list: `list`).
    pub fn name(&self) -> &'static str {
        match self {
            CpuChoice::All => "all",
            CpuChoice::Measured => "measured",
            CpuChoice::Housekeeping => "housekeeping",
            CpuChoice::List(_) => "list",
        }
    }

    /// The CPUs this choice means, given the online and the measured CPUs and the run's
    /// `--housekeeping` CPUs, if given.
    pub fn resolve(
        &self,
        online: &[usize],
        measured: &[usize],
        housekeeping: Option<&[usize]>,
    ) -> Result<Vec<usize>, String> {
        match self {
            CpuChoice::All => Ok(online.to_vec()),
            CpuChoice::List(l) => Ok(l.clone()),
            CpuChoice::Measured if measured.is_empty() => Err(
                "cpus=measured means the measured CPUs, and nothing is measured here; give a CPU list (cpus=0-1) or use it with jitterlab run".into(),
            ),
            CpuChoice::Measured => Ok(measured.to_vec()),
            CpuChoice::Housekeeping if housekeeping.is_some() => {
                Ok(housekeeping.unwrap_or_default().to_vec())
            }
            CpuChoice::Housekeeping => {
                let rest: Vec<usize> = online
                    .iter()
                    .copied()
                    .filter(|c| !measured.contains(c))
                    .collect();
                if measured.is_empty() {
                    Err("cpus=housekeeping means the online CPUs that are not measured, and nothing is measured here; give a CPU list (cpus=0-1) or use it with jitterlab run".into())
                } else if rest.is_empty() {
                    Err(format!(
                        "cpus=housekeeping: every online CPU ({}) is measured, none is left for the load; measure fewer CPUs (--cpus) or give the load a CPU list",
                        format_cpu_list(online)
                    ))
                } else {
                    Ok(rest)
                }
            }
        }
    }
}

/// The scheduling policy of a generator's processes (FirmTimers `generate_load -r`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadPolicy {
    Other,
    Batch,
    Idle,
    Fifo(i32),
    Rr(i32),
}

impl LoadPolicy {
    pub(crate) fn to_policy(self) -> Policy {
        match self {
            LoadPolicy::Other => Policy::Other,
            LoadPolicy::Batch => Policy::Batch,
            LoadPolicy::Idle => Policy::Idle,
            LoadPolicy::Fifo(p) => Policy::Fifo(p),
            LoadPolicy::Rr(p) => Policy::RoundRobin(p),
        }
    }

    /// The policy's name and real-time priority, for `fifo` and `rr`; None for the others.
    pub(crate) fn realtime(self) -> Option<(&'static str, i32)> {
        match self {
            LoadPolicy::Fifo(p) => Some(("fifo", p)),
            LoadPolicy::Rr(p) => Some(("rr", p)),
            LoadPolicy::Other | LoadPolicy::Batch | LoadPolicy::Idle => None,
        }
    }
}

/// Parameters shared by every generator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Common {
    pub cpus: CpuChoice,
    /// Whether the spec named `cpus=`; a load that did not takes the run's `--load-cpus`.
    pub(crate) cpus_named: bool,
    /// None: the generator's own default.
    pub(crate) workers: Option<usize>,
    pub policy: LoadPolicy,
    /// `loops=N`: each worker ends after N loops of its work (generators with a [`LoopUnit`]);
    /// None: it works until stopped.
    pub loops: Option<u64>,
}

impl Common {
    fn parse(p: &mut Params, info: &GeneratorInfo) -> Result<Self, String> {
        // A generator's own `loops` (hackbench's messages per exchange) was read before this.
        let loops = p
            .int(LOOPS_PARAMETER, 1..=i64::MAX, None)?
            .map(|n| n as u64);
        if loops.is_some() && info.loop_unit.is_none() {
            let counted: Vec<&str> = super::generators::GENERATORS
                .iter()
                .filter(|g| g.loop_unit.is_some())
                .map(|g| g.name)
                .collect();
            return Err(format!(
                "load '{}': {} has no loop to count, so it takes no loops=; loops=N is taken by {} (docs/loads.md); run this load for a --duration instead",
                p.spec_text(),
                info.name,
                counted.join(", ")
            ));
        }
        let named = p.text("cpus", None);
        let cpus_named = named.is_some();
        let cpus = match named {
            None => CpuChoice::All,
            Some(v) if v == "measured" => CpuChoice::Measured,
            Some(v) if v == "all" => CpuChoice::All,
            Some(v) if v == "housekeeping" => CpuChoice::Housekeeping,
            // CPU lists use `-` and `+`-free notation; `,` separates load parameters, so a
            // list of several parts is written with `+`: cpus=0+2-3.
            Some(v) => CpuChoice::List(parse_cpu_list(&v.replace('+', ",")).map_err(|e| {
                p.bad(
                    "cpus",
                    &v,
                    &format!("all, housekeeping, measured, or a CPU list with + between parts (e.g. 1, 0-3, 0+2-3): {e}"),
                )
            })?),
        };
        let workers = p.int("workers", 1..=4096, None)?.map(|n| n as usize);
        let prio = p.int("prio", 1..=99, None)?;
        let name = p.choice(
            "policy",
            &["other", "batch", "idle", "fifo", "rr"],
            if prio.is_some() { "fifo" } else { "other" },
        )?;
        let policy = match (name.as_str(), prio) {
            ("fifo", p) => LoadPolicy::Fifo(p.unwrap_or(50) as i32),
            ("rr", p) => LoadPolicy::Rr(p.unwrap_or(50) as i32),
            (other, Some(prio)) => {
                return Err(format!(
                    "load '{}': prio={prio} is a real-time priority and policy={other} has none; use policy=fifo or policy=rr, or drop prio",
                    p.spec_text()
                ));
            }
            ("batch", None) => LoadPolicy::Batch,
            ("idle", None) => LoadPolicy::Idle,
            _ => LoadPolicy::Other,
        };
        Ok(Common {
            cpus_named,
            cpus,
            workers,
            policy,
            loops,
        })
    }
}

/// A parsed built-in generator load.
#[derive(Debug, Clone)]
pub struct GeneratorSpec {
    /// The load text as given.
    pub text: String,
    pub(crate) generator: Arc<dyn Generator>,
    pub common: Common,
}

/// Parsing is a function of the text: two specs are the same load when their texts are.
impl PartialEq for GeneratorSpec {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Eq for GeneratorSpec {}

impl GeneratorSpec {
    /// Parses `params` as the generator of row `info`: its own parameters, then the common
    /// ones, then no key left over.
    pub fn parse(info: &'static GeneratorInfo, mut params: Params) -> Result<Self, String> {
        let text = params.spec_text().to_string();
        let generator = (info.parse)(&mut params)?;
        let common = Common::parse(&mut params, info)?;
        let known: Vec<&str> = info
            .parameter_names()
            .chain(COMMON_PARAMETERS.iter().copied())
            .chain(info.loop_unit.as_ref().map(|_| LOOPS_PARAMETER))
            .collect();
        params.finish(&known)?;
        Ok(GeneratorSpec {
            text,
            generator: Arc::from(generator),
            common,
        })
    }

    pub fn name(&self) -> &'static str {
        self.generator.info().name
    }

    /// The explicit CPUs of `cpus=`, to check that they are online.
    pub(crate) fn listed_cpus(&self) -> Vec<usize> {
        match &self.common.cpus {
            CpuChoice::List(l) => l.clone(),
            _ => Vec::new(),
        }
    }

    /// The number of workers: `workers=` or the generator's default (cpu: one per CPU of
    /// its set; the others: 1).
    pub(crate) fn workers(&self, cpus: &[usize]) -> usize {
        self.common
            .workers
            .unwrap_or_else(|| self.generator.default_workers(cpus))
    }

    /// Checks the load against this system: `cpus=` resolvable (with the measured CPUs for
    /// `housekeeping`), then the generator's own checks. Errors are bad input. Memory depends
    /// on the other loads that run at the same time: `memory_guard::check_together`.
    pub(crate) fn check_on_system(
        &self,
        measured: &[usize],
        online: &[usize],
        housekeeping: Option<&[usize]>,
    ) -> Result<(), String> {
        self.common
            .cpus
            .resolve(online, measured, housekeeping)
            .map_err(|e| format!("load '{}': {e}", self.text))?;
        self.check_system()
    }

    /// The generator's own checks against this system ([`Generator::check_system`]).
    pub fn check_system(&self) -> Result<(), String> {
        let workers = self.common.workers.unwrap_or(1) as u64;
        self.generator.check_system(&self.text, workers)
    }

    /// The loops its workers have done in all, from its counters (`values`, in slot order),
    /// when it counts loops.
    pub(crate) fn loops_done(&self, values: &[u64]) -> Option<u64> {
        let unit = self.generator.info().loop_unit.as_ref()?;
        values.get(unit.counter).copied()
    }

    /// How its work ended, when it ended by itself ([`Generator::ended_text`]).
    pub(crate) fn ended_text(&self, values: &[u64]) -> Option<String> {
        self.generator.ended_text(values)
    }

    /// Names of the counters the generator keeps, in slot order.
    pub fn counters(&self) -> &'static [&'static str] {
        self.generator.info().counters
    }

    /// Runs the generator in this (worker) process (see [`Generator::run`]).
    pub fn run(&self, ctx: &Ctx) -> Result<(), String> {
        self.generator.run(ctx)
    }

    /// The generator's throughput from its counters over `elapsed_ns` of work.
    pub fn throughput(&self, values: &[u64], elapsed_ns: u64) -> Vec<Throughput> {
        self.generator.throughput(&Counts::new(values, elapsed_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::LoadSpec;

    fn generator(text: &str) -> GeneratorSpec {
        match LoadSpec::parse(text).unwrap() {
            LoadSpec::Generator(g) => g,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn common_parameters() {
        let g = generator("cpu:cpus=0+2-3,workers=2,prio=80");
        assert_eq!(g.common.cpus, CpuChoice::List(vec![0, 2, 3]));
        assert_eq!(g.common.workers, Some(2));
        assert_eq!(g.common.policy, LoadPolicy::Fifo(80));
        assert_eq!(generator("cpu").common.policy, LoadPolicy::Other);
        assert_eq!(generator("cpu:policy=rr").common.policy, LoadPolicy::Rr(50));
        assert_eq!(
            generator("cpu:cpus=housekeeping").common.cpus,
            CpuChoice::Housekeeping
        );
        assert_eq!(generator("cpu").workers(&[0, 1, 2]), 3);
        assert_eq!(generator("io").workers(&[0, 1, 2]), 1);
        for (bad, needle) in [
            ("cpu:policy=batch,prio=3", "policy=batch has none"),
            ("cpu:prio=100", "prio=100"),
            ("cpu:cpus=x", "cpus=x"),
            ("cpu:workers=0", "workers=0"),
            ("cpu:colour=red", "unknown parameter 'colour'"),
            ("cpu:policy=deadline", "policy=deadline"),
        ] {
            let e = LoadSpec::parse(bad).unwrap_err();
            assert!(e.contains(needle), "{bad}: {e}");
        }
    }

    #[test]
    fn housekeeping_is_the_given_cpus_else_the_unmeasured_ones() {
        assert_eq!(
            CpuChoice::Housekeeping.resolve(&[0, 1, 2, 3], &[2, 3], None),
            Ok(vec![0, 1])
        );
        // --housekeeping 1: CPU 0 is neither measured nor housekeeping.
        assert_eq!(
            CpuChoice::Housekeeping.resolve(&[0, 1, 2, 3], &[2, 3], Some(&[1])),
            Ok(vec![1])
        );
        assert_eq!(
            CpuChoice::All.resolve(&[0, 1, 2, 3], &[2, 3], Some(&[1])),
            Ok(vec![0, 1, 2, 3])
        );
        assert!(
            CpuChoice::Housekeeping
                .resolve(&[0, 1], &[0, 1], None)
                .unwrap_err()
                .contains("none is left")
        );
        assert!(
            CpuChoice::Housekeeping
                .resolve(&[0, 1], &[], None)
                .unwrap_err()
                .contains("nothing is measured")
        );
    }
}

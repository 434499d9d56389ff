//! The built-in load generators as plain data: a parsed spec (`NAME:key=value,...`), the
//! parameters every generator shares, and the dispatch to each generator's module.
//!
//! A generator is: parse its parameters ([`GeneratorSpec::parse`]) → check them against this
//! system ([`GeneratorSpec::check_system`]) → run inside a worker process until stopped
//! ([`GeneratorSpec::run`], see `worker.rs`) → turn the counters it kept into throughput with
//! units ([`GeneratorSpec::throughput`]).

use super::spec::Params;
use super::worker::Ctx;
use super::{cpu, exec, fork, hackbench, io, memory, net, proc};
use crate::cpulist::{format_cpu_list, parse_cpu_list};
use crate::measure::Policy;
use crate::results::run_record::Throughput;

/// The parameters every generator takes.
pub const COMMON_PARAMETERS: &[&str] = &["cpus", "workers", "policy", "prio"];

/// Which CPUs a generator's processes may run on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpuChoice {
    /// Every online CPU (the default).
    All,
    /// The online CPUs that are not measured (`cpus=housekeeping`).
    Housekeeping,
    List(Vec<usize>),
}

impl CpuChoice {
    /// The CPUs this choice means, given the online and the measured CPUs.
    pub fn resolve(&self, online: &[usize], measured: &[usize]) -> Result<Vec<usize>, String> {
        match self {
            CpuChoice::All => Ok(online.to_vec()),
            CpuChoice::List(l) => Ok(l.clone()),
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
    pub fn to_policy(self) -> Policy {
        match self {
            LoadPolicy::Other => Policy::Other,
            LoadPolicy::Batch => Policy::Batch,
            LoadPolicy::Idle => Policy::Idle,
            LoadPolicy::Fifo(p) => Policy::Fifo(p),
            LoadPolicy::Rr(p) => Policy::RoundRobin(p),
        }
    }
}

/// Parameters shared by every generator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Common {
    pub cpus: CpuChoice,
    /// None: the generator's own default.
    pub workers: Option<usize>,
    pub policy: LoadPolicy,
}

impl Common {
    fn parse(p: &mut Params) -> Result<Self, String> {
        let cpus = match p.text("cpus", None) {
            None => CpuChoice::All,
            Some(v) if v == "all" => CpuChoice::All,
            Some(v) if v == "housekeeping" => CpuChoice::Housekeeping,
            // CPU lists use `-` and `+`-free notation; `,` separates load parameters, so a
            // list of several parts is written with `+`: cpus=0+2-3.
            Some(v) => CpuChoice::List(parse_cpu_list(&v.replace('+', ",")).map_err(|e| {
                p.bad(
                    "cpus",
                    &v,
                    &format!("all, housekeeping, or a CPU list with + between parts (e.g. 1, 0-3, 0+2-3): {e}"),
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
            cpus,
            workers,
            policy,
        })
    }
}

/// What a generator does, with its own parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Hackbench(hackbench::HackbenchSpec),
    Cpu(cpu::CpuSpec),
    Memory(memory::MemorySpec),
    Io(io::IoSpec),
    Fork(fork::ForkSpec),
    Proc(proc::ProcSpec),
    Net(net::NetSpec),
    Exec(exec::ExecSpec),
}

/// A parsed built-in generator load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratorSpec {
    /// The load text as given.
    pub text: String,
    pub kind: Kind,
    pub common: Common,
}

/// The generators' names, for error messages and docs.
pub const NAMES: &[&str] = &[
    "hackbench",
    "cpu",
    "memory",
    "io",
    "fork",
    "proc",
    "net",
    "exec",
];

impl GeneratorSpec {
    /// Parses the generator named in `p`; None when `p.name` is not a generator.
    pub fn parse(mut p: Params) -> Option<Result<Self, String>> {
        let text = p.spec_text().to_string();
        let parsed = (|| {
            let name = p.name.clone();
            let kind = match name.as_str() {
                "hackbench" => Kind::Hackbench(hackbench::HackbenchSpec::parse(&mut p)?),
                "cpu" => Kind::Cpu(cpu::CpuSpec::parse(&mut p)?),
                "memory" => Kind::Memory(memory::MemorySpec::parse(&mut p)?),
                "io" => Kind::Io(io::IoSpec::parse(&mut p)?),
                "fork" => Kind::Fork(fork::ForkSpec::parse(&mut p)?),
                "proc" => Kind::Proc(proc::ProcSpec::parse(&mut p)?),
                "net" => Kind::Net(net::NetSpec::parse(&mut p)?),
                _ => return Ok(None),
            };
            let common = Common::parse(&mut p)?;
            let own = kind_parameters(&kind);
            let known: Vec<&str> = own.iter().chain(COMMON_PARAMETERS).copied().collect();
            p.finish(&known)?;
            Ok(Some(GeneratorSpec {
                text: text.clone(),
                kind,
                common,
            }))
        })();
        parsed.transpose()
    }

    /// Parses `exec[key=value,...]:COMMAND ARGS...` or `exec:COMMAND ARGS...`.
    pub fn parse_exec(text: &str) -> Result<Self, String> {
        let (options, command) = exec::split_spec(text)?;
        let mut p = Params::parse(&format!("exec:{options}"))
            .map_err(|e| e.replace("load 'exec:", &format!("load '{text}' (options: ")))?;
        let kind = Kind::Exec(exec::ExecSpec::parse(&mut p, command, text)?);
        let common = Common::parse(&mut p)
            .map_err(|e| e.replace(&format!("load 'exec:{options}'"), &format!("load '{text}'")))?;
        let known: Vec<&str> = exec::PARAMETERS
            .iter()
            .chain(COMMON_PARAMETERS)
            .copied()
            .collect();
        p.finish(&known)
            .map_err(|e| e.replace(&format!("load 'exec:{options}'"), &format!("load '{text}'")))?;
        Ok(GeneratorSpec {
            text: text.to_string(),
            kind,
            common,
        })
    }

    pub fn name(&self) -> &'static str {
        match &self.kind {
            Kind::Hackbench(_) => "hackbench",
            Kind::Cpu(_) => "cpu",
            Kind::Memory(_) => "memory",
            Kind::Io(_) => "io",
            Kind::Fork(_) => "fork",
            Kind::Proc(_) => "proc",
            Kind::Net(_) => "net",
            Kind::Exec(_) => "exec",
        }
    }

    /// The explicit CPUs of `cpus=`, to check that they are online.
    pub fn listed_cpus(&self) -> Vec<usize> {
        match &self.common.cpus {
            CpuChoice::List(l) => l.clone(),
            _ => Vec::new(),
        }
    }

    /// The number of workers: `workers=` or the generator's default (cpu: one per CPU of
    /// its set; the others: 1).
    pub fn workers(&self, cpus: &[usize]) -> usize {
        self.common.workers.unwrap_or(match self.kind {
            Kind::Cpu(_) => cpus.len().max(1),
            _ => 1,
        })
    }

    /// Checks against this system what parsing cannot: a writable directory with space, a
    /// program that exists. Errors are bad input (exit 2). Memory depends on the other loads
    /// that run at the same time: [`memory::check_together`].
    pub fn check_system(&self) -> Result<(), String> {
        let workers = self.common.workers.unwrap_or(1) as u64;
        match &self.kind {
            Kind::Io(i) => i.check_system(&self.text, workers),
            Kind::Exec(e) => e.check_system(&self.text),
            _ => Ok(()),
        }
    }

    /// Names of the counters the generator keeps, in slot order.
    pub fn counters(&self) -> &'static [&'static str] {
        match &self.kind {
            Kind::Hackbench(_) => hackbench::COUNTERS,
            Kind::Cpu(_) => cpu::COUNTERS,
            Kind::Memory(_) => memory::COUNTERS,
            Kind::Io(_) => io::COUNTERS,
            Kind::Fork(_) => fork::COUNTERS,
            Kind::Proc(_) => proc::COUNTERS,
            Kind::Net(_) => net::COUNTERS,
            Kind::Exec(_) => exec::COUNTERS,
        }
    }

    /// Runs the generator in this (worker) process until the stop flag is set, or, with
    /// `ctx.once`, until hackbench's single exchange is done.
    pub fn run(&self, ctx: &Ctx) -> Result<(), String> {
        match &self.kind {
            Kind::Hackbench(s) => s.run(ctx),
            Kind::Cpu(s) => s.run(ctx),
            Kind::Memory(s) => s.run(ctx),
            Kind::Io(s) => s.run(ctx),
            Kind::Fork(s) => s.run(ctx),
            Kind::Proc(s) => s.run(ctx),
            Kind::Net(s) => s.run(ctx),
            Kind::Exec(s) => s.run(ctx),
        }
    }

    /// The generator's throughput from its counters over `elapsed_ns` of work.
    pub fn throughput(&self, values: &[u64], elapsed_ns: u64) -> Vec<Throughput> {
        let v = |i: usize| values.get(i).copied().unwrap_or(0);
        let r = Rates {
            seconds: elapsed_ns as f64 / 1e9,
        };
        match &self.kind {
            Kind::Hackbench(s) => s.throughput(&v, &r),
            Kind::Cpu(_) => cpu::throughput(&v, &r),
            Kind::Memory(_) => memory::throughput(&v, &r),
            Kind::Io(_) => io::throughput(&v, &r),
            Kind::Fork(_) => fork::throughput(&v, &r),
            Kind::Proc(_) => proc::throughput(&v, &r),
            Kind::Net(_) => net::throughput(&v, &r),
            Kind::Exec(_) => exec::throughput(&v, &r),
        }
    }
}

fn kind_parameters(kind: &Kind) -> &'static [&'static str] {
    match kind {
        Kind::Hackbench(_) => hackbench::PARAMETERS,
        Kind::Cpu(_) => cpu::PARAMETERS,
        Kind::Memory(_) => memory::PARAMETERS,
        Kind::Io(_) => io::PARAMETERS,
        Kind::Fork(_) => fork::PARAMETERS,
        Kind::Proc(_) => proc::PARAMETERS,
        Kind::Net(_) => net::PARAMETERS,
        Kind::Exec(_) => exec::PARAMETERS,
    }
}

/// Helpers to turn counts into [`Throughput`] rows.
pub struct Rates {
    pub seconds: f64,
}

impl Rates {
    /// `count / seconds`, scaled by `scale` (e.g. 1/2^20 for MiB/s).
    pub fn rate(&self, name: &str, count: u64, scale: f64, unit: &str) -> Throughput {
        Throughput {
            name: name.into(),
            value: if self.seconds > 0.0 {
                count as f64 * scale / self.seconds
            } else {
                0.0
            },
            unit: unit.into(),
        }
    }

    /// A plain count.
    pub fn total(&self, name: &str, count: u64, unit: &str) -> Throughput {
        Throughput {
            name: name.into(),
            value: count as f64,
            unit: unit.into(),
        }
    }
}

/// Bytes per MiB, for MiB/s.
pub const PER_MIB: f64 = 1.0 / (1u64 << 20) as f64;

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
    fn housekeeping_is_the_unmeasured_cpus() {
        assert_eq!(
            CpuChoice::Housekeeping.resolve(&[0, 1, 2, 3], &[2, 3]),
            Ok(vec![0, 1])
        );
        assert!(
            CpuChoice::Housekeeping
                .resolve(&[0, 1], &[0, 1])
                .unwrap_err()
                .contains("none is left")
        );
        assert!(
            CpuChoice::Housekeeping
                .resolve(&[0, 1], &[])
                .unwrap_err()
                .contains("nothing is measured")
        );
    }
}

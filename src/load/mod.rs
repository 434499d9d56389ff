//! Loads run while measuring, or alone (`jitterlab load`): the spike injector, the calibration
//! load that runs as a thread inside jitterlab, and the built-in generators (hackbench, cpu,
//! memory, io, fork, proc, net, exec), each run as a contained child process by the supervisor.
//! Scenarios put generators on a timeline of phases; sweeps repeat a run over load levels.

pub mod command;
pub mod contain;
pub mod cpu;
pub mod exec;
pub mod fork;
pub mod generator;
pub mod hackbench;
pub mod io;
pub mod memory;
pub mod net;
pub mod proc;
pub mod scenario;
pub mod spec;
pub mod spike;
pub mod supervisor;
pub mod sweep;
pub mod worker;

pub use generator::GeneratorSpec;
pub use spike::{SpikeLoad, SpikeSpec};

/// A parsed `--load` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadSpec {
    Spike(SpikeSpec),
    /// A built-in generator, run as a child process.
    Generator(GeneratorSpec),
}

/// The loads this version knows, for error messages.
pub const KNOWN_LOADS: &[&str] = &[
    "spike",
    "hackbench",
    "cpu",
    "memory",
    "io",
    "fork",
    "proc",
    "net",
    "exec",
];

impl LoadSpec {
    /// Parses `NAME:key=value,...` (or `exec[...]:COMMAND`); errors name the load, the key and
    /// what is accepted.
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.starts_with("exec:") || text.starts_with("exec[") || text == "exec" {
            return GeneratorSpec::parse_exec(text).map(LoadSpec::Generator);
        }
        let params = spec::Params::parse(text)?;
        if params.name == "spike" {
            return SpikeSpec::parse(params).map(LoadSpec::Spike);
        }
        let name = params.name.clone();
        match GeneratorSpec::parse(params) {
            Some(g) => g.map(LoadSpec::Generator),
            None => Err(format!(
                "unknown load '{name}' in '{text}'; known loads: {}",
                KNOWN_LOADS.join(", ")
            )),
        }
    }

    /// CPUs the load must find online.
    pub fn cpus(&self) -> Vec<usize> {
        match self {
            LoadSpec::Spike(s) => vec![s.cpu],
            LoadSpec::Generator(g) => g.listed_cpus(),
        }
    }
}

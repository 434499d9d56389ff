//! Loads run while measuring, or alone (`jitterlab load`): the spike injector, the calibration
//! load that runs as a thread inside jitterlab, and the built-in generators (`generators/`, one
//! file each and a row in its `GENERATORS`), each run as a contained child process by the
//! supervisor. Scenarios put generators on a timeline of phases; sweeps repeat a run over load
//! levels.
//!
//! Dependencies point one way: `spec`, `kit` and `protocol` are leaves; `generator` (the trait)
//! uses them; each generator uses those; the registry (`generators`) lists the generators; this
//! module parses a load through the registry; the worker, the supervisor, the memory and task guards
//! and scenarios use this module.

pub(crate) mod contain;
pub(crate) mod generator;
pub mod generators;
pub(crate) mod memory_guard;
pub mod protocol;
pub mod scenario;
pub(crate) mod scenario_count;
pub mod spec;
pub mod spike;
pub mod supervisor;
pub mod sweep;
pub(crate) mod task_guard;
pub mod worker;
pub(crate) mod worker_kit;

pub use generator::GeneratorSpec;
pub(crate) use spike::SpikeLoad;
pub use spike::SpikeSpec;

use generator::Syntax;
use generators::GENERATORS;

/// A parsed `--load` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadSpec {
    Spike(SpikeSpec),
    /// A built-in generator, run as a child process.
    Generator(GeneratorSpec),
}

/// The loads this version knows, for error messages: the spike load and every generator.
pub(crate) fn known_loads() -> Vec<&'static str> {
    std::iter::once(spike::NAME)
        .chain(GENERATORS.iter().map(|g| g.name))
        .collect()
}

impl LoadSpec {
    /// Parses `NAME:key=value,...` (or `exec[...]:COMMAND`); errors name the load, the key and
    /// what is accepted.
    pub fn parse(text: &str) -> Result<Self, String> {
        for g in GENERATORS {
            if let Syntax::Command { usage } = g.syntax {
                let rest = text.strip_prefix(g.name);
                if rest.is_some_and(|r| r.is_empty() || r.starts_with([':', '['])) {
                    let params = spec::Params::parse_command(text, g.name, usage)?;
                    return GeneratorSpec::parse(g, params).map(LoadSpec::Generator);
                }
            }
        }
        let params = spec::Params::parse(text)?;
        if params.name == spike::NAME {
            return SpikeSpec::parse(params).map(LoadSpec::Spike);
        }
        match generators::find(&params.name) {
            Some(g) => GeneratorSpec::parse(g, params).map(LoadSpec::Generator),
            None => Err(format!(
                "unknown load '{}' in '{text}'; known loads: {}",
                params.name,
                known_loads().join(", ")
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

    /// Checks a parsed load against this system (see [`GeneratorSpec::check_on_system`]); the
    /// spike load has nothing to check. Errors are bad input.
    pub(crate) fn check_on_system(
        &self,
        measured: &[usize],
        online: &[usize],
        housekeeping: Option<&[usize]>,
    ) -> Result<(), String> {
        match self {
            LoadSpec::Spike(_) => Ok(()),
            LoadSpec::Generator(g) => g.check_on_system(measured, online, housekeeping),
        }
    }
}

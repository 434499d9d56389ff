//! Loads run while measuring. For now the spike injector, the calibration load; the built-in
//! generators of the loads issue plug in beside it.

pub mod spec;
pub mod spike;

pub use spike::{SpikeLoad, SpikeSpec};

/// A parsed `--load` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadSpec {
    Spike(SpikeSpec),
}

/// The loads this version knows, for error messages.
pub const KNOWN_LOADS: &[&str] = &["spike"];

impl LoadSpec {
    /// Parses `NAME:key=value,...`; errors name the load, the key and what is accepted.
    pub fn parse(text: &str) -> Result<Self, String> {
        let params = spec::Params::parse(text)?;
        match params.name.as_str() {
            "spike" => SpikeSpec::parse(params).map(LoadSpec::Spike),
            other => Err(format!(
                "unknown load '{other}' in '{text}'; known loads: {}",
                KNOWN_LOADS.join(", ")
            )),
        }
    }

    /// CPUs the load must find online.
    pub fn cpus(&self) -> Vec<usize> {
        match self {
            LoadSpec::Spike(s) => vec![s.cpu],
        }
    }
}

//! What every exporter is: a sample format implements [`SampleExporter`] (streamed row by
//! row, told of the run by [`SampleRun`]), a whole-run format implements [`RunExporter`]. A
//! leaf below the exporters and the [`FORMATS`](super::FORMATS) table that names them.

use crate::error::Result;
use crate::format::kind::RunKind;
use crate::format::samplelog::SampleRecord;
use crate::results::loaded::LoadedRun;
use std::io::{self, Write};
use std::path::Path;

/// What a sample exporter knows of the run besides its samples: its kind, and from run.json
/// how its threads slept (None when run.json cannot be read: those columns are then empty).
pub(crate) struct SampleRun {
    pub(crate) kind: RunKind,
    pub(crate) pacing: Option<Pacing>,
}

/// How the run's threads slept, from run.json: what the sleep-start and wake-time columns
/// need (`export --format csv`).
#[derive(Debug, Clone)]
pub(crate) struct Pacing {
    /// The wake method's schedule (`plan.wake`); None for a method this build does not know.
    pub(crate) schedule: Option<crate::measure::wake::Schedule>,
    /// Each CPU's first period (run.json `threads[].interval_ns`), ns.
    pub(crate) interval_ns: std::collections::BTreeMap<u32, u64>,
    /// `--interval-step`, ns.
    pub(crate) step_ns: u64,
}

impl Pacing {
    pub(super) fn of(record: &crate::format::run_record::RunRecord) -> Pacing {
        Pacing {
            // An imported run's wake method is a placeholder: its sleeps are not known.
            schedule: crate::measure::wake::WAKE_METHODS
                .iter()
                .find(|m| m.name == record.plan.wake && record.imported.is_none())
                .map(|m| m.schedule),
            interval_ns: record
                .threads
                .iter()
                .map(|t| (t.cpu as u32, t.interval_ns))
                .collect(),
            step_ns: record.plan.interval_step_ns,
        }
    }
}

/// Writes samples in one output format.
pub(crate) trait SampleExporter {
    /// Writes what comes before the first row; a noise run's columns name gaps (`run.kind`).
    fn header(&mut self, out: &mut dyn Write, run: &SampleRun) -> io::Result<()>;
    /// Writes one sample; `start_ns` is the run's first due time on the same clock.
    fn row(&mut self, out: &mut dyn Write, sample: &SampleRecord, start_ns: u64) -> io::Result<()>;
}

/// Writes a whole run (its histograms or its summary) in one output format.
pub(crate) trait RunExporter {
    /// Writes the export of `run`; `output` is `-o` as given (None: the format's default).
    fn write(&self, run: &LoadedRun, output: Option<&Path>) -> Result<()>;
}

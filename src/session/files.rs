//! The result files of a session: made before the start (`create_files`), their headers
//! written once the start is fixed (`begin_files`), and counters.log with the context
//! counters' sources it logs (`open_counters`, `counters`).

use super::events::EventSink;
use crate::error::{Failure, OrFailure, Result};
use crate::format::events::{self, EventLog};
use crate::format::hlog::{self, HlogWriter};
use crate::format::samplelog::{self, SampleLogHeader, SampleLogWriter};
use crate::plan::RunPlan;
use crate::recorder::segments::{SegmentLedger, Segments};
use crate::results::ResultDir;
use std::time::SystemTime;

/// The writers of a result directory's files.
pub(super) struct RunFiles {
    pub(super) hlog: HlogWriter,
    pub(super) samples: Option<SampleLogWriter>,
    /// events.jsonl, or a segmented run's event files (`session::events`).
    pub(super) events: EventSink,
    /// With segments: what the interval log's writer has done with them.
    pub(super) segments: Option<SegmentLedger>,
}

/// Creates the files of the result directory; their headers follow once the start is fixed.
/// With segments, the interval log's files are made by its writer as the run goes.
pub(super) fn create_files(plan: &RunPlan, result_dir: &ResultDir) -> Result<RunFiles> {
    let create = |name: &str| {
        result_dir
            .create_file(name)
            .or_run(|| format!("cannot create {}", result_dir.file(name).display()))
    };
    let (hlog_writer, ledger) = match &plan.segments {
        // The log and its per-minute summary (format/summary.rs), so that a long run is read
        // from the summary, a day in a few thousand lines.
        None => (
            HlogWriter::summarized(
                create(hlog::FILE_NAME)?,
                create(&crate::format::summary::file_name(hlog::FILE_NAME))?,
                hlog::FILE_NAME,
            ),
            None,
        ),
        Some(segments) => {
            let ledger = SegmentLedger::new(segments);
            // Every interval is written under each CPU's tag, and its IRQ tag with --trace
            // (not for noise gaps, which have no IRQ latency).
            let irq_tags = plan.trace && plan.measurement.kind().spec().irq_split;
            let tags = plan.cpus.len() * if irq_tags { 2 } else { 1 };
            let writer = Segments::new(result_dir.clone(), *segments, tags, ledger.clone());
            (HlogWriter::to(Box::new(writer)), Some(ledger))
        }
    };
    let sample_writer = match plan.samples {
        true => Some(SampleLogWriter::new(
            create(samplelog::FILE_NAME)?,
            plan.samples_format,
        )),
        false => None,
    };
    // A segmented run's events are rotated with its segments, and deleted with them.
    let events = match (&plan.segments, &ledger) {
        (Some(segments), Some(ledger)) => EventSink::Segmented {
            dir: result_dir.clone(),
            length_ns: segments.length_ns,
            ledger: ledger.clone(),
        },
        _ => EventSink::Single(EventLog::new(create(events::FILE_NAME)?)),
    };
    Ok(RunFiles {
        hlog: hlog_writer,
        samples: sample_writer,
        events,
        segments: ledger,
    })
}

pub(super) fn write_failed(dir: &ResultDir, e: std::io::Error) -> String {
    format!("cannot write the results in {}: {e}", dir.path.display())
}

/// Writes the headers of the interval log and the sample log, now that the start is fixed:
/// `start_wall` on the wall clock, `start_ns` the first due time on the plan's clock.
pub(super) fn begin_files(
    plan: &RunPlan,
    start_wall: SystemTime,
    start_ns: u64,
    mut hlog: HlogWriter,
    mut samples: Option<SampleLogWriter>,
    dir: &ResultDir,
) -> Result<(HlogWriter, Option<SampleLogWriter>)> {
    let headers = hlog
        .begin(
            start_wall,
            &format!(
                "jitterlab {} {} log",
                env!("CARGO_PKG_VERSION"),
                plan.measurement.kind().name()
            ),
        )
        .and_then(|_| match &mut samples {
            Some(w) => w.begin(SampleLogHeader {
                clock_id: plan.clock().id() as u32,
                start_ns,
            }),
            None => Ok(()),
        });
    match headers {
        Ok(()) => Ok((hlog, samples)),
        Err(e) => Err(Failure::run(format!(
            "cannot write the result files in {}: {e}",
            dir.path.display()
        ))),
    }
}

/// The context counters' sources on the measured CPUs (`--no-counters`: none).
pub(super) fn open_counters(plan: &RunPlan) -> Option<crate::recorder::counters::CounterSampler> {
    use crate::recorder::counters::{CounterSampler, Roots};
    plan.counters
        .then(|| CounterSampler::open(&Roots::system(), &plan.cpus))
}

/// The context counters of the measured CPUs (`--no-counters`: none), with counters.log begun;
/// a segmented run (`monitor`) keeps them for `/metrics` without a file, which would grow
/// past the segments' retention.
pub(super) fn counters(
    plan: &RunPlan,
    sampler: Option<crate::recorder::counters::CounterSampler>,
    dir: &ResultDir,
    start_mono: u64,
) -> Result<Option<crate::recorder::counters::CounterLog>> {
    use crate::recorder::counters::CounterLog;
    let Some(sampler) = sampler else {
        return Ok(None);
    };
    let name = crate::format::counters::FILE_NAME;
    let file = match plan.segments {
        Some(_) => None,
        None => Some(
            dir.create_file(name)
                .or_run(|| format!("cannot create {}", dir.file(name).display()))?,
        ),
    };
    CounterLog::begin(sampler, file, start_mono, plan.log_interval_ns)
        .map(Some)
        .or_run(|| format!("cannot write {}", dir.file(name).display()))
}

//! The result files of a session.

use super::events::EventSink;
use crate::error::{OrFailure, Result};
use crate::format::events::{self, EventLog};
use crate::format::hlog::{self, HlogWriter};
use crate::format::samplelog::{self, SampleLogWriter};
use crate::plan::RunPlan;
use crate::recorder::segments::{SegmentLedger, Segments};
use crate::results::ResultDir;

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

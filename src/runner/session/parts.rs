//! The pieces a session is made from that need no session: the signal flags, the trace
//! started for the measuring threads, the result files and their one writer of events.jsonl.

use crate::error::{OrFailure, Result};
use crate::format::events::{self, Event, EventLog};
use crate::format::hlog::{self, HlogWriter};
use crate::format::samplelog::{self, SampleLogWriter};
use crate::measure::MeasuringThread;
use crate::plan::RunPlan;
use crate::record::segments::{SegmentLedger, Segments};
use crate::results::ResultDir;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// events.jsonl, written by the session alone: the loads and the budget hand their events
/// back to it. Best effort: a full disk shows as a failed hlog write instead.
pub(super) struct EventWriter(pub(super) EventLog);

impl EventWriter {
    pub(super) fn write(&mut self, event: &Event) {
        let _ = self.0.write(event);
    }
}

/// The stop and interrupted flags, set by SIGINT and SIGTERM (`runner::signals`: caught since
/// the command began, so a signal during setup stops the session as soon as it starts); a
/// second signal while stopping ends the process at once.
pub(super) fn stop_on_signals() -> Result<(Arc<AtomicBool>, Arc<AtomicBool>)> {
    let stop = crate::runner::signals::stop_flag()?;
    Ok((stop, crate::runner::signals::catch()?))
}

/// Starts tracing for the measuring threads (their ids are known once they are set up).
pub(super) fn start_trace(
    setup: crate::trace::TraceSetup,
    plan: &RunPlan,
    threads: &[MeasuringThread],
) -> std::result::Result<(crate::trace::Tracer, crate::trace::Joiner), String> {
    let ids: Vec<(usize, usize, i32)> = threads
        .iter()
        .map(|t| (t.index, t.cpu, t.counters.tid.load(Ordering::Relaxed)))
        .collect();
    setup.start(
        crate::trace::record::thread_traces(plan, &ids),
        crate::trace::record::timer_functions(plan.wake_method()),
    )
}

/// IPC runs, once the gate is open: waits for each measuring thread's sender to start (until
/// `until_mono`, the first due time, at the latest), records the senders' thread ids in
/// run.json's `plan.ipc`, and with `--trace` has the tracer follow them. A warning when the
/// tracer cannot.
pub(super) fn follow_senders(
    threads: &[MeasuringThread],
    until_mono: u64,
    record: &mut crate::format::run_record::RunRecord,
    tracer: Option<&mut crate::trace::Tracer>,
) -> Option<String> {
    let tids = || -> Vec<i32> {
        threads
            .iter()
            .map(|t| t.counters.sender_tid.load(Ordering::Relaxed))
            .collect()
    };
    // A thread whose sender failed to start has ended: nothing to wait for.
    let waiting = |t: &MeasuringThread| {
        t.counters.sender_tid.load(Ordering::Relaxed) == 0 && !t.join.is_finished()
    };
    while threads.iter().any(waiting) && crate::measure::clock::monotonic_ns() < until_mono {
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    let tids = tids();
    if let Some(ipc) = &mut record.plan.ipc {
        ipc.sender_tids = tids.clone();
    }
    let tracer = tracer?;
    tracer
        .follow_senders(&tids)
        .err()
        .map(|e| format!("{e}; the explanations of this run do not follow the sender threads"))
}

/// The writers of a result directory's files.
pub(super) struct RunFiles {
    pub(super) hlog: HlogWriter,
    pub(super) samples: Option<SampleLogWriter>,
    pub(super) events: EventLog,
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
        None => (HlogWriter::new(create(hlog::FILE_NAME)?), None),
        Some(segments) => {
            let ledger = SegmentLedger::new(segments);
            // Every interval is written under each CPU's tag, and its IRQ tag with --trace
            // (not for noise gaps, which have no IRQ latency).
            let irq_tags = plan.trace && plan.measurement.kind() == crate::plan::RunKind::Latency;
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
    let events = EventLog::new(create(events::FILE_NAME)?);
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

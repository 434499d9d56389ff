//! The session's one writer of the run's events: events.jsonl for a run, or, for a segmented
//! run (`monitor`), one file per segment (`events-NNNNNN.jsonl`, `format::segments`) deleted by
//! the segments' retention with its segment, so that a monitor's events stay as bounded as its
//! latency history (one `spike_explained` of ~650 bytes per late wakeup would otherwise grow
//! without end, and under `--retain-size` crowd the latency segments out).
//!
//! Where an event goes: the file of the segment its time falls in, unless the writer has moved
//! on to a later one already (an event handed over late, an explanation joined after the next
//! segment began), or that segment was deleted meanwhile; then the current or the oldest kept
//! file. So files only ever move forward, an event is never in a file older than its segment
//! (retention deletes it no earlier than its segment), and the files read in index order hold
//! the events in the order they were written. Every file is made new through the result
//! directory's descriptor (`ResultDir::create_file`: never over an existing file, never through
//! a link).

use crate::format::events::{Event, EventLog, EventsNotWritten};
use crate::format::segments;
use crate::recorder::segments::SegmentLedger;
use crate::results::ResultDir;
use std::io;

/// Where the events go, made with the result files before the start is fixed.
pub(super) enum EventSink {
    /// events.jsonl, made already.
    Single(EventLog),
    /// Per segment, made as the events come (the first at the first event).
    Segmented {
        dir: ResultDir,
        length_ns: u64,
        ledger: SegmentLedger,
    },
}

/// The session's writer of events. Best effort: a full disk shows as a failed hlog write
/// instead. Each file keeps its bulk events within its budget
/// (`format::events::BULK_EVENTS_BUDGET_BYTES`); the first one left out is said by a `warning`
/// event, and what was left out goes to run.json (`EventWriter::not_written`).
pub(super) struct EventWriter {
    target: Target,
    /// Whether the warning of the first bulk event left out was written.
    said: bool,
}

enum Target {
    Single(EventLog),
    Segmented(Rotating),
}

/// The events of a segmented run.
struct Rotating {
    dir: ResultDir,
    length_ns: u64,
    ledger: SegmentLedger,
    /// The run's first due time on CLOCK_MONOTONIC: the origin of the segments.
    start_mono: u64,
    /// The file written, and its segment's index.
    current: Option<(u64, EventLog)>,
    /// What the files before the current one left out.
    closed: EventsNotWritten,
}

impl EventWriter {
    /// The writer of `sink`, for a run whose first wakeups are due at `start_mono`.
    pub(super) fn new(sink: EventSink, start_mono: u64) -> Self {
        let target = match sink {
            EventSink::Single(log) => Target::Single(log),
            EventSink::Segmented {
                dir,
                length_ns,
                ledger,
            } => Target::Segmented(Rotating {
                dir,
                length_ns,
                ledger,
                start_mono,
                current: None,
                closed: EventsNotWritten::default(),
            }),
        };
        EventWriter {
            target,
            said: false,
        }
    }

    pub(super) fn write(&mut self, event: &Event) {
        let _ = match &mut self.target {
            Target::Single(log) => log.write(event),
            Target::Segmented(r) => r.write(event),
        };
        if !self.said {
            let left_out = self.not_written();
            if !left_out.is_empty() {
                self.said = true;
                self.write(&Event::Warning {
                    time_ns: event.time_ns(),
                    message: format!(
                        "events.jsonl reached its budget of {} for wakeup summaries and noise intervals: those from here on are not written, only counted (run.json `events_not_written`); every other event still is",
                        crate::input::format_bytes(left_out.budget_bytes)
                    ),
                });
            }
        }
    }

    /// The bulk events left out of every file so far (empty when none was).
    pub(super) fn not_written(&self) -> EventsNotWritten {
        match &self.target {
            Target::Single(log) => log.not_written().clone(),
            Target::Segmented(r) => {
                let mut all = r.closed.clone();
                if let Some((_, log)) = &r.current {
                    all.add(log.not_written());
                }
                all
            }
        }
    }
}

impl Rotating {
    fn write(&mut self, event: &Event) -> io::Result<()> {
        let own = segments::index_at(event.time_ns(), self.start_mono, self.length_ns);
        let oldest = self.ledger.oldest_index().unwrap_or(0);
        let current = self.current.as_ref().map_or(0, |(k, _)| *k);
        let index = own.max(current).max(oldest);
        if self.current.as_ref().is_none_or(|(k, _)| *k != index) {
            // Dropped first: the old file is closed even if the new one cannot be made.
            if let Some((_, old)) = self.current.take() {
                self.closed.add(old.not_written());
            }
            let file = self.dir.create_file(&segments::events_file_name(index))?;
            self.current = Some((index, EventLog::new(file)));
        }
        let (_, log) = self.current.as_mut().expect("made above");
        log.write(event)
    }
}

#[cfg(test)]
#[path = "events_retention_tests.rs"]
mod retention_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Retain, SegmentPlan};

    fn warning(time_ns: u64) -> Event {
        Event::Warning {
            time_ns,
            message: time_ns.to_string(),
        }
    }

    /// Events go to the file of their segment, a late one to the current file, never back; a
    /// file is never made over an existing entry (a planted link stays untouched).
    #[test]
    fn events_move_forward_through_their_segments_files() {
        let base = tempfile::tempdir().unwrap();
        let dir = ResultDir::create(&base.path().join("run"), "--out")
            .unwrap()
            .keep();
        let plan = SegmentPlan {
            length_ns: 10,
            retain: Retain::Forever,
        };
        let sink = EventSink::Segmented {
            dir: dir.clone(),
            length_ns: 10,
            ledger: SegmentLedger::new(&plan),
        };
        let mut w = EventWriter::new(sink, 1000);
        for t in [990, 1000, 1009, 1025, 1012, 1031] {
            w.write(&warning(t));
        }
        let names = |k: u64| dir.file(&segments::events_file_name(k));
        let times = |k: u64| -> Vec<u64> {
            crate::format::events::read_events(&names(k))
                .unwrap()
                .iter()
                .map(Event::time_ns)
                .collect()
        };
        assert_eq!(times(0), [990, 1000, 1009]);
        assert_eq!(
            times(2),
            [1025, 1012],
            "the late event stays in the current file"
        );
        assert_eq!(times(3), [1031]);
        assert!(!names(1).exists(), "no event, no file");

        let victim = base.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        std::os::unix::fs::symlink(&victim, names(5)).unwrap();
        w.write(&warning(1050));
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    }
}

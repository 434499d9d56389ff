//! The interval log of a continuous run as a series of segment files (`RunPlan::segments`),
//! each a complete HdrHistogram interval log, with retention deleting the oldest: a result
//! directory that stays bounded however long the run. The layout is `format::segments`.
//!
//! Segment k holds the intervals that start in [k x length, (k+1) x length) from the run's start.
//! Its header's StartTime is the segment's own start and its BaseTime the run's start, so the
//! timestamps of every segment count from the same origin and the segments, concatenated in
//! index order, are the run's one log. A segment is sealed (closed, entered in the ledger as
//! complete, retention applied) once every tag has written an interval of a later segment:
//! per tag intervals come in time order, so nothing is written to a sealed segment.
//!
//! The session learns of sealed segments through the [`SegmentLedger`] it shares with the
//! writer, and updates run.json then. The ledger's lock is taken once per segment, and by the
//! session's writer of the events once per event, both on the recorder's thread, never by a
//! measuring thread.
//!
//! The events of the run are rotated with the segments (`events-NNNNNN.jsonl`,
//! `session::events`): retention deletes, with the segments it deletes, every event file older
//! than the oldest segment it keeps (the event writer never writes below that one), and counts
//! each segment's event file with its size.

use crate::format::LOAD_LOG_DIR;
use crate::format::hlog::{LogTarget, header};
use crate::format::segments::{self, SegmentEntry, SegmentsRecord};
use crate::format::summary::{self, SummaryWriter};
use crate::plan::{Retain, SegmentPlan};
use crate::results::ResultDir;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::V2DeflateSerializer;
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{self, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// What the writer has done with the segments, shared with the session (which writes it into
/// run.json).
#[derive(Debug, Clone)]
pub struct SegmentLedger(Arc<Mutex<LedgerState>>);

#[derive(Debug)]
struct LedgerState {
    record: SegmentsRecord,
    /// Changed since the last [`SegmentLedger::take_update`].
    changed: bool,
}

impl SegmentLedger {
    pub fn new(plan: &SegmentPlan) -> Self {
        let (retain, retain_ns, retain_bytes) = match plan.retain {
            Retain::Forever => ("forever", None, None),
            Retain::Age(ns) => ("age", Some(ns), None),
            Retain::Bytes(b) => ("size", None, Some(b)),
        };
        SegmentLedger(Arc::new(Mutex::new(LedgerState {
            record: SegmentsRecord {
                length_ns: plan.length_ns,
                retain: retain.into(),
                retain_ns,
                retain_bytes,
                files: Vec::new(),
                deleted: 0,
            },
            changed: false,
        })))
    }

    /// The record as it stands.
    pub fn record(&self) -> SegmentsRecord {
        self.lock().record.clone()
    }

    /// The record, when a segment was opened, sealed or deleted since the last call.
    pub fn take_update(&self) -> Option<SegmentsRecord> {
        let mut state = self.lock();
        std::mem::take(&mut state.changed).then(|| state.record.clone())
    }

    /// The index of the oldest segment kept (the one being written when none is complete),
    /// None before the first: the events are written to no file older than it.
    pub(crate) fn oldest_index(&self) -> Option<u64> {
        self.lock().record.files.first().map(|f| f.index)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LedgerState> {
        // A panic while holding it left plain data behind, still worth recording.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn update(&self, f: impl FnOnce(&mut SegmentsRecord)) {
        let mut state = self.lock();
        f(&mut state.record);
        state.changed = true;
    }
}

/// A segment being written, and its summary (`format::summary`), completed when the segment is
/// sealed: a month-long run is then read as ~720 hourly summaries instead of every interval.
/// Building it costs the recorder one pass over each interval's histogram as it is written
/// (microseconds per CPU per log interval), spread evenly, never a pass over a sealed segment.
struct OpenSegment {
    file: File,
    summary: SummaryWriter,
}

/// The segment writer behind a run's `HlogWriter` when the log is segmented.
pub struct Segments {
    dir: ResultDir,
    plan: SegmentPlan,
    /// How many tags write every interval (a CPU's `cpuN`, and `cpuN.irq` with `--trace`):
    /// a segment is sealed only once all of them have moved past it.
    tags: usize,
    ledger: SegmentLedger,
    /// Set by `begin`: the run's start and the header comment.
    start: Option<(SystemTime, String)>,
    open: BTreeMap<u64, OpenSegment>,
    /// Each tag's latest segment.
    tag_segment: HashMap<String, u64>,
    /// The size of the last sealed segment (with its summary and events): what the next one is
    /// expected to take.
    last_sealed_bytes: u64,
    /// Event files below this index are deleted (retention removes them as it goes).
    events_below: u64,
}

impl Segments {
    /// Segments of `plan` in `dir`, for `tags` tags per interval.
    pub fn new(dir: ResultDir, plan: SegmentPlan, tags: usize, ledger: SegmentLedger) -> Self {
        Segments {
            dir,
            plan,
            tags: tags.max(1),
            ledger,
            start: None,
            open: BTreeMap::new(),
            tag_segment: HashMap::new(),
            last_sealed_bytes: 0,
            events_below: 0,
        }
    }
}

impl LogTarget for Segments {
    /// Fixes the run's start and makes the first segment, so that a run killed before its first
    /// interval completes still has a log.
    fn begin(
        &mut self,
        start: SystemTime,
        comment: &str,
        serializer: &mut V2DeflateSerializer,
    ) -> io::Result<()> {
        self.start = Some((start, comment.to_string()));
        self.open_segment(0, serializer).map(drop)
    }

    /// Appends one encoded interval line to the segment of its start (and the interval to the
    /// segment's summary), sealing the segments every tag has left behind.
    fn write_line(
        &mut self,
        tag: &str,
        (start_offset, length): (Duration, Duration),
        histogram: &Histogram<u64>,
        line: &[u8],
        serializer: &mut V2DeflateSerializer,
    ) -> io::Result<()> {
        let index = (start_offset.as_nanos() / self.plan.length_ns as u128) as u64;
        if !self.open.contains_key(&index) {
            let sealed = self.open.keys().next().is_some_and(|&first| index < first)
                || self
                    .ledger
                    .lock()
                    .record
                    .files
                    .iter()
                    .any(|f| f.index == index);
            if sealed {
                return Err(io::Error::other(format!(
                    "an interval of {tag} at {:.3} s came after its segment {index} was sealed",
                    start_offset.as_secs_f64()
                )));
            }
            self.open_segment(index, serializer)?;
        }
        let open = self.open.get_mut(&index).expect("opened above");
        open.file.write_all(line)?;
        open.summary
            .add_histogram(tag, start_offset, length, histogram)?;
        let latest = self.tag_segment.entry(tag.to_string()).or_insert(index);
        *latest = (*latest).max(index);
        if self.tag_segment.len() >= self.tags {
            let behind = *self.tag_segment.values().min().expect("tags written");
            self.seal_before(behind)?;
        }
        Ok(())
    }
}

impl Segments {
    fn open_segment(
        &mut self,
        index: u64,
        serializer: &mut V2DeflateSerializer,
    ) -> io::Result<&mut OpenSegment> {
        let (run_start, comment) = self
            .start
            .as_ref()
            .ok_or_else(|| io::Error::other("a segment written before the log began"))?;
        let start_ns = index.saturating_mul(self.plan.length_ns);
        let segment_start = *run_start + Duration::from_nanos(start_ns);
        let segment_comment = format!(
            "segment {index}: intervals from {:.3} s of the run on; timestamps are seconds from the run's start (BaseTime)",
            start_ns as f64 / 1e9
        );
        let name = segments::file_name(index);
        let mut file = self.dir.create_file(&name)?;
        let summary = self.dir.create_file(&summary::file_name(&name))?;
        let summary = SummaryWriter::new(summary, *run_start, &name)?;
        file.write_all(&header(
            segment_start,
            *run_start,
            &[comment, &segment_comment],
            serializer,
        )?)?;
        let bytes = file.metadata().map_or(0, |m| m.len());
        self.ledger.update(|r| {
            r.files.push(SegmentEntry {
                file: name,
                index,
                start_s: start_ns as f64 / 1e9,
                bytes,
                complete: false,
            })
        });
        Ok(self
            .open
            .entry(index)
            .or_insert(OpenSegment { file, summary }))
    }

    /// Closes every open segment below `index`, then applies retention.
    fn seal_before(&mut self, index: u64) -> io::Result<()> {
        let done: Vec<u64> = self.open.range(..index).map(|(&k, _)| k).collect();
        if done.is_empty() {
            return Ok(());
        }
        for k in done {
            let open = self.open.remove(&k).expect("listed above");
            let bytes = open.file.metadata().map_or(0, |m| m.len());
            open.summary.finish(&segments::file_name(k), bytes)?;
            self.last_sealed_bytes =
                bytes + self.summary_bytes(&segments::file_name(k)) + self.events_bytes(k);
            self.ledger.update(|r| {
                if let Some(e) = r.files.iter_mut().find(|e| e.index == k) {
                    e.bytes = bytes;
                    e.complete = true;
                }
            });
        }
        self.apply_retention()
    }

    /// Deletes the oldest complete segments that the rule no longer keeps. The segment being
    /// written is never deleted.
    fn apply_retention(&mut self) -> io::Result<()> {
        let doomed: Vec<String> = match self.plan.retain {
            Retain::Forever => Vec::new(),
            Retain::Age(age_ns) => {
                let (run_start, _) = self.start.as_ref().expect("begun before sealing");
                let now = SystemTime::now();
                let length = self.plan.length_ns;
                self.ledger
                    .record()
                    .files
                    .iter()
                    .filter(|e| e.complete)
                    .filter(|e| {
                        let end =
                            *run_start + Duration::from_nanos((e.index + 1).saturating_mul(length));
                        end + Duration::from_nanos(age_ns) < now
                    })
                    .map(|e| e.file.clone())
                    .collect()
            }
            Retain::Bytes(limit) => {
                // Room is kept for the next segment, and for the loads' logs to reach their
                // bound, so that the directory stays within the limit while they are written,
                // not only at the boundaries; a printing load thus never costs latency history.
                let mut total =
                    self.dir.files_bytes()? + self.last_sealed_bytes + self.load_log_room()?;
                let mut doomed = Vec::new();
                for e in self.ledger.record().files.iter().filter(|e| e.complete) {
                    if total <= limit {
                        break;
                    }
                    total = total.saturating_sub(
                        e.bytes + self.summary_bytes(&e.file) + self.events_bytes(e.index),
                    );
                    doomed.push(e.file.clone());
                }
                doomed
            }
        };
        for name in doomed {
            // The summary first: a summary never outlives its segment (one left by a kill
            // between the two would be unusable anyway: its log is gone).
            match self.dir.remove_file(&summary::file_name(&name)) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
            self.dir.remove_file(&name)?;
            self.ledger.update(|r| {
                r.files.retain(|e| e.file != name);
                r.deleted += 1;
            });
        }
        self.remove_old_events()
    }

    /// Deletes the event files older than the oldest segment kept: those of the segments just
    /// deleted, and of any time no segment was written for. The event writer never writes
    /// below the oldest segment kept, so none of these is written again.
    fn remove_old_events(&mut self) -> io::Result<()> {
        let Some(oldest) = self.ledger.oldest_index() else {
            return Ok(());
        };
        while self.events_below < oldest {
            // A file already gone (no event in that segment) is not an error.
            self.dir
                .remove_file(&segments::events_file_name(self.events_below))?;
            self.events_below += 1;
        }
        Ok(())
    }
}

impl Segments {
    /// The size of the summary of the segment `name` (0 when it has none).
    fn summary_bytes(&self, name: &str) -> u64 {
        std::fs::symlink_metadata(self.dir.file(&summary::file_name(name))).map_or(0, |m| m.len())
    }

    /// The size of the event file of segment `index` (0 when it has none).
    fn events_bytes(&self, index: u64) -> u64 {
        std::fs::symlink_metadata(self.dir.file(&segments::events_file_name(index)))
            .map_or(0, |m| m.len())
    }

    /// What the loads' logs may still grow by: each log and its `.1` up to the bound
    /// (`SegmentPlan::load_log_cap`, the copying thread keeps them within it) less what they
    /// hold now.
    fn load_log_room(&self) -> io::Result<u64> {
        let entries = match std::fs::read_dir(self.dir.file(LOAD_LOG_DIR)) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
            r => r?,
        };
        let (mut logs, mut held) = (std::collections::BTreeSet::new(), 0);
        for entry in entries {
            let entry = entry?;
            // Entries may vanish meanwhile (a log being rotated): skip them.
            let Ok(meta) = entry.metadata() else { continue };
            held += meta.len();
            // A log and its `.1` are one load's (its log is missing while it is rotated).
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(load) = name
                .strip_suffix(".log.1")
                .or_else(|| name.strip_suffix(".log"))
            {
                logs.insert(load.to_string());
            }
        }
        let most = 2 * logs.len() as u64 * self.plan.load_log_cap(logs.len());
        Ok(most.saturating_sub(held))
    }
}

impl Drop for Segments {
    /// At the end of the run the segments still open are complete: their final sizes go to
    /// the ledger, which the session writes into the final run.json.
    fn drop(&mut self) {
        for (k, open) in std::mem::take(&mut self.open) {
            let bytes = open.file.metadata().map_or(0, |m| m.len());
            // Without its footer (an error here) the summary is ignored by readers.
            let _ = open.summary.finish(&segments::file_name(k), bytes);
            self.ledger.update(|r| {
                if let Some(e) = r.files.iter_mut().find(|e| e.index == k) {
                    e.bytes = bytes;
                    e.complete = true;
                }
            });
        }
    }
}

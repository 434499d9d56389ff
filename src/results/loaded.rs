//! A result directory read back whole, for the commands that read runs (report, compare,
//! budgets on stored runs, export): run.json, the interval histograms and the events.

use super::ResultDir;
use super::events::{self, Event};
use super::run_record::RunRecord;
use crate::record::hlog_scan::{self, StoredInterval};
use crate::record::stats::new_histogram;
use hdrhistogram::Histogram;
use std::path::{Path, PathBuf};

/// At most this many intervals per tag are kept: a day of 1 s intervals is read as 1000
/// intervals of 87 s. 2.5 times `compare`'s 400 bootstrap blocks, so blocks still group several.
pub const MAX_INTERVALS_PER_TAG: usize = 1000;

/// Everything a stored run holds except its sample log (which can be too big for memory and is
/// streamed by the exporters instead).
#[derive(Debug, Clone)]
pub struct LoadedRun {
    pub path: PathBuf,
    pub record: RunRecord,
    /// The interval histograms of latency.hlog in file order, as sparse (value, count) pairs;
    /// empty when the file is missing. A log with more than [`MAX_INTERVALS_PER_TAG`] intervals
    /// of a tag is read with consecutive intervals merged (see `hlog_scan::read_coarsened`).
    pub intervals: Vec<StoredInterval>,
    /// events.jsonl; empty when the file is missing.
    pub events: Vec<Event>,
}

/// Reads a result directory. The error says which file is wrong and why (exit code 2).
pub fn load(path: &Path) -> Result<LoadedRun, String> {
    let dir = ResultDir::open(path)?;
    let mut record = dir.read_run_record()?;
    let hlog_path = dir.file(crate::record::hlog::FILE_NAME);
    let intervals = if hlog_path.is_file() {
        let (intervals, torn) = hlog_scan::read_coarsened(&hlog_path, MAX_INTERVALS_PER_TAG)
            .map_err(|e| e.to_string())?;
        if let Some(torn) = torn {
            note_torn_tail(&mut record, torn.warning(&hlog_path));
        }
        intervals
    } else {
        Vec::new()
    };
    let events_path = dir.file(events::FILE_NAME);
    let events = if events_path.is_file() {
        events::read_events(&events_path)
            .map_err(|e| format!("cannot read {}: {e}", events_path.display()))?
    } else {
        Vec::new()
    };
    Ok(LoadedRun {
        path: path.to_path_buf(),
        record,
        intervals,
        events,
    })
}

/// Tells about a torn latency.hlog (a full disk, a kill): on stderr now, and among the run's
/// warnings, which reports and exports show.
pub fn note_torn_tail(record: &mut RunRecord, warning: String) {
    eprintln!("jitterlab: warning: {warning}");
    record.warnings.push(warning);
}

impl LoadedRun {
    /// The distinct interval tags in order of first appearance (`cpu0`, `cpu1`, `cpu0.irq`...).
    pub fn tags(&self) -> Vec<String> {
        let mut tags: Vec<String> = Vec::new();
        for i in &self.intervals {
            if !tags.contains(&i.tag) {
                tags.push(i.tag.clone());
            }
        }
        tags
    }

    /// The intervals of one tag, in time order.
    pub fn intervals_of<'a>(&'a self, tag: &'a str) -> impl Iterator<Item = &'a StoredInterval> {
        self.intervals.iter().filter(move |i| i.tag == tag)
    }

    /// The sum of every interval of one tag: the whole run's histogram for that thread. None
    /// when the tag has no intervals.
    pub fn merged_histogram(&self, tag: &str) -> Option<Histogram<u64>> {
        let mut merged = new_histogram();
        let mut any = false;
        for i in self.intervals_of(tag) {
            hlog_scan::add_counts(&mut merged, &i.counts);
            any = true;
        }
        any.then_some(merged)
    }
}

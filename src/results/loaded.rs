//! The one reader of a result directory, for every command that reads runs (report, compare,
//! budgets on stored runs, export): run.json with its format checked, the events, and the
//! interval histograms, either coarsened and kept ([`load`]) or scanned whole by the caller
//! ([`open`] then [`LoadedRun::scan_intervals`], the report's way for day-long runs). The size
//! caps are `crate::input`'s; a torn last line of latency.hlog is left out with a warning.

use super::ResultDir;
use super::format::events::{self, Event};
use super::format::hlog;
use super::format::run_record::RunRecord;
use crate::record::hlog_scan::{self, SparseInterval, StoredInterval, TornTail};
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
    /// empty when the file is missing, or when the run was only [`open`]ed. A log with more than [`MAX_INTERVALS_PER_TAG`] intervals
    /// of a tag is read with consecutive intervals merged (see `hlog_scan::read_coarsened`).
    pub intervals: Vec<StoredInterval>,
    /// events.jsonl; empty when the file is missing.
    pub events: Vec<Event>,
}

/// Reads a result directory whole, its interval log coarsened to at most
/// [`MAX_INTERVALS_PER_TAG`] intervals per tag. The error says which file is wrong and why
/// (exit code 2).
pub fn load(path: &Path) -> Result<LoadedRun, String> {
    let mut run = open(path)?;
    if let Some(hlog_path) = run.hlog_path() {
        let (intervals, torn) = hlog_scan::read_coarsened(&hlog_path, MAX_INTERVALS_PER_TAG)
            .map_err(|e| e.to_string())?;
        run.note_torn_tail(torn, &hlog_path);
        run.intervals = intervals;
    }
    Ok(run)
}

/// Reads a result directory's run.json (its format checked) and events.jsonl, leaving the
/// interval log to the caller: [`load`] reads it coarsened, the report scans it whole
/// ([`LoadedRun::scan_intervals`]). Every reader of a result directory starts here.
pub fn open(path: &Path) -> Result<LoadedRun, String> {
    let dir = ResultDir::open(path)?;
    let record = dir.read_run_record()?;
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
        intervals: Vec::new(),
        events,
    })
}

impl LoadedRun {
    /// latency.hlog, when the run has one.
    pub fn hlog_path(&self) -> Option<PathBuf> {
        Some(self.path.join(hlog::FILE_NAME)).filter(|p| p.is_file())
    }

    /// Scans latency.hlog on up to 8 threads, each folding the intervals of its share of the
    /// file into a state made by `init` (see `hlog_scan::scan_parallel`); returns the states in
    /// file order, none when the run has no log. A torn last line is left out and warned about.
    /// `progress(done, total)` follows the bytes scanned.
    pub fn scan_intervals<S: Send>(
        &mut self,
        init: impl Fn() -> S + Sync,
        visit: impl Fn(&mut S, &SparseInterval) + Sync,
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<Vec<S>, String> {
        let Some(hlog_path) = self.hlog_path() else {
            return Ok(Vec::new());
        };
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
        let (states, torn) = hlog_scan::scan_parallel(&hlog_path, workers, init, visit, progress)
            .map_err(|e| format!("cannot read {}: {e}", hlog_path.display()))?;
        self.note_torn_tail(torn, &hlog_path);
        Ok(states)
    }

    /// Tells about a torn latency.hlog (a full disk, a kill): on stderr now, and among the
    /// run's warnings, which reports and exports show.
    fn note_torn_tail(&mut self, torn: Option<TornTail>, hlog_path: &Path) {
        if let Some(torn) = torn {
            let warning = torn.warning(hlog_path);
            eprintln!("jitterlab: warning: {warning}");
            self.record.warnings.push(warning);
        }
    }

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

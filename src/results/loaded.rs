//! The one reader of a result directory, for every command that reads runs (report, compare,
//! budgets on stored runs, export): run.json with its format checked, the events, and the
//! interval histograms, either coarsened and kept ([`load`]) or scanned whole by the caller
//! ([`open`] then [`LoadedRun::scan_intervals`], the report's way for day-long runs). The size
//! caps are `crate::input`'s; a torn last line of latency.hlog is left out with a warning.
//!
//! A continuous run's log is a series of segment files (`format::segments`) instead of one
//! latency.hlog: they are read in index order as one log. Retention may have deleted the
//! oldest, even between listing and reading them: the run is read from the segments there are,
//! and a warning says which part of the run they cover.

use super::ResultDir;
use super::format::events::{self, Event};
use super::format::hlog;
use super::format::run_record::RunRecord;
use super::format::segments;
use crate::record::hlog_scan::{self, ReadNotes, SparseInterval, StoredInterval};
use crate::record::stats::new_histogram;
use crate::units::format_ns;
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
    let files = run.hlog_files()?;
    if !files.is_empty() {
        let (intervals, notes) = hlog_scan::read_coarsened_files(&files, MAX_INTERVALS_PER_TAG)
            .map_err(|e| e.to_string())?;
        run.note_reading(&files, notes);
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

/// The files of the interval log of the result directory at `path` in time order:
/// latency.hlog, or the segment files (`latency-NNNNNN.hlog`) in index order; none when the run
/// has no log.
pub fn hlog_files(path: &Path) -> Result<Vec<PathBuf>, String> {
    let single = path.join(hlog::FILE_NAME);
    if single.is_file() {
        return Ok(vec![single]);
    }
    let entries =
        std::fs::read_dir(path).map_err(|e| format!("cannot list {}: {e}", path.display()))?;
    let mut found: Vec<(u64, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let index = segments::parse_file_name(e.file_name().to_str()?)?;
            Some((index, e.path()))
        })
        .collect();
    found.sort_unstable();
    Ok(found.into_iter().map(|(_, p)| p).collect())
}

impl LoadedRun {
    /// Whether the run has an interval log (latency.hlog or segments).
    pub fn has_hlog(&self) -> bool {
        self.hlog_files().is_ok_and(|f| !f.is_empty())
    }

    /// The files of the run's interval log in time order (see [`hlog_files`]).
    pub fn hlog_files(&self) -> Result<Vec<PathBuf>, String> {
        hlog_files(&self.path)
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
        let files = self.hlog_files()?;
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
        // Progress over all files: the bytes of the files before this one are done.
        let sizes: Vec<u64> = files
            .iter()
            .map(|f| f.metadata().map_or(0, |m| m.len()))
            .collect();
        let total: u64 = sizes.iter().sum();
        let mut states = Vec::new();
        let mut notes = ReadNotes::default();
        let mut before = 0;
        for (path, size) in files.iter().zip(&sizes) {
            let scanned = hlog_scan::scan_parallel(path, workers, &init, &visit, |done, _| {
                progress(before + done, total)
            });
            match scanned {
                Ok((chunk, torn)) => {
                    states.extend(chunk);
                    notes.torn.extend(torn.map(|t| (path.clone(), t)));
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    notes.vanished.push(path.clone())
                }
                Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
            }
            before += size;
        }
        self.note_reading(&files, notes);
        Ok(states)
    }

    /// Tells what reading the log met, on stderr now and among the run's warnings (which
    /// reports and exports show): a torn last line (a full disk, a kill), and for segments,
    /// the part of the run the segments read cover when retention has deleted some.
    fn note_reading(&mut self, files: &[PathBuf], notes: ReadNotes) {
        let mut warnings: Vec<String> = notes
            .torn
            .iter()
            .map(|(path, torn)| torn.warning(path))
            .collect();
        if let Some(w) = self.segment_coverage(files, &notes.vanished) {
            warnings.push(w);
        }
        for warning in warnings {
            eprintln!("jitterlab: warning: {warning}");
            self.record.warnings.push(warning);
        }
    }

    /// For a segmented log with segments missing (deleted by retention, before or while it was
    /// read): which segments were read and which part of the run they cover.
    fn segment_coverage(&self, files: &[PathBuf], vanished: &[PathBuf]) -> Option<String> {
        let index = |p: &PathBuf| {
            p.file_name()
                .and_then(|n| n.to_str())
                .and_then(segments::parse_file_name)
        };
        let read: Vec<u64> = files
            .iter()
            .filter(|p| !vanished.contains(p))
            .filter_map(index)
            .collect();
        let length_ns = self.record.segments.as_ref()?.length_ns;
        let (&first, &last) = (read.first()?, read.last()?);
        let gaps = (last - first + 1) as usize != read.len();
        if first == 0 && !gaps {
            return None;
        }
        let at = |k: u64| format_ns(k.saturating_mul(length_ns));
        Some(format!(
            "{}: the interval log covers {} to {} of the run (segments {first} to {last}{}): earlier segments were deleted by retention{}; run.json's per-thread figures cover the whole run",
            self.path.display(),
            at(first),
            at(last + 1),
            if gaps { ", some missing" } else { "" },
            if vanished.is_empty() {
                String::new()
            } else {
                format!(" ({} while being read)", vanished.len())
            }
        ))
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

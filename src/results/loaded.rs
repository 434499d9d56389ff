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
use crate::error::display_path;
use crate::format::events::{self, Event};
use crate::format::hlog;
use crate::format::hlog_scan::{self, ReadNotes, SparseInterval, StoredInterval};
use crate::format::run_record::{Ended, RunRecord};
use crate::format::segments;
use crate::format::stats::new_histogram;
use crate::units::format_ns;
use hdrhistogram::Histogram;
use std::path::{Path, PathBuf};

/// At most this many intervals per tag are kept: a day of 1 s intervals is read as 1000
/// intervals of 87 s. 2.5 times `compare`'s 400 bootstrap blocks, so blocks still group several.
pub(crate) const MAX_INTERVALS_PER_TAG: usize = 1000;

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
    /// What reading the run's files met that the figures shown depend on (a torn or missing
    /// log, a log with fewer samples than run.json counts): also in `record.warnings` and on
    /// stderr; kept apart for `compare`, which shows them under the run they concern.
    pub read_warnings: Vec<String>,
}

/// Samples per tag of the interval log read (`cpu0`, `cpu0.irq`...).
type TagTotals = std::collections::HashMap<String, u64>;

fn add_total(totals: &mut TagTotals, tag: &str, n: u64) {
    match totals.get_mut(tag) {
        Some(t) => *t += n,
        None => {
            totals.insert(tag.to_string(), n);
        }
    }
}

/// Reads a result directory whole, its interval log coarsened to at most
/// [`MAX_INTERVALS_PER_TAG`] intervals per tag. The error says which file is wrong and why
/// (exit code 2).
pub fn load(path: &Path) -> Result<LoadedRun, String> {
    let mut run = open(path)?;
    let files = run.hlog_files()?;
    let mut notes = ReadNotes::default();
    let mut totals = TagTotals::new();
    if !files.is_empty() {
        let (intervals, read) = hlog_scan::read_coarsened_files(&files, MAX_INTERVALS_PER_TAG)
            .map_err(|e| e.to_string())?;
        for i in &intervals {
            add_total(&mut totals, &i.tag, i.counts.iter().map(|&(_, c)| c).sum());
        }
        notes = read;
        run.intervals = intervals;
    }
    run.note_reading(&files, notes, &totals)?;
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
        read_warnings: Vec::new(),
    })
}

/// The files of the interval log of the result directory at `path` in time order:
/// latency.hlog, or the segment files (`latency-NNNNNN.hlog`) in index order; none when the run
/// has no log.
pub(crate) fn hlog_files(path: &Path) -> Result<Vec<PathBuf>, String> {
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
    pub(crate) fn has_hlog(&self) -> bool {
        self.hlog_files().is_ok_and(|f| !f.is_empty())
    }

    /// The files of the run's interval log in time order (see [`hlog_files`]).
    pub(crate) fn hlog_files(&self) -> Result<Vec<PathBuf>, String> {
        hlog_files(&self.path)
    }

    /// Scans latency.hlog on up to 8 threads, each folding the intervals of its share of the
    /// file into a state made by `init` (see `hlog_scan::scan_parallel`); returns the states in
    /// file order, none when the run has no log. A torn last line is left out and warned about.
    /// `progress(done, total)` follows the bytes scanned.
    pub(crate) fn scan_intervals<S: Send>(
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
        let mut totals = TagTotals::new();
        let mut before = 0;
        // Each worker also counts the samples per tag, for checking them against run.json.
        let init = || (init(), TagTotals::new());
        let visit = |(state, totals): &mut (S, TagTotals), i: &SparseInterval| {
            add_total(totals, i.tag, i.total);
            visit(state, i)
        };
        for (path, size) in files.iter().zip(&sizes) {
            let scanned = hlog_scan::scan_parallel(path, workers, init, visit, |done, _| {
                progress(before + done, total)
            });
            match scanned {
                Ok((chunk, torn)) => {
                    for (state, counted) in chunk {
                        states.push(state);
                        for (tag, n) in counted {
                            add_total(&mut totals, &tag, n);
                        }
                    }
                    notes.torn.extend(torn.map(|t| (path.clone(), t)));
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    notes.vanished.push(path.clone())
                }
                Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
            }
            before += size;
        }
        self.note_reading(&files, notes, &totals)?;
        Ok(states)
    }

    /// Tells what reading the log met, on stderr now and among the run's warnings (which
    /// reports and exports show, and `compare` under the run): a torn last line (a full disk,
    /// a kill); for segments, the part of the run the segments read cover when retention has
    /// deleted some; a missing log; a log whose samples do not add up to run.json's (see
    /// [`LoadedRun::check_totals`], which refuses a log holding more than the run measured).
    fn note_reading(
        &mut self,
        files: &[PathBuf],
        notes: ReadNotes,
        totals: &TagTotals,
    ) -> Result<(), String> {
        let mut warnings: Vec<String> = notes
            .torn
            .iter()
            .map(|(path, torn)| torn.warning(path))
            .collect();
        let coverage = self.segment_coverage(files, &notes.vanished);
        let partial = coverage.is_some();
        warnings.extend(coverage);
        if files.is_empty() {
            warnings.extend(self.missing_log());
        } else {
            warnings.extend(self.check_totals(totals, partial)?);
        }
        for warning in warnings {
            eprintln!("jitterlab: warning: {warning}");
            self.record.warnings.push(warning.clone());
            self.read_warnings.push(warning);
        }
        Ok(())
    }

    /// A run that measured samples but has no interval log (deleted, or never copied): what
    /// is lost without it. None when there is nothing to miss (no samples, or an imported
    /// source without histograms, which run.json already lists as absent).
    fn missing_log(&self) -> Option<String> {
        let samples: u64 = self.record.threads.iter().map(|t| t.latency.samples).sum();
        let known_absent = self
            .record
            .imported
            .as_ref()
            .is_some_and(|i| i.absent.iter().any(|a| a == hlog::FILE_NAME));
        (samples > 0 && !known_absent && self.record.ended != Ended::Running).then(|| {
            format!(
                "{}: {} is missing: this run's {samples} samples are known only by run.json's whole-run figures; lost are its intervals (the timeline, the per-CPU histograms and phases read from the log) and compare's confidence intervals of percentile differences",
                display_path(&self.path),
                hlog::FILE_NAME
            )
        })
    }

    /// Checks the samples of each CPU in the log read against run.json's `samples` of that
    /// CPU's threads. A log holding MORE samples than the run measured (a log concatenated
    /// with itself, another run's log copied in) cannot be this run's: refused (exit 2), since
    /// every interval and compare's confidence intervals would be built from samples the run
    /// never had. A log holding FEWER (cut short by a full disk or a kill, or segments deleted
    /// by retention) is a warning naming the difference: what it holds is still this run's.
    /// A run still running (a live monitor) is not checked: its log runs ahead of the
    /// run.json written at its last segment boundary.
    fn check_totals(&self, totals: &TagTotals, partial: bool) -> Result<Vec<String>, String> {
        if self.record.ended == Ended::Running {
            return Ok(Vec::new());
        }
        let mut counted: std::collections::BTreeMap<usize, u64> = Default::default();
        for t in &self.record.threads {
            *counted.entry(t.cpu).or_default() += t.latency.samples;
        }
        let mut logged: std::collections::BTreeMap<usize, u64> = Default::default();
        for (tag, &n) in totals {
            if let Some(cpu) = tag
                .strip_prefix("cpu")
                .and_then(|c| c.parse::<usize>().ok())
                && crate::format::hlog::is_cpu_tag(tag)
            {
                *logged.entry(cpu).or_default() += n;
            }
        }
        let log = display_path(&self.path.join(hlog::FILE_NAME));
        let mut warnings = Vec::new();
        let cpus: std::collections::BTreeSet<usize> =
            counted.keys().chain(logged.keys()).copied().collect();
        for cpu in cpus {
            let (want, got) = (
                counted.get(&cpu).copied().unwrap_or(0),
                logged.get(&cpu).copied().unwrap_or(0),
            );
            if got > want {
                return Err(format!(
                    "{log} holds {got} samples of CPU {cpu} where run.json counts {want} ({} more): the log is not this run's (duplicated, or another run's), and every interval read from it would be wrong; restore the run's own log, or move it away to read run.json's whole-run figures alone",
                    got - want
                ));
            }
            if got < want && !partial {
                warnings.push(format!(
                    "{log} holds {got} samples of CPU {cpu} where run.json counts {want} ({} missing: the log was cut short or edited); intervals, phases read from the log and compare's confidence intervals use the {got} it holds, run.json's whole-run figures all {want}",
                    want - got
                ));
            }
        }
        Ok(warnings)
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
    pub(crate) fn intervals_of<'a>(
        &'a self,
        tag: &'a str,
    ) -> impl Iterator<Item = &'a StoredInterval> {
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

//! The one reader of a result directory, for every command that reads runs (report, compare,
//! budgets on stored runs, export): run.json with its format checked, the events streamed to
//! the readers that show them ([`scan_events`], one line held at a time), and the
//! interval histograms read into a fixed grid of time cells (`results::cells`), either kept as
//! intervals ([`load`]: about [`MAX_INTERVALS_PER_TAG`] per tag) or folded by the caller
//! ([`open`] then [`LoadedRun::scan_cells`], the report's way). Either way one streaming pass,
//! in memory bounded by the grid, not by the run's length; a long run's summaries
//! (`format::summary`) are read in place of its log where the cells are whole buckets. The size
//! caps are `crate::input`'s; a torn last line of latency.hlog is left out with a warning.
//!
//! A continuous run's log is a series of segment files (`format::segments`) instead of one
//! latency.hlog: they are read in index order as one log. Retention may have deleted the
//! oldest, even between listing and reading them: the run is read from the segments there are,
//! and a warning says which part of the run they cover.
//!
//! One concern by design (issue 41's near-limit files): this is the one reader of a result
//! directory's files for every layer above (`tests/offline/readers.rs` fails on another), so
//! what reads a run stays here; the time cells it fills are `results::cells`.

use super::ResultDir;
use super::cells::{self, Coarse, Fold, Grid, Source};
use crate::error::display_path;
use crate::format::events::{self, Event, Scanned};
use crate::format::hlog;
use crate::format::hlog_scan::{self, StoredInterval, TornTail};
use crate::format::run_record::{Ended, RunRecord};
use crate::format::segments;
use crate::format::stats::new_histogram;
use crate::units::format_ns;
use hdrhistogram::Histogram;
use std::path::{Path, PathBuf};

/// About this many intervals per tag are kept (cells of `results::cells`, from 2/3 to 2 times
/// as many once they are whole minutes): 12 h of 1 s intervals are read as 1000 intervals of
/// 43.2 s, a day as 1440 of 1 min, a week as 1008 of 10 min. At least 1.6 times `compare`'s
/// 400 bootstrap blocks, so blocks still group several.
pub(crate) const MAX_INTERVALS_PER_TAG: usize = 1000;

/// What reading the log's files met besides intervals.
#[derive(Debug, Default)]
struct ReadNotes {
    /// Files whose last line was torn, and the tail left out.
    torn: Vec<(PathBuf, TornTail)>,
    /// Files listed but gone when read (deleted by retention meanwhile).
    vanished: Vec<PathBuf>,
}

/// Everything a stored run holds except its sample log (which can be too big for memory and is
/// streamed by the exporters instead).
#[derive(Debug, Clone)]
pub struct LoadedRun {
    pub path: PathBuf,
    pub record: RunRecord,
    /// The interval histograms of latency.hlog in time order (by time cell, then by tag in CPU
    /// order), as sparse (value, count) pairs; empty when the file is missing, or when the run
    /// was only [`open`]ed. The intervals whose middle falls in the same one of about
    /// [`MAX_INTERVALS_PER_TAG`] time cells are merged (`results::cells`): a short log's stay
    /// as they are.
    pub intervals: Vec<StoredInterval>,
    /// What reading the run's files met that the figures shown depend on (a torn or missing
    /// log, a log with fewer samples than run.json counts): also in `record.warnings` and on
    /// stderr; kept apart for `compare`, which shows them under the run they concern.
    pub read_warnings: Vec<String>,
}

/// What a tag of the interval log holds, as checked against run.json
/// ([`LoadedRun::check_totals`]).
#[derive(Clone, Copy)]
enum Quantity {
    /// `cpuN`: wakeup latency, run.json's `samples`.
    Latency,
    /// `cpuN.irq`: timer IRQ latency (`--trace`), run.json's `irq_latency.samples`.
    Irq,
}

impl Quantity {
    /// The CPU of a tag holding this quantity.
    fn cpu_of(self, tag: &str) -> Option<usize> {
        let base = match self {
            Quantity::Latency => tag,
            Quantity::Irq => tag.strip_suffix(".irq")?,
        };
        if !hlog::is_cpu_tag(base) {
            return None;
        }
        base.strip_prefix("cpu")?.parse().ok()
    }

    fn samples_word(self) -> &'static str {
        match self {
            Quantity::Latency => "samples",
            Quantity::Irq => "timer IRQ latency samples (cpuN.irq)",
        }
    }
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

/// Reads a result directory whole, its interval log in about [`MAX_INTERVALS_PER_TAG`] time
/// cells per tag (consecutive intervals merged; a short log's intervals stay as they are). The
/// error says which file is wrong and why (exit code 2).
pub fn load(path: &Path) -> Result<LoadedRun, String> {
    let mut run = open(path)?;
    let grid = run.grid(MAX_INTERVALS_PER_TAG)?;
    let coarse = run.scan_cells(&grid, Coarse::default, &|_, _| {})?;
    run.intervals = coarse.into_intervals();
    Ok(run)
}

/// Reads a result directory's run.json (its format checked), leaving the interval log and the
/// events to the caller: [`load`] reads the log into cells kept as intervals, the report folds
/// it into its own cells ([`LoadedRun::scan_cells`]); a reader that shows events streams them
/// ([`LoadedRun::scan_events`]). Every reader of a result directory starts here.
pub fn open(path: &Path) -> Result<LoadedRun, String> {
    let dir = ResultDir::open(path)?;
    let record = dir.read_run_record()?;
    Ok(LoadedRun {
        path: path.to_path_buf(),
        record,
        intervals: Vec::new(),
        read_warnings: Vec::new(),
    })
}

/// The event files of the result directory at `path` in time order: events.jsonl, or a
/// segmented run's `events-NNNNNN.jsonl` in index order (`format::segments`); none when the run
/// has no events. The one place that lists them: every reader of the events goes through it.
pub fn event_files(path: &Path) -> Result<Vec<PathBuf>, String> {
    let single = path.join(events::FILE_NAME);
    if crate::input::result_entry_exists(&single) {
        return Ok(vec![single]);
    }
    indexed_files(path, segments::parse_events_file_name)
}

/// Streams the events of the result directory at `path` to `visit` in the order written: its
/// event files read in order (see [`event_files`]), [`crate::input::EVENTS_MAX_BYTES`] of them
/// in all at most, one line held at a time (`format::events::scan_events`: lines of a type
/// `wants` refuses are counted, not parsed; lines over `format::events::MAX_LINE_BYTES` are
/// skipped and counted). A file deleted by retention between listing and reading is skipped:
/// its events are of a segment no longer kept. The one way the readers of a result directory
/// read its events: what they keep of them is theirs to bound.
pub(crate) fn scan_events(
    path: &Path,
    wants: &dyn Fn(&str) -> bool,
    visit: &mut dyn FnMut(Event),
) -> Result<Scanned, String> {
    let mut left = crate::input::EVENTS_MAX_BYTES;
    let mut scanned = Scanned::default();
    for file in event_files(path)? {
        let bytes = crate::input::result_file_len(&file);
        match events::scan_events(&file, left, wants, visit) {
            Ok(s) => scanned.add(s),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(format!("cannot read {}: {e}", file.display())),
        }
        left = left.saturating_sub(bytes);
    }
    Ok(scanned)
}

/// What to say of what [`scan_events`] left out of the result directory at `path` whose
/// run.json is `record`, one warning each, every reader of its events the same: lines over
/// `format::events::MAX_LINE_BYTES`; lines that are not UTF-8 (`Scanned::not_text`); lines of
/// a type this version reads that do not parse (`Scanned::damaged`: another version's types
/// stay unsaid); and, when the reader read the explanations of a run with one events.jsonl,
/// fewer or (a run that ended) more than run.json says were written (`trace.explained`, less
/// those the events budget counted instead: `events_not_written`).
/// Twelfth hostile re-run of issue 39, M12-c: 60 damaged explanations of 112 left the report's
/// shares "of 52" without a word.
pub(crate) fn events_warnings(path: &Path, record: &RunRecord, scanned: &Scanned) -> Vec<String> {
    let file = display_path(&path.join(events::FILE_NAME));
    let mut out = Vec::new();
    if scanned.too_long > 0 {
        out.push(format!(
            "{file}: {} line(s) longer than {} left out (jitterlab writes none so long: the file was edited or damaged)",
            scanned.too_long,
            crate::input::format_bytes(events::MAX_LINE_BYTES as u64)
        ));
    }
    if scanned.not_text > 0 {
        out.push(format!(
            "{file}: {} line(s) are not UTF-8 text (jitterlab writes none such: the file was edited or damaged); they were read with each such byte replaced by U+FFFD",
            scanned.not_text
        ));
    }
    if scanned.damaged > 0 {
        out.push(format!(
            "{file}: {} line(s) of an event type this version reads (the first a `{}`) do not parse and were left out (jitterlab writes none such: the file was edited or damaged); what is shown of the events is of the rest",
            scanned.damaged,
            scanned.damaged_kind.unwrap_or("?")
        ));
    }
    let single = crate::input::result_entry_exists(&path.join(events::FILE_NAME));
    if let (Some(read), Some(trace), true) = (scanned.explanations, &record.trace, single) {
        let left_out = record
            .events_not_written
            .as_ref()
            .map_or(0, |n| n.spike_explanations);
        let written = trace.explained.saturating_sub(left_out);
        let counted = match left_out {
            0 => "`trace.explained`".to_string(),
            n => format!(
                "`trace.explained` {}, less the {n} the events budget counted instead of writing (`events_not_written`)",
                trace.explained
            ),
        };
        if read < written {
            out.push(format!(
                "{file} holds {read} of the {written} explanations run.json says were written ({counted}): what is shown of them (counts, shares, the lists) is of those {read}"
            ));
        } else if read > written && record.ended != crate::format::run_record::Ended::Running {
            // More than were written: lines repeated or added (thirteenth hostile re-run,
            // L13-e: every line twice read "Of 212 explained late wakeups" without a word).
            out.push(format!(
                "{file} holds {read} explanations, more than the {written} run.json says were written ({counted}): lines were repeated or added (the file was edited or damaged); what is shown of them (counts, shares, the lists) is of the {read} read"
            ));
        }
    }
    out
}

/// Every event of the result directory at `path`, in the order written ([`scan_events`]),
/// collected: for tests and tools over small runs. A reader of results streams them instead.
pub fn read_events(path: &Path) -> Result<Vec<Event>, String> {
    let mut out = Vec::new();
    scan_events(path, &|_| true, &mut |e| out.push(e))?;
    Ok(out)
}

/// The counters of the result directory at `path` (counters.log), or None when the run has
/// none (made with --no-counters, segmented, imported).
pub(crate) fn counters(
    path: &Path,
) -> Result<Option<crate::format::counters::CountersFile>, String> {
    let file = path.join(crate::format::counters::FILE_NAME);
    if !crate::input::result_entry_exists(&file) {
        return Ok(None);
    }
    crate::format::counters::read(&file).map(Some)
}

/// Every interval of the interval log of the result directory at `path` (latency.hlog, or its
/// segments in order: [`hlog_files`]), streamed to `each` one at a time: for the readers that
/// fold intervals their own way (a run's phases, the counters' correlation).
pub(crate) fn scan_intervals(
    path: &Path,
    mut each: impl FnMut(&hlog_scan::SparseInterval),
) -> Result<(), String> {
    for file in hlog_files(path)? {
        hlog_scan::scan(&file, &mut each, |_, _| {})
            .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    }
    Ok(())
}

/// The sample log (samples.bin) of the result directory at `path`, read record by record (a
/// day of samples does not fit in memory): for the exporters and the drop-ins' figures. None
/// when the run kept no samples.
pub(crate) fn sample_log(
    path: &Path,
) -> Result<Option<crate::format::samplelog::SampleLogReader>, String> {
    let file = path.join(crate::format::samplelog::FILE_NAME);
    if !crate::input::result_entry_exists(&file) {
        return Ok(None);
    }
    crate::format::samplelog::SampleLogReader::open(&file)
        .map(Some)
        .map_err(|e| e.to_string())
}

/// The files of `path` whose names `parse` gives an index, in index order.
fn indexed_files(path: &Path, parse: fn(&str) -> Option<u64>) -> Result<Vec<PathBuf>, String> {
    // Listed through the result directory's descriptor (`input::list_result_dir`), as its
    // files are read.
    let names = crate::input::list_result_dir(path)
        .map_err(|e| format!("cannot list {}: {e}", path.display()))?;
    let mut found: Vec<(u64, PathBuf)> = names
        .iter()
        .filter_map(|n| Some((parse(n.to_str()?)?, path.join(n))))
        .collect();
    found.sort_unstable();
    Ok(found.into_iter().map(|(_, p)| p).collect())
}

/// The files of the interval log of the result directory at `path` in time order:
/// latency.hlog, or the segment files (`latency-NNNNNN.hlog`) in index order; none when the run
/// has no log.
pub(crate) fn hlog_files(path: &Path) -> Result<Vec<PathBuf>, String> {
    let single = path.join(hlog::FILE_NAME);
    if crate::input::result_entry_exists(&single) {
        return Ok(vec![single]);
    }
    indexed_files(path, segments::parse_file_name)
}

impl LoadedRun {
    /// Streams the run's events to `visit` ([`scan_events`]); what it left out
    /// ([`events_warnings`]: lines too long or damaged, explanations missing) is told on
    /// stderr and among the run's warnings, as a torn log is.
    pub(crate) fn scan_events(
        &mut self,
        wants: &dyn Fn(&str) -> bool,
        visit: &mut dyn FnMut(Event),
    ) -> Result<Scanned, String> {
        let scanned = scan_events(&self.path, wants, visit)?;
        for warning in events_warnings(&self.path, &self.record, &scanned) {
            eprintln!("jitterlab: warning: {warning}");
            self.record.warnings.push(warning.clone());
            self.read_warnings.push(warning);
        }
        Ok(scanned)
    }

    /// Whether the run has an interval log (latency.hlog or segments).
    pub(crate) fn has_hlog(&self) -> bool {
        self.hlog_files().is_ok_and(|f| !f.is_empty())
    }

    /// The files of the run's interval log in time order (see [`hlog_files`]).
    pub(crate) fn hlog_files(&self) -> Result<Vec<PathBuf>, String> {
        hlog_files(&self.path)
    }

    /// The grid of at most `most_cells` cells over the run: its length from run.json, or from
    /// the end of its log's last interval when that is later or run.json does not state it.
    pub(crate) fn grid(&self, most_cells: usize) -> Result<Grid, String> {
        let files = self.hlog_files()?;
        let from_record = self.record.duration_ns.map_or(0.0, |ns| ns as f64 / 1e9);
        let from_log = files
            .last()
            .and_then(|f| cells::last_interval_end_s(f))
            .unwrap_or(0.0);
        Ok(Grid::new(from_record.max(from_log), most_cells))
    }

    /// Reads the interval log into `grid`'s cells in one streaming pass on up to 8 threads,
    /// each folding into a state made by `init`; returns the states merged. A file's summary is
    /// read in its place when the cells are whole buckets and it matches the log. A torn last
    /// line is left out and warned about; the samples read are checked against run.json.
    /// `progress(done, total)` follows the bytes read.
    pub(crate) fn scan_cells<S: Fold>(
        &mut self,
        grid: &Grid,
        init: impl Fn() -> S,
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<S, String> {
        let files = self.hlog_files()?;
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
        let sources: Vec<(&PathBuf, Source)> = files
            .iter()
            .map(|f| (f, cells::source_of(f, grid)))
            .collect();
        let path_of = |s: &Source| match s {
            Source::Log(p) | Source::Summary(p) => p.clone(),
        };
        // Progress over all files: the bytes of the files before this one are done.
        let sizes: Vec<u64> = sources
            .iter()
            .map(|(_, s)| crate::input::result_file_len(&path_of(s)))
            .collect();
        let total: u64 = sizes.iter().sum();
        // Each worker also counts the samples per tag, for checking them against run.json.
        let mut states: Vec<(S, TagTotals)> =
            (0..workers).map(|_| (init(), TagTotals::new())).collect();
        let mut notes = ReadNotes::default();
        let mut before = 0;
        for ((log, source), size) in sources.iter().zip(&sizes) {
            let summary = matches!(source, Source::Summary(_));
            let path = path_of(source);
            let visit = |(state, totals): &mut (S, TagTotals), i: &hlog_scan::SparseInterval| {
                if let Some((tag, n)) = cells::visit(summary, grid, state, i) {
                    add_total(totals, tag, n);
                }
            };
            let scanned = hlog_scan::scan_parallel(&path, &mut states, visit, |done, _| {
                progress(before + done, total)
            });
            match scanned {
                Ok(torn) => notes.torn.extend(torn.map(|t| (path.clone(), t))),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    notes.vanished.push((*log).clone())
                }
                Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
            }
            before += size;
        }
        let mut merged = init();
        let mut totals = TagTotals::new();
        for (state, counted) in states {
            merged.absorb(state);
            for (tag, n) in counted {
                add_total(&mut totals, &tag, n);
            }
        }
        self.note_reading(&files, notes, &totals)?;
        Ok(merged)
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
    /// CPU's threads, and the timer IRQ latencies of its `cpuN.irq` tag against their
    /// `irq_latency.samples` (only where run.json has IRQ latency: a run not traced has none to
    /// check against).
    /// A log holding MORE samples than the run measured (a log concatenated with itself,
    /// another run's log copied in, a tag's lines duplicated) cannot be this run's: refused
    /// (exit 2), since every interval and compare's confidence intervals would be built from
    /// samples the run never had. A log holding FEWER (cut short by a full disk or a kill, or
    /// segments deleted by retention) is a warning naming the difference: what it holds is
    /// still this run's. A run still running (a live monitor) is not checked: its log runs
    /// ahead of the run.json written at its last segment boundary.
    fn check_totals(&self, totals: &TagTotals, partial: bool) -> Result<Vec<String>, String> {
        if self.record.ended == Ended::Running {
            return Ok(Vec::new());
        }
        let log = display_path(&self.path.join(hlog::FILE_NAME));
        let mut warnings = Vec::new();
        for quantity in [Quantity::Latency, Quantity::Irq] {
            let mut counted: std::collections::BTreeMap<usize, u64> = Default::default();
            for t in &self.record.threads {
                let samples = match quantity {
                    Quantity::Latency => t.latency.samples,
                    // A thread without IRQ latency in run.json (a run not traced, or a log
                    // whose IRQ lines were added by other means) gives nothing to check
                    // its CPU's `cpuN.irq` lines against: they are read as they are.
                    Quantity::Irq => match &t.irq_latency {
                        Some(l) => l.samples,
                        None => continue,
                    },
                };
                *counted.entry(t.cpu).or_default() += samples;
            }

            let mut logged: std::collections::BTreeMap<usize, u64> = Default::default();
            for (tag, &n) in totals {
                if let Some(cpu) = quantity.cpu_of(tag) {
                    *logged.entry(cpu).or_default() += n;
                }
            }
            let what = quantity.samples_word();
            // IRQ lines are checked only on the CPUs run.json counts IRQ latency for (above).
            let cpus: std::collections::BTreeSet<usize> = match quantity {
                Quantity::Latency => counted.keys().chain(logged.keys()).copied().collect(),
                Quantity::Irq => counted.keys().copied().collect(),
            };
            for cpu in cpus {
                let (want, got) = (
                    counted.get(&cpu).copied().unwrap_or(0),
                    logged.get(&cpu).copied().unwrap_or(0),
                );
                if got > want {
                    return Err(format!(
                        "{log} holds {got} {what} of CPU {cpu} where run.json counts {want} ({} more): the log is not this run's (duplicated, or another run's), and every interval read from it would be wrong; restore the run's own log, or move it away to read run.json's whole-run figures alone",
                        got - want
                    ));
                }
                if got < want && !partial {
                    warnings.push(format!(
                        "{log} holds {got} {what} of CPU {cpu} where run.json counts {want} ({} missing: the log was cut short or edited); intervals, phases read from the log and compare's confidence intervals use the {got} it holds, run.json's whole-run figures all {want}",
                        want - got
                    ));
                }
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

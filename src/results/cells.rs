//! A run's interval log read into a fixed grid of time cells: memory bounded by the grid (the
//! plot's resolution), not by the run's length. Each interval goes to the cell its middle falls
//! in; a reader folds it into that cell's state as it is read ([`Fold`]), on several threads,
//! in one streaming pass (`hlog_scan::scan_parallel`).
//!
//! When the cells are whole summary buckets (`format::summary`: a cell is a whole number of
//! [`summary::BUCKET_NS`]), each log file's summary is read in its place, if it is complete and
//! still matches the log: a month of 1 s intervals is then read as 43 200 buckets per tag. The
//! cells come out the same either way: a bucket holds exactly the intervals whose middle falls
//! in it, so a cell of whole buckets holds exactly the intervals it would hold read from the
//! log, and the largest per-interval 99th percentile is kept by the bucket's `@p99` line.

use crate::format::hlog_scan::{SparseInterval, StoredInterval};
use crate::format::summary::{self, BUCKET_NS, P99_SUFFIX};
use std::path::{Path, PathBuf};

/// The cells over a run of a given length.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Grid {
    /// The length of a cell, s.
    pub(crate) cell_s: f64,
    /// How many cells cover the run; intervals past the last (a log that ran on past the
    /// length run.json states) go into the last.
    pub cells: usize,
    /// Cells are whole summary buckets: summaries may be read in place of the logs.
    pub(crate) whole_buckets: bool,
}

impl Grid {
    /// About `most_cells` cells over `extent_s` seconds. When a cell would be at least half a
    /// summary bucket, it is made the nearest whole number of buckets (so that summaries can
    /// be read), which makes between 2/3 and 2 times `most_cells` cells; shorter cells divide
    /// the run evenly into `most_cells`.
    pub(crate) fn new(extent_s: f64, most_cells: usize) -> Grid {
        let extent_s = if extent_s > 0.0 { extent_s } else { 1.0 };
        let most_cells = most_cells.max(1);
        let even = extent_s / most_cells as f64;
        let bucket_s = BUCKET_NS as f64 / 1e9;
        if even >= bucket_s / 2.0 {
            let cell_s = (even / bucket_s).round().max(1.0) * bucket_s;
            Grid {
                cell_s,
                cells: ((extent_s / cell_s).ceil() as usize).max(1),
                whole_buckets: true,
            }
        } else {
            Grid {
                cell_s: even,
                cells: most_cells,
                whole_buckets: false,
            }
        }
    }

    /// The cell of an interval from `start_s` lasting `length_s`: the one its middle falls in.
    pub(crate) fn cell_of(&self, start_s: f64, length_s: f64) -> usize {
        // In whole us, as summaries bucket it (`summary::middle_us`): a cell of whole buckets
        // then holds exactly its buckets' intervals.
        let middle_us = summary::middle_us(start_s, length_s) as f64;
        ((middle_us / (self.cell_s * 1e6)) as usize).min(self.cells - 1)
    }

    /// How many cells make one of at most `columns` equal columns over the grid.
    pub(crate) fn cells_per_column(&self, columns: usize) -> usize {
        self.cells.div_ceil(columns.max(1)).max(1)
    }
}

/// A reader's state: what it keeps of the intervals it is given, by cell.
pub(crate) trait Fold: Send {
    /// The counts of an interval of the log, or of a summary bucket (the intervals of one
    /// bucket merged), whose middle falls in `cell`.
    fn counts(&mut self, cell: usize, interval: &SparseInterval);
    /// An interval of `tag` in `cell` whose 99th percentile is `p99_ns`: each interval of the
    /// log gives its own; a summary bucket gives the largest of its intervals'.
    fn interval_p99(&mut self, cell: usize, tag: &str, p99_ns: u64);
    /// Takes in another worker's state (of other intervals of the same grid).
    fn absorb(&mut self, other: Self)
    where
        Self: Sized;
}

/// One tag's cell being gathered: its intervals' (value, count) pairs merged, values ascending.
#[derive(Debug, Default)]
struct Gather {
    start_s: f64,
    end_s: f64,
    counts: Vec<(u64, u64)>,
    /// An interval was added (`start_s` and `end_s` are set).
    seen: bool,
}

impl Gather {
    /// Adds an interval's ascending (value, count) pairs. `scratch` is the reader's one spare
    /// buffer: the merge is written into it and it takes the old counts' room in turn, so that
    /// adding allocates only when a cell grows (issue 44: this merge was the largest part of
    /// reading a month-long run's summary).
    fn add(
        &mut self,
        start_s: f64,
        end_s: f64,
        counts: &[(u64, u64)],
        scratch: &mut Vec<(u64, u64)>,
    ) {
        if !self.seen {
            (self.start_s, self.end_s, self.seen) = (start_s, end_s, true);
        }
        self.start_s = self.start_s.min(start_s);
        self.end_s = self.end_s.max(end_s);
        // Both ascending: one linear merge, so a cell of thousands of intervals holds one pair
        // per distinct value and costs no sort.
        crate::format::hlog_scan::merge_counts(&self.counts, counts, scratch);
        std::mem::swap(&mut self.counts, scratch);
    }
}

/// The cells of every tag as owned intervals (`LoadedRun::intervals`, what `compare`, the
/// per-phase figures and the exporters read): per tag and non-empty cell, its intervals'
/// counts merged, starting at its first interval's start and lasting to its last one's end.
#[derive(Debug, Default)]
pub(crate) struct Coarse {
    tags: std::collections::HashMap<String, std::collections::BTreeMap<usize, Gather>>,
    /// The spare buffer of [`Gather::add`]'s merges.
    scratch: Vec<(u64, u64)>,
}

impl Fold for Coarse {
    fn counts(&mut self, cell: usize, i: &SparseInterval) {
        if !self.tags.contains_key(i.tag) {
            self.tags.insert(i.tag.to_string(), Default::default());
        }
        let cells = self.tags.get_mut(i.tag).expect("inserted above");
        cells.entry(cell).or_default().add(
            i.start_s,
            i.start_s + i.length_s,
            i.counts,
            &mut self.scratch,
        );
    }

    fn interval_p99(&mut self, _cell: usize, _tag: &str, _p99_ns: u64) {}

    fn absorb(&mut self, other: Self) {
        for (tag, cells) in other.tags {
            let mine = self.tags.entry(tag).or_default();
            for (cell, g) in cells {
                mine.entry(cell)
                    .or_default()
                    .add(g.start_s, g.end_s, &g.counts, &mut self.scratch);
            }
        }
    }
}

impl Coarse {
    /// The cells as intervals: by cell, and within a cell by tag (CPU order, each CPU's wakeup
    /// latency before its timer IRQ latency).
    pub(crate) fn into_intervals(self) -> Vec<StoredInterval> {
        let mut tags: Vec<(String, std::collections::BTreeMap<usize, Gather>)> =
            self.tags.into_iter().collect();
        tags.sort_by_key(|(tag, _)| tag_order(tag));
        let mut out: Vec<(usize, usize, StoredInterval)> = Vec::new();
        for (k, (tag, cells)) in tags.into_iter().enumerate() {
            for (cell, g) in cells {
                out.push((
                    cell,
                    k,
                    StoredInterval {
                        tag: tag.clone(),
                        start_s: g.start_s,
                        length_s: g.end_s - g.start_s,
                        counts: g.counts,
                    },
                ));
            }
        }
        out.sort_by_key(|&(cell, k, _)| (cell, k));
        out.into_iter().map(|(_, _, i)| i).collect()
    }
}

/// The order tags are shown in: by CPU, wakeup latency before timer IRQ latency, others last.
pub(crate) fn tag_order(tag: &str) -> (usize, bool, String) {
    let (cpu, irq) = crate::format::hlog::parse_tag(tag);
    (cpu.unwrap_or(usize::MAX), irq, tag.to_string())
}

/// Where one log file is read from.
pub(crate) enum Source {
    /// The log itself, every interval.
    Log(PathBuf),
    /// Its summary, complete and matching the log.
    Summary(PathBuf),
}

/// Where to read `log` from on `grid`: its summary when the cells are whole buckets and the
/// summary is usable, else the log.
pub(crate) fn source_of(log: &Path, grid: &Grid) -> Source {
    if grid.whole_buckets
        && let Some(name) = log.file_name().and_then(|n| n.to_str())
    {
        let summary_path = log.with_file_name(summary::file_name(name));
        if summary::is_usable(&summary_path, log) {
            return Source::Summary(summary_path);
        }
    }
    Source::Log(log.to_path_buf())
}

/// Gives one line read from `source` to `fold`: a log interval as its counts and its own p99; a
/// summary's bucket line as counts, its `@p99` line as the bucket's largest interval p99.
/// Returns the line's latency tag and sample count when it holds latency counts.
pub(crate) fn visit<'a, F: Fold>(
    source_is_summary: bool,
    grid: &Grid,
    fold: &mut F,
    i: &SparseInterval<'a>,
) -> Option<(&'a str, u64)> {
    let cell = grid.cell_of(i.start_s, i.length_s);
    if source_is_summary && let Some(tag) = i.tag.strip_suffix(P99_SUFFIX) {
        if let Some(top) = i.max() {
            fold.interval_p99(cell, tag, top);
        }
        return None;
    }
    fold.counts(cell, i);
    if !source_is_summary && let Some(p99) = i.value_at_quantile(0.99) {
        fold.interval_p99(cell, i.tag, p99);
    }
    Some((i.tag, i.total))
}

/// The end of the last complete interval of the log at `path`, s from its base time; read from
/// the last 64 KiB of the file only (the length of a run whose run.json does not state it).
pub(crate) fn last_interval_end_s(path: &Path) -> Option<f64> {
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use std::io::{Read, Seek, SeekFrom};
    let mut file = crate::input::open_result_file(path).ok()?;
    let size = file.metadata().ok()?.len();
    let from = size.saturating_sub(64 << 10);
    file.seek(SeekFrom::Start(from)).ok()?;
    let mut tail = Vec::new();
    file.take(64 << 10).read_to_end(&mut tail).ok()?;
    // From the first line start (the first bytes may be the end of a line) to the last line end.
    let begin = if from == 0 {
        0
    } else {
        tail.iter().position(|&b| b == b'\n')? + 1
    };
    let (whole, _) = crate::format::hlog_scan::complete_lines(&tail[begin..]);
    IntervalLogIterator::new(whole)
        .filter_map(|e| match e {
            Ok(LogEntry::Interval(i)) => {
                Some(i.start_timestamp().as_secs_f64() + i.duration().as_secs_f64())
            }
            _ => None,
        })
        .reduce(f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_divide_short_runs_evenly_and_long_runs_in_whole_buckets() {
        // An hour in 4800 cells: 0.75 s each, no summaries.
        let g = Grid::new(3600.0, 4800);
        assert_eq!((g.cell_s, g.cells, g.whole_buckets), (0.75, 4800, false));
        // 30 days in 4800 cells: 540 s, 9 buckets.
        let g = Grid::new(30.0 * 86_400.0, 4800);
        assert_eq!((g.cell_s, g.cells, g.whole_buckets), (540.0, 4800, true));
        assert_eq!(g.cells_per_column(800), 6);
        // 7 days in about 1000 cells: 604.8 s rounds to 600 s (10 buckets), 1008 cells.
        let g = Grid::new(7.0 * 86_400.0, 1000);
        assert_eq!((g.cell_s, g.cells, g.whole_buckets), (600.0, 1008, true));
        // 3 days in about 4800: 54 s rounds up to one bucket, 4320 cells.
        let g = Grid::new(3.0 * 86_400.0, 4800);
        assert_eq!((g.cell_s, g.cells, g.whole_buckets), (60.0, 4320, true));
        // The middle picks the cell; past the end is the last cell.
        let g = Grid::new(7.0 * 86_400.0, 1000);
        assert_eq!(g.cell_of(599.0, 1.0), 0);
        assert_eq!(g.cell_of(599.6, 1.0), 1);
        assert_eq!(g.cell_of(1e9, 1.0), 1007);
    }
}

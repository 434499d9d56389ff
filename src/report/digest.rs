//! What the report needs from a result directory (read by `results::loaded`, the one reader),
//! digested in one streaming pass and kept small:
//! run.json as it is, the events as `report::events_digest` keeps them (streamed, bounded),
//! and per hlog tag the whole run's histogram and, per
//! time cell (about [`CELLS`] over the run, `results::cells`), the largest latency, the
//! largest per-interval 99th percentile and the counts in coarse log-latency rows for the heat
//! map. Memory is bounded by the cells, not the run's length: at most about 9 MiB per tag and
//! reading thread (up to 9600 cells of 120 rows), a month as an hour; a long run's summaries are read
//! in place of its log where the cells are whole summary buckets.

use crate::analysis::phase;
use crate::format::hlog::parse_tag;
use crate::format::hlog_scan::SparseInterval;
use crate::format::run_record::RunRecord;
use crate::format::stats::new_histogram;
use crate::report::events_digest::{self, EventsDigest};
use crate::results::cells::{Fold, Grid, tag_order};
use crate::results::loaded;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The time cells a series is read into (up to twice as many once cells are whole minutes,
/// `results::cells::Grid`): 6 per column of the timeline (800 columns), 20 per column of the
/// heat map (240), so that every column is made of whole cells.
pub(crate) const CELLS: usize = 4800;

/// Rows of the heat map per decade of latency.
pub(crate) const ROWS_PER_DECADE: u32 = 10;
/// Rows cover 1 ns to 10^12 ns (1000 s); values of 0 go to the first row.
pub(crate) const ROWS: usize = 12 * ROWS_PER_DECADE as usize;

/// The lower edge of heat-map row `row`, ns.
pub(crate) fn row_floor_ns(row: usize) -> f64 {
    10f64.powf(row as f64 / ROWS_PER_DECADE as f64)
}

/// The row edges as integers: a value v is in row r when EDGES[r] <= v < EDGES[r + 1] (the
/// scan compares millions of values; no floating point in that loop).
static ROW_EDGES: std::sync::LazyLock<Vec<u64>> =
    std::sync::LazyLock::new(|| (0..=ROWS).map(|r| row_floor_ns(r).ceil() as u64).collect());

/// The heat-map row of a value, ns (values of 0 go to the first row, values past the last
/// row's edge to the last).
pub(crate) fn row_of(value_ns: u64) -> usize {
    ROW_EDGES
        .partition_point(|&edge| edge <= value_ns)
        .clamp(1, ROWS)
        - 1
}

/// One time cell of one tag: the intervals whose middle falls in it (one interval when the run
/// has no more intervals than cells).
#[derive(Debug, Clone, Copy)]
pub(crate) struct IntervalPoint {
    /// The cell's index in the run's [`Grid`].
    pub cell: usize,
    /// The first interval's start, and the span to the last one's end.
    pub start_s: f64,
    pub length_s: f64,
    /// The wakeups in the cell: checked by the bounded-memory tests against the plain
    /// computation; no view draws it yet.
    #[cfg_attr(not(test), expect(dead_code, reason = "read by the tests only"))]
    pub samples: u64,
    /// The largest latency, and the largest of the intervals' 99th percentiles (HDR
    /// precision), ns; None when empty.
    pub max_ns: Option<u64>,
    pub p99_ns: Option<u64>,
    /// This cell's (row, count) pairs in [`SeriesDigest::rows`].
    rows_from: u32,
    rows_to: u32,
}

/// Everything about one hlog tag (one measuring thread, or its timer IRQ latency).
#[derive(Debug, Clone)]
pub(crate) struct SeriesDigest {
    pub tag: String,
    /// "CPU 1" or "CPU 1 timer IRQ".
    pub label: String,
    pub cpu: Option<usize>,
    /// Timer IRQ latency (`cpuN.irq`) rather than wakeup latency.
    pub irq: bool,
    /// The whole run's histogram.
    pub histogram: Histogram<u64>,
    /// The cells holding intervals, in time order.
    pub intervals: Vec<IntervalPoint>,
    /// The cells the intervals were read into.
    pub(crate) grid: Grid,
    rows: Vec<(u8, u32)>,
}

/// One cell being filled.
#[derive(Debug, Clone)]
struct CellAcc {
    start_s: f64,
    end_s: f64,
    samples: u64,
    max_ns: Option<u64>,
    p99_ns: Option<u64>,
    rows: Box<[u64; ROWS]>,
}

impl CellAcc {
    fn new(start_s: f64, end_s: f64) -> Self {
        CellAcc {
            start_s,
            end_s,
            samples: 0,
            max_ns: None,
            p99_ns: None,
            rows: Box::new([0; ROWS]),
        }
    }

    fn absorb(&mut self, other: &CellAcc) {
        self.start_s = self.start_s.min(other.start_s);
        self.end_s = self.end_s.max(other.end_s);
        self.samples += other.samples;
        self.max_ns = self.max_ns.max(other.max_ns);
        self.p99_ns = self.p99_ns.max(other.p99_ns);
        for (mine, theirs) in self.rows.iter_mut().zip(other.rows.iter()) {
            *mine += theirs;
        }
    }
}

/// One tag while the log is read: the whole histogram and the cells holding intervals.
#[derive(Debug, Clone)]
struct SeriesAcc {
    histogram: Histogram<u64>,
    cells: BTreeMap<usize, CellAcc>,
}

impl SeriesAcc {
    fn cell(&mut self, cell: usize, start_s: f64, end_s: f64) -> &mut CellAcc {
        let c = self
            .cells
            .entry(cell)
            .or_insert_with(|| CellAcc::new(start_s, end_s));
        c.start_s = c.start_s.min(start_s);
        c.end_s = c.end_s.max(end_s);
        c
    }
}

/// The report's state while reading a log: per tag, its histogram and cells.
#[derive(Debug, Clone, Default)]
struct Digesting {
    series: BTreeMap<String, SeriesAcc>,
}

impl Digesting {
    fn series(&mut self, tag: &str) -> &mut SeriesAcc {
        if !self.series.contains_key(tag) {
            let acc = SeriesAcc {
                histogram: new_histogram(),
                cells: BTreeMap::new(),
            };
            self.series.insert(tag.to_string(), acc);
        }
        self.series.get_mut(tag).expect("inserted above")
    }
}

impl Fold for Digesting {
    fn counts(&mut self, cell: usize, i: &SparseInterval) {
        let s = self.series(i.tag);
        for &(value, count) in i.counts {
            s.histogram
                .record_n(value, count)
                .expect("auto-resizing histogram");
        }
        let c = s.cell(cell, i.start_s, i.start_s + i.length_s);
        // Counts come in ascending value order, so the row only moves forward.
        let edges = &*ROW_EDGES;
        let mut row = 0usize;
        for &(value, count) in i.counts {
            while row + 1 < ROWS && value >= edges[row + 1] {
                row += 1;
            }
            c.rows[row] += count;
        }
        c.samples += i.total;
        c.max_ns = c.max_ns.max(i.max());
    }

    fn interval_p99(&mut self, cell: usize, tag: &str, p99_ns: u64) {
        let c = self.series(tag).cells.entry(cell);
        let c = c.or_insert_with(|| CellAcc::new(f64::INFINITY, f64::NEG_INFINITY));
        c.p99_ns = c.p99_ns.max(Some(p99_ns));
    }

    fn absorb(&mut self, other: Self) {
        for (tag, theirs) in other.series {
            let mine = self.series(&tag);
            mine.histogram
                .add(&theirs.histogram)
                .expect("histograms share one configuration");
            for (k, c) in theirs.cells {
                match mine.cells.get_mut(&k) {
                    Some(m) => m.absorb(&c),
                    None => {
                        mine.cells.insert(k, c);
                    }
                }
            }
        }
    }
}

impl SeriesDigest {
    /// The series of `tag` from its accumulated cells.
    fn from_cells(tag: &str, acc: SeriesAcc, grid: Grid) -> Self {
        let (cpu, irq) = parse_tag(tag);
        let mut rows = Vec::new();
        let mut intervals = Vec::with_capacity(acc.cells.len());
        for (cell, c) in acc.cells {
            let rows_from = rows.len() as u32;
            rows.extend(
                c.rows
                    .iter()
                    .enumerate()
                    .filter(|(_, n)| **n > 0)
                    .map(|(r, &n)| (r as u8, n.min(u32::MAX as u64) as u32)),
            );
            intervals.push(IntervalPoint {
                cell,
                start_s: c.start_s,
                length_s: (c.end_s - c.start_s).max(0.0),
                max_ns: c.max_ns,
                samples: c.samples,
                p99_ns: c.p99_ns,
                rows_from,
                rows_to: rows.len() as u32,
            });
        }
        SeriesDigest {
            tag: tag.to_string(),
            label: match (cpu, irq) {
                (Some(c), false) => format!("CPU {c}"),
                (Some(c), true) => format!("CPU {c} timer IRQ"),
                _ => tag.to_string(),
            },
            cpu,
            irq,
            histogram: acc.histogram,
            intervals,
            grid,
            rows,
        }
    }

    /// The (row, count) pairs of one cell.
    pub(crate) fn rows_of(&self, p: &IntervalPoint) -> &[(u8, u32)] {
        &self.rows[p.rows_from as usize..p.rows_to as usize]
    }

    /// The end of the last interval, s from the start.
    pub(crate) fn extent_s(&self) -> f64 {
        self.intervals
            .iter()
            .map(|p| p.start_s + p.length_s)
            .fold(0.0, f64::max)
    }
}

/// A run as the report shows it.
#[derive(Debug, Clone)]
pub(crate) struct RunDigest {
    pub path: PathBuf,
    pub record: RunRecord,
    /// What the report shows of the events, bounded (`report::events_digest`).
    pub events: EventsDigest,
    /// One per hlog tag, wakeup latency of each CPU first, in CPU order.
    pub series: Vec<SeriesDigest>,
    /// Whether latency.hlog was present.
    pub(crate) has_hlog: bool,
}

impl RunDigest {
    /// The wakeup-latency series (not the IRQ ones).
    pub(crate) fn wakeup_series(&self) -> impl Iterator<Item = &SeriesDigest> {
        self.series.iter().filter(|s| !s.irq)
    }

    /// The run's length in s: from run.json, else from the intervals.
    pub(crate) fn extent_s(&self) -> f64 {
        extent_s(&self.record, &self.series)
    }

    /// Every wakeup of every CPU in one histogram (for overlays of several runs).
    pub(crate) fn all_cpus_histogram(&self) -> Histogram<u64> {
        let mut h = new_histogram();
        for s in self.wakeup_series() {
            h.add(&s.histogram)
                .expect("histograms share one configuration");
        }
        h
    }

    /// Scenario phases as (label, start s, end s) from the run's start: from run.json's
    /// `phases`, else from PhaseStart/PhaseEnd events (the first
    /// `events_digest::MAX_PHASE_EVENTS`).
    pub(crate) fn phase_spans(&self) -> Vec<(String, f64, f64)> {
        let t0 = self.record.start_monotonic_ns;
        let offset = |ns: u64| ns.saturating_sub(t0) as f64 / 1e9;
        if !self.record.phases.is_empty() {
            return self
                .record
                .phases
                .iter()
                .map(|p| {
                    let (from, to) = phase::span_s(&self.record, p);
                    (p.label.clone(), from, to)
                })
                .collect();
        }
        let mut open: BTreeMap<usize, (String, u64)> = BTreeMap::new();
        let mut out = Vec::new();
        for p in &self.events.phases {
            if p.start {
                open.insert(p.index, (p.label.clone(), p.time_ns));
            } else if let Some((label, start)) = open.remove(&p.index) {
                out.push((label, offset(start), offset(p.time_ns)));
            }
        }
        // A phase still open (a run that was killed) lasts to the end of the data.
        let end = self.extent_s();
        out.extend(
            open.into_values()
                .map(|(label, start)| (label, offset(start), end)),
        );
        out.sort_by(|a, b| a.1.total_cmp(&b.1));
        out
    }
}

/// Reads the result directory at `path` (through the one reader, `results::loaded`), digesting
/// its interval log in one parallel pass into at most [`CELLS`] cells per tag, then its events
/// in one streaming pass (`report::events_digest`: after the log, whose extent the noise
/// columns span). `progress(done, total)` follows the bytes of the log read.
pub(crate) fn read_run(
    path: &Path,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<RunDigest, String> {
    let mut run = loaded::open(path)?;
    crate::session::stale::note_owner(&mut run.record, &run.path);
    let has_hlog = run.has_hlog();
    let grid = run.grid(CELLS)?;
    let digested = run.scan_cells(&grid, Digesting::default, progress)?;
    let mut series: Vec<SeriesDigest> = digested
        .series
        .into_iter()
        .map(|(tag, acc)| SeriesDigest::from_cells(&tag, acc, grid))
        .collect();
    series.sort_by_key(|s| tag_order(&s.tag));
    let mut events = events_digest::Digesting::new(&run.record, extent_s(&run.record, &series));
    let wanted = events.wanted();
    run.scan_events(&|kind| wanted.wants(kind), &mut |e| events.add(e))?;
    let (events, warnings) = events.finish();
    for warning in warnings {
        eprintln!("jitterlab: warning: {warning}");
        run.record.warnings.push(warning);
    }
    Ok(RunDigest {
        path: run.path,
        record: run.record,
        events,
        series,
        has_hlog,
    })
}

/// The run's length in s: from run.json, else from the intervals (see [`RunDigest::extent_s`]).
fn extent_s(record: &RunRecord, series: &[SeriesDigest]) -> f64 {
    let from_intervals = series
        .iter()
        .map(SeriesDigest::extent_s)
        .fold(0.0, f64::max);
    match record.duration_ns {
        Some(ns) => (ns as f64 / 1e9).max(from_intervals),
        None => from_intervals,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::synthetic::{SyntheticPhase, SyntheticRun, write_run};

    #[test]
    fn digest_matches_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let run = SyntheticRun {
            cpus: vec![0, 1],
            interval_ns: 1_000_000,
            log_interval_ns: 100_000_000,
            duration_ns: 5_000_000_000,
            phases: vec![SyntheticPhase {
                label: "load".into(),
                start_offset_ns: 2_000_000_000,
                end_offset_ns: 3_000_000_000,
                loads: vec![],
            }],
            loads: vec![],
            warnings: vec![],
            seed: 3,
        };
        let record = write_run(&dir.path().join("run"), &run, |cpu, t, rng| {
            let spike = cpu == 0 && t == 2_500_000_000;
            if spike {
                3_000_000
            } else {
                10_000 + (rng.uniform() * 5_000.0) as i64
            }
        })
        .unwrap();
        let d = read_run(&dir.path().join("run"), &|_, _| {}).unwrap();
        assert_eq!(d.series.len(), 2);
        assert_eq!(d.series[0].label, "CPU 0");
        assert_eq!(d.series[0].intervals.len(), 50);
        assert_eq!(d.series[0].histogram.len(), 5_000);
        assert_eq!(
            d.series[0].histogram.value_at_quantile(0.99),
            record.threads[0].latency.p99_ns.unwrap()
        );
        let spike = &d.series[0].intervals[25];
        assert_eq!(spike.start_s, 2.5);
        assert!(spike.max_ns.unwrap().abs_diff(3_000_000) < 3_000);
        let rows = d.series[0].rows_of(spike);
        assert_eq!(rows.iter().map(|r| r.1 as u64).sum::<u64>(), 100);
        // 3 ms is in the row starting at 10^6.4 ns = 2.51 ms.
        assert_eq!(rows.last().unwrap().0, 64);
        assert_eq!(d.phase_spans(), vec![("load".to_string(), 2.0, 3.0)]);
        assert_eq!(d.extent_s(), 5.0);
    }
}

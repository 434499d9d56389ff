//! What the report needs from a result directory (read by `results::loaded`, the one reader),
//! digested in one streaming pass and kept small:
//! run.json and the events as they are, and per hlog tag the whole run's histogram, one
//! (max, p99) point per interval, and each interval's counts in coarse log-latency rows for the
//! heat map. A day at 1 s intervals on 2 CPUs is a few tens of MB here instead of the
//! gigabytes the decoded interval histograms would take (see `format::hlog_scan`).

use crate::analysis::phase;
use crate::format::events::Event;
use crate::format::hlog::parse_tag;
use crate::format::hlog_scan::SparseInterval;
use crate::format::run_record::RunRecord;
use crate::format::stats::new_histogram;
use crate::results::loaded;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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

/// One interval of one tag.
#[derive(Debug, Clone, Copy)]
pub struct IntervalPoint {
    pub start_s: f64,
    pub length_s: f64,
    pub samples: u64,
    /// The interval's largest and 99th-percentile latency (HDR precision), ns; None when empty.
    pub max_ns: Option<u64>,
    pub p99_ns: Option<u64>,
    /// This interval's (row, count) pairs in [`SeriesDigest::rows`].
    rows_from: u32,
    rows_to: u32,
}

/// Everything about one hlog tag (one measuring thread, or its timer IRQ latency).
#[derive(Debug, Clone)]
pub struct SeriesDigest {
    pub tag: String,
    /// "CPU 1" or "CPU 1 timer IRQ".
    pub label: String,
    pub cpu: Option<usize>,
    /// Timer IRQ latency (`cpuN.irq`) rather than wakeup latency.
    pub irq: bool,
    /// The whole run's histogram.
    pub histogram: Histogram<u64>,
    pub intervals: Vec<IntervalPoint>,
    rows: Vec<(u8, u32)>,
}

impl SeriesDigest {
    fn new(tag: &str) -> Self {
        let (cpu, irq) = parse_tag(tag);
        SeriesDigest {
            tag: tag.to_string(),
            label: match (cpu, irq) {
                (Some(c), false) => format!("CPU {c}"),
                (Some(c), true) => format!("CPU {c} timer IRQ"),
                _ => tag.to_string(),
            },
            cpu,
            irq,
            histogram: new_histogram(),
            intervals: Vec::new(),
            rows: Vec::new(),
        }
    }

    fn add(&mut self, i: &SparseInterval) {
        let rows_from = self.rows.len() as u32;
        // Counts come in ascending value order, so the row only moves forward.
        let edges = &*ROW_EDGES;
        let mut row = 0usize;
        for &(value, count) in i.counts {
            self.histogram
                .record_n(value, count)
                .expect("auto-resizing histogram");
            while row + 1 < ROWS && value >= edges[row + 1] {
                row += 1;
            }
            let count = count.min(u32::MAX as u64) as u32;
            let this_interval = self.rows.len() as u32 > rows_from;
            match self.rows.last_mut() {
                Some((r, c)) if this_interval && *r as usize == row => *c = c.saturating_add(count),
                _ => self.rows.push((row as u8, count)),
            }
        }
        self.intervals.push(IntervalPoint {
            start_s: i.start_s,
            length_s: i.length_s,
            samples: i.total,
            max_ns: i.max(),
            p99_ns: i.value_at_quantile(0.99),
            rows_from,
            rows_to: self.rows.len() as u32,
        });
    }

    /// Appends `later`, which holds the intervals that follow this one's in the file.
    fn append(&mut self, later: SeriesDigest) {
        let offset = self.rows.len() as u32;
        self.histogram
            .add(&later.histogram)
            .expect("histograms share one configuration");
        self.intervals
            .extend(later.intervals.into_iter().map(|p| IntervalPoint {
                rows_from: p.rows_from + offset,
                rows_to: p.rows_to + offset,
                ..p
            }));
        self.rows.extend(later.rows);
    }

    /// The (row, count) pairs of one interval.
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
    pub events: Vec<Event>,
    /// One per hlog tag, wakeup latency of each CPU first, in CPU order.
    pub series: Vec<SeriesDigest>,
    /// Whether latency.hlog was present.
    pub has_hlog: bool,
}

impl RunDigest {
    /// The wakeup-latency series (not the IRQ ones).
    pub(crate) fn wakeup_series(&self) -> impl Iterator<Item = &SeriesDigest> {
        self.series.iter().filter(|s| !s.irq)
    }

    /// The run's length in s: from run.json, else from the intervals.
    pub(crate) fn extent_s(&self) -> f64 {
        let from_intervals = self
            .series
            .iter()
            .map(SeriesDigest::extent_s)
            .fold(0.0, f64::max);
        match self.record.duration_ns {
            Some(ns) => (ns as f64 / 1e9).max(from_intervals),
            None => from_intervals,
        }
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
    /// `phases`, else from PhaseStart/PhaseEnd events.
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
        for e in &self.events {
            match e {
                Event::PhaseStart {
                    time_ns,
                    index,
                    label,
                    ..
                } => {
                    open.insert(*index, (label.clone(), *time_ns));
                }
                Event::PhaseEnd { time_ns, index, .. } => {
                    if let Some((label, start)) = open.remove(index) {
                        out.push((label, offset(start), offset(*time_ns)));
                    }
                }
                _ => {}
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
/// its interval log in one parallel pass. `progress(done, total)` follows the hlog bytes.
pub(crate) fn read_run(
    path: &Path,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<RunDigest, String> {
    let mut run = loaded::open(path)?;
    let has_hlog = run.has_hlog();
    let chunks = run.scan_intervals(
        BTreeMap::<String, SeriesDigest>::new,
        |acc, i| {
            if !acc.contains_key(i.tag) {
                acc.insert(i.tag.to_string(), SeriesDigest::new(i.tag));
            }
            acc.get_mut(i.tag).expect("inserted above").add(i);
        },
        progress,
    )?;
    let mut merged: BTreeMap<String, SeriesDigest> = BTreeMap::new();
    for chunk in chunks {
        for (tag, s) in chunk {
            match merged.get_mut(&tag) {
                Some(earlier) => earlier.append(s),
                None => {
                    merged.insert(tag, s);
                }
            }
        }
    }
    let mut series: Vec<SeriesDigest> = merged.into_values().collect();
    series.sort_by_key(|s| (s.cpu.unwrap_or(usize::MAX), s.irq, s.tag.clone()));
    Ok(RunDigest {
        path: run.path,
        record: run.record,
        events: run.events,
        series,
        has_hlog,
    })
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

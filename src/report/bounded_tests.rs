//! A long run read the bounded way (its summary, in time cells) gives the figures of the exact
//! way: every interval of the log, decoded by the hdrhistogram crate's own deserializer and
//! folded by brute force. Two days of 10 s intervals (1 s period), long enough that the report's
//! cells are whole summary buckets (60 s) and the summary is read instead of the log.

use crate::format::hlog;
use crate::format::stats::new_histogram;
use crate::format::summary;
use crate::report::digest::{CELLS, ROWS, RunDigest, SeriesDigest, read_run, row_of};
use crate::report::plot::{heatmap, phase_pdf, timeline};
use crate::results::loaded;
use crate::results::synthetic::{SyntheticPhase, SyntheticRun, write_run};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::path::Path;

const S: u64 = 1_000_000_000;
const HOURS: u64 = 48;

/// A 48 h, 2-CPU run: a log-normal-ish body, rare late wakeups that move with the phase, and a
/// 3 ms stall on CPU 1 every 47 minutes; phases of 12 h (whole buckets) and one of 11 h 59 min 30 s
/// ending mid-bucket.
fn long_run(dir: &Path) {
    let phase = SyntheticPhase::seconds;
    let h = 3600;
    let run = SyntheticRun {
        cpus: vec![0, 1],
        interval_ns: S,
        log_interval_ns: 10 * S,
        duration_ns: HOURS * 3600 * S,
        phases: vec![
            phase("idle", 0, 12 * h),
            phase("load", 12 * h, 24 * h),
            phase("odd", 24 * h, 36 * h - 30),
        ],
        loads: vec![],
        warnings: vec![],
        seed: 7,
    };
    write_run(dir, &run, |cpu, t, rng| {
        let mut ns = 8_000.0 + 4_000.0 * rng.uniform() + 2_000.0 * rng.normal().abs();
        let late = if (12 * 3600 * S..24 * 3600 * S).contains(&t) {
            0.02
        } else {
            0.003
        };
        if rng.uniform() < late {
            ns += 30_000.0 + rng.uniform() * 400_000.0;
        }
        if cpu == 1 && t % (47 * 60 * S) < 10 * S {
            ns += 3_000_000.0;
        }
        ns as i64
    })
    .unwrap();
}

/// Reads the run, returning the digest and the bytes the reader went through.
fn digest(dir: &Path) -> (RunDigest, u64) {
    let total = std::sync::atomic::AtomicU64::new(0);
    let d = read_run(dir, &|_, t| {
        total.store(t, std::sync::atomic::Ordering::Relaxed)
    })
    .unwrap();
    (d, total.into_inner())
}

#[test]
fn a_long_run_read_from_its_summary_gives_the_exact_figures() {
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("run");
    long_run(&dir);
    let log = dir.join(hlog::FILE_NAME);
    let summary_path = dir.join(summary::file_name(hlog::FILE_NAME));
    assert!(summary::is_usable(&summary_path, &log));

    let (bounded, bounded_bytes) = digest(&dir);
    let grid = bounded.series[0].grid;
    assert!(grid.whole_buckets && grid.cells <= CELLS, "{grid:?}");
    let compared = loaded::load(&dir).unwrap();

    // The same run without its summary: every interval of the log is read.
    std::fs::rename(&summary_path, base.path().join("kept-summary")).unwrap();
    let (from_log, log_bytes) = digest(&dir);
    assert!(
        bounded_bytes * 2 < log_bytes,
        "the summary ({bounded_bytes} bytes) was read instead of the log ({log_bytes} bytes)"
    );
    let compared_from_log = loaded::load(&dir).unwrap();
    assert_eq!(compared.intervals, compared_from_log.intervals);

    let (exact, whole) = exact_intervals(&log);
    assert_eq!(bounded.series.len(), 2);
    for (b, l) in bounded.series.iter().zip(&from_log.series) {
        assert_eq!(b.tag, l.tag);
        assert_eq!(b.histogram, l.histogram, "{}", b.tag);
        check_cells_against_the_log(b, &exact, &whole[&b.tag]);
        assert_eq!(b.intervals.len(), l.intervals.len());
        for (p, q) in b.intervals.iter().zip(&l.intervals) {
            assert_eq!(
                (p.cell, p.samples, p.max_ns, p.p99_ns),
                (q.cell, q.samples, q.max_ns, q.p99_ns)
            );
            assert!((p.start_s - q.start_s).abs() < 1e-6 && (p.length_s - q.length_s).abs() < 1e-6);
            assert_eq!(b.rows_of(p), l.rows_of(q));
        }
        let extent = bounded.extent_s();
        assert_eq!(
            heatmap::prepare(b, extent).cells,
            heatmap::prepare(l, extent).cells
        );
        let phases = bounded.phase_spans();
        assert_eq!(
            phase_pdf::prepare(b, &phases),
            phase_pdf::prepare(l, &phases)
        );
    }
    let series = |d: &RunDigest| -> Vec<_> {
        let t = timeline::prepare(
            &d.series.iter().collect::<Vec<_>>(),
            d.extent_s(),
            d.phase_spans(),
            vec![],
        );
        t.tracks.into_iter().map(|t| (t.points, t.worst)).collect()
    };
    assert_eq!(series(&bounded), series(&from_log));
    check_timeline_against_the_log(&bounded, &exact);
}

/// One interval of the log as the exact way sees it: decoded by the hdrhistogram crate.
struct Exact {
    tag: String,
    start_s: f64,
    length_s: f64,
    samples: u64,
    max: Option<u64>,
    p99: Option<u64>,
    /// Samples per heat-map row.
    rows: Vec<u64>,
}

/// Every interval of the log, decoded one by one with the hdrhistogram crate's deserializer
/// (not `format::hlog_scan`), and the whole run's histogram of each tag.
fn exact_intervals(log: &Path) -> (Vec<Exact>, BTreeMap<String, Histogram<u64>>) {
    use hdrhistogram::serialization::Deserializer;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    let bytes = std::fs::read(log).unwrap();
    let mut deserializer = Deserializer::new();
    let (mut out, mut whole) = (Vec::new(), BTreeMap::<String, Histogram<u64>>::new());
    for entry in IntervalLogIterator::new(&bytes) {
        let LogEntry::Interval(i) = entry.unwrap() else {
            continue;
        };
        let encoded = base64::Engine::decode(
            &base64::engine::general_purpose::STANDARD,
            i.encoded_histogram(),
        )
        .unwrap();
        let h: Histogram<u64> = deserializer.deserialize(&mut encoded.as_slice()).unwrap();
        let tag = i.tag().unwrap().as_str().to_string();
        let mut rows = vec![0u64; ROWS];
        for v in h.iter_recorded() {
            rows[row_of(v.value_iterated_to())] += v.count_at_value();
        }
        let non_empty = !h.is_empty();
        out.push(Exact {
            tag: tag.clone(),
            start_s: i.start_timestamp().as_secs_f64(),
            length_s: i.duration().as_secs_f64(),
            samples: h.len(),
            max: non_empty.then(|| h.max()),
            p99: non_empty.then(|| h.value_at_quantile(0.99)),
            rows,
        });
        whole
            .entry(tag)
            .or_insert_with(new_histogram)
            .add(&h)
            .unwrap();
    }
    (out, whole)
}

/// Each cell holds exactly the intervals whose middle falls in it: their counts (every one, in
/// the heat map's rows), their largest latency and their largest 99th percentile; the whole
/// run's histogram holds every count.
fn check_cells_against_the_log(s: &SeriesDigest, exact: &[Exact], whole: &Histogram<u64>) {
    let mut by_cell: BTreeMap<usize, Vec<&Exact>> = BTreeMap::new();
    for i in exact.iter().filter(|i| i.tag == s.tag) {
        by_cell
            .entry(s.grid.cell_of(i.start_s, i.length_s))
            .or_default()
            .push(i);
    }
    assert_eq!(by_cell.len(), s.intervals.len(), "{}: cells", s.tag);
    for p in &s.intervals {
        let inside = &by_cell[&p.cell];
        let samples: u64 = inside.iter().map(|i| i.samples).sum();
        let max = inside.iter().filter_map(|i| i.max).max();
        let p99 = inside.iter().filter_map(|i| i.p99).max();
        let label = format!("{} cell {}", s.tag, p.cell);
        assert_eq!(
            (p.samples, p.max_ns, p.p99_ns),
            (samples, max, p99),
            "{label}"
        );
        let mut rows = vec![0u64; ROWS];
        for i in inside {
            for (r, n) in i.rows.iter().enumerate() {
                rows[r] += n;
            }
        }
        let got: Vec<(usize, u64)> = s
            .rows_of(p)
            .iter()
            .map(|&(r, n)| (r as usize, n as u64))
            .collect();
        let want: Vec<(usize, u64)> = rows
            .iter()
            .enumerate()
            .filter(|r| *r.1 > 0)
            .map(|(r, &n)| (r, n))
            .collect();
        assert_eq!(got, want, "{label}");
    }
    assert_eq!(whole, &s.histogram, "{}: the whole run", s.tag);
}

/// The timeline's columns are whole cells: each holds the largest max and the largest p99 of
/// the intervals whose middle falls in its time.
fn check_timeline_against_the_log(d: &RunDigest, exact: &[Exact]) {
    let series: Vec<_> = d.series.iter().collect();
    let t = timeline::prepare(&series, d.extent_s(), vec![], vec![]);
    let column_s = t.column_s.expect("a long run is drawn in columns");
    let grid = series[0].grid;
    let per_column = grid.cells_per_column(timeline::COLUMNS);
    assert_eq!(column_s, grid.cell_s * per_column as f64);
    for (track, s) in t.tracks.iter().zip(&series) {
        let mut columns: BTreeMap<usize, (u64, u64)> = BTreeMap::new();
        for i in exact.iter().filter(|i| i.tag == s.tag) {
            if let (Some(max), Some(p99)) = (i.max, i.p99) {
                let c = columns
                    .entry(grid.cell_of(i.start_s, i.length_s) / per_column)
                    .or_insert((0, 0));
                *c = (c.0.max(max), c.1.max(p99));
            }
        }
        let want: Vec<(u64, u64)> = columns.into_values().collect();
        let got: Vec<(u64, u64)> = track.points.iter().map(|p| (p.max_ns, p.p99_ns)).collect();
        assert_eq!(got, want, "{}", s.tag);
    }
}

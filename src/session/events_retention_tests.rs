//! The events of a segmented run under the segments' retention, against synthetic segments:
//! the real segment writer (`recorder::segments`) and the real event writer, fed known
//! intervals and events. Retention by age and by size deletes the old event files with their
//! segments and never an event of a segment kept; the one reader (`results::loaded`) returns
//! every kept event in the order written.

use super::*;
use crate::format::hlog::HlogWriter;
use crate::format::stats::new_histogram;
use crate::plan::{Retain, SegmentPlan};
use crate::recorder::segments::Segments;
use crate::results::loaded;
use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, SystemTime};

const S: u64 = 1_000_000_000;
/// The synthetic run's first due time on CLOCK_MONOTONIC.
const START_MONO: u64 = 5_000 * S;
/// Segments of 2 s; 1 s intervals of one tag; 40 s of run.
const LENGTH: u64 = 2 * S;
const SECONDS: u64 = 40;

/// An explanation-sized event (~650 bytes, as a `spike_explained` is) at `time_ns`.
fn event(time_ns: u64) -> Event {
    Event::Warning {
        time_ns,
        message: format!("{time_ns} {}", "x".repeat(600)),
    }
}

fn event_indexes(dir: &Path) -> BTreeSet<u64> {
    files_by(dir, crate::format::segments::parse_events_file_name)
}

fn segment_indexes(dir: &Path) -> BTreeSet<u64> {
    files_by(dir, crate::format::segments::parse_file_name)
}

fn files_by(dir: &Path, parse: fn(&str) -> Option<u64>) -> BTreeSet<u64> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| parse(e.unwrap().file_name().to_str()?))
        .collect()
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

/// Writes `SECONDS` of 1 s intervals (100 samples each) and, after each, 20 events spread over
/// its second plus one late (its time 1.5 s back, possibly in the previous segment), starting
/// `ago` before now (the wall clock retention by age judges by). After each write, `check`
/// sees the directory. Returns the times of the events written, in order.
fn write_run(
    dir: &ResultDir,
    retain: Retain,
    ago: Duration,
    mut check: impl FnMut(&Path),
) -> Vec<u64> {
    let plan = SegmentPlan {
        length_ns: LENGTH,
        retain,
    };
    let ledger = SegmentLedger::new(&plan);
    let mut hlog = HlogWriter::to(Box::new(Segments::new(
        dir.clone(),
        plan,
        1,
        ledger.clone(),
    )));
    hlog.begin(SystemTime::now() - ago, "t").unwrap();
    let sink = EventSink::Segmented {
        dir: dir.clone(),
        length_ns: LENGTH,
        ledger,
    };
    let mut events = EventWriter::new(sink, START_MONO);
    let mut written = Vec::new();
    let mut h = new_histogram();
    for v in 1..=100 {
        h.record(v * 1000).unwrap();
    }
    for second in 0..SECONDS {
        let secs = Duration::from_secs(second);
        hlog.write_interval("cpu0", secs, Duration::from_secs(1), &h)
            .unwrap();
        let mut times: Vec<u64> = (0..20)
            .map(|k| START_MONO + second * S + k * S / 20)
            .collect();
        times.push((START_MONO + second * S).saturating_sub(3 * S / 2));
        for t in times {
            events.write(&event(t));
            written.push(t);
        }
        check(dir.path.as_path());
    }
    written
}

/// What the reader must return: every event written whose file is still there, in order; and
/// no event of a kept segment missing.
fn check_kept(dir: &Path, written: &[u64]) {
    let segments = segment_indexes(dir);
    let oldest = *segments.first().unwrap();
    let files = event_indexes(dir);
    assert!(
        files.iter().all(|&k| k >= oldest),
        "event files {files:?} older than the oldest segment {oldest}"
    );
    let read: Vec<u64> = loaded::read_events(dir)
        .unwrap()
        .iter()
        .map(Event::time_ns)
        .collect();
    // Each event is in the file of its own segment or a later one, and files move forward:
    // the events kept are those written since the first into the oldest file kept.
    let own = |t: u64| crate::format::segments::index_at(t, START_MONO, LENGTH);
    let first_kept = written
        .iter()
        .position(|&t| own(t) >= oldest)
        .expect("a kept segment has events");
    let read_set: BTreeSet<u64> = read.iter().copied().collect();
    for &t in written.iter().filter(|&&t| own(t) >= oldest) {
        assert!(
            read_set.contains(&t),
            "event at {t} of kept segment {} lost",
            own(t)
        );
    }
    assert_eq!(
        read,
        written[first_kept.saturating_sub(1)..]
            .iter()
            .copied()
            .filter(|t| read_set.contains(t))
            .collect::<Vec<_>>(),
        "in the order written"
    );
    assert!(
        read.iter().all(|&t| own(t) + 1 >= oldest),
        "nothing much older kept"
    );
}

/// Retention by age (10 s, a run started 40 s ago): segments whose end is over 10 s ago go,
/// and their event files with them, as they are sealed.
#[test]
fn retention_by_age_deletes_old_event_files_with_their_segments() {
    let base = tempfile::tempdir().unwrap();
    let dir = ResultDir::create(&base.path().join("run"), "--out")
        .unwrap()
        .keep();
    let written = write_run(
        &dir,
        Retain::Age(10 * S),
        Duration::from_secs(SECONDS),
        |d| {
            let oldest = *segment_indexes(d).first().unwrap();
            assert!(event_indexes(d).iter().all(|&k| k >= oldest), "{d:?}");
        },
    );
    // Segment k ends at 2(k+1) s: kept when 2(k+1) + 10 >= 40, so from segment 14 on (a few
    // ms of slack for the test's own time at the edge).
    let segments = segment_indexes(&dir.path);
    assert!(
        (14..=15).contains(segments.first().unwrap()),
        "{segments:?}"
    );
    assert_eq!(*segments.last().unwrap(), 19);
    assert_eq!(
        event_indexes(&dir.path),
        segments,
        "one event file per segment"
    );
    check_kept(&dir.path, &written);
}

/// Retention by size (96 KiB, where the events alone take ~13 KB a second): after every write
/// the directory is within the limit and one segment's worth; the events of the segments kept
/// are all there; nothing is kept forever.
#[test]
fn retention_by_size_counts_and_deletes_the_event_files() {
    let base = tempfile::tempdir().unwrap();
    let dir = ResultDir::create(&base.path().join("run"), "--out")
        .unwrap()
        .keep();
    let limit = 96 * 1024;
    let mut largest = 0;
    let written = write_run(&dir, Retain::Bytes(limit), Duration::ZERO, |d| {
        largest = largest.max(dir_bytes(d));
    });
    // A segment of 2 s with its events: ~2 x 21 x 650 bytes of events, ~1 KB of log.
    let segment = 2 * 21 * 700 + 4 * 1024;
    assert!(
        largest <= limit + segment,
        "the directory reached {largest} bytes, limit {limit}"
    );
    let segments = segment_indexes(&dir.path);
    assert!(
        *segments.first().unwrap() > 5,
        "retention deleted: {segments:?}"
    );
    assert!(segments.len() >= 2, "{segments:?}");
    assert_eq!(event_indexes(&dir.path), segments);
    check_kept(&dir.path, &written);
}

/// Forever: every event is read back, in order, from one file per segment.
#[test]
fn kept_forever_every_event_reads_back_in_order() {
    let base = tempfile::tempdir().unwrap();
    let dir = ResultDir::create(&base.path().join("run"), "--out")
        .unwrap()
        .keep();
    let written = write_run(&dir, Retain::Forever, Duration::ZERO, |_| {});
    assert_eq!(event_indexes(&dir.path), (0..20).collect());
    let read: Vec<u64> = loaded::read_events(&dir.path)
        .unwrap()
        .iter()
        .map(Event::time_ns)
        .collect();
    assert_eq!(read, written);
}

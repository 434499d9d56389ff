//! The interval log of a continuous run in segments with retention (`RunPlan::segments`): the
//! directory stays within its size limit at every segment, retention deletes the oldest
//! segments, and the one reader (report, compare, export) reads the segments left as one run,
//! with sample counts equal to the sum over the kept segments, a torn last segment warned about
//! and a segment gone while reading tolerated.

use crate::common;

use clap::Parser;
use common::{exclusive, jitterlab, realtime_available, temp_out, text, write_known_run};
use jitterlab::cli::{Cli, Command};
use jitterlab::format::hlog::{self, HlogWriter};
use jitterlab::format::segments::{file_name, parse_file_name};
use jitterlab::plan::{Retain, RunLength, SegmentPlan};
use jitterlab::recorder::segments::{SegmentLedger, Segments};
use jitterlab::results::{ResultDir, loaded};
use jitterlab::session::{DRAIN_EVERY, Session, SessionOptions};
use jitterlab::units::format_ns;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

const S: u64 = 1_000_000_000;

/// The segment files in `dir`, by index.
fn segment_files(dir: &Path) -> BTreeMap<u64, PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let e = e.unwrap();
            Some((parse_file_name(e.file_name().to_str()?)?, e.path()))
        })
        .collect()
}

/// The bytes of the regular files in `dir` (what `--retain-size` bounds).
fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok()?.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

/// Samples per tag in a set of log files, each read on its own with the hdrhistogram crate's
/// deserializer (so each segment is checked to be a complete log by itself).
fn samples_per_tag<'a>(files: impl Iterator<Item = &'a PathBuf>) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for f in files {
        for i in hlog::read_intervals(f).unwrap() {
            *out.entry(i.tag).or_default() += i.histogram.len();
        }
    }
    out
}

/// Known intervals (a synthetic run of 2 CPUs, 40 s of 1 s intervals, 1000 samples each)
/// rewritten as 2 s segments with a size limit: after every sealed segment the directory is
/// within the limit and the segments present are the newest, contiguous; at the end the
/// reader's sample counts are the sum over the kept segments, and it says what they cover.
#[test]
fn size_retention_keeps_the_newest_segments_within_the_limit() {
    let base = tempfile::tempdir().unwrap();
    let known = base.path().join("known");
    let mut record = write_known_run(&known, &[0, 1], 40, 1000, common::uniform_10_50, 7, 0);
    let intervals = hlog::read_intervals(&known.join(hlog::FILE_NAME)).unwrap();
    assert_eq!(intervals.len(), 80);

    let out = base.path().join("segmented");
    let dir = ResultDir::create(&out, "--out").unwrap().keep();
    let limit = 64 * 1024;
    let plan = SegmentPlan {
        length_ns: 2 * S,
        retain: Retain::Bytes(limit),
    };
    let ledger = SegmentLedger::new(&plan);
    record.segments = Some(ledger.record());
    dir.write_first_run_record(&record).unwrap();
    let mut writer = HlogWriter::to(Box::new(Segments::new(
        dir.clone(),
        plan,
        2,
        ledger.clone(),
    )));
    writer
        .begin(
            SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000),
            "t",
        )
        .unwrap();
    let mut oldest_seen = 0;
    let mut boundaries = 0;
    for i in &intervals {
        writer
            .write_interval(
                &i.tag,
                Duration::from_secs_f64(i.start_s),
                Duration::from_secs_f64(i.length_s),
                &i.histogram,
            )
            .unwrap();
        if let Some(update) = ledger.take_update() {
            boundaries += 1;
            record.segments = Some(update);
            dir.write_first_run_record(&record).unwrap();
            let bytes = dir_bytes(&out);
            assert!(
                bytes <= limit,
                "{bytes} bytes in the directory, limit {limit}"
            );
            let present: Vec<u64> = segment_files(&out).into_keys().collect();
            let (first, last) = (present[0], *present.last().unwrap());
            assert_eq!(
                present,
                (first..=last).collect::<Vec<_>>(),
                "the oldest go first"
            );
            assert!(first >= oldest_seen, "a deleted segment came back");
            oldest_seen = first;
        }
    }
    drop(writer);
    record.segments = Some(ledger.record());
    dir.write_first_run_record(&record).unwrap();
    assert!(boundaries >= 20, "{boundaries} updates for 20 segments");

    let kept = segment_files(&out);
    let segments = record.segments.as_ref().unwrap();
    assert!(segments.deleted > 0, "the limit made retention delete");
    assert_eq!(
        segments.deleted + kept.len() as u64,
        20,
        "20 segments of 2 s"
    );
    assert_eq!(
        kept.keys().copied().collect::<Vec<_>>(),
        segments.files.iter().map(|f| f.index).collect::<Vec<_>>(),
        "run.json lists the files there are"
    );
    assert_eq!(*kept.keys().last().unwrap(), 19);
    // Each segment holds the intervals of its own 2 s: 2 intervals per CPU of 1000 samples.
    for (k, path) in &kept {
        let back = hlog::read_intervals(path).unwrap();
        assert_eq!(back.len(), 4, "segment {k}");
        for i in back {
            assert_eq!(
                i.start_s as u64 / 2,
                *k,
                "interval at {} s in segment {k}",
                i.start_s
            );
            assert_eq!(i.histogram.len(), 1000);
        }
    }

    let expected = samples_per_tag(kept.values());
    let run = loaded::load(&out).unwrap();
    for (tag, n) in &expected {
        assert_eq!(run.merged_histogram(tag).unwrap().len(), *n, "{tag}");
    }
    assert_eq!(expected["cpu0"], 1000 * 2 * kept.len() as u64);
    let first = kept.keys().next().unwrap();
    let coverage = format!(
        "covers {} to {} of the run",
        format_ns(first * 2 * S),
        format_ns(40 * S)
    );
    assert!(
        run.record.warnings.iter().any(|w| w.contains(&coverage)),
        "{:?}",
        run.record.warnings
    );

    // The commands read it as one run.
    let report = base.path().join("report.html");
    let o = jitterlab(&[
        "report",
        out.to_str().unwrap(),
        "-o",
        report.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("deleted by retention"), "{}", text(&o));
}

/// Age retention keeps the segments that ended within the age: with 1 min segments of a run
/// that started 59.5 min ago and `Retain::Age(10 min)`, the segments that ended more than 10 min
/// ago (segment k ends k + 1 min after the start) are deleted as soon as the next one is sealed.
#[test]
fn age_retention_deletes_what_ended_before_the_age() {
    let base = tempfile::tempdir().unwrap();
    let out = base.path().join("run");
    let dir = ResultDir::create(&out, "--out").unwrap().keep();
    let plan = SegmentPlan {
        length_ns: 60 * S,
        retain: Retain::Age(600 * S),
    };
    let ledger = SegmentLedger::new(&plan);
    let mut writer = HlogWriter::to(Box::new(Segments::new(dir, plan, 1, ledger.clone())));
    writer
        .begin(SystemTime::now() - Duration::from_secs(3570), "t")
        .unwrap();
    let mut h = jitterlab::format::stats::new_histogram();
    h.record(10_000).unwrap();
    for minute in 0..60 {
        writer
            .write_interval(
                "cpu0",
                Duration::from_secs(minute * 60),
                Duration::from_secs(60),
                &h,
            )
            .unwrap();
    }
    // Segments 0..=58 are sealed; those ending more than 10 min ago (k + 1 < 49.5) are gone.
    let kept: Vec<u64> = segment_files(&out).into_keys().collect();
    assert_eq!(kept, (49..60).collect::<Vec<_>>());
    assert_eq!(ledger.record().deleted, 49);
}

/// A torn last segment (a run killed mid-write) is read without its torn line, with a warning
/// naming that file; a segment deleted between listing and reading is skipped, not an error.
#[test]
fn a_torn_last_segment_is_warned_about_and_a_vanished_one_skipped() {
    let base = tempfile::tempdir().unwrap();
    let known = base.path().join("known");
    let mut record = write_known_run(&known, &[0], 6, 100, common::uniform_10_50, 3, 0);
    let intervals = hlog::read_intervals(&known.join(hlog::FILE_NAME)).unwrap();
    let out = base.path().join("segmented");
    let dir = ResultDir::create(&out, "--out").unwrap().keep();
    let plan = SegmentPlan {
        length_ns: 2 * S,
        retain: Retain::Forever,
    };
    let ledger = SegmentLedger::new(&plan);
    record.segments = Some(ledger.record());
    dir.write_first_run_record(&record).unwrap();
    let mut writer = HlogWriter::to(Box::new(Segments::new(dir, plan, 1, ledger)));
    writer.begin(SystemTime::UNIX_EPOCH, "t").unwrap();
    for i in &intervals {
        writer
            .write_interval(
                &i.tag,
                Duration::from_secs_f64(i.start_s),
                Duration::from_secs_f64(i.length_s),
                &i.histogram,
            )
            .unwrap();
    }
    drop(writer);
    let last = out.join(file_name(2));
    let mut bytes = std::fs::read(&last).unwrap();
    // Half of the last interval line, as a kill in the middle of a write leaves it.
    let line_start = bytes[..bytes.len() - 1]
        .iter()
        .rposition(|&b| b == b'\n')
        .unwrap()
        + 1;
    bytes.truncate(line_start + (bytes.len() - line_start) / 2);
    std::fs::write(&last, &bytes).unwrap();

    let run = loaded::load(&out).unwrap();
    assert_eq!(
        run.merged_histogram("cpu0").unwrap().len(),
        500,
        "5 whole intervals"
    );
    assert!(
        run.record
            .warnings
            .iter()
            .any(|w| w.contains(&file_name(2)) && w.contains("torn")),
        "{:?}",
        run.record.warnings
    );

    // Deleted (by retention) before it is read: the rest is read, and the warning says which
    // part of the run it covers.
    std::fs::remove_file(out.join(file_name(0))).unwrap();
    let run = loaded::load(&out).unwrap();
    let total: u64 = run
        .intervals
        .iter()
        .flat_map(|i| &i.counts)
        .map(|&(_, c)| c)
        .sum();
    assert_eq!(total, 300, "segments 1 and 2 (torn line left out)");
    assert!(
        run.read_warnings
            .iter()
            .any(|w| w.contains("segments 1 to 2") && w.contains("deleted by retention")),
        "{:?}",
        run.read_warnings
    );
}

/// A real session with 500 ms segments of 10 ms intervals and a size limit, polled for 6 s:
/// after every poll the directory is within the limit and its segments are the newest; at the
/// end run.json lists them, and `jitterlab report` and the reader count exactly the samples of
/// the kept segments (fewer than the run measured: the oldest were deleted).
#[test]
fn a_session_in_segments_stays_within_its_size_limit() {
    let _x = exclusive();
    if !realtime_available("a_session_in_segments_stays_within_its_size_limit") {
        return;
    }
    let (_base, out) = temp_out();
    let cli = Cli::parse_from([
        "jitterlab",
        "run",
        "--cpus",
        "0",
        "--interval",
        "1ms",
        "--log-interval",
        "10ms",
        "--out",
        out.to_str().unwrap(),
    ]);
    let Command::Run(args) = cli.command else {
        unreachable!("parsed a run")
    };
    let mut plan = jitterlab::commands::run::resolve(&args).expect("a valid plan");
    plan.length = RunLength::Endless;
    let limit = 64 * 1024;
    plan.segments = Some(SegmentPlan {
        length_ns: S / 2,
        retain: Retain::Bytes(limit),
    });
    let mut session = Session::start(
        &plan,
        SessionOptions {
            quiet: true,
            command_line: vec!["segments test".into()],
        },
    )
    .expect("the session starts");
    let mut oldest_seen = 0;
    while session.elapsed_ns() < 6 * S {
        std::thread::sleep(DRAIN_EVERY);
        session.poll();
        let bytes = dir_bytes(&out);
        assert!(bytes <= limit, "{bytes} bytes, limit {limit}");
        let present: Vec<u64> = segment_files(&out).into_keys().collect();
        let first = present[0];
        assert_eq!(
            present,
            (first..first + present.len() as u64).collect::<Vec<_>>()
        );
        assert!(first >= oldest_seen);
        oldest_seen = first;
    }
    let outcome = session.finish();
    assert!(dir_bytes(&out) <= limit);
    let segments = outcome.record.segments.as_ref().expect("segments recorded");
    assert!(
        segments.deleted > 0,
        "6 s of segments exceed {limit} bytes: {} bytes in the directory, {:?}",
        dir_bytes(&out),
        segments.files
    );
    let kept = segment_files(&out);
    assert_eq!(
        kept.keys().copied().collect::<Vec<_>>(),
        segments.files.iter().map(|f| f.index).collect::<Vec<_>>()
    );
    assert!(segments.files.iter().all(|f| f.complete));
    let in_segments = samples_per_tag(kept.values())["cpu0"];
    let measured = outcome.record.threads[0].latency.samples;
    assert!(
        in_segments > 0 && in_segments < measured,
        "{in_segments} of {measured}"
    );
    let run = loaded::load(&out).unwrap();
    assert_eq!(run.merged_histogram("cpu0").unwrap().len(), in_segments);
    let o = jitterlab(&[
        "report",
        out.to_str().unwrap(),
        "-o",
        out.join("../r.html").to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
}

/// Per-phase statistics of a segmented run are read across its segments: a known run (1 CPU,
/// 12 s of 1 s intervals, 1000 samples each) rewritten as 4 s segments, with phases of
/// [2 s, 6 s) and [6 s, 11 s) that each span two segments; `session::loads::record` gives each
/// phase the samples of exactly the intervals inside it (4000 and 5000), with the same maximum
/// as those intervals read from the single latency.hlog.
#[test]
fn phase_statistics_span_segments() {
    use jitterlab::load::supervisor::{Outcome, PhasePlan, PhaseResult};
    let base = tempfile::tempdir().unwrap();
    let known = base.path().join("known");
    let mut record = write_known_run(&known, &[0], 12, 1000, common::uniform_10_50, 3, 0);
    let intervals = hlog::read_intervals(&known.join(hlog::FILE_NAME)).unwrap();
    let out = base.path().join("segmented");
    let dir = ResultDir::create(&out, "--out").unwrap().keep();
    let plan = SegmentPlan {
        length_ns: 4 * S,
        retain: Retain::Forever,
    };
    let ledger = SegmentLedger::new(&plan);
    let mut writer = HlogWriter::to(Box::new(Segments::new(dir.clone(), plan, 1, ledger)));
    writer.begin(SystemTime::UNIX_EPOCH, "t").unwrap();
    for i in &intervals {
        let (start, length) = (
            Duration::from_secs_f64(i.start_s),
            Duration::from_secs_f64(i.length_s),
        );
        writer
            .write_interval(&i.tag, start, length, &i.histogram)
            .unwrap();
    }
    drop(writer);
    assert_eq!(segment_files(&out).len(), 3);
    let phase = |index: usize, from_s: u64, to_s: u64| PhaseResult {
        index,
        plan: PhasePlan {
            label: format!("p{index}"),
            start_ns: from_s * S,
            end_ns: to_s * S,
            wakeups: None,
            loads: vec![],
        },
        started_ns: 0,
        ended_ns: 0,
        early_end_ns: None,
        counted: None,
    };
    let outcome = Outcome {
        phases: vec![phase(0, 2, 6), phase(1, 6, 11)],
        ..Outcome::default()
    };
    record.warnings.clear();
    jitterlab::session::loads::record(&outcome, &mut record, &dir);
    assert!(record.warnings.is_empty(), "{:?}", record.warnings);
    let inside = |from_s: f64, to_s: f64| {
        let mut merged = jitterlab::format::stats::new_histogram();
        intervals
            .iter()
            .filter(|i| i.start_s >= from_s && i.start_s + i.length_s <= to_s + 1e-3)
            .for_each(|i| merged.add(&i.histogram).unwrap());
        merged
    };
    for (p, (from_s, to_s), samples) in [(0, (2.0, 6.0), 4000), (1, (6.0, 11.0), 5000)] {
        let figures = &record.phases[p].threads[0].latency;
        let truth = inside(from_s, to_s);
        assert_eq!(figures.samples, samples, "phase {p}");
        assert_eq!(truth.len(), samples, "phase {p}: the known intervals");
        // The bucket top of the phase's largest value, clamped into the run's exact range
        // (issue 23 defect 5: no phase figure above the run's max).
        let run_max = record.threads[0].latency.max_ns.unwrap();
        assert_eq!(
            figures.max_ns,
            Some((truth.max() as i64).min(run_max)),
            "phase {p}"
        );
    }
}

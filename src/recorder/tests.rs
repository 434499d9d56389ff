//! Tests of the recorder (the trace join, log intervals, noise intervals, write errors), each
//! fed known samples through a real ring.

use super::*;
use crate::format::{hlog, samplelog};
use std::sync::atomic::Ordering::Relaxed;
use std::time::SystemTime;

fn feed(cpu: usize, samples: &[Sample]) -> ThreadFeed {
    let (mut p, c) = rtrb::RingBuffer::new(1024);
    samples.iter().for_each(|s| p.push(*s).unwrap());
    ThreadFeed {
        cpu,
        index: cpu,
        deadline_ns: 100_000,
        counters: Arc::new(ThreadCounters::default()),
        consumer: c,
        tails: crate::plan::TailPlan::default(),
        kind: Default::default(),
    }
}

/// A trace stand-in: complete up to a settable time, every sample's IRQ latency 7 us, and
/// an explanation for samples above 100 us.
struct FakeJoin {
    complete: Arc<std::sync::atomic::AtomicU64>,
}

impl TraceJoin for FakeJoin {
    fn receive(&mut self) {}
    fn complete_until_ns(&self, _cpu: usize) -> u64 {
        self.complete.load(Relaxed)
    }
    fn join(&mut self, _thread: usize, s: &Sample) -> SampleTrace {
        SampleTrace {
            irq_latency_ns: Some(7_000),
            thread_latency_ns: Some(s.latency_ns - 7_000),
            explanation: (s.latency_ns > 100_000).then(|| SpikeExplanation {
                time_ns: s.expected_ns,
                cpu: 0,
                due_ns: s.expected_ns,
                latency_ns: s.latency_ns,
                irq_latency_ns: Some(7_000),
                thread_latency_ns: Some(s.latency_ns - 7_000),
                verdict: "v".into(),
                contributors: Vec::new(),
            }),
            ..Default::default()
        }
    }
}

/// With a trace, samples wait until the trace of their CPU is complete past their wakeup,
/// then go to the statistics, the sample log and the `.irq` histograms together; at the end
/// the ones still waiting are recorded without IRQ latency and counted.
#[test]
fn traced_samples_wait_for_their_trace() {
    let dir = tempfile::tempdir().unwrap();
    let hlog_path = dir.path().join(hlog::FILE_NAME);
    let log_path = dir.path().join(samplelog::FILE_NAME);
    let mut hlog = HlogWriter::create(&hlog_path).unwrap();
    hlog.begin(SystemTime::now(), "t").unwrap();
    let mut log =
        SampleLogWriter::create(&log_path, samplelog::SampleLogFormat::default()).unwrap();
    let start = monotonic_ns();
    log.begin(samplelog::SampleLogHeader {
        clock_id: 1,
        start_ns: start,
    })
    .unwrap();
    let s = |k: u64, lat: i64| Sample {
        seq: k,
        expected_ns: start + k * 1_000_000,
        latency_ns: lat,
        missed: 0,
    };
    let samples = [s(0, 10_000), s(1, 250_000), s(2, 20_000)];
    let complete = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let join = FakeJoin {
        complete: Arc::clone(&complete),
    };
    let mut rec = Recorder::new(
        vec![feed(0, &samples)],
        hlog,
        Some(log),
        start,
        1_000_000_000,
    )
    .with_trace(Box::new(join), 100);
    assert_eq!(rec.drain().unwrap(), 3);
    assert_eq!(rec.live_rows()[0].samples, 0, "all wait for the trace");
    // The trace is complete past the second wakeup only.
    complete.store(start + 1_000_000 + 250_001, Relaxed);
    rec.drain().unwrap();
    assert_eq!(rec.live_rows()[0].samples, 2);
    let x = rec.take_explanations();
    assert_eq!(x.len(), 1);
    assert_eq!(x[0].latency_ns, 250_000);
    assert_eq!(rec.worst_explanations().1, 1);
    let (r, error) = rec.finish(start + 3_000_000);
    assert!(error.is_none());
    let t = r[0].trace.as_ref().unwrap();
    assert_eq!((t.joined, t.unmatched, t.timed_out), (2, 0, 1));
    assert_eq!(t.irq_latency.samples, 2);
    assert_eq!(r[0].latency.samples, 3);
    let irqs: Vec<Option<i64>> = samplelog::SampleLogReader::open(&log_path)
        .unwrap()
        .map(|r| r.unwrap().irq_latency_ns)
        .collect();
    assert_eq!(irqs, vec![Some(7_000), Some(7_000), None]);
    let intervals = hlog::read_intervals(&hlog_path).unwrap();
    let tags: Vec<(&str, u64)> = intervals
        .iter()
        .map(|i| (i.tag.as_str(), i.histogram.len()))
        .collect();
    assert_eq!(tags, vec![("cpu0", 3), ("cpu0.irq", 2)]);
}

/// Interval bookkeeping: samples land in the interval of their due time, empty intervals
/// are written too, and the last interval is cut at the end time.
#[test]
fn intervals_follow_due_times() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(hlog::FILE_NAME);
    let mut hlog = HlogWriter::create(&path).unwrap();
    hlog.begin(SystemTime::now(), "t").unwrap();
    let start = 1_000_000_000u64;
    let ms = 1_000_000u64;
    let s = |k: u64, lat: i64| Sample {
        seq: k,
        expected_ns: start + k * 100 * ms,
        latency_ns: lat,
        missed: 0,
    };
    // due at 0, 100, 900 ms (interval 0), 1000 ms (1), 3500 ms (3); interval 2 is empty.
    let samples = [
        s(0, 10_000),
        s(1, 20_000),
        s(9, 150_000),
        s(10, 5_000),
        s(35, 7_000),
    ];
    let mut rec = Recorder::new(vec![feed(0, &samples)], hlog, None, start, 1_000 * ms);
    assert_eq!(rec.drain().unwrap(), 5);
    let (results, error) = rec.finish(start + 3_700 * ms);
    assert!(error.is_none());
    assert_eq!(results[0].latency.samples, 5);
    assert_eq!(results[0].deadline_misses, 1);
    let intervals = hlog::read_intervals(&path).unwrap();
    let counts: Vec<u64> = intervals.iter().map(|i| i.histogram.len()).collect();
    assert_eq!(counts, vec![3, 1, 0, 1]);
    let starts: Vec<f64> = intervals.iter().map(|i| i.start_s).collect();
    assert_eq!(starts, vec![0.0, 1.0, 2.0, 3.0]);
    assert!((intervals[3].length_s - 0.7).abs() < 1e-9);
    assert_eq!(
        intervals[0].histogram.max(),
        intervals[0].histogram.highest_equivalent(150_000)
    );
}

/// A noise thread's intervals carry the exact noise time and gap count of the gaps that
/// began in them (throttled gaps left out), empty intervals included, the last one cut at
/// the end; taken once, they sum to the gaps recorded.
#[test]
fn noise_intervals_hold_the_exact_noise_of_their_gaps() {
    let dir = tempfile::tempdir().unwrap();
    let mut hlog = HlogWriter::create(&dir.path().join(hlog::FILE_NAME)).unwrap();
    hlog.begin(SystemTime::now(), "t").unwrap();
    let start = 1_000_000_000u64;
    let ms = 1_000_000u64;
    let gap = |k: u64, at_ms: u64, len: i64, missed: u32| Sample {
        seq: k,
        expected_ns: start + at_ms * ms,
        latency_ns: len,
        missed,
    };
    // Interval 0: 1 234 ns + 2 000 001 ns; 1: a throttled gap only; 2: none; 3: 777 ns.
    let gaps = [
        gap(0, 5, 1_234, 0),
        gap(1, 999, 2_000_001, 0),
        gap(2, 1_500, 30_000_000, crate::measure::noise::THROTTLED),
        gap(3, 3_100, 777, 0),
    ];
    let mut f = feed(3, &gaps);
    f.kind = crate::format::run_record::RunKind::Noise;
    let mut rec = Recorder::new(vec![f], hlog, None, start, 1_000 * ms);
    rec.drain().unwrap();
    let first = rec.take_noise_intervals();
    assert_eq!(
        first.len(),
        3,
        "intervals 0-2 closed by the gap in 3: {first:?}"
    );
    rec.close_intervals(start + 3_400 * ms);
    let mut all = first;
    all.extend(rec.take_noise_intervals());
    assert!(rec.take_noise_intervals().is_empty());
    let got: Vec<(usize, u64, u64, u64, u64)> = all
        .iter()
        .map(|i| (i.cpu, i.offset_ns, i.length_ns, i.gaps, i.noise_ns))
        .collect();
    assert_eq!(
        got,
        vec![
            (3, 0, 1_000 * ms, 2, 2_001_235),
            (3, 1_000 * ms, 1_000 * ms, 0, 0),
            (3, 2_000 * ms, 1_000 * ms, 0, 0),
            (3, 3_000 * ms, 400 * ms, 1, 777),
        ]
    );
    assert_eq!(all[3].time_ns, start + 3_400 * ms);
    assert_eq!(all[0].noise_pct(), 0.2001235);
    let (results, _) = rec.finish(start + 3_400 * ms);
    assert_eq!(results[0].latency.samples, 3);
}

/// A full disk (here /dev/full) stops the files at the first failed write, which the drain
/// reports once, while every sample still counts: the run ends with complete statistics.
#[test]
fn a_write_error_stops_the_files_but_not_the_statistics() {
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
    };
    let start = 1_000_000_000u64;
    let ms = 1_000_000u64;
    let s = |k: u64| Sample {
        seq: k,
        expected_ns: start + k * 100 * ms,
        latency_ns: 10_000 + k as i64,
        missed: 0,
    };
    let (mut p, c) = rtrb::RingBuffer::new(64);
    let mut feed = feed(0, &[]);
    feed.consumer = c;
    let mut rec = Recorder::new(
        vec![feed],
        HlogWriter::new(full()),
        Some(SampleLogWriter::new(
            full(),
            samplelog::SampleLogFormat::default(),
        )),
        start,
        1_000 * ms,
    );
    // Interval 0 closes when a sample of interval 1 arrives: its write fails.
    (0..12).for_each(|k| p.push(s(k)).unwrap());
    let e = rec.drain().unwrap_err();
    assert_eq!(e.raw_os_error(), Some(crate::sys::errno::ENOSPC), "{e}");
    (12..25).for_each(|k| p.push(s(k)).unwrap());
    assert_eq!(rec.drain().unwrap(), 13, "reported once, then counted on");
    let (results, error) = rec.finish(start + 2_500 * ms);
    assert!(error.is_none(), "already reported");
    assert_eq!(results[0].latency.samples, 25);
    assert_eq!(results[0].latency.max_ns, Some(10_024));
}

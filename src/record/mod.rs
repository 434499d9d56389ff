//! The drain side (a non-real-time thread): empties the measuring threads' rings, keeps the
//! histograms of the whole run and of the current interval per thread, writes latency.hlog as
//! each interval completes and the sample log when asked, and counts deadline misses.

pub mod hlog;
pub mod hlog_scan;
pub mod live;
pub mod samplelog;
pub mod stats;

use crate::measure::{Sample, ThreadCounters};
use hlog::HlogWriter;
use samplelog::{SampleLogWriter, SampleRecord};
use stats::{LatencyStats, LatencySummary};
use std::io;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

/// What the recorder needs to know about one measuring thread.
pub struct ThreadFeed {
    pub cpu: usize,
    pub index: usize,
    pub deadline_ns: u64,
    pub counters: Arc<ThreadCounters>,
    pub consumer: rtrb::Consumer<Sample>,
}

/// A thread's figures at the end of the run.
#[derive(Debug, Clone)]
pub struct ThreadResult {
    pub cpu: usize,
    pub index: usize,
    pub latency: LatencySummary,
    pub missed_periods: u64,
    pub dropped_records: u64,
    pub deadline_misses: u64,
    pub early_wakeups: u64,
}

/// The last completed interval of a thread, for live views.
#[derive(Debug, Clone, Copy, Default)]
pub struct IntervalFigures {
    pub samples: u64,
    pub min_ns: Option<i64>,
    pub mean_ns: Option<f64>,
    pub max_ns: Option<i64>,
}

/// A thread's state as the live view shows it.
#[derive(Debug, Clone)]
pub struct LiveRow {
    pub cpu: usize,
    pub last_interval: IntervalFigures,
    pub samples: u64,
    pub max_ns: Option<i64>,
    pub missed_periods: u64,
    pub deadline_misses: u64,
    pub dropped_records: u64,
}

struct ThreadState {
    feed: ThreadFeed,
    tag: String,
    total: LatencyStats,
    interval: LatencyStats,
    interval_index: u64,
    last_interval: IntervalFigures,
    deadline_misses: u64,
}

/// Drains rings into histograms and files.
pub struct Recorder {
    threads: Vec<ThreadState>,
    hlog: HlogWriter,
    samples: Option<SampleLogWriter>,
    start_ns: u64,
    log_interval_ns: u64,
}

impl Recorder {
    /// `start_ns` is when the first wakeups are due; interval k covers due times in
    /// [start + k*len, start + (k+1)*len).
    pub fn new(
        feeds: Vec<ThreadFeed>,
        hlog: HlogWriter,
        samples: Option<SampleLogWriter>,
        start_ns: u64,
        log_interval_ns: u64,
    ) -> Self {
        let threads = feeds
            .into_iter()
            .map(|feed| ThreadState {
                tag: format!("cpu{}", feed.cpu),
                feed,
                total: LatencyStats::default(),
                interval: LatencyStats::default(),
                interval_index: 0,
                last_interval: IntervalFigures::default(),
                deadline_misses: 0,
            })
            .collect();
        Recorder {
            threads,
            hlog,
            samples,
            start_ns,
            log_interval_ns,
        }
    }

    /// Takes every sample waiting in the rings. Completed intervals go to latency.hlog at once;
    /// the sample log is flushed whenever an interval completes. Returns the samples taken.
    pub fn drain(&mut self) -> io::Result<usize> {
        let mut taken = 0;
        let mut closed_any = false;
        for t in &mut self.threads {
            while let Ok(sample) = t.feed.consumer.pop() {
                taken += 1;
                let index = sample.expected_ns.saturating_sub(self.start_ns) / self.log_interval_ns;
                while index > t.interval_index {
                    close_interval(
                        t,
                        &mut self.hlog,
                        self.log_interval_ns,
                        self.log_interval_ns,
                    )?;
                    closed_any = true;
                }
                t.interval.record(sample.latency_ns);
                t.total.record(sample.latency_ns);
                if sample.latency_ns > t.feed.deadline_ns as i64 {
                    t.deadline_misses += 1;
                }
                if let Some(log) = &mut self.samples {
                    log.write(&SampleRecord {
                        cpu: t.feed.cpu as u32,
                        missed: sample.missed,
                        seq: sample.seq,
                        expected_ns: sample.expected_ns,
                        latency_ns: sample.latency_ns,
                        irq_latency_ns: None,
                    })?;
                }
            }
        }
        if let (true, Some(log)) = (closed_any, &mut self.samples) {
            log.flush()?;
        }
        Ok(taken)
    }

    /// The live view's figures.
    pub fn live_rows(&self) -> Vec<LiveRow> {
        self.threads
            .iter()
            .map(|t| LiveRow {
                cpu: t.feed.cpu,
                last_interval: t.last_interval,
                samples: t.total.count(),
                max_ns: t.total.max_ns(),
                missed_periods: t.feed.counters.missed_periods.load(Relaxed),
                deadline_misses: t.deadline_misses,
                dropped_records: t.feed.counters.dropped_records.load(Relaxed),
            })
            .collect()
    }

    /// Drains what is left, writes each thread's last (possibly partial) interval ending at
    /// `end_ns`, flushes the files and returns the per-thread figures.
    pub fn finish(mut self, end_ns: u64) -> io::Result<Vec<ThreadResult>> {
        self.drain()?;
        for t in &mut self.threads {
            let interval_start = self.start_ns + t.interval_index * self.log_interval_ns;
            let length = end_ns
                .saturating_sub(interval_start)
                .clamp(1, self.log_interval_ns);
            if t.interval.count() > 0 || end_ns > interval_start {
                close_interval(t, &mut self.hlog, self.log_interval_ns, length)?;
            }
        }
        if let Some(log) = &mut self.samples {
            log.flush()?;
        }
        Ok(self
            .threads
            .iter()
            .map(|t| ThreadResult {
                cpu: t.feed.cpu,
                index: t.feed.index,
                latency: t.total.summary(),
                // From the thread itself: includes periods missed by records that were dropped.
                missed_periods: t.feed.counters.missed_periods.load(Relaxed),
                dropped_records: t.feed.counters.dropped_records.load(Relaxed),
                deadline_misses: t.deadline_misses,
                early_wakeups: t.total.early,
            })
            .collect())
    }
}

/// Writes the thread's current interval to the log (even when empty, so the timeline has no
/// holes) and starts the next one.
fn close_interval(
    t: &mut ThreadState,
    hlog: &mut HlogWriter,
    log_interval_ns: u64,
    length_ns: u64,
) -> io::Result<()> {
    let start = Duration::from_nanos(t.interval_index * log_interval_ns);
    hlog.write_interval(
        &t.tag,
        start,
        Duration::from_nanos(length_ns),
        &t.interval.histogram,
    )?;
    t.last_interval = IntervalFigures {
        samples: t.interval.count(),
        min_ns: t.interval.min_ns(),
        mean_ns: t.interval.mean_ns(),
        max_ns: t.interval.max_ns(),
    };
    t.interval.reset();
    t.interval_index += 1;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
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
        }
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
        let results = rec.finish(start + 3_700 * ms).unwrap();
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
}

//! Summaries of interval logs: beside each log file (latency.hlog, or a segment
//! `latency-NNNNNN.hlog`) a file `<log>.summary` holding the same intervals merged into buckets
//! of [`BUCKET_NS`], so that a reader that needs the run only at the resolution of a plot (a
//! month drawn in 800 columns of 54 min) reads ~1 line per tag per minute of run instead of
//! one per interval: a month of 1 s intervals is 43 200 buckets per tag instead of 2.6 million
//! intervals.
//!
//! A summary is itself an HdrHistogram interval log (same header, same V2 compressed lines), so
//! any HdrHistogram tool reads it. Per tag and bucket it holds two lines:
//!
//! - tag `cpuN` (the log's own tag): the bucket's intervals merged, every count kept;
//! - tag `cpuN@p99` ([`P99_SUFFIX`]): one count per non-empty interval of the bucket at that
//!   interval's 99th percentile, so the largest per-interval p99 (what the report's timeline
//!   draws) survives the merge.
//!
//! An interval goes to the bucket its middle falls in (`floor(middle / BUCKET_NS)`), the rule the
//! readers use to put intervals into plot columns, so a column made of whole buckets holds
//! exactly the intervals it would hold read from the log. A bucket line's start is its first
//! interval's start and its length the span to its last interval's end.
//!
//! The last line is a footer comment, `#[SummaryOf: <log file> <bytes> bytes, buckets of <ns>
//! ns]`, written once the log is complete: a summary without it (a kill while it was written),
//! or whose log has another size than it states (appended to, cut, replaced), is not used and
//! the log is read whole instead.

use super::hlog::{LogTarget, header};
use super::hlog_scan::{SparseInterval, add_counts};
use super::stats::new_histogram;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::V2DeflateSerializer;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::time::{Duration, SystemTime};

/// The time a bucket covers, ns: one minute.
pub(crate) const BUCKET_NS: u64 = 60_000_000_000;
/// A summary's file name is its log's name followed by this.
pub(crate) const FILE_SUFFIX: &str = ".summary";
/// The tag of a bucket's per-interval 99th percentiles is the log's tag followed by this.
pub(crate) const P99_SUFFIX: &str = "@p99";
/// The footer comment's opening.
const FOOTER: &str = "#[SummaryOf: ";

/// The summary file name of the log file `log_name`: `latency.hlog.summary`.
pub fn file_name(log_name: &str) -> String {
    format!("{log_name}{FILE_SUFFIX}")
}

/// The middle of an interval, in whole us from the log's base time. The log states times to
/// the ms, as decimal text; rounding to the us takes away the floating-point noise of reading
/// it back, so that writers and readers put an interval in the same bucket and cell.
pub(crate) fn middle_us(start_s: f64, length_s: f64) -> u64 {
    ((start_s + length_s / 2.0).max(0.0) * 1e6).round() as u64
}

/// The bucket of an interval: the index of the [`BUCKET_NS`] its middle falls in.
pub(crate) fn bucket_of(start_s: f64, length_s: f64) -> u64 {
    middle_us(start_s, length_s) / (BUCKET_NS / 1000)
}

/// A time as the log writes it: seconds to 3 decimals (`{:.3}`), read back.
fn as_logged(d: Duration) -> f64 {
    format!("{:.3}", d.as_secs_f64()).parse().unwrap_or(0.0)
}

/// One tag's bucket being filled.
struct Bucket {
    index: u64,
    start_s: f64,
    end_s: f64,
    merged: Histogram<u64>,
    p99s: Histogram<u64>,
}

/// Writes a summary as the log's intervals come, in the log's order.
pub(crate) struct SummaryWriter {
    file: File,
    serializer: V2DeflateSerializer,
    line: Vec<u8>,
    open: BTreeMap<String, Bucket>,
}

impl SummaryWriter {
    /// A summary into `file` (made by `ResultDir::create_file`) of a log whose intervals count
    /// from `base` (the log's BaseTime); writes the header.
    pub(crate) fn new(mut file: File, base: SystemTime, log_name: &str) -> io::Result<Self> {
        let mut serializer = V2DeflateSerializer::new();
        let comment = format!(
            "jitterlab summary of {log_name}: its intervals merged into buckets of {} s; tags TAG@p99 hold each interval's 99th percentile",
            BUCKET_NS / 1_000_000_000
        );
        file.write_all(&header(base, base, &[&comment], &mut serializer)?)?;
        Ok(SummaryWriter {
            file,
            serializer,
            line: Vec::with_capacity(4096),
            open: BTreeMap::new(),
        })
    }

    /// Adds one interval of the log.
    pub(crate) fn add(&mut self, i: &SparseInterval) -> io::Result<()> {
        let index = bucket_of(i.start_s, i.length_s);
        if self.open.get(i.tag).is_some_and(|b| b.index != index) {
            let done = self.open.remove(i.tag).expect("checked above");
            self.write_bucket(i.tag, &done)?;
        }
        let b = self
            .open
            .entry(i.tag.to_string())
            .or_insert_with(|| Bucket {
                index,
                start_s: i.start_s,
                end_s: i.start_s,
                merged: new_histogram(),
                p99s: new_histogram(),
            });
        b.start_s = b.start_s.min(i.start_s);
        b.end_s = b.end_s.max(i.start_s + i.length_s);
        add_counts(&mut b.merged, i.counts);
        if let Some(p99) = i.value_at_quantile(0.99) {
            b.p99s.record(p99).expect("auto-resizing histogram");
        }
        Ok(())
    }

    /// Adds one interval given as a histogram (the writers that have it so).
    pub(crate) fn add_histogram(
        &mut self,
        tag: &str,
        start: Duration,
        length: Duration,
        histogram: &Histogram<u64>,
    ) -> io::Result<()> {
        let counts: Vec<(u64, u64)> = histogram
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect();
        // Bucketed by the times the log states, as its readers see them.
        self.add(&SparseInterval {
            tag,
            start_s: as_logged(start),
            length_s: as_logged(length),
            counts: &counts,
            total: histogram.len(),
        })
    }

    fn write_bucket(&mut self, tag: &str, b: &Bucket) -> io::Result<()> {
        let start = Duration::from_secs_f64(b.start_s.max(0.0));
        let length = Duration::from_secs_f64((b.end_s - b.start_s).max(0.0));
        self.write_line(tag, start, length, &b.merged)?;
        self.write_line(&format!("{tag}{P99_SUFFIX}"), start, length, &b.p99s)
    }

    fn write_line(
        &mut self,
        tag: &str,
        start: Duration,
        length: Duration,
        h: &Histogram<u64>,
    ) -> io::Result<()> {
        super::hlog::encode_interval(
            &mut self.line,
            &mut self.serializer,
            tag,
            (start, length),
            h,
        )?;
        self.file.write_all(&self.line)
    }

    /// Writes the buckets still open and the footer: the summary is complete for the log
    /// `log_name` of `log_bytes` bytes.
    pub(crate) fn finish(mut self, log_name: &str, log_bytes: u64) -> io::Result<()> {
        for (tag, b) in std::mem::take(&mut self.open) {
            self.write_bucket(&tag, &b)?;
        }
        writeln!(
            self.file,
            "{FOOTER}{log_name} {log_bytes} bytes, buckets of {BUCKET_NS} ns]"
        )?;
        self.file.sync_data()
    }
}

/// A log file and its summary written together (`HlogWriter::summarized`).
pub(crate) struct SummarizedLog {
    log: File,
    log_name: String,
    /// The summary's file until the log begins (its header needs the base time), then its
    /// writer.
    pending: Option<File>,
    summary: Option<SummaryWriter>,
}

impl SummarizedLog {
    pub(crate) fn new(log: File, summary: File, log_name: &str) -> Self {
        SummarizedLog {
            log,
            log_name: log_name.to_string(),
            pending: Some(summary),
            summary: None,
        }
    }
}

impl LogTarget for SummarizedLog {
    fn begin(
        &mut self,
        start: SystemTime,
        comment: &str,
        serializer: &mut V2DeflateSerializer,
    ) -> io::Result<()> {
        self.log.begin(start, comment, serializer)?;
        if let Some(file) = self.pending.take() {
            self.summary = Some(SummaryWriter::new(file, start, &self.log_name)?);
        }
        Ok(())
    }

    fn write_line(
        &mut self,
        tag: &str,
        (start, length): (Duration, Duration),
        histogram: &Histogram<u64>,
        line: &[u8],
        serializer: &mut V2DeflateSerializer,
    ) -> io::Result<()> {
        self.log
            .write_line(tag, (start, length), histogram, line, serializer)?;
        match &mut self.summary {
            Some(s) => s.add_histogram(tag, start, length, histogram),
            None => Ok(()),
        }
    }
}

impl Drop for SummarizedLog {
    /// The log is complete: the summary gets its footer with the log's size. An error leaves
    /// the summary without footer, which readers ignore (they read the log instead).
    fn drop(&mut self) {
        if let (Some(s), Ok(meta)) = (self.summary.take(), self.log.metadata()) {
            let _ = s.finish(&self.log_name, meta.len());
        }
    }
}

/// What a summary's footer states.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Footer {
    pub(crate) log_name: String,
    pub(crate) log_bytes: u64,
    pub(crate) bucket_ns: u64,
}

/// The footer of the summary at `path`; None when it has none (incomplete) or is unreadable.
pub(crate) fn read_footer(path: &Path) -> Option<Footer> {
    let mut file = crate::input::open_result_file(path).ok()?;
    let size = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(size.saturating_sub(512))).ok()?;
    let mut tail = String::new();
    file.take(512).read_to_string(&mut tail).ok()?;
    let last = tail.strip_suffix('\n')?.rsplit('\n').next()?;
    let rest = last.strip_prefix(FOOTER)?.strip_suffix(" ns]")?;
    let (name, rest) = rest.split_once(' ')?;
    let (bytes, rest) = rest.split_once(" bytes, buckets of ")?;
    Some(Footer {
        log_name: name.to_string(),
        log_bytes: bytes.parse().ok()?,
        bucket_ns: rest.parse().ok()?,
    })
}

/// Whether the summary at `summary` is complete and still describes the log at `log`: its
/// footer names the log's file name and size and the bucket length of this version.
pub(crate) fn is_usable(summary: &Path, log: &Path) -> bool {
    let (Some(footer), Ok(meta)) = (read_footer(summary), std::fs::symlink_metadata(log)) else {
        return false;
    };
    let name = log.file_name().and_then(|n| n.to_str());
    footer.bucket_ns == BUCKET_NS
        && name == Some(footer.log_name.as_str())
        && meta.is_file()
        && meta.len() == footer.log_bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::hlog::{self, HlogWriter};
    use crate::format::hlog_scan::scan;

    /// 3 minutes of 1 s intervals on one tag: 3 buckets, every count kept, the largest
    /// per-interval p99 kept, a footer that matches the log, refused once the log changes.
    #[test]
    fn buckets_keep_every_count_and_the_interval_p99s() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join(hlog::FILE_NAME);
        let path = dir.path().join(file_name(hlog::FILE_NAME));
        let mut w = HlogWriter::summarized(
            File::create_new(&log).unwrap(),
            File::create_new(&path).unwrap(),
            hlog::FILE_NAME,
        );
        w.begin(SystemTime::UNIX_EPOCH, "t").unwrap();
        let mut h = new_histogram();
        for k in 0..180u64 {
            h.reset();
            h.record_n(10_000, 99).unwrap();
            // One interval per minute has a high p99 (2 of 100 samples late).
            let late = if k % 60 == 7 { 2 } else { 1 };
            h.record_n(500_000 + k, late).unwrap();
            w.write_interval("cpu0", Duration::from_secs(k), Duration::from_secs(1), &h)
                .unwrap();
        }
        // Until the writer is dropped the summary has no footer, and is not used.
        assert!(!is_usable(&path, &log));
        drop(w);
        assert!(is_usable(&path, &log));
        let mut lines = Vec::new();
        scan(&path, |i| lines.push(i.to_stored()), |_, _| {}).unwrap();
        assert_eq!(lines.len(), 6);
        for (b, pair) in lines.chunks(2).enumerate() {
            let (merged, p99s) = (&pair[0], &pair[1]);
            assert_eq!(
                (merged.tag.as_str(), p99s.tag.as_str()),
                ("cpu0", "cpu0@p99")
            );
            assert_eq!((merged.start_s, merged.length_s), (60.0 * b as f64, 60.0));
            let total: u64 = merged.counts.iter().map(|c| c.1).sum();
            assert_eq!(total, 60 * 99 + 61);
            assert_eq!(p99s.counts.iter().map(|c| c.1).sum::<u64>(), 60);
            // 59 intervals' p99 is 10 us, one's is the late value.
            assert_eq!(p99s.counts[0], (h.highest_equivalent(10_000), 59));
            let top = p99s.counts.last().unwrap().0;
            assert_eq!(top, h.highest_equivalent(500_000 + 60 * b as u64 + 7));
        }
        // The log grows: the summary no longer describes it.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&log)
            .unwrap()
            .write_all(b"\n")
            .unwrap();
        assert!(!is_usable(&path, &log));
    }
}

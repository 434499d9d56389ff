//! latency.hlog: the HdrHistogram interval-log format (the text format of HdrHistogram's Java
//! HistogramLogWriter), V2 deflate-compressed histograms, values in ns, one line per thread per
//! interval tagged `cpuN`. Every line is written through to the kernel as soon as it is made,
//! so a run killed with SIGKILL keeps every finished interval. A continuous run writes the same
//! lines into a series of segment files instead (`recorder::segments`, a [`LogTarget`] of its
//! own).

use hdrhistogram::Histogram;
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::time::{Duration, SystemTime};

/// The file name inside a result directory.
pub const FILE_NAME: &str = "latency.hlog";

/// What an interval's tag says: `cpu3` -> (Some(3), false), CPU 3's wakeup latency;
/// `cpu3.irq` -> (Some(3), true), its timer IRQ latency; any other tag -> (None, _).
pub(crate) fn parse_tag(tag: &str) -> (Option<usize>, bool) {
    let (base, irq) = match tag.strip_suffix(".irq") {
        Some(b) => (b, true),
        None => (tag, false),
    };
    (base.strip_prefix("cpu").and_then(|n| n.parse().ok()), irq)
}

/// Latency tags are `cpuN`; `cpuN.irq` and others hold other quantities.
pub(crate) fn is_cpu_tag(tag: &str) -> bool {
    tag.strip_prefix("cpu")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Where a log's encoded lines go: one latency.hlog ([`File`]), or the recorder's series of
/// segment files.
pub trait LogTarget: Send {
    /// Writes the header; `start` is when the first wakeups were due.
    fn begin(
        &mut self,
        start: SystemTime,
        comment: &str,
        serializer: &mut V2DeflateSerializer,
    ) -> io::Result<()>;

    /// Writes one encoded interval line through: `tag`'s, its `span` (start after the log's
    /// start, length), holding `histogram`.
    fn write_line(
        &mut self,
        tag: &str,
        span: (Duration, Duration),
        histogram: &Histogram<u64>,
        line: &[u8],
        serializer: &mut V2DeflateSerializer,
    ) -> io::Result<()>;
}

impl LogTarget for File {
    fn begin(
        &mut self,
        start: SystemTime,
        comment: &str,
        serializer: &mut V2DeflateSerializer,
    ) -> io::Result<()> {
        let header = header(start, start, &[comment], serializer)?;
        self.write_all(&header)
    }

    fn write_line(
        &mut self,
        _tag: &str,
        _span: (Duration, Duration),
        _histogram: &Histogram<u64>,
        line: &[u8],
        _serializer: &mut V2DeflateSerializer,
    ) -> io::Result<()> {
        self.write_all(line)
    }
}

/// Writes interval histograms as they complete.
pub struct HlogWriter {
    target: Box<dyn LogTarget>,
    serializer: V2DeflateSerializer,
    line: Vec<u8>,
}

impl HlogWriter {
    /// Writes the log into `file` (in a result directory: made by `ResultDir::create_file`).
    /// Nothing is written until [`HlogWriter::begin`], because the header's start time is fixed
    /// only when measuring starts.
    pub fn new(file: File) -> Self {
        Self::to(Box::new(file))
    }

    /// Writes the log's lines to `target` (the recorder's segments); nothing is written until
    /// [`HlogWriter::begin`].
    pub fn to(target: Box<dyn LogTarget>) -> Self {
        HlogWriter {
            target,
            serializer: V2DeflateSerializer::new(),
            line: Vec::with_capacity(4096),
        }
    }

    /// Writes the log into `log` (named `log_name`) and its summary (`format::summary`) into
    /// `summary`, both made by `ResultDir::create_file`. The summary is completed (its footer
    /// written) when the writer is dropped, with the log's final size; a run killed before
    /// leaves a summary without footer, which readers ignore.
    pub(crate) fn summarized(log: File, summary: File, log_name: &str) -> Self {
        Self::to(Box::new(super::summary::SummarizedLog::new(
            log, summary, log_name,
        )))
    }

    /// Creates the new log file `path` (an existing file or link of that name is an error).
    pub fn create(path: &Path) -> io::Result<Self> {
        Ok(Self::new(File::create_new(path)?))
    }

    /// Writes the header. `start` is the wall-clock time at which the first wakeups were due;
    /// interval timestamps are seconds from it (it is both StartTime and BaseTime).
    pub fn begin(&mut self, start: SystemTime, comment: &str) -> io::Result<()> {
        self.target.begin(start, comment, &mut self.serializer)
    }

    /// Appends one interval histogram and writes it through to the file.
    pub fn write_interval(
        &mut self,
        tag: &str,
        start_offset: Duration,
        length: Duration,
        histogram: &Histogram<u64>,
    ) -> io::Result<()> {
        encode_interval(
            &mut self.line,
            &mut self.serializer,
            tag,
            (start_offset, length),
            histogram,
        )?;
        self.target.write_line(
            tag,
            (start_offset, length),
            histogram,
            &self.line,
            &mut self.serializer,
        )
    }
}

/// Encodes one interval histogram as its log line (start and length from the log's base
/// time) into `line`, replacing what it held: the one encoder of latency.hlog, its segments and
/// their summaries.
pub(crate) fn encode_interval(
    line: &mut Vec<u8>,
    serializer: &mut V2DeflateSerializer,
    tag: &str,
    (start, length): (Duration, Duration),
    histogram: &Histogram<u64>,
) -> io::Result<()> {
    let tag = Tag::new(tag).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("invalid hlog tag '{tag}'"),
        )
    })?;
    line.clear();
    // A builder with no headers writes nothing but the histogram line itself.
    IntervalLogWriterBuilder::new()
        .begin_log_with(line, serializer)?
        .write_histogram(histogram, start, length, Some(tag))
        .map_err(|e| io::Error::other(format!("cannot encode an interval histogram: {e}")))?;
    Ok(())
}

/// A log's header: the comments, StartTime (when the log begins) and BaseTime (what interval
/// timestamps count from), then the Java writer's column legend, which other tools expect.
pub fn header(
    start: SystemTime,
    base: SystemTime,
    comments: &[&str],
    serializer: &mut V2DeflateSerializer,
) -> io::Result<Vec<u8>> {
    let mut header = Vec::new();
    let mut builder = IntervalLogWriterBuilder::new();
    for c in comments {
        builder.add_comment(c);
    }
    builder
        .add_comment("Values are latencies in nanoseconds; tags are cpuN (N = the measured CPU)")
        .with_start_time(start)
        .with_base_time(base)
        .begin_log_with(&mut header, serializer)?;
    header.extend_from_slice(
        b"\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n",
    );
    Ok(header)
}

/// One interval histogram read back from a log.
#[derive(Debug, Clone)]
pub struct IntervalHistogram {
    pub tag: String,
    /// Seconds from the log's base time.
    pub start_s: f64,
    pub length_s: f64,
    pub histogram: Histogram<u64>,
}

/// Reads every interval histogram of a latency.hlog; a torn last line is left out (see
/// [`super::hlog_scan::complete_lines`]).
pub fn read_intervals(path: &Path) -> io::Result<Vec<IntervalHistogram>> {
    use hdrhistogram::serialization::Deserializer;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    let bytes = crate::input::read_result_bytes(path, u64::MAX)?;
    let (whole, _) = super::hlog_scan::complete_lines(&bytes);
    let mut deserializer = Deserializer::new();
    let mut out = Vec::new();
    for entry in IntervalLogIterator::new(whole) {
        let entry = entry.map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{}: {}",
                    path.display(),
                    super::hlog_scan::malformed(whole, 0, e)
                ),
            )
        })?;
        if let LogEntry::Interval(interval) = entry {
            let encoded = base64_decode(interval.encoded_histogram()).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}: bad base64 in an interval", path.display()),
                )
            })?;
            let histogram: Histogram<u64> = deserializer
                .deserialize(&mut encoded.as_slice())
                .map_err(|e| {
                    io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("{}: bad histogram: {e}", path.display()),
                    )
                })?;
            out.push(IntervalHistogram {
                tag: interval
                    .tag()
                    .map(|t| t.as_str().to_string())
                    .unwrap_or_default(),
                start_s: interval.start_timestamp().as_secs_f64(),
                length_s: interval.duration().as_secs_f64(),
                histogram,
            });
        }
    }
    Ok(out)
}

fn base64_decode(text: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::stats::new_histogram;

    #[test]
    fn round_trips_intervals_with_tags() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let mut w = HlogWriter::create(&path).unwrap();
        w.begin(
            SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000),
            "test",
        )
        .unwrap();
        let mut h0 = new_histogram();
        h0.record(12_345).unwrap();
        h0.record(2_000_000).unwrap();
        let mut h1 = new_histogram();
        h1.record(7).unwrap();
        w.write_interval("cpu0", Duration::from_secs(0), Duration::from_secs(1), &h0)
            .unwrap();
        w.write_interval("cpu1", Duration::from_secs(0), Duration::from_secs(1), &h1)
            .unwrap();
        w.write_interval(
            "cpu0",
            Duration::from_secs(1),
            Duration::from_millis(500),
            &new_histogram(),
        )
        .unwrap();
        drop(w);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("#[StartTime: 1700000000.000"), "{text}");
        let back = read_intervals(&path).unwrap();
        assert_eq!(back.len(), 3);
        assert_eq!(back[0].tag, "cpu0");
        assert_eq!(back[0].histogram.len(), 2);
        assert_eq!(back[0].histogram.max(), h0.max());
        assert_eq!(back[1].tag, "cpu1");
        assert_eq!(back[2].start_s, 1.0);
        assert_eq!(back[2].length_s, 0.5);
        assert_eq!(back[2].histogram.len(), 0);
    }

    #[test]
    fn tags_name_cpus() {
        assert_eq!(parse_tag("cpu3"), (Some(3), false));
        assert_eq!(parse_tag("cpu12.irq"), (Some(12), true));
        assert_eq!(parse_tag("other"), (None, false));
    }
}

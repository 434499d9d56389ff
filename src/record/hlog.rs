//! latency.hlog: the HdrHistogram interval-log format (the text format of HdrHistogram's Java
//! HistogramLogWriter), V2 deflate-compressed histograms, values in ns, one line per thread per
//! interval tagged `cpuN`. Every line is written through to the kernel as soon as it is made,
//! so a run killed with SIGKILL keeps every finished interval. A continuous run writes the same
//! lines into a series of segment files instead (`super::segments`).

use hdrhistogram::Histogram;
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::time::{Duration, SystemTime};

pub use crate::results::format::hlog::FILE_NAME;

use super::segments::Segments;

/// Writes interval histograms as they complete.
pub struct HlogWriter {
    target: Target,
    serializer: V2DeflateSerializer,
    line: Vec<u8>,
}

/// Where the lines go.
enum Target {
    /// One latency.hlog.
    File(File),
    /// A segment file per `SegmentPlan::length_ns` of the run.
    Segments(Segments),
}

impl HlogWriter {
    /// Writes the log into `file` (in a result directory: made by `ResultDir::create_file`).
    /// Nothing is written until [`HlogWriter::begin`], because the header's start time is fixed
    /// only when measuring starts.
    pub fn new(file: File) -> Self {
        HlogWriter {
            target: Target::File(file),
            serializer: V2DeflateSerializer::new(),
            line: Vec::with_capacity(4096),
        }
    }

    /// Writes the log as segments (see [`Segments`]); nothing is written until
    /// [`HlogWriter::begin`].
    pub fn segmented(segments: Segments) -> Self {
        HlogWriter {
            target: Target::Segments(segments),
            serializer: V2DeflateSerializer::new(),
            line: Vec::with_capacity(4096),
        }
    }

    /// Creates the new log file `path` (an existing file or link of that name is an error).
    pub fn create(path: &Path) -> io::Result<Self> {
        Ok(Self::new(File::create_new(path)?))
    }

    /// Writes the header. `start` is the wall-clock time at which the first wakeups were due;
    /// interval timestamps are seconds from it (it is both StartTime and BaseTime).
    pub fn begin(&mut self, start: SystemTime, comment: &str) -> io::Result<()> {
        match &mut self.target {
            Target::File(file) => {
                let header = header(start, start, &[comment], &mut self.serializer)?;
                file.write_all(&header)
            }
            Target::Segments(segments) => segments.begin(start, comment, &mut self.serializer),
        }
    }

    /// Appends one interval histogram and writes it through to the file.
    pub fn write_interval(
        &mut self,
        tag: &str,
        start_offset: Duration,
        length: Duration,
        histogram: &Histogram<u64>,
    ) -> io::Result<()> {
        let tag = Tag::new(tag).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("invalid hlog tag '{tag}'"),
            )
        })?;
        self.line.clear();
        // A builder with no headers writes nothing but the histogram line itself.
        IntervalLogWriterBuilder::new()
            .begin_log_with(&mut self.line, &mut self.serializer)?
            .write_histogram(histogram, start_offset, length, Some(tag))
            .map_err(|e| io::Error::other(format!("cannot encode an interval histogram: {e:?}")))?;
        match &mut self.target {
            Target::File(file) => file.write_all(&self.line),
            Target::Segments(segments) => {
                segments.write_line(tag.as_str(), start_offset, &self.line, &mut self.serializer)
            }
        }
    }
}

/// A log's header: the comments, StartTime (when the log begins) and BaseTime (what interval
/// timestamps count from), then the Java writer's column legend, which other tools expect.
pub(super) fn header(
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
                format!("{}: malformed interval log: {e:?}", path.display()),
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
                        format!("{}: bad histogram: {e:?}", path.display()),
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
    use crate::record::stats::new_histogram;

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
}

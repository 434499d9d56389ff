//! The segmented interval log of a continuous run (`RunPlan::segments`): its file names and the
//! `segments` record of run.json. Each segment is a complete HdrHistogram interval log of its
//! own; together, in index order, they are the run's latency.hlog with the oldest part possibly
//! deleted by retention. Written by `recorder::segments`, read by `results::loaded`.

use serde::{Deserialize, Serialize};

/// Segment files are `latency-NNNNNN.hlog`: this prefix, the segment's index in at least
/// [`INDEX_DIGITS`] decimal digits, and [`FILE_SUFFIX`].
pub(crate) const FILE_PREFIX: &str = "latency-";
pub(crate) const FILE_SUFFIX: &str = ".hlog";
pub(crate) const INDEX_DIGITS: usize = 6;

/// The file name of segment `index`: `latency-000042.hlog`.
pub fn file_name(index: u64) -> String {
    format!(
        "{FILE_PREFIX}{index:0width$}{FILE_SUFFIX}",
        width = INDEX_DIGITS
    )
}

/// The index of a segment file name, None for any other name (`latency.hlog` included).
pub fn parse_file_name(name: &str) -> Option<u64> {
    let digits = name.strip_prefix(FILE_PREFIX)?.strip_suffix(FILE_SUFFIX)?;
    (digits.len() >= INDEX_DIGITS && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

/// run.json's `segments`: present when the interval log is written in segments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SegmentsRecord {
    /// The time each segment covers, ns; segment k covers the intervals starting in
    /// [k x length, (k+1) x length) from the run's start.
    pub length_ns: u64,
    /// The retention rule: `forever`, `age` (with `retain_ns`) or `size` (with `retain_bytes`).
    pub retain: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retain_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retain_bytes: Option<u64>,
    /// The segment files in the directory at the last update, oldest first.
    pub files: Vec<SegmentEntry>,
    /// How many segments retention has deleted.
    pub deleted: u64,
}

/// One segment file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SegmentEntry {
    pub file: String,
    pub index: u64,
    /// Seconds from the run's start (the logs' BaseTime) at which the segment begins.
    pub start_s: f64,
    /// Its size in bytes at the last update.
    pub bytes: u64,
    /// False for the segment being written.
    pub complete: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_others_are_not_segments() {
        assert_eq!(file_name(42), "latency-000042.hlog");
        assert_eq!(parse_file_name("latency-000042.hlog"), Some(42));
        assert_eq!(parse_file_name(&file_name(12_345_678)), Some(12_345_678));
        for other in [
            "latency.hlog",
            "latency-42.hlog",
            "latency-00004x.hlog",
            ".latency-000001.hlog",
        ] {
            assert_eq!(parse_file_name(other), None, "{other}");
        }
    }
}

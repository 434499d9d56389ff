//! The segmented interval log of a continuous run (`RunPlan::segments`): its file names and the
//! `segments` record of run.json. Each segment is a complete HdrHistogram interval log of its
//! own; together, in index order, they are the run's latency.hlog with the oldest part possibly
//! deleted by retention. Written by `recorder::segments`, read by `results::loaded`.
//!
//! The events of a segmented run are rotated the same way (`events-NNNNNN.jsonl`, written by
//! `session::events`): an event goes to the file of the segment its time falls in, or of a later
//! one (never an earlier), and retention deletes the event files older than the oldest segment
//! it keeps, so the events are bounded with the latency history and none of a kept segment lost.

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
    parse_index(name, FILE_PREFIX, FILE_SUFFIX)
}

/// Event files of a segmented run are `events-NNNNNN.jsonl`: this prefix, the index of the
/// segment they belong to in at least [`INDEX_DIGITS`] digits, and [`EVENTS_FILE_SUFFIX`].
pub(crate) const EVENTS_FILE_PREFIX: &str = "events-";
pub(crate) const EVENTS_FILE_SUFFIX: &str = ".jsonl";

/// The file name of the events of segment `index`: `events-000042.jsonl`.
pub(crate) fn events_file_name(index: u64) -> String {
    format!(
        "{EVENTS_FILE_PREFIX}{index:0width$}{EVENTS_FILE_SUFFIX}",
        width = INDEX_DIGITS
    )
}

/// The index of an event file name, None for any other name (`events.jsonl` included).
pub fn parse_events_file_name(name: &str) -> Option<u64> {
    parse_index(name, EVENTS_FILE_PREFIX, EVENTS_FILE_SUFFIX)
}

fn parse_index(name: &str, prefix: &str, suffix: &str) -> Option<u64> {
    let digits = name.strip_prefix(prefix)?.strip_suffix(suffix)?;
    (digits.len() >= INDEX_DIGITS && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

/// The segment index of a time `time_ns` on CLOCK_MONOTONIC in a run started at `start_ns`
/// (its first due time, the logs' BaseTime) with segments of `length_ns`: 0 before the start.
pub(crate) fn index_at(time_ns: u64, start_ns: u64, length_ns: u64) -> u64 {
    time_ns.saturating_sub(start_ns) / length_ns.max(1)
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
    pub(crate) retain_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) retain_bytes: Option<u64>,
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

    #[test]
    fn event_file_names_round_trip_and_times_fall_in_their_segment() {
        assert_eq!(events_file_name(42), "events-000042.jsonl");
        assert_eq!(parse_events_file_name("events-000042.jsonl"), Some(42));
        for other in ["events.jsonl", "events-42.jsonl", "latency-000042.hlog"] {
            assert_eq!(parse_events_file_name(other), None, "{other}");
        }
        assert_eq!(parse_file_name("events-000042.jsonl"), None);
        // Segments of 10 ns from 100: [100, 110) is 0, 110 is 1; before the start, 0.
        assert_eq!(index_at(50, 100, 10), 0);
        assert_eq!(index_at(109, 100, 10), 0);
        assert_eq!(index_at(110, 100, 10), 1);
        assert_eq!(index_at(135, 100, 10), 3);
    }
}

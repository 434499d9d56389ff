//! The segmented interval log of a long run (`jitterlab monitor`): how long each segment file
//! covers and which completed segments are kept, and the rules those must keep.

use crate::error::{Failure, Result};
use crate::units::format_ns;

/// The interval log written as a series of segment files, each a complete HdrHistogram
/// interval log covering `length_ns` of the run, the oldest deleted by `retain`: a result
/// directory that stays bounded however long the run (docs/result-format.md, "Segments").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentPlan {
    /// The time each segment covers, ns: a whole number of log intervals (see
    /// [`SegmentPlan::check`]).
    pub length_ns: u64,
    pub retain: Retain,
}

/// Which completed segments are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retain {
    /// Every segment.
    Forever,
    /// Segments whose end is at most this many ns in the past (`--retain 7d`).
    Age(u64),
    /// The oldest segments are deleted while the result directory's files would exceed this
    /// many bytes with one more segment like the last (`--retain-size 1GiB`).
    Bytes(u64),
}

/// The default segment length: an hour.
pub const DEFAULT_SEGMENT_NS: u64 = 3_600_000_000_000;

impl SegmentPlan {
    /// A segment is a whole number of log intervals, so that no interval straddles two files
    /// and each file is a complete log of its own; and a size limit has room for at least a
    /// few KiB (a segment's header alone is hundreds of bytes).
    pub fn check(&self, log_interval_ns: u64) -> Result<()> {
        if self.length_ns == 0
            || log_interval_ns == 0
            || !self.length_ns.is_multiple_of(log_interval_ns)
        {
            return Err(Failure::usage(format!(
                "segment length {}: not a whole number of log intervals ({}); use a multiple of --log-interval",
                format_ns(self.length_ns),
                format_ns(log_interval_ns)
            )));
        }
        if let Retain::Bytes(b) = self.retain
            && b < MIN_RETAIN_BYTES
        {
            return Err(Failure::usage(format!(
                "--retain-size {b} bytes: below the smallest useful limit, {MIN_RETAIN_BYTES} bytes; give a larger size, e.g. 1GiB"
            )));
        }
        if self.retain == Retain::Age(0) {
            return Err(Failure::usage(
                "--retain 0: would delete every segment as it completes; give a duration, e.g. 7d"
                    .to_string(),
            ));
        }
        Ok(())
    }
}

/// The smallest `Retain::Bytes`: room for run.json and a few small segments with their events.
pub const MIN_RETAIN_BYTES: u64 = 64 * 1024;

/// The most bytes of a load's log in a segmented run (`loads/<k>-<name>.log`): when a write
/// would take it past its bound the log is renamed `.log.1` (replacing the older one) and
/// begun anew, so a load that prints without end keeps at most twice its bound.
pub(crate) const LOAD_LOG_MAX_BYTES: u64 = 1024 * 1024;
/// Under `Retain::Bytes`, the part of the limit the load logs (each with its `.1`) may take
/// together: a quarter. Retention keeps it free for them, so a printing load never makes it
/// delete latency history.
pub(crate) const LOAD_LOG_SHARE: u64 = 4;
/// The smallest bound of a load's log, however many loads share the limit.
const MIN_LOAD_LOG_BYTES: u64 = 512;

impl SegmentPlan {
    /// The bound of each load's log when `loads` loads log: `LOAD_LOG_MAX_BYTES`, or under a
    /// size limit their `LOAD_LOG_SHARE` of it split among them (each log and its `.1`), if
    /// smaller.
    pub(crate) fn load_log_cap(&self, loads: usize) -> u64 {
        match self.retain {
            Retain::Bytes(limit) => (limit / LOAD_LOG_SHARE / (2 * loads.max(1) as u64))
                .clamp(MIN_LOAD_LOG_BYTES, LOAD_LOG_MAX_BYTES),
            Retain::Age(_) | Retain::Forever => LOAD_LOG_MAX_BYTES,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_segment_is_whole_log_intervals_and_retention_has_room() {
        let s = |length_ns, retain| SegmentPlan { length_ns, retain };
        let second = 1_000_000_000;
        assert!(s(DEFAULT_SEGMENT_NS, Retain::Forever).check(second).is_ok());
        assert!(
            s(2 * second, Retain::Bytes(MIN_RETAIN_BYTES))
                .check(second)
                .is_ok()
        );
        for (bad, why) in [
            (s(1_500_000_000, Retain::Forever), "whole number"),
            (s(0, Retain::Forever), "whole number"),
            (s(second, Retain::Bytes(MIN_RETAIN_BYTES - 1)), "smallest"),
            (s(second, Retain::Age(0)), "every segment"),
        ] {
            let e = bad.check(second).unwrap_err();
            assert_eq!(e.code, crate::error::ExitCode::Usage);
            assert!(e.message.contains(why), "{}", e.message);
        }
    }
}

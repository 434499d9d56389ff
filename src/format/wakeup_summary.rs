//! `wakeup_summary` in events.jsonl (`run --summary-every N`, FirmTimers `measure_latency -w
//! N`): the min, mean and max latency of each block of N consecutive recorded samples of one
//! measuring thread, with the block's sequence range, due times and missed periods, so that a
//! block can be matched sample for sample with samples.bin.

use serde::{Deserialize, Serialize};

/// The bytes of a `wakeup_summary` line in events.jsonl, about: 259 a line in the sixth hostile
/// re-run's 5 s run (129 647 590 bytes for 500 000 blocks of one sample, E1); the check before
/// a run (`plan::check_summaries`) counts each block at this many bytes.
pub(crate) const LINE_BYTES: u64 = 256;

/// One block of a measuring thread's recorded samples (docs/result-format.md, events.jsonl).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WakeupSummary {
    /// When the recorder closed the block (CLOCK_MONOTONIC, like every event), ns: within a
    /// drain (about 100 ms) of the block's last wakeup.
    pub time_ns: u64,
    pub cpu: usize,
    /// The sequence numbers of the block's first and last sample (samples.bin `seq`).
    pub first_seq: u64,
    pub last_seq: u64,
    /// Samples in the block: `--summary-every`, fewer in a thread's last block.
    pub samples: u64,
    /// Wakeups between `first_seq` and `last_seq` whose records were dropped (ring full):
    /// `last_seq - first_seq + 1 - samples`. The block's figures do not include them.
    pub dropped_records: u64,
    /// The due times of the first and last sample, on the run's clock (samples.bin
    /// `expected_ns`), ns.
    pub first_due_ns: u64,
    pub last_due_ns: u64,
    pub min_ns: i64,
    /// The sum of the block's latencies, ns: exact, so that the mean can be recomputed exactly
    /// ([`WakeupSummary::mean`]; JSON readers may round `mean_ns` in its last digit).
    pub sum_ns: i64,
    /// `sum_ns / samples` (not histogram-rounded), ns.
    pub mean_ns: f64,
    pub max_ns: i64,
    /// Periods that passed unserved, summed over the block's samples (their `missed`).
    pub missed_periods: u64,
}

impl WakeupSummary {
    /// The mean latency from the exact sum, ns.
    pub fn mean(&self) -> f64 {
        self.sum_ns as f64 / self.samples.max(1) as f64
    }

    /// The time from the block's first to its last due time, ns.
    pub(crate) fn span_ns(&self) -> u64 {
        self.last_due_ns.saturating_sub(self.first_due_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line of a run hours long (15-digit times, 6-digit sequence numbers, tens of
    /// microseconds) is within a sixth of [`LINE_BYTES`]: the estimate the pre-run check uses.
    #[test]
    fn a_summary_line_is_about_line_bytes() {
        let s = WakeupSummary {
            time_ns: 123_456_789_012_345,
            cpu: 1,
            first_seq: 123_456,
            last_seq: 123_456,
            samples: 1,
            dropped_records: 0,
            first_due_ns: 123_456_789_012_345,
            last_due_ns: 123_456_789_012_345,
            min_ns: 23_456,
            sum_ns: 23_456,
            mean_ns: 23_456.0,
            max_ns: 23_456,
            missed_periods: 0,
        };
        let line = serde_json::to_vec(&crate::format::events::Event::WakeupSummary(s)).unwrap();
        let bytes = line.len() as u64 + 1;
        assert!(
            bytes.abs_diff(LINE_BYTES) <= LINE_BYTES / 6,
            "{bytes} bytes against {LINE_BYTES}"
        );
    }
}

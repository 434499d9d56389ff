//! `wakeup_summary` in events.jsonl (`run --summary-every N`, FirmTimers `measure_latency -w
//! N`): the min, mean and max latency of each block of N consecutive recorded samples of one
//! measuring thread, with the block's sequence range, due times and missed periods, so that a
//! block can be matched sample for sample with samples.bin.

use serde::{Deserialize, Serialize};

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

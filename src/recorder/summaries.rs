//! `--summary-every N`: per measuring thread, the min, mean and max of every block of N
//! consecutive recorded samples (FirmTimers `measure_latency -w N`). Kept on the recorder's
//! side from the samples it records anyway, so the measuring loop does nothing for it; the
//! closed blocks wait here until the recorder's owner writes them to events.jsonl.

use crate::format::wakeup_summary::WakeupSummary;
use crate::measure::Sample;
use crate::measure::clock::monotonic_ns;

/// The block a thread is filling, and the blocks it has closed.
#[derive(Debug)]
pub(super) struct SummaryBlocks {
    cpu: usize,
    every: u64,
    open: Option<Open>,
    /// Closed blocks not yet taken ([`SummaryBlocks::take`]).
    closed: Vec<WakeupSummary>,
}

/// The running figures of the block being filled.
#[derive(Debug, Clone, Copy)]
struct Open {
    first_seq: u64,
    last_seq: u64,
    first_due_ns: u64,
    last_due_ns: u64,
    samples: u64,
    min_ns: i64,
    max_ns: i64,
    /// Exact while the block's latencies add up to less than 2^63 ns (292 years), which any
    /// block does; beyond that it would saturate rather than wrap.
    sum_ns: i64,
    missed_periods: u64,
}

impl SummaryBlocks {
    /// Blocks of `every` samples (at least 1) of the thread on `cpu`.
    pub(super) fn new(cpu: usize, every: u64) -> Self {
        SummaryBlocks {
            cpu,
            every: every.max(1),
            open: None,
            closed: Vec::new(),
        }
    }

    /// Adds a recorded sample; the block closes at its `every`-th.
    pub(super) fn record(&mut self, s: &Sample) {
        let b = self.open.get_or_insert(Open {
            first_seq: s.seq,
            last_seq: s.seq,
            first_due_ns: s.expected_ns,
            last_due_ns: s.expected_ns,
            samples: 0,
            min_ns: s.latency_ns,
            max_ns: s.latency_ns,
            sum_ns: 0,
            missed_periods: 0,
        });
        b.last_seq = s.seq;
        b.last_due_ns = s.expected_ns;
        b.samples += 1;
        b.min_ns = b.min_ns.min(s.latency_ns);
        b.max_ns = b.max_ns.max(s.latency_ns);
        b.sum_ns = b.sum_ns.saturating_add(s.latency_ns);
        b.missed_periods += u64::from(s.missed);
        if b.samples == self.every {
            self.close();
        }
    }

    /// Closes the block being filled, if it holds a sample: a thread's last, shorter block at
    /// the end of the run.
    pub(super) fn close(&mut self) {
        let Some(b) = self.open.take() else {
            return;
        };
        self.closed.push(WakeupSummary {
            time_ns: monotonic_ns(),
            cpu: self.cpu,
            first_seq: b.first_seq,
            last_seq: b.last_seq,
            samples: b.samples,
            dropped_records: (b.last_seq - b.first_seq + 1).saturating_sub(b.samples),
            first_due_ns: b.first_due_ns,
            last_due_ns: b.last_due_ns,
            min_ns: b.min_ns,
            sum_ns: b.sum_ns,
            mean_ns: b.sum_ns as f64 / b.samples as f64,
            max_ns: b.max_ns,
            missed_periods: b.missed_periods,
        });
    }

    /// The blocks closed since the last call, in order.
    pub(super) fn take(&mut self) -> Vec<WakeupSummary> {
        std::mem::take(&mut self.closed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(seq: u64, latency_ns: i64, missed: u32) -> Sample {
        Sample {
            seq,
            expected_ns: 1_000_000 * (seq + 1),
            latency_ns,
            missed,
        }
    }

    /// Blocks of 3 over 8 samples with a dropped record (seq 4): two full blocks with their
    /// exact figures, the last block of 2 only when closed, each taken once.
    #[test]
    fn blocks_hold_the_exact_figures_of_their_samples() {
        let mut b = SummaryBlocks::new(2, 3);
        let seqs_and_latencies = [
            (0, 10, 0),
            (1, -5, 0),
            (2, 40, 1),
            (3, 7, 0),
            (5, 8, 0),
            (6, 2_000_000, 2),
            (7, 1, 0),
            (8, 2, 0),
        ];
        for (seq, lat, missed) in seqs_and_latencies {
            b.record(&sample(seq, lat, missed));
        }
        let got = b.take();
        assert_eq!(got.len(), 2);
        let figures = |s: &WakeupSummary| {
            (
                s.cpu,
                s.first_seq,
                s.last_seq,
                s.samples,
                s.dropped_records,
                s.min_ns,
                s.max_ns,
                s.missed_periods,
            )
        };
        assert_eq!(figures(&got[0]), (2, 0, 2, 3, 0, -5, 40, 1));
        assert_eq!((got[0].sum_ns, got[0].mean_ns), (45, 15.0));
        assert_eq!(figures(&got[1]), (2, 3, 6, 3, 1, 7, 2_000_000, 2));
        assert_eq!(got[1].mean_ns, 2_000_015.0 / 3.0);
        assert_eq!(got[1].span_ns(), 3_000_000);
        assert!(b.take().is_empty());
        b.close();
        let last = b.take();
        assert_eq!(figures(&last[0]), (2, 7, 8, 2, 0, 1, 2, 0));
        assert_eq!(last[0].mean_ns, 1.5);
        b.close();
        assert!(b.take().is_empty(), "an empty block is not written");
    }
}

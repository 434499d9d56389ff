//! A thread's latency figures of the whole run and of the current log interval, with one
//! histogram record per sample: the interval's histogram takes each sample, and the run's is
//! added the interval's counts when the interval closes (once per log interval). The run's
//! exact figures (count, min, max, sum, sum of squares) are still summed sample by sample, so
//! that they and the histogram's counts are what recording each sample in both gave; only a
//! reader between two closes (a monitor, the figures of a continuous run's segment) pays for a
//! copy of the run's histogram with the current interval added, made once until the next
//! sample.
//!
//! Why: a histogram record is about 73 instructions (`hdrhistogram`'s `record_n_inner`), and
//! at 256 CPUs x 50 us with compact trace records the five per sample were about 40 % of the
//! drain side's work; the run's latency and IRQ latency histograms were two of them
//! (bench/README.md, `recorder-scale.sh`).

use crate::format::stats::LatencyStats;
use std::cell::OnceCell;

/// The figures of the run and of its current interval.
#[derive(Default)]
pub(super) struct RunAndInterval {
    /// Since the start: the exact figures of every sample, the histogram of the closed
    /// intervals.
    run: LatencyStats,
    /// The current interval, every figure (its histogram goes to latency.hlog).
    pub(super) interval: LatencyStats,
    /// The run's figures with the current interval's histogram added, when asked for since
    /// the last sample.
    merged: OnceCell<LatencyStats>,
}

impl RunAndInterval {
    /// Counts one sample in both.
    pub(super) fn record(&mut self, latency_ns: i64) {
        self.interval.record(latency_ns);
        self.run.record_exact(latency_ns);
        if self.merged.get().is_some() {
            self.merged = OnceCell::new();
        }
    }

    /// Ends the current interval (after its figures were written): its histogram joins the
    /// run's, and it starts empty.
    pub(super) fn close_interval(&mut self) {
        self.run.add_histogram(&self.interval.histogram);
        self.interval.reset();
        self.merged = OnceCell::new();
    }

    /// The run's exact figures so far (count, min, max, mean, early): its histogram lacks the
    /// current interval's samples.
    pub(super) fn exact(&self) -> &LatencyStats {
        &self.run
    }

    /// The run's figures so far, every sample in them.
    pub(super) fn run(&self) -> &LatencyStats {
        if self.interval.count() == 0 {
            return &self.run;
        }
        self.merged.get_or_init(|| {
            let mut run = self.run.clone();
            run.add_histogram(&self.interval.histogram);
            run
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Recorded both ways, the run's figures agree: every percentile, min, max, mean, the
    /// standard deviation, the histogram's counts, before and after each close, with a value
    /// that makes the histogram grow after the first close.
    #[test]
    fn the_run_is_what_recording_each_sample_in_it_gave() {
        let mut pair = RunAndInterval::default();
        let mut each = LatencyStats::default();
        let mut rng = crate::random::SplitMix64::new(7);
        for interval in 0..4 {
            for k in 0..5_000 {
                let v = match k {
                    // Early, then far above anything before (the histogram resizes).
                    0 => -1_500,
                    1 if interval == 2 => 3_000_000_000,
                    _ => 3_000 + (rng.uniform() * 27_000.0) as i64,
                };
                pair.record(v);
                each.record(v);
                if k % 1_700 == 0 {
                    assert_eq!(pair.run().summary(), each.summary());
                    assert_eq!(pair.run().histogram, each.histogram);
                }
            }
            assert_eq!(pair.interval.count(), 5_000);
            pair.close_interval();
            assert_eq!(pair.interval.count(), 0);
            assert_eq!(pair.run().summary(), each.summary());
            assert_eq!(pair.run().histogram, each.histogram);
            assert_eq!(pair.run().early, each.early);
            assert_eq!(pair.run().histogram.max(), each.histogram.max());
            assert_eq!(pair.run().histogram.min_nz(), each.histogram.min_nz());
        }
    }
}

//! The figures cyclictest prints, computed from every sample of the run (samples.bin) by
//! cyclictest's own rules: each latency truncated to whole microseconds (or kept in ns with
//! `-N`), min, the last latency (`Act`), the average of the truncated values, max, and with
//! `-h N` the count per unit below N, the overflows at or above N and the cycle numbers (0-based
//! index of the wakeup in its thread) of the first N overflows. A latency below zero (a clock
//! step) counts in bucket 0 of the histogram.

use crate::format::samplelog::SampleRecord;
use std::path::Path;

/// One thread's figures, in cyclictest's unit (us, or ns with `-N`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ThreadFigures {
    /// Wakeups (cyclictest's `C:`).
    pub cycles: u64,
    pub min: i64,
    /// The last wakeup's latency (`Act:`).
    pub act: i64,
    /// The sum of the truncated latencies, for the average.
    pub sum: i128,
    pub max: i64,
    /// Counts per unit below the histogram size (empty without `-h`).
    pub histogram: Vec<u64>,
    /// Wakeups at or above the histogram size.
    pub overflows: u64,
    /// The cycle numbers of the first overflows, at most as many as the histogram has units.
    pub overflow_cycles: Vec<u64>,
}

impl ThreadFigures {
    /// A thread's figures before its first sample, with a histogram of `histogram` units.
    pub fn new(histogram: u64) -> Self {
        ThreadFigures {
            histogram: vec![0; histogram as usize],
            ..Default::default()
        }
    }

    /// Adds one latency, in cyclictest's unit.
    pub fn add(&mut self, value: i64) {
        if self.cycles == 0 || value < self.min {
            self.min = value;
        }
        if self.cycles == 0 || value > self.max {
            self.max = value;
        }
        self.sum += value as i128;
        self.act = value;
        let size = self.histogram.len() as u64;
        if size > 0 {
            let bucket = value.max(0) as u64;
            if bucket >= size {
                if (self.overflow_cycles.len() as u64) < size {
                    self.overflow_cycles.push(self.cycles);
                }
                self.overflows += 1;
            } else {
                self.histogram[bucket as usize] += 1;
            }
        }
        self.cycles += 1;
    }

    /// cyclictest's integer average: the sum over the cycles, truncated; 0 without cycles.
    pub fn avg(&self) -> i64 {
        if self.cycles == 0 {
            0
        } else {
            (self.sum / self.cycles as i128) as i64
        }
    }

    /// The exact average, for the JSON file's two decimals.
    pub(crate) fn avg_exact(&self) -> f64 {
        if self.cycles == 0 {
            0.0
        } else {
            self.sum as f64 / self.cycles as f64
        }
    }
}

/// A latency in cyclictest's unit: ns truncated toward zero to us (as its integer arithmetic
/// does), or ns with `-N`.
pub(crate) fn in_unit(latency_ns: i64, nsecs: bool) -> i64 {
    if nsecs { latency_ns } else { latency_ns / 1000 }
}

/// Every thread's figures from `records`, the thread of a record being the position of its CPU
/// in `cpus`; records of other CPUs are ignored.
pub(crate) fn from_records(
    records: impl Iterator<Item = SampleRecord>,
    cpus: &[usize],
    histogram: u64,
    nsecs: bool,
) -> Vec<ThreadFigures> {
    let mut threads = vec![ThreadFigures::new(histogram); cpus.len()];
    for r in records {
        if let Some(k) = cpus.iter().position(|&c| c == r.cpu as usize) {
            threads[k].add(in_unit(r.latency_ns, nsecs));
        }
    }
    threads
}

/// The figures from the samples.bin of the run in `run_dir`, of the wakeups due up to `due_until` (ns on the run's
/// clock) when given (`-b`); a damaged end is a warning (the samples before it count), a read
/// error is an error.
pub(crate) fn from_sample_log(
    run_dir: &Path,
    cpus: &[usize],
    histogram: u64,
    nsecs: bool,
    due_until: Option<u64>,
) -> Result<(Vec<ThreadFigures>, Option<String>), String> {
    let mut reader = crate::commands::dropin::sample_log(run_dir)?;
    let mut error = None;
    let records = std::iter::from_fn(|| match reader.next()? {
        Ok(r) => Some(r),
        Err(e) => {
            error = Some(e.to_string());
            None
        }
    })
    .filter(|r| due_until.is_none_or(|d| r.expected_ns <= d));
    let figures = from_records(records, cpus, histogram, nsecs);
    if let Some(e) = error {
        let path = run_dir.join(crate::format::samplelog::FILE_NAME);
        return Err(format!("{}: {e}", path.display()));
    }
    Ok((figures, reader.damage().map(str::to_string)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(cpu: u32, latency_ns: i64) -> SampleRecord {
        SampleRecord {
            cpu,
            missed: 0,
            seq: 0,
            expected_ns: 0,
            latency_ns,
            irq_latency_ns: None,
        }
    }

    #[test]
    fn cyclictests_rules_on_known_samples() {
        let samples = [
            (2, 3_999),
            (3, 10_500),
            (2, 5_000),
            (2, 12_000),
            (2, 250),
            (3, 9_999),
            (2, 20_001),
        ];
        let t = from_records(
            samples.iter().map(|&(c, l)| record(c, l)),
            &[2, 3],
            10,
            false,
        );
        // CPU 2: 3, 5, 12, 0, 20 us.
        assert_eq!(t[0].cycles, 5);
        assert_eq!((t[0].min, t[0].act, t[0].max), (0, 20, 20));
        assert_eq!(t[0].avg(), 8); // 40 / 5
        assert_eq!(t[0].histogram[3], 1);
        assert_eq!(t[0].histogram[0], 1);
        assert_eq!(t[0].overflows, 2);
        assert_eq!(t[0].overflow_cycles, vec![2, 4]);
        // CPU 3: 10, 9 us.
        assert_eq!((t[1].min, t[1].act, t[1].max, t[1].avg()), (9, 9, 10, 9));
        assert_eq!(t[1].avg_exact(), 9.5);
        assert_eq!(t[1].histogram[9], 1);
        assert_eq!(t[1].overflows, 1);
    }

    #[test]
    fn overflow_cycle_numbers_are_capped_at_the_histogram_size() {
        let t = from_records((0..5).map(|_| record(0, 9_000)), &[0], 2, false);
        assert_eq!(t[0].overflows, 5);
        assert_eq!(t[0].overflow_cycles, vec![0, 1]);
    }

    #[test]
    fn nanoseconds_with_dash_n_and_truncation_toward_zero() {
        assert_eq!(in_unit(1_999, false), 1);
        assert_eq!(in_unit(-999, false), 0);
        assert_eq!(in_unit(1_999, true), 1_999);
    }
}

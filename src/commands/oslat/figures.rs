//! The figures oslat prints, from a `jitterlab noise` run: oslat puts every pass of its loop
//! (the time between two counter reads) in a 1 us bucket, bucket k holding the passes of
//! [k-1, k) us (it prints `floor(us) + 1`, so every pass is at least "1 us"), the last bucket
//! also every longer pass. jitterlab's loop counts its passes exactly (run.json
//! `noise.iterations`) and records every gap above its threshold exactly (samples.bin); with
//! the threshold below 1 us every pass of 1 us or more is a recorded gap, and the rest are
//! bucket 1: passes minus the recorded gaps of 1 us or more.
//!
//! From those: the minimum and maximum pass in oslat's unit (`floor(us) + 1`), the average of
//! that unit over every pass (each pass counted at its own value, also in the last bucket:
//! oslat's own average counts an overflowed pass 1 us short and adds the first thread's
//! overflows to every thread's; docs/oslat.md), the time measured (`noise.measured_ns`) and the
//! counter's frequency in whole MHz (`noise.clock.ticks_per_s`). Gaps whose record the
//! recorder dropped are in no bucket; they are counted apart (`missing`) and warned about.

use crate::format::samplelog::SampleRecord;
use std::path::Path;

/// One thread's figures, in oslat's unit (a pass of `ns` is `ns / 1000 + 1`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OslatFigures {
    pub cpu: usize,
    /// The counter's rate, whole MHz, as oslat prints it (1000 for CLOCK_MONOTONIC's ns).
    pub counter_mhz: u64,
    /// Passes per bucket, the last one including every longer pass.
    pub buckets: Vec<u64>,
    /// The shortest and longest pass (0 and 0 without any).
    pub min_us: u64,
    pub max_us: u64,
    /// The sum of every pass in oslat's unit, for the average.
    pub sum_us: u128,
    /// The time measured, ns.
    pub duration_ns: u64,
    /// Gaps of 1 us or more whose record was dropped: in no bucket.
    pub missing: u64,
}

impl OslatFigures {
    /// The passes counted in the buckets.
    pub fn passes(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// The mean pass in oslat's unit; None without passes.
    pub(crate) fn average_us(&self) -> Option<f64> {
        let n = self.passes();
        (n > 0).then(|| self.sum_us as f64 / n as f64)
    }
}

/// What run.json says of one noise thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LoopCounts {
    pub cpu: usize,
    /// Passes of the loop (`noise.iterations`).
    pub passes: u64,
    /// `noise.measured_ns`.
    pub measured_ns: u64,
    /// `noise.clock.ticks_per_s`, rounded.
    pub(crate) ticks_per_s: u64,
    /// `dropped_records`.
    pub dropped: u64,
}

/// oslat's unit for a pass of `ns`: its whole microseconds plus one.
pub(crate) fn oslat_us(ns: u64) -> u64 {
    ns / 1000 + 1
}

/// One thread's figures from its loop's counts and the lengths of its recorded gaps (ns).
pub(crate) fn from_gaps(
    counts: &LoopCounts,
    buckets: usize,
    gaps_ns: impl Iterator<Item = u64>,
) -> OslatFigures {
    let mut f = OslatFigures {
        cpu: counts.cpu,
        counter_mhz: counts.ticks_per_s / 1_000_000,
        buckets: vec![0; buckets.max(1)],
        duration_ns: counts.measured_ns,
        missing: counts.dropped,
        ..Default::default()
    };
    let last = f.buckets.len() - 1;
    let mut long = 0u64;
    let mut min_long = u64::MAX;
    for ns in gaps_ns {
        let us = oslat_us(ns);
        if us < 2 {
            // A recorded gap under 1 us is one of bucket 1's passes, counted below.
            continue;
        }
        long += 1;
        f.buckets[(us as usize - 1).min(last)] += 1;
        f.sum_us += us as u128;
        f.max_us = f.max_us.max(us);
        min_long = min_long.min(us);
    }
    let short = counts.passes.saturating_sub(long + counts.dropped);
    f.buckets[0] += short;
    f.sum_us += short as u128;
    if short > 0 {
        f.min_us = 1;
        f.max_us = f.max_us.max(1);
    } else if long > 0 {
        f.min_us = min_long;
    }
    f
}

/// Every thread's figures from the samples.bin of the run in `run_dir`; a damaged end is a warning (the gaps before
/// it count), a read error an error.
pub(crate) fn from_sample_log(
    run_dir: &Path,
    threads: &[LoopCounts],
    buckets: usize,
) -> Result<(Vec<OslatFigures>, Option<String>), String> {
    let mut per_cpu: Vec<Vec<u64>> = vec![Vec::new(); threads.len()];
    let path = run_dir.join(crate::format::samplelog::FILE_NAME);
    let mut reader = crate::commands::dropin::sample_log(run_dir)?;
    for record in reader.by_ref() {
        let r: SampleRecord = record.map_err(|e| format!("{}: {e}", path.display()))?;
        if let Some(k) = threads.iter().position(|t| t.cpu == r.cpu as usize) {
            per_cpu[k].push(r.latency_ns.max(0) as u64);
        }
    }
    let figures = threads
        .iter()
        .zip(per_cpu)
        .map(|(t, gaps)| from_gaps(t, buckets, gaps.into_iter()))
        .collect();
    Ok((figures, reader.damage().map(str::to_string)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(passes: u64, dropped: u64) -> LoopCounts {
        LoopCounts {
            cpu: 3,
            passes,
            measured_ns: 1_500_000_000,
            ticks_per_s: 2_445_678_901,
            dropped,
        }
    }

    /// 1000 passes: 995 short ones (one of them recorded at 999.x ns), then 1 us, 1.999 us,
    /// 4.5 us, 7 us and 52 ms.
    #[test]
    fn oslats_buckets_on_known_gaps() {
        let gaps = [999, 1_000, 1_999, 4_500, 7_000, 52_160_000];
        let f = from_gaps(&counts(1000, 0), 8, gaps.into_iter());
        assert_eq!(f.buckets, vec![995, 2, 0, 0, 1, 0, 0, 2]);
        assert_eq!(f.passes(), 1000);
        assert_eq!((f.min_us, f.max_us), (1, 52_161));
        // 995 * 1 + 2 + 2 + 5 + 8 + 52161
        assert_eq!(f.sum_us, 995 + 2 + 2 + 5 + 8 + 52_161);
        assert_eq!(f.average_us(), Some(53_173.0 / 1000.0));
        assert_eq!(
            (f.counter_mhz, f.duration_ns, f.cpu),
            (2445, 1_500_000_000, 3)
        );
    }

    #[test]
    fn dropped_gaps_are_in_no_bucket() {
        let f = from_gaps(&counts(100, 2), 32, [3_000].into_iter());
        assert_eq!(f.buckets[0], 97);
        assert_eq!(f.buckets[3], 1);
        assert_eq!((f.passes(), f.missing), (98, 2));
    }

    #[test]
    fn a_loop_of_long_passes_only_has_no_1us_minimum() {
        let f = from_gaps(&counts(2, 0), 32, [3_000, 5_000].into_iter());
        assert_eq!((f.min_us, f.max_us, f.buckets[0]), (4, 6, 0));
        let none = from_gaps(&counts(0, 0), 32, std::iter::empty());
        assert_eq!((none.min_us, none.max_us, none.average_us()), (0, 0, None));
    }
}

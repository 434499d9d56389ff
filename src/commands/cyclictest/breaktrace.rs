//! `-b N` (breaktrace): cyclictest stops every thread once a latency exceeds N (us, or ns with
//! `-N`) and names the thread and the value. Here the drain side sees the latency at its next
//! round (within 100 ms) and stops the run; the break itself is found afterwards in the
//! samples, exactly: the earliest wakeup over N. The figures printed then cover the wakeups
//! due up to that wakeup, as cyclictest's threads stop at their next loop.

use crate::format::samplelog::SampleRecord;
use std::path::Path;

/// The smallest latency, ns, that exceeds `break_value` in cyclictest's unit (whose values
/// are truncated: `> 100` us is 101 us, from 101 000 ns).
pub(crate) fn limit_ns(break_value: u64, nsecs: bool) -> i64 {
    let next = break_value.saturating_add(1);
    let ns = if nsecs {
        next
    } else {
        next.saturating_mul(1000)
    };
    i64::try_from(ns).unwrap_or(i64::MAX)
}

/// The wakeup that broke the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Break {
    pub cpu: usize,
    pub latency_ns: i64,
    /// Its due time on the run's clock, ns: the figures cover wakeups due up to it.
    pub due_ns: u64,
}

/// The earliest wakeup (by the time it woke) at or over `limit_ns` among `cpus`' records.
pub(crate) fn find(
    records: impl Iterator<Item = SampleRecord>,
    cpus: &[usize],
    limit_ns: i64,
) -> Option<Break> {
    records
        .filter(|r| r.latency_ns >= limit_ns && cpus.contains(&(r.cpu as usize)))
        .min_by_key(|r| r.expected_ns.saturating_add_signed(r.latency_ns))
        .map(|r| Break {
            cpu: r.cpu as usize,
            latency_ns: r.latency_ns,
            due_ns: r.expected_ns,
        })
}

/// [`find`] over the samples.bin of the run in `run_dir`.
pub(crate) fn find_in(
    run_dir: &Path,
    cpus: &[usize],
    limit_ns: i64,
) -> Result<Option<Break>, String> {
    let reader = crate::commands::dropin::sample_log(run_dir)?;
    Ok(find(reader.map_while(Result::ok), cpus, limit_ns))
}

/// What cyclictest prints after the histogram with `-b`: the threads' ids, and the thread
/// that broke and its value when one did.
pub(crate) fn lines(tids: &[i32], broke: Option<(i32, i64)>) -> String {
    let mut out = String::from("# Thread Ids:");
    for tid in tids {
        out += &format!(" {tid:05}");
    }
    out.push('\n');
    if let Some((tid, value)) = broke {
        out += &format!("# Break thread: {tid}\n# Break value: {value}\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(cpu: u32, expected_ns: u64, latency_ns: i64) -> SampleRecord {
        SampleRecord {
            cpu,
            missed: 0,
            seq: 0,
            expected_ns,
            latency_ns,
            irq_latency_ns: None,
        }
    }

    #[test]
    fn the_limit_is_the_first_value_over_the_break() {
        assert_eq!(limit_ns(100, false), 101_000);
        assert_eq!(limit_ns(100, true), 101);
    }

    #[test]
    fn the_break_is_the_earliest_wakeup_over_the_limit() {
        let records = [
            record(0, 1_000_000, 5_000),
            record(1, 1_000_000, 300_000), // wakes at 1.3 ms
            record(0, 2_000_000, 200_000), // over too, but wakes at 2.2 ms
            record(0, 1_100_000, 150_000), // wakes at 1.25 ms: the first
            record(2, 0, 900_000),         // a CPU not measured
        ];
        let b = find(records.into_iter(), &[0, 1], limit_ns(100, false)).unwrap();
        assert_eq!((b.cpu, b.latency_ns, b.due_ns), (0, 150_000, 1_100_000));
        assert_eq!(
            find(records.into_iter(), &[0, 1], limit_ns(999, false)),
            None
        );
    }

    #[test]
    fn lines_as_cyclictest_prints_them() {
        assert_eq!(
            lines(&[812, 813], Some((812, 150))),
            "# Thread Ids: 00812 00813\n# Break thread: 812\n# Break value: 150\n"
        );
        assert_eq!(lines(&[812], None), "# Thread Ids: 00812\n");
    }
}

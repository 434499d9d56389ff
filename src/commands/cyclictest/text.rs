//! cyclictest's text output, character for character as rt-tests 2.x prints it (its
//! `print_stat` and `print_hist`), so that the parsers written for cyclictest read it: the
//! status line per thread, the `policy:` header above the status lines, and the `-h` histogram
//! with its `#` summary lines. The numbers carry no unit: cyclictest's format has none (us, or
//! ns with `-N`), and changing it would break every parser it exists for.

use super::figures::ThreadFigures;
use std::fmt::Write;

/// What a status line says of its thread besides the figures.
#[derive(Debug, Clone, Copy)]
pub struct ThreadId {
    pub tid: i32,
    pub priority: i32,
    /// The thread's interval, us (cyclictest prints us even with `-N`).
    pub interval_us: u64,
}

/// `T: 0 ( 1234) P:95 I:1000 C:  10000 Min:      3 Act:    5 Avg:    4 Max:      20`.
pub fn status_line(index: usize, id: &ThreadId, f: &ThreadFigures, nsecs: bool) -> String {
    // -N widens Act and Avg (cyclictest's two format strings).
    let width = if nsecs { 8 } else { 5 };
    format!(
        "T:{index:>2} ({:>5}) P:{:>2} I:{} C:{:>7} Min:{:>7} Act:{:>width$} Avg:{:>width$} Max:{:>8}",
        id.tid,
        id.priority,
        id.interval_us,
        f.cycles,
        f.min,
        f.act,
        f.avg(),
        f.max,
    )
}

/// The header cyclictest prints above its status lines (without `-q`), and the blank line.
pub(crate) fn policy_header(policy: &str, loadavg: &str) -> String {
    format!("policy: {policy}: loadavg: {loadavg}          \n\n")
}

/// cyclictest's name of a policy in the header.
pub(crate) fn policy_name(policy: crate::measure::PolicyKind) -> &'static str {
    use crate::measure::PolicyKind::*;
    match policy {
        Fifo => "fifo",
        Rr => "rr",
        Batch => "batch",
        Idle => "idle",
        Other | Deadline => "other",
    }
}

/// The `-h`/`-H` output: rows per unit, then the summary lines, then a blank line.
pub fn histogram(threads: &[ThreadFigures], histofall: bool) -> String {
    let all = histofall && threads.len() > 1;
    let size = threads.first().map_or(0, |t| t.histogram.len());
    let mut out = String::from("# Histogram\n");
    let mut totals = vec![0u64; threads.len() + 1];
    for bucket in 0..size {
        let _ = write!(out, "{bucket:06} ");
        let row: Vec<String> = threads
            .iter()
            .map(|t| format!("{:06}", t.histogram[bucket]))
            .collect();
        out += &row.join("\t");
        let sum: u64 = threads.iter().map(|t| t.histogram[bucket]).sum();
        for (k, t) in threads.iter().enumerate() {
            totals[k] += t.histogram[bucket];
        }
        if all {
            let _ = write!(out, "\t{sum:06}");
            totals[threads.len()] += sum;
        }
        out.push('\n');
    }
    let shown = if all {
        threads.len() + 1
    } else {
        threads.len()
    };
    summary_line(&mut out, "# Total:", totals[..shown].iter(), 9);
    summary_line(
        &mut out,
        "# Min Latencies:",
        threads.iter().map(|t| t.min),
        5,
    );
    summary_line(
        &mut out,
        "# Avg Latencies:",
        threads.iter().map(|t| t.avg()),
        5,
    );
    let maxmax = threads.iter().map(|t| t.max).max().unwrap_or(0);
    let max_all = all.then_some(maxmax);
    summary_line(
        &mut out,
        "# Max Latencies:",
        threads.iter().map(|t| t.max).chain(max_all),
        5,
    );
    let overflows_all = all.then(|| threads.iter().map(|t| t.overflows).sum::<u64>());
    summary_line(
        &mut out,
        "# Histogram Overflows:",
        threads.iter().map(|t| t.overflows).chain(overflows_all),
        5,
    );
    out += "# Histogram Overflow at cycle number:\n";
    for (k, t) in threads.iter().enumerate() {
        let _ = write!(out, "# Thread {k}:");
        for c in &t.overflow_cycles {
            let _ = write!(out, " {c:05}");
        }
        let listed = t.overflow_cycles.len() as u64;
        if listed < t.overflows {
            let _ = write!(out, " # {:05} others", t.overflows - listed);
        }
        out.push('\n');
    }
    out.push('\n');
    out
}

/// `label` and each value zero-padded to `width`, one line.
fn summary_line<T: std::fmt::Display>(
    out: &mut String,
    label: &str,
    values: impl Iterator<Item = T>,
    width: usize,
) {
    out.push_str(label);
    for v in values {
        let _ = write!(out, " {v:0width$}");
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(values: &[i64], size: u64) -> ThreadFigures {
        let mut f = ThreadFigures::new(size);
        values.iter().for_each(|&v| f.add(v));
        f
    }

    #[test]
    fn status_lines_are_cyclictests() {
        let id = ThreadId {
            tid: 1234,
            priority: 95,
            interval_us: 1000,
        };
        let f = figures(&[3, 5, 20, 4], 0);
        assert_eq!(
            status_line(0, &id, &f, false),
            "T: 0 ( 1234) P:95 I:1000 C:      4 Min:      3 Act:    4 Avg:    8 Max:      20"
        );
        assert_eq!(
            status_line(12, &id, &f, true),
            "T:12 ( 1234) P:95 I:1000 C:      4 Min:      3 Act:       4 Avg:       8 Max:      20"
        );
    }

    #[test]
    fn the_histogram_is_cyclictests() {
        let a = figures(&[0, 1, 1, 5], 3);
        let b = figures(&[2, 2, 2], 3);
        let expected = "# Histogram\n\
            000000 000001\t000000\t000001\n\
            000001 000002\t000000\t000002\n\
            000002 000000\t000003\t000003\n\
            # Total: 000000003 000000003 000000006\n\
            # Min Latencies: 00000 00002\n\
            # Avg Latencies: 00001 00002\n\
            # Max Latencies: 00005 00002 00005\n\
            # Histogram Overflows: 00001 00000 00001\n\
            # Histogram Overflow at cycle number:\n\
            # Thread 0: 00003\n\
            # Thread 1:\n\n";
        assert_eq!(histogram(&[a.clone(), b.clone()], true), expected);
        let plain = histogram(&[a, b], false);
        assert!(plain.contains("000000 000001\t000000\n"), "{plain}");
        assert!(plain.contains("# Max Latencies: 00005 00002\n"), "{plain}");
        let many = histogram(&[figures(&[9, 9, 9], 2)], false);
        assert!(
            many.contains("# Thread 0: 00000 00001 # 00001 others\n"),
            "{many}"
        );
    }
}

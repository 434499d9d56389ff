//! What oslat (rt-tests 2.40) prints, line for line: the version line, the settings it dumps
//! unless `-q`, its progress lines, and the summary table: one column per CPU after a label
//! right-aligned in 12 characters and a tab (`        Core:\t 0 1`), the buckets as `NNN (us)`,
//! the last marked `(including overflows)`, then Minimum, Average (3 decimals), Maximum,
//! Max-Min (us) and Duration (s, 3 decimals), and a blank line.

use super::figures::OslatFigures;
use std::fmt::Write;

/// The rt-tests release whose output is printed.
pub(crate) const RT_TESTS_VERSION: &str = "2.40";

/// The first line. oslat prints `oslat V 2.40`; the drop-in says who measured, after the
/// version a parser reads.
pub fn version_line() -> String {
    format!(
        "oslat V {RT_TESTS_VERSION} (jitterlab {})\n",
        env!("CARGO_PKG_VERSION")
    )
}

/// The settings oslat dumps before measuring (without `-q`).
#[derive(Debug, Clone)]
pub struct Settings {
    pub duration_s: u64,
    /// SCHED_FIFO priority, or None for the default policy.
    pub rtprio: Option<i32>,
    /// The `-c` list as given, or `all`.
    pub cpu_list: String,
    pub main_cpu: usize,
}

/// oslat's warning when a FIFO spinner is on CPU 0, printed even with `-q`.
pub const FIFO_ON_CPU0: &str =
    "WARNING: Running SCHED_FIFO workload on CPU 0 may hang the thread\n";

/// The settings' lines and the blank line after them. There is no workload and no pre-heat in
/// jitterlab oslat: `Workload: no`, `Preheat cores: 0`.
pub fn settings(s: &Settings) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Total runtime: \t\t{} seconds", s.duration_s);
    let priority = match s.rtprio {
        Some(p) => format!("SCHED_FIFO:{p}"),
        None => "default".into(),
    };
    let _ = writeln!(out, "Thread priority: \t{priority}");
    let _ = writeln!(out, "CPU list: \t\t{}", s.cpu_list);
    let _ = writeln!(out, "CPU for main thread: \t{}", s.main_cpu);
    out += "Workload: \t\tno\n";
    out += "Workload mem: \t\t0 (KiB)\n";
    out += "Preheat cores: \t\t0\n\n";
    out
}

/// One row: the label right-aligned in 12, a tab, each thread's value after a space, the end.
fn row(out: &mut String, label: &str, values: impl Iterator<Item = String>, end: &str) {
    let _ = write!(out, "{label:>12}:\t");
    for v in values {
        let _ = write!(out, " {v}");
    }
    let _ = writeln!(out, "{end}");
}

/// The summary table. `zero_omit` (`-z`): rows whose buckets are zero on every thread are left
/// out (never the last), a run of them replaced by `    ...`.
pub fn summary(threads: &[OslatFigures], zero_omit: bool) -> String {
    let mut out = String::new();
    row(
        &mut out,
        "Core",
        threads.iter().map(|t| t.cpu.to_string()),
        "",
    );
    row(
        &mut out,
        "Counter Freq",
        threads.iter().map(|t| t.counter_mhz.to_string()),
        " (Mhz)",
    );
    let n = threads.iter().map(|t| t.buckets.len()).max().unwrap_or(0);
    let count = |t: &OslatFigures, j: usize| t.buckets.get(j).copied().unwrap_or(0);
    let mut skipped = false;
    for j in 0..n {
        let last = j + 1 == n;
        if zero_omit && !last && threads.iter().all(|t| count(t, j) == 0) {
            skipped = true;
            continue;
        }
        if std::mem::take(&mut skipped) {
            out += "    ...\n";
        }
        row(
            &mut out,
            &format!("{:03} (us)", j + 1),
            threads.iter().map(|t| count(t, j).to_string()),
            if last { " (including overflows)" } else { "" },
        );
    }
    row(
        &mut out,
        "Minimum",
        threads.iter().map(|t| t.min_us.to_string()),
        " (us)",
    );
    row(
        &mut out,
        "Average",
        threads
            .iter()
            .map(|t| format!("{:.3}", t.average_us().unwrap_or(0.0))),
        " (us)",
    );
    row(
        &mut out,
        "Maximum",
        threads.iter().map(|t| t.max_us.to_string()),
        " (us)",
    );
    row(
        &mut out,
        "Max-Min",
        threads.iter().map(|t| (t.max_us - t.min_us).to_string()),
        " (us)",
    );
    row(
        &mut out,
        "Duration",
        threads
            .iter()
            .map(|t| format!("{:.3}", t.duration_ns as f64 / 1e9)),
        " (sec)",
    );
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_rows_are_omitted_with_dots_but_never_the_last() {
        let t = OslatFigures {
            cpu: 2,
            counter_mhz: 2445,
            buckets: vec![10, 0, 0, 1, 0],
            min_us: 1,
            max_us: 4,
            sum_us: 14,
            duration_ns: 1_000_400_000,
            missing: 0,
        };
        let text = summary(std::slice::from_ref(&t), true);
        assert_eq!(
            text,
            "        Core:\t 2\n\
             Counter Freq:\t 2445 (Mhz)\n    \
             001 (us):\t 10\n    \
             ...\n    \
             004 (us):\t 1\n    \
             005 (us):\t 0 (including overflows)\n     \
             Minimum:\t 1 (us)\n     \
             Average:\t 1.273 (us)\n     \
             Maximum:\t 4 (us)\n     \
             Max-Min:\t 3 (us)\n    \
             Duration:\t 1.000 (sec)\n\n"
        );
        assert!(!summary(&[t], false).contains("..."));
    }
}

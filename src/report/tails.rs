//! The tail figures in words (docs/tails.md): shares within thresholds, spike rates and
//! periods, the run length a `max<` budget still needs, and the extrapolated worst case,
//! always labelled "extrapolated, not measured". Used by the terminal summary after a run and
//! by `jitterlab report`.

use crate::analysis::compare::RunInfo;
use crate::analysis::metric::Metric;
use crate::analysis::tails::run_length;
use crate::analysis::tails_compare::TailComparison;
use crate::results::format::tails::{SpikeRecord, TailRecord, WithinRecord};
use crate::results::run_record::{RunRecord, ThreadSummary};
use crate::units::{format_elapsed, format_ns, group_digits as grouped};
use std::fmt::Write;

/// Every tail line of a run, indented under a heading; empty when the run has no tail figures
/// (imported runs, files written before them).
pub fn summary(record: &RunRecord) -> String {
    let mut out = String::new();
    let limits = max_limits(record);
    for t in &record.threads {
        let mut lines: Vec<String> = match &t.noise {
            // A noise run's statements: noise per second, time lost, gaps over each length
            // per second, the longest gap. "% within the threshold" and "spikes over the
            // deadline" mean nothing for gaps that are all over the threshold.
            Some(n) if record.kind.is_noise() => super::noise::statements(record, t, n),
            _ => {
                let mut lines: Vec<String> = t.tails.within.iter().map(within_line).collect();
                lines.extend(t.tails.spikes.iter().map(spike_line));
                lines
            }
        };
        lines.extend(t.tails.firm.iter().map(|f| {
            format!(
                "(m,k)-firm, k = {}: at most {} deadline misses in any {} consecutive periods (worst window from period {})",
                f.k, f.worst_misses, f.window_periods, f.worst_first_period
            )
        }));
        lines.extend(limits.iter().filter_map(|&l| run_length_line(t, l)));
        if let Some(tail) = &t.tails.tail {
            lines.push(tail_line(tail, t.interval_ns));
        }
        for line in lines {
            let _ = writeln!(out, "  cpu{}: {line}", t.cpu);
        }
    }
    if out.is_empty() {
        return out;
    }
    format!("Tails (docs/tails.md):\n{out}")
}

/// "99.512 % (1 990 241 of 2 000 000) within 250.0 us; 9 759 above".
pub fn within_line(w: &WithinRecord) -> String {
    let Some(share) = w.percent_within() else {
        return format!("no wakeups to count within {}", format_ns(w.threshold_ns));
    };
    let mut line = format!(
        "{share:.3} % ({} of {}) within {}; {} above",
        grouped(w.within),
        grouped(w.total()),
        format_ns(w.threshold_ns),
        grouped(w.above)
    );
    if w.undecided > 0 {
        let _ = write!(
            line,
            ", {} undecided (one histogram bucket straddles the threshold; counted as above)",
            grouped(w.undecided)
        );
    }
    line
}

/// "12 spikes over 1.00 ms (deadline), 8.0/h (4.1-14.0/h), MTBF 7m30s, every 3.00 s (94 % on
/// the grid; times known to 1.00 ms)"; from interval maxima, "from 1.00 s interval maxima: at
/// least 12 spikes over ...".
pub fn spike_line(s: &SpikeRecord) -> String {
    let over = format!("over {} ({})", format_ns(s.threshold_ns), s.basis);
    if let Some(why) = &s.not_counted {
        return format!("spikes {over}: not counted: {why}");
    }
    let mut line = format!(
        "{}{} spike{} {over}, {}/h (95 % {}-{}/h)",
        if s.count_is_lower_bound {
            // Several spikes in one log interval count as one.
            format!(
                "from {} interval maxima: at least ",
                format_ns(s.resolution_ns)
            )
        } else {
            String::new()
        },
        grouped(s.count),
        if s.count == 1 { "" } else { "s" },
        rate(s.rate_per_hour),
        rate(s.rate_per_hour_low),
        rate(s.rate_per_hour_high),
    );
    if let Some(m) = s.mtbf_ns {
        let _ = write!(line, ", MTBF {}", format_elapsed(m));
    }
    if let (Some(p), Some(share)) = (s.period_ns, s.period_share) {
        let _ = write!(
            line,
            ", every {} ({:.0} % on the grid; times known to {})",
            format_ns(p.round() as u64),
            100.0 * share,
            format_ns(s.resolution_ns)
        );
    } else if s.count > 0 {
        let _ = write!(line, ", no period");
    }
    line
}

/// The run-length sentence (`run_length::claim`) for a `max<` limit counted in `within`.
pub fn run_length_line(t: &ThreadSummary, limit_ns: u64) -> Option<String> {
    let w = t.tails.within.iter().find(|w| w.threshold_ns == limit_ns)?;
    run_length::claim(limit_ns, w.above + w.undecided, w.total(), t.interval_ns)
}

/// The extrapolated levels, labelled, or why there are none.
pub fn tail_line(tail: &TailRecord, interval_ns: u64) -> String {
    match tail {
        // Some reasons already start with "not extrapolated:".
        TailRecord::Refused { reason, .. } => match reason.strip_prefix("not extrapolated: ") {
            Some(r) => format!("not extrapolated: {r}"),
            None => format!("not extrapolated: {reason}"),
        },
        TailRecord::Fitted(f) => {
            let per_second = 1e9 / interval_ns.max(1) as f64;
            let levels: Vec<String> = f
                .levels
                .iter()
                .map(|l| {
                    let high = l
                        .high_ns
                        .map_or("unbounded".into(), |h| format_ns(h.round() as u64));
                    let low = l.low_ns.map_or("-".into(), |v| format_ns(v.round() as u64));
                    format!(
                        "p {:.0e} per wakeup (once in {}): {} ({low} - {high})",
                        l.per_wakeup,
                        format_elapsed((1e9 / (l.per_wakeup * per_second)).min(1.8e19) as u64),
                        format_ns(l.latency_ns.round() as u64)
                    )
                })
                .collect();
            format!(
                "extrapolated, not measured (GPD over {}, shape {:.2}, {} independent exceedances): {}",
                format_ns(f.threshold_ns),
                f.shape,
                f.clusters,
                levels.join("; ")
            )
        }
    }
}

/// The tail comparison for people: "cpu0 within 250.0 us: A 99.241 %, B 99.870 % (+0.629
/// points, 95 % 0.45 to 0.81)"; "cpu0 spikes over 1.00 ms: A 10130/h (7652-13154/h), B ...".
pub fn compare_lines(c: &TailComparison, runs: &[RunInfo]) -> Vec<String> {
    let mut lines = Vec::new();
    for row in &c.within {
        let mut parts = Vec::new();
        for (i, (p, run)) in row.percent.iter().zip(runs).enumerate() {
            let mut part = match p {
                Some(p) => format!("{} {p:.3} %", run.label),
                None => format!("{} not counted", run.label),
            };
            if i > 0
                && let Some(Some((d, low, high))) = row.difference.get(i - 1)
            {
                let _ = write!(part, " ({d:+.3} points, 95 % {low:+.3} to {high:+.3})");
            }
            parts.push(part);
        }
        lines.push(format!(
            "cpu{} within {}: {}",
            row.cpu,
            format_ns(row.threshold_ns),
            parts.join(", ")
        ));
    }
    for row in &c.spikes {
        let parts: Vec<String> = row
            .rates
            .iter()
            .zip(runs)
            .map(|(r, run)| match r {
                Some(s) => format!(
                    "{} {}{} over {}: {}/h (95 % {}-{}/h)",
                    run.label,
                    if s.count_is_lower_bound {
                        format!(
                            "(from {} interval maxima) at least ",
                            format_ns(s.resolution_ns)
                        )
                    } else {
                        String::new()
                    },
                    grouped(s.count),
                    format_ns(s.threshold_ns),
                    rate(s.per_hour),
                    rate(s.per_hour_low),
                    rate(s.per_hour_high)
                ),
                None => format!("{} not counted", run.label),
            })
            .collect();
        lines.push(format!(
            "cpu{} spikes over the deadline: {}",
            row.cpu,
            parts.join(", ")
        ));
    }
    lines
}

/// The limits of the run's `max<` budget clauses (the run-length lines answer for them).
fn max_limits(record: &RunRecord) -> Vec<u64> {
    let Some(b) = &record.budget else {
        return Vec::new();
    };
    let Ok(budget) = crate::analysis::budget::Budget::parse(&b.expression) else {
        return Vec::new();
    };
    let mut limits: Vec<u64> = budget
        .clauses
        .iter()
        .filter(|c| c.metric == Metric::Max)
        .map(|c| c.limit as u64)
        .collect();
    limits.sort_unstable();
    limits.dedup();
    limits
}

/// A rate per hour with sensible digits.
fn rate(per_hour: f64) -> String {
    if per_hour >= 100.0 {
        format!("{per_hour:.0}")
    } else {
        format!("{per_hour:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_reads_as_the_issue_writes_it() {
        let w = WithinRecord {
            threshold_ns: 250_000,
            within: 1_990_241,
            above: 9_759,
            undecided: 0,
        };
        assert_eq!(
            within_line(&w),
            "99.512 % (1 990 241 of 2 000 000) within 250.0 us; 9 759 above"
        );
    }
}

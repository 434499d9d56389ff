//! The tail figures in words (docs/tails.md): shares within thresholds, spike rates and
//! periods, the run length a `max<` budget still needs, and the extrapolated worst case,
//! always labelled "extrapolated, not measured". Used by the terminal summary after a run and
//! by `jitterlab report`.

use super::noise::per_second;
use crate::analysis::compare::RunInfo;
use crate::analysis::metric::Metric;
use crate::analysis::tails::{evt, run_length};
use crate::analysis::tails_compare::{RunSpikeRate, TailComparison};
use crate::format::run_record::{RunKind, RunRecord, ThreadSummary};
use crate::format::tails::{SpikeRecord, TailRecord, WithinRecord};
use crate::units::{format_ns, format_span, group_digits as grouped};
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
            Some(n) if record.kind.spec().time_lost => super::noise::statements(record, t, n),
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
pub(crate) fn within_line(w: &WithinRecord) -> String {
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

/// "12 spikes over 1.00 ms (deadline), 8.0/h (4.1-14.0/h), MTBF 7.5 min, every 3.00 s (94 % on
/// the grid; times known to 1.00 ms)"; from interval maxima, "from 1.00 s interval maxima: at
/// least 12 spikes over ...".
pub(crate) fn spike_line(s: &SpikeRecord) -> String {
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
        let _ = write!(line, ", MTBF {}", format_span(m));
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
pub(crate) fn run_length_line(t: &ThreadSummary, limit_ns: u64) -> Option<String> {
    let w = t.tails.within.iter().find(|w| w.threshold_ns == limit_ns)?;
    run_length::claim(limit_ns, w.above + w.undecided, w.total(), t.interval_ns)
}

/// The extrapolated levels, labelled, or why there are none. Figures are read from the record
/// as `recorder::tails` wrote them (the only place they are computed); one that cannot be written
/// (a file from before the limits) is not shown, never a saturated number.
pub(crate) fn tail_line(tail: &TailRecord, interval_ns: u64) -> String {
    match tail {
        // Some reasons already start with "not extrapolated:".
        TailRecord::Refused { reason, .. } => match reason.strip_prefix("not extrapolated: ") {
            Some(r) => format!("not extrapolated: {r}"),
            None => format!("not extrapolated: {reason}"),
        },
        // Written before the limits of docs/tails.md (issue 23): its levels may come from a
        // tail too heavy to extrapolate, or lie far beyond the run; none is shown.
        TailRecord::Fitted(f) if f.exposure_factor == 0 => format!(
            "not extrapolated: this run.json predates the limits on extrapolation (shape {:.2}; \
             docs/tails.md); its stored levels are not shown",
            f.shape
        ),
        TailRecord::Fitted(f) => {
            let wakeups_per_s = 1e9 / interval_ns.max(1) as f64;
            let figure = |ns: Option<f64>, none: &str| {
                ns.and_then(evt::writable_ns)
                    .map_or(none.to_string(), format_ns)
            };
            let levels: Vec<String> = f
                .levels
                .iter()
                .map(|l| {
                    let once_in = evt::writable_ns(1e9 / (l.per_wakeup * wakeups_per_s))
                        .map_or(String::new(), |ns| {
                            format!(" (once in {})", format_span(ns))
                        });
                    let head = format!("p {:.0e} per wakeup{once_in}", l.per_wakeup);
                    match (&l.refused, l.latency_ns.and_then(evt::writable_ns)) {
                        (Some(why), _) => format!("{head}: not extrapolated, {why}"),
                        (None, None) => format!("{head}: not extrapolated, too large to write"),
                        (None, Some(ns)) => format!(
                            "{head}: {} (95 % {} - {})",
                            format_ns(ns),
                            figure(l.low_ns, "-"),
                            figure(l.high_ns, "unbounded")
                        ),
                    }
                })
                .collect();
            let reach = if f.exposure_factor > 0 {
                format!(", to at most {}x the run's wakeups", f.exposure_factor)
            } else {
                String::new()
            };
            format!(
                "extrapolated, not measured (GPD over {}, shape {:.2} (95 % {} - {}), {} \
                 independent exceedances{reach}): {}",
                format_ns(f.threshold_ns),
                f.shape,
                f.shape_low.map_or("-".into(), |v| format!("{v:.2}")),
                f.shape_high
                    .map_or("unbounded".into(), |v| format!("{v:.2}")),
                f.clusters,
                levels.join("; ")
            )
        }
    }
}

/// The tail comparison for people: "cpu0 within 250.0 us: A 99.241 %, B 99.870 % (+0.629
/// points, 95 % 0.45 to 0.81)"; "cpu0 spikes over 1.00 ms: A 10130/h (7652-13154/h), B ...".
/// Noise runs (issue 23): no share within the threshold (every gap is over it), and their
/// spikes are gaps over the threshold, per second: "cpu0 gaps over the threshold (1.0 us): A
/// 534, 132/s (95 % 121-144/s), B ...".
pub(crate) fn compare_lines(c: &TailComparison, runs: &[RunInfo]) -> Vec<String> {
    // Runs compared are of one kind (compare refuses a mix).
    let kind = runs
        .first()
        .map_or_else(RunKind::default, |r| r.kind)
        .spec();
    // A time-lost kind records only samples over its threshold: no share within it, and its
    // spikes are its samples, per second.
    let noise = kind.time_lost;
    let mut lines = Vec::new();
    for row in c.within.iter().filter(|_| kind.periodic) {
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
                Some(s) => format!("{} {}", run.label, spike_rate(s, noise)),
                None => format!("{} not counted", run.label),
            })
            .collect();
        let what = if noise {
            let threshold = row.rates.iter().flatten().next().map(|s| s.threshold_ns);
            format!(
                "{} over the threshold ({})",
                kind.words.plural,
                threshold.map_or("-".into(), format_ns)
            )
        } else {
            "spikes over the deadline".to_string()
        };
        lines.push(format!("cpu{} {what}: {}", row.cpu, parts.join(", ")));
    }
    lines
}

/// One run's spike count and rate: a noise run's gaps per second, a latency run's spikes per
/// hour over their threshold; a count read from interval maxima is a lower bound, said so.
fn spike_rate(s: &RunSpikeRate, noise: bool) -> String {
    let at_least = if s.count_is_lower_bound {
        format!(
            "(from {} interval maxima) at least ",
            format_ns(s.resolution_ns)
        )
    } else {
        String::new()
    };
    let count = grouped(s.count);
    if noise {
        format!(
            "{at_least}{count}, {}/s (95 % {}-{}/s)",
            per_second(s.per_hour / 3600.0),
            per_second(s.per_hour_low / 3600.0),
            per_second(s.per_hour_high / 3600.0)
        )
    } else {
        format!(
            "{at_least}{count} over {}: {}/h (95 % {}-{}/h)",
            format_ns(s.threshold_ns),
            rate(s.per_hour),
            rate(s.per_hour_low),
            rate(s.per_hour_high)
        )
    }
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
    use crate::format::tails::{TailFitRecord, TailLevelRecord};

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

    fn fit(levels: Vec<TailLevelRecord>) -> TailRecord {
        TailRecord::Fitted(TailFitRecord {
            method: "pot-gpd-mle".into(),
            threshold_ns: 40_000,
            exceedances: 150,
            clusters: 120,
            extremal_index: 0.8,
            shape: 0.21,
            shape_low: Some(0.05),
            shape_high: Some(0.41),
            scale_ns: 6_000.0,
            anderson_darling: 0.4,
            exposure_factor: 100,
            wakeups: 30_000,
            levels,
            extrapolated: true,
        })
    }

    #[test]
    fn levels_read_with_their_interval_or_why_not() {
        let line = tail_line(
            &fit(vec![
                TailLevelRecord {
                    per_wakeup: 1e-6,
                    latency_ns: Some(612_300.0),
                    low_ns: Some(410_000.0),
                    high_ns: None,
                    refused: None,
                },
                TailLevelRecord {
                    per_wakeup: 1e-9,
                    latency_ns: None,
                    low_ns: None,
                    high_ns: None,
                    refused: Some("beyond 100x the run's 30 000 wakeups".into()),
                },
            ]),
            1_000_000,
        );
        assert_eq!(
            line,
            "extrapolated, not measured (GPD over 40.0 us, shape 0.21 (95 % 0.05 - 0.41), 120 \
             independent exceedances, to at most 100x the run's wakeups): p 1e-6 per wakeup \
             (once in 16.7 min): 612.3 us (95 % 410.0 us - unbounded); p 1e-9 per wakeup (once \
             in 11.6 days): not extrapolated, beyond 100x the run's 30 000 wakeups"
        );
    }

    /// Issue 23: compare labelled a noise run's rows "spikes over the deadline" and showed
    /// "0.000 % within" its threshold; a noise comparison states its gaps over the threshold
    /// per second, and a latency comparison keeps its wording.
    #[test]
    fn a_noise_comparison_speaks_of_gaps_over_the_threshold() {
        use crate::analysis::tails_compare::{RunSpikeRate, SpikeRow, WithinRow};
        let run = |label: &str, kind: RunKind| RunInfo {
            label: label.into(),
            path: format!("/r/{label}"),
            ended: "completed".into(),
            cpus: vec![0],
            duration_ns: Some(4_000_000_000),
            samples: 534,
            intervals_per_cpu: 4,
            imported_from: None,
            kind,
            warnings: vec![],
        };
        let rate = |count: u64, per_s: f64| RunSpikeRate {
            threshold_ns: 1_000,
            count,
            count_is_lower_bound: false,
            resolution_ns: 1_000,
            per_hour: per_s * 3600.0,
            per_hour_low: (per_s - 10.0) * 3600.0,
            per_hour_high: (per_s + 10.0) * 3600.0,
        };
        let c = TailComparison {
            within: vec![WithinRow {
                cpu: 0,
                threshold_ns: 1_000,
                percent: vec![Some(0.0), Some(0.0)],
                difference: vec![Some((0.0, -0.1, 0.1))],
            }],
            spikes: vec![SpikeRow {
                cpu: 0,
                rates: vec![Some(rate(534, 133.5)), Some(rate(600, 150.0))],
            }],
        };
        let noise = [run("A", RunKind::Noise), run("B", RunKind::Noise)];
        assert_eq!(
            compare_lines(&c, &noise),
            [
                "cpu0 gaps over the threshold (1.0 us): A 534, 134/s (95 % 124-144/s), B 600, 150/s (95 % 140-160/s)"
            ]
        );
        let latency = [run("A", RunKind::Latency), run("B", RunKind::Latency)];
        let lines = compare_lines(&c, &latency);
        assert!(
            lines[0].starts_with("cpu0 within 1.0 us: A 0.000 %"),
            "{lines:?}"
        );
        assert!(
            lines[1].starts_with("cpu0 spikes over the deadline: A 534 over 1.0 us"),
            "{lines:?}"
        );
    }

    /// issue 23: a file written before the limits held 2.9e23 ns and an upper end beyond
    /// u64::MAX; neither is printed as a (saturated) number.
    #[test]
    fn an_unwritable_figure_is_never_printed_saturated() {
        let line = tail_line(
            &fit(vec![TailLevelRecord {
                per_wakeup: 1e-12,
                latency_ns: Some(2.9e23),
                low_ns: Some(1.73e15),
                high_ns: Some(1e30),
                refused: None,
            }]),
            1_000_000,
        );
        assert!(!line.contains("18446744073"), "{line}");
        assert!(
            line.ends_with("p 1e-12 per wakeup: not extrapolated, too large to write"),
            "{line}"
        );
        // The README run's file as the old version wrote it: no level shown at all.
        let mut old = fit(vec![TailLevelRecord {
            per_wakeup: 1e-6,
            latency_ns: Some(3.49e9),
            low_ns: Some(2.1e8),
            high_ns: Some(1.9e11),
            refused: None,
        }]);
        if let TailRecord::Fitted(f) = &mut old {
            f.exposure_factor = 0;
        }
        let line = tail_line(&old, 1_000_000);
        assert!(
            line.starts_with("not extrapolated: this run.json predates"),
            "{line}"
        );
        assert!(!line.contains("3.49 s"), "{line}");
    }
}

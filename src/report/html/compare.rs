//! The comparison section of a report of several runs: min, mean, p50 to max and missed periods of each
//! run (all CPUs together) with ratios to the first run, then the overlaid plots. Confidence
//! intervals are `jitterlab compare`'s job.

use super::blocks::{figure, run_label};
use crate::report::digest::RunDigest;
use crate::report::plot::Figure;
use crate::report::table::{Align, Cell, Html, Markup, Table};
use crate::units::format_ns_signed;

/// One row of the ratio table: a figure per run.
struct Metric {
    name: &'static str,
    values: Vec<Option<f64>>,
    latency: bool,
    /// Per run: the value is a lower bound (a percentile among an imported histogram's
    /// overflows, as `compare` marks it): shown `≥`, never given a ratio.
    bounds: Vec<bool>,
}

/// Against the first run, as `jitterlab compare` says it: the ratio other/first with the change
/// in words ("0.79x (21 % lower)", "42x (4100 % higher)"); "same", or only "lower"/"higher"
/// when either is 0 (no ratio).
pub(crate) fn ratio_text(first: f64, other: f64) -> String {
    if first == other {
        return "same".into();
    }
    if first <= 0.0 || other <= 0.0 {
        return if other < first {
            "lower".into()
        } else {
            "higher".into()
        };
    }
    crate::report::compare_view::ratio_words(other / first)
}

/// The mean of every CPU's samples together: run.json's exact per-thread means weighted by
/// their sample counts.
fn mean_of_all_cpus(run: &RunDigest) -> Option<f64> {
    let (sum, count) = run
        .record
        .threads
        .iter()
        .filter_map(|t| {
            Some((
                t.latency.mean_ns? * t.latency.samples as f64,
                t.latency.samples,
            ))
        })
        .fold((0.0, 0u64), |(s, n), (ts, tn)| (s + ts, n + tn));
    (count > 0).then(|| sum / count as f64)
}

/// The comparison of two or more runs: a table of figures with ratios to the first, then the
/// overlays.
pub(super) fn section(h: &mut String, runs: &[&RunDigest], overlays: &[Figure]) {
    let metrics = metrics(runs);
    h.push_str("<section id=\"comparison\" class=\"comparison\"><h2>Comparison of the runs</h2>");
    h.push_str("<p>All CPUs of each run together; ratios are to the first run. Percentiles come from the interval histograms (within 0.1%); min, mean, max and missed periods from run.json (exact).</p>");
    let mut headers = vec!["figure".to_string()];
    headers.extend(runs.iter().enumerate().map(|(i, r)| run_label(i, r)));
    let mut table = Table::new(headers, Align::Right);
    for m in &metrics {
        table.push_row(row(m));
    }
    h.push_str(
        &Html {
            class: "numbers ratios",
        }
        .render(&table),
    );
    for f in overlays {
        figure(h, f);
    }
    h.push_str("</section>\n");
}

/// In place of the comparison, for runs that cannot be compared: why not.
pub(super) fn not_compared(h: &mut String, why: &str) {
    h.push_str(
        "<section id=\"comparison\" class=\"comparison\"><h2>Comparison of the runs</h2><p>",
    );
    h.push_str(&crate::report::svg::escape(why));
    h.push_str("</p></section>\n");
}

/// One row of the table: the figure of each run, each after the first with its ratio to the
/// first.
fn row(m: &Metric) -> Vec<Cell> {
    let mut cells = vec![Cell::label(m.name)];
    for (i, v) in m.values.iter().enumerate() {
        let shown = match v {
            None => "-".to_string(),
            Some(v) if m.latency => format_ns_signed(*v as i64),
            Some(v) => format!("{v}"),
        };
        let bound = |k: usize| m.bounds.get(k) == Some(&true);
        let shown = match (bound(i), v) {
            (true, Some(_)) => format!("≥{shown}"),
            _ => shown,
        };
        let cell = Cell::from(shown);
        cells.push(match (i, m.values[0], v) {
            (0, _, _) => cell,
            // A bound's true value is unknown above it: no ratio (eighth hostile re-run, B1).
            (_, Some(_), Some(_)) if bound(0) || bound(i) => cell.with_ratio(format!(
                "{}: no ratio, a lower bound (among an imported histogram's overflows)",
                m.name
            )),
            (_, Some(first), Some(v)) => {
                cell.with_ratio(format!("{} {}", m.name, ratio_text(first, *v)))
            }
            _ => cell,
        });
    }
    cells
}

/// The figures compared, each for every run (all its CPUs together).
fn metrics(runs: &[&RunDigest]) -> Vec<Metric> {
    let merged: Vec<_> = runs.iter().map(|r| r.all_cpus_histogram()).collect();
    let q = |quantile: f64| -> Vec<Option<f64>> {
        merged
            .iter()
            .map(|m| (!m.is_empty()).then(|| m.value_at_quantile(quantile) as f64))
            .collect()
    };
    // Where each run's imported overflows begin (its CPUs' least): a percentile at or above it
    // is a lower bound.
    let overflow_from: Vec<Option<u64>> = runs
        .iter()
        .map(|r| {
            let imported = r.record.imported.as_ref()?;
            r.record
                .threads
                .iter()
                .filter_map(|t| imported.latency_overflow_from(t.cpu))
                .min()
        })
        .collect();
    let bounds_of = |values: &[Option<f64>]| -> Vec<bool> {
        values
            .iter()
            .zip(&overflow_from)
            .map(|(v, from)| matches!((v, from), (Some(v), Some(from)) if *v >= *from as f64))
            .collect()
    };
    let percentile = |name: &'static str, quantile: f64| {
        let values = q(quantile);
        Metric {
            name,
            bounds: bounds_of(&values),
            values,
            latency: true,
        }
    };
    vec![
        Metric {
            name: "min",
            values: runs
                .iter()
                .map(|r| {
                    r.record
                        .threads
                        .iter()
                        .filter_map(|t| t.latency.min_ns)
                        .min()
                        .map(|v| v as f64)
                })
                .collect(),
            latency: true,
            bounds: Vec::new(),
        },
        Metric {
            name: "mean",
            values: runs.iter().map(|r| mean_of_all_cpus(r)).collect(),
            latency: true,
            bounds: Vec::new(),
        },
        percentile("p50", 0.5),
        percentile("p99", 0.99),
        percentile("p99.9", 0.999),
        percentile("p99.99", 0.9999),
        Metric {
            name: "max",
            values: runs
                .iter()
                .map(|r| {
                    r.record
                        .threads
                        .iter()
                        .filter_map(|t| t.latency.max_ns)
                        .max()
                        .map(|v| v as f64)
                })
                .collect(),
            latency: true,
            bounds: Vec::new(),
        },
        Metric {
            name: "missed periods",
            values: runs
                .iter()
                .map(|r| {
                    Some(
                        r.record
                            .threads
                            .iter()
                            .map(|t| t.missed_periods)
                            .sum::<u64>() as f64,
                    )
                })
                .collect(),
            latency: false,
            bounds: Vec::new(),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_read_as_sentences() {
        assert_eq!(ratio_text(4_200_000.0, 100_000.0), "0.024x (98 % lower)");
        assert_eq!(ratio_text(100.0, 130.0), "1.30x (30 % higher)");
        assert_eq!(ratio_text(100.0, 100.2), "1.00x (0.2 % higher)");
        assert_eq!(ratio_text(0.0, 3.0), "higher");
        assert_eq!(ratio_text(0.0, 0.0), "same");
    }
}

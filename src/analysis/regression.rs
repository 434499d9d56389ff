//! `--fail-if-worse 10% [--at max,p99.9]`: is any run worse than the first by more than a margin
//! at any of the statistics judged (p99.9 unless `--at` names others)?
//!
//! A run is worse at a statistic, in a scope (overall or one CPU), when its value exceeds the
//! first run's by more than the margin (`B > A·(1 + margin)`; with A = 0, any B > 0), and, for
//! percentiles, the 95% interval of the difference lies wholly above zero, so that noise alone
//! does not fail a build. Statistics without an interval (min, mean, max, missed) are judged on
//! their values: the worst case is what it is. docs/compare.md has the reasoning.

use super::compare::{COMPARED, Comparison};
use super::metric::Metric;
use serde::Serialize;

/// The statistic judged when `--at` is not given: the tail a 1 kHz loop meets several times a
/// second, and one whose interval is still narrow for runs of a few minutes.
pub(crate) const DEFAULT_AT: Metric = Metric::P999;

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RegressionCheck {
    /// 0.10 for `10%`.
    pub(crate) margin: f64,
    /// The statistics judged, in the order given, without repeats: each is judged, and a run
    /// worse at any of them fails.
    pub at: Vec<Metric>,
    /// Whether `at` is the default (no `--at`): the verdict says so.
    pub(crate) default_at: bool,
}

impl RegressionCheck {
    /// Parses `--fail-if-worse` and `--at` (one statistic or several, comma-separated); errors
    /// name the value and what is accepted.
    pub(crate) fn parse(margin: &str, at: Option<&str>) -> Result<RegressionCheck, String> {
        let number = margin.trim().strip_suffix('%').ok_or_else(|| {
            format!("--fail-if-worse {margin}: expected a percentage with '%', e.g. 10% or 2.5%")
        })?;
        let percent: f64 = number
            .trim()
            .parse()
            .ok()
            .filter(|p: &f64| p.is_finite() && *p >= 0.0)
            .ok_or_else(|| {
                format!(
                    "--fail-if-worse {margin}: '{number}' is not a percentage of 0 or more, e.g. 10%"
                )
            })?;
        let names = || {
            let names: Vec<&str> = COMPARED.iter().map(|m| m.name()).collect();
            names.join(", ")
        };
        let mut list = Vec::new();
        if let Some(text) = at {
            for name in text.split(',').map(str::trim) {
                let metric = Metric::parse(name)
                    .filter(|m| COMPARED.contains(m))
                    .ok_or_else(|| {
                        if name.is_empty() {
                            format!(
                                "--at {text}: an empty statistic; give one or several separated by commas, e.g. --at max,p99.9 ({})",
                                names()
                            )
                        } else {
                            format!(
                                "--at {name}: not a compared statistic; use one or several of {} separated by commas, e.g. --at max,p99.9",
                                names()
                            )
                        }
                    })?;
                if !list.contains(&metric) {
                    list.push(metric);
                }
            }
        }
        Ok(RegressionCheck {
            margin: percent / 100.0,
            default_at: list.is_empty(),
            at: if list.is_empty() {
                vec![DEFAULT_AT]
            } else {
                list
            },
        })
    }
}

/// One run worse than the first at the checked statistic, in one scope.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Regression {
    pub run: String,
    pub scope: String,
    pub(crate) statistic: &'static str,
    pub first: f64,
    pub value: f64,
    /// value / first; None when first is 0.
    pub ratio: Option<f64>,
    /// The run's value is a lower bound (an imported histogram's overflows): its true value is
    /// at least as far over, so the finding stands; the ratio is then a lower bound too.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) at_least: bool,
}

/// A value above the margin whose interval still includes zero: shown, not failed.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Unconfirmed {
    pub run: String,
    pub scope: String,
    pub(crate) statistic: &'static str,
    pub ratio: Option<f64>,
}

/// A statistic of the check that the figures cannot decide, because a value is only a lower
/// bound (an imported histogram's overflows, whose true values are unknown above where they
/// are recorded). It fails the check: "no run is worse" is then unsupported (eighth hostile
/// re-run, C2: two bounds at the histogram's end passed a run 1000x worse by its mean).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct NotJudged {
    pub run: String,
    pub scope: String,
    pub(crate) statistic: &'static str,
    /// The run's value, ns (a lower bound when `run_is_bound`).
    pub value: f64,
    /// A's value, ns (a lower bound when `first_is_bound`).
    pub first: f64,
    /// The run's value is a lower bound: within the margin as recorded, its true value may be
    /// anywhere above.
    pub(crate) run_is_bound: bool,
    /// A's value is a lower bound: the run's value is over it, but A's true value may be
    /// higher still.
    pub(crate) first_is_bound: bool,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct RegressionVerdict {
    /// The statistics judged, in `--at` order.
    pub(crate) statistics: Vec<&'static str>,
    /// True when they are the default (p99.9, no `--at`).
    pub(crate) default_statistic: bool,
    /// The margin as a fraction (0.1 for 10%).
    pub(crate) margin: f64,
    pub passed: bool,
    pub(crate) regressions: Vec<Regression>,
    pub(crate) unconfirmed: Vec<Unconfirmed>,
    /// Statistics the figures cannot decide (lower bounds): each fails the check.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) not_judged: Vec<NotJudged>,
}

/// Judges every later run against the first, in every scope, at every statistic of the check.
pub(crate) fn check(cmp: &Comparison, check: RegressionCheck) -> RegressionVerdict {
    let mut regressions = Vec::new();
    let mut unconfirmed = Vec::new();
    let mut not_judged = Vec::new();
    for (&at, scope) in check
        .at
        .iter()
        .flat_map(|m| cmp.scopes.iter().map(move |s| (m, s)))
    {
        let Some(row) = scope.rows.iter().find(|r| r.metric() == at) else {
            continue;
        };
        let Some(first) = row.values[0] else { continue };
        for (k, versus) in row.versus_first.iter().enumerate() {
            let Some(value) = row.values[k + 1] else {
                continue;
            };
            let over = if first > 0.0 {
                value > first * (1.0 + check.margin)
            } else {
                value > first
            };
            let bound = |i: usize| row.lower_bound.get(i) == Some(&true);
            // A bound within the margin may hide any value above it; a run over a bound of
            // A may still be below A's true value: neither is decided.
            if (!over && bound(k + 1)) || (over && bound(0)) {
                not_judged.push(NotJudged {
                    run: cmp.runs[k + 1].label.clone(),
                    scope: scope.scope.clone(),
                    statistic: row.statistic,
                    value,
                    first,
                    run_is_bound: bound(k + 1),
                    first_is_bound: bound(0),
                });
                continue;
            }
            if !over {
                continue;
            }
            let run = cmp.runs[k + 1].label.clone();
            let confirmed = versus.interval.as_ref().is_none_or(|i| i.above_zero());
            let ratio = match versus.bound {
                true => (first > 0.0).then(|| value / first),
                false => versus.ratio,
            };
            if confirmed {
                regressions.push(Regression {
                    run,
                    scope: scope.scope.clone(),
                    statistic: row.statistic,
                    first,
                    value,
                    ratio,
                    at_least: bound(k + 1),
                });
            } else {
                unconfirmed.push(Unconfirmed {
                    run,
                    scope: scope.scope.clone(),
                    statistic: row.statistic,
                    ratio,
                });
            }
        }
    }
    RegressionVerdict {
        statistics: check.at.iter().map(|m| m.name()).collect(),
        default_statistic: check.default_at,
        margin: check.margin,
        passed: regressions.is_empty() && not_judged.is_empty(),
        regressions,
        unconfirmed,
        not_judged,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_margins_and_statistics() {
        let c = RegressionCheck::parse("10%", None).unwrap();
        assert_eq!(c.margin, 0.1);
        assert_eq!(c.at, vec![Metric::P999]);
        assert!(c.default_at);
        let c = RegressionCheck::parse("2.5%", Some("max")).unwrap();
        assert_eq!(c.margin, 0.025);
        assert_eq!(c.at, vec![Metric::Max]);
        assert!(!c.default_at);
        let c = RegressionCheck::parse("10%", Some("max, p99.9,max")).unwrap();
        assert_eq!(c.at, vec![Metric::Max, Metric::P999]);
        let e = RegressionCheck::parse("10%", Some("max,,p99")).unwrap_err();
        assert!(e.contains("empty statistic"), "{e}");
        assert!(
            RegressionCheck::parse("10", None)
                .unwrap_err()
                .contains("'%'")
        );
        assert!(
            RegressionCheck::parse("-5%", None)
                .unwrap_err()
                .contains("0 or more")
        );
        assert!(
            RegressionCheck::parse("x%", None)
                .unwrap_err()
                .contains("'x'")
        );
        let e = RegressionCheck::parse("10%", Some("p90")).unwrap_err();
        assert!(e.contains("--at p90") && e.contains("p99.9"), "{e}");
    }
}

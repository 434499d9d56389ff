//! What of a fitted tail may be shown (docs/tails.md, "When extrapolation is refused"). A fit
//! that passed its checks describes the excesses it saw; carrying it orders of magnitude beyond
//! them is only defensible when the tail is light enough for its uncertainty to be bounded and
//! when the level asked for is not too far beyond what the run measured. This is the one place
//! that decides which levels are written: run.json stores its result, and the terminal, the
//! HTML report and every export read them from there.

use super::{Check, Refusal, ReturnLevel, TailFit};
use crate::units::group_digits;

/// Levels are extrapolated to return periods of at most this many times the run's wakeups
/// (per-wakeup probabilities down to 1 / (factor × wakeups)). Two decades beyond the data is
/// where a tail fitted on a few hundred excesses still has intervals of a usable width (the
/// coverage tests in `tests.rs` hold there); beyond it the figure is the model speaking, not
/// the run.
pub(crate) const EXPOSURE_FACTOR: u64 = 100;

/// The shape's 95 % interval must end below this: at ξ ≥ 1/2 the excesses have no finite
/// variance, a return level grows like p^(−ξ) without a usable bound, and the profile
/// intervals of the levels reach anything (issue 23: shapes of 1.3-1.6 gave "days" per
/// wakeup). A tail that might be that heavy is refused, not extrapolated.
pub(crate) const SHAPE_LIMIT: f64 = 0.5;

/// The largest latency a figure is written as: 2^53 ns (104 days), the largest integer that
/// f64 and every JSON reader hold exactly. A level beyond it is refused; an interval end
/// beyond it is written unbounded. Never a value clamped to it, nor to `u64::MAX`.
pub(crate) const LARGEST_FIGURE_NS: f64 = 9_007_199_254_740_992.0;

/// `ns` as a whole number of nanoseconds when it is a latency that can be written (finite,
/// not negative, at most [`LARGEST_FIGURE_NS`]); None otherwise, never a saturated value.
pub(crate) fn writable_ns(ns: f64) -> Option<u64> {
    (ns.is_finite() && (0.0..=LARGEST_FIGURE_NS).contains(&ns)).then(|| ns.round() as u64)
}

/// One per-wakeup probability asked for: its level, or why it is not shown.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Level {
    /// Estimate and interval, each within [`LARGEST_FIGURE_NS`]; `high_ns` None: unbounded.
    /// Always low ≤ estimate ≤ high.
    Shown(ReturnLevel),
    Refused {
        per_wakeup: f64,
        reason: String,
    },
}

/// The levels of `fit` at the probabilities `per_wakeup`, or why the tail is not extrapolated
/// at all (a shape interval that reaches [`SHAPE_LIMIT`]).
pub(crate) fn extrapolate(fit: &TailFit, per_wakeup: &[f64]) -> Result<Vec<Level>, Refusal> {
    let (low, high) = fit.shape_interval;
    if !high.is_some_and(|h| h < SHAPE_LIMIT) {
        let end = |x: Option<f64>| x.map_or("unbounded".to_string(), |v| format!("{v:.2}"));
        return Err(Refusal {
            check: Check::HeavyTail,
            reason: format!(
                "not extrapolated: the tail may be too heavy (shape {:.2}, {:.0} % interval {} \
                 to {}); extrapolation needs the interval to end below {SHAPE_LIMIT} (a finite \
                 variance), so the worst case seen is all the run can say",
                fit.gpd.shape,
                100.0 * fit.confidence,
                end(low),
                end(high)
            ),
        });
    }
    Ok(per_wakeup.iter().map(|&p| level(fit, p)).collect())
}

/// Whether `per_wakeup` lies within [`EXPOSURE_FACTOR`] times the run's `wakeups`.
pub(crate) fn within_exposure(per_wakeup: f64, wakeups: u64) -> bool {
    per_wakeup > 0.0 && 1.0 / per_wakeup <= EXPOSURE_FACTOR as f64 * wakeups as f64
}

fn level(fit: &TailFit, per_wakeup: f64) -> Level {
    let refused = |reason: String| Level::Refused { per_wakeup, reason };
    if !within_exposure(per_wakeup, fit.wakeups) {
        return refused(format!(
            "beyond {EXPOSURE_FACTOR}x the run's {} wakeups (extrapolated only down to {:.1e} \
             per wakeup)",
            group_digits(fit.wakeups),
            1.0 / (EXPOSURE_FACTOR as f64 * fit.wakeups as f64)
        ));
    }
    let Some(l) = fit.return_level(per_wakeup) else {
        return refused(format!(
            "not below the rate of exceedances of the threshold ({:.1e} per wakeup): the \
             measured percentiles answer",
            fit.exceedance_rate()
        ));
    };
    let Some(estimate) = writable_ns(l.latency_ns) else {
        return refused(format!(
            "the model's level is beyond {} ns, no latency that can be written",
            LARGEST_FIGURE_NS
        ));
    };
    // The lower end is never None (the profile stops at the threshold at worst); an upper end
    // the data do not bound, or one too large to write, is unbounded.
    let low = l.low_ns.and_then(writable_ns).map(|v| v as f64);
    let high = l.high_ns.and_then(writable_ns).map(|v| v as f64);
    let estimate = estimate as f64;
    if low.is_none_or(|v| v > estimate) || high.is_some_and(|v| v < estimate) {
        return refused(format!(
            "its interval ({:?} - {:?} ns) does not contain the estimate {estimate} ns",
            l.low_ns, l.high_ns
        ));
    }
    Level::Shown(ReturnLevel {
        per_wakeup,
        latency_ns: estimate,
        low_ns: low,
        high_ns: high,
    })
}

#[cfg(test)]
mod tests {
    use super::super::{fit_tail, halves, peaks_above};
    use super::*;
    use crate::random::SplitMix64;

    /// A run of `n` wakeups: an exponential body (mean 5 us) cut at 30 us, and 1 % of the
    /// wakeups 30 us plus a GPD(σ = 5 us, ξ = `shape`) excess.
    fn gpd_run(seed: u64, n: usize, shape: f64) -> Vec<u64> {
        let mut rng = SplitMix64::new(seed);
        (0..n)
            .map(|_| {
                if rng.uniform() >= 0.01 {
                    let cut = 1.0 - (-30_000.0f64 / 5_000.0).exp();
                    return (-5_000.0 * (1.0 - rng.uniform() * cut).ln()) as u64;
                }
                let u = 1.0 - rng.uniform();
                (30_000.0 + 5_000.0 / shape * (u.powf(-shape) - 1.0)) as u64
            })
            .collect()
    }

    fn true_level(shape: f64, p: f64) -> f64 {
        30_000.0 + 5_000.0 / shape * ((0.01 / p).powf(shape) - 1.0)
    }

    fn worst_case(latencies: &[u64], levels: &[f64]) -> Result<Vec<Level>, Refusal> {
        let n = latencies.len() as u64;
        let fit = fit_tail(n, &peaks_above(latencies, 20_000), &halves(n), 0.95)?;
        extrapolate(&fit, levels)
    }

    /// Light tails (ξ = 0.1 and 0.3) of 400 000 wakeups are extrapolated to 1e-6 and 1e-7 per
    /// wakeup (within 100x the run), the true level inside the interval in at least 8 of 10
    /// seeded runs, every estimate inside its own interval; 1e-9 is beyond the factor.
    #[test]
    fn light_tails_are_extrapolated_within_their_intervals() {
        for shape in [0.1, 0.3] {
            let mut inside = [0; 2];
            for seed in 0..10 {
                let levels = worst_case(&gpd_run(100 + seed, 400_000, shape), &[1e-6, 1e-7, 1e-9])
                    .unwrap_or_else(|r| panic!("shape {shape}, seed {seed}: {r:?}"));
                for (k, p) in [1e-6, 1e-7].into_iter().enumerate() {
                    let Level::Shown(l) = levels[k] else {
                        panic!("shape {shape}: {:?}", levels[k]);
                    };
                    let (low, high) = (l.low_ns.unwrap(), l.high_ns.unwrap());
                    assert!(low <= l.latency_ns && l.latency_ns <= high, "{l:?}");
                    let truth = true_level(shape, p);
                    inside[k] += usize::from(low <= truth && truth <= high);
                }
                assert!(
                    matches!(&levels[2], Level::Refused { reason, .. } if reason.starts_with("beyond 100x the run's 400 000 wakeups")),
                    "{:?}",
                    levels[2]
                );
            }
            assert!(inside.iter().all(|&k| k >= 8), "shape {shape}: {inside:?}");
        }
    }

    /// Tails with ξ ≥ 0.5 (no finite variance) are refused, with the reason.
    #[test]
    fn heavy_tails_are_refused() {
        for shape in [0.5, 0.8, 1.4] {
            for seed in 0..3 {
                let refusal = worst_case(&gpd_run(200 + seed, 400_000, shape), &[1e-6])
                    .expect_err("a heavy tail is not extrapolated");
                assert!(
                    matches!(refusal.check, Check::HeavyTail | Check::GoodnessOfFit),
                    "shape {shape}: {refusal:?}"
                );
                if refusal.check == Check::HeavyTail {
                    assert!(
                        refusal
                            .reason
                            .starts_with("not extrapolated: the tail may be too heavy"),
                        "{}",
                        refusal.reason
                    );
                }
            }
        }
    }

    /// The README's spike run in miniature: a light body and, once every 4000 wakeups, one of
    /// about 2 ms (two regimes, nothing between 50 us and 1.9 ms), rarer than the highest
    /// threshold's share (0.05 %), so that every threshold tried has both regimes above it.
    /// Not extrapolated. (With spikes more common than that, a threshold inside the spikes'
    /// own regime is fitted, and its bounded tail is a fair model of them.)
    #[test]
    fn a_two_regime_tail_is_refused() {
        for seed in 0..3 {
            let mut rng = SplitMix64::new(300 + seed);
            let latencies: Vec<u64> = (0..400_000u64)
                .map(|i| {
                    if i % 4000 == 0 {
                        1_900_000 + (rng.uniform() * 200_000.0) as u64
                    } else {
                        8_000 + (-3_000.0 * (1.0 - rng.uniform()).ln()) as u64
                    }
                })
                .collect();
            let refusal = worst_case(&latencies, &[1e-6]).expect_err("two regimes refused");
            assert!(
                matches!(refusal.check, Check::HeavyTail | Check::GoodnessOfFit),
                "{refusal:?}"
            );
        }
    }

    #[test]
    fn the_exposure_factor_limits_the_levels() {
        assert!(within_exposure(1e-6, 10_000));
        assert!(!within_exposure(1e-6, 9_999));
        assert!(!within_exposure(0.0, 10_000));
        // 60 000 wakeups: 1e-6 is within 100x (6e6), 1e-9 and 1e-12 are not.
        let levels = worst_case(&gpd_run(7, 60_000, 0.1), &[1e-6, 1e-9, 1e-12]).unwrap();
        assert!(matches!(levels[0], Level::Shown(_)), "{:?}", levels[0]);
        for l in &levels[1..] {
            let Level::Refused { reason, .. } = l else {
                panic!("{l:?}")
            };
            assert_eq!(
                reason,
                "beyond 100x the run's 60 000 wakeups (extrapolated only down to 1.7e-7 per \
                 wakeup)"
            );
        }
    }

    /// A level too large to write is refused and an interval end too large is unbounded:
    /// nothing is ever clamped to 2^53 ns or saturated to `u64::MAX`.
    #[test]
    fn huge_levels_are_refused_never_saturated() {
        assert_eq!(writable_ns(2.9e23), None);
        assert_eq!(writable_ns(f64::INFINITY), None);
        assert_eq!(writable_ns(f64::NAN), None);
        assert_eq!(writable_ns(u64::MAX as f64), None);
        assert_eq!(writable_ns(-1.0), None);
        assert_eq!(writable_ns(1.5e6), Some(1_500_000));
        let mut rng = SplitMix64::new(9);
        let fit_of = |scale: f64, rng: &mut SplitMix64| {
            let excesses: Vec<f64> = (0..300)
                .map(|_| scale / 0.3 * ((1.0 - rng.uniform()).powf(-0.3) - 1.0))
                .collect();
            TailFit {
                wakeups: 1_000_000,
                threshold_ns: 1_000_000,
                exceedances: 300,
                clusters: 300,
                extremal_index: 1.0,
                gpd: super::super::gpd::fit(&excesses).unwrap(),
                anderson_darling: 0.5,
                shape_interval: (Some(0.1), Some(0.45)),
                confidence: 0.95,
                excesses,
            }
        };
        // Excesses of about 1e16 ns: the 1e-6 level is beyond 2^53 ns.
        let fit = fit_of(1e16, &mut rng);
        assert!(fit.return_level(1e-6).unwrap().latency_ns > LARGEST_FIGURE_NS);
        let levels = extrapolate(&fit, &[1e-6]).unwrap();
        assert!(
            matches!(&levels[0], Level::Refused { reason, .. } if reason.contains("beyond 9007199254740992 ns")),
            "{levels:?}"
        );
        // Excesses of about 1e14 ns: the estimate can be written; an upper end beyond 2^53 ns
        // is unbounded, never a number.
        let fit = fit_of(1e14, &mut rng);
        for l in extrapolate(&fit, &[1e-6, 1e-5]).unwrap() {
            if let Level::Shown(l) = l {
                assert!(l.latency_ns <= LARGEST_FIGURE_NS, "{l:?}");
                assert!(l.high_ns.is_none_or(|h| h <= LARGEST_FIGURE_NS), "{l:?}");
            }
        }
    }
}

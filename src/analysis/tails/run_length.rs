//! How long to run: what a run of N wakeups with x exceedances of a limit can claim about the
//! exceedance rate, and how many more wakeups a claim about a lower rate needs. Exceedances are
//! treated as a Poisson process in the wakeup count (rare, independent events); the bound is
//! the exact one-sided Poisson (Garwood) bound, which for x = 0 is the "rule of three":
//! −ln(0.05)/N ≈ 3/N.

use super::special::chi_square_quantile;

/// What the run so far supports about the rate of exceedances per wakeup.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateBound {
    pub wakeups: u64,
    pub exceedances: u64,
    pub confidence: f64,
    /// With `confidence`, the rate per wakeup is below this.
    pub upper_per_wakeup: f64,
}

/// The exact one-sided upper bound of a Poisson rate: x events in `wakeups` trials.
pub fn rate_bound(exceedances: u64, wakeups: u64, confidence: f64) -> Option<RateBound> {
    (wakeups > 0).then(|| RateBound {
        wakeups,
        exceedances,
        confidence,
        upper_per_wakeup: upper_mean(exceedances as f64, confidence) / wakeups as f64,
    })
}

/// Upper `confidence` bound of a Poisson mean after x events: χ²(c, 2x+2)/2. Continuous in x so
/// that a projected (fractional) count can be used.
fn upper_mean(x: f64, confidence: f64) -> f64 {
    chi_square_quantile(confidence, 2.0 * x + 2.0) / 2.0
}

/// How many wakeups in total a run needs before it can claim, with `confidence`, that the rate
/// is below `target_per_wakeup`, if exceedances keep coming at the rate seen so far. None when
/// that rate is not below the target (no run length would support the claim).
pub fn wakeups_needed(
    exceedances: u64,
    wakeups: u64,
    target_per_wakeup: f64,
    confidence: f64,
) -> Option<u64> {
    let seen = if wakeups == 0 {
        0.0
    } else {
        exceedances as f64 / wakeups as f64
    };
    if target_per_wakeup.is_nan() || target_per_wakeup <= 0.0 || seen >= target_per_wakeup {
        return None;
    }
    let bound = |n: f64| upper_mean(seen * n, confidence) / n;
    // bound(n) decreases towards `seen` as n grows: bracket the crossing, then bisect.
    let mut high = (wakeups as f64).max(1.0);
    while bound(high) > target_per_wakeup {
        high *= 2.0;
        if high > 1e30 {
            return None;
        }
    }
    let mut low = high / 2.0;
    for _ in 0..100 {
        let mid = 0.5 * (low + high);
        if bound(mid) > target_per_wakeup {
            low = mid;
        } else {
            high = mid;
        }
    }
    Some((high.ceil() as u64).max(wakeups))
}

/// The time still to run at `wakeups_per_second` (e.g. 1000 at a 1 ms interval), in seconds;
/// 0 when the claim already holds. None as for [`wakeups_needed`].
pub fn seconds_still_needed(
    exceedances: u64,
    wakeups: u64,
    target_per_wakeup: f64,
    confidence: f64,
    wakeups_per_second: f64,
) -> Option<f64> {
    let needed = wakeups_needed(exceedances, wakeups, target_per_wakeup, confidence)?;
    Some(needed.saturating_sub(wakeups) as f64 / wakeups_per_second)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::quantile::SplitMix64;

    #[test]
    fn zero_failures_is_the_rule_of_three() {
        let b = rate_bound(0, 1_200_000, 0.95).unwrap();
        // −ln 0.05 / N exactly.
        let expected = -(0.05f64.ln()) / 1_200_000.0;
        assert!((b.upper_per_wakeup - expected).abs() < 1e-12 * expected.max(1.0));
        // To reach 1e-7 with no exceedance: −ln 0.05 / 1e-7 ≈ 29.96 M wakeups; at 1 kHz
        // that is 28.76 M more wakeups, 28 757 s.
        let more = seconds_still_needed(0, 1_200_000, 1e-7, 0.95, 1000.0).unwrap();
        assert!(
            (more - (29_957_323.0 - 1_200_000.0) / 1000.0).abs() < 1.0,
            "{more}"
        );
        // Already there: nothing more to run.
        assert_eq!(
            seconds_still_needed(0, 40_000_000, 1e-7, 0.95, 1000.0),
            Some(0.0)
        );
        // Seen rate above the target: no run length helps.
        assert_eq!(wakeups_needed(10, 1_000_000, 1e-6, 0.95), None);
    }

    #[test]
    fn the_bound_holds_at_its_confidence() {
        // Binomial draws with rate 2e-4 over 20 000 wakeups (mean 4 exceedances): the 95 %
        // upper bound must lie above the true rate in at least 95 % of 2000 repetitions (the
        // exact bound is conservative for a discrete count; allow the sampling error below).
        let mut rng = SplitMix64::new(3);
        let rate = 2e-4;
        let mut held = 0;
        for _ in 0..2000 {
            // Poisson(4) by multiplying uniforms, the count of exceedances in the run.
            let (mut x, mut prod, limit) = (0u64, rng.uniform(), (-4.0f64).exp());
            while prod > limit {
                x += 1;
                prod *= rng.uniform();
            }
            held += usize::from(rate_bound(x, 20_000, 0.95).unwrap().upper_per_wakeup > rate);
        }
        assert!(held >= 1_880, "held {held} of 2000");
        // Projection with exceedances seen (3 in 1 M, target 5e-6): the bound at the projected
        // count just reaches the target at the answer and not 5 % earlier.
        let n = wakeups_needed(3, 1_000_000, 5e-6, 0.95).unwrap() as f64;
        let projected = |n: f64| upper_mean(3e-6 * n, 0.95) / n;
        assert!(
            n > 1e6 && projected(n) <= 5e-6 && projected(0.95 * n) > 5e-6,
            "{n}"
        );
    }
}

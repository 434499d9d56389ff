//! How long to run: what a run of N wakeups with x exceedances of a limit can claim about the
//! exceedance rate, and how many more wakeups a claim about a lower rate needs. Exceedances are
//! treated as a Poisson process in the wakeup count (rare, independent events); the bound is
//! the exact one-sided Poisson (Garwood) bound, which for x = 0 is the "rule of three":
//! −ln(0.05)/N ≈ 3/N.

use super::special::chi_square_quantile;

/// What the run so far supports about the rate of exceedances per wakeup.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RateBound {
    pub wakeups: u64,
    pub(crate) exceedances: u64,
    pub(crate) confidence: f64,
    /// With `confidence`, the rate per wakeup is below this.
    pub(crate) upper_per_wakeup: f64,
}

/// The exact one-sided upper bound of a Poisson rate: x events in `wakeups` trials.
pub(crate) fn rate_bound(exceedances: u64, wakeups: u64, confidence: f64) -> Option<RateBound> {
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
pub(crate) fn wakeups_needed(
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
pub(crate) fn seconds_still_needed(
    exceedances: u64,
    wakeups: u64,
    target_per_wakeup: f64,
    confidence: f64,
    wakeups_per_second: f64,
) -> Option<f64> {
    let needed = wakeups_needed(exceedances, wakeups, target_per_wakeup, confidence)?;
    Some(needed.saturating_sub(wakeups) as f64 / wakeups_per_second)
}

/// What a run so far can claim about exceeding `limit_ns` (the limit of a `max<` budget, or
/// the deadline), and how much longer it must run to claim the next power of ten below that:
/// "no exceedance of 100.0 us in 1 200 000 wakeups: rate < 2.5e-6 per wakeup with 95 %
/// confidence; 8h00m00s more at this interval to reach 1e-6". The terminal summary and the
/// live view print it; None before the first wakeup.
pub(crate) fn claim(
    limit_ns: u64,
    exceedances: u64,
    wakeups: u64,
    interval_ns: u64,
) -> Option<String> {
    use crate::units::{format_elapsed, format_ns, group_digits};
    let bound = rate_bound(exceedances, wakeups, 0.95)?;
    let target = 10f64.powf(bound.upper_per_wakeup.log10().floor());
    let per_second = 1e9 / interval_ns.max(1) as f64;
    let more = seconds_still_needed(exceedances, wakeups, target, 0.95, per_second);
    let seen = match exceedances {
        0 => "no exceedance".to_string(),
        1 => "1 exceedance".to_string(),
        n => format!("{} exceedances", group_digits(n)),
    };
    Some(format!(
        "{seen} of {} in {} wakeups: rate < {:.1e} per wakeup with 95 % confidence; {}",
        format_ns(limit_ns),
        group_digits(wakeups),
        bound.upper_per_wakeup,
        match more {
            Some(s) => format!(
                "{} more at this interval to reach {target:.0e}",
                format_elapsed((s * 1e9) as u64)
            ),
            None => format!("the rate seen does not support {target:.0e} at any run length"),
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::SplitMix64;

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
        // The sentence: bound 2.5e-6, next power of ten 1e-6, −ln 0.05 / 1e-6 ≈ 2 995 733
        // wakeups in all, 1 795 733 s / 1000 = 29m55s more at 1 ms.
        assert_eq!(
            claim(100_000, 0, 1_200_000, 1_000_000).unwrap(),
            "no exceedance of 100.0 us in 1 200 000 wakeups: rate < 2.5e-6 per wakeup with \
             95 % confidence; 29m55s more at this interval to reach 1e-6"
        );
        assert_eq!(claim(100_000, 0, 0, 1_000_000), None);
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

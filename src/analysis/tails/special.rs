//! The few special functions the tail statistics need, written out so that jitterlab needs no
//! numerics crate: the log-gamma function, the regularized incomplete gamma function (which
//! gives the chi-square distribution and through it the exact Poisson intervals), the normal
//! distribution, and their quantiles by bisection. Accuracy is ~1e-12 relative, far beyond
//! what the intervals need.

/// ln Γ(x) for x > 0 (Lanczos approximation, g = 7, 9 terms; relative error < 1e-14).
pub(crate) fn ln_gamma(x: f64) -> f64 {
    const COEF: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1−x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = COEF[0];
    for (i, c) in COEF.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + 7.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// The regularized lower incomplete gamma function P(a, x) = γ(a, x)/Γ(a), a > 0, x ≥ 0:
/// the series for x < a + 1, the continued fraction (modified Lentz) above.
pub(crate) fn gamma_p(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x < a + 1.0 {
        let mut term = 1.0 / a;
        let mut sum = term;
        let mut ap = a;
        for _ in 0..10_000 {
            ap += 1.0;
            term *= x / ap;
            sum += term;
            if term.abs() < sum.abs() * 1e-16 {
                break;
            }
        }
        (sum.ln() - x + a * x.ln() - ln_gamma(a)).exp().min(1.0)
    } else {
        1.0 - gamma_q_continued_fraction(a, x)
    }
}

/// Q(a, x) = 1 − P(a, x), without cancellation in the upper tail.
pub(crate) fn gamma_q(a: f64, x: f64) -> f64 {
    if x < a + 1.0 {
        1.0 - gamma_p(a, x)
    } else {
        gamma_q_continued_fraction(a, x)
    }
}

fn gamma_q_continued_fraction(a: f64, x: f64) -> f64 {
    let tiny = 1e-300;
    let mut b = x + 1.0 - a;
    let mut c = 1.0 / tiny;
    let mut d = 1.0 / b;
    let mut h = d;
    for i in 1..10_000 {
        let an = -(i as f64) * (i as f64 - a);
        b += 2.0;
        d = an * d + b;
        if d.abs() < tiny {
            d = tiny;
        }
        c = b + an / c;
        if c.abs() < tiny {
            c = tiny;
        }
        d = 1.0 / d;
        let delta = d * c;
        h *= delta;
        if (delta - 1.0).abs() < 1e-16 {
            break;
        }
    }
    ((-x + a * x.ln() - ln_gamma(a)).exp() * h).min(1.0)
}

/// The p-quantile of the chi-square distribution with `dof` degrees of freedom (dof > 0).
pub(crate) fn chi_square_quantile(p: f64, dof: f64) -> f64 {
    // P(χ²_ν ≤ x) = P(ν/2, x/2), increasing in x: bisection on a bracket that doubles.
    let cdf = |x: f64| gamma_p(dof / 2.0, x / 2.0);
    let mut high = dof.max(1.0);
    while cdf(high) < p {
        high *= 2.0;
    }
    bisect(cdf, p, 0.0, high)
}

/// P(χ²_dof > x): the p-value of a chi-square statistic.
pub(crate) fn chi_square_survival(x: f64, dof: f64) -> f64 {
    gamma_q(dof / 2.0, x.max(0.0) / 2.0)
}

/// The standard normal distribution function Φ(x) (via the complementary error function).
pub(crate) fn normal_cdf(x: f64) -> f64 {
    0.5 * erfc(-x / std::f64::consts::SQRT_2)
}

/// Φ⁻¹(p) for 0 < p < 1, by bisection on Φ (fast enough: the callers need a few values).
pub(crate) fn normal_quantile(p: f64) -> f64 {
    bisect(normal_cdf, p, -40.0, 40.0)
}

/// erfc(x) from the incomplete gamma function: erfc(x) = Q(1/2, x²) for x ≥ 0.
fn erfc(x: f64) -> f64 {
    if x >= 0.0 {
        gamma_q(0.5, x * x)
    } else {
        2.0 - gamma_q(0.5, x * x)
    }
}

/// The x in [low, high] where the increasing function `f` reaches `target`, to f64 precision.
fn bisect(f: impl Fn(f64) -> f64, target: f64, mut low: f64, mut high: f64) -> f64 {
    for _ in 0..200 {
        let mid = 0.5 * (low + high);
        if mid <= low || mid >= high {
            break;
        }
        if f(mid) < target {
            low = mid;
        } else {
            high = mid;
        }
    }
    0.5 * (low + high)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-300)
    }

    #[test]
    fn known_values() {
        // Γ(5) = 24, Γ(1/2) = √π.
        assert!(close(ln_gamma(5.0), 24f64.ln(), 1e-13));
        assert!(close(
            ln_gamma(0.5),
            std::f64::consts::PI.sqrt().ln(),
            1e-13
        ));
        // Tabulated chi-square quantiles.
        assert!(close(
            chi_square_quantile(0.95, 1.0),
            3.841_458_820_694_124,
            1e-9
        ));
        assert!(close(
            chi_square_quantile(0.975, 2.0),
            7.377_758_908_227_871,
            1e-9
        ));
        assert!(close(
            chi_square_quantile(0.025, 20.0),
            9.590_777_392_264_87,
            1e-9
        ));
        assert!(close(normal_quantile(0.975), 1.959_963_984_540_054, 1e-9));
        assert!(close(normal_cdf(-3.0), 0.001_349_898_031_630_094_6, 1e-9));
        assert!(close(
            chi_square_survival(3.841_458_820_694_124, 1.0),
            0.05,
            1e-9
        ));
    }
}

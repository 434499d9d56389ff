//! The generalized Pareto distribution of excesses over a threshold: maximum-likelihood fit,
//! profile-likelihood intervals of the shape and of return levels, and the Anderson-Darling
//! statistic against the fitted distribution.
//!
//! Why maximum likelihood and not probability-weighted moments: the return levels asked for
//! (1e-9, 1e-12 per wakeup) lie orders of magnitude beyond the data, where the interval matters
//! more than the point; the likelihood gives profile intervals, which follow the strongly
//! asymmetric uncertainty of an extrapolation (a long upper side) where delta-method or
//! moment-based intervals are symmetric and too short. With the hundreds of excesses a run
//! provides, the small-sample advantage of moments does not apply.
//!
//! Parametrisation: P(Y > y) = (1 + ξ·y/σ)^(−1/ξ) for excess y ≥ 0 (exponential at ξ = 0).

/// Shapes the fit may take: below −1 the likelihood is unbounded at the sample maximum; above 2
/// the tail has no mean, nothing a latency does.
const SHAPE_RANGE: (f64, f64) = (-1.0, 2.0);
/// Below this |ξ| the exponential formulas are used (the GPD ones cancel badly).
const EXPONENTIAL: f64 = 1e-9;

/// A fitted generalized Pareto distribution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Gpd {
    pub scale: f64,
    pub(crate) shape: f64,
    pub(crate) log_likelihood: f64,
}

/// Log-likelihood of excesses `y` (all ≥ 0) under GPD(σ, ξ); −∞ outside the support.
pub(crate) fn log_likelihood(y: &[f64], scale: f64, shape: f64) -> f64 {
    if scale.is_nan() || scale <= 0.0 {
        return f64::NEG_INFINITY;
    }
    let n = y.len() as f64;
    if shape.abs() < EXPONENTIAL {
        return -n * scale.ln() - y.iter().sum::<f64>() / scale;
    }
    let mut sum = 0.0;
    for &v in y {
        let z = 1.0 + shape * v / scale;
        if z <= 0.0 {
            return f64::NEG_INFINITY;
        }
        sum += z.ln();
    }
    -n * scale.ln() - (1.0 + 1.0 / shape) * sum
}

/// P(Y ≤ y) under GPD(σ, ξ).
pub(crate) fn cdf(y: f64, scale: f64, shape: f64) -> f64 {
    if shape.abs() < EXPONENTIAL {
        return 1.0 - (-y / scale).exp();
    }
    let z = 1.0 + shape * y / scale;
    if z <= 0.0 {
        return 1.0;
    }
    1.0 - z.powf(-1.0 / shape)
}

/// The excess exceeded with probability `q` (0 < q < 1): σ/ξ·(q^(−ξ) − 1).
pub(crate) fn excess_at(q: f64, scale: f64, shape: f64) -> f64 {
    scale * growth(1.0 / q, shape)
}

/// (r^ξ − 1)/ξ, with its limit ln r at ξ = 0.
fn growth(r: f64, shape: f64) -> f64 {
    if shape.abs() < EXPONENTIAL {
        r.ln()
    } else {
        (r.powf(shape) - 1.0) / shape
    }
}

/// Maximum-likelihood fit (Grimshaw's reduction to one dimension): with θ = ξ/σ, the best ξ for
/// a given θ is mean(ln(1 + θy)), which leaves a profile in θ alone; it is searched on a grid
/// over the whole admissible range and refined by golden section around the best point.
pub(crate) fn fit(y: &[f64]) -> Option<Gpd> {
    let n = y.len();
    let max = y.iter().copied().fold(0.0, f64::max);
    let mean = y.iter().sum::<f64>() / n as f64;
    if n < 3 || max <= 0.0 {
        return None;
    }
    let profile = |theta: f64| -> f64 {
        if theta.abs() * mean < 1e-12 {
            return -(n as f64) * (mean.ln() + 1.0);
        }
        if 1.0 + theta * max <= 0.0 {
            return f64::NEG_INFINITY;
        }
        let shape = y.iter().map(|&v| (theta * v).ln_1p()).sum::<f64>() / n as f64;
        if shape < SHAPE_RANGE.0 || shape > SHAPE_RANGE.1 {
            return f64::NEG_INFINITY;
        }
        -(n as f64) * ((shape / theta).ln() + shape + 1.0)
    };
    // Grid: towards the support's end −1/max on the negative side, log-spaced positive side.
    let mut grid: Vec<f64> = (1..=40)
        .map(|j| -(1.0 - 10f64.powf(-(j as f64) / 8.0)) / max)
        .rev()
        .collect();
    grid.push(0.0);
    grid.extend((0..=60).map(|j| 10f64.powf(-3.0 + j as f64 / 12.0) / mean));
    let values: Vec<f64> = grid.iter().map(|&t| profile(t)).collect();
    let best = (0..grid.len()).max_by(|&a, &b| values[a].total_cmp(&values[b]))?;
    if !values[best].is_finite() {
        return None;
    }
    let low = grid[best.saturating_sub(1)];
    let high = grid[(best + 1).min(grid.len() - 1)];
    let theta = golden_max(profile, low, high, 60);
    let theta = if profile(theta) >= values[best] {
        theta
    } else {
        grid[best]
    };
    let (scale, shape) = if theta.abs() * mean < 1e-12 {
        (mean, 0.0)
    } else {
        let shape = y.iter().map(|&v| (theta * v).ln_1p()).sum::<f64>() / n as f64;
        (shape / theta, shape)
    };
    Some(Gpd {
        scale,
        shape,
        log_likelihood: log_likelihood(y, scale, shape),
    })
}

/// The maximum of a unimodal function on [low, high] by golden-section search.
pub(crate) fn golden_max(f: impl Fn(f64) -> f64, mut low: f64, mut high: f64, steps: usize) -> f64 {
    let ratio = (5f64.sqrt() - 1.0) / 2.0;
    let mut a = high - ratio * (high - low);
    let mut b = low + ratio * (high - low);
    let (mut fa, mut fb) = (f(a), f(b));
    for _ in 0..steps {
        if fa < fb {
            low = a;
            a = b;
            fa = fb;
            b = low + ratio * (high - low);
            fb = f(b);
        } else {
            high = b;
            b = a;
            fb = fa;
            a = high - ratio * (high - low);
            fa = f(a);
        }
    }
    if fa > fb { a } else { b }
}

/// max over ξ of the log-likelihood with the scale given by ξ (the profile along a curve of
/// (σ, ξ)); a coarse grid over the shape range, then golden section around its best point.
fn max_over_shape(y: &[f64], scale_for: impl Fn(f64) -> f64) -> f64 {
    let at = |shape: f64| log_likelihood(y, scale_for(shape), shape);
    let steps = 15;
    let width = (SHAPE_RANGE.1 - SHAPE_RANGE.0) / steps as f64;
    let grid = |i: usize| SHAPE_RANGE.0 + width * i as f64;
    let values: Vec<f64> = (0..=steps).map(|i| at(grid(i))).collect();
    let best = (0..=steps)
        .max_by(|&a, &b| values[a].total_cmp(&values[b]))
        .unwrap_or(0);
    let shape = golden_max(
        at,
        grid(best.saturating_sub(1)),
        grid((best + 1).min(steps)),
        25,
    );
    at(shape).max(values[best])
}

/// Half the χ²(1) quantile at `confidence`: how far the log-likelihood may drop inside the
/// profile interval.
fn drop_allowed(confidence: f64) -> f64 {
    super::super::special::chi_square_quantile(confidence, 1.0) / 2.0
}

/// The profile-likelihood interval of a quantity whose profile is `profile`, around its
/// estimate `estimate`, for quantities that live on (floor, ∞): each end is bracketed by steps
/// that grow geometrically and then bisected. An upper end beyond `ceiling` is None (the data
/// do not bound it).
fn profile_interval(
    profile: impl Fn(f64) -> f64,
    best: f64,
    estimate: f64,
    step: f64,
    floor: f64,
    ceiling: f64,
    confidence: f64,
) -> (Option<f64>, Option<f64>) {
    let cut = best - drop_allowed(confidence);
    let inside = |x: f64| profile(x) >= cut;
    let end = |direction: f64| -> Option<f64> {
        let mut near = estimate;
        let mut d = step;
        loop {
            let far = estimate + direction * d;
            if far <= floor {
                // Bisect towards the floor; if even there the profile is inside, no bound.
                let far = floor + (near - floor) * 1e-9;
                if inside(far) {
                    return Some(floor);
                }
                return Some(bisect_edge(inside, near, far));
            }
            if far >= ceiling {
                return None;
            }
            if !inside(far) {
                return Some(bisect_edge(inside, near, far));
            }
            near = far;
            d *= 2.0;
        }
    };
    (end(-1.0), end(1.0))
}

/// The boundary between `inside_at` (true) and `outside_at` (false), to 1e-4 of the bracket
/// it starts from (far finer than the interval's own sampling error).
fn bisect_edge(inside: impl Fn(f64) -> bool, mut inside_at: f64, mut outside_at: f64) -> f64 {
    for _ in 0..14 {
        let mid = 0.5 * (inside_at + outside_at);
        if inside(mid) {
            inside_at = mid;
        } else {
            outside_at = mid;
        }
    }
    0.5 * (inside_at + outside_at)
}

/// Profile-likelihood interval of the shape ξ.
pub(crate) fn shape_interval(y: &[f64], fit: &Gpd, confidence: f64) -> (Option<f64>, Option<f64>) {
    let max = y.iter().copied().fold(0.0, f64::max);
    let profile = |shape: f64| {
        // For a fixed shape the best scale: golden section on ln σ within the support.
        let floor = if shape < 0.0 {
            -shape * max * (1.0 + 1e-12)
        } else {
            0.0
        };
        let centre = fit.scale.max(floor * 1.01);
        let low = (floor.max(centre * 1e-3)).ln();
        let ln_scale = golden_max(
            |s| log_likelihood(y, s.exp(), shape),
            low,
            (centre * 1e3).ln(),
            40,
        );
        log_likelihood(y, ln_scale.exp(), shape)
    };
    profile_interval(
        profile,
        fit.log_likelihood,
        fit.shape,
        0.05,
        SHAPE_RANGE.0,
        SHAPE_RANGE.1,
        confidence,
    )
}

/// Profile-likelihood interval of the excess exceeded with probability `q` by an excess: for a
/// candidate excess z the scale is fixed by the shape (σ = z / growth(1/q, ξ)) and the
/// likelihood maximised over the shape.
pub(crate) fn excess_interval(
    y: &[f64],
    fit: &Gpd,
    q: f64,
    confidence: f64,
) -> (Option<f64>, Option<f64>) {
    let estimate = excess_at(q, fit.scale, fit.shape);
    let profile = |z: f64| max_over_shape(y, |shape| z / growth(1.0 / q, shape));
    let (low, high) = profile_interval(
        profile,
        fit.log_likelihood,
        estimate,
        0.05 * estimate,
        0.0,
        estimate * 1e6,
        confidence,
    );
    (low, high)
}

/// The Anderson-Darling statistic A² of the excesses against the fitted distribution.
pub(crate) fn anderson_darling(y: &[f64], fit: &Gpd) -> f64 {
    let mut z: Vec<f64> = y
        .iter()
        .map(|&v| cdf(v, fit.scale, fit.shape).clamp(1e-15, 1.0 - 1e-15))
        .collect();
    z.sort_by(f64::total_cmp);
    let n = z.len();
    let sum: f64 = (0..n)
        .map(|i| (2 * i + 1) as f64 * (z[i].ln() + (1.0 - z[n - 1 - i]).ln()))
        .sum();
    -(n as f64) - sum / n as f64
}

use super::*;
use crate::random::SplitMix64;

/// A GPD(σ, ξ) excess by inversion.
fn gpd_excess(rng: &mut SplitMix64, scale: f64, shape: f64) -> f64 {
    let u = 1.0 - rng.uniform(); // (0, 1]
    if shape.abs() < 1e-12 {
        -scale * u.ln()
    } else {
        scale / shape * (u.powf(-shape) - 1.0)
    }
}

/// The known distribution of the coverage test: with probability 0.99 an exponential body
/// (mean 5 us) cut at 30 us, else 30 us plus a GPD(σ = 5 us, ξ = 0.2) excess. Its latency
/// exceeded with probability p < 0.01 is 30 us + σ/ξ·((0.01/p)^ξ − 1).
const BODY_MEAN: f64 = 5_000.0;
const JOIN: f64 = 30_000.0;
const TAIL_SHARE: f64 = 0.01;
const SCALE: f64 = 5_000.0;
const SHAPE: f64 = 0.2;

fn body_and_tail(rng: &mut SplitMix64, scale: f64, shape: f64) -> u64 {
    if rng.uniform() >= TAIL_SHARE {
        // Exponential truncated to [0, JOIN) by inversion.
        let cut = 1.0 - (-JOIN / BODY_MEAN).exp();
        (-BODY_MEAN * (1.0 - rng.uniform() * cut).ln()) as u64
    } else {
        (JOIN + gpd_excess(rng, scale, shape)) as u64
    }
}

fn true_level(p: f64) -> f64 {
    JOIN + SCALE / SHAPE * ((TAIL_SHARE / p).powf(SHAPE) - 1.0)
}

fn run(
    rng: &mut SplitMix64,
    n: usize,
    mut draw: impl FnMut(&mut SplitMix64, usize) -> u64,
) -> Vec<u64> {
    (0..n).map(|i| draw(rng, i)).collect()
}

#[test]
fn anderson_darling_rejects_about_one_percent_of_true_gpd_samples() {
    let mut rng = SplitMix64::new(21);
    let mut statistics = Vec::new();
    for i in 0..1500 {
        let shape = [-0.2, 0.0, 0.2, 0.5][i % 4];
        let n = [50, 150, 500][i % 3];
        let y: Vec<f64> = (0..n).map(|_| gpd_excess(&mut rng, 1.0, shape)).collect();
        let fit = gpd::fit(&y).expect("a fit");
        statistics.push(gpd::anderson_darling(&y, &fit));
    }
    statistics.sort_by(f64::total_cmp);
    eprintln!(
        "A² quantiles: 0.95 {:.3}, 0.99 {:.3}, 0.995 {:.3}",
        statistics[1425], statistics[1485], statistics[1492]
    );
    let rejected = statistics.iter().filter(|&&a| a > AD_CRITICAL).count();
    // 1 % of 1500 is 15; the binomial spread allows 5..30.
    assert!((5..=30).contains(&rejected), "rejected {rejected} of 1500");
}

#[test]
fn shape_and_return_levels_are_inside_their_intervals() {
    // 200 seeded runs of 60 000 wakeups from the known distribution: the 95 % intervals of
    // the shape and of the 1e-6 and 1e-9 return levels must contain the truth in at least
    // 90 % of them (a refused fit counts as a miss).
    let mut rng = SplitMix64::new(22);
    let (mut shape_in, mut level6_in, mut level9_in) = (0, 0, 0);
    let mut refused = Vec::new();
    for _ in 0..200 {
        let latencies = run(&mut rng, 60_000, |r, _| body_and_tail(r, SCALE, SHAPE));
        let peaks = peaks_above(&latencies, 20_000);
        let fit = match fit_tail(60_000, &peaks, &halves(60_000), 0.95) {
            Ok(fit) => fit,
            Err(refusal) => {
                refused.push(refusal.reason);
                continue;
            }
        };
        let (low, high) = fit.shape_interval;
        shape_in += usize::from(low.is_none_or(|l| l <= SHAPE) && high.is_none_or(|h| SHAPE <= h));
        for (p, count) in [(1e-6, &mut level6_in), (1e-9, &mut level9_in)] {
            let level = fit.return_level(p).expect("p below the exceedance rate");
            let truth = true_level(p);
            let inside =
                level.low_ns.is_none_or(|l| l <= truth) && level.high_ns.is_none_or(|h| truth <= h);
            *count += usize::from(inside);
        }
    }
    eprintln!(
        "inside their 95 % intervals of 200: shape {shape_in}, 1e-6 {level6_in}, 1e-9 \
         {level9_in}; refused {}: {refused:?}",
        refused.len()
    );
    assert!(
        shape_in >= 180,
        "shape inside its interval in {shape_in} of 200"
    );
    assert!(
        level6_in >= 180,
        "1e-6 level inside its interval in {level6_in} of 200"
    );
    assert!(
        level9_in >= 180,
        "1e-9 level inside its interval in {level9_in} of 200"
    );
}

#[test]
fn a_tail_that_changes_midway_is_refused() {
    // Same body, same share in the tail; the tail's shape goes from 0 to 0.5 at half time.
    let mut rng = SplitMix64::new(23);
    for _ in 0..5 {
        let latencies = run(&mut rng, 200_000, |r, i| {
            let shape = if i < 100_000 { 0.0 } else { 0.5 };
            body_and_tail(r, SCALE, shape)
        });
        let peaks = peaks_above(&latencies, 20_000);
        let refusal = fit_tail(200_000, &peaks, &halves(200_000), 0.95).expect_err("refused");
        assert!(
            matches!(refusal.check, Check::StationaryTail | Check::StationaryRate),
            "{refusal:?}"
        );
        assert!(
            refusal.reason.starts_with("not extrapolated: the "),
            "{}",
            refusal.reason
        );
    }
    // Named phases: the reason names the phase whose tail differs.
    let latencies = run(&mut rng, 200_000, |r, i| {
        body_and_tail(
            r,
            SCALE,
            if (100_000..150_000).contains(&i) {
                0.6
            } else {
                0.0
            },
        )
    });
    let phase = |label: &str, first, end| Segment {
        label: label.into(),
        first_wakeup: first,
        end_wakeup: end,
    };
    let phases = [
        phase("idle", 0, 100_000),
        phase("io", 100_000, 150_000),
        phase("cpu", 150_000, 200_000),
    ];
    let refusal =
        fit_tail(200_000, &peaks_above(&latencies, 20_000), &phases, 0.95).expect_err("refused");
    assert_eq!(refusal.check, Check::StationaryTail, "{refusal:?}");
    assert!(refusal.reason.contains("(io: shape"), "{}", refusal.reason);
}

/// Bursts: every `every` wakeups on average (Bernoulli) a burst starts whose `length`
/// consecutive wakeups all lie in the tail, decaying from one GPD draw.
fn bursty(rng: &mut SplitMix64, n: usize, every: f64, length: usize) -> Vec<u64> {
    let mut latencies = Vec::with_capacity(n);
    while latencies.len() < n {
        if rng.uniform() < 1.0 / every {
            let peak = JOIN + gpd_excess(rng, SCALE, SHAPE);
            for j in 0..length {
                latencies.push((JOIN + (peak - JOIN) * 0.8f64.powi(j as i32)) as u64 + 1);
            }
        } else {
            let cut = 1.0 - (-JOIN / BODY_MEAN).exp();
            latencies.push((-BODY_MEAN * (1.0 - rng.uniform() * cut).ln()) as u64);
        }
    }
    latencies.truncate(n);
    latencies
}

#[test]
fn bursts_are_declustered_or_refused() {
    let mut rng = SplitMix64::new(24);
    // Bursts of 8 wakeups, one per ~1000 wakeups: the extremal index is near 1/8 and the fit
    // is made on one maximum per burst.
    let latencies = bursty(&mut rng, 400_000, 1000.0, 8);
    let peaks = peaks_above(&latencies, 20_000);
    let over: Vec<Peak> = peaks
        .iter()
        .copied()
        .filter(|p| p.latency_ns > 31_000)
        .collect();
    let theta = extremal_index(&over);
    assert!((0.08..0.2).contains(&theta), "extremal index {theta}");
    let fit = fit_tail(400_000, &peaks, &halves(400_000), 0.95).expect("declustered fit");
    assert!(
        fit.extremal_index < 0.3 && fit.clusters * 4 < fit.exceedances,
        "{fit:?}"
    );
    // Too few bursts for a fit: refused with the reason.
    let latencies = bursty(&mut rng, 100_000, 5000.0, 40);
    let refusal = fit_tail(
        100_000,
        &peaks_above(&latencies, 20_000),
        &halves(100_000),
        0.95,
    )
    .expect_err("refused");
    assert_eq!(refusal.check, Check::Independence, "{refusal:?}");
    assert!(
        refusal.reason.starts_with("exceedances come in bursts"),
        "{}",
        refusal.reason
    );
}

#[test]
fn a_two_point_tail_is_refused_by_the_fit_test() {
    // A two-point tail (half the exceedances at +1 us, half at +50 us) is not a GPD at any
    // threshold where both points are above it.
    let mut rng = SplitMix64::new(25);
    let latencies = run(&mut rng, 200_000, |r, _| {
        if r.uniform() < 0.01 {
            if r.uniform() < 0.5 {
                31_000 + r.below(10) as u64
            } else {
                80_000 + r.below(10) as u64
            }
        } else {
            (r.uniform() * JOIN) as u64
        }
    });
    let refusal = fit_tail(
        200_000,
        &peaks_above(&latencies, 20_000),
        &halves(200_000),
        0.95,
    )
    .expect_err("refused");
    assert_eq!(refusal.check, Check::GoodnessOfFit, "{refusal:?}");
}

#[test]
fn a_day_at_one_kilohertz_fits_on_its_top_two_thousand() {
    // 86.4 M wakeups: only the peaks are drawn (the top 1 % of the known distribution, at
    // uniformly random wakeups); the threshold leaves at most 2000 above it.
    let mut rng = SplitMix64::new(26);
    let wakeups: u64 = 86_400_000;
    let mut peaks: Vec<Peak> = (0..864_000)
        .map(|_| Peak {
            wakeup: rng.next_u64() % wakeups,
            latency_ns: (JOIN + gpd_excess(&mut rng, SCALE, SHAPE)) as u64,
        })
        .collect();
    peaks.sort_by_key(|p| p.wakeup);
    let fit = fit_tail(wakeups, &peaks, &halves(wakeups), 0.95).expect("a fit");
    assert!(fit.exceedances <= 2000, "{fit:?}");
    let level = fit.return_level(1e-9).expect("a level");
    let truth = true_level(1e-9);
    assert!(
        level.low_ns.unwrap() <= truth && truth <= level.high_ns.unwrap(),
        "{level:?} vs {truth}"
    );
}

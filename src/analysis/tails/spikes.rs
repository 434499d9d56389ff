//! Spikes: how many wakeups went over a threshold (one spike counted once even when it makes
//! several consecutive wakeups late), how often (rate per hour with an exact 95 % Poisson
//! interval, mean time between spikes), and whether they come on a grid (a timer, a watchdog,
//! a hypervisor tick): the dominant period of the spike times and the share of spikes on it.

use super::special::chi_square_quantile;

/// One spike: a run of consecutive wakeups over the threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Spike {
    /// Due time of the first late wakeup (ns, the caller's clock).
    pub time_ns: u64,
    /// The largest latency in the run.
    pub(crate) peak_ns: u64,
    /// Wakeups in the run.
    pub wakeups: u64,
}

/// Spike times and how precisely they are known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SpikeTimes {
    /// Ascending.
    pub(crate) times_ns: Vec<u64>,
    /// Each time is known to within this (the wakeup interval from samples, the log interval
    /// from interval maxima).
    pub(crate) resolution_ns: u64,
    /// True when the count can be too low: from interval maxima, several spikes in one log
    /// interval count as one.
    pub(crate) count_is_lower_bound: bool,
}

/// The spikes over `threshold_ns` in `(due_ns, latency_ns)` samples in wakeup order. A spike
/// ends at the first wakeup at or below the threshold.
#[cfg(test)]
pub(crate) fn spikes_from_samples(
    samples: impl IntoIterator<Item = (u64, u64)>,
    threshold_ns: u64,
) -> Vec<Spike> {
    let mut spikes = Vec::new();
    let mut open: Option<Spike> = None;
    for (due_ns, latency_ns) in samples {
        if latency_ns > threshold_ns {
            match &mut open {
                Some(s) => {
                    s.peak_ns = s.peak_ns.max(latency_ns);
                    s.wakeups += 1;
                }
                None => {
                    open = Some(Spike {
                        time_ns: due_ns,
                        peak_ns: latency_ns,
                        wakeups: 1,
                    })
                }
            }
        } else if let Some(s) = open.take() {
            spikes.push(s);
        }
    }
    spikes.extend(open);
    spikes
}

impl SpikeTimes {
    /// Spike times when only each log interval's maximum is kept (the hlog without
    /// `--samples`): every interval `(start_ns, max_ns)` whose maximum is over the threshold
    /// holds at least one spike, dated to the interval's start.
    pub(crate) fn from_interval_maxima(
        intervals: &[(u64, u64)],
        log_interval_ns: u64,
        threshold_ns: u64,
    ) -> SpikeTimes {
        let mut times_ns: Vec<u64> = intervals
            .iter()
            .filter(|&&(_, max)| max > threshold_ns)
            .map(|&(start, _)| start)
            .collect();
        times_ns.sort_unstable();
        SpikeTimes {
            times_ns,
            resolution_ns: log_interval_ns,
            count_is_lower_bound: true,
        }
    }
}

/// How often spikes came.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpikeRate {
    pub count: u64,
    /// The time the count was taken over.
    pub(crate) exposure_ns: u64,
    pub per_hour: f64,
    /// Exact (Garwood) two-sided interval of the rate per hour at `confidence`.
    pub per_hour_low: f64,
    pub per_hour_high: f64,
    pub(crate) confidence: f64,
    /// Mean time between spikes: exposure / count; None without spikes.
    pub(crate) mtbf_ns: Option<u64>,
}

const NS_PER_HOUR: f64 = 3_600e9;

/// The rate of `count` spikes over `exposure_ns` (> 0), with the exact Poisson interval:
/// [χ²((1−c)/2, 2x)/2, χ²((1+c)/2, 2x+2)/2] events, divided by the exposure.
pub fn spike_rate(count: u64, exposure_ns: u64, confidence: f64) -> SpikeRate {
    let hours = exposure_ns as f64 / NS_PER_HOUR;
    let tail = (1.0 - confidence) / 2.0;
    let x = count as f64;
    let low = if count == 0 {
        0.0
    } else {
        chi_square_quantile(tail, 2.0 * x) / 2.0
    };
    let high = chi_square_quantile(1.0 - tail, 2.0 * x + 2.0) / 2.0;
    SpikeRate {
        count,
        exposure_ns,
        per_hour: x / hours,
        per_hour_low: low / hours,
        per_hour_high: high / hours,
        confidence,
        mtbf_ns: (count > 0).then(|| exposure_ns / count),
    }
}

/// A period the spike times keep to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Period {
    pub(crate) period_ns: f64,
    /// Spikes within [`Period::tolerance_ns`] of the grid, and all spikes.
    pub(crate) on_grid: u64,
    pub spikes: u64,
    /// Half-width of "on the grid": 1 % of the period plus half the time resolution.
    pub(crate) tolerance_ns: f64,
}

impl Period {
    pub(crate) fn share_on_grid(&self) -> f64 {
        self.on_grid as f64 / self.spikes as f64
    }
}

/// Share of spikes that must lie on the grid for a period to be claimed.
const MIN_SHARE: f64 = 0.5;
/// Spikes that must lie on the grid.
const MIN_ON_GRID: u64 = 6;
/// Largest chance (per candidate tried) of a grid this good arising from unrelated times.
const MAX_CHANCE: f64 = 1e-6;
/// Each spike is paired with this many followers to propose periods.
const FOLLOWERS: usize = 8;
/// Candidate periods tried, the most frequent spike-to-spike distances.
const CANDIDATES: usize = 16;

/// The dominant period of the spike times, if there is one: the spacing that puts the most
/// spikes on one grid (at least half of them, and far more than unrelated times would put
/// there by chance). Candidates are the common distances between a spike and its next few
/// followers; each is refined by least squares over the spikes on its grid, over a span of the
/// run that doubles, so that a small error in the candidate does not drift off the grid.
pub(crate) fn dominant_period(times: &SpikeTimes) -> Option<Period> {
    let t = &times.times_ns;
    if (t.len() as u64) < MIN_ON_GRID {
        return None;
    }
    let resolution = times.resolution_ns as f64;
    let mut best: Option<Period> = None;
    let candidates = candidate_periods(t);
    for &candidate in &candidates {
        if candidate <= 2.0 * resolution {
            continue; // a grid finer than the timestamps cannot be seen
        }
        let found = fit_grid(t, candidate, resolution);
        let better = match &best {
            None => true,
            // Prefer more spikes on the grid; among near-equals, the shorter period (a multiple
            // of the true period holds about as many spikes only when it is nearly all).
            Some(b) => {
                found.on_grid as f64 > 1.05 * b.on_grid as f64
                    || (found.on_grid as f64 >= 0.95 * b.on_grid as f64
                        && found.period_ns < 0.9 * b.period_ns)
            }
        };
        if better {
            best = Some(found);
        }
    }
    let best = best?;
    let chance_per_spike = (2.0 * best.tolerance_ns / best.period_ns).min(1.0);
    let significant = chance_bound(best.on_grid, best.spikes, chance_per_spike)
        <= MAX_CHANCE / candidates.len().max(1) as f64;
    (best.on_grid >= MIN_ON_GRID && best.share_on_grid() >= MIN_SHARE && significant)
        .then_some(best)
}

/// Chernoff bound on P(Binomial(n, p) ≥ k): exp(−n·KL(k/n ‖ p)) for k/n > p, else 1.
fn chance_bound(k: u64, n: u64, p: f64) -> f64 {
    let q = k as f64 / n as f64;
    if q <= p || p >= 1.0 {
        return 1.0;
    }
    let term = |a: f64, b: f64| if a == 0.0 { 0.0 } else { a * (a / b).ln() };
    (-(n as f64) * (term(q, p) + term(1.0 - q, 1.0 - p))).exp()
}

/// The most frequent distances between each spike and its next [`FOLLOWERS`], as the medians
/// of groups of distances within 1 % of each other.
fn candidate_periods(t: &[u64]) -> Vec<f64> {
    let mut gaps: Vec<u64> = Vec::with_capacity(t.len() * FOLLOWERS);
    for (i, &a) in t.iter().enumerate() {
        gaps.extend(
            t[i + 1..]
                .iter()
                .take(FOLLOWERS)
                .map(|&b| b - a)
                .filter(|&g| g > 0),
        );
    }
    gaps.sort_unstable();
    let mut groups: Vec<(usize, f64)> = Vec::new(); // (size, median)
    let mut start = 0;
    for i in 1..=gaps.len() {
        if i == gaps.len() || gaps[i] as f64 > gaps[i - 1] as f64 * 1.01 {
            let group = &gaps[start..i];
            if group.len() >= 3 {
                groups.push((group.len(), group[group.len() / 2] as f64));
            }
            start = i;
        }
    }
    groups.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.total_cmp(&b.1)));
    groups
        .into_iter()
        .take(CANDIDATES)
        .map(|(_, p)| p)
        .collect()
}

/// Fits a grid of spacing near `period` to the times; returns it with its count of spikes on it.
fn fit_grid(t: &[u64], period: f64, resolution: f64) -> Period {
    let origin = t[0];
    let offsets: Vec<f64> = t.iter().map(|&x| (x - origin) as f64).collect();
    let mut period = period;
    let mut phase;
    let mut span = 16.0 * period;
    loop {
        let tolerance = 0.01 * period + resolution / 2.0;
        let end = offsets.partition_point(|&x| x <= span);
        let part = &offsets[..end];
        phase = best_phase(part, period, tolerance);
        if let Some((p, a)) = least_squares_grid(part, period, phase, tolerance) {
            period = p;
            phase = a;
        }
        if end == offsets.len() {
            break;
        }
        span *= 2.0;
    }
    let tolerance = 0.01 * period + resolution / 2.0;
    let on_grid = offsets
        .iter()
        .filter(|&&x| grid_residual(x, period, phase).abs() <= tolerance)
        .count() as u64;
    Period {
        period_ns: period,
        on_grid,
        spikes: t.len() as u64,
        tolerance_ns: tolerance,
    }
}

/// x's distance from the nearest grid point phase + n·period.
fn grid_residual(x: f64, period: f64, phase: f64) -> f64 {
    let r = x - phase;
    r - (r / period).round() * period
}

/// The phase (in [0, period)) whose window of ±tolerance holds the most of the offsets.
fn best_phase(offsets: &[f64], period: f64, tolerance: f64) -> f64 {
    let mut phases: Vec<f64> = offsets.iter().map(|&x| x.rem_euclid(period)).collect();
    phases.sort_by(f64::total_cmp);
    let n = phases.len();
    // Unwrapped copy so that a window can run past the period's end.
    let wrapped: Vec<f64> = phases
        .iter()
        .chain(phases.iter())
        .enumerate()
        .map(|(i, &p)| if i < n { p } else { p + period })
        .collect();
    let (mut best_count, mut best_centre, mut j) = (0, 0.0, 0);
    for i in 0..n {
        j = j.max(i);
        while j + 1 < i + n && wrapped[j + 1] <= wrapped[i] + 2.0 * tolerance {
            j += 1;
        }
        if j + 1 - i > best_count {
            best_count = j + 1 - i;
            best_centre = wrapped[(i + j) / 2];
        }
    }
    best_centre.rem_euclid(period)
}

/// Least-squares line x = phase + n·period through the offsets on the grid; None when fewer
/// than two distinct grid numbers are on it.
fn least_squares_grid(
    offsets: &[f64],
    period: f64,
    phase: f64,
    tolerance: f64,
) -> Option<(f64, f64)> {
    let (mut sn, mut sx, mut snn, mut snx, mut count) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &x in offsets {
        if grid_residual(x, period, phase).abs() <= tolerance {
            let n = ((x - phase) / period).round();
            sn += n;
            sx += x;
            snn += n * n;
            snx += n * x;
            count += 1.0;
        }
    }
    let denominator = count * snn - sn * sn;
    if count < 2.0 || denominator.abs() < 0.5 {
        return None;
    }
    let slope = (count * snx - sn * sx) / denominator;
    let intercept = (sx - slope * sn) / count;
    (slope > 0.0).then_some((slope, intercept))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::SplitMix64;

    fn exact(times_ns: Vec<u64>, resolution_ns: u64) -> SpikeTimes {
        let mut times_ns = times_ns;
        times_ns.sort_unstable();
        SpikeTimes {
            times_ns,
            resolution_ns,
            count_is_lower_bound: false,
        }
    }

    /// Spikes every `period` s with Gaussian jitter (σ = `jitter` of the period), a share
    /// `missing` of them absent and `extra` unrelated spikes at uniform times, over `count`
    /// periods.
    fn train(
        rng: &mut SplitMix64,
        period: f64,
        jitter: f64,
        count: usize,
        missing: f64,
        extra: usize,
    ) -> Vec<u64> {
        let start = 5e9 + rng.uniform() * period;
        let mut times = Vec::new();
        for i in 0..count {
            let jittered = start + i as f64 * period + rng.normal() * jitter * period;
            if rng.uniform() >= missing {
                times.push(jittered as u64);
            }
        }
        let span = count as f64 * period;
        times.extend((0..extra).map(|_| (start + rng.uniform() * span) as u64));
        times
    }

    #[test]
    fn one_spike_per_run_of_late_wakeups() {
        // 1 ms wakeups; late runs at 10..13 and 50, and the last two wakeups.
        let latency = |i: u64| match i {
            10..=12 => 300_000,
            50 => 120_000,
            98 | 99 => 200_000,
            _ => 5_000,
        };
        let spikes = spikes_from_samples((0..100).map(|i| (i * 1_000_000, latency(i))), 100_000);
        let got: Vec<(u64, u64, u64)> = spikes
            .iter()
            .map(|s| (s.time_ns, s.peak_ns, s.wakeups))
            .collect();
        assert_eq!(
            got,
            [
                (10_000_000, 300_000, 3),
                (50_000_000, 120_000, 1),
                (98_000_000, 200_000, 2)
            ]
        );
    }

    #[test]
    fn periodic_train_with_jitter_gives_its_period() {
        let mut rng = SplitMix64::new(11);
        for case in 0..20 {
            // Periods from 0.7 s to 30 s, 0.3 % jitter, 10 % missing, 15 % unrelated extra.
            let period = [0.7e9, 3e9, 30e9, 1.234e9][case % 4];
            let times = train(&mut rng, period, 0.003, 400, 0.1, 60);
            let found = dominant_period(&exact(times, 1_000_000)).expect("a period");
            let error = (found.period_ns - period).abs() / period;
            assert!(error < 0.01, "case {case}: {} vs {period}", found.period_ns);
            // ~360 on the grid of ~420 spikes (a few extra ones fall on it by chance).
            assert!(found.share_on_grid() > 0.8, "{found:?}");
        }
        // Known only to the second (interval maxima, 1 s log interval), period 7 s.
        let times = train(&mut rng, 7e9, 0.002, 300, 0.0, 0);
        let quantised = times
            .iter()
            .map(|t| t / 1_000_000_000 * 1_000_000_000)
            .collect();
        let found = dominant_period(&exact(quantised, 1_000_000_000)).expect("a period");
        assert!((found.period_ns - 7e9).abs() < 0.01 * 7e9, "{found:?}");
    }

    #[test]
    fn poisson_train_has_no_period() {
        let mut rng = SplitMix64::new(12);
        for _ in 0..20 {
            let times = train(&mut rng, 3e9, 0.0, 400, 1.0, 400);
            assert_eq!(dominant_period(&exact(times, 1_000_000)), None);
        }
    }

    #[test]
    fn poisson_interval_coverage() {
        // Counts drawn from Poisson(μ) for means from 0.5 to 200: the exact 95 % interval
        // contains the true rate in at least 95 % of draws (it is conservative), up to the
        // sampling error of 1000 draws.
        let mut rng = SplitMix64::new(13);
        let hour = 3_600_000_000_000;
        for &mean in &[0.5, 3.0, 10.0, 40.0, 200.0] {
            let mut covered = 0;
            for _ in 0..1000 {
                // Poisson by counting exponential gaps within one hour at rate `mean`.
                let (mut count, mut clock) = (0u64, 0.0);
                loop {
                    clock += -(1.0 - rng.uniform()).ln() / mean;
                    if clock > 1.0 {
                        break;
                    }
                    count += 1;
                }
                let r = spike_rate(count, hour, 0.95);
                covered += usize::from(r.per_hour_low <= mean && mean <= r.per_hour_high);
            }
            assert!(covered >= 935, "mean {mean}: covered {covered} of 1000");
        }
        let r = spike_rate(10, hour, 0.95);
        // Garwood's interval for 10 events: [4.795, 18.39].
        assert!(
            (r.per_hour_low - 4.795_389).abs() < 1e-4
                && (r.per_hour_high - 18.390_358).abs() < 1e-4
        );
        assert_eq!(r.mtbf_ns, Some(360_000_000_000));
    }
}

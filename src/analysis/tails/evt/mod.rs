//! The extrapolated worst case: peaks over a threshold fitted with a generalized Pareto
//! distribution (see [`gpd`] for why maximum likelihood), the latency exceeded with a given
//! probability per wakeup with its profile-likelihood interval, and the checks that must pass
//! before any of it is shown: enough independent exceedances (declustered when they come in
//! bursts), a rate and a tail that do not change over the run, a fit that matches, and then
//! ([`extrapolate`]) a shape light enough and levels within the run's exposure. A failed check
//! is returned as a [`Refusal`] with a plain reason. These figures are extrapolated, not
//! measured; docs/tails.md says how, and the callers must say so where they show them.

mod extrapolate;
pub(crate) mod gpd;
mod segments;

pub(crate) use extrapolate::{EXPOSURE_FACTOR, Level, extrapolate, writable_ns};
pub(crate) use segments::{PhaseSpan, phase_segments};

use super::special::chi_square_survival;
use crate::units::format_ns;
use gpd::Gpd;

/// One wakeup over the collection level, in run order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Peak {
    /// The wakeup's number in the run (0-based).
    pub(crate) wakeup: u64,
    pub latency_ns: u64,
}

/// A stretch of the run checked for stationarity on its own: a scenario phase, or a half.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Segment {
    pub label: String,
    /// Wakeup numbers first..end (end exclusive).
    pub(crate) first_wakeup: u64,
    pub(crate) end_wakeup: u64,
}

/// Every wakeup of `latencies` above `level_ns`, in order: the peaks the fit chooses its
/// threshold among. The level must leave at least the top 0.5 % of the run, or its top 2000
/// wakeups if fewer, above it (its p99 always does), so that every candidate threshold can be
/// tried.
#[cfg(test)]
pub(crate) fn peaks_above(latencies: &[u64], level_ns: u64) -> Vec<Peak> {
    latencies
        .iter()
        .enumerate()
        .filter(|&(_, &l)| l > level_ns)
        .map(|(i, &l)| Peak {
            wakeup: i as u64,
            latency_ns: l,
        })
        .collect()
}

/// The first and second half of a run of `wakeups`: the default segments.
pub(crate) fn halves(wakeups: u64) -> Vec<Segment> {
    let mid = wakeups / 2;
    vec![
        Segment {
            label: "first half".into(),
            first_wakeup: 0,
            end_wakeup: mid,
        },
        Segment {
            label: "second half".into(),
            first_wakeup: mid,
            end_wakeup: wakeups,
        },
    ]
}

/// Candidate thresholds, lowest first: the share of the run's wakeups above each, and at most
/// how many wakeups that may be (a day at 1 kHz has 432 000 in its top 0.5 %; a few hundred
/// excesses fix the tail as well, and a higher threshold suits the model better).
const THRESHOLD_CANDIDATES: [(f64, usize); 4] =
    [(0.005, 2000), (0.0025, 1000), (0.001, 500), (0.0005, 250)];
/// Independent exceedances (cluster maxima) a fit needs.
pub(crate) const MIN_CLUSTERS: usize = 50;
/// Below this extremal index the exceedances are declustered.
const DECLUSTER_BELOW: f64 = 0.9;
/// Significance of the stationarity tests (rate and tail across segments).
const STATIONARITY_LEVEL: f64 = 0.001;
/// Cluster maxima a segment needs to have its tail compared with the rest.
const MIN_PER_SEGMENT: usize = 20;
/// Anderson-Darling A² above which the fitted GPD is rejected: the 99th percentile of A² for
/// GPD samples with both parameters estimated (shapes −0.2..0.5, 50..500 excesses), checked
/// by `anderson_darling_rejects_about_one_percent_of_true_gpd_samples`.
pub(crate) const AD_CRITICAL: f64 = 1.6;

/// Why no extrapolation is shown.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Refusal {
    pub check: Check,
    /// A plain sentence, e.g. "the tail changes over the run (phase io: shape 0.45, elsewhere 0.05)".
    pub reason: String,
}

/// The check a refusal comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check {
    TooFewExceedances,
    Independence,
    StationaryRate,
    StationaryTail,
    GoodnessOfFit,
    /// The shape's interval reaches [`SHAPE_LIMIT`]: the fit is made, but nothing is
    /// extrapolated from it ([`extrapolate`]).
    HeavyTail,
    /// A noise run (`jitterlab noise`): its samples are gaps, not wakeups, so a level exceeded
    /// with some probability per wakeup (and "once in" at a wakeup rate) means nothing; no fit
    /// is made ([`NOISE_RUN`]).
    NoiseRun,
}

/// Why a noise run's tail is not extrapolated (issue 23): the reason run.json keeps, and so
/// what the terminal, the HTML report and the exports show.
pub(crate) const NOISE_RUN: &str =
    "not extrapolated: a noise run has no wakeups; gaps are counted per second";

/// A fitted tail and what it says.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TailFit {
    pub wakeups: u64,
    /// Excesses are latencies above this.
    pub threshold_ns: u64,
    pub(crate) exceedances: usize,
    /// Independent exceedances: clusters after declustering (= exceedances when not clustered).
    pub(crate) clusters: usize,
    /// Ferro-Segers intervals estimate of the extremal index (1: no clustering).
    pub(crate) extremal_index: f64,
    pub(crate) gpd: Gpd,
    pub(crate) anderson_darling: f64,
    /// Profile-likelihood interval of the shape at `confidence`.
    pub(crate) shape_interval: (Option<f64>, Option<f64>),
    pub(crate) confidence: f64,
    /// Excesses of the cluster maxima over the threshold (ns), what the fit saw.
    excesses: Vec<f64>,
}

/// The latency exceeded with probability `per_wakeup` per wakeup (a burst counted once).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ReturnLevel {
    pub(crate) per_wakeup: f64,
    pub latency_ns: f64,
    /// Profile-likelihood interval; a None upper end means the data do not bound it.
    pub(crate) low_ns: Option<f64>,
    pub(crate) high_ns: Option<f64>,
}

impl TailFit {
    /// Probability per wakeup that a new (independent) exceedance of the threshold starts.
    pub(crate) fn exceedance_rate(&self) -> f64 {
        self.clusters as f64 / self.wakeups as f64
    }

    /// The return level for `per_wakeup`, which must be below the exceedance rate (above it
    /// the measured percentiles answer, no extrapolation is needed).
    pub(crate) fn return_level(&self, per_wakeup: f64) -> Option<ReturnLevel> {
        let q = per_wakeup / self.exceedance_rate();
        if !(q > 0.0 && q < 1.0) {
            return None;
        }
        let u = self.threshold_ns as f64;
        let excess = gpd::excess_at(q, self.gpd.scale, self.gpd.shape);
        let (low, high) = gpd::excess_interval(&self.excesses, &self.gpd, q, self.confidence);
        Some(ReturnLevel {
            per_wakeup,
            latency_ns: u + excess,
            low_ns: low.map(|z| u + z),
            high_ns: high.map(|z| u + z),
        })
    }
}

/// Fits the tail of a run of `wakeups` wakeups from its `peaks` (every wakeup over a level
/// below the run's top 0.5 %, in order), after the validity checks, with intervals at
/// `confidence`. `segments` are the stretches compared for stationarity (phases, or
/// [`halves`]). The threshold is the lowest candidate (top 0.5 %, 0.25 %, 0.1 %, 0.05 % of
/// the wakeups, but at most 2000, 1000, 500, 250 of them) at which the GPD fits; the other
/// checks are made at that threshold.
pub(crate) fn fit_tail(
    wakeups: u64,
    peaks: &[Peak],
    segments: &[Segment],
    confidence: f64,
) -> Result<TailFit, Refusal> {
    let mut sorted: Vec<u64> = peaks.iter().map(|p| p.latency_ns).collect();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    let mut last_refusal = None;
    for (share, most) in THRESHOLD_CANDIDATES {
        let k = ((share * wakeups as f64) as usize).min(most);
        if k < MIN_CLUSTERS || k >= sorted.len() {
            continue;
        }
        let threshold_ns = sorted[k];
        match fit_at(wakeups, peaks, threshold_ns, segments, confidence) {
            Ok(fit) => return Ok(fit),
            Err(r) if r.check == Check::GoodnessOfFit => last_refusal = Some(r),
            Err(r) => return Err(r),
        }
    }
    Err(last_refusal.unwrap_or_else(|| Refusal {
        check: Check::TooFewExceedances,
        reason: format!(
            "too few wakeups for a tail fit: {wakeups} wakeups give fewer than {MIN_CLUSTERS} \
             in their top 0.5 % (run at least {} wakeups)",
            (MIN_CLUSTERS as f64 / THRESHOLD_CANDIDATES[0].0) as u64
        ),
    }))
}

fn fit_at(
    wakeups: u64,
    peaks: &[Peak],
    threshold_ns: u64,
    segments: &[Segment],
    confidence: f64,
) -> Result<TailFit, Refusal> {
    let over: Vec<Peak> = peaks
        .iter()
        .copied()
        .filter(|p| p.latency_ns > threshold_ns)
        .collect();
    let extremal_index = extremal_index(&over);
    let maxima = if extremal_index < DECLUSTER_BELOW {
        cluster_maxima(&over, extremal_index)
    } else {
        over.clone()
    };
    if maxima.len() < MIN_CLUSTERS {
        return Err(Refusal {
            check: Check::Independence,
            reason: format!(
                "exceedances come in bursts: {} wakeups over {} form only {} independent \
                 bursts (extremal index {extremal_index:.2}); a tail fit needs {MIN_CLUSTERS}: \
                 run longer",
                over.len(),
                format_ns(threshold_ns),
                maxima.len()
            ),
        });
    }
    let excess = |p: &Peak| (p.latency_ns - threshold_ns) as f64;
    let excesses: Vec<f64> = maxima.iter().map(excess).collect();
    check_stationary_rate(&maxima, wakeups, segments)?;
    let fit = gpd::fit(&excesses).ok_or_else(|| Refusal {
        check: Check::GoodnessOfFit,
        reason: "the generalized Pareto likelihood has no maximum for these excesses".into(),
    })?;
    check_stationary_tail(&maxima, &excesses, &fit, segments)?;
    let a2 = gpd::anderson_darling(&excesses, &fit);
    if a2 > AD_CRITICAL {
        return Err(Refusal {
            check: Check::GoodnessOfFit,
            reason: format!(
                "the tail does not follow a generalized Pareto distribution at any threshold \
                 tried (Anderson-Darling A² {a2:.2} > {AD_CRITICAL} over {})",
                format_ns(threshold_ns)
            ),
        });
    }
    Ok(TailFit {
        wakeups,
        threshold_ns,
        exceedances: over.len(),
        clusters: maxima.len(),
        extremal_index,
        shape_interval: gpd::shape_interval(&excesses, &fit, confidence),
        gpd: fit,
        anderson_darling: a2,
        confidence,
        excesses,
    })
}

/// Ferro and Segers' intervals estimator of the extremal index from the gaps (in wakeups)
/// between exceedances; 1 when there are too few to tell.
pub(crate) fn extremal_index(over: &[Peak]) -> f64 {
    if over.len() < 3 {
        return 1.0;
    }
    let gaps: Vec<f64> = over
        .windows(2)
        .map(|w| (w[1].wakeup - w[0].wakeup) as f64)
        .collect();
    let n = over.len() as f64;
    let max_gap = gaps.iter().copied().fold(0.0, f64::max);
    let theta = if max_gap <= 2.0 {
        let s: f64 = gaps.iter().sum();
        let s2: f64 = gaps.iter().map(|t| t * t).sum();
        2.0 * s * s / ((n - 1.0) * s2)
    } else {
        let s: f64 = gaps.iter().map(|t| t - 1.0).sum();
        let s2: f64 = gaps.iter().map(|t| (t - 1.0) * (t - 2.0)).sum();
        2.0 * s * s / ((n - 1.0) * s2)
    };
    theta.min(1.0)
}

/// Runs declustering with the run length Ferro and Segers derive from the extremal index: the
/// ⌈θ·n⌉ − 1 largest gaps separate the clusters; each cluster gives its maximum.
fn cluster_maxima(over: &[Peak], theta: f64) -> Vec<Peak> {
    let clusters = ((theta * over.len() as f64).ceil() as usize).clamp(1, over.len());
    let mut by_gap: Vec<usize> = (1..over.len()).collect();
    by_gap.sort_by_key(|&i| std::cmp::Reverse(over[i].wakeup - over[i - 1].wakeup));
    let mut starts = vec![false; over.len()];
    starts[0] = true;
    for &i in by_gap.iter().take(clusters - 1) {
        starts[i] = true;
    }
    let mut maxima: Vec<Peak> = Vec::with_capacity(clusters);
    for (i, p) in over.iter().enumerate() {
        match maxima.last_mut() {
            Some(m) if !starts[i] => {
                if p.latency_ns > m.latency_ns {
                    *m = *p;
                }
            }
            _ => maxima.push(*p),
        }
    }
    maxima
}

fn in_segment(p: &Peak, s: &Segment) -> bool {
    (s.first_wakeup..s.end_wakeup).contains(&p.wakeup)
}

/// The number of independent exceedances per segment against its share of the wakeups
/// (chi-square test of homogeneity, `STATIONARITY_LEVEL`).
fn check_stationary_rate(
    maxima: &[Peak],
    wakeups: u64,
    segments: &[Segment],
) -> Result<(), Refusal> {
    if segments.len() < 2 {
        return Ok(());
    }
    let rate = maxima.len() as f64 / wakeups as f64;
    let mut statistic = 0.0;
    let mut worst = (0.0, 0, 0.0, "");
    for s in segments {
        let seen = maxima.iter().filter(|p| in_segment(p, s)).count();
        let expected = rate * (s.end_wakeup - s.first_wakeup) as f64;
        if expected <= 0.0 {
            continue;
        }
        let term = (seen as f64 - expected).powi(2) / expected;
        statistic += term;
        if term > worst.0 {
            worst = (term, seen, expected, s.label.as_str());
        }
    }
    let p = chi_square_survival(statistic, (segments.len() - 1) as f64);
    if p < STATIONARITY_LEVEL {
        return Err(Refusal {
            check: Check::StationaryRate,
            reason: format!(
                "not extrapolated: the rate of exceedances changes over the run ({}: {} \
                 exceedances where {:.0} were expected; p = {p:.1e})",
                worst.3, worst.1, worst.2
            ),
        });
    }
    Ok(())
}

/// A separate GPD per segment against one for the whole run (likelihood-ratio test, two
/// parameters per extra segment, `STATIONARITY_LEVEL`). Segments with fewer than
/// `MIN_PER_SEGMENT` maxima stay with the rest. When the tail changes, the reason names the
/// segment that differs most from all the others together (the largest likelihood ratio of
/// that segment against the rest of the run).
fn check_stationary_tail(
    maxima: &[Peak],
    excesses: &[f64],
    whole: &Gpd,
    segments: &[Segment],
) -> Result<(), Refusal> {
    let excesses_where = |keep: &dyn Fn(&Peak) -> bool| -> Vec<f64> {
        maxima
            .iter()
            .zip(excesses)
            .filter(|(p, _)| keep(p))
            .map(|(_, &e)| e)
            .collect()
    };
    let mut separate = 0.0;
    let mut fitted: Vec<(&Segment, Gpd)> = Vec::new();
    let mut rest: Vec<f64> = Vec::new();
    for s in segments {
        let own = excesses_where(&|p| in_segment(p, s));
        match gpd::fit(&own).filter(|_| own.len() >= MIN_PER_SEGMENT) {
            Some(fit) => {
                separate += fit.log_likelihood;
                fitted.push((s, fit));
            }
            None => rest.extend(own),
        }
    }
    let mut groups = fitted.len();
    if !rest.is_empty() {
        match gpd::fit(&rest) {
            Some(fit) => {
                separate += fit.log_likelihood;
                groups += 1;
            }
            None => return Ok(()),
        }
    }
    if groups < 2 {
        return Ok(());
    }
    let statistic = 2.0 * (separate - whole.log_likelihood);
    let p = chi_square_survival(statistic, 2.0 * (groups - 1) as f64);
    if p >= STATIONARITY_LEVEL {
        return Ok(());
    }
    let against_rest = |(s, fit): &(&Segment, Gpd)| {
        let others = gpd::fit(&excesses_where(&|p| !in_segment(p, s)));
        let ratio = others.map_or(f64::NEG_INFINITY, |o| {
            fit.log_likelihood + o.log_likelihood - whole.log_likelihood
        });
        (ratio, others)
    };
    let (segment, fit, others) = fitted
        .iter()
        .map(|f| (f, against_rest(f)))
        .max_by(|a, b| a.1.0.total_cmp(&b.1.0))
        .map(|((s, fit), (_, others))| (*s, *fit, others))
        .expect("two groups, so at least one fitted segment");
    let others = others.unwrap_or(*whole);
    Err(Refusal {
        check: Check::StationaryTail,
        reason: format!(
            "not extrapolated: the tail changes over the run ({}: shape {:.2}, scale {}; \
             rest of the run: shape {:.2}, scale {}; p = {p:.1e})",
            segment.label,
            fit.shape,
            format_ns(fit.scale as u64),
            others.shape,
            format_ns(others.scale as u64)
        ),
    })
}

#[cfg(test)]
mod tests;

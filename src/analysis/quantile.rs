//! Quantiles of histograms and their uncertainty: nearest-rank quantiles that agree with the
//! HDR histogram's own `value_at_quantile`, a block bootstrap over interval histograms, and
//! distribution-free order-statistic intervals from the binomial distribution. The methods and
//! their limits are documented in docs/compare.md.
//!
//! One concern (issue 41's near-limit files): a quantile and how sure it is. The three parts
//! (nearest rank, the block bootstrap's [`Blocks`], the order-statistic bounds) answer one
//! question for `compare` and `tune` and share the sparse histogram; about 170 lines are tests.

use crate::random::SplitMix64;
use hdrhistogram::Histogram;

/// A histogram as `(value, count)` pairs in ascending value order. The value of each pair is the
/// highest value of its HDR bucket: what `value_at_quantile` and run.json's percentiles report.
pub type Sparse = Vec<(u64, u64)>;

pub fn sparse(h: &Histogram<u64>) -> Sparse {
    h.iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect()
}

/// Adds `other` into `into` (both ascending), keeping the order.
pub fn merge_into(into: &mut Sparse, other: &[(u64, u64)]) {
    if other.is_empty() {
        return;
    }
    let mut merged = Vec::new();
    crate::format::hlog_scan::merge_counts(into, other, &mut merged);
    *into = merged;
}

pub fn total(s: &[(u64, u64)]) -> u64 {
    s.iter().map(|&(_, c)| c).sum()
}

/// The nearest rank (1-based) of quantile `q` among `n` samples: ceil(q·n), at least 1, as the
/// HDR histogram computes it.
pub(crate) fn nearest_rank(q: f64, n: u64) -> u64 {
    ((q * n as f64).ceil() as u64).clamp(1, n.max(1))
}

/// The value of the sample of rank `rank` (1-based); None when there are fewer samples.
pub(crate) fn value_at_rank(s: &[(u64, u64)], rank: u64) -> Option<u64> {
    let mut seen = 0;
    for &(v, c) in s {
        seen += c;
        if seen >= rank {
            return Some(v);
        }
    }
    None
}

/// The q-quantile by nearest rank; None for an empty histogram.
pub fn quantile(s: &[(u64, u64)], q: f64) -> Option<u64> {
    let n = total(s);
    (n > 0).then(|| value_at_rank(s, nearest_rank(q, n)).expect("rank within n"))
}

/// Values per group of the value table: a replicate first sums each drawn block's total per
/// group, then only the one group holding each wanted rank value by value.
const GROUP: usize = 64;

/// The resampling units of a bootstrap: consecutive time slots (interval histograms) grouped
/// into at most `max_blocks` blocks of equal length, each a sparse histogram over one shared,
/// dense value table so that a resample is a sum of small arrays. The table is cut into groups
/// of [`GROUP`] values, and each block keeps its total per group: a long run's blocks hold
/// thousands of distinct values each, and summing them whole for each of 1000 replicates was
/// most of `compare`'s time; the groups give the same quantiles for a fraction of the sums.
pub struct Blocks {
    values: Vec<u64>,
    /// Per block, its (value index, count) pairs, ascending.
    blocks: Vec<Vec<(u32, u64)>>,
    /// Per block, for each group it has counts in (ascending): the group, its total count,
    /// and where its pairs start in the block's pairs.
    groups: Vec<Vec<(u32, u64, u32)>>,
    /// Time slots that held at least one sample.
    #[cfg_attr(
        not(test),
        expect(
            dead_code,
            reason = "dead since pub(crate) (issue 41 sweep): read by its unit tests only"
        )
    )]
    pub(crate) nonempty_slots: usize,
    /// Samples in all slots.
    pub samples: u64,
}

impl Blocks {
    /// `slots` are the interval histograms of one scope in time order.
    pub fn new(slots: &[Sparse], max_blocks: usize) -> Blocks {
        let mut values: Vec<u64> = slots.iter().flatten().map(|&(v, _)| v).collect();
        values.sort_unstable();
        values.dedup();
        let index = |v: u64| values.binary_search(&v).expect("value in table") as u32;
        let len = slots.len().div_ceil(max_blocks.max(1)).max(1);
        let blocks: Vec<Vec<(u32, u64)>> = slots
            .chunks(len)
            .map(|chunk| {
                let mut merged: Sparse = Vec::new();
                chunk.iter().for_each(|s| merge_into(&mut merged, s));
                merged.into_iter().map(|(v, c)| (index(v), c)).collect()
            })
            .collect();
        let groups = blocks.iter().map(|b| group_totals(b)).collect();
        Blocks {
            nonempty_slots: slots.iter().filter(|s| !s.is_empty()).count(),
            samples: slots.iter().map(|s| total(s)).sum(),
            values,
            blocks,
            groups,
        }
    }

    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// One bootstrap replicate: as many blocks as there are, drawn with replacement; the
    /// quantiles `qs` of the resample. None when the resample holds no sample. `drawn` and
    /// `group_counts` (one per group of the value table) are reused between replicates.
    fn replicate(
        &self,
        rng: &mut SplitMix64,
        qs: &[f64],
        drawn: &mut Vec<usize>,
        group_counts: &mut [u64],
    ) -> Option<Vec<u64>> {
        drawn.clear();
        drawn.extend((0..self.blocks.len()).map(|_| rng.below(self.blocks.len())));
        group_counts.iter_mut().for_each(|c| *c = 0);
        let mut n = 0;
        for &b in drawn.iter() {
            for &(g, c, _) in &self.groups[b] {
                group_counts[g as usize] += c;
                n += c;
            }
        }
        if n == 0 {
            return None;
        }
        // qs ascend in every caller, so one pass over the groups serves them all.
        let mut out = Vec::with_capacity(qs.len());
        let (mut seen, mut g) = (0, 0);
        for &q in qs {
            let rank = nearest_rank(q, n);
            while seen + group_counts[g] < rank {
                seen += group_counts[g];
                g += 1;
            }
            out.push(self.values[self.value_in_group(drawn, g, rank - seen)]);
        }
        Some(out)
    }

    /// The index of the value of rank `rank` (1-based) within group `g` of the drawn blocks.
    fn value_in_group(&self, drawn: &[usize], g: usize, rank: u64) -> usize {
        let mut fine = [0u64; GROUP];
        for &b in drawn {
            let groups = &self.groups[b];
            let Ok(k) = groups.binary_search_by_key(&(g as u32), |&(group, _, _)| group) else {
                continue;
            };
            let from = groups[k].2 as usize;
            let to = groups
                .get(k + 1)
                .map_or(self.blocks[b].len(), |e| e.2 as usize);
            for &(i, c) in &self.blocks[b][from..to] {
                fine[i as usize - g * GROUP] += c;
            }
        }
        let mut seen = 0;
        let mut j = 0;
        while seen + fine[j] < rank {
            seen += fine[j];
            j += 1;
        }
        g * GROUP + j
    }
}

/// A block's total per group of [`GROUP`] values: (group, total, first pair), ascending.
fn group_totals(pairs: &[(u32, u64)]) -> Vec<(u32, u64, u32)> {
    let mut out: Vec<(u32, u64, u32)> = Vec::new();
    for (at, &(i, c)) in pairs.iter().enumerate() {
        let g = i / GROUP as u32;
        match out.last_mut() {
            Some(last) if last.0 == g => last.1 += c,
            _ => out.push((g, c, at as u32)),
        }
    }
    out
}

/// A two-sided interval; a None side is unbounded (the data cannot bound it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    pub low: Option<f64>,
    pub high: Option<f64>,
}

/// Percentile-bootstrap intervals for `quantile_b − quantile_a` at each of `qs` (ascending):
/// `a` and `b` are resampled independently, `replicates` times, from `seed`.
pub fn bootstrap_difference(
    a: &Blocks,
    b: &Blocks,
    qs: &[f64],
    replicates: usize,
    confidence: f64,
    seed: u64,
) -> Vec<Bounds> {
    let mut rng = SplitMix64::new(seed);
    let mut groups_a = vec![0; a.values.len().div_ceil(GROUP)];
    let mut groups_b = vec![0; b.values.len().div_ceil(GROUP)];
    let (mut drawn_a, mut drawn_b) = (Vec::new(), Vec::new());
    let mut diffs: Vec<Vec<f64>> = vec![Vec::with_capacity(replicates); qs.len()];
    for _ in 0..replicates {
        let ra = a.replicate(&mut rng, qs, &mut drawn_a, &mut groups_a);
        let rb = b.replicate(&mut rng, qs, &mut drawn_b, &mut groups_b);
        if let (Some(ra), Some(rb)) = (ra, rb) {
            for (k, d) in diffs.iter_mut().enumerate() {
                d.push(rb[k] as f64 - ra[k] as f64);
            }
        }
    }
    let tail = (1.0 - confidence) / 2.0;
    diffs
        .into_iter()
        .map(|mut d| {
            if d.is_empty() {
                return Bounds {
                    low: None,
                    high: None,
                };
            }
            d.sort_by(f64::total_cmp);
            let at = |p: f64| d[((p * (d.len() - 1) as f64).round() as usize).min(d.len() - 1)];
            Bounds {
                low: Some(at(tail)),
                high: Some(at(1.0 - tail)),
            }
        })
        .collect()
}

/// The largest variance `n q (1 - q)` of the binomial count for which the ranks are summed
/// exactly. The exact sum walks about 20 standard deviations of ranks and keeps them (a few
/// vectors of f64): at this bound 2 x 10^5 ranks, a few MB. Above it (more than about 10^8
/// samples at a median, 10^12 at p99.99) the ranks come from the normal approximation with its
/// skewness term (`normal_ranks`), in constant memory and time: an imported histogram may
/// claim up to 9.2 x 10^18 samples, whose exact sum would need tens of GB (issue 39, C1).
const EXACT_VARIANCE_MAX: f64 = 1e8;

/// Ranks (1-based) of the order statistics that bound the q-quantile of a continuous
/// distribution with probability at least `confidence`, from the exact binomial distribution
/// of the number of samples below the quantile: `P(X(l) <= ξq <= X(u)) >= confidence`.
/// A side is None when it would need a rank outside 1..=n (below the first sample: the bound
/// is the smallest possible value; above the last: unbounded). Past `EXACT_VARIANCE_MAX` the
/// ranks are the normal approximation's, within one rank of the exact ones (tested), which
/// at a standard deviation of 10^4 ranks or more moves no bound by more than one sample.
pub(crate) fn order_statistic_ranks(n: u64, q: f64, confidence: f64) -> (Option<u64>, Option<u64>) {
    if n == 0 {
        return (None, None);
    }
    if n as f64 * q * (1.0 - q) > EXACT_VARIANCE_MAX {
        return normal_ranks(n, q, confidence);
    }
    exact_ranks(n, q, confidence)
}

/// The ranks from the normal approximation of Binomial(n, q) with the continuity correction
/// and the Cornish-Fisher skewness term: the count's p-quantile is
/// `nq + σ (z + (z² - 1) γ / 6)`, σ² = nq(1-q), γ = (1 - 2q) / σ. The terms left out are of
/// order 1/σ ranks, under 10^-4 of a rank where this is used.
fn normal_ranks(n: u64, q: f64, confidence: f64) -> (Option<u64>, Option<u64>) {
    let tail = (1.0 - confidence) / 2.0;
    let (mean, sigma) = (n as f64 * q, (n as f64 * q * (1.0 - q)).sqrt());
    let gamma = (1.0 - 2.0 * q) / sigma;
    let count_quantile = |p: f64| {
        let z = crate::analysis::tails::special::normal_quantile(p);
        mean + sigma * (z + (z * z - 1.0) * gamma / 6.0)
    };
    // The largest l with P(K <= l - 1) <= tail, and the smallest u with P(K <= u - 1) >=
    // 1 - tail: the counts at those probabilities, continuity-corrected by half a count.
    let lower = (count_quantile(tail) + 0.5).floor();
    let upper = (count_quantile(1.0 - tail) + 0.5).ceil();
    let in_ranks = |r: f64| (r >= 1.0 && r <= n as f64).then_some(r as u64);
    (in_ranks(lower), in_ranks(upper))
}

/// The ranks from the exact binomial sum (see `order_statistic_ranks`).
fn exact_ranks(n: u64, q: f64, confidence: f64) -> (Option<u64>, Option<u64>) {
    let tail = (1.0 - confidence) / 2.0;
    // K ~ Binomial(n, q) counts samples at or below ξq. X(l) <= ξq iff K >= l; X(u) >= ξq
    // iff K < u. Choose the largest l with P(K < l) <= tail and the smallest u with
    // P(K >= u) <= tail. The pmf is built outward from the mode in log space, far enough
    // that the terms left out are below 1e-20 of the mass.
    let mode = (((n + 1) as f64 * q).floor() as u64).min(n);
    let ratio = (q / (1.0 - q)).ln();
    let step_up = |k: u64| ((n - k) as f64 / (k + 1) as f64).ln() + ratio; // ln p(k+1)/p(k)
    let mut up = vec![0.0f64]; // ln p(mode + i) - ln p(mode)
    let mut k = mode;
    while k < n && *up.last().unwrap() > -46.0 {
        let next = up.last().unwrap() + step_up(k);
        up.push(next);
        k += 1;
    }
    let mut down = Vec::new(); // ln p(mode - 1 - i) - ln p(mode)
    let mut k = mode;
    let mut last = 0.0f64;
    while k > 0 && last > -46.0 {
        last -= step_up(k - 1);
        down.push(last);
        k -= 1;
    }
    let first = mode - down.len() as u64;
    let logs: Vec<f64> = down.iter().rev().chain(up.iter()).copied().collect();
    let weights: Vec<f64> = logs.iter().map(|l| l.exp()).collect();
    let sum: f64 = weights.iter().sum();
    // cdf_below[i] = P(K < first + i)
    let mut below = 0.0;
    let mut lower = None;
    for (i, w) in weights.iter().enumerate() {
        let k = first + i as u64;
        // P(K < k) = below
        if below <= tail && k >= 1 {
            lower = Some(k);
        }
        below += w / sum;
    }
    let mut above = 0.0; // P(K >= k) accumulated from the top
    let mut upper = None;
    for (i, w) in weights.iter().enumerate().rev() {
        let k = first + i as u64;
        above += w / sum;
        // P(K >= k + 1) <= tail with the mass from k + 1 up: u = k + 1
        if above - w / sum <= tail {
            upper = Some(k + 1);
        } else {
            break;
        }
    }
    // Ranks above the computed window's end: P(K >= k) is already negligible there.
    let upper = upper.filter(|&u| u <= n);
    (lower.filter(|&l| l <= n), upper)
}

/// The interval of one quantile from one histogram's order statistics, as values.
pub(crate) fn order_statistic_bounds(s: &[(u64, u64)], q: f64, confidence: f64) -> Bounds {
    let n = total(s);
    let (l, u) = order_statistic_ranks(n, q, confidence);
    Bounds {
        // Latencies in the histograms are never below 0.
        low: Some(l.and_then(|l| value_at_rank(s, l)).unwrap_or(0) as f64),
        high: u.and_then(|u| value_at_rank(s, u)).map(|v| v as f64),
    }
}

/// An interval for `quantile_b − quantile_a` from two independent order-statistic intervals at
/// confidence (1 + c)/2 each, so that both hold together with probability at least c.
pub fn order_statistic_difference(a: &[(u64, u64)], b: &[(u64, u64)], q: f64, c: f64) -> Bounds {
    let each = (1.0 + c) / 2.0;
    let ia = order_statistic_bounds(a, q, each);
    let ib = order_statistic_bounds(b, q, each);
    Bounds {
        low: match (ib.low, ia.high) {
            (Some(lb), Some(ha)) => Some(lb - ha),
            _ => None,
        },
        high: match (ib.high, ia.low) {
            (Some(hb), Some(la)) => Some(hb - la),
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::stats::new_histogram;

    /// The grouped replicate finds exactly the values a full sum of the drawn blocks finds, for
    /// blocks of thousands of distinct values (a long run's) and of a few.
    #[test]
    fn grouped_replicates_equal_the_full_sum() {
        let mut rng = SplitMix64::new(11);
        for spread in [5u64, 40_000] {
            let slots: Vec<Sparse> = (0..300)
                .map(|_| {
                    let mut h = new_histogram();
                    for _ in 0..(rng.below(2000)) {
                        let v = 1_000 + (rng.uniform() * spread as f64) as u64;
                        h.record(if rng.below(500) == 0 { v * 300 } else { v })
                            .unwrap();
                    }
                    sparse(&h)
                })
                .collect();
            let blocks = Blocks::new(&slots, 120);
            let qs = [0.5, 0.99, 0.999, 0.9999];
            let (mut drawn, mut groups) =
                (Vec::new(), vec![0; blocks.values.len().div_ceil(GROUP)]);
            let mut draws = SplitMix64::new(5);
            for _ in 0..50 {
                let mut again = draws.clone();
                let got = blocks.replicate(&mut draws, &qs, &mut drawn, &mut groups);
                let mut counts = vec![0u64; blocks.values.len()];
                for _ in 0..blocks.len() {
                    for &(i, c) in &blocks.blocks[again.below(blocks.len())] {
                        counts[i as usize] += c;
                    }
                }
                let n: u64 = counts.iter().sum();
                let want: Vec<u64> = qs
                    .iter()
                    .map(|&q| {
                        let rank = nearest_rank(q, n);
                        let mut seen = 0;
                        let i = counts
                            .iter()
                            .position(|&c| {
                                seen += c;
                                seen >= rank
                            })
                            .unwrap();
                        blocks.values[i]
                    })
                    .collect();
                assert_eq!(got, Some(want), "spread {spread}");
            }
        }
    }

    fn hist(values: impl IntoIterator<Item = u64>) -> Histogram<u64> {
        let mut h = new_histogram();
        values.into_iter().for_each(|v| h.record(v).unwrap());
        h
    }

    #[test]
    fn quantiles_agree_with_the_hdr_histogram() {
        let mut rng = SplitMix64::new(7);
        let h = hist((0..50_000).map(|_| 1_000 + rng.next_u64() % 3_000_000));
        let s = sparse(&h);
        for q in [0.001, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0] {
            assert_eq!(quantile(&s, q), Some(h.value_at_quantile(q)), "{q}");
        }
        assert_eq!(total(&s), 50_000);
    }

    #[test]
    fn merging_keeps_order_and_counts() {
        let mut a = vec![(1, 2), (5, 1)];
        merge_into(&mut a, &[(0, 1), (5, 3), (9, 1)]);
        assert_eq!(a, vec![(0, 1), (1, 2), (5, 4), (9, 1)]);
    }

    /// The normal approximation used past `EXACT_VARIANCE_MAX` gives the exact sum's ranks
    /// within one, checked where both can be computed (variances of 10^5 to 10^8), and a
    /// histogram's largest possible count costs no memory (C1: 10^15 samples aborted compare).
    #[test]
    fn large_counts_get_the_exact_ranks_within_one_in_constant_memory() {
        for &(n, q) in &[
            (400_000u64, 0.5),
            (40_000_000, 0.5),
            (400_000_000, 0.5),
            (10_000_000, 0.99),
            (1_000_000_000, 0.99),
            (1_000_000_000, 0.999),
            (100_000_000_000, 0.9999),
            (1_000_000_000_000, 0.99999),
        ] {
            assert!(n as f64 * q * (1.0 - q) <= EXACT_VARIANCE_MAX, "{n} {q}");
            for confidence in [0.95, 0.99] {
                let (el, eu) = exact_ranks(n, q, confidence);
                let (nl, nu) = normal_ranks(n, q, confidence);
                let off = |a: Option<u64>, b: Option<u64>| a.unwrap().abs_diff(b.unwrap());
                assert!(off(el, nl) <= 1, "{n} {q} {confidence}: {el:?} {nl:?}");
                assert!(off(eu, nu) <= 1, "{n} {q} {confidence}: {eu:?} {nu:?}");
            }
        }
        for n in [1_000_000_000_000_000u64, i64::MAX as u64, u64::MAX] {
            let (l, u) = order_statistic_ranks(n, 0.5, 0.95);
            let (l, u) = (l.unwrap(), u.unwrap());
            let mid = n / 2;
            assert!(l < mid && mid < u, "{n}: {l} {u}");
        }
    }

    #[test]
    fn order_statistic_ranks_match_the_binomial_textbook_case() {
        // The median of 100 samples: the classic 95% interval is X(40) .. X(61).
        assert_eq!(order_statistic_ranks(100, 0.5, 0.95), (Some(40), Some(61)));
        // Too few samples for a p99.99 upper bound.
        assert_eq!(order_statistic_ranks(5_000, 0.9999, 0.95).1, None);
        // Ranks bracket the nearest rank.
        let (l, u) = order_statistic_ranks(1_000_000, 0.999, 0.95);
        assert!(l.unwrap() < 999_000 && u.unwrap() > 999_000);
    }

    /// Coverage: with many independent data sets from a known distribution, the order-statistic
    /// interval contains the true quantile at least 95% of the time.
    #[test]
    fn order_statistic_interval_covers_the_true_quantile() {
        let mut rng = SplitMix64::new(11);
        // Uniform on 0..1_000_000 ns: the true p90 is 900_000 (within bucket resolution).
        let mut covered = 0;
        for _ in 0..200 {
            let h = hist((0..400).map(|_| rng.next_u64() % 1_000_000));
            let b = order_statistic_bounds(&sparse(&h), 0.9, 0.95);
            if b.low.unwrap() <= 900_000.0 && b.high.unwrap() >= 899_000.0 {
                covered += 1;
            }
        }
        assert!(covered >= 186, "covered {covered} of 200");
    }

    #[test]
    fn bootstrap_is_reproducible_and_brackets_a_known_shift() {
        let mut rng = SplitMix64::new(3);
        // 60 one-second intervals of 1000 samples; B is A shifted by +20 us.
        let slots = |shift: u64, rng: &mut SplitMix64| -> Vec<Sparse> {
            (0..60)
                .map(|_| {
                    sparse(&hist(
                        (0..1000).map(|_| 10_000 + shift + rng.next_u64() % 40_000),
                    ))
                })
                .collect()
        };
        let a = Blocks::new(&slots(0, &mut rng), 400);
        let b = Blocks::new(&slots(20_000, &mut rng), 400);
        assert_eq!(a.len(), 60);
        let qs = [0.5, 0.99];
        let one = bootstrap_difference(&a, &b, &qs, 500, 0.95, 42);
        assert_eq!(one, bootstrap_difference(&a, &b, &qs, 500, 0.95, 42));
        for bounds in one {
            let (lo, hi) = (bounds.low.unwrap(), bounds.high.unwrap());
            assert!(lo < 20_000.0 && hi > 20_000.0, "{lo}..{hi}");
            assert!(hi - lo < 2_000.0, "{lo}..{hi}: too wide for 60000 samples");
        }
    }

    #[test]
    fn blocks_group_long_runs() {
        let slots: Vec<Sparse> = (0..1000).map(|i| vec![(i, 1)]).collect();
        let b = Blocks::new(&slots, 400);
        assert_eq!(b.len(), 334); // blocks of 3 slots
        assert_eq!(b.samples, 1000);
        assert_eq!(b.nonempty_slots, 1000);
    }

    /// A day of 24 hourly histograms at 1 us intervals: 8.64e10 samples, beyond 32 bits, with
    /// per-bucket counts beyond 32 bits too. Totals and ranks stay exact on 32-bit boards (run
    /// under qemu-arm by ci/cross.sh's unit-test step).
    #[test]
    fn a_day_of_interval_histograms_totals_and_ranks_exactly_on_every_target() {
        const HOUR: u64 = 3_600_000_000; // samples in an hour at 1 us
        let mut day = Sparse::new();
        for hour in 0..24u64 {
            // All but 10 samples of each hour at 2000 ns, 10 at a value of their own hour.
            merge_into(&mut day, &[(2_000, HOUR - 10), (1_000_000 + hour, 10)]);
        }
        assert_eq!(total(&day), 24 * HOUR);
        assert_eq!(day[0], (2_000, 24 * (HOUR - 10)));
        assert_eq!(day.len(), 25);
        // The last 240 samples are the hourly outliers, in order of their hour.
        assert_eq!(value_at_rank(&day, 24 * (HOUR - 10)), Some(2_000));
        assert_eq!(value_at_rank(&day, 24 * (HOUR - 10) + 1), Some(1_000_000));
        assert_eq!(value_at_rank(&day, 24 * HOUR), Some(1_000_023));
        assert_eq!(value_at_rank(&day, 24 * HOUR + 1), None);
        assert_eq!(quantile(&day, 1.0), Some(1_000_023));
        assert_eq!(quantile(&day, 0.5), Some(2_000));
    }
}

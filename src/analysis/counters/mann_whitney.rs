//! The Mann-Whitney U test (Wilcoxon rank-sum), two-sided: whether the values of one group of
//! intervals (those with a late wakeup) tend to lie above or below those of the others more
//! than chance would have them. No assumption about the counters' distributions, and ties
//! (counters are mostly small integers, often 0) handled by mid-ranks.
//!
//! The p-value is exact where that is cheap: the distribution of the smaller group's rank sum
//! over every way of choosing its members from the pooled mid-ranks (ties included), counted by
//! dynamic programming, costs about 2·m²·N² steps for m of N intervals, done up to
//! [`EXACT_STEPS`]. Beyond, the normal approximation with the tie correction of the variance and
//! a continuity correction of 1/2: within a few percent of the exact p where p is above about
//! 0.01 for groups of 20 and more, but off by tens of percent in the far tail (p ≈ 1e-3: 0.00095
//! against 0.00072 exact for groups of 25 and 40, a unit test). It is used only where counting
//! would cost more, that is for large groups, where it is closer.

/// The most steps the exact distribution may take (about a tenth of a second).
pub(crate) const EXACT_STEPS: f64 = 2e8;

/// How the p-value was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    Exact,
    Normal,
}

impl Method {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Method::Exact => "exact",
            Method::Normal => "normal approximation",
        }
    }
}

/// The test of `a` against `b`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Outcome {
    /// U of `a`: the number of pairs (x in a, y in b) with x > y, ties counting 1/2.
    pub u: f64,
    /// Two-sided: the probability, with no difference between the groups, of a U at least as
    /// far from its mean n_a·n_b/2 as this one.
    pub p: f64,
    pub method: Method,
}

/// Mid-ranks (1-based) of `values` pooled, in their order, doubled so they are integers.
fn doubled_mid_ranks(values: &[f64]) -> Vec<u64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&i, &j| values[i].total_cmp(&values[j]));
    let mut ranks = vec![0u64; values.len()];
    let mut k = 0;
    while k < order.len() {
        let mut end = k;
        while end + 1 < order.len() && values[order[end + 1]] == values[order[k]] {
            end += 1;
        }
        // Ranks k+1..=end+1 share their mean, (k+1 + end+1)/2; doubled: k + end + 2.
        for &i in &order[k..=end] {
            ranks[i] = (k + end + 2) as u64;
        }
        k = end + 1;
    }
    ranks
}

/// The two-sided Mann-Whitney test of `a` against `b`; None when either group is empty.
pub(crate) fn test(a: &[f64], b: &[f64]) -> Option<Outcome> {
    let (n_a, n_b) = (a.len(), b.len());
    if n_a == 0 || n_b == 0 {
        return None;
    }
    let pooled: Vec<f64> = a.iter().chain(b).copied().collect();
    let ranks = doubled_mid_ranks(&pooled);
    let n = pooled.len();
    let sum_a: u64 = ranks[..n_a].iter().sum();
    // U_a = R_a - n_a(n_a+1)/2, R_a = sum_a / 2.
    let u = sum_a as f64 / 2.0 - (n_a * (n_a + 1)) as f64 / 2.0;
    // The smaller group's rank sum decides; it is the same test.
    let m = n_a.min(n_b);
    let steps = 2.0 * (m as f64).powi(2) * (n as f64).powi(2);
    if steps <= EXACT_STEPS {
        let (small, sum_small) = if n_a <= n_b {
            (n_a, sum_a)
        } else {
            (n_b, ranks[n_a..].iter().sum())
        };
        return Some(Outcome {
            u,
            p: exact_p(&ranks, small, sum_small),
            method: Method::Exact,
        });
    }
    Some(Outcome {
        u,
        p: normal_p(&ranks, n_a, n_b, u),
        method: Method::Normal,
    })
}

/// P(|S − E| ≥ |s − E|) for S the doubled rank sum of `m` of the doubled `ranks` drawn without
/// replacement, E = m(N+1) its mean: counted over every subset by rank sum.
fn exact_p(ranks: &[u64], m: usize, s: u64) -> f64 {
    let max_sum: usize = {
        let mut r = ranks.to_vec();
        r.sort_unstable_by(|a, b| b.cmp(a));
        r[..m].iter().sum::<u64>() as usize
    };
    // ways[k][t]: subsets of k of the ranks seen so far with doubled sum t (f64: the counts
    // reach C(N, m), far below f64's range for the sizes done exactly).
    let width = max_sum + 1;
    let mut ways = vec![0f64; (m + 1) * width];
    ways[0] = 1.0;
    for &r in ranks {
        let r = r as usize;
        for k in (1..=m).rev() {
            let (lower, upper) = ways.split_at_mut(k * width);
            let from = &lower[(k - 1) * width..];
            let to = &mut upper[..width];
            for t in (r..width).rev() {
                let w = from[t - r];
                if w != 0.0 {
                    to[t] += w;
                }
            }
        }
    }
    let row = &ways[m * width..];
    let total: f64 = row.iter().sum();
    let mean = (m * (ranks.len() + 1)) as i64;
    let observed = (s as i64 - mean).abs();
    let tail: f64 = row
        .iter()
        .enumerate()
        .filter(|&(t, _)| (t as i64 - mean).abs() >= observed)
        .map(|(_, w)| w)
        .sum();
    (tail / total).min(1.0)
}

/// The normal approximation: z from U with the tie-corrected variance and a continuity
/// correction of 1/2.
fn normal_p(ranks: &[u64], n_a: usize, n_b: usize, u: f64) -> f64 {
    let n = (n_a + n_b) as f64;
    // Σ(t³ − t) over groups of ties.
    let mut sorted = ranks.to_vec();
    sorted.sort_unstable();
    let mut ties = 0.0;
    let mut k = 0;
    while k < sorted.len() {
        let mut end = k;
        while end + 1 < sorted.len() && sorted[end + 1] == sorted[k] {
            end += 1;
        }
        let t = (end - k + 1) as f64;
        ties += t * t * t - t;
        k = end + 1;
    }
    let (a, b) = (n_a as f64, n_b as f64);
    let variance = a * b / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)));
    if variance <= 0.0 {
        // Every value equal: nothing differs.
        return 1.0;
    }
    let z = ((u - a * b / 2.0).abs() - 0.5).max(0.0) / variance.sqrt();
    (2.0 * crate::analysis::tails::special::normal_cdf(-z)).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exact p by brute force: every subset of the pooled values of a's size, its U
    /// counted pair by pair (no ranks), as far from the mean as the observed one or farther.
    fn brute_force(a: &[f64], b: &[f64]) -> f64 {
        let pooled: Vec<f64> = a.iter().chain(b).copied().collect();
        let n = pooled.len();
        let u_of = |chosen: &[usize]| {
            let mut u = 0.0;
            for &i in chosen {
                for j in (0..n).filter(|j| !chosen.contains(j)) {
                    if pooled[i] > pooled[j] {
                        u += 1.0;
                    } else if pooled[i] == pooled[j] {
                        u += 0.5;
                    }
                }
            }
            u
        };
        let observed: Vec<usize> = (0..a.len()).collect();
        let mean = (a.len() * b.len()) as f64 / 2.0;
        let d = (u_of(&observed) - mean).abs();
        let (mut hits, mut all) = (0u64, 0u64);
        for mask in 0u32..(1 << n) {
            if mask.count_ones() as usize != a.len() {
                continue;
            }
            let chosen: Vec<usize> = (0..n).filter(|i| mask & (1 << i) != 0).collect();
            all += 1;
            if (u_of(&chosen) - mean).abs() >= d - 1e-9 {
                hits += 1;
            }
        }
        hits as f64 / all as f64
    }

    #[test]
    fn exact_p_matches_brute_force_with_and_without_ties() {
        let cases: [(&[f64], &[f64]); 5] = [
            (&[5.0, 7.0, 9.0], &[1.0, 2.0, 3.0, 4.0, 6.0, 8.0]),
            (&[3.0, 3.0, 4.0], &[0.0, 0.0, 0.0, 1.0, 3.0, 0.0, 2.0]),
            (&[0.0, 0.0], &[0.0, 0.0, 0.0, 1.0, 0.0, 0.0]),
            (
                &[1.0, 2.0, 2.0, 2.0, 9.0],
                &[2.0, 2.0, 1.0, 0.0, 5.0, 2.0, 2.0],
            ),
            (
                &[10.0, 11.0, 12.0, 13.0, 14.0, 15.0],
                &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
            ),
        ];
        for (a, b) in cases {
            let got = test(a, b).unwrap();
            assert_eq!(got.method, Method::Exact);
            let want = brute_force(a, b);
            assert!(
                (got.p - want).abs() < 1e-12,
                "{a:?} {b:?}: {} vs {want}",
                got.p
            );
            // The same test whichever group is named first.
            assert!((test(b, a).unwrap().p - want).abs() < 1e-12);
        }
        // Complete separation of 6 and 6: 2 / C(12, 6) = 2/924.
        let p = test(cases[4].0, cases[4].1).unwrap().p;
        assert!((p - 2.0 / 924.0).abs() < 1e-15);
    }

    #[test]
    fn u_counts_pairs() {
        let got = test(&[5.0, 7.0, 9.0], &[1.0, 2.0, 3.0, 4.0, 6.0, 8.0]).unwrap();
        // 5 beats 4, 7 beats 5, 9 beats 6: U = 15.
        assert_eq!(got.u, 15.0);
        let tied = test(&[1.0], &[1.0, 0.0]).unwrap();
        assert_eq!(tied.u, 1.5);
    }

    #[test]
    fn normal_approximation_agrees_with_the_exact_p_on_large_groups() {
        // Groups large enough for the approximation, small enough to count exactly: the same
        // data through both ways.
        let b: Vec<f64> = (0..40).map(|i| ((i * 5) % 9) as f64).collect();
        let through_both = |a: &[f64]| {
            let exact = test(a, &b).unwrap();
            assert_eq!(exact.method, Method::Exact);
            let pooled: Vec<f64> = a.iter().chain(&b).copied().collect();
            let ranks = doubled_mid_ranks(&pooled);
            (normal_p(&ranks, a.len(), b.len(), exact.u), exact.p)
        };
        // Moderate p: within a few percent.
        let a: Vec<f64> = (0..25).map(|i| ((i * 7) % 11) as f64).collect();
        let (normal, exact) = through_both(&a);
        assert!(exact > 0.01 && exact < 0.9, "{exact}");
        assert!(
            (normal / exact - 1.0).abs() < 0.05,
            "normal {normal} exact {exact}"
        );
        // The far tail: tens of percent (the module's documentation quotes these).
        let a: Vec<f64> = (0..25).map(|i| ((i * 7) % 11) as f64 + 2.0).collect();
        let (normal, exact) = through_both(&a);
        assert!((exact - 0.000723).abs() < 1e-6, "{exact}");
        assert!((normal - 0.000953).abs() < 1e-6, "{normal}");
    }

    #[test]
    fn large_runs_use_the_approximation_and_identical_groups_give_one() {
        let a = vec![1.0; 200];
        let b = vec![1.0; 3000];
        let got = test(&a, &b).unwrap();
        assert_eq!(got.method, Method::Normal);
        assert_eq!(got.p, 1.0);
        assert!(test(&[], &[1.0]).is_none());
    }
}

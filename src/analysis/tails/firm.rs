//! (m,k)-firm deadlines (FirmTimers, Hamdaoui & Ramanathan): "never more than m deadline misses
//! in any k consecutive periods". [`FirmWindow`] keeps the number of misses in the last k
//! periods and the worst count any window of k consecutive periods has had. The recorder feeds
//! it one period at a time, so it is O(1) per period and allocates only when made: one bit per
//! period of the window. One window per k serves every m: `firm(m,k)` holds iff the worst
//! window has at most m misses.

/// The misses in a sliding window of `k` consecutive periods, and the worst window so far.
#[derive(Debug, Clone)]
pub(crate) struct FirmWindow {
    k: u64,
    /// Bit i says whether the period at position i of the ring (period number mod k) missed.
    ring: Vec<u64>,
    position: u64,
    periods: u64,
    misses_in_window: u64,
    worst: WorstWindow,
}

/// The window of k consecutive periods with the most misses (the first such, if several).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct WorstWindow {
    pub(crate) misses: u64,
    /// Number (0-based) of the window's first period.
    pub(crate) first_period: u64,
    /// The window's length: k, or all periods seen when the run had fewer than k.
    pub periods: u64,
}

impl FirmWindow {
    /// A window over `k` periods (k ≥ 1).
    pub(crate) fn new(k: u64) -> FirmWindow {
        assert!(k >= 1, "an (m,k)-firm window needs k >= 1");
        FirmWindow {
            k,
            ring: vec![0; k.div_ceil(64) as usize],
            position: 0,
            periods: 0,
            misses_in_window: 0,
            worst: WorstWindow::default(),
        }
    }

    /// Accounts one period: `missed` when its deadline was missed. A sample that reports n
    /// missed periods (an overrun) is fed as n missed periods followed by its own.
    #[inline]
    pub(crate) fn push(&mut self, missed: bool) {
        let (word, bit) = ((self.position / 64) as usize, self.position % 64);
        let leaving = (self.ring[word] >> bit) & 1;
        self.ring[word] = (self.ring[word] & !(1 << bit)) | (u64::from(missed) << bit);
        // Until k periods are seen nothing leaves (the ring starts all-met).
        self.misses_in_window = self.misses_in_window + u64::from(missed) - leaving;
        self.periods += 1;
        self.position += 1;
        if self.position == self.k {
            self.position = 0;
        }
        // Until the first k periods are in, the window is the run so far (its misses only
        // grow); after that a window replaces the worst only when strictly worse, so the
        // worst is the first of equals.
        let length = self.periods.min(self.k);
        if self.periods <= self.k || self.misses_in_window > self.worst.misses {
            self.worst = WorstWindow {
                misses: self.misses_in_window,
                first_period: self.periods - length,
                periods: length,
            };
        }
    }

    /// The k of the window.
    pub(crate) fn k(&self) -> u64 {
        self.k
    }

    /// Whether every window so far had at most `m` misses: the `firm(m,k)` verdict.
    #[cfg(test)]
    pub(crate) fn holds(&self, m: u64) -> bool {
        self.worst.misses <= m
    }

    /// The worst window so far.
    pub(crate) fn worst(&self) -> WorstWindow {
        self.worst
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::SplitMix64;

    /// The worst window by recounting every window.
    fn brute_force(misses: &[bool], k: usize) -> (u64, u64) {
        if misses.len() <= k {
            return (misses.iter().filter(|&&m| m).count() as u64, 0);
        }
        let mut best = (0, 0);
        for start in 0..=misses.len() - k {
            let n = misses[start..start + k].iter().filter(|&&m| m).count() as u64;
            if n > best.0 {
                best = (n, start as u64);
            }
        }
        best
    }

    #[test]
    fn agrees_with_a_brute_force_recount() {
        let mut rng = SplitMix64::new(42);
        for case in 0..300 {
            // Window sizes across the word boundaries; miss patterns from sparse to bursty.
            let k = [1, 2, 3, 10, 63, 64, 65, 100, 130][case % 9];
            let len = rng.below(600);
            let p = [0.01, 0.1, 0.5][case % 3];
            let mut misses = Vec::with_capacity(len);
            let mut burst = 0;
            for _ in 0..len {
                if burst == 0 && rng.uniform() < 0.005 {
                    burst = 1 + rng.below(20);
                }
                let m = burst > 0 || rng.uniform() < p;
                burst = burst.saturating_sub(1);
                misses.push(m);
            }
            let mut window = FirmWindow::new(k as u64);
            for &m in &misses {
                window.push(m);
            }
            let (worst, first) = brute_force(&misses, k);
            let got = window.worst();
            assert_eq!(
                (got.misses, got.first_period),
                (worst, first),
                "k {k}, {misses:?}"
            );
            assert_eq!(got.periods, (len as u64).min(k as u64));
            assert!(window.holds(worst));
            assert_eq!(window.holds(worst.wrapping_sub(1)), worst == 0);
        }
    }

    #[test]
    fn one_burst_of_three_in_ten() {
        let mut window = FirmWindow::new(10);
        for i in 0..1000 {
            window.push(matches!(i, 500 | 505 | 509));
        }
        let w = window.worst();
        assert_eq!((w.misses, w.first_period, w.periods), (3, 500, 10));
        assert!(window.holds(3) && !window.holds(2));
    }
}

//! When the recorder drains next: in proportion to how fast the rings fill.
//!
//! A drain every [`MAX_DRAIN_WAIT`] suits every ordinary run (a default ring holds four seconds,
//! forty rounds). A ring that fills faster (a small `--ring-size` at a short interval, many
//! samples per thread) is drained sooner: each drain measures how much of its ring each thread
//! filled since the last one, and the next comes when the fullest would reach
//! [`TARGET_FILL`] of its capacity, never sooner than [`MIN_DRAIN_WAIT`] (each drain wakes a
//! CPU, which may be a measured one).

use crate::measure::clock::monotonic_ns;
use std::time::Duration;

/// The longest wait between drains: the recorder's usual round.
pub(crate) const MAX_DRAIN_WAIT: Duration = Duration::from_millis(100);
/// The shortest wait: draining more often only wakes the CPUs more.
pub(crate) const MIN_DRAIN_WAIT: Duration = Duration::from_millis(5);
/// The share of a ring that may fill between two drains: an eighth leaves room for a drain
/// that comes several rounds late (the drain side starved, the machine stalled).
const TARGET_FILL: f64 = 0.125;
/// Samples taken from one ring per turn of a drain (see `Recorder::drain_until`).
pub(crate) const TURN: usize = 4096;

/// The pace of the drains.
#[derive(Debug, Clone)]
pub(crate) struct DrainPace {
    /// When the last drain began, CLOCK_MONOTONIC ns.
    last_ns: u64,
    wait: Duration,
}

impl DrainPace {
    pub(crate) fn new() -> DrainPace {
        DrainPace {
            last_ns: monotonic_ns(),
            wait: MAX_DRAIN_WAIT,
        }
    }

    /// A drain begins at `now_ns` and finds each ring holding `(filled, capacity)` samples:
    /// what was pushed since the last drain, which left it empty up to what was pushed during
    /// it (a small part, so the rate is slightly overestimated, never under).
    pub(crate) fn observe(&mut self, now_ns: u64, rings: impl Iterator<Item = (usize, usize)>) {
        let since_ns = now_ns.saturating_sub(self.last_ns).max(1) as f64;
        self.last_ns = now_ns;
        let mut wait_ns = MAX_DRAIN_WAIT.as_nanos() as f64;
        for (filled, capacity) in rings {
            if filled == 0 {
                continue;
            }
            let to_target = since_ns * (capacity as f64 * TARGET_FILL) / filled as f64;
            wait_ns = wait_ns.min(to_target);
        }
        let wait_ns = wait_ns.max(MIN_DRAIN_WAIT.as_nanos() as f64);
        self.wait = Duration::from_nanos(wait_ns as u64);
    }

    /// How long to wait before the next drain: what is left of the wait counted from the
    /// last drain's beginning (where the rings' fill was measured), never less than
    /// [`MIN_DRAIN_WAIT`]. A drain that took a while (many samples, a busy machine) does not
    /// push the next one further: waiting the whole round after it let the rings fill for the
    /// round and the drain's length, and left a backlog of both.
    pub(crate) fn next_wait(&self) -> Duration {
        self.next_wait_at(monotonic_ns())
    }

    /// [`DrainPace::next_wait`] at `now_ns`.
    pub(crate) fn next_wait_at(&self, now_ns: u64) -> Duration {
        let spent = Duration::from_nanos(now_ns.saturating_sub(self.last_ns));
        self.wait.saturating_sub(spent).max(MIN_DRAIN_WAIT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn paced(since_ms: u64, rings: &[(usize, usize)]) -> Duration {
        let mut pace = DrainPace {
            last_ns: 1_000 * MS,
            wait: MAX_DRAIN_WAIT,
        };
        pace.observe(1_000 * MS + since_ms * MS, rings.iter().copied());
        // Asked as the drain begins.
        pace.next_wait_at(1_000 * MS + since_ms * MS)
    }

    #[test]
    fn an_ordinary_fill_keeps_the_usual_round() {
        // 100 samples of a 4000-sample ring in 100 ms: an eighth takes 500 ms, beyond the round.
        assert_eq!(paced(100, &[(100, 4000), (0, 4000)]), MAX_DRAIN_WAIT);
        assert_eq!(paced(100, &[]), MAX_DRAIN_WAIT);
    }

    #[test]
    fn the_fullest_ring_sets_the_next_drain() {
        // 1024-sample rings: one filled 512 in 100 ms reaches 128 (an eighth) in 25 ms.
        assert_eq!(
            paced(100, &[(64, 1024), (512, 1024)]),
            Duration::from_millis(25)
        );
        // What counts is the rate, not the fill: a drain 400 ms after the last.
        assert_eq!(paced(400, &[(1024, 2048)]), Duration::from_millis(100));
        assert_eq!(paced(400, &[(2048, 2048)]), Duration::from_millis(50));
    }

    #[test]
    fn never_sooner_than_the_shortest_wait() {
        assert_eq!(
            paced(100, &[(1024, 1024)]),
            Duration::from_nanos(12_500_000)
        );
        assert_eq!(paced(10, &[(1024, 1024)]), MIN_DRAIN_WAIT);
    }

    /// The wait counts from the drain's beginning: a drain that took 80 ms of a 100 ms round
    /// leaves 20 ms; one that took the whole round or more leaves the shortest wait, not a
    /// round more (the backlog of bench/recorder-scale.sh at 256 CPUs x 50 us).
    #[test]
    fn the_wait_counts_from_the_drains_beginning() {
        let mut pace = DrainPace {
            last_ns: 0,
            wait: MAX_DRAIN_WAIT,
        };
        pace.observe(1_000 * MS, [(100, 4000)].into_iter());
        assert_eq!(pace.next_wait_at(1_000 * MS), MAX_DRAIN_WAIT);
        assert_eq!(pace.next_wait_at(1_080 * MS), Duration::from_millis(20));
        assert_eq!(pace.next_wait_at(1_098 * MS), MIN_DRAIN_WAIT);
        assert_eq!(pace.next_wait_at(1_300 * MS), MIN_DRAIN_WAIT);
    }
}

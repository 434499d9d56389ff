//! One CPU's latency over the last `--window`: a ring of slots, each the samples of one stretch
//! of time kept as sparse (value, count) pairs, and an HDR histogram of the slots in the window
//! kept up to date by adding each new sample and subtracting each slot that leaves the window.
//!
//! Where the samples come from: the gains of the recorder's cumulative histogram of the CPU
//! (`cumulative.rs`), handed to [`CpuWindow::record`] as they are found, so that nothing in the
//! recorder (or the measuring threads) changes for the monitor.
//!
//! Memory is flat: the ring has a fixed number of slots (the window over the slot length),
//! each slot's pairs are at most the histogram's distinct buckets, and a slot that leaves the
//! window hands its allocation to the next one. The histograms grow to the largest latency
//! seen, like the recorder's.

use crate::format::stats::{LatencySummary, new_histogram};
use hdrhistogram::Histogram;
use std::collections::VecDeque;

/// Counters of one CPU at one moment (cumulative since the start).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counters {
    pub missed_periods: u64,
    pub dropped_records: u64,
    pub(crate) deadline_misses: u64,
}

impl Counters {
    fn minus(self, earlier: Counters) -> Counters {
        Counters {
            missed_periods: self.missed_periods.saturating_sub(earlier.missed_periods),
            dropped_records: self.dropped_records.saturating_sub(earlier.dropped_records),
            deadline_misses: self.deadline_misses.saturating_sub(earlier.deadline_misses),
        }
    }
}

/// The samples of one slot of time.
#[derive(Debug, Default)]
struct Slot {
    /// Index of the slot (time since the start over the slot length).
    index: u64,
    /// (HDR bucket value, count) of the samples taken in this slot.
    counts: Vec<(u64, u64)>,
    /// The counters when the slot began.
    counters_at_start: Counters,
}

/// One CPU's sliding window.
pub(crate) struct CpuWindow {
    slot_ns: u64,
    /// Slots in the window: the current one and `slots - 1` before it.
    slots: usize,
    ring: VecDeque<Slot>,
    /// The sum of the ring's slots.
    window: Histogram<u64>,
    /// Scratch for a slot leaving the window (its allocation reused).
    scratch: Histogram<u64>,
}

/// The figures of a window that the exposition shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct WindowFigures {
    pub max_ns: Option<i64>,
    /// p99, p99.9, p99.99 (the exposition's quantiles), ns.
    pub(crate) quantiles_ns: [Option<u64>; 3],
}

impl CpuWindow {
    /// A window of `window_ns` in slots of `slot_ns` (the window is rounded up to whole slots).
    pub(crate) fn new(window_ns: u64, slot_ns: u64) -> Self {
        let slots = window_ns.div_ceil(slot_ns).max(1) as usize;
        CpuWindow {
            slot_ns,
            slots,
            ring: VecDeque::with_capacity(slots + 1),
            window: new_histogram(),
            scratch: new_histogram(),
        }
    }

    /// Moves the window to `elapsed_ns` since the start, with the CPU's `counters` now: a new
    /// current slot when a slot boundary has passed, and the slots that left the window
    /// dropped. Samples [`CpuWindow::record`]ed after this belong to the current slot.
    pub(crate) fn advance(&mut self, elapsed_ns: u64, counters: Counters) {
        let index = elapsed_ns / self.slot_ns;
        if self.ring.back().is_none_or(|s| s.index < index) {
            let mut slot = match self.ring.len() >= self.slots {
                true => self.ring.pop_front().expect("a full ring"),
                false => Slot::default(),
            };
            self.drop_from_window(&slot.counts);
            slot.index = index;
            slot.counts.clear();
            slot.counters_at_start = counters;
            self.ring.push_back(slot);
        }
        // Slots older than the window even when updates were rare (a stalled machine).
        while let Some(first) = self.ring.front()
            && first.index + (self.slots as u64) <= index
        {
            let old = self.ring.pop_front().expect("a front slot");
            self.drop_from_window(&old.counts);
        }
    }

    /// Adds `count` samples of `value` (an HDR bucket's highest value) to the current slot.
    pub(crate) fn record(&mut self, value: u64, count: u64) {
        let slot = self
            .ring
            .back_mut()
            .expect("advanced before the first record");
        slot.counts.push((value, count));
        self.window
            .record_n(value, count)
            .expect("auto-resizing histogram");
    }

    fn drop_from_window(&mut self, counts: &[(u64, u64)]) {
        if counts.is_empty() {
            return;
        }
        self.scratch.reset();
        for &(value, count) in counts {
            self.scratch
                .record_n(value, count)
                .expect("auto-resizing histogram");
        }
        self.window
            .subtract(&self.scratch)
            .expect("a slot's samples are in the window");
    }

    /// The latency figures of the window: percentiles and max at the histogram's precision
    /// (within 0.1%, the same values run.json's percentiles have). All None without samples.
    pub(crate) fn summary(&self) -> LatencySummary {
        LatencySummary::from_histogram(&self.window)
    }

    /// The part of [`CpuWindow::summary`] the exposition shows, without the walks of the
    /// whole histogram that its mean and deviation take.
    pub(crate) fn figures(&self) -> WindowFigures {
        if self.window.is_empty() {
            return WindowFigures::default();
        }
        let q = |quantile: f64| Some(self.window.value_at_quantile(quantile));
        WindowFigures {
            max_ns: Some(self.window.max() as i64),
            quantiles_ns: [q(0.99), q(0.999), q(0.9999)],
        }
    }

    /// How much each counter grew over the window, given the counters now.
    pub(crate) fn counters(&self, now: Counters) -> Counters {
        self.ring
            .front()
            .map_or(Counters::default(), |s| now.minus(s.counters_at_start))
    }

    /// The slots the ring holds (for tests of the memory bound).
    #[cfg(test)]
    pub(crate) fn slots_held(&self) -> usize {
        self.ring.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::cumulative::Cumulative;

    const SLOT: u64 = 1_000_000_000;

    /// A window fed as the monitor feeds it: advanced, then the cumulative histogram's gains.
    struct Fed {
        window: CpuWindow,
        cumulative: Cumulative,
    }

    impl Fed {
        fn new(window_ns: u64) -> Self {
            Fed {
                window: CpuWindow::new(window_ns, SLOT),
                cumulative: Cumulative::default(),
            }
        }

        fn update(&mut self, elapsed_ns: u64, h: &Histogram<u64>, counters: Counters) {
            self.window.advance(elapsed_ns, counters);
            let window = &mut self.window;
            self.cumulative.take_in(h, |v, n| window.record(v, n));
        }
    }

    /// Known samples per slot; the window's figures are those of the last `slots` slots only.
    #[test]
    fn the_window_forgets_what_left_it() {
        let mut f = Fed::new(3 * SLOT);
        let mut cumulative = new_histogram();
        let c = Counters::default();
        // Slot 0: one 5 ms spike and 999 samples of 10 us.
        cumulative.record_n(10_000, 999).unwrap();
        cumulative.record(5_000_000).unwrap();
        f.update(SLOT / 2, &cumulative, c);
        let s = f.window.summary();
        assert_eq!(s.samples, 1000);
        assert!((5_000_000..=5_005_000).contains(&(s.max_ns.unwrap() as u64)));
        // Slots 1 and 2: 20 us samples. The spike is still in the window.
        for slot in 1..3 {
            cumulative.record_n(20_000, 1000).unwrap();
            f.update(slot * SLOT, &cumulative, c);
        }
        assert_eq!(f.window.summary().samples, 3000);
        assert!(f.window.summary().max_ns.unwrap() >= 5_000_000);
        // Slot 3: slot 0 leaves; the max is 20 us (at 0.1%), p99 too.
        cumulative.record_n(20_000, 1000).unwrap();
        f.update(3 * SLOT, &cumulative, c);
        let s = f.window.summary();
        assert_eq!(s.samples, 3000);
        assert!(
            (20_000..=20_020).contains(&(s.max_ns.unwrap() as u64)),
            "{s:?}"
        );
        assert!((20_000..=20_020).contains(&s.p99_ns.unwrap()), "{s:?}");
        assert_eq!(
            f.window.figures(),
            WindowFigures {
                max_ns: s.max_ns,
                quantiles_ns: [s.p99_ns, s.p999_ns, s.p9999_ns]
            }
        );
        assert_eq!(f.window.slots_held(), 3);
    }

    /// A gap longer than the window (no update for a while) empties it.
    #[test]
    fn a_long_gap_empties_the_window() {
        let mut f = Fed::new(2 * SLOT);
        let mut cumulative = new_histogram();
        cumulative.record_n(7_000, 10).unwrap();
        f.update(0, &cumulative, Counters::default());
        f.update(10 * SLOT, &cumulative, Counters::default());
        assert_eq!(f.window.summary().samples, 0);
        assert_eq!(f.window.slots_held(), 1);
    }

    #[test]
    fn counters_grow_over_the_window_only() {
        let mut f = Fed::new(2 * SLOT);
        let h = new_histogram();
        let at = |missed| Counters {
            missed_periods: missed,
            ..Counters::default()
        };
        f.update(0, &h, at(5));
        f.update(SLOT, &h, at(7));
        assert_eq!(
            f.window.counters(at(9)).missed_periods,
            4,
            "since slot 0 began at 5"
        );
        f.update(2 * SLOT, &h, at(9));
        assert_eq!(
            f.window.counters(at(9)).missed_periods,
            2,
            "since slot 1 began at 7"
        );
    }
}

//! One CPU's latency over the last `--window`: a ring of slots, each the samples of one stretch
//! of time kept as sparse (value, count) pairs, and an HDR histogram of the slots in the window
//! kept up to date by adding each new delta and subtracting each slot that leaves the window.
//!
//! Where the deltas come from: the recorder's cumulative histogram of the CPU. Each
//! [`CpuWindow::update`] takes the difference between it and the copy made at the last update,
//! so nothing in the recorder (or the measuring threads) changes for the monitor.
//!
//! Memory is flat: the ring has a fixed number of slots (the window over the slot length),
//! each slot's pairs are at most the histogram's distinct buckets, and a slot that leaves the
//! window hands its allocation to the next one. The histograms grow to the largest latency
//! seen, like the recorder's.

use crate::record::stats::{LatencySummary, new_histogram};
use hdrhistogram::Histogram;
use std::collections::VecDeque;

/// Counters of one CPU at one moment (cumulative since the start).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    pub missed_periods: u64,
    pub dropped_records: u64,
    pub deadline_misses: u64,
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
pub struct CpuWindow {
    slot_ns: u64,
    /// Slots in the window: the current one and `slots - 1` before it.
    slots: usize,
    ring: VecDeque<Slot>,
    /// The sum of the ring's slots.
    window: Histogram<u64>,
    /// The cumulative histogram as of the last update.
    seen: Histogram<u64>,
    /// Scratch for the delta and for a slot leaving the window (allocations reused).
    scratch: Histogram<u64>,
}

impl CpuWindow {
    /// A window of `window_ns` in slots of `slot_ns` (the window is rounded up to whole slots).
    pub fn new(window_ns: u64, slot_ns: u64) -> Self {
        let slots = window_ns.div_ceil(slot_ns).max(1) as usize;
        CpuWindow {
            slot_ns,
            slots,
            ring: VecDeque::with_capacity(slots + 1),
            window: new_histogram(),
            seen: new_histogram(),
            scratch: new_histogram(),
        }
    }

    /// Takes in what `cumulative` gained since the last update, at `elapsed_ns` since the
    /// start, with the CPU's `counters` now; drops the slots that left the window.
    pub fn update(&mut self, elapsed_ns: u64, cumulative: &Histogram<u64>, counters: Counters) {
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

        // The delta since the last update: cumulative minus what was seen.
        self.scratch.reset();
        self.scratch
            .add(cumulative)
            .expect("auto-resizing histograms add");
        self.scratch
            .subtract(&self.seen)
            .expect("a cumulative histogram only grows");
        let slot = self.ring.back_mut().expect("the current slot");
        for v in self.scratch.iter_recorded() {
            let (value, count) = (v.value_iterated_to(), v.count_at_value());
            slot.counts.push((value, count));
            self.window
                .record_n(value, count)
                .expect("auto-resizing histogram");
        }
        self.seen
            .add(&self.scratch)
            .expect("auto-resizing histograms add");
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
    pub fn summary(&self) -> LatencySummary {
        LatencySummary::from_histogram(&self.window)
    }

    /// How much each counter grew over the window, given the counters now.
    pub fn counters(&self, now: Counters) -> Counters {
        self.ring
            .front()
            .map_or(Counters::default(), |s| now.minus(s.counters_at_start))
    }

    /// The slots the ring holds (for tests of the memory bound).
    pub fn slots_held(&self) -> usize {
        self.ring.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SLOT: u64 = 1_000_000_000;

    /// Known samples per slot; the window's figures are those of the last `slots` slots only.
    #[test]
    fn the_window_forgets_what_left_it() {
        let mut w = CpuWindow::new(3 * SLOT, SLOT);
        let mut cumulative = new_histogram();
        let c = Counters::default();
        // Slot 0: one 5 ms spike and 999 samples of 10 us.
        cumulative.record_n(10_000, 999).unwrap();
        cumulative.record(5_000_000).unwrap();
        w.update(SLOT / 2, &cumulative, c);
        let s = w.summary();
        assert_eq!(s.samples, 1000);
        assert!((5_000_000..=5_005_000).contains(&(s.max_ns.unwrap() as u64)));
        // Slots 1 and 2: 20 us samples. The spike is still in the window.
        for slot in 1..3 {
            cumulative.record_n(20_000, 1000).unwrap();
            w.update(slot * SLOT, &cumulative, c);
        }
        assert_eq!(w.summary().samples, 3000);
        assert!(w.summary().max_ns.unwrap() >= 5_000_000);
        // Slot 3: slot 0 leaves; the max is 20 us (at 0.1%), p99 too.
        cumulative.record_n(20_000, 1000).unwrap();
        w.update(3 * SLOT, &cumulative, c);
        let s = w.summary();
        assert_eq!(s.samples, 3000);
        assert!(
            (20_000..=20_020).contains(&(s.max_ns.unwrap() as u64)),
            "{s:?}"
        );
        assert!((20_000..=20_020).contains(&s.p99_ns.unwrap()), "{s:?}");
        assert_eq!(w.slots_held(), 3);
    }

    /// A gap longer than the window (no update for a while) empties it.
    #[test]
    fn a_long_gap_empties_the_window() {
        let mut w = CpuWindow::new(2 * SLOT, SLOT);
        let mut cumulative = new_histogram();
        cumulative.record_n(7_000, 10).unwrap();
        w.update(0, &cumulative, Counters::default());
        w.update(10 * SLOT, &cumulative, Counters::default());
        assert_eq!(w.summary().samples, 0);
        assert_eq!(w.slots_held(), 1);
    }

    #[test]
    fn counters_grow_over_the_window_only() {
        let mut w = CpuWindow::new(2 * SLOT, SLOT);
        let h = new_histogram();
        let at = |missed| Counters {
            missed_periods: missed,
            ..Counters::default()
        };
        w.update(0, &h, at(5));
        w.update(SLOT, &h, at(7));
        assert_eq!(
            w.counters(at(9)).missed_periods,
            4,
            "since slot 0 began at 5"
        );
        w.update(2 * SLOT, &h, at(9));
        assert_eq!(
            w.counters(at(9)).missed_periods,
            2,
            "since slot 1 began at 7"
        );
    }
}

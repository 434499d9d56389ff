//! `--on-threshold`: the recorder watches each thread's wakeups for the start of a spike (the
//! first wakeup later than the deadline after one that was not, as docs/tails.md counts
//! spikes) and, for snapshots, keeps the thread's recent samples. The session takes the starts
//! after every drain and fires the actions (session/actions.rs); nothing here runs in the
//! measuring threads.

use crate::measure::Sample;
use std::collections::VecDeque;

/// Spike starts kept per thread between two takes; more (a storm of spikes between two
/// drains) are counted in [`SpikeWatch::overflowed`] instead, so memory stays bounded.
const STARTS_KEPT: usize = 1024;

/// Where a spike started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpikeStart {
    pub cpu: usize,
    /// The first late wakeup's due time, on the run's clock, ns.
    pub due_ns: u64,
    pub latency_ns: i64,
    pub seq: u64,
}

/// One thread's watch.
#[derive(Debug)]
pub(super) struct SpikeWatch {
    cpu: usize,
    deadline_ns: u64,
    in_spike: bool,
    pub starts: Vec<SpikeStart>,
    /// Starts not kept because [`STARTS_KEPT`] were waiting.
    pub overflowed: u64,
    /// The samples of the last `keep_ns` of due time, oldest first (empty without snapshots).
    history: VecDeque<Sample>,
    keep_ns: u64,
    /// The latest due time recorded, ns (0: none yet).
    pub last_due_ns: u64,
}

impl SpikeWatch {
    pub(super) fn new(cpu: usize, deadline_ns: u64, keep_ns: u64) -> Self {
        SpikeWatch {
            cpu,
            deadline_ns,
            in_spike: false,
            starts: Vec::new(),
            overflowed: 0,
            history: VecDeque::new(),
            keep_ns,
            last_due_ns: 0,
        }
    }

    /// Looks at one recorded sample (in wakeup order).
    pub(super) fn record(&mut self, s: &Sample) {
        let late = s.latency_ns > self.deadline_ns as i64;
        if late && !self.in_spike {
            if self.starts.len() < STARTS_KEPT {
                self.starts.push(SpikeStart {
                    cpu: self.cpu,
                    due_ns: s.expected_ns,
                    latency_ns: s.latency_ns,
                    seq: s.seq,
                });
            } else {
                self.overflowed += 1;
            }
        }
        self.in_spike = late;
        self.last_due_ns = self.last_due_ns.max(s.expected_ns);
        if self.keep_ns > 0 {
            self.history.push_back(*s);
            let oldest = s.expected_ns.saturating_sub(self.keep_ns);
            while self.history.front().is_some_and(|h| h.expected_ns < oldest) {
                self.history.pop_front();
            }
        }
    }

    /// The kept samples due in [from_ns, to_ns].
    pub(super) fn window(&self, from_ns: u64, to_ns: u64) -> impl Iterator<Item = &Sample> {
        self.history
            .iter()
            .filter(move |s| (from_ns..=to_ns).contains(&s.expected_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(seq: u64, latency_ns: i64) -> Sample {
        Sample {
            seq,
            expected_ns: 1_000 + seq * 100,
            latency_ns,
            missed: 0,
        }
    }

    #[test]
    fn a_run_of_late_wakeups_starts_one_spike() {
        let mut w = SpikeWatch::new(3, 50, 0);
        for (i, l) in [10, 60, 70, 10, 51, 50, 90].into_iter().enumerate() {
            w.record(&sample(i as u64, l));
        }
        let seqs: Vec<u64> = w.starts.iter().map(|s| s.seq).collect();
        assert_eq!(seqs, vec![1, 4, 6]);
        assert_eq!(w.starts[0].cpu, 3);
        assert_eq!(w.starts[0].due_ns, 1_100);
        assert_eq!(w.starts[0].latency_ns, 60);
        assert_eq!(w.last_due_ns, 1_600);
    }

    #[test]
    fn starts_and_history_stay_bounded() {
        let mut w = SpikeWatch::new(0, 50, 250);
        for i in 0..(2 * STARTS_KEPT as u64 + 10) {
            // Alternating on time and late: every other wakeup starts a spike.
            w.record(&sample(i, if i % 2 == 1 { 100 } else { 0 }));
        }
        assert_eq!(w.starts.len(), STARTS_KEPT);
        assert_eq!(w.overflowed, 5);
        // 250 ns of due time at 100 ns apart: the last three samples.
        let last = w.last_due_ns;
        let kept: Vec<u64> = w.window(0, u64::MAX).map(|s| s.expected_ns).collect();
        assert_eq!(kept, vec![last - 200, last - 100, last]);
        assert_eq!(w.window(last - 100, last - 100).count(), 1);
    }
}

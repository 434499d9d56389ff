//! `--on-threshold`: the recorder watches each thread's wakeups for the start of a spike (the
//! first wakeup later than the deadline after one that was not, as docs/tails.md counts
//! spikes) and, for snapshots, keeps the thread's recent samples. The session takes the starts
//! after every drain and fires the actions (session/actions.rs); nothing here runs in the
//! measuring threads.

use super::trace_join::SampleTrace;
use crate::format::events::SpikeExplanation;
use crate::measure::Sample;
use std::collections::VecDeque;

/// Spike starts kept per thread between two takes; more (a storm of spikes between two
/// drains) are counted in [`SpikeWatch::overflowed`] instead, so memory stays bounded.
const STARTS_KEPT: usize = 1024;

/// Explanations kept per thread for snapshots. An explanation is about a kilobyte (its
/// contributors): 1000 keep a thread's under a megabyte. A window with more explained wakeups
/// of one CPU (over a second of late wakeups at 1 kHz) keeps its latest 1000 and says so;
/// events.jsonl has every explanation of the run.
pub(crate) const EXPLANATIONS_KEPT: usize = 1000;

/// The parts of a sample's latency the trace joined to it (see `trace::split`), ns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct SplitParts {
    pub irq_latency_ns: Option<i64>,
    pub thread_latency_ns: Option<i64>,
    pub(crate) wake_to_switch_ns: Option<i64>,
    pub(crate) switch_to_user_ns: Option<i64>,
}

/// A part the trace did not give, in [`Kept::split`] (no latency part is `i64::MIN` ns).
const ABSENT: i64 = i64::MIN;

/// A sample in the history, with its split packed (32 bytes rather than 64 as options).
#[derive(Debug, Clone, Copy)]
struct Kept {
    sample: Sample,
    split: [i64; 4],
}

impl Kept {
    fn new(sample: &Sample, traced: Option<&SampleTrace>) -> Self {
        let v = |x: Option<i64>| x.unwrap_or(ABSENT);
        Kept {
            sample: *sample,
            split: traced.map_or([ABSENT; 4], |t| {
                [
                    v(t.irq_latency_ns),
                    v(t.thread_latency_ns),
                    v(t.wake_to_switch_ns),
                    v(t.switch_to_user_ns),
                ]
            }),
        }
    }

    fn split(&self) -> SplitParts {
        let o = |x: i64| (x != ABSENT).then_some(x);
        SplitParts {
            irq_latency_ns: o(self.split[0]),
            thread_latency_ns: o(self.split[1]),
            wake_to_switch_ns: o(self.split[2]),
            switch_to_user_ns: o(self.split[3]),
        }
    }
}

/// What the recorder kept of a snapshot's window (`--on-threshold snapshot`).
#[derive(Debug, Clone, Default)]
pub(crate) struct SnapshotWindow {
    /// Every watched thread's samples due in the window, as (CPU, sample, split), by CPU then
    /// due time.
    pub samples: Vec<(usize, Sample, SplitParts)>,
    /// The run is traced: the samples' splits, the explanations and `trace` mean something.
    pub traced: bool,
    /// The explanations of the window's samples, by due time.
    pub explanations: Vec<SpikeExplanation>,
    /// Explanations of the window due at or before this time were not kept (the bound
    /// [`EXPLANATIONS_KEPT`]), ns.
    pub(crate) explanations_not_kept_through_ns: Option<u64>,
    /// The trace events of the measured CPUs in the window, by CPU.
    pub trace: Vec<super::CpuTraceWindow>,
}

/// Where a spike started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SpikeStart {
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
    pub(crate) overflowed: u64,
    /// The samples of the last `keep_ns` of due time, oldest first (empty without snapshots).
    history: VecDeque<Kept>,
    /// The explanations of the samples in `history` (`--trace`), at most
    /// [`EXPLANATIONS_KEPT`], oldest first.
    explanations: VecDeque<SpikeExplanation>,
    /// The latest due time of an explanation dropped by the count bound, ns.
    explanations_dropped_through_ns: Option<u64>,
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
            explanations: VecDeque::new(),
            explanations_dropped_through_ns: None,
            keep_ns,
            last_due_ns: 0,
        }
    }

    /// Looks at one recorded sample (in wakeup order), with what the trace joined to it.
    pub(super) fn record(&mut self, s: &Sample, traced: Option<&SampleTrace>) {
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
            self.history.push_back(Kept::new(s, traced));
            let oldest = s.expected_ns.saturating_sub(self.keep_ns);
            while self
                .history
                .front()
                .is_some_and(|h| h.sample.expected_ns < oldest)
            {
                self.history.pop_front();
            }
            if let Some(x) = traced.and_then(|t| t.explanation.as_ref()) {
                if self.explanations.len() >= EXPLANATIONS_KEPT
                    && let Some(old) = self.explanations.pop_front()
                {
                    let through = self.explanations_dropped_through_ns.unwrap_or(0);
                    self.explanations_dropped_through_ns = Some(through.max(old.due_ns));
                }
                self.explanations.push_back(x.clone());
            }
            while self.explanations.front().is_some_and(|x| x.due_ns < oldest) {
                self.explanations.pop_front();
            }
        }
    }

    /// The kept samples due in [from_ns, to_ns], with their split.
    pub(super) fn window(
        &self,
        from_ns: u64,
        to_ns: u64,
    ) -> impl Iterator<Item = (Sample, SplitParts)> + '_ {
        self.history
            .iter()
            .filter(move |k| (from_ns..=to_ns).contains(&k.sample.expected_ns))
            .map(|k| (k.sample, k.split()))
    }

    /// The kept explanations of samples due in [from_ns, to_ns], and the latest due time of
    /// one dropped by the count bound when that lies in the window.
    pub(super) fn explanations(
        &self,
        from_ns: u64,
        to_ns: u64,
    ) -> (Vec<SpikeExplanation>, Option<u64>) {
        let kept = self
            .explanations
            .iter()
            .filter(|x| (from_ns..=to_ns).contains(&x.due_ns))
            .cloned()
            .collect();
        let dropped = self
            .explanations_dropped_through_ns
            .filter(|&d| d >= from_ns);
        (kept, dropped)
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
            w.record(&sample(i as u64, l), None);
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
            w.record(&sample(i, if i % 2 == 1 { 100 } else { 0 }), None);
        }
        assert_eq!(w.starts.len(), STARTS_KEPT);
        assert_eq!(w.overflowed, 5);
        // 250 ns of due time at 100 ns apart: the last three samples.
        let last = w.last_due_ns;
        let kept: Vec<u64> = w.window(0, u64::MAX).map(|(s, _)| s.expected_ns).collect();
        assert_eq!(kept, vec![last - 200, last - 100, last]);
        assert_eq!(w.window(last - 100, last - 100).count(), 1);
    }

    fn explained(due_ns: u64) -> SampleTrace {
        SampleTrace {
            irq_latency_ns: Some(7),
            thread_latency_ns: Some(-3),
            explanation: Some(SpikeExplanation {
                time_ns: 0,
                cpu: 0,
                due_ns,
                latency_ns: 100,
                irq_latency_ns: Some(7),
                thread_latency_ns: Some(-3),
                verdict: String::new(),
                contributors: Vec::new(),
            }),
            ..SampleTrace::default()
        }
    }

    #[test]
    fn the_window_keeps_each_samples_split_and_the_explanations_bounded() {
        let mut w = SpikeWatch::new(0, 50, u64::MAX);
        let n = EXPLANATIONS_KEPT as u64 + 3;
        for i in 0..n {
            let s = sample(i, 100);
            // Every sample explained, but the first without a trace join.
            let t = explained(s.expected_ns);
            w.record(&s, (i > 0).then_some(&t));
        }
        let all: Vec<(Sample, SplitParts)> = w.window(0, u64::MAX).collect();
        assert_eq!(all.len(), n as usize);
        assert_eq!(all[0].1, SplitParts::default());
        assert_eq!(
            all[1].1,
            SplitParts {
                irq_latency_ns: Some(7),
                thread_latency_ns: Some(-3),
                wake_to_switch_ns: None,
                switch_to_user_ns: None,
            }
        );
        // n - 1 explained, EXPLANATIONS_KEPT kept: the first two explained (seq 1, 2) went.
        let (kept, dropped) = w.explanations(0, u64::MAX);
        assert_eq!(kept.len(), EXPLANATIONS_KEPT);
        assert_eq!(kept[0].due_ns, sample(3, 0).expected_ns);
        assert_eq!(dropped, Some(sample(2, 0).expected_ns));
        // A window after what went is whole.
        let from = sample(3, 0).expected_ns;
        let (kept, dropped) = w.explanations(from, from + 100);
        assert_eq!((kept.len(), dropped), (2, None));
    }
}

//! What the report shows of a run's events, read in one streaming pass
//! (`results::loaded::scan_events`, one line held at a time) and kept bounded, so that a
//! month of a spike load's events (gigabytes) is reported in memory that does not grow with
//! the file: only the event types shown are parsed (the rest are counted by their `type`),
//! and of those the report keeps
//! - the worst [`MAX_EXPLANATIONS_KEPT`] spike explanations (at most
//!   [`MAX_EXPLANATION_BYTES_KEPT`] of them), for the timeline's markers and the list of the
//!   worst; every explanation is tallied by culprit as it is read (`report::causes::Tally`);
//! - a noise run's intervals reduced at once to the plot's columns
//!   (`report::plot::noise_timeline::NoiseTally`);
//! - the phase events of a run whose run.json has no phases, [`MAX_PHASE_EVENTS`] at most.
//!
//! Where a bound cut, the report says so: the explanations listed "of N", the markers'
//! legend, and a warning for the rest.

use crate::format::events::{Event, SpikeExplanation};
use crate::format::run_record::RunRecord;
use crate::report::causes::{Tallied, Tally};
use crate::report::plot::noise_timeline::{NoiseTally, NoiseTimeline};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Spike explanations kept, the worst (highest latency; of equal ones the first written): the
/// timeline marks them, and the report lists the worst 50 of them with their stacks. A traced
/// run explains every wakeup above its threshold, without a count bound.
pub(crate) const MAX_EXPLANATIONS_KEPT: usize = 1000;

/// The explanations kept take about this much at most (as counted by their text: an
/// explanation is a few hundred bytes, a few KiB with a kernel stack).
pub(crate) const MAX_EXPLANATION_BYTES_KEPT: usize = 16 << 20;

/// Phase events kept (from a run whose run.json has no `phases`): a scenario has at most
/// 10 000 phases, each a start and an end.
pub(crate) const MAX_PHASE_EVENTS: usize = 20_000;

/// The bytes of phase labels kept at most: the scenario file's own limit (4 MiB).
pub(crate) const MAX_PHASE_LABEL_BYTES: usize = 4 << 20;

/// A phase's start or end, as events.jsonl gives it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PhaseMark {
    pub index: usize,
    pub label: String,
    pub time_ns: u64,
    pub start: bool,
}

/// The events of a run as the report keeps them.
#[derive(Debug, Clone, Default)]
pub(crate) struct EventsDigest {
    /// The worst explanations ([`MAX_EXPLANATIONS_KEPT`]), in the order written.
    pub explained: Vec<SpikeExplanation>,
    /// Every explanation, grouped by culprit; `causes.all` counts them.
    pub causes: Tallied,
    /// Phase starts and ends in the order written, when run.json has no phases.
    pub phases: Vec<PhaseMark>,
    /// A noise run's share of each CPU over time; None for other runs and when it has no
    /// `noise_interval` events.
    pub noise: Option<NoiseTimeline>,
}

impl EventsDigest {
    /// Whether explanations were left out of [`EventsDigest::explained`].
    pub(crate) fn explained_cut(&self) -> bool {
        (self.explained.len() as u64) < self.causes.all
    }
}

/// An explanation kept, ordered so that the heap's top is the first to go: the lowest
/// latency, and of equal ones the last written.
struct Kept {
    latency_ns: i64,
    seq: u64,
    bytes: usize,
    x: SpikeExplanation,
}

impl Kept {
    fn key(&self) -> (Reverse<i64>, u64) {
        (Reverse(self.latency_ns), self.seq)
    }
}

impl PartialEq for Kept {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl Eq for Kept {}
impl PartialOrd for Kept {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Kept {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

/// About the bytes an explanation takes: its strings and a fixed share per part.
fn weight(x: &SpikeExplanation) -> usize {
    let contributors: usize = x
        .contributors
        .iter()
        .map(|c| {
            let stack = c.stack.as_ref().map_or(0, |s| {
                s.frames.iter().map(|f| f.len() + 24).sum::<usize>()
                    + s.note.as_ref().map_or(0, String::len)
            });
            96 + c.kind.len() + c.name.len() + c.policy.as_ref().map_or(0, String::len) + stack
        })
        .sum();
    128 + x.verdict.len() + contributors
}

/// The event types the report reads of a run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Wanted {
    phases: bool,
    noise: bool,
}

impl Wanted {
    /// Whether events of this `type` are read at all.
    pub(crate) fn wants(&self, kind: &str) -> bool {
        match kind {
            "spike_explained" => true,
            "phase_start" | "phase_end" => self.phases,
            "noise_interval" => self.noise,
            _ => false,
        }
    }
}

/// The report's state while the events are read.
pub(crate) struct Digesting {
    kept: BinaryHeap<Kept>,
    kept_bytes: usize,
    seq: u64,
    causes: Tally,
    phases: Option<Vec<PhaseMark>>,
    phase_label_bytes: usize,
    phases_left_out: u64,
    noise: Option<NoiseTally>,
}

impl Digesting {
    /// For the run of `record`, whose data spans `extent_s` (the noise columns' span).
    pub(crate) fn new(record: &RunRecord, extent_s: f64) -> Self {
        Self::with(
            record.phases.is_empty(),
            record.kind.spec().time_lost.then_some(extent_s),
        )
    }

    /// Reading phase events or not, a noise timeline over `noise_extent_s` or none.
    fn with(phases: bool, noise_extent_s: Option<f64>) -> Self {
        Digesting {
            kept: BinaryHeap::new(),
            kept_bytes: 0,
            seq: 0,
            causes: Tally::default(),
            phases: phases.then(Vec::new),
            phase_label_bytes: 0,
            phases_left_out: 0,
            noise: noise_extent_s.map(NoiseTally::new),
        }
    }

    /// The event types read (the others are only counted).
    pub(crate) fn wanted(&self) -> Wanted {
        Wanted {
            phases: self.phases.is_some(),
            noise: self.noise.is_some(),
        }
    }

    pub(crate) fn add(&mut self, e: Event) {
        match e {
            Event::SpikeExplained(x) => self.explained(x),
            Event::PhaseStart {
                time_ns,
                index,
                label,
                ..
            } => self.phase(PhaseMark {
                index,
                label,
                time_ns,
                start: true,
            }),
            Event::PhaseEnd {
                time_ns,
                index,
                label,
            } => self.phase(PhaseMark {
                index,
                label,
                time_ns,
                start: false,
            }),
            Event::NoiseInterval(i) => {
                if let Some(n) = &mut self.noise {
                    n.add(i)
                }
            }
            _ => {}
        }
    }

    fn explained(&mut self, x: SpikeExplanation) {
        self.causes.add(&x);
        let bytes = weight(&x);
        self.kept_bytes += bytes;
        self.kept.push(Kept {
            latency_ns: x.latency_ns,
            seq: self.seq,
            bytes,
            x,
        });
        self.seq += 1;
        while self.kept.len() > MAX_EXPLANATIONS_KEPT
            || (self.kept_bytes > MAX_EXPLANATION_BYTES_KEPT && self.kept.len() > 1)
        {
            let gone = self.kept.pop().expect("more than one kept");
            self.kept_bytes -= gone.bytes;
        }
    }

    fn phase(&mut self, mark: PhaseMark) {
        let Some(phases) = &mut self.phases else {
            return;
        };
        // Labels count against the bound as well: 20 000 labels of a megabyte would not do.
        if phases.len() >= MAX_PHASE_EVENTS
            || self.phase_label_bytes + mark.label.len() > MAX_PHASE_LABEL_BYTES
        {
            self.phases_left_out += 1;
        } else {
            self.phase_label_bytes += mark.label.len();
            phases.push(mark);
        }
    }

    /// What the report keeps, and the warnings for what a bound left out (none for a run as
    /// jitterlab writes it).
    pub(crate) fn finish(self) -> (EventsDigest, Vec<String>) {
        let mut warnings = Vec::new();
        if self.phases_left_out > 0 {
            warnings.push(format!(
                "events: {} phase start/end event(s) left out, past the {MAX_PHASE_EVENTS} the report reads (a scenario has at most 10 000 phases): the phase bands show the first ones",
                self.phases_left_out
            ));
        }
        let noise = self.noise.filter(|n| !n.is_empty()).map(|n| {
            if n.left_out > 0 {
                warnings.push(format!(
                    "events: {} noise interval(s) of CPUs past the first {} left out of the noise timeline",
                    n.left_out,
                    crate::report::plot::noise_timeline::MAX_TRACKS
                ));
            }
            n.finish(Vec::new())
        });
        let mut kept = self.kept.into_vec();
        kept.sort_unstable_by_key(|k| k.seq);
        let digest = EventsDigest {
            explained: kept.into_iter().map(|k| k.x).collect(),
            causes: self.causes.finish(),
            phases: self.phases.unwrap_or_default(),
            noise,
        };
        (digest, warnings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn explanation(seq: u64, latency_ns: i64, name: &str) -> SpikeExplanation {
        SpikeExplanation {
            time_ns: seq,
            cpu: 0,
            due_ns: seq,
            latency_ns,
            irq_latency_ns: None,
            thread_latency_ns: None,
            verdict: format!("v{seq}"),
            contributors: vec![crate::format::events::Contributor {
                kind: "task".into(),
                name: name.into(),
                pid: None,
                policy: None,
                prio: None,
                duration_ns: 1,
                stack: None,
            }],
        }
    }

    /// The worst explanations kept are those a sort of all of them (by latency, stable) puts
    /// first, ties to the first written; they come back in the order written, and every one
    /// is tallied.
    #[test]
    fn the_kept_explanations_are_the_worst_of_all() {
        let mut d = Digesting::with(true, None);
        let mut all = Vec::new();
        let mut rng = crate::random::SplitMix64::new(5);
        for seq in 0..5000u64 {
            // Few distinct latencies: many ties across the cut.
            let x = explanation(seq, (rng.uniform() * 40.0) as i64 * 1000, "t");
            all.push(x.clone());
            d.add(Event::SpikeExplained(x));
        }
        let (digest, warnings) = d.finish();
        assert!(warnings.is_empty());
        let mut worst = all.clone();
        worst.sort_by_key(|x| Reverse(x.latency_ns));
        worst.truncate(MAX_EXPLANATIONS_KEPT);
        worst.sort_by_key(|x| x.time_ns);
        assert_eq!(digest.explained, worst);
        assert_eq!(digest.causes.all, 5000);
        assert_eq!(digest.causes.culprits[0].count, 5000);
        assert!(digest.explained_cut());
    }

    /// Culprits past the cap are counted apart, never kept.
    #[test]
    fn culprits_past_the_cap_are_counted_apart() {
        let mut tally = Tally::default();
        for k in 0..crate::report::causes::MAX_CULPRITS + 7 {
            tally.add(&explanation(k as u64, 1000, &format!("task-{k}")));
        }
        let t = tally.finish();
        assert_eq!(t.culprits.len(), crate::report::causes::MAX_CULPRITS);
        assert_eq!((t.all, t.untallied), (1007, 7));
    }
}

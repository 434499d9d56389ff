//! What a run measured (run.json `kind`), and the one place that says what differs between
//! kinds. Each kind is one file here holding one [`Kind`]: its words (what a sample is, its
//! unit, its columns), what its samples mean (a wakeup due on a period, or time lost in a loop
//! that never sleeps), what its thread's trace carries, its metric families. Every renderer,
//! exporter, the recorder and the session ask the kind ([`RunKind::spec`]) a question with a
//! name, never "which kind is this?": a new kind is one file and one row of `kinds!`
//! (`tests/offline/kinds.rs` fails on a kind named anywhere else but the one dispatch of
//! the measuring loops and the producers it lists).
//!
//! A kind `jitterlab run --kind` measures says so in its file (`Kind::run`): its help line,
//! and where its settings come from. A kind measured by its period alone also holds its loop
//! there (a `measure::MeasuringLoop`, this layer being above `measure`), and `plan::build` makes its
//! plan from that declaration with `run`'s options: such a kind is its file and its row, and
//! nothing else (`tests/offline/kinds.rs`).

use crate::measure::{Clock, MeasuringLoop};
use serde::{Deserialize, Serialize};

/// Every kind: its variant of [`RunKind`] (lowercased, the name run.json stores) and the file
/// that holds its [`Kind`]. One row per kind.
macro_rules! kinds {
    ($($(#[$attr:meta])* $variant:ident => $file:ident,)+) => {
        $(mod $file;)+

        /// What a run measured. Files written before this field are latency runs.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
        #[serde(rename_all = "lowercase")]
        pub enum RunKind {
            $($(#[$attr])* $variant,)+
        }

        impl RunKind {
            /// Every kind, in the order run.json's documentation lists them (the default
            /// first).
            pub(crate) const ALL: &'static [RunKind] = &[$(RunKind::$variant,)+];

            /// What differs for this kind: its words, its samples' meaning, its metrics.
            pub fn spec(self) -> &'static Kind {
                match self {
                    $(RunKind::$variant => &$file::KIND,)+
                }
            }
        }
    };
}

kinds! {
    /// Wakeup latency (`jitterlab run`): each sample is how late a wakeup came.
    #[default]
    Latency => latency,
    /// OS noise (`jitterlab noise`): each sample is a gap in a loop that never sleeps.
    Noise => noise,
}

/// One kind of measurement: everything a view, an exporter, the recorder or the session
/// needs to know that is not the same for every kind.
#[derive(Debug)]
pub struct Kind {
    /// Its words for samples and figures.
    pub words: Vocabulary,
    /// Whether its samples are wakeups due on a period with a deadline: missed periods,
    /// deadline misses and the share within the deadline are its figures. A loop that never
    /// sleeps has none (run.json's fields for them are placeholders, docs/noise.md).
    pub(crate) periodic: bool,
    /// Whether a sample is time lost (a gap in a loop that never sleeps): the recorder sums
    /// the samples of each interval into noise, and the views show the noise share, the time
    /// lost and gaps per second (`report/noise.rs`) where a periodic kind shows percentiles.
    pub(crate) time_lost: bool,
    /// Whether a sample has a timer IRQ latency under `--trace` (the timer that woke it):
    /// the latency split, the interval log's IRQ tags. A gap has no timer.
    pub(crate) irq_split: bool,
    /// Whether a sample's `missed` field marks real-time throttling (`measure::noise::
    /// THROTTLED`, kept in the sample log but counted in no figure) instead of periods missed.
    pub(crate) missed_marks_throttling: bool,
    /// Whether its thread reads the clock past the run's end (a loop that checks the end only
    /// every so many iterations): its last interval ends at its last read, so that every
    /// sample it logged lies in an interval.
    pub(crate) reads_past_end: bool,
    /// Whether its measuring threads never sleep (a loop that spins on its CPU): a real-time
    /// drain side on their CPUs would wait behind them and be throttled with them, so the plan
    /// runs the drain at normal priority, refuses a fixed `--drain-priority`, and counts their
    /// CPUs as spinning in the drain's contention check (plan/build/shared.rs).
    pub(crate) spins: bool,
    /// Its OpenMetrics families (`export --format openmetrics`, `monitor`'s `/metrics`).
    pub metrics: SampleFamilies,
    /// How `jitterlab run --kind <name>` measures it; None: `run` does not (a kind of results
    /// only, or one with a command of its own, as `noise`).
    pub(crate) run: Option<RunMeasured>,
}

/// A kind `jitterlab run --kind` measures: the line `run --help` gives it, and where its
/// settings come from.
#[derive(Debug)]
pub(crate) struct RunMeasured {
    /// What `run --help` says of it.
    pub(crate) help: &'static str,
    /// Its settings.
    pub(crate) settings: RunSettings,
}

/// Where a kind that `run` measures takes its settings from.
#[derive(Debug)]
pub(crate) enum RunSettings {
    /// `run`'s latency group (`--wake`, `--clock`, `--deadline`, `--distance`, the IPC
    /// senders, the inversion scenario), resolved by `plan/build/latency.rs`: options whose
    /// checks need the layers above this one (the wake methods' rows against the CPUs, the
    /// trace, the loads' priorities).
    LatencyGroup,
    /// `run`'s period alone (`--interval`; `--loops` through [`PeriodThread::loops`]): the
    /// plan's shared builder (`plan/build/period.rs`) makes the plan, with `run`'s shared groups
    /// and policy, from this declaration. Its thread's deadline is its period.
    #[allow(
        dead_code,
        reason = "no kind of main is measured by its period alone yet: this is the one declaration such a kind adds, in its file (issue 41's toy, branch s56-A-toy); allowed rather than expected, which would fail once a kind uses it"
    )]
    Period {
        /// The clock of the run's timeline, which the loop's samples are on.
        clock: Clock,
        /// The loop a measuring thread runs.
        thread_loop: fn(PeriodThread) -> Box<dyn MeasuringLoop>,
    },
}

/// What the plan gives one thread of a kind measured by its period ([`RunSettings::Period`]).
#[derive(Debug, Clone, Copy)]
#[allow(
    dead_code,
    reason = "read by the loop of a kind measured by its period alone, of which main has none yet (see RunSettings::Period)"
)]
pub(crate) struct PeriodThread {
    /// `--interval`, ns.
    pub(crate) interval_ns: u64,
    /// `--loops`: stop after this many samples; None: at the gate's end time.
    pub(crate) loops: Option<u64>,
}

/// The words for a kind's samples and figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vocabulary {
    /// The name run.json stores (`kind`) and the interval log's header says.
    pub name: &'static str,
    /// The command that measures it: "jitterlab run" or "jitterlab noise".
    pub command: &'static str,
    /// How its samples are taken, as a summary's heading names it (`sleeps of ...`); None:
    /// by the wake method run.json names (`plan.wake`), said `wake <method>`.
    pub(crate) taken_by: Option<&'static str>,
    /// What one run of it is, as a comparison's refusal to mix kinds says it.
    pub run: &'static str,
    /// A run's tag in a comparison's list of runs ("" for the default kind).
    pub(crate) run_tag: &'static str,
    /// One sample's value, short, as in column names and figure names: "latency" or "gap".
    pub sample: &'static str,
    /// The value capitalised, as a figure's title starts: "Latency" or "Gap".
    pub title: &'static str,
    /// The value on a plot's axis: "latency" or "gap length".
    pub value: &'static str,
    /// The value with its sample: "wakeup latency" or "gap length".
    pub sample_value: &'static str,
    /// The samples counted: "wakeups" or "gaps".
    pub(crate) plural: &'static str,
    /// The samples counted in a table's count column: "samples" or "gaps".
    pub counted: &'static str,
    /// The worst samples, as a list of them says: "latest wakeups" or "longest gaps".
    pub worst: &'static str,
    /// The value as a comparison names it where it must ("gap length"); None for the kind
    /// whose value a comparison has always left unsaid (latency).
    pub compared: Option<&'static str>,
    /// What the trace explained: "spikes" or "gaps".
    pub explained: &'static str,
    /// How a sample exceeds x: "later" (a wakeup) or "longer" (a gap).
    pub(crate) exceeds: &'static str,
    /// The sample export's CSV header (`export --format csv`), every column with its unit.
    pub(crate) csv_header: &'static str,
    /// The column export's header (`export --format columns`).
    pub(crate) columns_header: &'static str,
}

/// One OpenMetrics family: what `# HELP` and `# TYPE` say.
#[derive(Debug)]
pub struct MetricFamily {
    /// The metric's name.
    pub name: &'static str,
    /// Its type: "histogram", "gauge", "counter", "untyped".
    pub kind: &'static str,
    /// Its `# HELP` text.
    pub help: &'static str,
}

/// The families whose meaning depends on what the run measured: the same shape, named and
/// described for each kind, so that a dashboard never takes one for another.
#[derive(Debug)]
pub struct SampleFamilies {
    /// The samples' histogram.
    pub histogram: MetricFamily,
    /// The largest sample.
    pub max: MetricFamily,
    /// The quantiles of the samples.
    pub quantile: MetricFamily,
    /// The samples counted.
    pub samples: MetricFamily,
    /// The records the recorder lost.
    pub dropped: MetricFamily,
    /// Whether the budget holds.
    pub budget: MetricFamily,
}

impl RunKind {
    /// The words for this kind's samples and figures.
    pub fn words(self) -> &'static Vocabulary {
        &self.spec().words
    }

    /// The name run.json stores (`kind`) and the interval log's header says.
    pub fn name(self) -> &'static str {
        self.words().name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// run.json's `kind` is the vocabulary's name, both ways.
    #[test]
    fn the_stored_name_is_the_vocabularys() {
        for &kind in RunKind::ALL {
            let stored = serde_json::to_string(&kind).unwrap();
            assert_eq!(stored, format!("\"{}\"", kind.name()));
            assert_eq!(serde_json::from_str::<RunKind>(&stored).unwrap(), kind);
        }
    }

    /// Each header names the kind's sample and gives every value its unit.
    #[test]
    fn headers_name_the_sample_with_units() {
        for &kind in RunKind::ALL {
            let w = kind.words();
            assert!(
                w.csv_header.contains(&format!("{}_ns", w.sample)),
                "{}",
                w.csv_header
            );
            assert!(w.columns_header.contains(&format!("{}_us", w.sample)));
            for column in w
                .csv_header
                .split(',')
                .filter(|c| *c != "cpu" && *c != "seq")
            {
                assert!(
                    ["_ns", "_s", "_periods", "throttled"]
                        .iter()
                        .any(|u| column.ends_with(u)),
                    "{column} has no unit"
                );
            }
        }
    }

    /// Each kind's metric families are its own (a dashboard never takes one kind's samples
    /// for another's), but for the two whose meaning is the same for every kind.
    #[test]
    fn metric_families_are_distinct_per_kind() {
        for (i, a) in RunKind::ALL.iter().enumerate() {
            for b in &RunKind::ALL[i + 1..] {
                let (a, b) = (&a.spec().metrics, &b.spec().metrics);
                for (x, y) in [
                    (&a.histogram, &b.histogram),
                    (&a.max, &b.max),
                    (&a.quantile, &b.quantile),
                    (&a.samples, &b.samples),
                ] {
                    assert_ne!(x.name, y.name);
                }
            }
        }
    }
}

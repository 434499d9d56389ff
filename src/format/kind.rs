//! What a run measured (run.json `kind`), and the one place that gives each kind its words:
//! what a sample is called, its value, its columns and units, the command that made it. Every
//! renderer and exporter takes its words from [`RunKind::words`], so that a third kind is
//! one more [`Vocabulary`] here, not a branch in each table, plot and file.

use serde::{Deserialize, Serialize};

/// What a run measured. Files written before this field are latency runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunKind {
    /// Wakeup latency (`jitterlab run`): each sample is how late a wakeup came.
    #[default]
    Latency,
    /// OS noise (`jitterlab noise`): each sample is a gap in a loop that never sleeps.
    Noise,
}

/// The words for a kind's samples and figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vocabulary {
    /// The name run.json stores (`kind`) and the interval log's header says.
    pub name: &'static str,
    /// The command that measures it: "jitterlab run" or "jitterlab noise".
    pub command: &'static str,
    /// One sample's value, short, as in column names and figure names: "latency" or "gap".
    pub sample: &'static str,
    /// The value on a plot's axis: "latency" or "gap length".
    pub value: &'static str,
    /// The value with its sample: "wakeup latency" or "gap length".
    pub sample_value: &'static str,
    /// The samples counted: "wakeups" or "gaps".
    pub plural: &'static str,
    /// How a sample exceeds x: "later" (a wakeup) or "longer" (a gap).
    pub exceeds: &'static str,
    /// The sample export's CSV header (`export --format csv`), every column with its unit.
    pub csv_header: &'static str,
    /// The column export's header (`export --format columns`).
    pub columns_header: &'static str,
}

const LATENCY: Vocabulary = Vocabulary {
    name: "latency",
    command: "jitterlab run",
    sample: "latency",
    value: "latency",
    sample_value: "wakeup latency",
    plural: "wakeups",
    exceeds: "later",
    csv_header: "cpu,seq,expected_ns,time_s,latency_ns,irq_latency_ns,missed_periods",
    columns_header: "# time_s latency_us irq_latency_us",
};

const NOISE: Vocabulary = Vocabulary {
    name: "noise",
    command: "jitterlab noise",
    sample: "gap",
    value: "gap length",
    sample_value: "gap length",
    plural: "gaps",
    exceeds: "longer",
    // A gap's `missed` field is its throttling mark (docs/noise.md).
    csv_header: "cpu,seq,start_ns,time_s,gap_ns,irq_latency_ns,throttled",
    // A gap has no IRQ latency: the third column is `-`.
    columns_header: "# time_s gap_us irq_latency_us",
};

impl RunKind {
    /// Every kind, in the order run.json's documentation lists them.
    pub const ALL: [RunKind; 2] = [RunKind::Latency, RunKind::Noise];

    /// The words for this kind's samples and figures.
    pub fn words(self) -> &'static Vocabulary {
        match self {
            RunKind::Latency => &LATENCY,
            RunKind::Noise => &NOISE,
        }
    }

    pub(crate) fn is_noise(self) -> bool {
        self == RunKind::Noise
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
        for kind in RunKind::ALL {
            let stored = serde_json::to_string(&kind).unwrap();
            assert_eq!(stored, format!("\"{}\"", kind.name()));
            assert_eq!(serde_json::from_str::<RunKind>(&stored).unwrap(), kind);
        }
    }

    /// Each header names the kind's sample and gives every value its unit.
    #[test]
    fn headers_name_the_sample_with_units() {
        for kind in RunKind::ALL {
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
}

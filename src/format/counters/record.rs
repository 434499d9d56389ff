//! run.json's `counters` object: where the counters are, what reading them cost, and what
//! moved with the late wakeups (docs/counters.md, docs/result-format.md).

/// run.json `counters`: where the counters are, what reading them cost, and what moved with
/// the late wakeups (docs/counters.md).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CountersRecord {
    /// The file in the result directory ([`super::FILE_NAME`]); None when none was written (a
    /// segmented run: `/metrics` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Reads made (one per interval boundary, plus the first and the last).
    pub reads: u64,
    /// Time the drain side spent per read (every source of every measured CPU), ns: mean and
    /// largest.
    pub(crate) read_mean_ns: u64,
    pub(crate) read_max_ns: u64,
    /// The counters this system does not offer, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub absent: Vec<AbsentRecord>,
    /// Log intervals not written to the file: it had reached its budget
    /// (`format::counters::WRITTEN_MAX_BYTES`); the last ones of the run. Absent when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) intervals_not_written: u64,
    /// Per measured CPU: the intervals with a late wakeup against the others.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) correlation: Vec<CpuCorrelation>,
    /// Why there is no correlation (no counters file, no interval log...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) correlation_refused: Option<String>,
}

/// A counter this system does not offer, in run.json.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AbsentRecord {
    pub counter: String,
    pub reason: String,
}

/// One CPU's late intervals against the others (analysis::counters).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CpuCorrelation {
    pub cpu: usize,
    /// A late interval holds a wakeup later than this (its maximum in latency.hlog is above
    /// it), ns.
    pub threshold_ns: u64,
    /// What the threshold is: `deadline` (the thread's `--deadline`, else its interval).
    pub(crate) threshold_basis: String,
    /// Intervals with and without a late wakeup, among those used.
    pub(crate) late_intervals: u64,
    pub(crate) other_intervals: u64,
    /// Intervals left out: their counters were read too far from the interval's boundaries,
    /// or the interval has no counters line or no histogram.
    pub(crate) left_out_intervals: u64,
    /// Counters tested (those that were not the same in every interval used).
    pub tested: u64,
    /// The significance level for the whole CPU; each counter is held to `alpha / tested`
    /// (Bonferroni).
    pub(crate) alpha: f64,
    /// The counters that differ significantly, the smallest p first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub moved: Vec<CounterShift>,
    /// Why this CPU was not tested (no late interval, or no other).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

/// How one counter differed between the late intervals and the others.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CounterShift {
    pub counter: String,
    pub late: GroupFigures,
    pub other: GroupFigures,
    /// Two-sided Mann-Whitney U test.
    pub u: f64,
    pub p: f64,
    /// `exact` or `normal approximation`.
    pub method: String,
}

/// A counter's values over a group of intervals (each value is one interval's change, or
/// reading for a gauge).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GroupFigures {
    pub intervals: u64,
    pub min: i64,
    pub median: f64,
    pub mean: f64,
    pub max: i64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

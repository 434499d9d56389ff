//! The tail figures of one thread in run.json (issue 16, docs/tails.md): shares within
//! thresholds, spikes with their rate and period, the worst (m,k)-firm windows and the
//! extrapolated worst case. All optional: files written before them read as empty.

use serde::{Deserialize, Serialize};

/// A thread's tail figures, flattened into its `threads[]` entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadTails {
    /// One per `--under` threshold (and the limits budgets name), ascending.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub within: Vec<WithinRecord>,
    /// One per spike threshold (the deadline and 10x the median), ascending.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spikes: Vec<SpikeRecord>,
    /// One per k that a `firm(m,k)` budget clause names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub firm: Vec<FirmRecord>,
    /// The extrapolated worst case, or why there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail: Option<TailRecord>,
}

/// Wakeups at or below a threshold, and above it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WithinRecord {
    pub threshold_ns: u64,
    pub within: u64,
    pub above: u64,
    /// Wakeups whose side is unknown (only when counted from a histogram bucket that straddles
    /// the threshold); 0 when counted from the samples.
    pub undecided: u64,
}

impl WithinRecord {
    /// All wakeups counted.
    pub fn total(&self) -> u64 {
        self.within + self.above + self.undecided
    }

    /// The share within in percent, undecided wakeups counted as above (the conservative side).
    pub(crate) fn percent_within(&self) -> Option<f64> {
        (self.total() > 0).then(|| 100.0 * self.within as f64 / self.total() as f64)
    }
}

/// Spikes over a threshold: runs of consecutive late wakeups, each counted once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpikeRecord {
    pub threshold_ns: u64,
    /// Why this threshold: `deadline` or `10x median`.
    pub(crate) basis: String,
    pub count: u64,
    /// True when several spikes may have counted as one (from per-interval maxima).
    pub(crate) count_is_lower_bound: bool,
    /// Spike times are known to within this.
    pub(crate) resolution_ns: u64,
    /// The time the spikes were counted over: a wakeup thread's time observed, from the
    /// first due time to the end of its latest wakeup (due time plus latency); a noise
    /// thread's measured time.
    pub(crate) exposure_ns: u64,
    pub(crate) rate_per_hour: f64,
    /// Exact (Garwood) 95 % Poisson interval of the rate.
    pub(crate) rate_per_hour_low: f64,
    pub(crate) rate_per_hour_high: f64,
    /// Mean time between spikes; absent without spikes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) mtbf_ns: Option<u64>,
    /// The dominant period of the spike times, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) period_ns: Option<f64>,
    /// Share (0..1) of the spikes on the period's grid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) period_share: Option<f64>,
    /// Spike times since the run's first due time (ns), the first spikes', at most
    /// [`SPIKE_TIMES_KEPT`] and fewer when run.json's value budget needs it
    /// (`format::record_budget`); the report draws them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) times_ns: Vec<u64>,
    /// Spikes counted whose times are not in `times_ns` (`count` less the times kept), set by
    /// the writer of run.json; 0 (absent) when every time is there, and in older files.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) times_omitted: u64,
    /// Why the spikes were not counted (the threshold lies below the wakeups the recorder
    /// kept in order); the other fields are then zero.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) not_counted: Option<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Spike times kept per threshold in run.json (the count goes on beyond).
pub(crate) const SPIKE_TIMES_KEPT: usize = 10_000;

/// The worst window of k consecutive periods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FirmRecord {
    pub k: u64,
    pub(crate) worst_misses: u64,
    /// Number (0-based) of the window's first period.
    pub(crate) worst_first_period: u64,
    /// The window's length: k, or all periods when the run had fewer.
    pub(crate) window_periods: u64,
}

/// The extrapolated worst case: a fit, or the check that refused it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TailRecord {
    Fitted(TailFitRecord),
    Refused { refused: String, reason: String },
}

/// A generalized Pareto fit over a threshold (docs/tails.md); extrapolated, not measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TailFitRecord {
    /// Always `pot-gpd-mle`.
    pub method: String,
    pub threshold_ns: u64,
    pub(crate) exceedances: u64,
    pub(crate) clusters: u64,
    pub(crate) extremal_index: f64,
    pub(crate) shape: f64,
    #[serde(default)]
    pub(crate) shape_low: Option<f64>,
    #[serde(default)]
    pub(crate) shape_high: Option<f64>,
    pub(crate) scale_ns: f64,
    pub(crate) anderson_darling: f64,
    /// Levels are extrapolated to at most this many times the run's wakeups (0 in files
    /// written before the limit).
    #[serde(default)]
    pub(crate) exposure_factor: u64,
    /// The wakeups the fit saw (0 in files written before the limit).
    #[serde(default)]
    pub wakeups: u64,
    pub levels: Vec<TailLevelRecord>,
    /// Always true: a reminder to every reader.
    pub(crate) extrapolated: bool,
}

/// The latency exceeded with probability `per_wakeup` per wakeup, or why it is not given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TailLevelRecord {
    pub(crate) per_wakeup: f64,
    /// None (null) when refused.
    pub latency_ns: Option<f64>,
    /// 95 % profile-likelihood interval, containing `latency_ns`; a null upper end: unbounded
    /// (the data do not bound it). Both null when refused.
    pub(crate) low_ns: Option<f64>,
    pub(crate) high_ns: Option<f64>,
    /// Why there is no level (beyond the exposure factor, or too large to write).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

//! The figures of a run that budgets judge and comparisons compare, with their names and units.

use crate::format::run_record::ThreadSummary;
use crate::units::format_ns;

/// A figure of a run, per CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    Min,
    Mean,
    Stddev,
    P50,
    P90,
    P99,
    P999,
    P9999,
    Max,
    Missed,
    Dropped,
    DeadlineMisses,
    /// `under(250us)`: the share of wakeups at or below the threshold (ns), in percent.
    Under(u64),
    /// `firm(m,k)`: the most deadline misses in any k consecutive periods (the clause's m is
    /// its limit, `<=`).
    Firm(u64),
    /// `spikes(100us)`: spikes over the threshold (ns) in the run, a run of late wakeups
    /// counted once.
    Spikes(u64),
    /// `spikes(100us)/h`: the same spikes per hour of the run.
    SpikeRate(u64),
    /// Noise runs: the share of the CPU taken by gaps above the threshold, percent.
    NoisePct,
}

/// Every metric with its name in the grammar, in the order the docs list them.
pub(crate) const METRICS: &[(&str, Metric)] = &[
    ("min", Metric::Min),
    ("mean", Metric::Mean),
    ("stddev", Metric::Stddev),
    ("p50", Metric::P50),
    ("p90", Metric::P90),
    ("p99", Metric::P99),
    ("p99.9", Metric::P999),
    ("p99.99", Metric::P9999),
    ("max", Metric::Max),
    ("missed", Metric::Missed),
    ("dropped", Metric::Dropped),
    ("deadline_misses", Metric::DeadlineMisses),
    ("noise_pct", Metric::NoisePct),
];

impl Metric {
    /// The metric's name in the grammar; `under` and `firm` without their parameters (see
    /// [`Metric::label`]).
    pub fn name(self) -> &'static str {
        match self {
            Metric::Under(_) => "under",
            Metric::Firm(_) => "firm",
            Metric::Spikes(_) => "spikes",
            Metric::SpikeRate(_) => "spikes/h",
            _ => METRICS
                .iter()
                .find(|(_, m)| *m == self)
                .map(|(n, _)| *n)
                .expect("every fixed metric is listed"),
        }
    }

    /// The metric as people read it, with its parameters: `under(250.0 us)`, `firm(k=10)`.
    pub fn label(self) -> String {
        match self {
            Metric::Under(t) => format!("under({})", format_ns(t)),
            Metric::Firm(k) => format!("firm(k={k})"),
            Metric::Spikes(t) => format!("spikes({})", format_ns(t)),
            Metric::SpikeRate(t) => format!("spikes({})/h", format_ns(t)),
            _ => self.name().into(),
        }
    }

    /// Counts of events (periods, records, wakeups) rather than latencies or shares.
    pub(crate) fn is_count(self) -> bool {
        matches!(
            self,
            Metric::Missed | Metric::Dropped | Metric::DeadlineMisses
        )
    }

    /// A share in percent (`noise_pct`), written as a decimal number with or without `%`.
    pub(crate) fn is_percent(self) -> bool {
        self == Metric::NoisePct
    }

    /// The quantile of a percentile metric (0.999 for p99.9).
    pub fn quantile(self) -> Option<f64> {
        match self {
            Metric::P50 => Some(0.50),
            Metric::P90 => Some(0.90),
            Metric::P99 => Some(0.99),
            Metric::P999 => Some(0.999),
            Metric::P9999 => Some(0.9999),
            _ => None,
        }
    }

    /// Parses a metric name of the grammar (`p99.9`, `max`...).
    pub fn parse(name: &str) -> Option<Metric> {
        METRICS.iter().find(|(n, _)| *n == name).map(|(_, m)| *m)
    }

    /// Latency metrics take a duration with a unit; the others are counts or a share.
    pub(crate) fn is_latency(self) -> bool {
        !self.is_count()
            && !self.is_percent()
            && !matches!(
                self,
                Metric::Under(_) | Metric::Firm(_) | Metric::Spikes(_) | Metric::SpikeRate(_)
            )
    }

    /// The name of the run.json thread field a count metric reads (what `imported.absent`
    /// lists when the source had no such figure).
    pub(crate) fn count_field(self) -> Option<&'static str> {
        match self {
            Metric::Missed => Some("missed_periods"),
            Metric::Dropped => Some("dropped_records"),
            Metric::DeadlineMisses => Some("deadline_misses"),
            _ => None,
        }
    }

    /// The thread's value of this metric: ns for latency metrics, a count otherwise. None when
    /// the thread has no samples or the figure is absent from an imported source.
    pub fn value(self, t: &ThreadSummary, absent: &[String]) -> Option<f64> {
        let l = &t.latency;
        if let Some(field) = self.count_field()
            && absent.iter().any(|a| a == field)
        {
            return None;
        }
        match self {
            Metric::Min => l.min_ns.map(|v| v as f64),
            Metric::Mean => l.mean_ns,
            Metric::Stddev => l.stddev_ns,
            Metric::P50 => l.p50_ns.map(|v| v as f64),
            Metric::P90 => l.p90_ns.map(|v| v as f64),
            Metric::P99 => l.p99_ns.map(|v| v as f64),
            Metric::P999 => l.p999_ns.map(|v| v as f64),
            Metric::P9999 => l.p9999_ns.map(|v| v as f64),
            Metric::Max => l.max_ns.map(|v| v as f64),
            Metric::Missed => Some(t.missed_periods as f64),
            Metric::Dropped => Some(t.dropped_records as f64),
            Metric::DeadlineMisses => Some(t.deadline_misses as f64),
            Metric::Under(threshold) => t
                .tails
                .within
                .iter()
                .find(|w| w.threshold_ns == threshold)
                .and_then(|w| w.percent_within()),
            Metric::Firm(k) => t
                .tails
                .firm
                .iter()
                .find(|f| f.k == k)
                .map(|f| f.worst_misses as f64),
            Metric::Spikes(threshold) => spikes_over(t, threshold).map(|s| s.count as f64),
            Metric::SpikeRate(threshold) => spikes_over(t, threshold).map(|s| s.rate_per_hour),
            // Absent from an imported source that does not state it (rtla osnoise hist, oslat).
            Metric::NoisePct => t
                .noise
                .as_ref()
                .filter(|_| !absent.iter().any(|a| a == "noise.noise_pct"))
                .map(|n| n.noise_pct),
        }
    }

    /// A value of this metric for people: latencies with a unit, counts as integers.
    pub fn format(self, value: f64) -> String {
        if self.is_latency() {
            format_latency(value)
        } else if let Metric::Under(_) = self {
            format!("{value:.3} %")
        } else if let Metric::SpikeRate(_) = self {
            format!("{value:.2}/h")
        } else if self.is_percent() {
            format!("{value:.4} %")
        } else {
            format!("{}", value.round() as i64)
        }
    }
}

/// The thread's exact spike count over `threshold_ns` (the recorder's, not an estimate from
/// interval maxima), if it was counted.
fn spikes_over(t: &ThreadSummary, threshold_ns: u64) -> Option<&crate::format::tails::SpikeRecord> {
    t.tails.spikes.iter().find(|s| {
        s.threshold_ns == threshold_ns && s.not_counted.is_none() && !s.count_is_lower_bound
    })
}

/// Formats a latency in ns that may be negative or fractional (a mean), with a unit.
pub(crate) fn format_latency(ns: f64) -> String {
    let magnitude = format_ns(ns.abs().round() as u64);
    if ns < 0.0 && ns.round() != 0.0 {
        format!("-{magnitude}")
    } else {
        magnitude
    }
}

//! The noise side of run.json (`jitterlab noise`): each thread's noise figures. Specified in docs/result-format.md and docs/noise.md.

use serde::{Deserialize, Serialize};

/// One noise thread's figures besides the gap statistics (which are the thread's usual
/// `samples`, percentiles and `max_ns`: one sample per gap above the threshold; `max_ns` is
/// the longest gap).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoiseSummary {
    /// From the loop's first clock read to its last, ns: the time measured.
    pub measured_ns: u64,
    /// The sum of the gaps above the threshold, ns (throttled gaps excluded).
    pub noise_ns: u64,
    /// `noise_ns` as a share of `measured_ns`, percent: the share of the time lost.
    pub(crate) noise_pct: f64,
    /// `noise_ns` per second of `measured_ns`, ns/s (oslat's and osnoise's way of saying it).
    /// Absent in files written before it; an import has it where the source states the share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) noise_ns_per_s: Option<f64>,
    /// Gaps above the threshold per second of `measured_ns`.
    pub(crate) gaps_per_s: f64,
    /// Clock reads of the loop (each one iteration).
    pub(crate) iterations: u64,
    /// The mean cost of one undisturbed iteration: the time not in gaps above the threshold
    /// (noise or throttled) over `iterations`, ns. The shortest gap the loop can see is about
    /// this.
    pub(crate) iteration_ns: f64,
    /// Gaps counted as real-time throttling (see docs/noise.md) rather than noise: their number
    /// and total length, ns. 0 unless the run used a real-time policy with throttling on.
    pub(crate) throttled_gaps: u64,
    pub(crate) throttled_ns: u64,
    /// The clock the loop read and its calibration (absent in imports and older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<LoopClock>,
    /// Gaps longer than the threshold and than each of 10 us, 100 us, 1 ms and 10 ms above it
    /// (and each `spikes(...)` budget threshold), counted exactly, per second of
    /// `measured_ns`; empty in imports and older files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gaps_over: Vec<GapsOver>,
}

/// The gaps of a noise thread longer than one length (`noise.gaps_over`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GapsOver {
    pub threshold_ns: u64,
    /// Gaps longer than `threshold_ns` (throttled gaps excluded), exactly.
    pub gaps: u64,
    /// `gaps` per second of the time measured, with its 95 % interval (Poisson, as the spike
    /// rates of docs/tails.md).
    pub(crate) gaps_per_s: f64,
    pub(crate) gaps_per_s_low: f64,
    pub(crate) gaps_per_s_high: f64,
}

impl GapsOver {
    /// A noise thread's gap counts from its spike records (each gap counted on its own, the
    /// exposure the time measured); records not counted, or counted only as a lower bound,
    /// are left out.
    pub(crate) fn from_spikes(spikes: &[super::tails::SpikeRecord]) -> Vec<GapsOver> {
        spikes
            .iter()
            .filter(|s| s.not_counted.is_none() && !s.count_is_lower_bound && s.exposure_ns > 0)
            .map(|s| GapsOver {
                threshold_ns: s.threshold_ns,
                gaps: s.count,
                gaps_per_s: s.count as f64 * 1e9 / s.exposure_ns as f64,
                gaps_per_s_low: s.rate_per_hour_low / 3600.0,
                gaps_per_s_high: s.rate_per_hour_high / 3600.0,
            })
            .collect()
    }
}

/// What a noise loop read (`noise --clock`), and how its ticks were converted to
/// CLOCK_MONOTONIC (docs/noise.md).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LoopClock {
    /// `tsc`, `cntvct` (the CPU's counter) or `monotonic`.
    pub source: LoopClockSource,
    /// The calibrated rate, ticks per second (1e9 for `monotonic`).
    pub(crate) ticks_per_s: f64,
    /// Recalibrations during the run.
    pub(crate) recalibrations: u64,
    /// The largest error of the conversion that a recalibration found and corrected, ns.
    pub(crate) largest_correction_ns: u64,
}

/// [`LoopClock::source`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoopClockSource {
    Monotonic,
    Tsc,
    Cntvct,
}

impl NoiseSummary {
    /// The figures of a loop that ran `measured_ns` for `iterations` reads, with `gaps` gaps
    /// of noise summing to `noise_ns` and `throttled_gaps` of throttling summing to
    /// `throttled_ns`.
    pub fn new(
        measured_ns: u64,
        iterations: u64,
        (gaps, noise_ns): (u64, u64),
        (throttled_gaps, throttled_ns): (u64, u64),
    ) -> Self {
        let per = |x: f64, of: u64| if of == 0 { 0.0 } else { x / of as f64 };
        let undisturbed = measured_ns.saturating_sub(noise_ns + throttled_ns);
        NoiseSummary {
            measured_ns,
            noise_ns,
            noise_pct: 100.0 * per(noise_ns as f64, measured_ns),
            noise_ns_per_s: Some(1e9 * per(noise_ns as f64, measured_ns)),
            gaps_per_s: 1e9 * per(gaps as f64, measured_ns),
            iterations,
            iteration_ns: per(undisturbed as f64, iterations),
            throttled_gaps,
            throttled_ns,
            clock: None,
            gaps_over: Vec::new(),
        }
    }
}

/// One log interval of one noise thread (`noise_interval` in events.jsonl; docs/noise.md): the
/// exact noise time and gap count of the interval whose histogram latency.hlog holds under the
/// same CPU's tag and start. Gaps are placed by their start, as in the histograms; throttled
/// gaps are left out. Without dropped records a CPU's intervals sum to its `noise_ns` and its
/// gap count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoiseInterval {
    /// The end of the interval (CLOCK_MONOTONIC), ns.
    pub time_ns: u64,
    pub cpu: usize,
    /// The interval's start from the interval log's start (its hlog `StartTimestamp`), ns.
    pub offset_ns: u64,
    /// Its length (the last interval of a run may be shorter), ns.
    pub length_ns: u64,
    /// Gaps above the threshold that began in it.
    pub gaps: u64,
    /// Their total length, ns.
    pub noise_ns: u64,
}

impl NoiseInterval {
    /// `noise_ns` as a share of the interval, percent.
    pub(crate) fn noise_pct(&self) -> f64 {
        100.0 * self.noise_ns as f64 / self.length_ns.max(1) as f64
    }
}

/// One cause of a noise thread's gaps (`noise --trace`; docs/noise.md): what took the CPU,
/// and how much of the explained gaps' time it got. The causes of a thread sum to the time of
/// its explained gaps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoiseCause {
    /// `irq`, `softirq`, `nmi`, `task`, or `no_event` (no trace event: hardware, firmware or
    /// hypervisor).
    pub kind: String,
    /// IRQ handler or vector name, softirq name, task comm, `NMI`, or `no trace event`.
    pub name: String,
    /// Tasks: pid, policy (`FIFO`, `RR`, `OTHER`, `DEADLINE`) and priority.
    pub pid: Option<i32>,
    pub policy: Option<String>,
    pub prio: Option<i32>,
    /// Time attributed to it, ns.
    pub time_ns: u64,
    /// Gaps it had a part in.
    pub count: u64,
    /// Its largest part of one gap, ns.
    pub max_ns: u64,
}

impl NoiseCause {
    /// How the report names it: "local_timer", "NET_RX softirq", "spinner (pid 12, FIFO 99)".
    pub fn label(&self) -> String {
        match self.kind.as_str() {
            "softirq" => format!("{} softirq", self.name),
            "task" => {
                let policy = match (&self.policy, self.prio) {
                    (Some(p), Some(prio)) => format!(", {p} {prio}"),
                    (Some(p), None) => format!(", {p}"),
                    _ => String::new(),
                };
                format!("{} (pid {}{policy})", self.name, self.pid.unwrap_or(-1))
            }
            _ => self.name.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_and_rates_follow_the_counts() {
        let s = NoiseSummary::new(2_000_000_000, 100_000_000, (50, 4_000_000), (1, 46_000_000));
        assert_eq!(s.noise_pct, 0.2);
        assert_eq!(s.noise_ns_per_s, Some(2_000_000.0), "4 ms in 2 s");
        assert_eq!(s.gaps_per_s, 25.0);
        assert_eq!(
            s.iteration_ns, 19.5,
            "1950 ms undisturbed over 100 M iterations"
        );
        let empty = NoiseSummary::new(0, 0, (0, 0), (0, 0));
        assert_eq!((empty.noise_pct, empty.iteration_ns), (0.0, 0.0));
    }

    #[test]
    fn old_files_read_as_latency_runs() {
        use crate::format::kind::RunKind;
        #[derive(Deserialize)]
        struct R {
            #[serde(default)]
            kind: RunKind,
        }
        let r: R = serde_json::from_str("{}").unwrap();
        assert_eq!(r.kind, RunKind::Latency);
        let r: R = serde_json::from_str(r#"{"kind":"noise"}"#).unwrap();
        assert_eq!(r.kind, RunKind::Noise);
    }
}

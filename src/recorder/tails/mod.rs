//! The tail counters the recorder keeps per thread (issue 16, docs/tails.md). The recorder
//! sees every sample in wakeup order, so it counts what the measuring loop must not: wakeups
//! within each `--under` threshold, spikes over the deadline (a run of late wakeups counted
//! once, with its due time), the (m,k)-firm windows (missed periods count as misses), and the
//! largest wakeups in order for the extrapolated worst case and for spike thresholds only known
//! at the end (10x the median). Everything here is bounded: a few counters per threshold, at
//! most [`SPIKE_TIMES_KEPT`] spike times, at most 2 × [`PEAKS_KEPT`] peaks.

use crate::analysis::tails::evt::{self, Peak};
use crate::analysis::tails::exceedance::Exceedance;
use crate::analysis::tails::firm::FirmWindow;
use crate::analysis::tails::interval_spikes;
use crate::analysis::tails::spikes::{Spike, SpikeTimes};
use crate::format::tails::{
    FirmRecord, SPIKE_TIMES_KEPT, SpikeRecord, TailFitRecord, TailLevelRecord, TailRecord,
    ThreadTails, WithinRecord,
};
use crate::measure::Sample;
use crate::plan::TailPlan;
use hdrhistogram::Histogram;

/// The largest wakeups kept in wakeup order: enough for every threshold candidate of the tail
/// fit (at most the top 2000) with room to spare.
pub(crate) const PEAKS_KEPT: usize = 20_000;
/// Per-wakeup probabilities of the extrapolated levels.
pub(crate) const TAIL_LEVELS: [f64; 3] = [1e-6, 1e-9, 1e-12];
/// Confidence of every interval in the tail figures.
pub const CONFIDENCE: f64 = 0.95;
/// The gap lengths a noise thread also counts gaps over (those above its threshold), basis
/// `ladder`: the decades an oslat or osnoise user reads noise in.
pub(crate) const NOISE_LADDER_NS: [u64; 4] = [10_000, 100_000, 1_000_000, 10_000_000];

/// Spikes over one threshold, counted as the samples come.
struct SpikeCounter {
    /// Why this threshold: `deadline` or `budget`.
    basis: &'static str,
    threshold_ns: u64,
    /// Count every sample over the threshold, consecutive or not (noise gaps).
    each_sample: bool,
    /// Every sample is over it: a noise thread's threshold, which the loop compared in its
    /// clock's ticks (a gap just over it may read a nanosecond under it once converted).
    all_over: bool,
    in_spike: bool,
    count: u64,
    /// Due times (since the run's start) of the first [`SPIKE_TIMES_KEPT`] spikes.
    times_ns: Vec<u64>,
}

/// The largest wakeups of the run in wakeup order: every wakeup above `level_ns` is kept; when
/// twice [`PEAKS_KEPT`] are held, the level rises to keep the largest [`PEAKS_KEPT`].
#[derive(Default)]
struct PeakKeeper {
    level_ns: u64,
    /// (wakeup number, due time since start, latency), in wakeup order.
    peaks: Vec<(u64, u64, u64)>,
}

impl SpikeCounter {
    fn new(basis: &'static str, threshold_ns: u64, each_sample: bool) -> Self {
        SpikeCounter {
            basis,
            threshold_ns,
            each_sample,
            all_over: false,
            in_spike: false,
            count: 0,
            times_ns: Vec::new(),
        }
    }

    /// Counts a wakeup due at `due_ns` (since the start) with `latency_ns`.
    fn push(&mut self, due_ns: u64, latency_ns: u64) {
        let late = self.all_over || latency_ns > self.threshold_ns;
        if late && (!self.in_spike || self.each_sample) {
            self.count += 1;
            if self.times_ns.len() < SPIKE_TIMES_KEPT {
                self.times_ns.push(due_ns);
            }
        }
        self.in_spike = late;
    }
}

impl PeakKeeper {
    fn push(&mut self, seq: u64, due_ns: u64, latency_ns: u64) {
        if latency_ns <= self.level_ns {
            return;
        }
        if self.peaks.capacity() == 0 {
            // Room for all it will hold, at once: growing by doubling copied the peaks (up to
            // a megabyte per thread) into each new allocation, on the drain's path.
            self.peaks.reserve_exact(2 * PEAKS_KEPT);
        }
        self.peaks.push((seq, due_ns, latency_ns));
        if self.peaks.len() >= 2 * PEAKS_KEPT {
            let mut latencies: Vec<u64> = self.peaks.iter().map(|p| p.2).collect();
            let (_, &mut nth, _) = latencies.select_nth_unstable_by(PEAKS_KEPT, |a, b| b.cmp(a));
            // Everything above the (PEAKS_KEPT+1)-th largest stays: at most PEAKS_KEPT.
            self.level_ns = self.level_ns.max(nth);
            let level = self.level_ns;
            self.peaks.retain(|p| p.2 > level);
        }
    }
}

/// One thread's tail counters.
pub(super) struct TailState {
    plan: TailPlan,
    deadline_ns: u64,
    start_ns: u64,
    within: Vec<(u64, u64)>,
    /// Over the deadline first, then over each `spikes(...)` budget threshold.
    spikes: Vec<SpikeCounter>,
    firm: Vec<FirmWindow>,
    peaks: PeakKeeper,
    last_seq: Option<u64>,
    /// Samples counted.
    recorded: u64,
    /// The time the thread has been observed, from the run's start to the end of its latest
    /// wakeup (due time plus latency), ns: the exposure of a wakeup thread's rates. Not
    /// wakeups × interval: a wakeup held off for 3.2 s is one wakeup and 3.2 s (issue 39 L-f,
    /// a starved CPU's "once in 1.00 ms").
    observed_ns: u64,
}

impl TailState {
    pub(super) fn new(plan: TailPlan, deadline_ns: u64, start_ns: u64) -> Self {
        TailState {
            within: plan.within_ns.iter().map(|&t| (t, 0)).collect(),
            firm: plan.firm_k.iter().map(|&k| FirmWindow::new(k)).collect(),
            // A noise thread's "deadline" is its threshold: every gap is over it.
            spikes: std::iter::once(SpikeCounter {
                all_over: plan.noise,
                ..SpikeCounter::new(
                    if plan.noise { "threshold" } else { "deadline" },
                    deadline_ns,
                    plan.noise,
                )
            })
            .chain(
                plan.spike_ns
                    .iter()
                    .filter(|&&t| t != deadline_ns)
                    .map(|&t| SpikeCounter::new("budget", t, plan.noise)),
            )
            .chain(
                NOISE_LADDER_NS
                    .iter()
                    .filter(|&&t| plan.noise && t > deadline_ns && !plan.spike_ns.contains(&t))
                    .map(|&t| SpikeCounter::new("ladder", t, true)),
            )
            .collect(),
            peaks: PeakKeeper::default(),
            plan,
            deadline_ns,
            start_ns,
            last_seq: None,
            recorded: 0,
            observed_ns: 0,
        }
    }

    /// (limit, wakeups over it, wakeups) so far, for the live view's "how long to run" line.
    pub(super) fn run_length_exceedances(&self) -> Option<(u64, u64, u64)> {
        let limit = self.plan.run_length_ns?;
        let &(_, within) = self.within.iter().find(|(t, _)| *t == limit)?;
        Some((limit, self.recorded - within, self.recorded))
    }

    /// Counts one sample (in wakeup order).
    pub(super) fn record(&mut self, s: &Sample) {
        let latency = s.latency_ns.max(0) as u64;
        self.recorded += 1;
        for (threshold, within) in &mut self.within {
            *within += u64::from(latency <= *threshold);
        }
        let late = latency > self.deadline_ns;
        for f in &mut self.firm {
            // The periods this wakeup skipped went unserved: each is a miss.
            (0..s.missed).for_each(|_| f.push(true));
            f.push(late);
        }
        let due = s.expected_ns.saturating_sub(self.start_ns);
        self.observed_ns = self.observed_ns.max(due.saturating_add(latency));
        for spikes in &mut self.spikes {
            spikes.push(due, latency);
        }
        self.peaks.push(s.seq, due, latency);
        self.last_seq = Some(s.seq);
    }

    /// The thread's tail figures for run.json, given its whole-run histogram and, for a noise
    /// thread, the time its loop measured (the exposure of its rates).
    pub(super) fn result(
        &self,
        histogram: &Histogram<u64>,
        measured_ns: Option<u64>,
    ) -> ThreadTails {
        let total = histogram.len();
        let mut within: Vec<WithinRecord> = self
            .within
            .iter()
            .map(|&(threshold_ns, within)| WithinRecord {
                threshold_ns,
                within,
                above: total - within,
                undecided: 0,
            })
            .collect();
        // 10x the median, raised to the top of its histogram bucket so that the histogram's
        // count is exact.
        let tenfold = ten_times_median(histogram);
        if let Some(t) = tenfold
            && !within.iter().any(|w| w.threshold_ns == t)
        {
            let e = Exceedance::from_histogram(histogram, t);
            within.push(WithinRecord {
                threshold_ns: t,
                within: e.within,
                above: e.above,
                undecided: e.undecided,
            });
        }
        within.sort_by_key(|w| w.threshold_ns);
        let wakeups = self.last_seq.map_or(0, |s| s + 1);
        // A wakeup thread is exposed for the time it was observed, up to the end of its
        // latest wakeup (its late wakeups and the periods they skipped included); a noise
        // thread for the time its loop ran (its samples are gaps, and its "interval" is the
        // threshold).
        let exposure_ns = match measured_ns {
            Some(m) if self.plan.noise => m,
            _ if total == 0 => 0,
            _ => self.observed_ns,
        };
        let mut spikes: Vec<SpikeRecord> = self
            .spikes
            .iter()
            .map(|c| {
                spike_record(
                    c.basis,
                    c.threshold_ns,
                    c.count,
                    c.times_ns.clone(),
                    self.plan.interval_ns,
                    exposure_ns,
                )
            })
            .collect();
        if let Some(t) = tenfold
            && !self.spikes.iter().any(|c| c.threshold_ns == t)
        {
            spikes.push(self.spikes_from_peaks(t, exposure_ns));
        }
        spikes.sort_by_key(|s| s.threshold_ns);
        ThreadTails {
            within,
            spikes,
            firm: self
                .firm
                .iter()
                .map(|f| {
                    let w = f.worst();
                    FirmRecord {
                        k: f.k(),
                        worst_misses: w.misses,
                        worst_first_period: w.first_period,
                        window_periods: w.periods,
                    }
                })
                .collect(),
            tail: (total > 0).then(|| self.tail_fit(wakeups)),
        }
    }

    /// Spikes over a threshold known only at the end, from the kept peaks: exact when the
    /// threshold is at or above the level the peaks were kept over.
    fn spikes_from_peaks(&self, threshold_ns: u64, exposure_ns: u64) -> SpikeRecord {
        if threshold_ns < self.peaks.level_ns {
            let mut r = spike_record("10x median", threshold_ns, 0, Vec::new(), 0, exposure_ns);
            r.not_counted = Some(format!(
                "the recorder kept only the {PEAKS_KEPT} largest wakeups (over {} ns) in order; \
                 run with --samples to count spikes this low",
                self.peaks.level_ns
            ));
            return r;
        }
        // Consecutive wakeup numbers over the threshold are one spike; gaps are each their own.
        let mut found: Vec<Spike> = Vec::new();
        let mut last: Option<u64> = None;
        for &(seq, due, latency) in &self.peaks.peaks {
            if latency <= threshold_ns {
                continue;
            }
            match (found.last_mut(), last) {
                (Some(s), Some(prev)) if seq == prev + 1 && !self.plan.noise => {
                    s.peak_ns = s.peak_ns.max(latency);
                    s.wakeups += 1;
                }
                _ => found.push(Spike {
                    time_ns: due,
                    peak_ns: latency,
                    wakeups: 1,
                }),
            }
            last = Some(seq);
        }
        let times: Vec<u64> = found
            .iter()
            .take(SPIKE_TIMES_KEPT)
            .map(|s| s.time_ns)
            .collect();
        spike_record(
            "10x median",
            threshold_ns,
            found.len() as u64,
            times,
            self.plan.interval_ns,
            exposure_ns,
        )
    }

    /// The extrapolated worst case from the kept peaks, its stationarity checked across the
    /// scenario's phases (or the run's halves).
    fn tail_fit(&self, wakeups: u64) -> TailRecord {
        // The one place extrapolation is decided: a noise thread's samples are gaps, and its
        // rates are per second (the noise statements), so there is no per-wakeup level.
        if self.plan.noise {
            return TailRecord::Refused {
                refused: format!("{:?}", evt::Check::NoiseRun),
                reason: evt::NOISE_RUN.into(),
            };
        }
        let peaks: Vec<Peak> = self
            .peaks
            .peaks
            .iter()
            .map(|&(seq, _, latency_ns)| Peak {
                wakeup: seq,
                latency_ns,
            })
            .collect();
        let segments = evt::phase_segments(wakeups, self.plan.interval_ns, &self.plan.phases);
        // The one place the levels are computed: run.json keeps them, every view reads them.
        let fit = evt::fit_tail(wakeups, &peaks, &segments, CONFIDENCE);
        match fit.and_then(|fit| evt::extrapolate(&fit, &TAIL_LEVELS).map(|l| (l, fit))) {
            Ok((levels, fit)) => TailRecord::Fitted(TailFitRecord {
                method: "pot-gpd-mle".into(),
                threshold_ns: fit.threshold_ns,
                exceedances: fit.exceedances as u64,
                clusters: fit.clusters as u64,
                extremal_index: fit.extremal_index,
                shape: fit.gpd.shape,
                shape_low: fit.shape_interval.0,
                shape_high: fit.shape_interval.1,
                scale_ns: fit.gpd.scale,
                anderson_darling: fit.anderson_darling,
                exposure_factor: evt::EXPOSURE_FACTOR,
                wakeups: fit.wakeups,
                levels: levels.into_iter().map(level_record).collect(),
                extrapolated: true,
            }),
            Err(r) => TailRecord::Refused {
                refused: format!("{:?}", r.check),
                reason: r.reason,
            },
        }
    }
}

/// One extrapolated level as run.json holds it.
fn level_record(level: evt::Level) -> TailLevelRecord {
    match level {
        evt::Level::Shown(l) => TailLevelRecord {
            per_wakeup: l.per_wakeup,
            latency_ns: Some(l.latency_ns),
            low_ns: l.low_ns,
            high_ns: l.high_ns,
            refused: None,
        },
        evt::Level::Refused { per_wakeup, reason } => TailLevelRecord {
            per_wakeup,
            latency_ns: None,
            low_ns: None,
            high_ns: None,
            refused: Some(reason),
        },
    }
}

/// 10x the median, at the top of its histogram bucket; None without samples or when the
/// median is 0.
pub(crate) fn ten_times_median(h: &Histogram<u64>) -> Option<u64> {
    let median = h.value_at_quantile(0.5);
    (!h.is_empty() && median > 0).then(|| h.highest_equivalent(10 * median))
}

/// A spike count from the recorder: exact, its times known to the wakeup interval.
fn spike_record(
    basis: &str,
    threshold_ns: u64,
    count: u64,
    times_ns: Vec<u64>,
    resolution_ns: u64,
    exposure_ns: u64,
) -> SpikeRecord {
    let times = SpikeTimes {
        times_ns,
        resolution_ns,
        count_is_lower_bound: false,
    };
    interval_spikes::spike_record(basis, threshold_ns, count, times, exposure_ns)
}

#[cfg(test)]
mod tests;

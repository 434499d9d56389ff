//! The loads of `jitterlab run`, with one lifecycle ([`RunLoads`]) for the spike threads and the
//! load supervisor's generators (the plan's `--load` generators and scenario phases): started
//! before measuring, begun at the run's start, drained while it runs, stopped when measuring
//! ends; then what the loads did and what each phase measured go into run.json.
//!
//! Per-phase statistics come from latency.hlog, read back after the recorder has finished: a
//! phase gets the interval histograms that lie wholly inside its planned window
//! `[start, end]` (offsets from the first due time, with 1 ms of slack for the log's
//! millisecond timestamps). Intervals that straddle a boundary belong to no phase, so with
//! the default 1 s --log-interval a phase's statistics cover its whole seconds; phase
//! boundaries on whole multiples of --log-interval lose nothing.

use crate::analysis::phase;
use crate::cpulist::online_cpus;
use crate::error::{Failure, Result};
use crate::format::SCENARIO_COPY;
use crate::format::events::Event;
use crate::format::hlog_scan;
use crate::format::run_record::{
    LoadRecord, PhaseRecord, PhaseThreadSummary, PhaseWakeups, RunRecord, ThreadSummary,
};
use crate::format::stats::{LatencySummary, new_histogram};
use crate::load::supervisor::{Outcome, PhasePlan, PlannedLoad, Setup, Supervisor};
use crate::load::{LoadSpec, SpikeLoad};
use crate::plan::RunPlan;
use crate::results::ResultDir;
use hdrhistogram::Histogram;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The loads of a run: the spike threads of this process and the supervisor of the generators'
/// processes. Dropping it stops them (sets the run's stop flag) and waits for them, on every
/// exit path.
pub(crate) struct RunLoads {
    spikes: Vec<SpikeLoad>,
    supervisor: Option<Supervisor>,
    stop: Arc<AtomicBool>,
    /// What [`RunLoads::stop_early`] got, for [`RunLoads::stop`] to hand on.
    stopped: Option<(Outcome, Vec<Event>)>,
}

impl RunLoads {
    /// Starts the plan's spike threads, pinned and real-time, waiting for [`RunLoads::begin`].
    /// A spike refused its priority or CPU is a system refusal (exit 3).
    pub(crate) fn start_spikes(plan: &RunPlan, stop: &Arc<AtomicBool>) -> Result<Self> {
        let mut loads = RunLoads {
            spikes: Vec::new(),
            supervisor: None,
            stop: Arc::clone(stop),
            stopped: None,
        };
        for load in &plan.loads {
            if let LoadSpec::Spike(spec) = load {
                let spike =
                    SpikeLoad::start(spec.clone(), Arc::clone(stop)).map_err(Failure::system)?;
                loads.spikes.push(spike);
            }
        }
        Ok(loads)
    }

    /// Starts the supervisor and the generators that run for the whole run (they are running
    /// when this returns), when the plan has generators or a scenario.
    pub(crate) fn start_generators(&mut self, plan: &RunPlan, dir: &ResultDir) -> Result<()> {
        self.supervisor = start_supervisor(plan, dir, &self.stop)?;
        Ok(())
    }

    /// The run starts at `run_start_ns` and ends at `run_end_ns` (CLOCK_MONOTONIC; `u64::MAX`
    /// for a run without an end in time): spikes start injecting and phases are timed from
    /// then.
    pub(crate) fn begin(&self, run_start_ns: u64, run_end_ns: u64) {
        self.spikes
            .iter()
            .for_each(|s| s.begin(run_start_ns, run_end_ns));
        if let Some(s) = &self.supervisor {
            s.begin(run_start_ns);
        }
    }

    /// A scenario with phases of `wakeups = N`: the count the recorder keeps for them.
    pub(crate) fn wakeup_count(&self) -> Option<Arc<crate::load::scenario_count::WakeupCount>> {
        self.supervisor.as_ref().and_then(Supervisor::wakeup_count)
    }

    /// What the loads did since the last call, for events.jsonl: the spikes' injections, then
    /// the supervisor's phase boundaries and warnings.
    pub(crate) fn drain_events(&mut self) -> Vec<Event> {
        let mut events: Vec<Event> = self
            .spikes
            .iter_mut()
            .flat_map(SpikeLoad::drain_events)
            .collect();
        if let Some(s) = &self.supervisor {
            events.extend(s.drain_events());
        }
        events
    }

    /// Stops and reaps every generator (a real-time one is first returned to SCHED_OTHER), then
    /// waits for the spikes (they end at the run's end or its stop): what they did, and their
    /// events not drained yet (the spikes' last injections, then the ends of the running phases
    /// and the supervisor's last warnings). The generators go first: a real-time generator on
    /// a spike's CPU could keep it from ending. After [`RunLoads::stop_early`], what that got.
    pub(crate) fn stop(&mut self) -> (Outcome, Vec<Event>) {
        if let Some(stopped) = self.stopped.take() {
            return stopped;
        }
        let (outcome, last) = self
            .supervisor
            .take()
            .map(Supervisor::finish)
            .unwrap_or_default();
        let mut events = Vec::new();
        for spike in &mut self.spikes {
            spike.join();
            events.extend(spike.drain_events());
        }
        events.extend(last);
        (outcome, events)
    }

    /// Stops the loads before the measuring threads have ended (the session's end served while
    /// a load holds a measuring thread off its CPU); [`RunLoads::stop`] returns what they did.
    pub(crate) fn stop_early(&mut self) {
        if self.stopped.is_none() {
            let stopped = self.stop();
            self.stopped = Some(stopped);
        }
    }

    /// The spikes' run.json records, in plan order; `duration_ns` is the run's length.
    pub(crate) fn spike_records(&self, plan: &RunPlan, duration_ns: u64) -> Vec<LoadRecord> {
        // Spikes start in the order of the plan, so each has its --load text at the same index.
        let texts = plan
            .load_texts
            .iter()
            .zip(&plan.loads)
            .filter(|(_, l)| matches!(l, LoadSpec::Spike(_)));
        self.spikes
            .iter()
            .zip(texts)
            .map(|(s, (text, _))| s.record(text, duration_ns))
            .collect()
    }
}

impl Drop for RunLoads {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.spikes.iter_mut().for_each(SpikeLoad::join);
    }
}

/// Starts the supervisor and the loads that run for the whole run (they are running when this
/// returns); None when the plan has no generator and no scenario.
fn start_supervisor(
    plan: &RunPlan,
    dir: &ResultDir,
    stop: &Arc<AtomicBool>,
) -> Result<Option<Supervisor>> {
    let mut loads: Vec<PlannedLoad> = plan
        .loads
        .iter()
        .filter_map(|l| match l {
            LoadSpec::Generator(g) => Some(PlannedLoad {
                spec: g.clone(),
                phase: None,
            }),
            LoadSpec::Spike(_) => None,
        })
        .collect();
    let mut phases = Vec::new();
    if let Some(s) = &plan.scenario {
        // Kept with the results: the run can be understood and repeated from its directory.
        // Made new through the directory's descriptor, as every file of a run.
        let _ = dir
            .create_file(SCENARIO_COPY)
            .and_then(|mut f| std::io::Write::write_all(&mut f, s.text.as_bytes()));
        for (i, p) in s.phases.iter().enumerate() {
            phases.push(PhasePlan {
                label: p.label.clone(),
                start_ns: p.start_ns,
                end_ns: p.end_ns,
                wakeups: p.wakeups,
                loads: p.loads.iter().map(|g| g.text.clone()).collect(),
            });
            loads.extend(p.loads.iter().map(|g| PlannedLoad {
                spec: g.clone(),
                phase: Some(i),
            }));
        }
    }
    if loads.is_empty() && phases.is_empty() {
        return Ok(None);
    }
    let spikes = plan.loads.len()
        - plan
            .loads
            .iter()
            .filter(|l| matches!(l, LoadSpec::Generator(_)))
            .count();
    // Every load's log is bounded (issue 39, F6): a segmented run's share, else the run's.
    let log_cap = Some(
        plan.segments
            .map_or(crate::load::supervisor::RUN_LOG_BYTES, |s| {
                s.load_log_cap(loads.len())
            }),
    );
    let setup = Setup {
        loads,
        phases,
        online: online_cpus().map_err(Failure::system)?,
        measured: plan.cpus.clone(),
        housekeeping: plan.housekeeping.clone(),
        result_dir: Some(dir.clone()),
        log_cap,
        record_index_base: spikes,
        once: false,
        priority: plan.drain_priority,
        wakeup_count: plan
            .scenario
            .as_ref()
            .filter(|s| s.counts_wakeups())
            .map(|_| Arc::default()),
    };
    Supervisor::start(setup, Arc::clone(stop)).map(Some)
}

/// Adds the loads' records, warnings and the per-phase statistics to the run record; returns
/// the failure of a load during the run, if one failed.
pub fn record(outcome: &Outcome, record: &mut RunRecord, dir: &ResultDir) -> Option<String> {
    let first = record.loads.len();
    record
        .loads
        .extend(outcome.loads.iter().map(|l| l.record()));
    record.warnings.extend(outcome.warnings.iter().cloned());
    let cut = log_warnings(&record.loads[first..], first);
    record.warnings.extend(cut);
    let no_value: Vec<String> = record
        .loads
        .iter()
        .flat_map(crate::format::run_record::no_value_warnings)
        .collect();
    record.warnings.extend(no_value);
    if !outcome.phases.is_empty() {
        // Streamed: a day-long scenario has 86 400 intervals per CPU, too many to hold decoded.
        // From latency.hlog, or from every segment of a segmented log in order (their
        // timestamps share the run's start).
        let mut stats = PhaseStats::new(outcome, &record.plan.cpus, record.start_monotonic_ns);
        let scanned = crate::results::loaded::scan_intervals(&dir.path, |i| {
            stats.add(i.tag, i.start_s, i.length_s, i.counts)
        });
        if let Err(e) = scanned {
            record
                .warnings
                .push(format!("per-phase statistics are incomplete: {e}"));
        }
        let (phases, warnings) = stats.finish(&record.threads);
        record.phases = phases;
        record.warnings.extend(warnings);
    }
    outcome.failure.clone()
}

/// A warning per load whose bounded log dropped part of its output (`loads` are run.json's
/// records from index `first` on): how much it wrote, what the log kept, where.
fn log_warnings(loads: &[LoadRecord], first: usize) -> Vec<String> {
    loads
        .iter()
        .enumerate()
        .filter_map(|(i, l)| {
            let log = l.log.as_ref().filter(|g| g.dropped_bytes > 0)?;
            let k = first + i;
            Some(format!(
                "load {k} '{}' wrote {} bytes of output; its log keeps {} of them (the latest, in loads/{k}-{}.log.1 and loads/{k}-{}.log, at most {} bytes each): {} bytes were dropped",
                l.spec,
                log.output_bytes,
                log.output_bytes - log.dropped_bytes,
                l.kind,
                l.kind,
                log.bound_bytes,
                log.dropped_bytes
            ))
        })
        .collect()
}

/// Per-phase statistics, accumulated interval by interval: each phase gets, per CPU, the
/// intervals wholly inside its planned window (cut where it ended early, when its loads'
/// `loops=` were all done).
pub(crate) struct PhaseStats<'a> {
    outcome: &'a Outcome,
    cpus: &'a [usize],
    /// The run's start on CLOCK_MONOTONIC, the base of the phases' planned offsets.
    run_start_ns: u64,
    /// `merged[phase][k]`: the histogram of `cpus[k]` in that phase.
    merged: Vec<Vec<Histogram<u64>>>,
}

impl<'a> PhaseStats<'a> {
    pub(crate) fn new(outcome: &'a Outcome, cpus: &'a [usize], run_start_ns: u64) -> Self {
        PhaseStats {
            outcome,
            cpus,
            run_start_ns,
            merged: outcome
                .phases
                .iter()
                .map(|_| cpus.iter().map(|_| new_histogram()).collect())
                .collect(),
        }
    }

    /// One interval of latency.hlog (tag `cpuN`; other tags are ignored).
    pub(crate) fn add(&mut self, tag: &str, start_s: f64, length_s: f64, counts: &[(u64, u64)]) {
        let Some(k) = tag
            .strip_prefix("cpu")
            .and_then(|n| n.parse::<usize>().ok())
            .and_then(|cpu| self.cpus.iter().position(|&c| c == cpu))
        else {
            return;
        };
        for (ph, merged) in self.outcome.phases.iter().zip(&mut self.merged) {
            // The one definition of a phase's window, as every reader of run.json applies it.
            let window = phase::phase_window(
                ph.plan.start_ns as f64 / 1e9,
                ph.window_end_ns() as f64 / 1e9,
            );
            if phase::inside(window, start_s, length_s) {
                hlog_scan::add_counts(&mut merged[k], counts);
            }
        }
    }

    /// The phase records, and a warning for each phase left without statistics. A phase's
    /// figures come from merged interval histograms, whose min and max are bucket ends (up to
    /// 1/1024 beyond the samples); they are clamped into the exact [min, max] of the same CPU
    /// in `run` (the recorder's), so that no phase figure lies outside the run's.
    pub(crate) fn finish(self, run: &[ThreadSummary]) -> (Vec<PhaseRecord>, Vec<String>) {
        let mut warnings = Vec::new();
        let records = self
            .outcome
            .phases
            .iter()
            .zip(&self.merged)
            .map(|(ph, merged)| {
                let threads: Vec<PhaseThreadSummary> = self
                    .cpus
                    .iter()
                    .zip(merged)
                    .map(|(&cpu, h)| {
                        let mut latency = LatencySummary::from_histogram(h);
                        let exact = run.iter().find(|t| t.cpu == cpu).map(|t| &t.latency);
                        if let Some((min, max)) = exact.and_then(|e| e.min_ns.zip(e.max_ns)) {
                            latency.clamp_into(min, max);
                        }
                        PhaseThreadSummary { cpu, latency }
                    })
                    .collect();
                if threads.iter().all(|t| t.latency.samples == 0) {
                    warnings.push(format!(
                        "phase {} ({}) has no statistics: no whole --log-interval lies inside it; use a --log-interval that divides its start and length",
                        ph.index, ph.plan.label
                    ));
                }
                PhaseRecord {
                    index: ph.index,
                    label: ph.plan.label.clone(),
                    start_ns: ph.started_ns,
                    end_ns: ph.ended_ns,
                    loads: ph.plan.loads.clone(),
                    window_start_ns: Some(self.run_start_ns + ph.plan.start_ns),
                    window_end_ns: Some(self.run_start_ns + ph.window_end_ns()),
                    wakeups: ph.plan.wakeups.map(|asked| PhaseWakeups {
                        cpu: self.cpus.first().copied().unwrap_or(0),
                        asked,
                        counted: ph.counted.unwrap_or(0),
                    }),
                    threads,
                }
            })
            .collect();
        (records, warnings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::hlog_scan::StoredInterval;
    use crate::load::supervisor::PhaseResult;

    fn interval(tag: &str, start_s: f64, length_s: f64, values: &[u64]) -> StoredInterval {
        StoredInterval {
            tag: tag.into(),
            start_s,
            length_s,
            counts: values.iter().map(|&v| (v, 1)).collect(),
        }
    }

    #[test]
    fn a_phase_gets_the_intervals_wholly_inside_it() {
        let intervals = vec![
            interval("cpu0", 0.0, 1.0, &[10]),
            interval("cpu0", 1.0, 1.0, &[20, 30]),
            interval("cpu1", 1.0, 1.0, &[40]),
            interval("cpu0", 2.0, 0.5, &[50]),
            // Timestamps in the log have millisecond resolution.
            interval("cpu0", 2.5, 0.999, &[60]),
        ];
        let phase = |index, start_s: f64, end_s: f64| PhaseResult {
            index,
            plan: PhasePlan {
                label: format!("p{index}"),
                start_ns: (start_s * 1e9) as u64,
                end_ns: (end_s * 1e9) as u64,
                wakeups: None,
                loads: vec![],
            },
            started_ns: 7,
            ended_ns: 9,
            early_end_ns: None,
            counted: None,
        };
        let outcome = Outcome {
            phases: vec![phase(0, 1.0, 2.0), phase(1, 1.5, 3.5), phase(2, 0.2, 0.9)],
            ..Outcome::default()
        };
        let mut stats = PhaseStats::new(&outcome, &[0, 1], 0);
        for i in &intervals {
            stats.add(&i.tag, i.start_s, i.length_s, &i.counts);
        }
        let (records, warnings) = stats.finish(&[]);
        let cpu0 = |p: usize| &records[p].threads[0].latency;
        assert_eq!(cpu0(0).samples, 2);
        assert_eq!(cpu0(0).max_ns, Some(30));
        assert_eq!(records[0].threads[1].latency.samples, 1);
        // [1.0, 2.0) straddles 1.5 and is left out; [2.0, 2.5) and [2.5, 3.499] are inside.
        assert_eq!(cpu0(1).samples, 2);
        assert_eq!(cpu0(1).min_ns, Some(50));
        assert_eq!(records[0].start_ns, 7);
        // The window the statistics cover is recorded, for readers that cut the log to a phase.
        assert_eq!(records[1].window_start_ns, Some(1_500_000_000));
        assert_eq!(records[1].window_end_ns, Some(3_500_000_000));
        assert_eq!(cpu0(2).samples, 0);
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("phase 2"), "{warnings:?}");
    }

    /// Issue 23 defect 8: a phase whose loads were ready 50 ms after its planned start (and
    /// reaped 80 ms after its end) had 1000 samples in the Phases table but no whole log
    /// interval in its plot and export, which took their window from the loads' times.
    /// run.json holds the window its statistics cover, and every reader selects with it.
    #[test]
    fn readers_select_the_intervals_the_phase_statistics_cover() {
        let run_start = 5_000_000_000u64;
        let outcome = Outcome {
            phases: vec![PhaseResult {
                index: 0,
                plan: PhasePlan {
                    label: "io".into(),
                    start_ns: 1_000_000_000,
                    end_ns: 2_000_000_000,
                    wakeups: None,
                    loads: vec![],
                },
                started_ns: run_start + 1_050_000_000,
                ended_ns: run_start + 2_080_000_000,
                early_end_ns: None,
                counted: None,
            }],
            ..Outcome::default()
        };
        let intervals: Vec<StoredInterval> = (0..3)
            .map(|s| interval("cpu0", s as f64, 1.0, &[10_000; 1000]))
            .collect();
        let mut stats = PhaseStats::new(&outcome, &[0], run_start);
        for i in &intervals {
            stats.add(&i.tag, i.start_s, i.length_s, &i.counts);
        }
        let (records, _) = stats.finish(&[]);
        let p = &records[0];
        assert_eq!(p.threads[0].latency.samples, 1000);
        let offset = |ns: Option<u64>| (ns.unwrap() - run_start) as f64 / 1e9;
        let window = phase::phase_window(offset(p.window_start_ns), offset(p.window_end_ns));
        let selected: u64 = intervals
            .iter()
            .filter(|i| phase::inside(window, i.start_s, i.length_s))
            .map(|i| i.counts.iter().map(|c| c.1).sum::<u64>())
            .sum();
        assert_eq!(selected, 1000);
    }

    /// issue 23: a phase max of 42.11 ms above the run's max of 42.08 ms (the top of the
    /// histogram bucket). The phase's figures are clamped into the run's exact range.
    #[test]
    fn phase_figures_stay_within_the_runs_exact_range() {
        let outcome = Outcome {
            phases: vec![PhaseResult {
                index: 0,
                plan: PhasePlan {
                    label: "io".into(),
                    start_ns: 0,
                    end_ns: 2_000_000_000,
                    wakeups: None,
                    loads: vec![],
                },
                started_ns: 0,
                ended_ns: 2_000_000_000,
                early_end_ns: None,
                counted: None,
            }],
            ..Outcome::default()
        };
        // What latency.hlog holds: the top of each value's bucket.
        let mut h = new_histogram();
        for v in [30_001u64, 42_080_123] {
            h.record(v).unwrap();
        }
        let stored: Vec<(u64, u64)> = h
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect();
        let mut stats = PhaseStats::new(&outcome, &[0], 0);
        stats.add("cpu0", 0.0, 1.0, &stored);
        let run: ThreadSummary = serde_json::from_value(serde_json::json!({
            "cpu": 0, "thread_index": 0, "tid": 1, "interval_ns": 1_000_000,
            "deadline_ns": 1_000_000, "samples": 2, "min_ns": 30_001, "mean_ns": 21_055_062.0,
            "stddev_ns": 0.0, "p50_ns": 30_001, "p90_ns": 42_080_123, "p99_ns": 42_080_123,
            "p999_ns": 42_080_123, "p9999_ns": 42_080_123, "max_ns": 42_080_123,
            "missed_periods": 42, "dropped_records": 0, "deadline_misses": 1,
            "early_wakeups": 0, "end": "completed"
        }))
        .unwrap();
        let mut unclamped = PhaseStats::new(&outcome, &[0], 0);
        unclamped.add("cpu0", 0.0, 1.0, &stored);
        let loose = &unclamped.finish(&[]).0[0].threads[0].latency;
        assert!(loose.max_ns.unwrap() > 42_080_123, "{loose:?}");
        let (records, _) = stats.finish(std::slice::from_ref(&run));
        let phase = &records[0].threads[0].latency;
        assert_eq!(
            (phase.min_ns, phase.max_ns),
            (Some(30_001), Some(42_080_123))
        );
        assert_eq!(phase.p9999_ns, Some(42_080_123));
    }
}

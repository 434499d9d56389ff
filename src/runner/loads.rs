//! The generators' part of `jitterlab run`: start the load supervisor with the plan's
//! `--load` generators and scenario phases, stop it when measuring ends, and put what the loads
//! did and what each phase measured into run.json.
//!
//! Per-phase statistics come from latency.hlog, read back after the recorder has finished: a
//! phase gets the interval histograms that lie wholly inside its planned window
//! `[start, end]` (offsets from the first due time, with 1 ms of slack for the log's
//! millisecond timestamps). Intervals that straddle a boundary belong to no phase, so with
//! the default 1 s --log-interval a phase's statistics cover its whole seconds; phase
//! boundaries on whole multiples of --log-interval lose nothing.

use crate::cpulist::online_cpus;
use crate::error::{Failure, Result};
use crate::load::LoadSpec;
use crate::load::supervisor::{Outcome, PhasePlan, PlannedLoad, Setup, Supervisor};
use crate::plan::RunPlan;
use crate::record::hlog::{self, IntervalHistogram};
use crate::record::stats::{LatencySummary, new_histogram};
use crate::results::ResultDir;
use crate::results::events;
use crate::results::run_record::{PhaseRecord, PhaseThreadSummary, RunRecord};
use hdrhistogram::Histogram;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Name of the copy of the scenario file in the result directory.
pub const SCENARIO_COPY: &str = "scenario.toml";
/// Slack for the hlog's millisecond timestamps when matching intervals to phases.
const EDGE_SLACK_NS: u64 = 1_000_000;

/// Starts the supervisor and the loads that run for the whole run (they are running when this
/// returns); None when the plan has no generator and no scenario.
pub fn start(
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
        let _ = std::fs::copy(&s.path, dir.file(SCENARIO_COPY));
        for (i, p) in s.phases.iter().enumerate() {
            phases.push(PhasePlan {
                label: p.label.clone(),
                start_ns: p.start_ns,
                end_ns: p.end_ns,
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
    let setup = Setup {
        loads,
        phases,
        online: online_cpus().map_err(Failure::system)?,
        measured: plan.cpus.clone(),
        result_dir: Some(dir.path.clone()),
        record_index_base: spikes,
        events: Some(dir.file(events::FILE_NAME)),
        once: false,
    };
    Supervisor::start(setup, Arc::clone(stop)).map(Some)
}

/// Stops and reaps every load.
pub fn stop(supervisor: Option<Supervisor>) -> Outcome {
    supervisor.map(Supervisor::finish).unwrap_or_default()
}

/// Adds the loads' records, warnings and the per-phase statistics to the run record; returns
/// the failure of a load during the run, if one failed.
pub fn record(outcome: &Outcome, record: &mut RunRecord, dir: &ResultDir) -> Option<String> {
    record
        .loads
        .extend(outcome.loads.iter().map(|l| l.record()));
    record.warnings.extend(outcome.warnings.iter().cloned());
    if !outcome.phases.is_empty() {
        let intervals = hlog::read_intervals(&dir.file(hlog::FILE_NAME)).unwrap_or_default();
        let (phases, warnings) = phase_records(outcome, &intervals, &record.plan.cpus);
        record.phases = phases;
        record.warnings.extend(warnings);
    }
    outcome.failure.clone()
}

/// Per-phase statistics from the interval histograms inside each phase's window.
pub fn phase_records(
    outcome: &Outcome,
    intervals: &[IntervalHistogram],
    cpus: &[usize],
) -> (Vec<PhaseRecord>, Vec<String>) {
    let mut warnings = Vec::new();
    let records = outcome
        .phases
        .iter()
        .map(|ph| {
            let from = ph.plan.start_ns.saturating_sub(EDGE_SLACK_NS);
            let to = ph.plan.end_ns + EDGE_SLACK_NS;
            let inside = |i: &IntervalHistogram| {
                let start = (i.start_s * 1e9).round() as u64;
                let end = ((i.start_s + i.length_s) * 1e9).round() as u64;
                start >= from && end <= to
            };
            let threads: Vec<PhaseThreadSummary> = cpus
                .iter()
                .map(|&cpu| {
                    let tag = format!("cpu{cpu}");
                    let mut merged = new_histogram();
                    for i in intervals.iter().filter(|i| i.tag == tag && inside(i)) {
                        merged
                            .add(&i.histogram)
                            .expect("interval histograms share one configuration");
                    }
                    PhaseThreadSummary {
                        cpu,
                        latency: summary_of(&merged),
                    }
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
                threads,
            }
        })
        .collect();
    (records, warnings)
}

/// The summary of a histogram alone: percentiles, and min, max, mean and standard deviation
/// at the histogram's precision (3 significant digits). Negative latencies were recorded as 0.
pub fn summary_of(h: &Histogram<u64>) -> LatencySummary {
    if h.is_empty() {
        return LatencySummary::default();
    }
    let q = |quantile: f64| Some(h.value_at_quantile(quantile));
    LatencySummary {
        samples: h.len(),
        min_ns: Some(h.min() as i64),
        mean_ns: Some(h.mean()),
        stddev_ns: Some(h.stdev()),
        p50_ns: q(0.50),
        p90_ns: q(0.90),
        p99_ns: q(0.99),
        p999_ns: q(0.999),
        p9999_ns: q(0.9999),
        max_ns: Some(h.max() as i64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::supervisor::PhaseResult;

    fn interval(tag: &str, start_s: f64, length_s: f64, values: &[u64]) -> IntervalHistogram {
        let mut histogram = new_histogram();
        values.iter().for_each(|&v| histogram.record(v).unwrap());
        IntervalHistogram {
            tag: tag.into(),
            start_s,
            length_s,
            histogram,
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
                loads: vec![],
            },
            started_ns: 7,
            ended_ns: 9,
        };
        let outcome = Outcome {
            phases: vec![phase(0, 1.0, 2.0), phase(1, 1.5, 3.5), phase(2, 0.2, 0.9)],
            ..Outcome::default()
        };
        let (records, warnings) = phase_records(&outcome, &intervals, &[0, 1]);
        let cpu0 = |p: usize| &records[p].threads[0].latency;
        assert_eq!(cpu0(0).samples, 2);
        assert_eq!(cpu0(0).max_ns, Some(30));
        assert_eq!(records[0].threads[1].latency.samples, 1);
        // [1.0, 2.0) straddles 1.5 and is left out; [2.0, 2.5) and [2.5, 3.499] are inside.
        assert_eq!(cpu0(1).samples, 2);
        assert_eq!(cpu0(1).min_ns, Some(50));
        assert_eq!(records[0].start_ns, 7);
        assert_eq!(cpu0(2).samples, 0);
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("phase 2"), "{warnings:?}");
    }
}

//! Result directories made from a latency model instead of a measurement: the same files a run
//! writes (run.json, latency.hlog and its summary, events.jsonl), written with the same writers, so the readers
//! (report, compare, export) can be benchmarked on a day-long run in seconds and tested on runs
//! with known distributions. Nothing here is used by `jitterlab run`.

use super::ResultDir;
use crate::format::counters::CpuCorrelation;
use crate::format::events::{self, Event, EventLog};
use crate::format::hlog::{self, HlogWriter};
use crate::format::run_record::{
    Ended, EnvironmentRecord, LoadRecord, PhaseRecord, PhaseThreadSummary, PlanRecord, PmQosRecord,
    RunRecord, ThreadSummary,
};
use crate::format::stats::LatencyStats;
use crate::format::summary;
use crate::random::SplitMix64;
use std::io;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// One scenario phase of a synthetic run, as offsets from the run's start.
#[derive(Debug, Clone)]
pub struct SyntheticPhase {
    pub label: String,
    pub start_offset_ns: u64,
    pub end_offset_ns: u64,
    pub loads: Vec<String>,
}

impl SyntheticPhase {
    /// A phase without loads from `from_s` to `to_s` seconds after the run's start.
    pub fn seconds(label: &str, from_s: u64, to_s: u64) -> Self {
        SyntheticPhase {
            label: label.into(),
            start_offset_ns: from_s * 1_000_000_000,
            end_offset_ns: to_s * 1_000_000_000,
            loads: vec![],
        }
    }
}

/// What to write. Every CPU wakes every `interval_ns` for `duration_ns`.
#[derive(Debug, Clone)]
pub struct SyntheticRun {
    pub cpus: Vec<usize>,
    pub interval_ns: u64,
    pub log_interval_ns: u64,
    pub duration_ns: u64,
    pub phases: Vec<SyntheticPhase>,
    pub loads: Vec<LoadRecord>,
    pub warnings: Vec<String>,
    pub seed: u64,
}

/// The monotonic time the synthetic run starts at (events.jsonl's time base).
pub const START_MONOTONIC_NS: u64 = 1_000_000_000_000;

/// Writes a result directory at `dir` whose samples come from `latency(cpu, offset_ns, rng)`
/// (offset of the wakeup's due time from the run's start). run.json's statistics are computed
/// from exactly the samples written to latency.hlog, so the files agree with each other as a
/// real run's do. Returns the record written.
pub fn write_run(
    dir: &Path,
    run: &SyntheticRun,
    latency: impl FnMut(usize, u64, &mut SplitMix64) -> i64,
) -> io::Result<RunRecord> {
    let result_dir = ResultDir::create(dir, "--out")
        .map_err(|e| io::Error::other(e.message))?
        .keep();
    let start_wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    // Made as a run makes them: new, through the directory's descriptor; with the log's
    // summary (format::summary), completed when `hlog` is dropped at the end.
    let mut hlog = HlogWriter::summarized(
        result_dir.create_file(hlog::FILE_NAME)?,
        result_dir.create_file(&summary::file_name(hlog::FILE_NAME))?,
        hlog::FILE_NAME,
    );
    hlog.begin(start_wall, "jitterlab synthetic latency log")?;
    let mut events = EventLog::new(result_dir.create_file(events::FILE_NAME)?);
    for w in &run.warnings {
        events.write(&Event::Warning {
            time_ns: START_MONOTONIC_NS,
            message: w.clone(),
        })?;
    }
    events.write(&Event::RunStart {
        time_ns: START_MONOTONIC_NS,
    })?;
    let tally = write_samples(run, latency, &mut hlog, &mut events)?;
    events.write(&Event::RunEnd {
        time_ns: START_MONOTONIC_NS + run.duration_ns,
        ended: "completed".into(),
    })?;
    let record = run_record(run, &tally, start_wall);
    result_dir.write_run_record(&record)?;
    Ok(record)
}

/// Writes counters.log beside the synthetic run `record` at `dir` (made by [`write_run`]), as a
/// run's recorder writes it: the counters `names` on every CPU, read exactly at each log
/// interval's boundaries, with `value(cpu, interval, k)` the value of `names[k]`. Then puts in
/// run.json what a run's end puts there: the correlation computed from the stored files by
/// `correlate` (`analysis::counters::correlate_dir`, passed in: results sits below analysis).
/// Returns the record written.
pub fn write_counters(
    dir: &Path,
    run: &SyntheticRun,
    mut record: RunRecord,
    names: &[&str],
    mut value: impl FnMut(usize, u64, usize) -> Option<i64>,
    correlate: impl FnOnce(&Path, &RunRecord) -> Result<Vec<CpuCorrelation>, String>,
) -> io::Result<RunRecord> {
    use crate::format::counters::{self, CountersRecord, CountersWriter, LineRef};
    let result_dir = ResultDir::open(dir).map_err(io::Error::other)?;
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let file = result_dir.create_file(counters::FILE_NAME)?;
    let mut writer = CountersWriter::begin(file, run.log_interval_ns, &[])?;
    let intervals = run.duration_ns.div_ceil(run.log_interval_ns);
    for k in 0..intervals {
        let from_ns = k * run.log_interval_ns;
        let to_ns = (from_ns + run.log_interval_ns).min(run.duration_ns);
        let values: Vec<Vec<Option<i64>>> = run
            .cpus
            .iter()
            .map(|&cpu| (0..names.len()).map(|n| value(cpu, k, n)).collect())
            .collect();
        writer.write_interval(run.cpus.iter().zip(&values).map(|(&cpu, values)| LineRef {
            interval: k,
            cpu,
            from_ns,
            to_ns,
            names: &names,
            values,
        }))?;
    }
    drop(writer);
    let correlation = correlate(dir, &record).map_err(io::Error::other)?;
    record.counters = Some(CountersRecord {
        file: Some(counters::FILE_NAME.into()),
        reads: intervals + 1,
        correlation,
        ..Default::default()
    });
    result_dir.write_run_record(&record)?;
    Ok(record)
}

/// What run.json states about the samples: per CPU over the whole run, and per phase.
struct SampleTally {
    whole: Vec<LatencyStats>,
    /// Indexed by phase, then by the CPU's slot in `run.cpus`.
    phases: Vec<Vec<LatencyStats>>,
    missed: Vec<u64>,
    late: Vec<u64>,
}

impl SampleTally {
    fn new(run: &SyntheticRun) -> Self {
        let per_cpu = || run.cpus.iter().map(|_| LatencyStats::default()).collect();
        SampleTally {
            whole: per_cpu(),
            phases: run.phases.iter().map(|_| per_cpu()).collect(),
            missed: vec![0; run.cpus.len()],
            late: vec![0; run.cpus.len()],
        }
    }

    /// Counts one wakeup due at `due` (offset from the start) that was `ns` late, as the
    /// recorder counts a measured one: late past the period, missed periods, and in each phase
    /// the due time falls in.
    fn record(&mut self, run: &SyntheticRun, slot: usize, due: u64, ns: i64) {
        self.whole[slot].record(ns);
        if ns > run.interval_ns as i64 {
            self.late[slot] += 1;
        }
        if ns >= run.interval_ns as i64 {
            self.missed[slot] += ns as u64 / run.interval_ns;
        }
        for (p, phase) in run.phases.iter().enumerate() {
            if (phase.start_offset_ns..phase.end_offset_ns).contains(&due) {
                self.phases[p][slot].record(ns);
            }
        }
    }
}

/// Draws every wakeup of the run, one log interval at a time: the phase events due by the
/// interval's start go to events.jsonl first, then one interval per CPU to latency.hlog.
/// Phase events after the last interval's start follow at the end.
fn write_samples(
    run: &SyntheticRun,
    mut latency: impl FnMut(usize, u64, &mut SplitMix64) -> i64,
    hlog: &mut HlogWriter,
    events: &mut EventLog,
) -> io::Result<SampleTally> {
    let mut rng = SplitMix64::new(run.seed);
    let mut tally = SampleTally::new(run);
    // One histogram reused for every interval, as the recorder reuses its own.
    let mut interval = LatencyStats::default();
    let intervals = run.duration_ns.div_ceil(run.log_interval_ns);
    let mut next_phase_event = 0usize;
    let phase_events = phase_event_times(&run.phases);
    for k in 0..intervals {
        let from = k * run.log_interval_ns;
        let to = (from + run.log_interval_ns).min(run.duration_ns);
        while let Some(&(at, ref event)) = phase_events.get(next_phase_event) {
            if at > from {
                break;
            }
            events.write(event)?;
            next_phase_event += 1;
        }
        for (slot, &cpu) in run.cpus.iter().enumerate() {
            interval.reset();
            let mut due = from.div_ceil(run.interval_ns) * run.interval_ns;
            while due < to {
                let ns = latency(cpu, due, &mut rng);
                interval.record(ns);
                tally.record(run, slot, due, ns);
                due += run.interval_ns;
            }
            hlog.write_interval(
                &format!("cpu{cpu}"),
                Duration::from_nanos(from),
                Duration::from_nanos(to - from),
                &interval.histogram,
            )?;
        }
    }
    for (_, event) in &phase_events[next_phase_event..] {
        events.write(event)?;
    }
    Ok(tally)
}

/// The run.json of a synthetic run: a default real-time plan, and the tallied statistics.
fn run_record(run: &SyntheticRun, tally: &SampleTally, start_wall: SystemTime) -> RunRecord {
    RunRecord {
        ended_utc: Some(
            humantime::format_rfc3339_millis(start_wall + Duration::from_nanos(run.duration_ns))
                .to_string(),
        ),
        duration_ns: Some(run.duration_ns),
        ended: Ended::Completed,
        threads: thread_summaries(run, tally),
        loads: run.loads.clone(),
        warnings: run.warnings.clone(),
        phases: phase_records(run, tally),
        ..RunRecord::new(
            vec!["synthetic".into(), format!("seed={}", run.seed)],
            plan_record(run),
            serde_json::json!({ "hostname": "synthetic" }),
            EnvironmentRecord {
                memory_locked: true,
                stack_prefaulted_bytes: 0,
                pm_qos: PmQosRecord::default(),
                idle_states: None,
                cpuset_partition: None,
            },
            humantime::format_rfc3339_millis(start_wall).to_string(),
            START_MONOTONIC_NS,
        )
    }
}

fn thread_summaries(run: &SyntheticRun, tally: &SampleTally) -> Vec<ThreadSummary> {
    run.cpus
        .iter()
        .enumerate()
        .map(|(slot, &cpu)| ThreadSummary {
            cpu,
            thread_index: slot,
            tid: 0,
            interval_ns: run.interval_ns,
            deadline_ns: run.interval_ns,
            latency: tally.whole[slot].summary(),
            missed_periods: tally.missed[slot],
            dropped_records: 0,
            deadline_misses: tally.late[slot],
            early_wakeups: tally.whole[slot].early,
            end: "completed".into(),
            irq_latency: None,
            tails: Default::default(),
            noise: None,
        })
        .collect()
}

fn phase_records(run: &SyntheticRun, tally: &SampleTally) -> Vec<PhaseRecord> {
    run.phases
        .iter()
        .enumerate()
        .map(|(p, phase)| PhaseRecord {
            index: p,
            label: phase.label.clone(),
            start_ns: START_MONOTONIC_NS + phase.start_offset_ns,
            end_ns: START_MONOTONIC_NS + phase.end_offset_ns,
            loads: phase.loads.clone(),
            window_start_ns: Some(START_MONOTONIC_NS + phase.start_offset_ns),
            window_end_ns: Some(START_MONOTONIC_NS + phase.end_offset_ns),
            wakeups: None,
            threads: run
                .cpus
                .iter()
                .enumerate()
                .map(|(slot, &cpu)| PhaseThreadSummary {
                    cpu,
                    latency: tally.phases[p][slot].summary(),
                })
                .collect(),
        })
        .collect()
}

/// jitterlab's defaults (SCHED_FIFO 95, clock_nanosleep, mlockall), as a real run would record.
fn plan_record(run: &SyntheticRun) -> PlanRecord {
    PlanRecord {
        cpus: run.cpus.clone(),
        policy: "fifo".into(),
        priority: 95,
        deadline_runtime_ns: None,
        wake: "clock-nanosleep".into(),
        clock: "monotonic".into(),
        interval_ns: run.interval_ns,
        distance_ns: 0,
        interval_step_ns: 0,
        duration_ns: Some(run.duration_ns),
        loops: None,
        deadline_ns: None,
        log_interval_ns: run.log_interval_ns,
        loads: run.loads.iter().map(|l| l.spec.clone()).collect(),
        samples: false,
        samples_format: None,
        summary_every: None,
        ring_size: 1024,
        drain_priority: None,
        housekeeping: None,
        cpuset_partition: false,
        load_cpus: "all".into(),
        mlock: true,
        pm_qos_us: Some(0),
        trace: false,
        explain_above_ns: None,
        noise_threshold_ns: None,
        ipc: None,
    }
}

/// PhaseStart and PhaseEnd events in time order, with their offsets from the run's start.
fn phase_event_times(phases: &[SyntheticPhase]) -> Vec<(u64, Event)> {
    let mut out = Vec::new();
    for (index, p) in phases.iter().enumerate() {
        out.push((
            p.start_offset_ns,
            Event::PhaseStart {
                time_ns: START_MONOTONIC_NS + p.start_offset_ns,
                index,
                label: p.label.clone(),
                loads: p.loads.clone(),
            },
        ));
        out.push((
            p.end_offset_ns,
            Event::PhaseEnd {
                time_ns: START_MONOTONIC_NS + p.end_offset_ns,
                index,
                label: p.label.clone(),
            },
        ));
    }
    out.sort_by_key(|(at, _)| *at);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::loaded;

    #[test]
    fn files_agree_with_each_other() {
        let dir = tempfile::tempdir().unwrap();
        let run = SyntheticRun {
            cpus: vec![0, 1],
            interval_ns: 1_000_000,
            log_interval_ns: 1_000_000_000,
            duration_ns: 3_500_000_000,
            phases: vec![SyntheticPhase {
                label: "busy".into(),
                start_offset_ns: 1_000_000_000,
                end_offset_ns: 2_000_000_000,
                loads: vec!["cpu:1".into()],
            }],
            loads: vec![],
            warnings: vec!["synthetic".into()],
            seed: 7,
        };
        let record = write_run(&dir.path().join("run"), &run, |cpu, t, _| {
            if cpu == 1 && t == 1_500_000_000 {
                2_500_000
            } else {
                10_000 + cpu as i64 * 1_000
            }
        })
        .unwrap();
        let back = loaded::load(&dir.path().join("run")).unwrap();
        assert_eq!(back.record.threads.len(), 2);
        assert_eq!(
            back.intervals.len(),
            8,
            "4 intervals per CPU, the last one half long"
        );
        assert_eq!(record.threads[0].latency.samples, 3500);
        assert_eq!(record.threads[1].latency.max_ns, Some(2_500_000));
        assert_eq!(record.threads[1].missed_periods, 2);
        assert_eq!(record.threads[1].deadline_misses, 1);
        assert_eq!(record.phases[0].threads[1].latency.max_ns, Some(2_500_000));
        assert_eq!(record.phases[0].threads[0].latency.samples, 1000);
        let phase_events = loaded::read_events(&dir.path().join("run"))
            .unwrap()
            .iter()
            .filter(|e| matches!(e, Event::PhaseStart { .. } | Event::PhaseEnd { .. }))
            .count();
        assert_eq!(phase_events, 2);
        let merged = back.merged_histogram("cpu1").unwrap();
        assert_eq!(merged.len(), 3500);
    }
}

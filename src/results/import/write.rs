//! Writing the result directory of an import: run.json with what the source lacks named in
//! `imported.absent`, and latency.hlog with one whole-run interval per CPU.

use super::imported::*;
use super::rt_tests::*;
use crate::error::{OrFailure, Result, display_path, escape_controls};
use crate::format::hlog::{self, HlogWriter};
use crate::format::run_record::Ended;
use crate::format::run_record::{
    EnvironmentRecord, ImportRecord, PlanRecord, PmQosRecord, RunRecord, SourceFigure,
    SourceOverflow, ThreadSummary,
};
use crate::results::ResultDir;
use crate::units::format_ns;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// Placeholders written where run.json has no null and no source states the value; listed in
/// `imported.absent`. Fields a source can state (policy, interval, memory locking) are listed
/// by [`absent_fields`] only when this source does not.
const ABSENT_ALWAYS: &[&str] = &[
    "plan.wake",
    "plan.clock",
    "plan.distance_ns",
    "plan.interval_step_ns",
    "plan.ring_size",
    "environment.stack_prefaulted_bytes",
    "environment.pm_qos",
    "start_monotonic_ns",
    "tid",
    "deadline_ns",
    "missed_periods",
    "dropped_records",
    "deadline_misses",
    "early_wakeups",
];

/// Every run.json field that holds a placeholder for this source.
fn absent_fields(imported: &Imported, with_hlog: bool) -> Vec<String> {
    let facts = &imported.facts;
    let mut absent: Vec<&str> = ABSENT_ALWAYS.to_vec();
    if facts.policy.is_none() {
        absent.push("plan.policy");
    }
    if facts.priority.is_none() {
        absent.push("plan.priority");
    }
    if facts.interval_ns.is_none() {
        absent.push("plan.interval_ns");
    }
    if imported.threads.iter().any(|t| t.interval_ns.is_none()) {
        absent.push("interval_ns");
    }
    if facts.memory_locked.is_none() {
        absent.extend(["plan.mlock", "environment.memory_locked"]);
    }
    if imported.started.is_none() {
        absent.push("started_utc");
    }
    if imported.command_line.is_empty() {
        absent.push("command_line");
    }
    if !with_hlog {
        absent.push("latency.hlog");
    }
    // Noise figures: the same fields are absent on every CPU of one source.
    if let Some(noise) = imported.threads.iter().find_map(|t| t.noise.as_ref()) {
        absent.extend(noise.absent());
    }
    if imported.threads.iter().any(|t| {
        t.latency.count.is_none() && t.latency.buckets.is_empty() && t.latency.overflow == 0
    }) {
        // rtla osnoise top prints the largest gap but not how many there were.
        absent.push("samples");
    }
    absent.into_iter().map(String::from).collect()
}

/// Writes the files of the new result directory and returns its run.json.
pub(crate) fn write_result(
    imported: &Imported,
    source: &Path,
    result_dir: &ResultDir,
) -> Result<RunRecord> {
    // Only CPUs whose source printed a histogram get intervals; the others are summaries only.
    let with_histograms: Vec<&SourceThread> = imported
        .threads
        .iter()
        .filter(|t| !t.latency.buckets.is_empty() || t.latency.overflow > 0)
        .collect();
    if !with_histograms.is_empty() {
        write_whole_run_hlog(imported, source, result_dir, &with_histograms)?;
    }
    let absent = absent_fields(imported, with_histograms.len() == imported.threads.len());
    let record = run_record(imported, source, absent);
    result_dir
        .write_run_record(&record)
        .or_run(|| format!("cannot write run.json in {}", result_dir.path.display()))?;
    Ok(record)
}

/// Writes latency.hlog: one interval spanning the whole run for each CPU with a histogram, and
/// one each for its IRQ and kernel-thread columns where the source has them.
fn write_whole_run_hlog(
    imported: &Imported,
    source: &Path,
    result_dir: &ResultDir,
    with_histograms: &[&SourceThread],
) -> Result<()> {
    let start = imported.started.unwrap_or(SystemTime::UNIX_EPOCH);
    let length = Duration::from_nanos(imported.duration_ns.unwrap_or(0));
    let path = result_dir.file(hlog::FILE_NAME);
    let mut w = HlogWriter::new(
        result_dir
            .create_file(hlog::FILE_NAME)
            .or_run(|| format!("cannot create {}", path.display()))?,
    );
    let write = |w: &mut HlogWriter| -> std::io::Result<()> {
        w.begin(
            start,
            &format!(
                "jitterlab {} import of {} ({}): one whole-run interval per CPU",
                env!("CARGO_PKG_VERSION"),
                display_path(source),
                imported.format.name()
            ),
        )?;
        for t in with_histograms {
            let cpu = t.cpu;
            let columns = [
                (format!("cpu{cpu}"), Some(&t.latency)),
                (format!("cpu{cpu}.irq"), t.irq.as_ref()),
                (format!("cpu{cpu}.thr"), t.kernel_thread.as_ref()),
            ];
            for (tag, h) in columns {
                if let Some(h) = h {
                    w.write_interval(&tag, Duration::ZERO, length, &h.histogram())?;
                }
            }
        }
        Ok(())
    };
    write(&mut w).or_run(|| format!("cannot write {}", path.display()))
}

/// The source's own warnings, then one per column whose histogram overflowed.
fn warnings_with_overflows(imported: &Imported) -> Vec<String> {
    let mut warnings = imported.warnings.clone();
    for t in &imported.threads {
        let columns = [
            ("", Some(&t.latency)),
            (" IRQ", t.irq.as_ref()),
            (" Thr", t.kernel_thread.as_ref()),
        ];
        for (column, h) in columns {
            if let Some(h) = h.filter(|h| h.overflow > 0) {
                warnings.push(overflow_warning(t.cpu, column, h));
            }
        }
    }
    warnings
}

/// The run.json of an import: what the source states, placeholders (named in `absent`) for
/// what it does not.
fn run_record(imported: &Imported, source: &Path, absent: Vec<String>) -> RunRecord {
    let record = RunRecord {
        ended_utc: match (imported.started, imported.duration_ns) {
            (Some(s), Some(d)) => s.checked_add(Duration::from_nanos(d)).and_then(rfc3339),
            _ => None,
        },
        duration_ns: imported.duration_ns,
        ended: if imported.failed {
            Ended::Failed
        } else if imported.stopped.is_some() {
            Ended::Interrupted
        } else {
            Ended::Completed
        },
        end_reason: if imported.failed {
            Some(format!("{} reported failure", imported.format.name()))
        } else {
            imported.stopped.clone()
        },
        threads: thread_summaries(imported),
        warnings: warnings_with_overflows(imported),
        imported: Some(import_record(imported, source, absent)),
        ..RunRecord::new(
            imported.command_line.clone(),
            plan_record(imported),
            imported.system.clone(),
            // What the source tool did, as far as it says; jitterlab changed nothing.
            EnvironmentRecord {
                memory_locked: imported.facts.memory_locked.unwrap_or(false),
                stack_prefaulted_bytes: 0,
                pm_qos: PmQosRecord::default(),
                idle_states: None,
                cpuset_partition: None,
            },
            imported.started.and_then(rfc3339).unwrap_or_default(),
            0,
        )
    };
    RunRecord {
        kind: imported.kind,
        ..record
    }
}

/// One summary per CPU; the counters no source prints (missed periods, drops) are
/// placeholders listed in `absent`.
fn thread_summaries(imported: &Imported) -> Vec<ThreadSummary> {
    imported
        .threads
        .iter()
        .enumerate()
        .map(|(i, t)| ThreadSummary {
            cpu: t.cpu,
            thread_index: i,
            tid: 0,
            interval_ns: t.interval_ns.unwrap_or(0),
            deadline_ns: 0,
            latency: t.latency.summary(),
            missed_periods: 0,
            dropped_records: 0,
            deadline_misses: 0,
            early_wakeups: 0,
            end: "completed".into(),
            irq_latency: t.irq.as_ref().map(SourceHistogram::summary),
            tails: Default::default(),
            noise: t.noise.as_ref().map(SourceNoise::summary),
        })
        .collect()
}

/// Where the run came from, what it lacks, and the source's own figures kept verbatim.
fn import_record(imported: &Imported, source: &Path, absent: Vec<String>) -> ImportRecord {
    ImportRecord {
        source_format: imported.format.name().into(),
        source_file: source.display().to_string(),
        per_interval: false,
        absent,
        figures: imported
            .threads
            .iter()
            .flat_map(|t| {
                let figures = t.noise.iter().flat_map(|n| n.figures.iter());
                figures.map(|&(name, value, unit)| SourceFigure {
                    cpu: t.cpu,
                    name: name.into(),
                    value,
                    unit: unit.into(),
                })
            })
            .collect(),
        overflows: imported
            .threads
            .iter()
            .flat_map(|t| {
                let columns = [
                    ("latency", Some(&t.latency)),
                    ("irq", t.irq.as_ref()),
                    ("thr", t.kernel_thread.as_ref()),
                ];
                columns.into_iter().filter_map(|(column, h)| {
                    let h = h.filter(|h| h.overflow > 0)?;
                    Some(SourceOverflow {
                        cpu: t.cpu,
                        column: column.into(),
                        samples: h.overflow,
                        from_ns: h.overflow_from.saturating_mul(h.unit_ns),
                    })
                })
            })
            .collect(),
    }
}

/// The plan as far as the source states it; the rest are the placeholders of `absent_fields`.
fn plan_record(imported: &Imported) -> PlanRecord {
    let facts = &imported.facts;
    PlanRecord {
        cpus: imported.threads.iter().map(|t| t.cpu).collect(),
        policy: facts.policy.clone().unwrap_or_else(|| "unknown".into()),
        priority: facts.priority.unwrap_or(0),
        deadline_runtime_ns: None,
        wake: "unknown".into(),
        clock: "unknown".into(),
        interval_ns: facts.interval_ns.unwrap_or(0),
        distance_ns: 0,
        interval_step_ns: 0,
        duration_ns: facts.duration_ns.or(imported.duration_ns),
        loops: None,
        deadline_ns: None,
        log_interval_ns: imported.duration_ns.unwrap_or(0),
        loads: Vec::new(),
        samples: false,
        samples_format: None,
        summary_every: None,
        ring_size: 0,
        drain_priority: None,
        housekeeping: None,
        cpuset_partition: false,
        load_cpus: "all".into(),
        mlock: facts.memory_locked.unwrap_or(false),
        pm_qos_us: None,
        trace: false,
        explain_above_ns: None,
        noise_threshold_ns: None,
        ipc: None,
    }
}

/// Says how many samples of one column lay beyond the source's histogram and where they
/// are recorded.
fn overflow_warning(cpu: usize, column: &str, h: &SourceHistogram) -> String {
    let unit = h.unit_ns;
    format!(
        "CPU {cpu}{column}: {} beyond the source histogram (at or above {}); recorded at {}{}, so percentiles that fall among them are lower bounds",
        if h.overflow == 1 {
            "1 sample was".to_string()
        } else {
            format!("{} samples were", h.overflow)
        },
        format_ns(h.overflow_from * unit),
        format_ns(h.overflow_from * unit),
        match h.max {
            Some(m) if m >= h.overflow_from as f64 => format!(
                " except one at the printed maximum {}",
                format_ns((m * unit as f64) as u64)
            ),
            _ => String::new(),
        }
    )
}

pub fn summary(record: &RunRecord, out: &Path) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let source = record.imported.as_ref().expect("an import");
    let _ = writeln!(
        s,
        "Imported {} ({}): {} CPU{}",
        display_path(Path::new(&source.source_file)),
        source.source_format,
        record.threads.len(),
        if record.threads.len() == 1 { "" } else { "s" }
    );
    let fmt = |v: Option<i64>| v.map_or("-".into(), |v| format_ns(v.max(0) as u64));
    let fmtu = |v: Option<u64>| v.map_or("-".into(), format_ns);
    // A noise run's samples are its gaps; a count the source does not print is unknown, not 0.
    let what = record.kind.words().counted;
    let samples_known = !source.absent.iter().any(|a| a == "samples");
    for t in &record.threads {
        let l = &t.latency;
        // A percentile among the overflows is only a lower bound: "≥" where they begin, as
        // compare and the report say it (ninth hostile re-run, L9-e).
        let from = source.latency_overflow_from(t.cpu);
        let fmtq = |v: Option<u64>| match (v, from) {
            (Some(v), Some(from)) if v >= from => format!("≥{}", format_ns(from)),
            _ => fmtu(v),
        };
        let _ = writeln!(
            s,
            "  CPU {}: {} {what}, min {}, p99 {}, p99.9 {}, max {}",
            t.cpu,
            if samples_known {
                l.samples.to_string()
            } else {
                "-".into()
            },
            fmt(l.min_ns),
            fmtq(l.p99_ns),
            fmtq(l.p999_ns),
            fmt(l.max_ns)
        );
        if let Some(irq) = &t.irq_latency {
            let _ = writeln!(
                s,
                "         IRQ: {} samples, min {}, max {}",
                irq.samples,
                fmt(irq.min_ns),
                fmt(irq.max_ns)
            );
        }
    }
    // Warnings quote the file (keys, time stamps): escaped like every message.
    for w in &record.warnings {
        let _ = writeln!(s, "  ! {}", escape_controls(w));
    }
    let _ = writeln!(s, "Results: {}", display_path(out));
    s
}

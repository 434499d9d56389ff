//! A run of a [`RunPlan`]: puts the pieces together. Result directory → system checks → memory
//! lock → measuring threads set up and waiting → CPU locks → loads → result files → start →
//! drain until done → results.
//!
//! Every resource taken here is released by the kernel or by a destructor on every exit path:
//! the measuring threads are a guard that releases them from the start gate and joins them
//! (`Threads`), the PM QoS request is an open file, the CPU locks are flocks (cpulock.rs), the
//! spike load is a thread of this process, load generators are child processes stopped and
//! reaped by a drop guard (loads.rs). The result directory is made first, so that a second run into it is
//! refused before anything starts; until measuring begins a refusal removes it again, and from
//! then on it is written incrementally so that a crash leaves what was measured.

pub mod cpulock;
pub mod loads;
pub mod pmqos;

use crate::error::{Failure, OrFailure, Result};
use crate::measure::clock::monotonic_ns;
use crate::measure::sched::{explain_mlock_refusal, lock_all_memory};
use crate::measure::wake::block_timer_signals;
use crate::measure::{MeasuringThread, StartGate, ThreadEnd, ThreadPlan, spawn_measuring_thread};
use crate::plan::{PREFAULT_STACK_BYTES, RunLength, RunPlan};
use crate::record::hlog::{self, HlogWriter};
use crate::record::live::LiveView;
use crate::record::samplelog::{self, SampleLogHeader, SampleLogWriter};
use crate::record::{Recorder, ThreadFeed, ThreadResult};
use crate::results::events::{self, Event, EventLog};
use crate::results::run_record::{
    CpuTimeRecord, Ended, EnvironmentRecord, PlanRecord, RunRecord, ThreadCpuTime, ThreadSummary,
};
use crate::results::{ResultDir, dir};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, SystemTime};

/// Time between opening the start gate and the first due wakeup: every thread must be back in
/// its loop and asleep before it.
const LEAD_IN_NS: u64 = 50_000_000;
/// How often the recorder drains the rings. Each drain wakes the recorder on one of the
/// measured CPUs, so it should be rare; the rings hold a second of samples, ten drains' worth.
pub(crate) const DRAIN_EVERY: Duration = Duration::from_millis(100);

/// The outcome of a run, for the command to print and turn into an exit code.
pub struct RunOutcome {
    pub dir: ResultDir,
    pub record: RunRecord,
}

/// Runs `plan`. `quiet`: no live view or status lines; `command_line` is recorded in run.json.
pub fn run(plan: &RunPlan, quiet: bool, command_line: Vec<String>) -> Result<RunOutcome> {
    // Made before anything starts: a second run into the same --out is refused here (exit 2),
    // and dropping the claim before measuring begins removes the directory again.
    let claim = match &plan.out {
        Some(out) => ResultDir::create(out, "--out")?,
        None => ResultDir::create_unique(
            &dir::default_path(SystemTime::now(), &crate::system::host::hostname()),
            "--out",
        )?,
    };
    let out = claim.dir().path.clone();
    // What the wake method needs of the system (e.g. /dev/rtc): exit 3 before anything starts.
    plan.wake.check_system().map_err(Failure::system)?;
    let (system, mut warnings) = system_snapshot(plan);
    // Tracing instances left by a jitterlab that was killed are removed at every start.
    warnings.extend(crate::trace::tracefs::remove_stale_instances());
    // Before anything starts: a system that cannot trace is refused here (exit 3).
    let trace_setup = match plan.trace {
        true => Some(crate::trace::prepare(&plan.cpus).map_err(Failure::system)?),
        false => None,
    };

    // Before any other thread exists, so that every thread inherits the mask.
    block_timer_signals();
    let stop = Arc::new(AtomicBool::new(false));
    let interrupted = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // A second signal while stopping ends the process at once.
        signal_hook::flag::register_conditional_shutdown(signal, 130, Arc::clone(&interrupted))
            .or_run(|| "cannot install the SIGINT/SIGTERM handlers".into())?;
        signal_hook::flag::register(signal, Arc::clone(&interrupted))
            .or_run(|| "cannot install the signal handlers".into())?;
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .or_run(|| "cannot install the signal handlers".into())?;
    }

    if plan.mlock {
        lock_all_memory().map_err(|e| Failure::system(explain_mlock_refusal(&e)))?;
    }

    // From here on, every part of the run is an owned value that undoes itself when dropped,
    // so any early return (a refusal, a write error) releases them all, in the reverse order of
    // this list: tracing, PM QoS, loads, CPU locks, then the measuring threads, released from
    // the gate without measuring and joined, and last the result directory's claim.
    let mut threads = Threads::start(plan, &stop)?;
    // Once the system has accepted everything and before anything runs: CPUs another run is
    // measuring are refused here (exit 3). Held until the run returns.
    let (_cpu_locks, lock_warnings) = cpulock::take(&plan.cpus, plan.allow_shared_cpus)?;
    warnings.extend(lock_warnings);
    let mut run_loads = loads::RunLoads::start_spikes(plan, &stop)?;
    let pm_qos = pmqos::hold(plan.pm_qos_us);
    if let Some(e) = &pm_qos.record.error {
        warnings.push(e.clone());
    }
    // Tracing starts once the measuring threads' ids are known (its filters name them).
    let (mut tracer, joiner) = match trace_setup {
        Some(setup) => {
            let (t, j) = start_trace(setup, plan, &threads.list).map_err(Failure::system)?;
            (Some(t), Some(j))
        }
        None => (None, None),
    };

    // The generators start now, before measuring; a Drop guard stops them on every exit path.
    let (mut hlog_writer, mut sample_writer, mut events) = prepare_results(plan, claim.dir())?;
    run_loads.start_generators(plan, claim.dir())?;

    // The common start: every thread is asleep by then.
    let start_wall = SystemTime::now() + Duration::from_nanos(LEAD_IN_NS);
    let start_ns = plan.clock.now_ns() + LEAD_IN_NS;
    // Loads and events run on CLOCK_MONOTONIC; with the default clock the two starts are one.
    let start_mono = if plan.clock == crate::measure::Clock::Monotonic {
        start_ns
    } else {
        monotonic_ns() + LEAD_IN_NS
    };
    let length_ns = match plan.length {
        RunLength::Duration(ns) => ns,
        RunLength::Loops(n) => n.saturating_mul(plan.interval_ns),
    };
    let end_ns = match plan.length {
        RunLength::Duration(ns) => start_ns + ns,
        RunLength::Loops(_) => u64::MAX,
    };
    let end_mono = match plan.length {
        RunLength::Duration(ns) => start_mono + ns,
        RunLength::Loops(_) => u64::MAX,
    };

    let mut record = RunRecord {
        warnings: warnings.clone(),
        ..RunRecord::new(
            command_line,
            plan_record(plan),
            system,
            EnvironmentRecord {
                memory_locked: plan.mlock,
                stack_prefaulted_bytes: if plan.mlock { PREFAULT_STACK_BYTES } else { 0 },
                pm_qos: pm_qos.record.clone(),
            },
            humantime::format_rfc3339_millis(start_wall).to_string(),
            start_mono,
        )
    };
    let headers = hlog_writer
        .begin(
            start_wall,
            &format!("jitterlab {} latency log", env!("CARGO_PKG_VERSION")),
        )
        .and_then(|_| match &mut sample_writer {
            Some(w) => w.begin(SampleLogHeader {
                clock_id: plan.clock.id() as u32,
                start_ns,
            }),
            None => Ok(()),
        });
    if let Err(e) = headers {
        return Err(Failure::run(format!(
            "cannot write the result files in {}: {e}",
            out.display()
        )));
    }
    // Written now so that a directory left by a killed run says what it was; from here on the
    // directory holds a run and stays.
    claim
        .dir()
        .write_first_run_record(&record)
        .or_run(|| format!("cannot write run.json in {}", out.display()))?;
    let result_dir = claim.keep();
    for w in &warnings {
        let _ = events.write(&Event::Warning {
            time_ns: monotonic_ns(),
            message: w.clone(),
        });
    }
    let _ = events.write(&Event::RunStart {
        time_ns: start_mono,
    });

    let feeds: Vec<ThreadFeed> = threads
        .list
        .iter_mut()
        .map(|t| ThreadFeed {
            cpu: t.cpu,
            index: t.index,
            deadline_ns: plan.thread_deadline_ns(t.index),
            counters: Arc::clone(&t.counters),
            consumer: std::mem::replace(&mut t.consumer, rtrb::RingBuffer::new(1).1),
        })
        .collect();
    let mut recorder = Recorder::new(
        feeds,
        hlog_writer,
        sample_writer,
        start_ns,
        plan.log_interval_ns,
    );
    if let Some(j) = joiner {
        recorder = recorder.with_trace(Box::new(j), plan.ring_size * 4);
    }
    let mut live = LiveView::new(quiet, &plan.cpus, length_ns);

    threads.open(start_ns, end_ns);
    run_loads.begin(start_mono, end_mono);

    // The recorder loop, on this (non-real-time) thread.
    let mut failure: Option<String> = None;
    // The first write error (a full disk): measuring stops, the statistics are still complete.
    let mut io_error: Option<String> = None;
    let write_failed =
        |e: std::io::Error| format!("cannot write the results in {}: {e}", out.display());
    loop {
        std::thread::sleep(DRAIN_EVERY);
        // A stop (SIGINT, SIGTERM, a write error) ends the threads' sleeps now rather than at
        // their next wakeup; repeated each round, as a signal sent just before a thread went to
        // sleep finds nothing to interrupt.
        if stop.load(Ordering::SeqCst) {
            threads.list.iter().for_each(MeasuringThread::interrupt);
        }
        if let Err(e) = recorder.drain() {
            io_error.get_or_insert(write_failed(e));
            stop.store(true, Ordering::SeqCst);
        }
        log_explanations(&mut recorder, &mut events);
        log_load_events(&mut run_loads, &mut events);
        live.update(
            monotonic_ns().saturating_sub(start_mono),
            length_ns,
            &recorder.live_rows(),
        );
        if threads.list.iter().all(|t| t.join.is_finished()) {
            break;
        }
    }
    live.finish();

    let mut ends = Vec::new();
    let mut cpu_times = Vec::new();
    for t in std::mem::take(&mut threads.list) {
        let end = t
            .join
            .join()
            .unwrap_or_else(|_| ThreadEnd::Failed("the measuring thread panicked".into()));
        if let ThreadEnd::Failed(message) = &end {
            let message = format!("measuring thread on CPU {} failed: {message}", t.cpu);
            let _ = events.write(&Event::ThreadFailed {
                time_ns: monotonic_ns(),
                cpu: t.cpu,
                message: message.clone(),
            });
            failure.get_or_insert(message);
            stop.store(true, Ordering::SeqCst);
        }
        ends.push((t.cpu, t.counters.tid.load(Ordering::Relaxed), end));
        cpu_times.push(ThreadCpuTime {
            cpu: t.cpu,
            thread_index: t.index,
            cpu_time_ns: t.counters.cpu_time_ns.load(Ordering::Relaxed),
        });
    }
    stop.store(true, Ordering::SeqCst);
    // events.jsonl is best effort; a full disk shows as a failed hlog write instead.
    let load_outcome = run_loads.stop(|e| drop(events.write(e)));
    if let Some(f) = &load_outcome.failure {
        failure.get_or_insert(f.clone());
    }
    let end_clock = plan.clock.now_ns().min(end_ns);
    // The trace is read to its end before the last samples are joined with it.
    let trace_stats = tracer.as_mut().map(|t| t.finish_reading());
    if let Some(Err(e)) = &trace_stats {
        record
            .warnings
            .push(format!("--trace: the trace reader failed: {e}"));
    }
    if let Err(e) = recorder.drain_last() {
        io_error.get_or_insert(write_failed(e));
    }
    log_explanations(&mut recorder, &mut events);
    let (worst, explained) = recorder.worst_explanations();
    let (worst, explained) = (worst.to_vec(), explained);
    let (results, last_error) = recorder.finish(end_clock);
    if let Some(e) = last_error {
        io_error.get_or_insert(write_failed(e));
    }
    drop(pm_qos);

    let end_wall = SystemTime::now();
    record.ended = if failure.is_some() || io_error.is_some() {
        Ended::Failed
    } else if interrupted.load(Ordering::SeqCst) {
        Ended::Interrupted
    } else {
        Ended::Completed
    };
    record.end_reason = failure.clone().or(io_error.clone()).or_else(|| {
        (record.ended == Ended::Interrupted).then(|| "stopped by SIGINT or SIGTERM".to_string())
    });
    record.ended_utc = Some(humantime::format_rfc3339_millis(end_wall).to_string());
    let elapsed_ns = monotonic_ns().saturating_sub(start_mono);
    record.duration_ns = Some(match plan.length {
        // Measurement ends at the last due time; the drain after it is not part of the run.
        RunLength::Duration(ns) => elapsed_ns.min(ns),
        RunLength::Loops(_) => elapsed_ns,
    });
    record.threads = thread_summaries(plan, &results, &ends);
    record.cpu_time = Some(CpuTimeRecord::read_now(cpu_times));
    record.loads = run_loads.spike_records(plan, record.duration_ns.unwrap_or(0));
    loads::record(&load_outcome, &mut record, &result_dir);
    record.warnings.extend(run_warnings(&results));
    if let (Some(t), Some(stats)) = (tracer.take(), trace_stats) {
        let stats = stats.unwrap_or_default();
        let config = t.config.clone();
        if let Err(e) = t.remove() {
            record.warnings.push(e);
        }
        record
            .warnings
            .extend(crate::trace::record::trace_warnings(&stats, &results));
        record.trace = Some(crate::trace::record::trace_record(
            plan, &config, &stats, &results, worst, explained,
        ));
    }
    if let Some(budget) = &plan.budget {
        crate::analysis::budget::judge_run(budget, &mut record, &mut events);
    }
    let _ = events.write(&Event::RunEnd {
        time_ns: monotonic_ns(),
        ended: record.ended.as_str().into(),
    });
    // A failure here still ends with the summary (from memory) and exit 4.
    if let Err(e) = result_dir.write_final_run_record(&mut record) {
        eprintln!("jitterlab: {e}");
    }
    Ok(RunOutcome {
        dir: result_dir,
        record,
    })
}

/// Starts tracing for the measuring threads (their ids are known once they are set up).
fn start_trace(
    setup: crate::trace::TraceSetup,
    plan: &RunPlan,
    threads: &[MeasuringThread],
) -> std::result::Result<(crate::trace::Tracer, crate::trace::Joiner), String> {
    let ids: Vec<(usize, usize, i32)> = threads
        .iter()
        .map(|t| (t.index, t.cpu, t.counters.tid.load(Ordering::Relaxed)))
        .collect();
    setup.start(
        crate::trace::record::thread_traces(plan, &ids),
        crate::trace::record::timer_functions(plan.wake),
    )
}

/// Moves the recorder's spike explanations (`--trace`) to events.jsonl.
fn log_explanations(recorder: &mut Recorder, events: &mut EventLog) {
    for x in recorder.take_explanations() {
        let _ = events.write(&Event::SpikeExplained(x));
    }
}

/// Moves what the loads did (the spikes' finished injections) to events.jsonl.
fn log_load_events(run_loads: &mut loads::RunLoads, events: &mut EventLog) {
    for e in run_loads.drain_events() {
        // events.jsonl is best effort; a full disk shows as a failed hlog write instead.
        let _ = events.write(&e);
    }
}

/// The system snapshot for run.json, and the warnings to show before the results.
fn system_snapshot(plan: &RunPlan) -> (serde_json::Value, Vec<String>) {
    let snapshot = crate::system::snapshot(&plan.cpus);
    let mut warnings = snapshot.representativeness_warnings(!plan.policy.is_realtime());
    if plan.policy == crate::measure::PolicyKind::Deadline {
        warnings.push(
            "SCHED_DEADLINE threads are not pinned (the kernel refuses to pin a deadline task to one CPU): \
             a thread's `cpu` is the CPU it was planned for, not necessarily where it ran"
                .into(),
        );
    }
    (
        serde_json::to_value(&snapshot).unwrap_or(serde_json::Value::Null),
        warnings,
    )
}

/// The measuring threads, from their start to their join. Until [`Threads::open`] they wait at
/// the start gate; dropped before that (any refusal or error on the way to the start), the gate
/// is aborted, so that they end without measuring, and they are joined: no exit path leaves a
/// thread blocked at the gate. Dropped later, it stops and joins what is left.
struct Threads {
    gate: Arc<StartGate>,
    stop: Arc<AtomicBool>,
    list: Vec<MeasuringThread>,
    opened: bool,
}

impl Threads {
    /// Starts one thread per planned CPU; returns once each is set up and at the gate, or the
    /// first setup refusal (exit 3).
    fn start(plan: &RunPlan, stop: &Arc<AtomicBool>) -> Result<Threads> {
        let gate = StartGate::new(plan.cpus.len());
        let list = start_measuring_threads(plan, &gate, stop)?;
        Ok(Threads {
            gate,
            stop: Arc::clone(stop),
            list,
            opened: false,
        })
    }

    /// Opens the gate: the first wakeups are due at `start_ns`.
    fn open(&mut self, start_ns: u64, end_ns: u64) {
        self.gate.open(start_ns, end_ns);
        self.opened = true;
    }
}

impl Drop for Threads {
    fn drop(&mut self) {
        if !self.opened {
            self.gate.abort();
        }
        self.stop.store(true, Ordering::SeqCst);
        for t in self.list.drain(..) {
            t.interrupt();
            let _ = t.join.join();
        }
    }
}

fn start_measuring_threads(
    plan: &RunPlan,
    gate: &Arc<StartGate>,
    stop: &Arc<AtomicBool>,
) -> Result<Vec<MeasuringThread>> {
    let (ready_tx, ready_rx) = mpsc::channel();
    let mut threads = Vec::new();
    for (index, &cpu) in plan.cpus.iter().enumerate() {
        let policy = plan.thread_policy(index);
        let thread_plan = ThreadPlan {
            index,
            cpu,
            pin: !matches!(policy, crate::measure::Policy::Deadline { .. }),
            policy,
            wake: plan.wake,
            clock: plan.clock,
            interval_ns: plan.thread_interval_ns(index),
            interval_step_ns: plan.interval_step_ns,
            loops: match plan.length {
                RunLength::Loops(n) => Some(n),
                RunLength::Duration(_) => None,
            },
            prefault_stack_bytes: if plan.mlock { PREFAULT_STACK_BYTES } else { 0 },
            ring_capacity: plan.ring_size,
        };
        match spawn_measuring_thread(
            thread_plan,
            Arc::clone(gate),
            Arc::clone(stop),
            ready_tx.clone(),
        ) {
            Ok(t) => threads.push(t),
            Err(e) => {
                // The threads already started wait at the gate for the full count, which can no
                // longer be reached; this error ends the process, and them with it.
                return Err(Failure::system(format!(
                    "cannot start the measuring thread for CPU {cpu}: {e}"
                )));
            }
        }
    }
    let mut refusals = Vec::new();
    for _ in 0..threads.len() {
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => refusals.push(e),
            Err(_) => refusals.push(crate::measure::SetupError {
                cpu: usize::MAX,
                message: "a measuring thread ended during setup".into(),
            }),
        }
    }
    if let Some(first) = refusals.into_iter().next() {
        gate.abort();
        threads.into_iter().for_each(|t| drop(t.join.join()));
        return Err(Failure::system(first.message));
    }
    Ok(threads)
}

type Writers = (HlogWriter, Option<SampleLogWriter>, EventLog);

/// Creates the files of the result directory; their headers follow once the start is fixed.
fn prepare_results(plan: &RunPlan, result_dir: &ResultDir) -> Result<Writers> {
    let create = |name: &str| {
        result_dir
            .create_file(name)
            .or_run(|| format!("cannot create {}", result_dir.file(name).display()))
    };
    let hlog_writer = HlogWriter::new(create(hlog::FILE_NAME)?);
    let sample_writer = match plan.samples {
        true => Some(SampleLogWriter::new(create(samplelog::FILE_NAME)?)),
        false => None,
    };
    let events = EventLog::new(create(events::FILE_NAME)?);
    Ok((hlog_writer, sample_writer, events))
}

fn plan_record(plan: &RunPlan) -> PlanRecord {
    PlanRecord {
        cpus: plan.cpus.clone(),
        policy: plan.policy.name().into(),
        priority: plan.priority,
        deadline_runtime_ns: match plan.thread_policy(0) {
            crate::measure::Policy::Deadline { runtime_ns, .. } => Some(runtime_ns),
            _ => None,
        },
        wake: plan.wake.name.into(),
        clock: plan.clock.name().into(),
        interval_ns: plan.interval_ns,
        distance_ns: plan.distance_ns,
        interval_step_ns: plan.interval_step_ns,
        duration_ns: match plan.length {
            RunLength::Duration(ns) => Some(ns),
            RunLength::Loops(_) => None,
        },
        loops: match plan.length {
            RunLength::Loops(n) => Some(n),
            RunLength::Duration(_) => None,
        },
        deadline_ns: plan.deadline_ns,
        log_interval_ns: plan.log_interval_ns,
        loads: plan.load_texts.clone(),
        samples: plan.samples,
        ring_size: plan.ring_size,
        mlock: plan.mlock,
        pm_qos_us: plan.pm_qos_us,
        trace: plan.trace,
        explain_above_ns: plan.explain_above_ns,
    }
}

fn thread_summaries(
    plan: &RunPlan,
    results: &[ThreadResult],
    ends: &[(usize, i32, ThreadEnd)],
) -> Vec<ThreadSummary> {
    results
        .iter()
        .zip(ends)
        .map(|(r, (_, tid, end))| ThreadSummary {
            cpu: r.cpu,
            thread_index: r.index,
            tid: *tid,
            interval_ns: plan.thread_interval_ns(r.index),
            deadline_ns: plan.thread_deadline_ns(r.index),
            latency: r.latency.clone(),
            missed_periods: r.missed_periods,
            dropped_records: r.dropped_records,
            deadline_misses: r.deadline_misses,
            early_wakeups: r.early_wakeups,
            end: match end {
                ThreadEnd::Completed => "completed".into(),
                ThreadEnd::Stopped => "stopped".into(),
                ThreadEnd::Failed(m) => format!("failed: {m}"),
            },
            irq_latency: r.trace.as_ref().map(|t| t.irq_latency.clone()),
        })
        .collect()
}

/// Warnings about what the run itself saw.
fn run_warnings(results: &[ThreadResult]) -> Vec<String> {
    let mut w = Vec::new();
    for r in results {
        if r.dropped_records > 0 {
            w.push(format!(
                "CPU {}: {} samples were dropped because the recorder fell behind (ring full); the statistics miss them. Raise --ring-size",
                r.cpu, r.dropped_records
            ));
        }
        if r.early_wakeups > 0 {
            w.push(format!(
                "CPU {}: {} wakeups came before their due time (negative latency): a clock step (--clock realtime) or an early-waking method; they are counted as 0 in the percentiles",
                r.cpu, r.early_wakeups
            ));
        }
    }
    w
}

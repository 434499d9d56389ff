//! Starting a session, in named steps: claim the result directory, check the system
//! (preflight), place jitterlab's own threads, acquire the parts (acquire.rs: threads, CPU
//! locks, loads, PM QoS, tracing), fix the timeline, open the result files (files.rs) with the
//! first run.json, wire the recorder, and arm (open the start gate, follow the IPC senders).
//! This file is the sequence and its timing; what each step takes is in its own file. Each
//! step returns owned values that undo themselves, so a refusal at any step gives back what
//! the earlier ones took, in the session's teardown order, and removes the new directory.

use super::acquire::{Acquired, acquire};
use super::events::EventWriter;
use super::files::{RunFiles, begin_files, counters, create_files, open_counters};
use super::{Session, SessionOptions, layout, startup, steal};
use crate::cpulist::format_cpu_list;
use crate::error::{Failure, OrFailure, Result};
use crate::format::events::Event;
use crate::format::hlog::HlogWriter;
use crate::format::run_record::{EnvironmentRecord, RunRecord};
use crate::format::samplelog::SampleLogWriter;
use crate::measure::MeasuringThread;
use crate::measure::clock::monotonic_ns;
use crate::measure::sched::{DrainPriority, Housekeeping};
use crate::measure::wake::block_timer_signals;
use crate::plan::{PREFAULT_STACK_BYTES, RunPlan};
use crate::recorder::live::LiveView;
use crate::recorder::segments::SegmentLedger;
use crate::recorder::{Recorder, ThreadFeed};
use crate::results::ResultDir;
use crate::results::dir::{self, Claim};
use crate::session::{plan_record, system_snapshot};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

/// The lead-in: the time from fixing the start to the first due wakeup. It must cover the work
/// from fixing the start to opening the gate (the result files' headers, the first run.json,
/// the recorder) and each measuring thread's way from the gate to its first sleep, both of
/// which grow with the threads and with the machine's slowness: so [`LEAD_IN_BASE_NS`] plus
/// what this run's measuring threads took to set up (`threads_setup_ns`: started, pinned, their
/// stacks touched and their policy set, each in its own thread, a heavier way than the one
/// from the gate), at most [`LEAD_IN_MAX_NS`]. Sized by measurement (bench/README.md, "Why the
/// lead-in is"). A gate opened after the first due time is a run.json warning ([`late_start`]).
fn lead_in_ns(threads_setup_ns: u64) -> u64 {
    LEAD_IN_BASE_NS
        .saturating_add(threads_setup_ns)
        .min(LEAD_IN_MAX_NS)
}

/// The lead-in's least: 20 ms. With no lead-in, the work it covers took 0.9-3.7 ms of a debug
/// build at a load average of 17 on the 2-CPU development VM (5 times that and more), and the
/// threads' way from the gate under 15 us; under hackbench (load 36-97) it took 1-111 ms, which
/// the threads' set-up (115-652 ms there) covers (bench/README.md, "Why the lead-in is").
const LEAD_IN_BASE_NS: u64 = 20_000_000;
/// The lead-in's most: a set-up so slow (seconds on a big emulated machine) says little of the
/// way from the gate; a gate opened late is said.
const LEAD_IN_MAX_NS: u64 = 1_000_000_000;

/// What the checks before anything starts found.
struct Preflight {
    /// The system snapshot for run.json.
    system: serde_json::Value,
    /// Warnings for run.json and events.jsonl, in the order they were found.
    warnings: Vec<String>,
    /// With `--trace`: the tracefs instance, made but not started.
    trace_setup: Option<crate::trace::TraceSetup>,
}

/// The run's start and end on its own clock and on CLOCK_MONOTONIC.
#[derive(Debug, Clone, Copy)]
struct Timeline {
    start_wall: SystemTime,
    /// The first due time, on the plan's clock.
    start_ns: u64,
    /// The same on CLOCK_MONOTONIC (loads and events run on it).
    start_mono: u64,
    /// No wakeup is due at or after this (plan's clock); `u64::MAX` without an end in time.
    end_ns: u64,
    end_mono: u64,
    /// From fixing the start to the first due time.
    lead_in_ns: u64,
}

impl Session {
    /// Claims the result directory, checks the system, sets up the measuring threads, takes
    /// the CPU locks, starts the loads, PM QoS and tracing, writes the first run.json, and opens
    /// the start gate: the first wakeups are due a lead-in after the start was fixed
    /// (`lead_in_ns`). Any refusal returns
    /// before measuring, with what was taken given back (and the new directory removed).
    pub fn start(plan: &RunPlan, options: SessionOptions) -> Result<Session> {
        if let Some(segments) = &plan.segments {
            segments.check(plan.log_interval_ns)?;
        }
        // Declared first, so dropped last: a refusal below removes the directory after every
        // part taken since has been given back.
        startup::mark("session begun (plan made)");
        let claim = claim_result_dir(plan)?;
        startup::mark("result directory claimed");
        let preflight = preflight(plan)?;
        let mut warnings = preflight.warnings;
        // Before any other thread exists, so that every thread inherits the mask, and the
        // housekeeping CPUs.
        block_timer_signals();
        let housekeeping = Housekeeping::enter(plan.housekeeping.as_deref()).map_err(|e| {
            Failure::system(format!(
                "--housekeeping: cannot move jitterlab's own threads to CPUs {}: {e}; check that they are in this process's cpuset (/proc/self/status, Cpus_allowed_list)",
                format_cpu_list(plan.housekeeping.as_deref().unwrap_or_default())
            ))
        })?;
        // On PREEMPT_RT, jitterlab's own FIFO 1 threads off the measured CPUs, where they
        // would hold ktimers/N off (measure/sched.rs, OwnThreads).
        let housekeeping = own_threads(plan, &mut warnings).unwrap_or(housekeeping);
        if let Some(housekeeping) = &plan.housekeeping {
            warnings.extend(layout::smt_shared_with_housekeeping(
                &plan.cpus,
                housekeeping,
            ));
            warnings.extend(layout::numa_apart_from_housekeeping(
                &plan.cpus,
                housekeeping,
                &layout::numa_node_of,
            ));
        }
        let (stop, interrupted) = stop_on_signals()?;
        // Before anything that starts a thread or a load: from here on this thread runs
        // ahead of every real-time load beside it (plan/drain.rs), so that a load cannot
        // starve the setup, the drain or the handling of a stop request.
        let (drain_priority, refused) = DrainPriority::enter(plan.drain_priority);
        warnings.extend(refused);
        // Every permission missing said at once (memory locking, the real-time policy).
        super::permissions::check(plan)?;
        startup::mark("own threads placed, permissions checked");
        // Said of `--no-mlock` (run, noise); a drop-in that locks only when asked, as its tool
        // does (cyclictest without -m), has no fix to name and no warning to give.
        if !plan.mlock && plan.mlock_fix.is_some() {
            warnings.push(super::permissions::NO_MLOCK_WARNING.to_string());
        }
        let mut parts = acquire(plan, &stop, preflight.trace_setup, &mut warnings)?;
        let RunFiles {
            hlog,
            samples,
            events,
            segments,
        } = create_files(plan, claim.dir())?;
        startup::mark("result files created");
        // A stop request (SIGINT, SIGTERM) during the start-up: the run stops as soon as it
        // starts, so what only the measurement needs and takes long to start (the loads: 0.1 s
        // each here; the counters: seconds on many CPUs) is not started, and the stop is served
        // within a second from the first instant (issue 39 L-k). The supervisor also looks at
        // the stop between the loads it starts.
        let stopped = stop.load(Ordering::SeqCst);
        if stopped {
            warnings.push(super::starvation::not_started_for_a_stop(plan));
        } else {
            // The generators start now, before measuring, and run when this returns.
            parts.loads.start_generators(plan, claim.dir())?;
            startup::mark("load generators started");
        }
        // Opened before the start is fixed: opening every measured CPU's sources takes seconds
        // on a slow machine of many CPUs (3.3 s for 16 emulated CPUs, docs/lab.md check 7),
        // which the lead-in cannot cover.
        let sampler = (!stopped).then(|| open_counters(plan)).flatten();
        startup::mark("counters opened");

        let threads_setup_ns = startup::between(
            "own threads placed, permissions checked",
            "measuring threads set up",
        );
        let timeline = Timeline::from_now(plan, lead_in_ns(threads_setup_ns.unwrap_or(0)));
        startup::mark("start fixed: the lead-in begins");
        let mut events = EventWriter::new(events, timeline.start_mono);
        // Read as the lead-in begins: the window covers the whole measurement.
        let steal = steal::StealWatch::begin(&plan.cpus);
        let mut record = RunRecord {
            warnings: warnings.clone(),
            segments: segments.as_ref().map(SegmentLedger::record),
            kind: plan.measurement.kind(),
            ..RunRecord::new(
                options.command_line,
                plan_record(plan),
                preflight.system,
                EnvironmentRecord {
                    memory_locked: plan.mlock,
                    stack_prefaulted_bytes: if plan.mlock { PREFAULT_STACK_BYTES } else { 0 },
                    pm_qos: parts.pm_qos.record.clone(),
                    idle_states: parts.idle_states.as_ref().map(|l| l.record.clone()),
                    cpuset_partition: parts.partition.as_ref().map(|p| p.record()),
                },
                humantime::format_rfc3339_millis(timeline.start_wall).to_string(),
                timeline.start_mono,
            )
        };
        let (hlog, samples) = begin_files(
            plan,
            timeline.start_wall,
            timeline.start_ns,
            hlog,
            samples,
            claim.dir(),
        )?;
        let counters = counters(plan, sampler, claim.dir(), timeline.start_mono)?;
        // Written now so that a directory left by a killed run says what it was; from here on
        // the directory holds a run and stays.
        claim
            .dir()
            .write_first_run_record(&record)
            .or_run(|| format!("cannot write run.json in {}", claim.dir().path.display()))?;
        startup::mark("result headers and the first run.json written");
        let dir = claim.keep();
        let dir_journal = super::stale::journal_run_dir(&dir.path);
        for w in &warnings {
            events.write(&Event::Warning {
                time_ns: monotonic_ns(),
                message: w.clone(),
            });
        }
        events.write(&Event::RunStart {
            time_ns: timeline.start_mono,
        });

        let recorder = recorder(plan, &mut parts, hlog, samples, timeline.start_ns);
        let live = LiveView::new(
            options.quiet,
            &plan.cpus,
            plan.thread_expected_ns(0),
            crate::recorder::live::Held::new(
                match options.quiet {
                    true => Vec::new(),
                    false => super::starvation::live_reasons(plan),
                },
                plan.interval_step_ns(),
            ),
        );
        startup::mark("recorder and live view made");
        arm(plan, &mut parts, &timeline, &mut record, &mut events);
        // From here on this thread is the drain side (at `drain_priority` since the start):
        // it drains, joins the trace and draws the live view until finish has drained the
        // last samples.
        let Acquired {
            tracer,
            joiner: _,
            pm_qos,
            idle_states,
            loads,
            cpu_locks,
            threads,
            partition,
        } = parts;
        let actions = (!plan.actions.on_threshold.is_empty() || !plan.actions.on_end.is_empty())
            .then(|| {
                let backend = tracer.as_ref().map(|t| t.config.backend);
                super::actions::ActionRunner::new(&plan.actions, dir.clone(), backend)
            });
        Ok(Session {
            tracer,
            pm_qos,
            idle_states,
            loads,
            cpu_locks: Some(cpu_locks),
            threads,
            _partition: partition,
            drain_priority,
            recorder: Some(recorder),
            _housekeeping: housekeeping,
            events,
            plan: plan.clone(),
            dir,
            record,
            live: Some(live),
            stop,
            interrupted,
            stopped_by_caller: false,
            caller_end: None,
            scenario_end_ns: None,
            start_mono: timeline.start_mono,
            end_ns: timeline.end_ns,
            loops_end_ns: super::starvation::loops_end_ns(plan, timeline.start_ns),
            io_error: None,
            segments,
            late_wakeups: vec![Vec::new(); plan.cpus.len()],
            steal,
            actions,
            counters,
            dir_journal,
        })
    }
}

/// Makes the result directory before anything starts: a second run into the same --out is
/// refused here (exit 2), and dropping the claim before measuring begins removes it again.
fn claim_result_dir(plan: &RunPlan) -> Result<Claim> {
    match &plan.out {
        // A drop-in's default (D1): the default-name checks, a taken name moved on.
        Some(out) if plan.out_is_default => ResultDir::create_unique(out, plan.out_option),
        Some(out) => ResultDir::create(out, plan.out_option),
        None => ResultDir::create_unique(
            &dir::default_path(SystemTime::now(), &crate::doctor::host::hostname()),
            plan.out_option,
        ),
    }
}

/// What the system must offer, checked before anything starts (exit 3 otherwise), and what
/// killed runs left behind, cleaned up.
fn preflight(plan: &RunPlan) -> Result<Preflight> {
    // What the wake method needs of the system (e.g. /dev/rtc).
    plan.wake_method().check_system().map_err(Failure::system)?;
    // An exec: action whose program cannot be journaled because another user made this
    // user's journal directory is refused, never run unjournaled.
    super::children::refuse_untrusted_journals(
        &plan.actions,
        super::journal::TrustedDir::untrusted_for_this_user,
    )
    .map_err(Failure::system)?;
    // A system that cannot trace is refused here; the snapshot then says which back end the
    // trace set up, from the object it loaded (never loaded twice).
    startup::mark("wake method and journals checked");
    let trace_setup = match plan.trace {
        true => Some(
            crate::trace::prepare(&crate::trace::record::traced_cpus(plan), plan.trace_backend)
                .map_err(Failure::system)?,
        ),
        false => None,
    };
    if trace_setup.is_some() {
        startup::mark("trace prepared");
    }
    let (system, mut warnings) = system_snapshot(plan, trace_setup.as_ref().map(|s| s.backend()));
    // What killed runs left was undone at the command's start (session/stale.rs
    // `undo_at_start`, called by commands::dispatch; here if a library caller did not): the
    // first session of the process records what that undid.
    warnings.extend(super::stale::take_start_warnings());
    // `auto` taking tracefs is said, with the reason: tracing costs the measured CPUs more.
    if let Some(b) = trace_setup.as_ref().map(|s| s.backend())
        && b.backend == "tracefs"
        && plan.trace_backend == crate::plan::TraceBackendChoice::Auto
    {
        warnings.push(format!(
            "--trace: {}; tracefs costs the measured CPUs more than BPF (docs/tracing.md)",
            b.reason
        ));
    }
    Ok(Preflight {
        system,
        warnings,
        trace_setup,
    })
}

/// Confines the calling thread (and every thread it starts) to the housekeeping CPUs on a
/// PREEMPT_RT kernel when `--housekeeping` is not given ([`sched::OwnThreads`]); says when
/// there is none and the wake method's timer expires in `ktimers/N`. A confinement the kernel
/// refuses is said, not fatal: the threads then run where they would have.
fn own_threads(plan: &RunPlan, warnings: &mut Vec<String>) -> Option<Housekeeping> {
    use crate::measure::sched::{self, OwnThreads};
    match sched::own_threads_now(plan.housekeeping.is_some(), &plan.cpus) {
        OwnThreads::Anywhere => None,
        OwnThreads::Housekeeping(cpus) => match Housekeeping::enter(Some(&cpus)) {
            Ok(h) => Some(h),
            Err(e) => {
                warnings.push(format!(
                    "PREEMPT_RT: cannot move jitterlab's own threads (FIFO 1) to the housekeeping CPUs {}: {e}; they may run on the measured CPUs and hold ktimers/N off there (pass --housekeeping CPUS)",
                    format_cpu_list(&cpus)
                ));
                None
            }
        },
        OwnThreads::NoneLeft => {
            let soft = plan
                .wake_method()
                .trace
                .timer_functions
                .iter()
                .any(|f| sched::SOFT_TIMER_FUNCTIONS.contains(f));
            if soft {
                warnings.push(format!(
                    "PREEMPT_RT: no CPU outside the measured and isolated ones for jitterlab's own threads (FIFO 1), so they run beside the measuring threads on CPUs {}, where the timers of --wake {} expire in ktimers/N, also FIFO 1: they can hold it off and delay wakeups by milliseconds; leave a CPU unmeasured and not isolated for them, or use a sleeper (--wake clock-nanosleep), whose timer expires in hard interrupt context",
                    format_cpu_list(&plan.cpus),
                    plan.wake_method().name
                ));
            }
            None
        }
    }
}

impl Timeline {
    /// The common start, `lead_in_ns` from now ([`lead_in_ns`]: every thread is asleep by
    /// then), and the end the plan's duration gives.
    fn from_now(plan: &RunPlan, lead_in_ns: u64) -> Timeline {
        let start_wall = SystemTime::now() + Duration::from_nanos(lead_in_ns);
        let start_ns = plan.clock().now_ns() + lead_in_ns;
        // With the default clock the two starts are one.
        let start_mono = if plan.clock() == crate::measure::Clock::Monotonic {
            start_ns
        } else {
            monotonic_ns() + lead_in_ns
        };
        // Without an end in time (loops, or no end at all), nothing is due to end.
        let (end_ns, end_mono) = match plan.length.duration_ns() {
            Some(ns) => (start_ns + ns, start_mono + ns),
            None => (u64::MAX, u64::MAX),
        };
        Timeline {
            start_wall,
            start_ns,
            start_mono,
            end_ns,
            end_mono,
            lead_in_ns,
        }
    }
}

/// The recorder, fed by every measuring thread's ring (taken from the threads), joined with
/// the trace and summarising blocks where the plan asks.
fn recorder(
    plan: &RunPlan,
    parts: &mut Acquired,
    hlog: HlogWriter,
    samples: Option<SampleLogWriter>,
    start_ns: u64,
) -> Recorder {
    let feeds: Vec<ThreadFeed> = parts
        .threads
        .list
        .iter_mut()
        .map(|t| ThreadFeed {
            cpu: t.cpu,
            index: t.index,
            deadline_ns: plan.thread_deadline_ns(t.index),
            counters: Arc::clone(&t.counters),
            consumer: std::mem::replace(&mut t.consumer, rtrb::RingBuffer::new(1).1),
            tails: plan.thread_tail_plan(t.index),
            kind: plan.measurement.kind(),
        })
        .collect();
    let mut recorder = Recorder::new(feeds, hlog, samples, start_ns, plan.log_interval_ns);
    if let Some(j) = parts.joiner.take() {
        recorder = recorder.with_trace(Box::new(j), plan.ring_size * 4);
    }
    if let Some(every) = plan.summary_every {
        recorder = recorder.with_summaries(every);
    }
    if plan.actions.watches_spikes() {
        recorder = recorder.with_spike_watch(plan.actions.history_ns());
    }
    if let Some(count) = parts.loads.wakeup_count() {
        recorder = recorder.with_wakeup_count(count);
    }
    recorder
}

/// Opens the start gate, follows the IPC senders as they start, and starts the loads' clock.
fn arm(
    plan: &RunPlan,
    parts: &mut Acquired,
    timeline: &Timeline,
    record: &mut RunRecord,
    events: &mut EventWriter,
) {
    parts.threads.open(timeline.start_ns, timeline.end_ns);
    startup::mark("start gate opened");
    record.startup = Some(startup::take(timeline.start_mono));
    if let Some(message) = late_start(timeline.start_mono, monotonic_ns(), timeline.lead_in_ns) {
        record.warnings.push(message.clone());
        events.write(&Event::Warning {
            time_ns: monotonic_ns(),
            message,
        });
    }
    let has_senders = plan.measurement.sender().is_some();
    if has_senders {
        let warning = follow_senders(
            &parts.threads.list,
            timeline.start_mono,
            record,
            parts.tracer.as_mut(),
        );
        if let Some(message) = warning {
            record.warnings.push(message.clone());
            events.write(&Event::Warning {
                time_ns: monotonic_ns(),
                message,
            });
        }
    }
    parts.loads.begin(timeline.start_mono, timeline.end_mono);
}

/// A gate opened at `opened_mono`, after the first due time `start_mono`: the set-up between
/// fixing the start and opening the gate outlasted the lead-in, and every thread's first
/// wakeup is late by it. Said, so that this lateness is not taken for the system's (the trace
/// would put it on the timer interrupt: "no trace event", as if the hypervisor held the CPU).
fn late_start(start_mono: u64, opened_mono: u64, lead_in_ns: u64) -> Option<String> {
    let late = opened_mono.checked_sub(start_mono).filter(|&ns| ns > 0)?;
    Some(format!(
        "the measuring threads were released {} after their first due time (jitterlab's set-up \
         outlasted its {} lead-in: a slow or overloaded machine): the first wakeup of each \
         thread is late by that much, which is not the system's latency",
        crate::units::format_ns(late),
        crate::units::format_ns(lead_in_ns)
    ))
}

/// The stop and interrupted flags, set by SIGINT and SIGTERM (`session::signals`: caught since
/// the command began, so a signal during setup stops the session as soon as it starts); a
/// second signal while stopping ends the process at once.
fn stop_on_signals() -> Result<(Arc<AtomicBool>, Arc<AtomicBool>)> {
    let stop = crate::session::signals::stop_flag()?;
    Ok((stop, crate::session::signals::catch()?))
}

/// IPC runs, once the gate is open: waits for each measuring thread's sender to start (until
/// `until_mono`, the first due time, at the latest), records the senders' thread ids in
/// run.json's `plan.ipc`, and with `--trace` has the tracer follow them. A warning when the
/// tracer cannot.
fn follow_senders(
    threads: &[MeasuringThread],
    until_mono: u64,
    record: &mut crate::format::run_record::RunRecord,
    tracer: Option<&mut crate::trace::Tracer>,
) -> Option<String> {
    let tids = || -> Vec<i32> {
        threads
            .iter()
            .map(|t| t.counters.sender_tid.load(Ordering::Relaxed))
            .collect()
    };
    // A thread whose sender failed to start has ended: nothing to wait for.
    let waiting = |t: &MeasuringThread| {
        t.counters.sender_tid.load(Ordering::Relaxed) == 0 && !t.join.is_finished()
    };
    while threads.iter().any(waiting) && crate::measure::clock::monotonic_ns() < until_mono {
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    let tids = tids();
    if let Some(ipc) = &mut record.plan.ipc {
        ipc.sender_tids = tids.clone();
    }
    let tracer = tracer?;
    tracer
        .follow_senders(&tids)
        .err()
        .map(|e| format!("{e}; the explanations of this run do not follow the sender threads"))
}

#[cfg(test)]
#[path = "start_tests.rs"]
mod tests;

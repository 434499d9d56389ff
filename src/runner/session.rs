//! A run session: everything a measurement holds, from the claimed result directory to the
//! written results, as owned values that undo themselves.
//!
//! [`Session::start`] takes the parts one by one and returns with the start gate open;
//! [`Session::poll`] is one round of the recorder; [`Session::stop`] asks the threads to end;
//! [`Session::finish`] collects the results. `runner::run` is those four calls; a caller that
//! measures without an end (`RunLength::Endless`: `jitterlab monitor`) polls until it
//! decides to stop and reads the per-CPU state ([`Session::cpu_states`]) after each poll.
//!
//! Teardown order. Every part is a field whose `Drop` undoes it, and Rust drops fields in
//! declaration order, so the order of [`Session`]'s fields is the order in which a session
//! that is dropped (an error, a panic, the end of `finish`) gives the system back: tracing,
//! PM QoS, loads, CPU locks, measuring threads, then the result files. [`Session::start`] takes
//! them in the reverse order (threads first), so an error on the way to the start releases
//! what it took in the same order (except the files, which hold nothing yet then, and the
//! claim of the result directory, released last, which removes it). `finish` does the same
//! steps by hand, reading what each part has to say (the trace's statistics, the loads'
//! outcome) on the way.

mod finish;
mod parts;

use super::cpulock::{self, CpuLocks};
use super::loads::RunLoads;
use super::pmqos::{self, PmQosHold};
use super::threads::Threads;
use super::{plan_record, system_snapshot};
use crate::error::{Failure, OrFailure, Result};
use crate::format::events::Event;
use crate::format::run_record::{EnvironmentRecord, RunRecord};
use crate::format::samplelog::SampleLogHeader;
use crate::measure::clock::monotonic_ns;
use crate::measure::sched::{explain_mlock_refusal, lock_all_memory};
use crate::measure::wake::block_timer_signals;
use crate::plan::{PREFAULT_STACK_BYTES, RunLength, RunPlan};
use crate::record::live::LiveView;
use crate::record::segments::SegmentLedger;
use crate::record::{LiveRow, Recorder, ThreadFeed};
use crate::results::{ResultDir, dir};
use hdrhistogram::Histogram;
use parts::{
    EventWriter, RunFiles, create_files, follow_senders, start_trace, stop_on_signals, write_failed,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

/// Time between opening the start gate and the first due wakeup: every thread must be back in
/// its loop and asleep before it.
const LEAD_IN_NS: u64 = 50_000_000;

/// What a session needs besides its plan.
#[derive(Debug, Clone, Default)]
pub struct SessionOptions {
    /// No live view or status lines.
    pub quiet: bool,
    /// Recorded in run.json.
    pub command_line: Vec<String>,
}

/// What [`Session::poll`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// At least one measuring thread still runs.
    Measuring,
    /// Every measuring thread has ended (its end, a stop, a failure): time to finish.
    Ended,
}

/// One CPU's state after a poll, borrowed from the recorder: nothing is copied but the few
/// figures of `row`.
pub struct CpuState<'a> {
    /// Counters and the figures of the last completed interval.
    pub row: LiveRow,
    /// Every sample since the start, as a histogram in ns (negative latencies counted as 0).
    pub cumulative: &'a Histogram<u64>,
    /// With `--trace`: the timer IRQ latency of every joined sample since the start, ns.
    pub irq: Option<&'a Histogram<u64>>,
    /// With `--trace`: explained late wakeups since the start, by
    /// [`crate::format::events::SpikeExplanation::cause`], as (cause, count), in first-seen order.
    pub late_wakeups: &'a [(&'static str, u64)],
}

/// A measurement in progress. See the module documentation for the order of its parts.
pub struct Session {
    // The owned parts, in teardown order (fields drop in declaration order).
    /// Tracing first: its filters name the measuring threads.
    tracer: Option<crate::trace::Tracer>,
    /// PM QoS before the loads, as it was taken after them.
    pm_qos: PmQosHold,
    /// Spike threads joined, load generators stopped and reaped.
    loads: RunLoads,
    /// Other runs may measure these CPUs again.
    _cpu_locks: CpuLocks,
    /// Released from the gate if never opened, stopped, interrupted, joined.
    threads: Threads,
    /// The hlog and sample log (everything completed is written already); taken by `finish`.
    recorder: Option<Recorder>,
    /// The one writer of events.jsonl.
    events: EventWriter,

    // Plain state.
    plan: RunPlan,
    dir: ResultDir,
    record: RunRecord,
    live: Option<LiveView>,
    /// Set by SIGINT, SIGTERM, a write error, a failed load or [`Session::stop`]: the
    /// measuring threads end at their next wakeup.
    stop: Arc<AtomicBool>,
    /// Set by SIGINT and SIGTERM.
    interrupted: Arc<AtomicBool>,
    stopped_by_caller: bool,
    /// The first due time on CLOCK_MONOTONIC.
    start_mono: u64,
    /// No wakeup is due at or after this (plan's clock); `u64::MAX` without an end in time.
    end_ns: u64,
    /// The first write error (a full disk): measuring stops, the statistics are still complete.
    io_error: Option<String>,
    /// What the segment writer has done, with `RunPlan::segments`: run.json is rewritten when
    /// it changes.
    segments: Option<SegmentLedger>,
    /// Per thread (plan order), explained late wakeups by cause (`--trace`).
    late_wakeups: Vec<Vec<(&'static str, u64)>>,
}

impl Session {
    /// Claims the result directory, checks the system, sets up the measuring threads, takes
    /// the CPU locks, starts the loads, PM QoS and tracing, writes the first run.json, and opens
    /// the start gate: the first wakeups are due 50 ms after this returns. Any refusal returns
    /// before measuring, with what was taken given back (and the new directory removed).
    pub fn start(plan: &RunPlan, options: SessionOptions) -> Result<Session> {
        if let Some(segments) = &plan.segments {
            segments.check(plan.log_interval_ns)?;
        }
        // Made before anything starts: a second run into the same --out is refused here (exit
        // 2), and dropping the claim before measuring begins removes the directory again.
        let claim = match &plan.out {
            Some(out) => ResultDir::create(out, "--out")?,
            None => ResultDir::create_unique(
                &dir::default_path(SystemTime::now(), &crate::system::host::hostname()),
                "--out",
            )?,
        };
        let out = claim.dir().path.clone();
        // What the wake method needs of the system (e.g. /dev/rtc): exit 3 before anything
        // starts.
        plan.wake_method().check_system().map_err(Failure::system)?;
        let (system, mut warnings) = system_snapshot(plan);
        // Tracing instances left by a jitterlab that was killed are removed at every start.
        warnings.extend(crate::trace::tracefs::remove_stale_instances());
        // So are loads of a jitterlab killed with its reaper (found by their marker).
        warnings.extend(crate::load::contain::kill_orphaned_loads());
        // Before anything starts: a system that cannot trace is refused here (exit 3).
        let trace_setup = match plan.trace {
            true => Some(
                crate::trace::prepare(&crate::trace::record::traced_cpus(plan))
                    .map_err(Failure::system)?,
            ),
            false => None,
        };

        // Before any other thread exists, so that every thread inherits the mask.
        block_timer_signals();
        let (stop, interrupted) = stop_on_signals()?;
        if plan.mlock {
            lock_all_memory().map_err(|e| Failure::system(explain_mlock_refusal(&e)))?;
        }

        // From here on every part is an owned value that undoes itself when dropped, taken in
        // the reverse of the session's teardown order.
        let mut threads = Threads::start(plan, &stop)?;
        // Once the system has accepted everything and before anything runs: CPUs another run
        // is measuring are refused here (exit 3).
        let (cpu_locks, lock_warnings) = cpulock::take(&plan.cpus, plan.allow_shared_cpus)?;
        warnings.extend(lock_warnings);
        let mut loads = RunLoads::start_spikes(plan, &stop)?;
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
        let RunFiles {
            hlog: mut hlog_writer,
            samples: mut sample_writer,
            events,
            segments,
        } = create_files(plan, claim.dir())?;
        let mut events = EventWriter(events);
        // The generators start now, before measuring, and run when this returns.
        loads.start_generators(plan, claim.dir())?;

        // The common start: every thread is asleep by then.
        let start_wall = SystemTime::now() + Duration::from_nanos(LEAD_IN_NS);
        let start_ns = plan.clock().now_ns() + LEAD_IN_NS;
        // Loads and events run on CLOCK_MONOTONIC; with the default clock the two starts are
        // one.
        let start_mono = if plan.clock() == crate::measure::Clock::Monotonic {
            start_ns
        } else {
            monotonic_ns() + LEAD_IN_NS
        };
        // Without an end in time (loops, or no end at all), nothing is due to end.
        let (end_ns, end_mono) = match plan.length.duration_ns() {
            Some(ns) => (start_ns + ns, start_mono + ns),
            None => (u64::MAX, u64::MAX),
        };

        let mut record = RunRecord {
            warnings: warnings.clone(),
            segments: segments.as_ref().map(SegmentLedger::record),
            kind: plan.measurement.kind(),
            ..RunRecord::new(
                options.command_line,
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
                &format!(
                    "jitterlab {} {} log",
                    env!("CARGO_PKG_VERSION"),
                    plan.measurement.kind().name()
                ),
            )
            .and_then(|_| match &mut sample_writer {
                Some(w) => w.begin(SampleLogHeader {
                    clock_id: plan.clock().id() as u32,
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
        // Written now so that a directory left by a killed run says what it was; from here on
        // the directory holds a run and stays.
        claim
            .dir()
            .write_first_run_record(&record)
            .or_run(|| format!("cannot write run.json in {}", out.display()))?;
        let dir = claim.keep();
        for w in &warnings {
            events.write(&Event::Warning {
                time_ns: monotonic_ns(),
                message: w.clone(),
            });
        }
        events.write(&Event::RunStart {
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
                tails: plan.thread_tail_plan(t.index),
                kind: plan.measurement.kind(),
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
        if let Some(every) = plan.summary_every {
            recorder = recorder.with_summaries(every);
        }
        let live = LiveView::new(
            options.quiet,
            &plan.cpus,
            plan.length.expected_ns(plan.thread_interval_ns(0)),
        );

        threads.open(start_ns, end_ns);
        if plan
            .measurement
            .latency()
            .is_some_and(|l| l.sender.is_some())
        {
            let warning = follow_senders(&threads.list, start_mono, &mut record, tracer.as_mut());
            if let Some(message) = warning {
                record.warnings.push(message.clone());
                events.write(&Event::Warning {
                    time_ns: monotonic_ns(),
                    message,
                });
            }
        }
        loads.begin(start_mono, end_mono);
        Ok(Session {
            tracer,
            pm_qos,
            loads,
            _cpu_locks: cpu_locks,
            threads,
            recorder: Some(recorder),
            events,
            plan: plan.clone(),
            dir,
            record,
            live: Some(live),
            stop,
            interrupted,
            stopped_by_caller: false,
            start_mono,
            end_ns,
            io_error: None,
            segments,
            late_wakeups: vec![Vec::new(); plan.cpus.len()],
        })
    }

    /// One round of the recorder: takes what the rings hold (completed intervals go to
    /// latency.hlog), writes the spike explanations and the loads' events to events.jsonl, and
    /// updates the live view. Meant to be called every [`super::DRAIN_EVERY`]; the rings hold
    /// ten rounds' worth of samples.
    pub fn poll(&mut self) -> Progress {
        // A stop (SIGINT, SIGTERM, a write error, `stop`) ends the threads' sleeps now rather
        // than at their next wakeup; repeated each round, as a signal sent just before a thread
        // went to sleep finds nothing to interrupt.
        if self.stop.load(Ordering::SeqCst) {
            self.threads.interrupt();
        }
        let recorder = self
            .recorder
            .as_mut()
            .expect("the recorder lives until finish");
        if let Err(e) = recorder.drain() {
            let message = write_failed(&self.dir, e);
            self.io_error.get_or_insert(message);
            self.stop.store(true, Ordering::SeqCst);
        }
        self.log_explanations();
        self.stop_if_a_thread_ended();
        self.record_segments();
        for e in self.loads.drain_events() {
            self.events.write(&e);
        }
        let elapsed_ns = self.elapsed_ns();
        let recorder = self
            .recorder
            .as_ref()
            .expect("the recorder lives until finish");
        if let Some(live) = &mut self.live {
            live.update(elapsed_ns, &recorder.live_rows());
        }
        if self.threads.all_ended() {
            Progress::Ended
        } else {
            Progress::Measuring
        }
    }

    /// Asks the measuring threads to end (the next polls interrupt their sleeps); the run
    /// ends `interrupted`, with the reason "stopped by its caller" unless a signal came first.
    pub fn stop(&mut self) {
        self.stopped_by_caller = true;
        self.stop.store(true, Ordering::SeqCst);
    }

    /// Time since the first due time (CLOCK_MONOTONIC), ns.
    pub fn elapsed_ns(&self) -> u64 {
        monotonic_ns().saturating_sub(self.start_mono)
    }

    /// The result directory.
    pub fn dir(&self) -> &ResultDir {
        &self.dir
    }

    /// Each measured CPU's state as of the last poll, in plan order: counters and the last
    /// completed interval's figures, and the cumulative histogram borrowed (copy it only when
    /// needed).
    pub fn cpu_states(&self) -> impl Iterator<Item = CpuState<'_>> {
        let recorder = self
            .recorder
            .as_ref()
            .expect("the recorder lives until finish");
        recorder
            .live_rows()
            .into_iter()
            .zip(recorder.cumulative_histograms())
            .zip(recorder.cumulative_irq_histograms())
            .zip(&self.late_wakeups)
            .map(|(((row, (_, cumulative)), irq), late)| CpuState {
                row,
                cumulative,
                irq,
                late_wakeups: late,
            })
    }

    /// In a run without end, a measuring thread that returns before the stop has failed (its
    /// wake method's sleep or timer refused): the run stops, so that it ends `failed` (exit 4)
    /// with its segments closed, rather than going on with a CPU that no longer measures, whose
    /// tag would keep every later segment open (a segment is sealed once every tag has left it)
    /// and whose metrics would stand still. A monitor's service manager restarts it.
    fn stop_if_a_thread_ended(&mut self) {
        if self.plan.length == RunLength::Endless
            && !self.stop.load(Ordering::SeqCst)
            && self.threads.any_ended()
        {
            self.stop.store(true, Ordering::SeqCst);
        }
    }

    /// At a segment boundary (a segment sealed, or deleted by retention), rewrites run.json
    /// with the segments as they are, the time measured so far and each thread's figures so far
    /// (`end`: `running`), so that a crash (SIGKILL) leaves a record that names every complete
    /// segment and loses only the figures measured since the last boundary.
    fn record_segments(&mut self) {
        let Some(update) = self.segments.as_ref().and_then(SegmentLedger::take_update) else {
            return;
        };
        self.record.segments = Some(update);
        self.record.duration_ns = Some(self.elapsed_ns());
        let results = self
            .recorder
            .as_ref()
            .expect("the recorder lives until finish")
            .results_so_far();
        self.record.threads =
            super::running_thread_summaries(&self.plan, &results, &self.threads.tids());
        if let Err(e) = self.dir.write_first_run_record(&self.record) {
            let message = write_failed(&self.dir, e);
            self.io_error.get_or_insert(message);
            self.stop.store(true, Ordering::SeqCst);
        }
    }

    /// Moves the recorder's spike explanations (`--trace`), closed noise intervals and closed
    /// blocks of samples (`--summary-every`) to events.jsonl.
    fn log_explanations(&mut self) {
        let recorder = self
            .recorder
            .as_mut()
            .expect("the recorder lives until finish");
        for i in recorder.take_noise_intervals() {
            self.events.write(&Event::NoiseInterval(i));
        }
        for s in recorder.take_wakeup_summaries() {
            self.events.write(&Event::WakeupSummary(s));
        }
        for x in recorder.take_explanations() {
            // Counted for `cpu_states` (a monitor's metrics) before it goes to events.jsonl.
            if let Some(index) = self.plan.cpus.iter().position(|&c| c == x.cpu) {
                let counts = &mut self.late_wakeups[index];
                match counts.iter_mut().find(|(cause, _)| *cause == x.cause()) {
                    Some((_, n)) => *n += 1,
                    None => counts.push((x.cause(), 1)),
                }
            }
            self.events.write(&Event::SpikeExplained(x));
        }
    }
}

//! A run session: everything a measurement holds, from the claimed result directory to the
//! written results, as owned values that undo themselves. [`run`] is a session from start to
//! finish: Result directory → system checks → memory lock → measuring threads set up and
//! waiting → CPU locks → loads → PM QoS → tracing → result files → start → drain until done →
//! results.
//!
//! [`Session::start`] (start.rs) takes the parts one by one and returns with the start gate
//! open; [`Session::poll`] is one round of the recorder; [`Session::stop`] asks the threads to
//! end; [`Session::finish`] (finish.rs) collects the results. A caller that measures without an
//! end (`RunLength::Endless`: `jitterlab monitor`) polls until it decides to stop and reads the
//! per-CPU state ([`Session::cpu_states`]) after each poll.
//!
//! Every resource taken is released by the kernel or by a destructor on every exit path: the
//! trace instance is removed (trace/), the PM QoS request is an open file (pmqos.rs), the spike
//! load is a thread of this process and load generators are child processes stopped and reaped
//! by a drop guard (loads.rs), the CPU locks are flocks (cpulock.rs), the measuring threads are
//! a guard that releases them from the start gate and joins them (threads.rs). The result
//! directory is made first, so that a second run into it is refused before anything starts;
//! until measuring begins a refusal removes it again, and from then on it is written
//! incrementally so that a crash leaves what was measured. The session is the one writer of
//! events.jsonl (events.rs; a segmented run's events are rotated with its segments): the loads
//! and the budget hand their events to it. What run.json
//! says about the plan, the system and each thread is built in run_json.rs.
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

mod acquire;
mod actions;
mod children;
pub(crate) mod cpulock;
mod cpuset;
mod events;
mod files;
mod finish;
pub(crate) mod idle_states;
/// The journals sit below the session (see journal.rs); its modules name them as their own.
use crate::journal;
mod layout;
pub mod loads;
mod open_files;
pub(crate) mod permissions;
pub(crate) mod pmqos;
mod run_json;
pub mod settings;
pub mod signals;
mod snapshot;
pub mod stale;
mod start;
pub mod startup;
mod starvation;
mod steal;
mod threads;

pub(crate) use run_json::{
    inversion_record, plan_record, run_warnings, running_thread_summaries, system_snapshot,
    thread_summaries,
};

use crate::error::Result;
use crate::format::events::Event;
use crate::format::run_record::RunRecord;
use crate::measure::clock::monotonic_ns;
use crate::measure::sched::{DrainPriority, Housekeeping};
use crate::plan::{RunLength, RunPlan};
use crate::recorder::live::LiveView;
use crate::recorder::segments::SegmentLedger;
use crate::recorder::{LiveRow, Recorder};
use crate::results::ResultDir;
use cpulock::CpuLocks;
use events::EventWriter;
use files::write_failed;
use hdrhistogram::Histogram;
use loads::RunLoads;
use pmqos::PmQosHold;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use threads::Threads;

/// How often the recorder usually drains the rings. Each drain wakes the recorder on one of
/// the measured CPUs, so it should be rare; the rings hold four seconds of samples by default,
/// forty drains' worth. A ring filling faster is drained sooner ([`Session::next_poll_in`]).
pub const DRAIN_EVERY: Duration = crate::recorder::MAX_DRAIN_WAIT;

/// The outcome of a run, for the command to print and turn into an exit code.
pub struct RunOutcome {
    pub dir: ResultDir,
    pub record: RunRecord,
}

/// Runs `plan` to its end: a [`Session`] started, polled every [`DRAIN_EVERY`] until its
/// threads have ended, and finished. `quiet`: no live view or status lines; `command_line` is
/// recorded in run.json.
pub fn run(plan: &RunPlan, quiet: bool, command_line: Vec<String>) -> Result<RunOutcome> {
    let mut session = Session::start(
        plan,
        SessionOptions {
            quiet,
            command_line,
        },
    )?;
    loop {
        std::thread::sleep(session.next_poll_in());
        if session.poll() == Progress::Ended {
            break;
        }
    }
    Ok(session.finish())
}

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
    pub(crate) late_wakeups: &'a [(&'static str, u64)],
}

/// A measurement in progress. See the module documentation for the order of its parts.
pub struct Session {
    // The owned parts, in teardown order (fields drop in declaration order).
    /// Tracing first: its filters name the measuring threads.
    tracer: Option<crate::trace::Tracer>,
    /// PM QoS before the loads, as it was taken after them.
    pm_qos: PmQosHold,
    /// `--idle-state-max`: the states disabled for the run, enabled again in `finish` (or on
    /// drop).
    idle_states: Option<idle_states::IdleStateLimit>,
    /// Spike threads joined, load generators stopped and reaped.
    loads: RunLoads,
    /// Other runs may measure these CPUs again (released by `finish` before `--on-end`).
    cpu_locks: Option<CpuLocks>,
    /// Released from the gate if never opened, stopped, interrupted, joined.
    threads: Threads,
    /// `--cpuset-partition`: removed once the threads in it have ended.
    _partition: Option<cpuset::CpusetPartition>,
    /// This thread's real-time priority while it drains (`--drain-priority`); left once the
    /// last samples are drained.
    drain_priority: DrainPriority,
    /// The hlog and sample log (everything completed is written already); taken by `finish`.
    recorder: Option<Recorder>,
    /// The one writer of events.jsonl (or of a segmented run's event files).
    events: EventWriter,

    // Plain state.
    plan: RunPlan,
    dir: ResultDir,
    record: RunRecord,
    live: Option<LiveView>,
    /// Set by SIGINT, SIGTERM, a write error, a failed load, [`Session::stop`], or the end of
    /// `--loops` served under the loads ([`Session::serve_the_end`]): the measuring threads end
    /// at their next wakeup.
    stop: Arc<AtomicBool>,
    /// Set by SIGINT and SIGTERM.
    interrupted: Arc<AtomicBool>,
    stopped_by_caller: bool,
    /// Set by [`Session::end_as_completed`]: the caller's own end, reached (`cyclictest -l`).
    caller_end: Option<String>,
    /// When a scenario with phases of `wakeups = N` ended the run (time since the first due
    /// time, ns): the measuring threads stop at their next wakeup, so the run's duration ends
    /// here, not after the drain and the loads' wind-up that follow (0.12 s in a 1 s run).
    scenario_end_ns: Option<u64>,
    /// The first due time on CLOCK_MONOTONIC.
    start_mono: u64,
    /// No wakeup is due at or after this (plan's clock); `u64::MAX` without an end in time.
    end_ns: u64,
    /// With `--loops`, when its end is due all the same (starvation.rs `loops_end_ns`), plan's
    /// clock; `u64::MAX` otherwise.
    loops_end_ns: u64,
    /// The first write error (a full disk): measuring stops, the statistics are still complete.
    io_error: Option<String>,
    /// This thread confined to the housekeeping CPUs (`--housekeeping`), its former CPUs given
    /// back when the session is dropped.
    _housekeeping: Housekeeping,
    /// What the segment writer has done, with `RunPlan::segments`: run.json is rewritten when
    /// it changes.
    segments: Option<SegmentLedger>,
    /// Per thread (plan order), explained late wakeups by cause (`--trace`).
    late_wakeups: Vec<Vec<(&'static str, u64)>>,
    /// The first reading of the measured CPUs' steal time (run.json `steal` at the end).
    steal: Option<steal::StealWatch>,
    /// `--on-threshold` / `--on-end`: None without them.
    actions: Option<actions::ActionRunner>,
    /// The measured CPUs' context counters, read at each log interval boundary (None with
    /// `--no-counters`).
    counters: Option<crate::recorder::counters::CounterLog>,
    /// The journal of the result directory (stale.rs `journal_run_dir`), removed once the
    /// final run.json is written: left by a killed run, the next start says the directory's
    /// owner is gone.
    dir_journal: Option<journal::Journal>,
}

impl Session {
    /// One round of the recorder: takes what the rings hold (completed intervals go to
    /// latency.hlog), writes the spike explanations and the loads' events to events.jsonl, and
    /// updates the live view. Meant to be called every [`DRAIN_EVERY`]; the rings hold
    /// ten rounds' worth of samples.
    pub fn poll(&mut self) -> Progress {
        // A stop (SIGINT, SIGTERM, a write error, `stop`) ends the threads' sleeps now rather
        // than at their next wakeup; repeated each round, as a signal sent just before a thread
        // went to sleep finds nothing to interrupt.
        if self.stop.load(Ordering::SeqCst) {
            self.threads.interrupt();
        }
        // First, so that the read comes as near its boundary as the poll does.
        if let Some(c) = &mut self.counters {
            c.poll(monotonic_ns());
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
        // PM QoS is the whole machine's: a lower request of another process, said when seen.
        self.pm_qos.watch(monotonic_ns());
        if let Some(w) = self.pm_qos.news() {
            self.events.write(&Event::Warning {
                time_ns: monotonic_ns(),
                message: w.clone(),
            });
            self.record.warnings.push(w);
        }
        self.fire_actions(false);
        self.stop_if_a_thread_ended();
        self.record_segments();
        for e in self.loads.drain_events() {
            self.events.write(&e);
        }
        self.end_with_the_scenario();
        self.serve_the_end();
        let elapsed_ns = self.elapsed_ns();
        let recorder = self
            .recorder
            .as_ref()
            .expect("the recorder lives until finish");
        if let Some(live) = &mut self.live {
            live.update(elapsed_ns, &recorder.live_rows());
        }
        // Last, once this round has served a stop and drained the rings: a measuring thread
        // that gave its CPU up to let this thread run resumes now (the starvation guard).
        crate::measure::guard::beat();
        if self.threads.done() {
            Progress::Ended
        } else {
            Progress::Measuring
        }
    }

    /// How long to wait before the next [`Session::poll`]: [`DRAIN_EVERY`], or less when a
    /// ring fills faster than that allows (the recorder's pace, `recorder/pace.rs`).
    pub(crate) fn next_poll_in(&self) -> Duration {
        let drain = self
            .recorder
            .as_ref()
            .map_or(DRAIN_EVERY, Recorder::next_drain_in);
        // The counters' next boundary, when it comes sooner.
        match &self.counters {
            Some(c) => drain.min(c.due_in(monotonic_ns())),
            None => drain,
        }
    }

    /// Per measured CPU and counter since the start: the sum of the changes, the last reading
    /// of a gauge (`jitterlab monitor`'s `/metrics`); empty with `--no-counters`.
    pub(crate) fn counter_totals(
        &self,
    ) -> impl Iterator<Item = (usize, &str, crate::format::counters::Kind, i64)> {
        self.counters.iter().flat_map(|c| c.totals())
    }

    /// Asks the measuring threads to end (the next polls interrupt their sleeps); the run
    /// ends `interrupted`, with the reason "stopped by its caller" unless a signal came first.
    pub fn stop(&mut self) {
        self.stopped_by_caller = true;
        self.stop.store(true, Ordering::SeqCst);
    }

    /// Ends the run as [`Session::stop`] does, but `completed`, `reason` its end reason: the
    /// caller's own end was reached (`cyclictest -l N`: a thread did its N loops, and every
    /// thread stops then, as rt-tests' cyclictest ends). A signal before it still makes the run
    /// `interrupted`.
    pub(crate) fn end_as_completed(&mut self, reason: String) {
        if self.caller_end.is_none() && !self.stopped_by_caller {
            self.caller_end = Some(reason);
        }
        self.stop.store(true, Ordering::SeqCst);
    }

    /// A scenario with phases of `wakeups = N` ends the run when its last phase has ended
    /// (its length in the plan only bounds it): `completed`, saying so.
    fn end_with_the_scenario(&mut self) {
        if self.caller_end.is_some()
            || self.scenario_end_ns.is_some()
            || !self
                .loads
                .wakeup_count()
                .is_some_and(|c| c.scenario_ended())
        {
            return;
        }
        let last = self
            .plan
            .scenario
            .as_ref()
            .and_then(|s| s.phases.last())
            .map_or(String::new(), |p| format!(" ('{}')", p.label));
        self.scenario_end_ns = Some(self.elapsed_ns());
        self.end_as_completed(format!(
            "the scenario's last phase{last} ended, and a scenario with phases of `wakeups = N` ends with its last phase"
        ));
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

    /// The run's end (its end time, or a stop: SIGINT, SIGTERM, a failure, [`Session::stop`])
    /// served whatever the loads do (issue 39, F8): a measuring thread below a real-time load
    /// on its CPU cannot run to see it, and used to be waited for before the loads were
    /// stopped, for ever. When a thread is still running [`threads::END_GRACE`] after the end
    /// was due, the loads are stopped now (a real-time load first returned to SCHED_OTHER), so
    /// that it runs and ends; each such thread is recorded with the loads that held it off its
    /// CPU (`finish`: its `end` in run.json, and a warning).
    ///
    /// At the end of `--loops` (no end time) the threads are told to end (the stop flag) before
    /// the loads are stopped: a thread released by the loads' stop went on with every loop it
    /// had left (2000 loops of 1 ms outlast [`threads::GIVE_UP_AFTER`]), so it was left behind
    /// and the run recorded as `failed`, "a task outside this run's loads" blamed (issue 39,
    /// N21); and a spike, which ends at the run's end time or at the stop flag, was waited for
    /// without end. Setting the flag is not a stop request: the run still ends `completed`
    /// (`finish::record_end` reads the signal and the caller's stop, not the flag). At a
    /// duration's end a released thread ends by itself at its next due time, after its late
    /// wakeup is recorded (with an IPC method, the periods its held-off sender let pass): the
    /// flag is left alone there, so that the wakeup is not cut off by it.
    fn serve_the_end(&mut self) {
        let now_ns = self.plan.clock().now_ns();
        let stopped = self.stop.load(Ordering::SeqCst);
        let end_due = stopped
            || (self.end_ns != u64::MAX && now_ns >= self.end_ns)
            || now_ns >= self.loops_end_ns;
        if !self.threads.overdue(end_due) {
            return;
        }
        let held = self.threads.loads_stopped();
        if self.end_ns == u64::MAX && !stopped {
            self.stop.store(true, Ordering::SeqCst);
            self.threads.interrupt();
        }
        self.loads.stop_early();
        let now = monotonic_ns();
        for (index, cpu) in held {
            let reason = starvation::reason(&self.plan, index, cpu);
            let message = format!(
                "the measuring thread on CPU {cpu} had not ended {} ms after {}: {reason}; the loads were stopped so that it could end",
                threads::END_GRACE.as_millis(),
                if stopped {
                    "the run was stopped".to_string()
                } else if self.end_ns == u64::MAX {
                    format!(
                        "the end of --loops was due ({} x its loops' time at the interval, and {} s)",
                        starvation::LOOPS_FACTOR,
                        starvation::LOOPS_SLACK_NS / 1_000_000_000
                    )
                } else {
                    "the run's end time".to_string()
                },
            );
            self.events.write(&Event::Warning {
                time_ns: now,
                message: message.clone(),
            });
            self.record.warnings.push(message);
            self.threads.starved.push((index, reason));
        }
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
        self.record.threads = running_thread_summaries(&self.plan, &results, &self.threads.tids());
        if let Err(e) = self.dir.write_first_run_record(&self.record) {
            let message = write_failed(&self.dir, e);
            self.io_error.get_or_insert(message);
            self.stop.store(true, Ordering::SeqCst);
        }
    }

    /// Hands the spikes started since the last poll to the `--on-threshold` actions (all
    /// pending snapshots completed when `last`), writes their events, and stops the run when a
    /// `stop` action fired.
    fn fire_actions(&mut self, last: bool) {
        let (Some(actions), Some(recorder)) = (&mut self.actions, &mut self.recorder) else {
            return;
        };
        for e in actions.poll(recorder, last) {
            self.events.write(&e);
        }
        if actions.stop_reason.is_some() && !self.stop.load(Ordering::SeqCst) {
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

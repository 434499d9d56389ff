//! Finishing a session: the threads joined, the loads stopped, the last samples and
//! explanations written, and the run record completed from what every part has to say (the
//! loads' outcome and per-phase statistics, the trace's figures, the budget's verdict).

use super::{Progress, Session, write_failed};
use crate::format::events::Event;
use crate::format::events::SpikeExplanation;
use crate::format::run_record::{CpuTimeRecord, Ended, RunRecord, ThreadCpuTime};
use crate::measure::ThreadEnd;
use crate::measure::clock::monotonic_ns;
use crate::plan::RunLength;
use crate::recorder::ThreadResult;
use crate::session::threads::JoinedThread;
use crate::session::{RunOutcome, inversion_record, loads, run_warnings, thread_summaries};
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

/// What the recorder had when it finished.
struct Recorded {
    results: Vec<ThreadResult>,
    /// The worst explained late wakeups, and how many were explained (`--trace`).
    worst: Vec<SpikeExplanation>,
    explained: u64,
}

impl Session {
    /// Ends the run (stopping it first if its threads still measure) and writes the results:
    /// the last samples and explanations, the loads' outcome and per-phase statistics, the
    /// trace's figures, the budget's verdict, and the final run.json. Every part is given back
    /// here or when the session is dropped at the end.
    pub fn finish(mut self) -> RunOutcome {
        // With the user's programs to record, a second SIGINT/SIGTERM from here on cuts the
        // waits short, and the process exits 130 only once their outcomes are written.
        let _hold = self.actions.is_some().then(super::signals::ExitHold::new);
        let (ends, mut failure) = self.end_threads();
        self.stop.store(true, Ordering::SeqCst);
        let (load_outcome, load_events) = self.loads.stop();
        load_events.iter().for_each(|e| self.events.write(e));
        if let Some(f) = &load_outcome.failure {
            failure.get_or_insert(f.clone());
        }
        let end_clock = self.plan.clock().now_ns().min(self.end_ns);
        // The trace is read to its end before the last samples are joined with it.
        let trace_stats = self.tracer.as_mut().map(|t| t.finish_reading());
        if let Some(Err(e)) = &trace_stats {
            self.record
                .warnings
                .push(format!("--trace: the trace reader failed: {e}"));
        }
        let recorded = self.drain_recorder(end_clock);
        // Said in the summary too: spikes past the snapshots' bound were not snapshotted.
        if let Some(w) = self.actions.as_ref().and_then(|a| a.limit_warning()) {
            self.record.warnings.push(w);
        }
        self.drain_priority.leave();
        self.pm_qos.release();
        self.record.warnings.extend(self.pm_qos.news());
        self.record.environment.pm_qos = self.pm_qos.record.clone();
        if let Some(limit) = &mut self.idle_states {
            let failed = limit.restore();
            self.record.warnings.extend(failed);
        }

        // Whether a SIGINT or SIGTERM had come by the run's end: one after it ends the end's
        // waits (`end_actions`).
        let interrupted_at_end = self.interrupted.load(Ordering::SeqCst);
        self.record_end(failure);
        self.record_figures(&recorded.results, &ends, &load_outcome);
        self.record_counters();
        // What standard error had no room for after a stop (src/stderr.rs, N20): lost there,
        // so counted here, up to the record's writing.
        let dropped = crate::stderr::dropped();
        if dropped > 0 {
            self.record.warnings.push(format!(
                "{dropped} message(s) to standard error dropped after the stop request: it had no room (a reader that does not read)"
            ));
        }
        if let (Some(t), Some(stats)) = (self.tracer.take(), trace_stats) {
            let stats = stats.unwrap_or_default();
            let config = t.config.clone();
            let record = &mut self.record;
            if let Err(e) = t.remove() {
                record.warnings.push(e);
            }
            record.warnings.extend(crate::trace::record::trace_warnings(
                &stats,
                &recorded.results,
            ));
            record.trace = Some(crate::trace::record::trace_record(
                &self.plan,
                &config,
                &stats,
                &recorded.results,
                recorded.worst,
                recorded.explained,
            ));
        }
        if let Some(budget) = &self.plan.budget {
            for e in crate::analysis::budget::judge_run(budget, &mut self.record) {
                self.events.write(&e);
            }
        }
        self.events.write(&Event::RunEnd {
            time_ns: monotonic_ns(),
            ended: self.record.ended.as_str().into(),
        });
        if let Some(actions) = &self.actions {
            self.record.actions = Some(actions.record());
        }
        let left_out = self.events.not_written();
        if !left_out.is_empty() {
            self.record.warnings.push(left_out.warning());
            self.record.events_not_written = Some(left_out);
        }
        record_unjournaled(&mut self.record);
        // A failure here still ends with the summary (from memory) and exit 4.
        if let Err(e) = self.dir.write_final_run_record(&mut self.record) {
            eprintln!("jitterlab: {e}");
        }
        // The run's end is written: no next start is to say its directory was left running.
        if let Some(j) = self.dir_journal.take() {
            let _ = j.remove();
        }
        self.release_for_next_run();
        self.end_actions(interrupted_at_end);
        // The rest of the session (its parts, in field order) is dropped on return.
        RunOutcome {
            dir: self.dir,
            record: self.record,
        }
    }

    /// Gives back what a next run on these CPUs would need, before the `--on-end` actions
    /// (which may start one): the CPU locks, the cpuset partition and this thread's CPUs
    /// (`--housekeeping`; an `--on-end` program would inherit them). PM QoS, the idle states,
    /// the trace and the loads were given back already.
    fn release_for_next_run(&mut self) {
        self.cpu_locks = None;
        self._partition = None;
        if let Ok(none) = crate::measure::sched::Housekeeping::enter(None) {
            // The confinement dropped here gives the former CPUs back.
            self._housekeeping = none;
        }
    }

    /// The end of the actions, once the results are written: the threshold programs still
    /// running and the `--on-end` actions, each wait bounded by `--action-wait` and cut short
    /// by a SIGINT or SIGTERM that comes after the run's end. What they did is added to
    /// run.json; should that fail (an `--on-end` program removed the directory), the run's
    /// outcome stands as written before them, and the error is said on stderr.
    fn end_actions(&mut self, interrupted_at_end: bool) {
        let Some(actions) = &mut self.actions else {
            return;
        };
        // Made before `interrupted` is read: a signal comes before (read) or after (caught).
        let watch = super::signals::SignalWatch::new();
        let interrupted = std::sync::Arc::clone(&self.interrupted);
        // A second request deferred before the watch was made (super::signals::ExitHold)
        // cuts the waits too.
        let signalled = move || {
            watch.caught()
                || super::signals::exit_was_deferred()
                || (!interrupted_at_end && interrupted.load(Ordering::SeqCst))
        };
        let events = actions.at_end(&signalled);
        if events.is_empty() {
            return;
        }
        for e in &events {
            self.events.write(e);
        }
        self.record.actions = Some(actions.record());
        record_unjournaled(&mut self.record);
        if let Err(e) = self.dir.write_run_record(&self.record) {
            eprintln!(
                "jitterlab: what the end's actions did is not in {}: {e} (the run's results were written before them)",
                self.dir
                    .file(crate::format::run_record::FILE_NAME)
                    .display()
            );
        }
    }

    /// Stops the threads if they still measure, ends the live view, joins the threads and
    /// writes each failure as an event; returns how each ended and the first failure.
    fn end_threads(&mut self) -> (Vec<JoinedThread>, Option<String>) {
        if !self.threads.all_ended() {
            self.stop();
            // An interrupted thread ends within microseconds; each poll interrupts again a
            // thread that was not asleep yet when the last signal came.
            while self.poll() == Progress::Measuring {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        if let Some(live) = self.live.take() {
            live.finish();
        }
        let mut failure: Option<String> = None;
        let guard_warnings = self.threads.guard_warnings();
        self.record.warnings.extend(guard_warnings);
        let ends = self.threads.join();
        for joined in &ends {
            if let ThreadEnd::Failed(message) = &joined.end {
                let cpu = joined.cpu;
                let message = format!("measuring thread on CPU {cpu} failed: {message}");
                self.events.write(&Event::ThreadFailed {
                    time_ns: monotonic_ns(),
                    cpu,
                    message: message.clone(),
                });
                failure.get_or_insert(message);
            }
        }
        (ends, failure)
    }

    /// Takes the last samples from the rings, writes the explanations, noise intervals and
    /// wakeup summaries still held, closes the intervals at `end_clock`, and finishes the
    /// recorder.
    fn drain_recorder(&mut self, end_clock: u64) -> Recorded {
        let mut recorder = self
            .recorder
            .take()
            .expect("finish takes the recorder once");
        if let Err(e) = recorder.drain_last() {
            let message = write_failed(&self.dir, e);
            self.io_error.get_or_insert(message);
        }
        for x in recorder.take_explanations() {
            self.events.write(&Event::SpikeExplained(x));
        }
        recorder.close_intervals(end_clock);
        if let Some(actions) = &mut self.actions {
            for e in actions.poll(&mut recorder, true) {
                self.events.write(&e);
            }
        }
        for i in recorder.take_noise_intervals() {
            self.events.write(&Event::NoiseInterval(i));
        }
        for s in recorder.take_wakeup_summaries() {
            self.events.write(&Event::WakeupSummary(s));
        }
        let (worst, explained) = recorder.worst_explanations();
        let (worst, explained) = (worst.to_vec(), explained);
        let (results, last_error) = recorder.finish(end_clock);
        // The recorder's end closed the last segments: their final sizes are in the ledger.
        if let Some(ledger) = &self.segments {
            self.record.segments = Some(ledger.record());
        }
        if let Some(e) = last_error {
            let message = write_failed(&self.dir, e);
            self.io_error.get_or_insert(message);
        }
        Recorded {
            results,
            worst,
            explained,
        }
    }

    /// The last read of the counters (the interval since the last boundary), and run.json's
    /// `counters`: what the reads cost, what is absent, and the correlation with the late
    /// wakeups, computed from the files now complete (as `report` would recompute it).
    fn record_counters(&mut self) {
        let Some(mut log) = self.counters.take() else {
            return;
        };
        log.finish();
        let cost = log.cost;
        let mut counters = crate::format::counters::CountersRecord {
            file: log
                .writes_file()
                .then(|| crate::format::counters::FILE_NAME.to_string()),
            reads: cost.reads,
            read_mean_ns: cost.total_ns / cost.reads.max(1),
            read_max_ns: cost.max_ns,
            absent: log
                .absent()
                .iter()
                .map(|a| crate::format::counters::AbsentRecord {
                    counter: a.counter.clone(),
                    reason: a.reason.clone(),
                })
                .collect(),
            ..Default::default()
        };
        if let Some(e) = log.error.take() {
            self.record.warnings.push(format!(
                "cannot write {} in {}: {e}; the counters of the later intervals are missing",
                crate::format::counters::FILE_NAME,
                self.dir.path.display()
            ));
        }
        counters.intervals_not_written = log.intervals_not_written();
        if counters.intervals_not_written > 0 {
            self.record.warnings.push(format!(
                "{} reached its budget of {} (three quarters of the {} its readers read): the counters of the last {} log interval(s) were not written (run.json `counters.intervals_not_written`); give a larger --log-interval for a run this long",
                crate::format::counters::FILE_NAME,
                crate::input::format_bytes(crate::format::counters::WRITTEN_MAX_BYTES),
                crate::input::format_bytes(crate::format::counters::MAX_FILE_BYTES),
                counters.intervals_not_written
            ));
        }
        let writes_file = log.writes_file();
        // Closes counters.log before it is read back.
        drop(log);
        if writes_file {
            match crate::analysis::counters::correlate_dir(&self.dir.path, &self.record) {
                Ok(c) => counters.correlation = c,
                Err(e) => counters.correlation_refused = Some(e),
            }
        } else {
            counters.correlation_refused = Some(
                "a segmented run keeps its counters for /metrics only, without counters.log".into(),
            );
        }
        self.record.counters = Some(counters);
    }

    /// run.json's end: how and why the run ended, when, and how long it measured.
    fn record_end(&mut self, failure: Option<String>) {
        let interrupted = self.interrupted.load(Ordering::SeqCst);
        let record = &mut self.record;
        let action_stop = self.actions.as_ref().and_then(|a| a.stop_reason.clone());
        record.ended = if failure.is_some() || self.io_error.is_some() {
            Ended::Failed
        } else if action_stop.is_some() && !interrupted {
            Ended::Stopped
        } else if self.caller_end.is_some() && !interrupted {
            Ended::Completed
        } else if interrupted || self.stopped_by_caller {
            Ended::Interrupted
        } else {
            Ended::Completed
        };
        record.end_reason = failure.or(self.io_error.clone()).or_else(|| {
            if let (Some(reason), false) = (&action_stop, interrupted) {
                Some(reason.clone())
            } else if let (Some(reason), false) = (&self.caller_end, interrupted) {
                Some(reason.clone())
            } else if interrupted {
                Some(crate::session::signals::stop_reason())
            } else if self.stopped_by_caller {
                Some("stopped by its caller".into())
            } else {
                shorter_than_an_interval(&self.plan)
            }
        });
        record.ended_utc = Some(humantime::format_rfc3339_millis(SystemTime::now()).to_string());
        let elapsed_ns = self
            .scenario_end_ns
            .unwrap_or_else(|| monotonic_ns().saturating_sub(self.start_mono));
        record.duration_ns = Some(match self.plan.length {
            // Measurement ends at the last due time; the drain after it is not part of the run.
            RunLength::Duration(ns) => elapsed_ns.min(ns),
            RunLength::Loops(_) | RunLength::Endless => elapsed_ns,
        });
    }

    /// run.json's figures: per thread, the inversion counts, the CPU time, the loads, and the
    /// warnings about what the run saw.
    fn record_figures(
        &mut self,
        results: &[ThreadResult],
        ends: &[JoinedThread],
        load_outcome: &crate::load::supervisor::Outcome,
    ) {
        let record = &mut self.record;
        record.threads = thread_summaries(&self.plan, results, ends);
        // A thread the loads held off its CPU past the run's end (`Session::serve_the_end`):
        // its figures are what it measured, its end says why it ended late.
        for (index, reason) in &self.threads.starved {
            if let Some(t) = record.threads.iter_mut().find(|t| t.thread_index == *index)
                && !t.end.starts_with("failed")
            {
                t.end = format!("starved: {reason}");
            }
        }
        record.inversion = inversion_record(&self.plan, results);
        record.cpu_time = Some(cpu_time_now(
            ends.iter()
                .map(|j| ThreadCpuTime {
                    cpu: j.cpu,
                    thread_index: j.index,
                    cpu_time_ns: j.cpu_time_ns,
                })
                .collect(),
        ));
        record.loads = self
            .loads
            .spike_records(&self.plan, record.duration_ns.unwrap_or(0));
        loads::record(load_outcome, record, &self.dir);
        record.warnings.extend(run_warnings(results));
        record.steal = self.steal.as_ref().and_then(|w| w.end());
        if let Some(steal) = &record.steal {
            record.warnings.extend(steal.warnings());
        }
    }
}

/// The end reason of a completed run whose duration is shorter than every measuring thread's
/// interval: each thread took its first wakeup at the start, its next one was due after the
/// end, and the run ended then, long before its duration (tenth hostile re-run, L10-c:
/// `cyclictest -l 3 -i 4000000 -D 1` ended after 13 ms, `completed`, with nothing saying why).
/// None for any other run.
fn shorter_than_an_interval(plan: &crate::plan::RunPlan) -> Option<String> {
    let RunLength::Duration(duration_ns) = plan.length else {
        return None;
    };
    if !plan.measurement.kind().spec().periodic || plan.cpus.is_empty() {
        return None;
    }
    let shortest = (0..plan.cpus.len())
        .map(|k| plan.measurement.interval_ns(k))
        .min()?;
    (shortest > duration_ns).then(|| {
        format!(
            "its duration ({}) is shorter than its interval ({}): each thread took its first wakeup at the start and its next one was due after the end, so the run ended after 1 wakeup per thread",
            crate::units::format_ns(duration_ns),
            crate::units::format_ns(shortest)
        )
    })
}

/// The process's CPU time now, with the calling thread as the recorder. Called on the recorder
/// thread once the measuring threads have been joined (their `cpu_time_ns` is final then, and
/// the process total includes all of them).
fn cpu_time_now(measuring_threads: Vec<ThreadCpuTime>) -> CpuTimeRecord {
    let (process_user_ns, process_system_ns) = crate::sys::time::process_cpu_time_ns();
    CpuTimeRecord {
        process_user_ns,
        process_system_ns,
        recorder_thread_ns: crate::measure::clock::thread_cpu_time_ns(),
        measuring_threads,
    }
}

/// What this process started or changed without a journal (journal.rs `say_unjournaled`: the
/// actions' process groups, the loads' cgroup), in run.json's warnings once each.
fn record_unjournaled(record: &mut RunRecord) {
    for w in crate::journal::unjournaled() {
        if !record.warnings.contains(&w) {
            record.warnings.push(w);
        }
    }
}

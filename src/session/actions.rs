//! Firing `--on-threshold` and `--on-end` actions (plan/actions.rs says what they are). The
//! recorder finds where spikes start (recorder/watch.rs); after every drain the session hands
//! them here, on the drain side, never in a measuring thread. Each action fires at most once per
//! `--action-gap` of the run's time; what the limit held back is counted, and so is what the
//! bounds refused (programs running, snapshots pending). `exec:` programs are started, bounded,
//! waited for and killed by their one owner (children.rs): a threshold program is reaped at a
//! later poll; at the end, the programs still running and then each `--on-end` program are
//! waited for at most `--action-wait`, and killed after it or at a SIGINT/SIGTERM.

use super::children::{Children, End, Outcome, Start};
use crate::format::actions::{
    ActionCount, ActionEvent, ActionsRecord, OUTCOME_OVER_LIMIT, PROGRAM_ABANDONED, PROGRAM_EXITED,
    PROGRAM_KILLED, PROGRAM_SIGNALLED, PROGRAM_STARTED, ProgramCounts,
};
use crate::format::events::Event;
use crate::measure::clock::monotonic_ns;
use crate::plan::actions::{
    Action, ActionPlan, MAX_PENDING_SNAPSHOTS, MAX_PROGRAMS, MAX_SNAPSHOTS, SignalTarget,
};
use crate::recorder::{Recorder, SpikeStart};
use crate::results::ResultDir;
use std::time::{Duration, Instant};

/// Which action an `exec:` program belongs to.
#[derive(Debug, Clone, Copy)]
struct Tag {
    /// An `--on-end` action (else `--on-threshold`).
    end: bool,
    index: usize,
}

/// A snapshot waiting for the samples after its spike.
struct PendingSnapshot {
    number: u64,
    spike: SpikeStart,
    action: usize,
    from_ns: u64,
    to_ns: u64,
}

/// One threshold action's state.
#[derive(Default)]
struct Fired {
    /// The due time of the spike it last fired for (the run's clock), ns.
    last_due_ns: Option<u64>,
    count: ActionCount,
    suppressed_since: u64,
    /// Spikes since its last firing on which the bounds refused it.
    refused_since: u64,
}

/// The actions of a run and what they did so far.
pub(super) struct ActionRunner {
    plan: ActionPlan,
    fired: Vec<Fired>,
    ended: Vec<ActionCount>,
    /// The `exec:` programs started and not yet ended.
    children: Children<Tag>,
    snapshots: Vec<PendingSnapshot>,
    snapshots_made: u64,
    /// The snapshots written and their bytes, bounded by `--snapshot-limit` and
    /// [`MAX_SNAPSHOTS`] (issue 39 L-j: a spike storm wrote 20 MB/s without end).
    snapshots_written: u64,
    snapshot_bytes: u64,
    /// Why no more snapshots are made, once the bound is reached.
    limit_reached: Option<String>,
    /// Whether the end's count of the spikes past the limit was written.
    over_limit_told: bool,
    dir: ResultDir,
    /// The trace back end (`bpf`, `tracefs`) with `--trace`: snapshots then keep the trace.
    trace_backend: Option<&'static str>,
    /// Set by a `stop` action: why the run ends.
    pub(crate) stop_reason: Option<String>,
}

impl ActionRunner {
    pub(super) fn new(
        plan: &crate::plan::actions::ActionPlan,
        dir: ResultDir,
        trace_backend: Option<&'static str>,
    ) -> Self {
        let count = |a: &Action| ActionCount {
            action: a.describe(),
            programs: matches!(a, Action::Exec { .. }).then(ProgramCounts::default),
            ..ActionCount::default()
        };
        ActionRunner {
            fired: plan
                .on_threshold
                .iter()
                .map(|a| Fired {
                    count: count(a),
                    ..Fired::default()
                })
                .collect(),
            ended: plan.on_end.iter().map(count).collect(),
            plan: plan.clone(),
            children: Children::new(MAX_PROGRAMS),
            snapshots: Vec::new(),
            snapshots_made: 0,
            snapshots_written: 0,
            snapshot_bytes: 0,
            limit_reached: None,
            over_limit_told: false,
            dir,
            trace_backend,
            stop_reason: None,
        }
    }

    /// Fires the threshold actions for the spikes that started since the last poll, finishes
    /// the snapshots whose window the recorder has passed (all of them when `last`), and reaps
    /// ended programs. Returns the events to write.
    pub(super) fn poll(&mut self, recorder: &mut Recorder, last: bool) -> Vec<Event> {
        let mut events = Vec::new();
        let (starts, overflowed) = recorder.take_spike_starts();
        // A storm beyond what the recorder keeps between drains: every action's limit would
        // have held those back too.
        for f in &mut self.fired {
            f.suppressed_since += overflowed;
            f.count.suppressed += overflowed;
        }
        for spike in starts {
            for index in 0..self.plan.on_threshold.len() {
                if let Some(e) = self.fire_on_spike(index, &spike) {
                    events.push(Event::Action(e));
                }
            }
        }
        let through = recorder.recorded_through_ns();
        let (done, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.snapshots)
            .into_iter()
            .partition(|s| last || s.to_ns <= through);
        self.snapshots = waiting;
        for s in done {
            events.push(Event::Action(self.write_snapshot(&s, recorder)));
        }
        for o in self.children.reap() {
            events.push(Event::Action(self.outcome_event(o, "")));
        }
        if last {
            events.extend(self.over_limit_events().into_iter().map(Event::Action));
        }
        events
    }

    /// At the end, once: per snapshot action, the spikes it did not snapshot because the
    /// run's snapshots had reached their bound (counted, never dropped unsaid).
    fn over_limit_events(&mut self) -> Vec<ActionEvent> {
        if std::mem::replace(&mut self.over_limit_told, true) {
            return Vec::new();
        }
        let Some(why) = self.limit_reached.clone() else {
            return Vec::new();
        };
        let mut events = Vec::new();
        for index in 0..self.fired.len() {
            let n = self.fired[index].count.over_limit;
            if n == 0 {
                continue;
            }
            let mut e = self.event(index, "threshold", None, 0, Ok(String::new()));
            e.outcome = OUTCOME_OVER_LIMIT.into();
            e.over_limit = n;
            e.detail = format!("{n} spike(s) not snapshotted: {why}");
            events.push(e);
        }
        events
    }

    /// The run.json warning (shown in the summary) when the snapshots reached their bound.
    pub(super) fn limit_warning(&self) -> Option<String> {
        let why = self.limit_reached.as_ref()?;
        let over: u64 = self.fired.iter().map(|f| f.count.over_limit).sum();
        Some(format!(
            "--on-threshold snapshot: {why}; {} snapshot(s) written ({} bytes), {over} later spike(s) not snapshotted (run.json actions)",
            self.snapshots_written,
            crate::units::group_digits(self.snapshot_bytes)
        ))
    }

    /// One threshold action for one spike: fired, or held back by the rate limit (None).
    fn fire_on_spike(&mut self, index: usize, spike: &SpikeStart) -> Option<ActionEvent> {
        let gap = self.plan.gap_ns;
        let full = match &self.plan.on_threshold[index] {
            Action::Exec { .. } => self.children.running() >= MAX_PROGRAMS,
            Action::Snapshot { .. } => self.snapshots.len() >= MAX_PENDING_SNAPSHOTS,
            _ => false,
        };
        let snapshot = matches!(self.plan.on_threshold[index], Action::Snapshot { .. });
        if snapshot && self.snapshots_made >= MAX_SNAPSHOTS && self.limit_reached.is_none() {
            self.limit_reached = Some(format!(
                "{} snapshots were made, the most in one run",
                crate::units::group_digits(MAX_SNAPSHOTS)
            ));
        }
        let over_limit = snapshot && self.limit_reached.is_some();
        let f = &mut self.fired[index];
        // Saturating: the largest gap must hold every later spike back, not wrap around.
        if f.last_due_ns
            .is_some_and(|last| spike.due_ns < last.saturating_add(gap))
        {
            f.suppressed_since += 1;
            f.count.suppressed += 1;
            return None;
        }
        if over_limit {
            f.count.over_limit += 1;
            return None;
        }
        if full {
            f.refused_since += 1;
            f.count.refused += 1;
            return None;
        }
        f.last_due_ns = Some(spike.due_ns);
        f.count.fired += 1;
        let suppressed_before = std::mem::take(&mut f.suppressed_since);
        let refused_before = std::mem::take(&mut f.refused_since);
        let action = self.plan.on_threshold[index].clone();
        let result = match &action {
            Action::Continue => Ok("recorded".to_string()),
            Action::Stop => {
                let reason = format!(
                    "stopped by --on-threshold stop: CPU {} woke {} late (deadline exceeded) at due time {} ns",
                    spike.cpu,
                    crate::units::format_ns(spike.latency_ns.max(0) as u64),
                    spike.due_ns
                );
                self.stop_reason.get_or_insert(reason);
                Ok("stopped the run".to_string())
            }
            Action::Signal { signal, target } => send(*signal, *target),
            Action::Exec { argv } => {
                let tag = Tag { end: false, index };
                let mut e = self.start_program(tag, argv, Some(spike));
                e.suppressed_before = suppressed_before;
                e.refused_before = refused_before;
                return Some(e);
            }
            Action::Snapshot {
                before_ns,
                after_ns,
            } => {
                self.snapshots_made += 1;
                let number = self.snapshots_made;
                self.snapshots.push(PendingSnapshot {
                    number,
                    spike: *spike,
                    action: index,
                    from_ns: spike.due_ns.saturating_sub(*before_ns),
                    to_ns: spike.due_ns.saturating_add(*after_ns),
                });
                // Its event is written when the window is complete.
                return None;
            }
        };
        let mut e = self.event(index, "threshold", Some(spike), suppressed_before, result);
        e.refused_before = refused_before;
        Some(e)
    }

    /// The event of one firing, counting a failure.
    fn event(
        &mut self,
        index: usize,
        trigger: &str,
        spike: Option<&SpikeStart>,
        suppressed_before: u64,
        result: Result<String, String>,
    ) -> ActionEvent {
        let action = self.action(trigger == "end", index).describe();
        let count = self.count(trigger == "end", index);
        if result.is_err() {
            count.failed += 1;
        }
        let (outcome, detail) = match result {
            Ok(d) => ("ok", d),
            Err(e) => ("failed", e),
        };
        ActionEvent {
            time_ns: monotonic_ns(),
            trigger: trigger.into(),
            action,
            cpu: spike.map(|s| s.cpu),
            due_ns: spike.map(|s| s.due_ns),
            latency_ns: spike.map(|s| s.latency_ns),
            suppressed_before,
            refused_before: 0,
            over_limit: 0,
            outcome: outcome.into(),
            detail,
            pid: None,
            program: None,
            exit_code: None,
            signal: None,
        }
    }

    fn action(&self, end: bool, index: usize) -> &Action {
        match end {
            true => &self.plan.on_end[index],
            false => &self.plan.on_threshold[index],
        }
    }

    fn count(&mut self, end: bool, index: usize) -> &mut ActionCount {
        match end {
            true => &mut self.ended[index],
            false => &mut self.fired[index].count,
        }
    }

    fn trigger(end: bool) -> &'static str {
        if end { "end" } else { "threshold" }
    }

    /// Starts `argv` through the owner (children.rs) with the spike (if any) and the result
    /// directory in its environment; its `started` event, or why it did not start.
    fn start_program(
        &mut self,
        tag: Tag,
        argv: &[String],
        spike: Option<&SpikeStart>,
    ) -> ActionEvent {
        let mut env = vec![("JITTERLAB_OUT", self.dir.path.display().to_string())];
        if let Some(s) = spike {
            env.push(("JITTERLAB_CPU", s.cpu.to_string()));
            env.push(("JITTERLAB_TIME_NS", s.due_ns.to_string()));
            env.push(("JITTERLAB_LATENCY_NS", s.latency_ns.to_string()));
        }
        let (result, pid) = match self.children.start(
            argv, &env, tag,
            // An --on-end program may start the next measurement (a jitterlab run of its
            // own, real-time by design); a threshold program runs beside the measurement.
            tag.end,
        ) {
            Start::Started(pid) => (Ok(format!("started pid {pid}")), Some(pid)),
            Start::Failed(e) => (Err(e), None),
            // Checked before firing; the end starts its programs one at a time.
            Start::Full => (
                Err(format!("not started: {MAX_PROGRAMS} programs run already")),
                None,
            ),
        };
        if pid.is_some()
            && let Some(p) = &mut self.count(tag.end, tag.index).programs
        {
            p.started += 1;
        }
        let mut e = self.event(tag.index, Self::trigger(tag.end), spike, 0, result);
        e.pid = pid;
        e.program = pid.map(|_| PROGRAM_STARTED.to_string());
        e
    }

    /// The event of a program's end, counted; `why` says why a killed one was killed.
    fn outcome_event(&mut self, o: Outcome<Tag>, why: &str) -> ActionEvent {
        let pid = o.pid;
        let signal_name = |s: i32| {
            crate::sys::signal::name(s)
                .map(str::to_string)
                .unwrap_or_else(|| format!("signal {s}"))
        };
        let (result, program, exit_code, signal) = match &o.end {
            End::Exited(0) => (
                Ok(format!("pid {pid} exited with 0")),
                Some(PROGRAM_EXITED),
                Some(0),
                None,
            ),
            End::Exited(c) => (
                Err(format!("pid {pid} exited with {c}")),
                Some(PROGRAM_EXITED),
                Some(*c),
                None,
            ),
            End::Signalled(s) => (
                Err(format!("pid {pid} was killed by {}", signal_name(*s))),
                Some(PROGRAM_SIGNALLED),
                None,
                Some(signal_name(*s)),
            ),
            End::Killed => (
                Err(format!(
                    "pid {pid} was still running {why}: killed (SIGKILL to its process group)"
                )),
                Some(PROGRAM_KILLED),
                None,
                Some(signal_name(crate::sys::signal::SIGKILL)),
            ),
            End::Abandoned => (
                Err(format!(
                    "pid {pid} was still running {why}, and 2 s after SIGKILL: abandoned"
                )),
                Some(PROGRAM_ABANDONED),
                None,
                None,
            ),
            End::Lost(e) => (Err(e.clone()), None, None, None),
        };
        if let Some(p) = &mut self.count(o.tag.end, o.tag.index).programs {
            match o.end {
                End::Exited(0) => p.exited_zero += 1,
                End::Exited(_) => p.exited_nonzero += 1,
                End::Signalled(_) => p.signalled += 1,
                End::Killed => p.killed += 1,
                End::Abandoned => p.abandoned += 1,
                End::Lost(_) => {}
            }
        }
        let mut e = self.event(o.tag.index, Self::trigger(o.tag.end), None, 0, result);
        e.pid = Some(pid);
        e.program = program.map(str::to_string);
        e.exit_code = exit_code;
        e.signal = signal;
        e
    }

    /// Writes the snapshot's files (session/snapshot.rs): every measured CPU's samples due in
    /// the window, and with `--trace` its trace events and explanations.
    /// Within `--snapshot-limit`: a snapshot whose files would pass it is not written, and
    /// none is made after it (the later spikes are counted as `over_limit`).
    fn write_snapshot(&mut self, s: &PendingSnapshot, recorder: &Recorder) -> ActionEvent {
        use super::snapshot::Written;
        let limit = self.plan.snapshot_limit_bytes;
        let result = match &self.limit_reached {
            // Pending when the bound was reached.
            Some(why) => Err(format!("not written: {why}")),
            None => {
                let window = recorder.snapshot_window(s.from_ns, s.to_ns);
                let room = limit.saturating_sub(self.snapshot_bytes);
                match (super::snapshot::Snapshot {
                    number: s.number,
                    spike: &s.spike,
                    from_ns: s.from_ns,
                    to_ns: s.to_ns,
                    backend: self.trace_backend,
                })
                .write(&self.dir, &window, room)
                {
                    Written::Done { result, bytes } => {
                        self.snapshot_bytes += bytes;
                        self.snapshots_written += u64::from(result.is_ok());
                        result
                    }
                    Written::TooLarge { bytes } => {
                        let why = format!(
                            "the snapshots reached --snapshot-limit {} ({} bytes in {} snapshot(s); snapshot {} would take {} more); raise --snapshot-limit for more",
                            crate::input::format_bytes(limit),
                            crate::units::group_digits(self.snapshot_bytes),
                            self.snapshots_written,
                            s.number,
                            crate::units::group_digits(bytes)
                        );
                        self.limit_reached = Some(why.clone());
                        Err(format!("not written: {why}"))
                    }
                }
            }
        };
        let suppressed = 0;
        self.event(s.action, "threshold", Some(&s.spike), suppressed, result)
    }

    /// The end, once the results are written: the threshold programs still running are waited
    /// for, then each `--on-end` action fires in order, an `exec:` one waited for; each wait
    /// lasts at most `--action-wait`, and what still runs after it is killed. `signalled()`
    /// true (a SIGINT or SIGTERM since the run's end) cuts the wait short: what runs is
    /// killed and the `--on-end` actions not yet fired are not. Returns the events.
    pub(super) fn at_end(&mut self, signalled: &dyn Fn() -> bool) -> Vec<Event> {
        let wait = Duration::from_nanos(self.plan.wait_ns);
        let over = format!(
            "when --action-wait {} was over",
            crate::units::format_ns(self.plan.wait_ns)
        );
        let cut = "at a SIGINT or SIGTERM during the end's wait";
        let mut events = Vec::new();
        // A wait of seconds at the end is said, so that it is not taken for a hang, with the
        // way to cut it (a SIGINT or SIGTERM since the run's end: the programs are killed and
        // recorded as such).
        let running = self.children.running_pids();
        if !running.is_empty() {
            eprintln!(
                "jitterlab: waiting up to {} for {} --on-threshold program{} still running (pid {}); Ctrl-C to kill {}",
                crate::units::format_ns(self.plan.wait_ns),
                running.len(),
                if running.len() == 1 { "" } else { "s" },
                running
                    .iter()
                    .map(|p| p.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                if running.len() == 1 { "it" } else { "them" },
            );
        }
        let (outcomes, mut interrupted) = self.children.wait(Instant::now() + wait, signalled);
        for o in outcomes {
            let why = if interrupted { cut } else { over.as_str() };
            events.push(Event::Action(self.outcome_event(o, why)));
        }
        for index in 0..self.plan.on_end.len() {
            self.ended[index].fired += 1;
            let result = match self.plan.on_end[index].clone() {
                _ if interrupted || signalled() => {
                    interrupted = true;
                    Err("not run: a SIGINT or SIGTERM cut the end short".to_string())
                }
                Action::Continue => Ok("recorded".to_string()),
                Action::Signal { signal, target } => send(signal, target),
                Action::Exec { argv } => {
                    let tag = Tag { end: true, index };
                    events.push(Event::Action(self.start_program(tag, &argv, None)));
                    let (outcomes, cut_short) =
                        self.children.wait(Instant::now() + wait, signalled);
                    interrupted |= cut_short;
                    for o in outcomes {
                        let why = if cut_short { cut } else { over.as_str() };
                        events.push(Event::Action(self.outcome_event(o, why)));
                    }
                    continue;
                }
                // Refused at plan time.
                Action::Stop | Action::Snapshot { .. } => Ok("not an end action".to_string()),
            };
            events.push(Event::Action(self.event(index, "end", None, 0, result)));
        }
        events
    }

    /// run.json `actions`.
    pub(super) fn record(&self) -> ActionsRecord {
        ActionsRecord {
            gap_ns: self.plan.gap_ns,
            wait_ns: self.plan.wait_ns,
            max_programs: MAX_PROGRAMS as u64,
            max_snapshots: MAX_PENDING_SNAPSHOTS as u64,
            snapshot_limit_bytes: self.plan.snapshot_limit_bytes,
            snapshots_written: self.snapshots_written,
            snapshot_bytes: self.snapshot_bytes,
            snapshot_limit_reached: self.limit_reached.clone(),
            on_threshold: self.fired.iter().map(|f| f.count.clone()).collect(),
            on_end: self.ended.clone(),
        }
    }
}

/// Sends `signal` to the action's target: the process `pid=N` named, or jitterlab's parent,
/// each as it was at the start, through its pidfd (plan/actions.rs `pid_target`, `parent`):
/// never pid 1, never a process that took an exited target's pid (issue 39 F5).
fn send(signal: i32, target: SignalTarget) -> Result<String, String> {
    let name = crate::sys::signal::name(signal)
        .map(str::to_string)
        .unwrap_or_else(|| format!("signal {signal}"));
    match target {
        SignalTarget::Pid(pid) => crate::plan::actions::pid_target(pid)?
            .send(signal)
            .map(|_| format!("sent {name} to {pid}"))
            .map_err(|e| format!("cannot send {name}: {e}")),
        SignalTarget::Parent => {
            let parent = crate::plan::actions::parent()?;
            parent
                .send(signal)
                .map(|_| format!("sent {name} to {} (jitterlab's parent)", parent.pid))
                .map_err(|e| format!("cannot send {name}: {e}"))
        }
    }
}

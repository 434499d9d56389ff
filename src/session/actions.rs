//! Firing `--on-threshold` and `--on-end` actions (plan/actions.rs says what they are). The
//! recorder finds where spikes start (recorder/watch.rs); after every drain the session hands
//! them here, on the drain side, never in a measuring thread. Each action fires at most once per
//! `--action-gap` of the run's time; what the limit held back is counted. Programs started by
//! `exec:` are not waited for on a spike (they are reaped at later polls and at the end, their
//! exit recorded); at the end they are waited for.

use crate::format::actions::{ActionCount, ActionEvent, ActionsRecord};
use crate::format::events::Event;
use crate::measure::clock::monotonic_ns;
use crate::plan::actions::{Action, ActionPlan};
use crate::recorder::{Recorder, SpikeStart};
use crate::results::ResultDir;
use std::os::fd::AsFd;
use std::process::{Child, Command, Stdio};

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
}

/// The actions of a run and what they did so far.
pub(super) struct ActionRunner {
    plan: ActionPlan,
    fired: Vec<Fired>,
    ended: Vec<ActionCount>,
    /// `exec:` programs still running: (the action's index, its child).
    children: Vec<(usize, Child)>,
    snapshots: Vec<PendingSnapshot>,
    snapshots_made: u64,
    dir: ResultDir,
    /// The trace back end (`bpf`, `tracefs`) with `--trace`: snapshots then keep the trace.
    trace_backend: Option<&'static str>,
    /// Set by a `stop` action: why the run ends.
    pub stop_reason: Option<String>,
}

impl ActionRunner {
    pub(super) fn new(
        plan: &crate::plan::actions::ActionPlan,
        dir: ResultDir,
        trace_backend: Option<&'static str>,
    ) -> Self {
        let count = |a: &Action| ActionCount {
            action: a.describe(),
            fired: 0,
            suppressed: 0,
            failed: 0,
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
            children: Vec::new(),
            snapshots: Vec::new(),
            snapshots_made: 0,
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
        events.extend(self.reap(false).into_iter().map(Event::Action));
        events
    }

    /// One threshold action for one spike: fired, or held back by the rate limit (None).
    fn fire_on_spike(&mut self, index: usize, spike: &SpikeStart) -> Option<ActionEvent> {
        let gap = self.plan.gap_ns;
        let f = &mut self.fired[index];
        if f.last_due_ns.is_some_and(|last| spike.due_ns < last + gap) {
            f.suppressed_since += 1;
            f.count.suppressed += 1;
            return None;
        }
        f.last_due_ns = Some(spike.due_ns);
        f.count.fired += 1;
        let suppressed_before = std::mem::take(&mut f.suppressed_since);
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
            Action::Signal { signal, target } => send(*signal, target.pid()),
            Action::Exec { argv } => self.spawn(index, argv, Some(spike)),
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
        Some(self.event(index, "threshold", Some(spike), suppressed_before, result))
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
        let (count, action) = match trigger {
            "end" => (&mut self.ended[index], &self.plan.on_end[index]),
            _ => (&mut self.fired[index].count, &self.plan.on_threshold[index]),
        };
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
            action: action.describe(),
            cpu: spike.map(|s| s.cpu),
            due_ns: spike.map(|s| s.due_ns),
            latency_ns: spike.map(|s| s.latency_ns),
            suppressed_before,
            outcome: outcome.into(),
            detail,
        }
    }

    /// Starts `argv` without a shell, its output to jitterlab's stderr (stdout is the run's
    /// summary), the spike in its environment. A threshold program is reaped later; at the
    /// end, waited for.
    fn spawn(
        &mut self,
        index: usize,
        argv: &[String],
        spike: Option<&SpikeStart>,
    ) -> Result<String, String> {
        let mut command = Command::new(&argv[0]);
        command
            .args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::from(
                std::io::stderr()
                    .as_fd()
                    .try_clone_to_owned()
                    .map_err(|e| e.to_string())?,
            ))
            .env("JITTERLAB_OUT", &self.dir.path);
        if let Some(s) = spike {
            command
                .env("JITTERLAB_CPU", s.cpu.to_string())
                .env("JITTERLAB_TIME_NS", s.due_ns.to_string())
                .env("JITTERLAB_LATENCY_NS", s.latency_ns.to_string());
        }
        let child = command
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", argv[0]))?;
        let pid = child.id();
        self.children.push((index, child));
        Ok(format!("started pid {pid}"))
    }

    /// Reaps the threshold programs that ended (all of them, waiting, with `wait`).
    fn reap(&mut self, wait: bool) -> Vec<ActionEvent> {
        let mut events = Vec::new();
        let mut running = Vec::new();
        for (index, mut child) in std::mem::take(&mut self.children) {
            let status = match wait {
                true => child.wait().map(Some),
                false => child.try_wait(),
            };
            match status {
                Ok(None) => running.push((index, child)),
                Ok(Some(s)) => {
                    let result = exit_detail(child.id(), s);
                    events.push(self.event(index, "threshold", None, 0, result));
                }
                Err(e) => {
                    let result = Err(format!("cannot wait for pid {}: {e}", child.id()));
                    events.push(self.event(index, "threshold", None, 0, result));
                }
            }
        }
        self.children = running;
        events
    }

    /// Writes the snapshot's files (session/snapshot.rs): every measured CPU's samples due in
    /// the window, and with `--trace` its trace events and explanations.
    fn write_snapshot(&mut self, s: &PendingSnapshot, recorder: &Recorder) -> ActionEvent {
        let window = recorder.snapshot_window(s.from_ns, s.to_ns);
        let result = super::snapshot::Snapshot {
            number: s.number,
            spike: &s.spike,
            from_ns: s.from_ns,
            to_ns: s.to_ns,
            backend: self.trace_backend,
        }
        .write(&self.dir, &window);
        let suppressed = 0;
        self.event(s.action, "threshold", Some(&s.spike), suppressed, result)
    }

    /// The `--on-end` actions, once the results are written; exec programs are waited for
    /// (and any threshold program still running). Returns the events.
    pub(super) fn at_end(&mut self) -> Vec<Event> {
        let mut events: Vec<Event> = self.reap(true).into_iter().map(Event::Action).collect();
        for index in 0..self.plan.on_end.len() {
            self.ended[index].fired += 1;
            let result = match self.plan.on_end[index].clone() {
                Action::Continue => Ok("recorded".to_string()),
                Action::Signal { signal, target } => send(signal, target.pid()),
                Action::Exec { argv } => self.spawn(index, &argv, None).and_then(|_| {
                    let (_, mut child) = self.children.pop().expect("just started");
                    let status = child
                        .wait()
                        .map_err(|e| format!("cannot wait for pid {}: {e}", child.id()))?;
                    exit_detail(child.id(), status)
                }),
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
            on_threshold: self.fired.iter().map(|f| f.count.clone()).collect(),
            on_end: self.ended.clone(),
        }
    }
}

fn send(signal: i32, pid: i32) -> Result<String, String> {
    let name = crate::sys::signal::name(signal)
        .map(str::to_string)
        .unwrap_or_else(|| format!("signal {signal}"));
    crate::sys::process::kill(pid, signal)
        .map(|_| format!("sent {name} to {pid}"))
        .map_err(|e| format!("cannot send {name} to {pid}: {e}"))
}

fn exit_detail(pid: u32, status: std::process::ExitStatus) -> Result<String, String> {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(0), _) => Ok(format!("pid {pid} exited with 0")),
        (Some(c), _) => Err(format!("pid {pid} exited with {c}")),
        (None, Some(s)) => Err(format!(
            "pid {pid} was killed by {}",
            crate::sys::signal::name(s)
                .map(str::to_string)
                .unwrap_or_else(|| format!("signal {s}"))
        )),
        (None, None) => Err(format!("pid {pid} ended: {status}")),
    }
}

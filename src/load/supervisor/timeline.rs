//! The supervisor thread: starts the whole-run loads, then switches each phase's loads on and
//! off along the run's clock, watches for loads that fail or end before they are stopped, and
//! at the end stops everything and hands back the [`Outcome`]. What happens on the way (phase
//! boundaries, warnings) goes back as [`Event`]s on a channel, for the one writer of
//! events.jsonl (the run session) to write.

use super::link::{self, Running};
use super::setup::{Outcome, PhaseResult, Setup};
use super::spawn::spawn;
use crate::error::{ExitCode, Failure};
use crate::format::events::Event;
use crate::format::run_record::LoadEnded;
use crate::load::contain::Containment;
use crate::load::worker_kit::{kill_hint, signal_text};
use crate::measure::clock::monotonic_ns;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

/// Time a worker has to set itself up and say it is ready.
const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// How often the supervisor looks at its loads between phase boundaries.
const POLL: Duration = Duration::from_millis(20);

/// What the handle tells the supervisor thread.
pub(super) enum Msg {
    Begin(u64),
    Stop,
}

#[derive(Clone, Copy, PartialEq)]
enum PhaseState {
    Pending,
    Running,
    Done,
}

pub(super) struct State {
    setup: Setup,
    /// Made when the supervisor thread starts; dropped (cgroups removed, reaper finished) when
    /// it ends, after every load was reaped.
    containment: Option<Containment>,
    stop: Arc<AtomicBool>,
    all_ended: Arc<AtomicBool>,
    /// To the handle ([`super::Supervisor::drain_events`]); a send fails only once the handle
    /// is gone, when nobody wants the events any more.
    events: mpsc::Sender<Event>,
    running: Vec<Running>,
    outcome: Outcome,
    phase_state: Vec<PhaseState>,
    /// The run's start (CLOCK_MONOTONIC), once [`Msg::Begin`] has said it.
    start_ns: u64,
    /// The phase of `wakeups = N` running, and the generation of its count.
    counting: Option<(usize, u64)>,
}

impl State {
    pub(super) fn new(
        setup: Setup,
        stop: Arc<AtomicBool>,
        all_ended: Arc<AtomicBool>,
        events: mpsc::Sender<Event>,
    ) -> Self {
        State {
            phase_state: vec![PhaseState::Pending; setup.phases.len()],
            setup,
            containment: None,
            stop,
            all_ended,
            events,
            running: Vec::new(),
            outcome: Outcome::default(),
            start_ns: 0,
            counting: None,
        }
    }

    fn event(&mut self, e: Event) {
        let _ = self.events.send(e);
    }

    fn warn(&mut self, message: String) {
        self.event(Event::Warning {
            time_ns: monotonic_ns(),
            message: message.clone(),
        });
        self.outcome.warnings.push(message);
    }

    pub(super) fn run(
        &mut self,
        rx: mpsc::Receiver<Msg>,
        ready: mpsc::Sender<Result<(), Failure>>,
    ) -> Outcome {
        // Ahead of the real-time loads this thread starts and must stop (plan/drain.rs);
        // the loads it forks begin at normal priority (SCHED_RESET_ON_FORK) and take their
        // own policy. Held until the thread ends, after every load is reaped.
        // A refusal is the main thread's warning already (the same process, the same rights).
        let _priority = crate::measure::sched::DrainPriority::enter(self.setup.priority).0;
        // Orphans of a dying worker come back to us, to be reaped.
        crate::sys::process::become_child_subreaper();
        // Only `exec` loads have their CPUs bounded by a cpuset (spawn.rs): none is made
        // for a run without one.
        let cpusets = self
            .setup
            .loads
            .iter()
            .any(|l| super::spawn::bounded(&l.spec));
        match Containment::start(cpusets) {
            Ok(c) => self.containment = Some(c),
            Err(e) => {
                let _ = ready.send(Err(Failure::system(format!(
                    "cannot start the process that cleans up after the loads: {e}"
                ))));
                return std::mem::take(&mut self.outcome);
            }
        }
        let whole_run: Vec<usize> = (0..self.setup.loads.len())
            .filter(|&i| self.setup.loads[i].phase.is_none())
            .collect();
        if let Err(f) = self.start_loads(&whole_run) {
            self.stop_all();
            let _ = ready.send(Err(f));
            return std::mem::take(&mut self.outcome);
        }
        let _ = ready.send(Ok(()));
        let start_ns = match rx.recv() {
            Ok(Msg::Begin(t)) => t,
            _ => return self.wind_up(),
        };
        self.start_ns = start_ns;
        loop {
            self.end_counted_phase();
            let now = monotonic_ns();
            for p in 0..self.setup.phases.len() {
                let plan = self.setup.phases[p].clone();
                if self.phase_state[p] == PhaseState::Running
                    && plan.wakeups.is_none()
                    && now >= start_ns + plan.end_ns
                {
                    self.end_phase(p);
                }
            }
            self.say_if_the_scenario_ended();
            for p in 0..self.setup.phases.len() {
                let plan = self.setup.phases[p].clone();
                if self.phase_state[p] == PhaseState::Pending
                    && now >= start_ns + plan.start_ns
                    && now < start_ns + plan.end_ns
                    && !self.stop.load(Ordering::SeqCst)
                {
                    self.begin_phase(p);
                }
            }
            self.watch();
            let next_boundary = self
                .setup
                .phases
                .iter()
                .zip(&self.phase_state)
                .filter_map(|(ph, st)| match st {
                    PhaseState::Pending => Some(start_ns + ph.start_ns),
                    // Ended by its count: looked at every POLL.
                    PhaseState::Running if ph.wakeups.is_some() => None,
                    PhaseState::Running => Some(start_ns + ph.end_ns),
                    PhaseState::Done => None,
                })
                .min();
            let now = monotonic_ns();
            let wait = next_boundary
                .map(|b| Duration::from_nanos(b.saturating_sub(now)))
                .unwrap_or(POLL)
                .min(POLL);
            match rx.recv_timeout(wait) {
                Ok(Msg::Stop) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
                _ => {}
            }
        }
        self.wind_up()
    }

    fn wind_up(&mut self) -> Outcome {
        for p in 0..self.setup.phases.len() {
            if self.phase_state[p] == PhaseState::Running {
                // A counted phase the run's end cut short: its window ends now, with the
                // wakeups counted so far.
                if let Some((q, _)) = self.counting.take_if(|c| c.0 == p) {
                    let count = self.setup.wakeup_count.as_ref().map_or(0, |c| c.counted());
                    let now_off = monotonic_ns().saturating_sub(self.start_ns);
                    let plan = &mut self.setup.phases[q];
                    plan.end_ns = plan.end_ns.min(now_off).max(plan.start_ns);
                    let plan = plan.clone();
                    if let Some(ph) = self.outcome.phases.iter_mut().find(|ph| ph.index == q) {
                        ph.plan = plan;
                        ph.counted = Some(count);
                    }
                }
                self.end_phase(p);
            }
        }
        self.stop_all();
        let mut loads = std::mem::take(&mut self.outcome.loads);
        loads.sort_by_key(|l| {
            self.setup
                .loads
                .iter()
                .position(|p| p.spec.text == l.spec.text && p.phase == l.phase)
        });
        self.outcome.loads = loads;
        std::mem::take(&mut self.outcome)
    }

    fn begin_phase(&mut self, p: usize) {
        let members: Vec<usize> = (0..self.setup.loads.len())
            .filter(|&i| self.setup.loads[i].phase == Some(p))
            .collect();
        let plan = self.setup.phases[p].clone();
        match self.start_loads(&members) {
            Ok(()) => {
                let now = monotonic_ns();
                self.phase_state[p] = PhaseState::Running;
                // A counted phase counts thread 0's wakeups due from now (its loads ready).
                let mut plan = plan;
                if let (Some(n), Some(count)) = (plan.wakeups, &self.setup.wakeup_count) {
                    let from = now.saturating_sub(self.start_ns);
                    self.counting = Some((p, count.arm(from, n)));
                    plan.start_ns = from;
                    self.setup.phases[p].start_ns = from;
                }
                self.outcome.phases.push(PhaseResult {
                    index: p,
                    plan: plan.clone(),
                    started_ns: now,
                    ended_ns: now,
                    early_end_ns: None,
                    counted: None,
                });
                self.event(Event::PhaseStart {
                    time_ns: now,
                    index: p,
                    label: plan.label,
                    loads: plan.loads,
                });
            }
            Err(f) => {
                self.phase_state[p] = PhaseState::Done;
                self.outcome.failure.get_or_insert(format!(
                    "phase {p} ({}) could not start its loads: {}",
                    plan.label, f.message
                ));
                self.stop.store(true, Ordering::SeqCst);
            }
        }
    }

    /// Ends the counted phase running once the recorder has counted its wakeups: its window is
    /// from the first counted due time to the Nth; the phases after it move to start now
    /// (they follow one another: `scenario.rs` `check_counted`).
    fn end_counted_phase(&mut self) {
        let Some((p, generation)) = self.counting else {
            return;
        };
        let Some(count) = self.setup.wakeup_count.clone() else {
            return;
        };
        let Some((window_start, window_end)) = count.done(generation) else {
            return;
        };
        self.counting = None;
        let asked = self.setup.phases[p].wakeups;
        self.setup.phases[p].start_ns = window_start;
        self.setup.phases[p].end_ns = window_end;
        let plan = self.setup.phases[p].clone();
        if let Some(ph) = self.outcome.phases.iter_mut().find(|ph| ph.index == p) {
            ph.plan = plan;
            ph.counted = asked;
        }
        self.end_phase(p);
        let now_off = monotonic_ns().saturating_sub(self.start_ns);
        if let Some(next) = self.setup.phases.get(p + 1) {
            let planned = next.start_ns;
            for q in &mut self.setup.phases[p + 1..] {
                q.start_ns = q.start_ns - planned + now_off;
                q.end_ns = q.end_ns - planned + now_off;
            }
        }
    }

    /// With a counted phase, the run ends with the scenario: said once every phase is done.
    fn say_if_the_scenario_ended(&mut self) {
        if let Some(count) = &self.setup.wakeup_count
            && self.phase_state.iter().all(|s| *s == PhaseState::Done)
        {
            count.end_scenario();
        }
    }

    /// Ends phase `p` before its planned end when it has loads with `loops=` and every one of
    /// them has finished (its other loads are stopped with it).
    fn end_phase_if_loops_done(&mut self, p: usize) {
        let looped = |i: usize| {
            self.setup.loads[i].phase == Some(p) && self.setup.loads[i].spec.common.loops.is_some()
        };
        let has_loops = (0..self.setup.loads.len()).any(looped);
        let still_looping = self.running.iter().any(|r| looped(r.index));
        if self.phase_state[p] != PhaseState::Running || !has_loops || still_looping {
            return;
        }
        self.end_phase(p);
        let offset = monotonic_ns().saturating_sub(self.start_ns);
        if let Some(ph) = self.outcome.phases.iter_mut().find(|ph| ph.index == p) {
            ph.early_end_ns = Some(offset);
        }
    }

    fn end_phase(&mut self, p: usize) {
        let members: Vec<usize> = self
            .running
            .iter()
            .filter(|r| self.setup.loads[r.index].phase == Some(p))
            .map(|r| r.index)
            .collect();
        self.stop_loads(&members);
        let now = monotonic_ns();
        self.phase_state[p] = PhaseState::Done;
        if let Some(ph) = self.outcome.phases.iter_mut().find(|ph| ph.index == p) {
            ph.ended_ns = now;
        }
        let label = self.setup.phases[p].label.clone();
        self.event(Event::PhaseEnd {
            time_ns: now,
            index: p,
            label,
        });
    }

    /// Collects reports; notices loads that failed or ended by themselves.
    fn watch(&mut self) {
        let mut ended = Vec::new();
        for r in &mut self.running {
            r.drain();
            if r.try_reap(false) {
                ended.push(r.index);
            }
        }
        for i in ended {
            let pos = self.running.iter().position(|r| r.index == i).unwrap();
            let text = self.setup.loads[i].spec.text.clone();
            let r = &self.running[pos];
            let (failed, killed_by, exit_text) = (r.failed.clone(), r.killed_by(), r.exit_text());
            let secs = (r.ended_ns - r.started_ns) as f64 / 1e9;
            let before_end = if self.setup.loads[i].phase.is_some() {
                "before the end of its phase"
            } else {
                "before the end of its run"
            };
            let end = if let Some((message, _)) = failed {
                self.fail(format!("load '{text}' failed: {message}"));
                (LoadEnded::Failed, Some(message))
            } else if let Some(signal) = killed_by {
                let reason = format!("killed by {} after {secs:.1} s", signal_text(signal));
                self.fail(format!(
                    "load '{text}' was {reason}, {before_end}{}",
                    kill_hint(signal)
                ));
                (LoadEnded::Killed, Some(reason))
            } else if let Some(per_worker) = self.setup.loads[i].spec.common.loops
                && r.status
                    .is_some_and(|s| crate::sys::process::exit_code(s) == 0)
            {
                let loops = self.setup.loads[i].spec.loops_done(&r.values).unwrap_or(0);
                let event = Event::LoadFinished {
                    time_ns: r.ended_ns,
                    index: self.setup.record_index_base + i,
                    load: text.clone(),
                    phase: self.setup.loads[i].phase,
                    loops,
                    loops_per_worker: per_worker,
                };
                self.event(event);
                (
                    LoadEnded::Completed,
                    Some(format!(
                        "finished its loops ({loops} in all) after {secs:.1} s"
                    )),
                )
            } else if self.setup.once {
                (LoadEnded::Completed, None)
            } else {
                // The worker exits 0 when its work ended; what ended it is the work's to say
                // (an `exec` load's programs that failed, issue 39 L-i).
                let exit_text = self.setup.loads[i]
                    .spec
                    .ended_text(&r.values)
                    .unwrap_or(exit_text);
                let reason = format!("ended by itself after {secs:.1} s ({exit_text})");
                self.warn(format!("load '{text}' {reason}, {before_end}"));
                (LoadEnded::Exited, Some(reason))
            };
            self.running[pos].end = Some(end);
            self.stop_loads(&[i]);
        }
        for p in 0..self.setup.phases.len() {
            self.end_phase_if_loops_done(p);
        }
        self.all_ended
            .store(self.running.is_empty(), Ordering::SeqCst);
    }

    /// A load failed while running: the run fails and stops.
    fn fail(&mut self, message: String) {
        self.outcome.failure.get_or_insert(message.clone());
        self.event(Event::Warning {
            time_ns: monotonic_ns(),
            message,
        });
        self.stop.store(true, Ordering::SeqCst);
    }

    fn stop_all(&mut self) {
        let all: Vec<usize> = self.running.iter().map(|r| r.index).collect();
        self.stop_loads(&all);
    }

    /// Spawns the loads and waits until each is ready; on any failure, stops those started.
    fn start_loads(&mut self, indices: &[usize]) -> Result<(), Failure> {
        let mut started = Vec::new();
        for &i in indices {
            // A stop request (SIGINT, SIGTERM) while the loads start: no more are started
            // and none is waited for, so that the stop is served within a second from the
            // first instant (issue 39 L-k: each start takes 0.1 s here, thirty loads held
            // a SIGINT 4.5 s). Those started are stopped with the run, recorded `stopped`.
            if self.stop.load(Ordering::SeqCst) {
                let (left, all) = (indices.len() - started.len(), indices.len());
                self.warn(format!(
                    "a stop request (SIGINT or SIGTERM) came while the loads were starting: {left} of the {all} loads to start then were not started"
                ));
                return Ok(());
            }
            match spawn(
                &self.setup,
                self.containment
                    .as_ref()
                    .expect("the containment is made before any load"),
                i,
            ) {
                Ok((r, warning)) => {
                    started.push(i);
                    self.running.push(r);
                    if let Some(w) = warning {
                        self.warn(w);
                    }
                }
                Err(f) => {
                    self.stop_loads(&started);
                    return Err(f);
                }
            }
        }
        let deadline = std::time::Instant::now() + READY_TIMEOUT;
        loop {
            let mut waiting = false;
            let mut error = None;
            for r in self
                .running
                .iter_mut()
                .filter(|r| started.contains(&r.index))
            {
                r.drain();
                if let Some((message, code)) = &r.failed {
                    error = Some(Failure {
                        code: ExitCode::of_status(i32::from(*code)).unwrap_or(ExitCode::Run),
                        message: message.clone(),
                    });
                } else if !r.ready {
                    if r.try_reap(false) {
                        error = Some(Failure::run(format!(
                            "load '{}' ended during setup ({}); see its log",
                            self.setup.loads[r.index].spec.text,
                            r.exit_text()
                        )));
                    }
                    waiting = true;
                }
            }
            if let Some(e) = error {
                self.stop_loads(&started);
                return Err(e);
            }
            // A stop: the loads not ready yet are stopped with the others, at once.
            if !waiting || self.stop.load(Ordering::SeqCst) {
                return Ok(());
            }
            if std::time::Instant::now() > deadline {
                self.stop_loads(&started);
                return Err(Failure::run(format!(
                    "a load did not get ready within {} s",
                    READY_TIMEOUT.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// SIGTERM, grace, SIGKILL, reap: the loads and every process of their groups, cgroups and
    /// markers.
    fn stop_loads(&mut self, indices: &[usize]) {
        let mut stopping: Vec<Running> = Vec::new();
        let mut i = 0;
        while i < self.running.len() {
            if indices.contains(&self.running[i].index) {
                stopping.push(self.running.remove(i));
            } else {
                i += 1;
            }
        }
        let results = link::stop(stopping, &self.setup.loads);
        self.outcome.loads.extend(results);
    }
}

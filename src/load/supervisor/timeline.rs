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
    /// CLOCK_MONOTONIC, ns: the run's clock (a test's own, to step a timeline through).
    clock: fn() -> u64,
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
            clock: monotonic_ns,
        }
    }

    fn event(&mut self, e: Event) {
        let _ = self.events.send(e);
    }

    fn warn(&mut self, message: String) {
        self.event(Event::Warning {
            time_ns: (self.clock)(),
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
            self.step();
            match rx.recv_timeout(self.wait()) {
                Ok(Msg::Stop) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
                _ => {}
            }
        }
        self.wind_up()
    }

    /// One look at the timeline: ends the phases that are over (a counted phase when the
    /// recorder has counted its wakeups, a timed one at its end), begins those due, and
    /// watches the loads.
    fn step(&mut self) {
        self.end_counted_phase();
        let now = (self.clock)();
        for p in 0..self.setup.phases.len() {
            let plan = &self.setup.phases[p];
            if self.phase_state[p] == PhaseState::Running
                && plan.wakeups.is_none()
                && now >= self.start_ns + plan.end_ns
            {
                self.end_phase(p);
            }
        }
        self.say_if_the_scenario_ended();
        for p in 0..self.setup.phases.len() {
            if self.may_begin(p, now) {
                if self.is_sequence() {
                    // Begun when the phase before it ended, however late or early: its
                    // times (and those of the phases after it) move to now, lengths kept.
                    self.move_from(p, now.saturating_sub(self.start_ns));
                }
                self.begin_phase(p);
            }
        }
        self.watch();
    }

    /// How long to wait for the next boundary: at most [`POLL`], to look at the loads and a
    /// counted phase's count.
    fn wait(&self) -> Duration {
        let next_boundary = (0..self.setup.phases.len())
            .filter_map(|p| {
                let ph = &self.setup.phases[p];
                match self.phase_state[p] {
                    // A phase of a sequence waits for the one before it: no boundary until
                    // then (its planned start may be long past).
                    PhaseState::Pending => self.begins_at(p),
                    // Ended by its count: looked at every POLL.
                    PhaseState::Running if ph.wakeups.is_some() => None,
                    PhaseState::Running => Some(self.start_ns + ph.end_ns),
                    PhaseState::Done => None,
                }
            })
            .min();
        let now = (self.clock)();
        next_boundary
            .map(|b| Duration::from_nanos(b.saturating_sub(now)))
            .unwrap_or(POLL)
            .min(POLL)
    }

    /// A scenario with a phase of `wakeups = N` is a sequence (`scenario.rs` `check_counted`):
    /// each phase begins when the one before it has ended, wherever the plan put it.
    fn is_sequence(&self) -> bool {
        self.setup.wakeup_count.is_some()
    }

    /// When phase `p` may begin (CLOCK_MONOTONIC): on a timeline, at its planned start; in a
    /// sequence, as soon as every phase before it is done (the run's start for the first),
    /// None before, when that time is not known yet.
    fn begins_at(&self, p: usize) -> Option<u64> {
        if !self.is_sequence() {
            return Some(self.start_ns + self.setup.phases[p].start_ns);
        }
        self.phase_state[..p]
            .iter()
            .all(|s| *s == PhaseState::Done)
            .then_some(self.start_ns)
    }

    /// Whether phase `p` begins at `now`: pending, its time come ([`Self::begins_at`]), no
    /// stop asked; on a timeline, before its end (a phase whose time went by is not begun). A
    /// phase of a sequence has no time to miss: its times move to when it begins.
    fn may_begin(&self, p: usize, now: u64) -> bool {
        let plan = &self.setup.phases[p];
        self.phase_state[p] == PhaseState::Pending
            && self.begins_at(p).is_some_and(|t| now >= t)
            && (self.is_sequence() || now < self.start_ns + plan.end_ns)
            && !self.stop.load(Ordering::SeqCst)
    }

    /// In a sequence: phase `p` starts at `at_ns` (offset from the run's start), and every
    /// phase after it moves with it, each keeping its planned length.
    fn move_from(&mut self, p: usize, at_ns: u64) {
        let Some(planned) = self.setup.phases.get(p).map(|ph| ph.start_ns) else {
            return;
        };
        for q in &mut self.setup.phases[p..] {
            // Phases of a sequence follow one another: none starts before `planned`. Moved
            // later (begun late) or earlier (the one before ended early: its count came in
            // ahead of the plan, or its loads' `loops=` all finished).
            q.start_ns = q.start_ns - planned + at_ns;
            q.end_ns = q.end_ns - planned + at_ns;
        }
    }

    fn wind_up(&mut self) -> Outcome {
        for p in 0..self.setup.phases.len() {
            if self.phase_state[p] == PhaseState::Running {
                // A counted phase the run's end cut short: its window ends now, with the
                // wakeups counted so far.
                if let Some((q, _)) = self.counting.take_if(|c| c.0 == p) {
                    let count = self.setup.wakeup_count.as_ref().map_or(0, |c| c.counted());
                    let now_off = (self.clock)().saturating_sub(self.start_ns);
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
                let now = (self.clock)();
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
        let now_off = (self.clock)().saturating_sub(self.start_ns);
        self.move_from(p + 1, now_off);
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
        let offset = (self.clock)().saturating_sub(self.start_ns);
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
        let now = (self.clock)();
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
            time_ns: (self.clock)(),
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

#[cfg(test)]
mod tests {
    //! The timeline stepped on a clock of the test's own, with the recorder's side of a
    //! counted phase played as the run plays it: thread 0 due every 1 ms, its samples taken
    //! from the ring (and counted) at drains 100 ms apart, the supervisor looking every 20 ms.

    use super::*;
    use crate::load::scenario_count::{WakeupCount, WakeupCounter};
    use crate::load::supervisor::setup::PhasePlan;
    use std::sync::Mutex;
    use std::sync::atomic::AtomicU64;

    const MS: u64 = 1_000_000;
    /// The run's first due time on the test's clock.
    const START: u64 = 5_000 * MS;
    static NOW: AtomicU64 = AtomicU64::new(0);
    /// One test at a time on the one clock.
    static CLOCK: Mutex<()> = Mutex::new(());

    fn now() -> u64 {
        NOW.load(Ordering::SeqCst)
    }

    /// Phases planned as `Scenario::lay_out` plans them at 1 ms a wakeup: one after another
    /// from 0, a counted phase N ms long.
    fn sequence(phases: &[(&str, Option<u64>, u64)]) -> Vec<PhasePlan> {
        let mut at = 0;
        phases
            .iter()
            .map(|&(label, wakeups, length_ms)| {
                let length = wakeups.unwrap_or(length_ms) * MS;
                at += length;
                PhasePlan {
                    label: label.into(),
                    start_ns: at - length,
                    end_ns: at,
                    wakeups,
                    loads: vec![],
                }
            })
            .collect()
    }

    /// Steps the timeline of `phases` (phases without loads: nothing is spawned) from the
    /// run's first due time, the supervisor's first look `first_look_ms` after it; returns the
    /// outcome and whether the scenario said it ended, and when (ms after the start).
    fn play(phases: Vec<PhasePlan>, first_look_ms: u64) -> (Outcome, Option<u64>) {
        let count = Arc::new(WakeupCount::default());
        let setup = Setup {
            phases,
            wakeup_count: Some(Arc::clone(&count)),
            ..Setup::default()
        };
        let (events, _rx) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let mut state = State::new(setup, stop, Arc::new(AtomicBool::new(false)), events);
        state.clock = now;
        state.start_ns = START;
        let mut counter = WakeupCounter::new(Arc::clone(&count));
        let mut ring = Vec::new();
        let mut ended = None;
        for t in 0..5_000u64 {
            NOW.store(START + t * MS, Ordering::SeqCst);
            // Thread 0's wakeup due now, in its ring until the recorder's next drain.
            ring.push(t * MS);
            if t % 100 == 37 {
                for due in ring.drain(..) {
                    counter.see(due);
                }
            }
            if t >= first_look_ms && t % 20 == first_look_ms % 20 {
                state.step();
                if count.scenario_ended() {
                    ended = Some(t);
                    break;
                }
            }
        }
        (state.wind_up(), ended)
    }

    /// The due times on thread 0's 1 ms grid in a phase's window.
    fn due_in(p: &PhaseResult) -> u64 {
        assert_eq!((p.plan.end_ns - p.plan.start_ns) % MS, 0, "{p:?}");
        (p.plan.end_ns - p.plan.start_ns) / MS + 1
    }

    /// Last session's defect (the first phase counted 0 of its 300 wakeups and the run went on
    /// to its cap): the second phase began at its planned start, while the first phase's count
    /// was still on its way to the supervisor (counted at the recorder's drain, up to 100 ms
    /// later), and took the count over. In a sequence, each phase begins when the one before
    /// has ended.
    #[test]
    fn a_counted_phase_begins_when_the_one_before_has_ended() {
        let _one = CLOCK.lock().unwrap_or_else(|e| e.into_inner());
        let phases = sequence(&[
            ("quiet", Some(300), 0),
            ("proc", Some(200), 0),
            ("tail", None, 300),
        ]);
        let (outcome, ended) = play(phases, 1);
        let p = &outcome.phases;
        assert_eq!(p.iter().map(|p| p.index).collect::<Vec<_>>(), [0, 1, 2]);
        for (k, n) in [(0, 300), (1, 200)] {
            assert_eq!(p[k].counted, Some(n), "{:?}", p[k]);
            assert_eq!(due_in(&p[k]), n, "{:?}", p[k]);
        }
        // Each phase began after the one before it ended, its window after the other's.
        for w in p.windows(2) {
            assert!(w[1].started_ns >= w[0].ended_ns, "{p:?}");
            assert!(w[1].plan.start_ns > w[0].plan.end_ns, "{p:?}");
        }
        // The first counted from its begin (1 ms), its 300th wakeup due at 300 ms; seen at the
        // drain at 337 ms, ended at the look at 341 ms, where the second began.
        assert_eq!((p[0].plan.start_ns, p[0].plan.end_ns), (MS, 300 * MS));
        assert_eq!(p[1].started_ns, START + 341 * MS);
        assert_eq!((p[1].plan.start_ns, p[1].plan.end_ns), (341 * MS, 540 * MS));
        // The timed tail: its planned 300 ms, from the second's end (seen at 641 ms).
        assert_eq!((p[2].plan.start_ns, p[2].plan.end_ns), (641 * MS, 941 * MS));
        assert_eq!(p[2].counted, None);
        // The scenario, and so the run, ended with the tail.
        assert_eq!(ended, Some(941));
    }

    /// A supervisor that first looks long after the plan's times (held off its CPU) still
    /// begins the sequence's phases, each in full: a phase of a sequence has no time to miss.
    #[test]
    fn a_sequence_looked_at_late_still_runs_every_phase() {
        let _one = CLOCK.lock().unwrap_or_else(|e| e.into_inner());
        let phases = sequence(&[("count", Some(10), 0), ("timed", None, 50)]);
        let (outcome, ended) = play(phases, 500);
        let p = &outcome.phases;
        assert_eq!(p.len(), 2, "{p:?}");
        assert_eq!(p[0].counted, Some(10));
        assert_eq!((p[0].plan.start_ns, p[0].plan.end_ns), (500 * MS, 509 * MS));
        // Counted at the drain at 537 ms, seen at the look at 540 ms; then 50 ms.
        assert_eq!((p[1].plan.start_ns, p[1].plan.end_ns), (540 * MS, 590 * MS));
        assert_eq!(ended, Some(600));
    }
}

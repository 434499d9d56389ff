//! The load supervisor: starts each generator as a child process, switches them on and off
//! along a timeline of phases, collects their counters, and makes sure none outlives its phase
//! or jitterlab.
//!
//! Containment, per load:
//! - the worker is `/proc/self/exe __load-worker SPEC` in a process group of its own, so the
//!   whole load (threads, forked children, programs it runs) is signalled at once;
//! - it gets PR_SET_PDEATHSIG(SIGKILL) before exec, and exits at once if jitterlab already died;
//!   the signal follows the *thread* that forked, so every load is forked by the supervisor's
//!   own thread, which lives until every load is reaped; the worker's children do the same
//!   against the worker (`kit::die_with_parent`);
//! - at the end of its phase: SIGTERM to the group (the worker reports its last counters),
//!   [`GRACE`] later SIGKILL to the group, then every member is reaped. jitterlab is a child
//!   subreaper while loads run, so members orphaned by the worker's death come back to it;
//! - its stdout and stderr go to `loads/<k>-<name>.log` in the result directory.
//!
//! Every process of a load carries `JITTERLAB_LOAD=<jitterlab pid>:<k>` in its environment and,
//! where the system allows, lives in a cgroup of the load's own: descendants that leave the
//! process group (setsid, setpgid, daemons) are found and killed through those, also by a reaper
//! process after a SIGKILL of jitterlab (`contain.rs`).
//!
//! A load that ends before it is stopped is reported: killed by a signal (the OOM killer's
//! SIGKILL, a user's kill) or failed, it fails the run; ended by itself, it is a warning.

use super::contain::{self, Containment, LoadContainer};
use super::generator::GeneratorSpec;
use super::kit::{kill_hint, signal_text};
use super::protocol::{MARKER_ENV, REPORT_FD, WorkerMessage};
use crate::cpulist::format_cpu_list;
use crate::error::{ExitCode, Failure};
use crate::measure::clock::monotonic_ns;
use crate::results::events::{Event, EventLog};
use crate::results::run_record::{LoadEnded, LoadRecord, Throughput};
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

/// Time a load has, after SIGTERM, to report and exit before its group is killed.
pub const GRACE: Duration = Duration::from_millis(300);
/// Time a worker has to set itself up and say it is ready.
const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// How often the supervisor looks at its loads between phase boundaries.
const POLL: Duration = Duration::from_millis(20);
/// Name of the log directory inside a result directory.
pub const LOG_DIR: &str = "loads";

/// One generator to run, for the whole run or for one phase.
#[derive(Debug, Clone)]
pub struct PlannedLoad {
    pub spec: GeneratorSpec,
    /// None: from before the start to the end of the run.
    pub phase: Option<usize>,
}

/// One phase on the timeline, offsets from the run's start.
#[derive(Debug, Clone, PartialEq)]
pub struct PhasePlan {
    pub label: String,
    pub start_ns: u64,
    pub end_ns: u64,
    pub loads: Vec<String>,
}

/// What the supervisor is to do.
#[derive(Debug, Clone, Default)]
pub struct Setup {
    pub loads: Vec<PlannedLoad>,
    pub phases: Vec<PhasePlan>,
    pub online: Vec<usize>,
    /// The measured CPUs, for `cpus=housekeeping`.
    pub measured: Vec<usize>,
    /// The result directory: logs go to its `loads/`; None: the loads share jitterlab's
    /// stdout and stderr.
    pub result_dir: Option<PathBuf>,
    /// Index in run.json `loads[]` of the first load here (the spike loads come first).
    pub record_index_base: usize,
    /// events.jsonl to append phase boundaries and warnings to.
    pub events: Option<PathBuf>,
    /// Run hackbench once instead of repeating it (`jitterlab load` without --duration).
    pub once: bool,
}

/// What one load did.
#[derive(Debug, Clone)]
pub struct LoadResult {
    pub spec: GeneratorSpec,
    pub phase: Option<usize>,
    /// The counters of its last report, and the work time they cover.
    pub values: Vec<u64>,
    pub elapsed_ns: u64,
    /// CPU time of the worker and the children it reaped (from wait4), ns.
    pub cpu_time_ns: u64,
    /// Monotonic times it was started and reaped.
    pub started_ns: u64,
    pub ended_ns: u64,
    /// How it ended, and in words when it ended before it was stopped.
    pub ended: LoadEnded,
    pub end_reason: Option<String>,
}

impl LoadResult {
    pub fn throughput(&self) -> Vec<Throughput> {
        let mut t = self.spec.throughput(&self.values, self.elapsed_ns);
        t.push(Throughput {
            name: "cpu time".into(),
            value: self.cpu_time_ns as f64 / 1e9,
            unit: "s".into(),
        });
        t
    }

    pub fn record(&self) -> LoadRecord {
        LoadRecord {
            spec: self.spec.text.clone(),
            kind: self.spec.name().into(),
            throughput: self.throughput(),
            ended: Some(self.ended),
            end_reason: self.end_reason.clone(),
        }
    }
}

/// A phase as it ran.
#[derive(Debug, Clone)]
pub struct PhaseResult {
    pub index: usize,
    pub plan: PhasePlan,
    /// Monotonic: when its loads were all started, and when they were all reaped.
    pub started_ns: u64,
    pub ended_ns: u64,
}

#[derive(Debug, Default)]
pub struct Outcome {
    /// The loads that were started, in plan order.
    pub loads: Vec<LoadResult>,
    pub phases: Vec<PhaseResult>,
    /// A load that failed while running: the run failed.
    pub failure: Option<String>,
    pub warnings: Vec<String>,
}

enum Msg {
    Begin(u64),
    Stop,
}

/// A running supervisor thread. Dropping it stops and reaps every load.
pub struct Supervisor {
    tx: mpsc::Sender<Msg>,
    join: Option<std::thread::JoinHandle<Outcome>>,
    all_ended: Arc<AtomicBool>,
}

impl Supervisor {
    /// Starts the supervisor thread and the loads that run for the whole run, and waits until
    /// they are ready. `stop` is set when a load fails during the run.
    pub fn start(setup: Setup, stop: Arc<AtomicBool>) -> Result<Self, Failure> {
        let (tx, rx) = mpsc::channel();
        let (ready_tx, ready_rx) = mpsc::channel();
        let all_ended = Arc::new(AtomicBool::new(false));
        let ended = Arc::clone(&all_ended);
        let join = std::thread::Builder::new()
            .name("jl-loads".into())
            .spawn(move || {
                let mut s = State::new(setup, stop, ended);
                s.run(rx, ready_tx)
            })
            .map_err(|e| {
                Failure::system(format!("cannot start the load supervisor thread: {e}"))
            })?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(Supervisor {
                tx,
                join: Some(join),
                all_ended,
            }),
            Ok(Err(f)) => {
                let _ = join.join();
                Err(f)
            }
            Err(_) => {
                let _ = join.join();
                Err(Failure::run("the load supervisor ended during setup"))
            }
        }
    }

    /// Fixes the run's start (CLOCK_MONOTONIC); phases are timed from it.
    pub fn begin(&self, start_ns: u64) {
        let _ = self.tx.send(Msg::Begin(start_ns));
    }

    /// Whether every load has ended by itself (hackbench once, an exec without restart).
    pub fn all_ended(&self) -> bool {
        self.all_ended.load(Ordering::SeqCst)
    }

    /// Stops every load, reaps them, and returns what they did.
    pub fn finish(mut self) -> Outcome {
        self.stop_and_join().unwrap_or_default()
    }

    fn stop_and_join(&mut self) -> Option<Outcome> {
        let _ = self.tx.send(Msg::Stop);
        self.join.take().and_then(|j| j.join().ok())
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// One load process.
struct Running {
    index: usize,
    pid: libc::pid_t,
    reader: File,
    pending: Vec<u8>,
    values: Vec<u64>,
    elapsed_ns: u64,
    failed: Option<(String, u8)>,
    ready: bool,
    /// wait4 status once reaped.
    status: Option<i32>,
    cpu_time_ns: u64,
    started_ns: u64,
    ended_ns: u64,
    /// SIGTERM was sent: an exit from now on is the requested end.
    stopping: bool,
    /// Its cgroup and marker: every process of the load.
    container: LoadContainer,
    /// How it ended when that was before it was stopped.
    end: Option<(LoadEnded, Option<String>)>,
}

impl Running {
    /// Reads whatever the worker reported since the last call.
    fn drain(&mut self) {
        let mut buf = [0u8; 4096];
        loop {
            match self.reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => self.pending.extend_from_slice(&buf[..n]),
                Err(_) => break, // EAGAIN: nothing more for now
            }
        }
        while let Some(nl) = self.pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=nl).collect();
            match serde_json::from_slice::<WorkerMessage>(&line) {
                Ok(WorkerMessage::Ready) => self.ready = true,
                Ok(WorkerMessage::Counters { elapsed_ns, values })
                | Ok(WorkerMessage::Done { elapsed_ns, values }) => {
                    self.elapsed_ns = elapsed_ns;
                    self.values = values;
                }
                Ok(WorkerMessage::Failed { message, code }) => self.failed = Some((message, code)),
                Err(_) => {}
            }
        }
    }

    /// Reaps the worker if it has exited; true once reaped.
    fn try_reap(&mut self, block: bool) -> bool {
        if self.status.is_some() {
            return true;
        }
        let mut status = 0;
        // SAFETY: zeroed rusage to fill, our own child.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let flags = if block { 0 } else { libc::WNOHANG };
        let r = unsafe { libc::wait4(self.pid, &mut status, flags, &mut ru) };
        if r == self.pid {
            self.status = Some(status);
            self.cpu_time_ns += rusage_ns(&ru);
            self.ended_ns = monotonic_ns();
            self.drain();
            true
        } else {
            r < 0 // ECHILD: already gone
        }
    }

    /// The signal that killed the worker, if one did.
    fn killed_by(&self) -> Option<i32> {
        self.status
            .filter(|&s| libc::WIFSIGNALED(s))
            .map(|s| libc::WTERMSIG(s))
    }

    fn exit_text(&self) -> String {
        match self.status {
            Some(s) if libc::WIFSIGNALED(s) => {
                format!("killed by {}", signal_text(libc::WTERMSIG(s)))
            }
            Some(s) => format!("exit status {}", libc::WEXITSTATUS(s)),
            None => "still running".into(),
        }
    }
}

fn rusage_ns(ru: &libc::rusage) -> u64 {
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

#[derive(Clone, Copy, PartialEq)]
enum PhaseState {
    Pending,
    Running,
    Done,
}

struct State {
    setup: Setup,
    /// Made when the supervisor thread starts; dropped (cgroups removed, reaper finished) when
    /// it ends, after every load was reaped.
    containment: Option<Containment>,
    stop: Arc<AtomicBool>,
    all_ended: Arc<AtomicBool>,
    events: Option<EventLog>,
    running: Vec<Running>,
    outcome: Outcome,
    phase_state: Vec<PhaseState>,
}

impl State {
    fn new(setup: Setup, stop: Arc<AtomicBool>, all_ended: Arc<AtomicBool>) -> Self {
        let events = setup.events.as_ref().and_then(|p| EventLog::create(p).ok());
        State {
            phase_state: vec![PhaseState::Pending; setup.phases.len()],
            setup,
            containment: None,
            stop,
            all_ended,
            events,
            running: Vec::new(),
            outcome: Outcome::default(),
        }
    }

    fn event(&mut self, e: Event) {
        if let Some(log) = &mut self.events {
            let _ = log.write(&e);
        }
    }

    fn warn(&mut self, message: String) {
        self.event(Event::Warning {
            time_ns: monotonic_ns(),
            message: message.clone(),
        });
        self.outcome.warnings.push(message);
    }

    fn run(
        &mut self,
        rx: mpsc::Receiver<Msg>,
        ready: mpsc::Sender<Result<(), Failure>>,
    ) -> Outcome {
        // Orphans of a dying worker come back to us, to be reaped.
        // SAFETY: plain prctl.
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
        match Containment::start() {
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
        loop {
            let now = monotonic_ns();
            for p in 0..self.setup.phases.len() {
                let plan = self.setup.phases[p].clone();
                if self.phase_state[p] == PhaseState::Running && now >= start_ns + plan.end_ns {
                    self.end_phase(p);
                }
            }
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
                self.outcome.phases.push(PhaseResult {
                    index: p,
                    plan: plan.clone(),
                    started_ns: now,
                    ended_ns: now,
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

    /// Spawns the loads and waits until each is ready; on any failure, stops those started.
    fn start_loads(&mut self, indices: &[usize]) -> Result<(), Failure> {
        let mut started = Vec::new();
        for &i in indices {
            match self.spawn(i) {
                Ok(r) => {
                    started.push(i);
                    self.running.push(r);
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
                        code: if *code == 3 {
                            ExitCode::System
                        } else {
                            ExitCode::Run
                        },
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
            if !waiting {
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

    fn spawn(&mut self, index: usize) -> Result<Running, Failure> {
        let load = &self.setup.loads[index];
        let text = load.spec.text.clone();
        let cpus = load
            .spec
            .common
            .cpus
            .resolve(&self.setup.online, &self.setup.measured)
            .map_err(|e| Failure::usage(format!("load '{text}': {e}")))?;
        let record_index = self.setup.record_index_base + index;
        let (read_fd, write_fd) = pipe()
            .map_err(|e| Failure::system(format!("cannot create a pipe for load '{text}': {e}")))?;
        // SAFETY: fresh descriptors from pipe2, owned here.
        let reader = unsafe { File::from_raw_fd(read_fd) };
        let writer = unsafe { File::from_raw_fd(write_fd) };
        let mut cmd = Command::new("/proc/self/exe");
        cmd.arg("__load-worker")
            .arg(&text)
            .arg("--cpus")
            .arg(format_cpu_list(&cpus))
            .arg("--report-cpus")
            .arg(format_cpu_list(&self.report_cpus()));
        if self.setup.once {
            cmd.arg("--once");
        }
        cmd.env(
            MARKER_ENV,
            contain::marker(std::process::id(), record_index),
        )
        .stdin(Stdio::null())
        .process_group(0);
        let container = self
            .containment
            .as_ref()
            .expect("the containment is made before any load")
            .for_load(record_index);
        // Kept open until the child has moved itself in (before exec, so that nothing it starts
        // is born outside); closed on exec.
        let cgroup_procs = container.procs_file();
        let procs_fd = cgroup_procs.as_ref().map(|f| f.as_raw_fd());
        if let Some(dir) = &self.setup.result_dir {
            let logs = dir.join(LOG_DIR);
            let path = logs.join(format!("{record_index}-{}.log", load.spec.name()));
            let log = std::fs::create_dir_all(&logs)
                .and_then(|_| File::create(&path))
                .map_err(|e| Failure::run(format!("cannot create {}: {e}", path.display())))?;
            let err = log
                .try_clone()
                .map_err(|e| Failure::run(format!("cannot open {}: {e}", path.display())))?;
            cmd.stdout(log).stderr(err);
        }
        // SAFETY: getpid is a plain syscall.
        let parent = unsafe { libc::getpid() };
        let w = writer.as_raw_fd();
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                if w == REPORT_FD {
                    libc::fcntl(w, libc::F_SETFD, 0);
                } else if libc::dup2(w, REPORT_FD) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if let Some(fd) = procs_fd {
                    contain::join_own_cgroup(fd);
                }
                super::kit::die_with_parent(parent);
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .map_err(|e| Failure::system(format!("cannot start load '{text}': {e}")))?;
        drop(writer);
        drop(cgroup_procs);
        // SAFETY: our own descriptor.
        unsafe {
            let flags = libc::fcntl(read_fd, libc::F_GETFL);
            libc::fcntl(read_fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
        Ok(Running {
            index,
            pid: child.id() as libc::pid_t,
            reader,
            pending: Vec::new(),
            values: Vec::new(),
            elapsed_ns: 0,
            failed: None,
            ready: false,
            status: None,
            cpu_time_ns: 0,
            started_ns: monotonic_ns(),
            ended_ns: 0,
            stopping: false,
            container,
            end: None,
        })
    }

    /// Where the workers' reporting threads run: the CPUs not measured, or all.
    fn report_cpus(&self) -> Vec<usize> {
        let rest: Vec<usize> = self
            .setup
            .online
            .iter()
            .copied()
            .filter(|c| !self.setup.measured.contains(c))
            .collect();
        if rest.is_empty() {
            self.setup.online.clone()
        } else {
            rest
        }
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
            } else if self.setup.once {
                (LoadEnded::Completed, None)
            } else {
                let reason = format!("ended by itself after {secs:.1} s ({exit_text})");
                self.warn(format!("load '{text}' {reason}, {before_end}"));
                (LoadEnded::Exited, Some(reason))
            };
            self.running[pos].end = Some(end);
            self.stop_loads(&[i]);
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
        for r in &mut stopping {
            r.stopping = true;
            if self.setup.loads[r.index]
                .spec
                .common
                .policy
                .to_policy()
                .is_realtime()
            {
                demote(&r.container.pids());
            }
            if r.status.is_none() {
                // SAFETY: signalling our own child's process group.
                unsafe { libc::kill(-r.pid, libc::SIGTERM) };
            }
        }
        let deadline = std::time::Instant::now() + GRACE;
        while std::time::Instant::now() < deadline {
            let mut alive = false;
            for r in &mut stopping {
                r.drain();
                alive |= !r.try_reap(false);
            }
            if !alive {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        for r in &mut stopping {
            // Whatever is left of the group (a worker that did not exit, children that ignore
            // SIGTERM), of the cgroup and of the marker's carriers (descendants that left the
            // group) is killed; members the worker did not reap come back to us.
            // SAFETY: signalling our own child's process group.
            unsafe { libc::kill(-r.pid, libc::SIGKILL) };
            let killed = r.container.kill_all();
            r.try_reap(true);
            r.cpu_time_ns += reap_group(r.pid);
            r.cpu_time_ns += reap_pids(&killed);
            r.drain();
            let (ended, end_reason) = r.end.take().unwrap_or((LoadEnded::Stopped, None));
            let spec = self.setup.loads[r.index].clone();
            self.outcome.loads.push(LoadResult {
                spec: spec.spec,
                phase: spec.phase,
                values: std::mem::take(&mut r.values),
                elapsed_ns: r.elapsed_ns,
                cpu_time_ns: r.cpu_time_ns,
                started_ns: r.started_ns,
                ended_ns: r.ended_ns.max(r.started_ns),
                ended,
                end_reason,
            });
        }
    }
}

/// Returns every thread of the processes `pids` (a load's) to SCHED_OTHER, so that a real-time
/// load that saturates its CPUs stops doing so at once, and its worker can handle SIGTERM and
/// report (its threads may all share CPUs with the hog).
fn demote(pids: &[libc::pid_t]) {
    for pid in pids {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            if let Ok(tid) = t.file_name().to_string_lossy().parse::<libc::pid_t>() {
                let param = libc::sched_param { sched_priority: 0 };
                // SAFETY: plain syscall with a valid parameter.
                unsafe { libc::sched_setscheduler(tid, libc::SCHED_OTHER, &param) };
            }
        }
    }
}

/// Reaps every member of process group `pgid` that became our child, until the group is gone
/// (at most a second); the CPU time of those reaped, ns.
fn reap_group(pgid: libc::pid_t) -> u64 {
    let deadline = std::time::Instant::now() + Duration::from_secs(1);
    let mut cpu = 0;
    loop {
        let mut status = 0;
        // SAFETY: zeroed rusage to fill.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let r = unsafe { libc::wait4(-pgid, &mut status, libc::WNOHANG, &mut ru) };
        if r > 0 {
            cpu += rusage_ns(&ru);
            continue;
        }
        // SAFETY: signal 0 only checks for existence.
        let gone = unsafe { libc::kill(-pgid, 0) } != 0;
        if gone || std::time::Instant::now() > deadline {
            return cpu;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Reaps those of `pids` (a load's killed processes) that are or become our children (a dead
/// parent's children come back to jitterlab, a child subreaper), until each is reaped or gone
/// (at most a second); the CPU time of those reaped, ns.
fn reap_pids(pids: &[libc::pid_t]) -> u64 {
    let deadline = std::time::Instant::now() + Duration::from_secs(1);
    let mut left = pids.to_vec();
    let mut cpu = 0;
    while !left.is_empty() && std::time::Instant::now() < deadline {
        left.retain(|&pid| {
            let mut status = 0;
            // SAFETY: zeroed rusage to fill.
            let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
            let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
            if r == pid {
                cpu += rusage_ns(&ru);
                false
            } else if r < 0 {
                // Not our child: reaped already, or a zombie still on its way to us.
                std::path::Path::new(&format!("/proc/{pid}")).exists()
            } else {
                true
            }
        });
        std::thread::sleep(Duration::from_millis(1));
    }
    cpu
}

fn pipe() -> std::io::Result<(RawFd, RawFd)> {
    let mut fds = [0; 2];
    // SAFETY: valid array of two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((fds[0], fds[1]))
}

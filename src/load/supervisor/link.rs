//! The supervisor's end of one worker: the reports it reads from the pipe, the worker's exit
//! and CPU time, and stopping a load: SIGTERM, [`GRACE`], SIGKILL, reap, for the worker, its
//! process group, its cgroup and every process carrying its marker.

use super::log::BoundedLog;
use super::setup::{LoadResult, PlannedLoad};
use crate::format::run_record::LoadEnded;
use crate::load::contain::LoadContainer;
use crate::load::protocol::WorkerMessage;
use crate::load::worker_kit::signal_text;
use crate::measure::clock::monotonic_ns;
use crate::sys::process::{self, Pid};
use crate::sys::signal;
use std::fs::File;
use std::io::Read;
use std::time::Duration;

/// Time a load has, after SIGTERM, to report and exit before its group is killed.
pub(crate) const GRACE: Duration = Duration::from_millis(300);

/// One load process.
pub(super) struct Running {
    pub(super) index: usize,
    pub(super) pid: Pid,
    pub(super) reader: File,
    pub(super) pending: Vec<u8>,
    pub(super) values: Vec<u64>,
    pub(super) elapsed_ns: u64,
    pub(super) failed: Option<(String, u8)>,
    pub(super) ready: bool,
    /// wait4 status once reaped.
    pub(super) status: Option<i32>,
    pub(super) cpu_time_ns: u64,
    pub(super) started_ns: u64,
    pub(super) ended_ns: u64,
    /// SIGTERM was sent: an exit from now on is the requested end.
    pub(super) stopping: bool,
    /// Its cgroup and marker: every process of the load.
    pub(super) container: LoadContainer,
    /// How it ended when that was before it was stopped.
    pub(super) end: Option<(LoadEnded, Option<String>)>,
    /// Its log, when bounded (a run's, a monitor's).
    pub(super) log: Option<BoundedLog>,
}

impl Running {
    /// A worker just started, reporting on `reader`.
    pub(super) fn new(
        index: usize,
        pid: Pid,
        reader: File,
        container: LoadContainer,
        log: Option<BoundedLog>,
    ) -> Self {
        Running {
            index,
            pid,
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
            log,
        }
    }

    /// Reads whatever the worker reported since the last call.
    pub(super) fn drain(&mut self) {
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
    pub(super) fn try_reap(&mut self, block: bool) -> bool {
        if self.status.is_some() {
            return true;
        }
        let r = process::wait_for(self.pid, block);
        if let Ok(Some(reaped)) = r {
            self.status = Some(reaped.status);
            self.cpu_time_ns += reaped.cpu_ns;
            self.ended_ns = monotonic_ns();
            self.drain();
            true
        } else {
            r.is_err() // ECHILD: already gone
        }
    }

    /// The signal that killed the worker, if one did.
    pub(super) fn killed_by(&self) -> Option<i32> {
        self.status.and_then(process::killed_by)
    }

    pub(super) fn exit_text(&self) -> String {
        match self.status {
            Some(s) => match process::killed_by(s) {
                Some(signal) => format!("killed by {}", signal_text(signal)),
                None => format!("exit status {}", process::exit_code(s)),
            },
            None => "still running".into(),
        }
    }
}

/// SIGTERM, grace, SIGKILL, reap: the loads `stopping` (of plan `loads`) and every process of
/// their groups, cgroups and markers; what each did.
pub(super) fn stop(mut stopping: Vec<Running>, loads: &[PlannedLoad]) -> Vec<LoadResult> {
    let mut results = Vec::new();
    for r in &mut stopping {
        r.stopping = true;
        // Every load, not only those that asked for a real-time policy: a load's program
        // may have taken one by itself where the system let it (an `exec` load given
        // policy=fifo|rr keeps its privileges).
        demote(&r.container.pids());
        if r.status.is_none() {
            // Our own child's process group.
            let _ = process::kill(-r.pid, signal::SIGTERM);
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
        // Our own child's process group.
        let _ = process::kill(-r.pid, signal::SIGKILL);
        let killed = r.container.kill_all();
        r.try_reap(true);
        r.cpu_time_ns += reap_group(r.pid);
        r.cpu_time_ns += reap_pids(&killed);
        r.drain();
        let (ended, end_reason) = r.end.take().unwrap_or((LoadEnded::Stopped, None));
        let spec = loads[r.index].clone();
        results.push(LoadResult {
            spec: spec.spec,
            phase: spec.phase,
            values: std::mem::take(&mut r.values),
            elapsed_ns: r.elapsed_ns,
            cpu_time_ns: r.cpu_time_ns,
            started_ns: r.started_ns,
            ended_ns: r.ended_ns.max(r.started_ns),
            ended,
            end_reason,
            // Once every process of the load is gone, the copy has its last output.
            log: r.log.as_ref().map(BoundedLog::record),
        });
    }
    results
}

/// Returns every real-time thread of the processes `pids` (a load's) to SCHED_OTHER, so that a
/// real-time load that saturates its CPUs stops doing so at once, and its worker can handle
/// SIGTERM and report (its threads may all share CPUs with the hog), and so that the measuring
/// threads it held off their CPUs run again (`session::Session::serve_the_end`). Threads of a
/// normal policy (`batch`, `idle`) keep theirs.
fn demote(pids: &[Pid]) {
    use crate::sys::sched::{SCHED_OTHER, scheduler, set_scheduler};
    for pid in pids {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            if let Ok(tid) = t.file_name().to_string_lossy().parse::<Pid>() {
                // A thread that has ended meanwhile is simply gone; one whose policy cannot
                // be read is demoted all the same.
                let normal = scheduler(tid).is_ok_and(is_normal_policy);
                if !normal {
                    let _ = set_scheduler(tid, SCHED_OTHER, 0);
                }
            }
        }
    }
}

/// SCHED_OTHER, SCHED_BATCH or SCHED_IDLE: below every real-time thread.
fn is_normal_policy(policy: i32) -> bool {
    use crate::sys::sched::{SCHED_BATCH, SCHED_IDLE, SCHED_OTHER};
    [SCHED_OTHER, SCHED_BATCH, SCHED_IDLE].contains(&policy)
}

/// Reaps every member of process group `pgid` that became our child, until the group is gone
/// (at most a second); the CPU time of those reaped, ns.
fn reap_group(pgid: Pid) -> u64 {
    let deadline = std::time::Instant::now() + Duration::from_secs(1);
    let mut cpu = 0;
    loop {
        if let Ok(Some(reaped)) = process::wait_for(-pgid, false) {
            cpu += reaped.cpu_ns;
            continue;
        }
        // Signal 0 only checks for existence.
        let gone = process::kill(-pgid, 0).is_err();
        if gone || std::time::Instant::now() > deadline {
            return cpu;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Reaps those of `pids` (a load's killed processes) that are or become our children (a dead
/// parent's children come back to jitterlab, a child subreaper), until each is reaped or gone
/// (at most a second); the CPU time of those reaped, ns.
fn reap_pids(pids: &[Pid]) -> u64 {
    let deadline = std::time::Instant::now() + Duration::from_secs(1);
    let mut left = pids.to_vec();
    let mut cpu = 0;
    while !left.is_empty() && std::time::Instant::now() < deadline {
        left.retain(|&pid| {
            let r = process::wait_for(pid, false);
            if let Ok(Some(reaped)) = r {
                cpu += reaped.cpu_ns;
                false
            } else if r.is_err() {
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

//! The trace reader: one non-real-time thread that polls every traced CPU's
//! `trace_pipe_raw` without blocking, a page per read, parses the pages ([`super::page`]),
//! decodes the events ([`super::decode`]) and sends them to the recorder in per-CPU batches.
//!
//! Each batch says up to when its CPU's trace is complete: the CLOCK_MONOTONIC time taken just
//! before the reads that emptied the CPU's buffer. Every event a CPU wrote before a wakeup on
//! that CPU was committed before the woken thread ran (the CPU finishes writing an event before
//! it returns to user space), so a sample whose wakeup lies before that time has all its events
//! in this or an earlier batch.

use super::decode::{Decoder, Kind, TraceEvent};
use super::format::Formats;
use super::page::{Missed, read_page};
use crate::measure::clock::monotonic_ns;
use crate::measure::sched::DrainPriority;
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::thread::JoinHandle;
use std::time::Duration;

/// A task's scheduling policy, as the kernel reported it while the task was in the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TaskPolicy {
    /// `FIFO`, `RR`, `DEADLINE`, `OTHER`, `BATCH`, `IDLE`.
    pub policy: &'static str,
    /// rt_priority for FIFO and RR; the nice value for OTHER, BATCH and IDLE; 0 for DEADLINE.
    pub prio: i32,
    /// The kernel prio the trace showed when this was looked up.
    pub(crate) kernel_prio: i32,
}

/// Looks up a task's policy now (sched_getscheduler, sched_getparam, getpriority).
pub(crate) fn lookup_policy(pid: i32, kernel_prio: i32) -> Option<TaskPolicy> {
    use crate::sys::sched as os;
    let policy_name = match os::scheduler(pid).ok()? {
        os::SCHED_FIFO => "FIFO",
        os::SCHED_RR => "RR",
        os::SCHED_OTHER => "OTHER",
        os::SCHED_BATCH => "BATCH",
        os::SCHED_IDLE => "IDLE",
        os::SCHED_DEADLINE => "DEADLINE",
        _ => return None,
    };
    let prio = match policy_name {
        "FIFO" | "RR" => os::priority(pid).ok()?,
        "DEADLINE" => 0,
        _ => os::nice(pid).ok()?,
    };
    Some(TaskPolicy {
        policy: policy_name,
        prio,
        kernel_prio,
    })
}

/// The policy of each task that ran (or was woken to run: its switch in may be missing, see
/// replay.rs) in `events` and is not in `known` with the same kernel prio, looked up once per
/// (pid, prio) while the task most likely still exists and still has it.
pub(crate) fn new_policies(
    events: &[TraceEvent],
    known: &mut HashMap<i32, i32>,
) -> Vec<(i32, TaskPolicy)> {
    let mut policies = Vec::new();
    // The task last found known: a CPU's wakeups name the same measuring thread again and
    // again, so most events need no lookup in `known`.
    let mut last_known = None;
    for e in events {
        let task = match &e.kind {
            Kind::Switch { next, .. } => next,
            Kind::Waking { task, .. } => task,
            _ => continue,
        };
        if task.pid <= 0 || last_known == Some((task.pid, task.prio)) {
            continue;
        }
        if known.get(&task.pid) != Some(&task.prio) {
            known.insert(task.pid, task.prio);
            if let Some(p) = lookup_policy(task.pid, task.prio) {
                policies.push((task.pid, p));
            }
        }
        last_known = Some((task.pid, task.prio));
    }
    policies
}

/// Events of one CPU, complete up to `complete_until_ns`.
#[derive(Debug, Clone)]
pub struct TraceBatch {
    pub cpu: usize,
    pub events: Vec<TraceEvent>,
    /// Every event this CPU wrote before this CLOCK_MONOTONIC time has been sent.
    pub(crate) complete_until_ns: u64,
    /// Policies of tasks first seen in this batch.
    pub(crate) policies: Vec<(i32, TaskPolicy)>,
    /// The reader's last batch of this CPU (read after the measuring threads ended): nothing
    /// the run did is still to come.
    pub last: bool,
}

/// What the reader did, for run.json and the cost benchmark.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReaderStats {
    pub pages: u64,
    pub bytes: u64,
    pub events: u64,
    /// Events the kernel reported lost in page headers.
    pub(crate) lost_events: u64,
    /// Pages flagged with lost events whose number the kernel could not store.
    pub(crate) lost_unknown: u64,
    /// CPU time the reader thread used, ns.
    pub(crate) cpu_time_ns: u64,
    /// BPF: the events the programs handled, all CPUs (with the in-kernel reduction most of
    /// them never reach the reader).
    pub(crate) kernel_events: Option<u64>,
}

/// The running reader thread.
pub struct Reader {
    stop: Arc<AtomicBool>,
    join: Option<JoinHandle<Result<ReaderStats, String>>>,
}

struct CpuPipe {
    cpu: usize,
    file: File,
}

/// Opens `per_cpu/cpuN/trace_pipe_raw` of every CPU in `cpus` and starts polling them every
/// `poll`.
pub(crate) fn spawn(
    instance: &Path,
    cpus: &[usize],
    formats: Formats,
    decoder: Decoder,
    tx: Sender<TraceBatch>,
    poll: Duration,
    drain_priority: Option<i32>,
) -> Result<Reader, String> {
    let mut pipes = Vec::new();
    for &cpu in cpus {
        let path = instance.join(format!("per_cpu/cpu{cpu}/trace_pipe_raw"));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(crate::sys::file::O_NONBLOCK)
            .open(&path)
            .map_err(|e| format!("--trace: cannot open {}: {e}", path.display()))?;
        pipes.push(CpuPipe { cpu, file });
    }
    spawn_thread(drain_priority, move |stop| {
        read_loop(pipes, formats, decoder, tx, poll, stop)
    })
}

/// Starts a reader thread running `body` (either back end's loop) at `drain_priority`; `body`
/// reads until the flag it is given is set, then one last round, and returns its figures.
pub(crate) fn spawn_thread(
    drain_priority: Option<i32>,
    body: impl FnOnce(&AtomicBool) -> Result<ReaderStats, String> + Send + 'static,
) -> Result<Reader, String> {
    let stop = Arc::new(AtomicBool::new(false));
    let thread_stop = Arc::clone(&stop);
    let join = std::thread::Builder::new()
        .name("jl-trace-reader".into())
        .spawn(move || {
            // A refusal is the recorder's too, and recorded there (session/start.rs).
            let _priority = DrainPriority::enter(drain_priority);
            body(&thread_stop)
        })
        .map_err(|e| format!("--trace: cannot start the trace reader thread: {e}"))?;
    Ok(Reader {
        stop,
        join: Some(join),
    })
}

impl Reader {
    /// Asks the reader for one last round over every CPU (everything written until now), waits
    /// for it and returns its figures. The trace files are closed when this returns.
    pub fn finish(&mut self) -> Result<ReaderStats, String> {
        self.stop.store(true, Ordering::SeqCst);
        match self.join.take() {
            Some(j) => j
                .join()
                .unwrap_or_else(|_| Err("the trace reader thread panicked".into())),
            None => Ok(ReaderStats::default()),
        }
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

fn read_loop(
    mut pipes: Vec<CpuPipe>,
    formats: Formats,
    mut decoder: Decoder,
    tx: Sender<TraceBatch>,
    poll: Duration,
    stop: &AtomicBool,
) -> Result<ReaderStats, String> {
    let page_size = formats.header_page.page_size();
    let mut page = vec![0u8; page_size];
    let mut stats = ReaderStats::default();
    let mut known: HashMap<i32, i32> = HashMap::new();
    loop {
        // Read after seeing the stop request: this last round covers everything until now.
        let last_round = stop.load(Ordering::SeqCst);
        for pipe in &mut pipes {
            let complete_until_ns = monotonic_ns();
            let mut events = Vec::new();
            let mut policies = Vec::new();
            loop {
                match pipe.file.read(&mut page) {
                    Ok(0) => break,
                    Ok(n) => {
                        stats.pages += 1;
                        stats.bytes += n as u64;
                        let before = events.len();
                        let info = read_page(&formats, &page[..n], |ts, record| {
                            if let Some(e) = decoder.decode(ts, record) {
                                events.push(e);
                            }
                        })
                        .map_err(|e| format!("CPU {}: {e}", pipe.cpu))?;
                        if info.missed != Missed::None {
                            let count = match info.missed {
                                Missed::Count(n) => {
                                    stats.lost_events += n;
                                    Some(n)
                                }
                                _ => {
                                    stats.lost_unknown += 1;
                                    None
                                }
                            };
                            // The loss lies before this page's first event.
                            events.insert(
                                before,
                                TraceEvent {
                                    ts: info.timestamp,
                                    common_pid: -1,
                                    kind: Kind::Lost { count },
                                },
                            );
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        return Err(format!("cannot read the trace of CPU {}: {e}", pipe.cpu));
                    }
                }
            }
            stats.events += events.len() as u64;
            policies.extend(new_policies(&events, &mut known));
            let batch = TraceBatch {
                cpu: pipe.cpu,
                events,
                complete_until_ns,
                policies,
                last: last_round,
            };
            if tx.send(batch).is_err() {
                // The recorder is gone: nothing more to do.
                stats.cpu_time_ns = crate::measure::clock::thread_cpu_time_ns();
                return Ok(stats);
            }
        }
        if last_round {
            stats.cpu_time_ns = crate::measure::clock::thread_cpu_time_ns();
            return Ok(stats);
        }
        std::thread::sleep(poll);
    }
}

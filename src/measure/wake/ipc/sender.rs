//! Starting and ending a receiver's sender: a thread of jitterlab, or a process forked by the
//! receiver's thread (`--ipc-between processes`, as svsematest and sigwaittest `-f`).
//!
//! The process is a fork without exec: it runs [`Pair::sender_loop`] on the objects the pair
//! already shares (a [`SharedCell`](crate::sys::ipc::SharedCell) mapped before the fork, fds and
//! System V ids it inherits), so nothing is passed to it and nothing is parsed. jitterlab has
//! other threads when it forks, so the child makes only async-signal-safe calls (no
//! allocation, no lock another thread could have held) and leaves with `_exit`: its setup and
//! failures are codes in the pair ([`SenderStep`]), turned into messages by the receiver. It
//! dies with jitterlab on every path: PR_SET_PDEATHSIG(SIGKILL) fires when the receiver's
//! thread (which forked it) ends, however it ends, SIGKILL of jitterlab included; a parent that
//! died before the prctl is caught by comparing getppid with the pid the child was forked by.

use super::pair::{Pair, SenderStep};
use super::{Between, Channel, SenderPlan};
use crate::measure::clock::{Clock, thread_cpu_time_ns};
use crate::measure::sched::{lock_all_memory, minimise_timer_slack, pin_current_thread};
use crate::sys::ipc::SharedCell;
use crate::sys::process::{self, Pid};
use crate::sys::signal;
use std::io;
use std::sync::Arc;
use std::thread::JoinHandle;

/// Pins and schedules the calling thread as `plan` says. Async-signal-safe: the CPU is an online
/// one (checked when the plan was made), so the affinity call takes no allocating error path.
fn set_up_sender(plan: &SenderPlan) -> Result<(), (SenderStep, io::Error)> {
    if let Some(cpu) = plan.cpu {
        pin_current_thread(cpu).map_err(|e| (SenderStep::Pin, e))?;
    }
    minimise_timer_slack();
    plan.policy
        .apply_to_current_thread()
        .map_err(|e| (SenderStep::Schedule, e))
}

/// A running sender.
pub(super) enum SenderHandle {
    /// Returns its CPU time when joined.
    Thread(JoinHandle<u64>),
    Process(Pid),
}

impl SenderHandle {
    /// Starts the sender of `pair` per `plan`; it reports its setup in the pair. The handle and
    /// the sender's kernel thread id.
    pub(super) fn start<C: Channel>(
        pair: Arc<SharedCell<Pair<C>>>,
        clock: Clock,
        plan: SenderPlan,
    ) -> Result<(SenderHandle, Pid), String> {
        let name = match plan.cpu {
            Some(cpu) => format!("jl-send-{cpu}"),
            None => "jl-send".into(),
        };
        match plan.between {
            Between::Threads => {
                let (tid_tx, tid_rx) = std::sync::mpsc::channel();
                let join = std::thread::Builder::new()
                    .name(name)
                    .stack_size(256 * 1024)
                    .spawn(move || {
                        let _ = tid_tx.send(signal::thread_id());
                        let setup = set_up_sender(&plan).and_then(|()| pair.attach_sender());
                        let ok = setup.is_ok();
                        pair.report_setup(setup);
                        if ok {
                            pair.sender_loop(clock);
                        }
                        thread_cpu_time_ns()
                    })
                    .map_err(|e| format!("cannot start the sender thread: {e}"))?;
                let tid = tid_rx.recv().unwrap_or(0);
                Ok((SenderHandle::Thread(join), tid))
            }
            Between::Processes => {
                let mut comm = [0u8; 16];
                let n = name.len().min(15);
                comm[..n].copy_from_slice(&name.as_bytes()[..n]);
                let parent = process::id();
                let shared: &Pair<C> = &pair;
                // SAFETY: the child's body is async-signal-safe (this module's header): prctl,
                // getppid, sched_setaffinity, sched_setscheduler, futex, clock_nanosleep,
                // vDSO clock reads and the channel's send, on memory mapped before the fork.
                let pid = unsafe {
                    process::fork_child(|| {
                        process::set_parent_death_signal(signal::SIGKILL);
                        if process::parent_id() != parent {
                            return 1;
                        }
                        process::set_thread_name(&comm);
                        // mlockall is not inherited: without it the child would take a
                        // copy-on-write fault at the first write to each page it shares with
                        // jitterlab, at any time in the run. Locking copies them all now.
                        let setup = match plan.lock_memory {
                            true => lock_all_memory().map_err(|e| (SenderStep::LockMemory, e)),
                            false => Ok(()),
                        }
                        .and_then(|()| set_up_sender(&plan))
                        .and_then(|()| shared.attach_sender());
                        let ok = setup.is_ok();
                        shared.report_setup(setup);
                        if !ok {
                            return 1;
                        }
                        shared.sender_loop(clock);
                        0
                    })
                }
                .map_err(|e| {
                    format!(
                        "cannot fork the sender process: {e}; check the limit on processes (ulimit -u, pids.max of the cgroup), or pass --ipc-between threads"
                    )
                })?;
                Ok((SenderHandle::Process(pid), pid))
            }
        }
    }

    /// How the sender ended, if it has (a sender waited for during its setup); None while it
    /// runs.
    pub(super) fn ended(&mut self) -> Option<String> {
        match self {
            SenderHandle::Thread(join) => join
                .is_finished()
                .then(|| "the thread returned".to_string()),
            SenderHandle::Process(pid) => match process::wait_for(*pid, false) {
                Ok(Some(reaped)) => Some(match process::killed_by(reaped.status) {
                    Some(sig) => format!("killed by signal {sig}"),
                    None => format!("exit status {}", process::exit_code(reaped.status)),
                }),
                Ok(None) => None,
                Err(e) => Some(format!("cannot wait for it: {e}")),
            },
        }
    }

    /// Waits for the sender, which was told to close, to end; its CPU time, ns (a process's
    /// from its rusage: user plus system time, microsecond resolution).
    pub(super) fn end(self) -> u64 {
        match self {
            SenderHandle::Thread(join) => join.join().unwrap_or(0),
            SenderHandle::Process(pid) => match process::wait_for(pid, true) {
                Ok(Some(reaped)) => reaped.cpu_ns,
                _ => 0,
            },
        }
    }
}

//! A run of a [`RunPlan`]: a [`Session`] (session.rs) puts the pieces together and tears them
//! down. Result directory → system checks → memory lock → measuring threads set up and waiting
//! → CPU locks → loads → PM QoS → tracing → result files → start → drain until done → results.
//!
//! Every resource taken is released by the kernel or by a destructor on every exit path, in
//! the order of the session's fields: the trace instance is removed (trace/), the PM QoS
//! request is an open file (pmqos.rs), the spike load is a thread of this process and load
//! generators are child processes stopped and reaped by a drop guard (loads.rs), the CPU locks
//! are flocks (cpulock.rs), the measuring threads are a guard that releases them from the start
//! gate and joins them (threads.rs). The result directory is made first, so that a second run
//! into it is refused before anything starts; until measuring begins a refusal removes it
//! again, and from then on it is written incrementally so that a crash leaves what was
//! measured. The session is the one writer of events.jsonl: the loads and the budget hand
//! their events to it.
//!
//! Here: [`run`] (a session from start to finish); what run.json says about the plan, the
//! system and each thread is built in run_json.rs.

pub mod cpulock;
pub mod loads;
pub mod pmqos;
mod run_json;
pub mod session;
pub mod signals;
mod threads;

pub(crate) use run_json::{
    inversion_record, plan_record, run_warnings, running_thread_summaries, system_snapshot,
    thread_summaries,
};
pub use session::{CpuState, Progress, Session, SessionOptions};

use crate::error::Result;
use crate::format::run_record::RunRecord;
use crate::plan::RunPlan;
use crate::results::ResultDir;
use std::time::Duration;

/// How often the recorder drains the rings. Each drain wakes the recorder on one of the
/// measured CPUs, so it should be rare; the rings hold a second of samples, ten drains' worth.
pub const DRAIN_EVERY: Duration = Duration::from_millis(100);

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
        std::thread::sleep(DRAIN_EVERY);
        if session.poll() == Progress::Ended {
            break;
        }
    }
    Ok(session.finish())
}

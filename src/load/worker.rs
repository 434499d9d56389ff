//! The inside of a load process: `jitterlab __load-worker SPEC --cpus LIST [--once]`, started by
//! the supervisor (`supervisor/spawn.rs`) as a child in its own process group, with a parent-death
//! signal and a pipe on fd 3.
//!
//! It parses the spec, runs the generator on a driver thread that takes `cpus=` and
//! `policy=`/`prio=` (the generator's threads and children inherit both) and, every 100 ms,
//! from its main thread (SCHED_OTHER, on the CPUs not measured when there are any), writes the
//! generator's counters to fd 3 as one JSON line ([`WorkerMessage`]). SIGTERM (the end of the
//! load's phase) makes it write a last line and exit; a SIGKILL after that loses at most the
//! last 100 ms of counts. Counters live in a shared anonymous mapping, so that threads and
//! forked children (hackbench in process mode, the fork load) all add to them.

use super::LoadSpec;
use super::generator::GeneratorSpec;
use super::kit::{Ctx, set_affinity};
use super::protocol::{REPORT_FD, WorkerMessage};
use crate::cpulist::parse_cpu_list;
use crate::measure::clock::monotonic_ns;
use std::fs::File;
use std::io::Write;
use std::os::fd::FromRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How often counters are reported.
const REPORT_EVERY_NS: u64 = 100_000_000;

/// Raises the soft limit of open files to the hard limit (hackbench in thread mode holds two
/// descriptors per receiver).
fn raise_open_file_limit() {
    // Best effort: hackbench reports a descriptor shortage itself.
    let _ = crate::sys::rlimit::raise_soft_to_hard(crate::sys::rlimit::Resource::Nofile);
}

struct Reporter {
    out: File,
}

impl Reporter {
    fn send(&mut self, m: &WorkerMessage) {
        let mut line = serde_json::to_vec(m).expect("messages serialise");
        line.push(b'\n');
        // The supervisor may be gone (then the parent-death signal follows): nothing to do.
        let _ = self.out.write_all(&line);
    }
}

/// The worker's main; returns the process exit code.
pub fn main(spec_text: &str, cpus_text: &str, report_cpus_text: &str, once: bool) -> i32 {
    // SAFETY: the supervisor hands fd 3 over as the report pipe; nothing else owns it.
    let mut reporter = Reporter {
        out: unsafe { File::from_raw_fd(REPORT_FD) },
    };
    let fail = |reporter: &mut Reporter, message: String, code: u8| {
        reporter.send(&WorkerMessage::Failed {
            message: message.clone(),
            code,
        });
        // Also in the load's log; that log may be on a full disk, and the message has gone
        // through the report pipe already: a failed write is no reason to panic.
        let _ = writeln!(std::io::stderr(), "jitterlab load worker: {message}");
        code as i32
    };
    let spec: GeneratorSpec = match LoadSpec::parse(spec_text) {
        Ok(LoadSpec::Generator(g)) => g,
        Ok(_) => {
            return fail(
                &mut reporter,
                format!("'{spec_text}' is not a generator"),
                4,
            );
        }
        Err(e) => return fail(&mut reporter, e, 4),
    };
    let cpus = match parse_cpu_list(cpus_text) {
        Ok(c) => c,
        Err(e) => return fail(&mut reporter, e, 4),
    };
    raise_open_file_limit();
    // This reporting thread stays off the load's CPUs when it can (on the CPUs not measured),
    // so that a real-time hog of the load cannot keep it from reporting and obeying SIGTERM.
    if let Ok(report_cpus) = parse_cpu_list(report_cpus_text) {
        let _ = set_affinity(&report_cpus);
    }
    let workers = spec.workers(&cpus);
    let ctx = match Ctx::map(cpus, workers, once, spec.common.loops) {
        Ok(c) => Arc::new(c),
        Err(e) => return fail(&mut reporter, format!("cannot map the counters: {e}"), 4),
    };
    let stop_flag = ctx.stop_flag();
    // SIGTERM (the end of the load's phase) sets the generator's stop flag in the handler
    // itself, so that the generator stops at its next check, not at the reporter's next poll.
    let term = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&term);
    // SAFETY: the handler only makes atomic stores, which are async-signal-safe.
    let registered = unsafe {
        signal_hook::low_level::register(signal_hook::consts::SIGTERM, move || {
            stop_flag.store(1, Ordering::Relaxed);
            flag.store(true, Ordering::Relaxed);
        })
    };
    if let Err(e) = registered {
        return fail(&mut reporter, format!("cannot handle SIGTERM: {e}"), 4);
    }
    if let Err(message) = spec.generator.prepare_worker() {
        return fail(&mut reporter, message, 4);
    }
    let n = spec.counters().len();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let (setup_tx, setup_rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let driver_ctx = Arc::clone(&ctx);
    let driver_spec = spec.clone();
    // The driver takes the load's CPUs and policy (this reporting thread stays SCHED_OTHER, so
    // that it can report and obey SIGTERM even beside a real-time hog); it forks the
    // generator's children, and lives until the process ends, so their parent-death signal
    // fires only when this worker dies.
    let spawned = std::thread::Builder::new()
        .name("jl-load-driver".into())
        .spawn(move || {
            if let Err(e) = set_affinity(&driver_ctx.cpus) {
                let _ = setup_tx.send(Err(format!(
                    "load '{}': cannot restrict it to CPUs {}: {e}",
                    driver_spec.text,
                    crate::cpulist::format_cpu_list(&driver_ctx.cpus)
                )));
                return;
            }
            let policy = driver_spec.common.policy.to_policy();
            if let Err(e) = policy.apply_to_current_thread() {
                let _ = setup_tx.send(Err(format!(
                    "load '{}': cannot set {} {}: {e}; real-time policies need root or CAP_SYS_NICE (or RLIMIT_RTPRIO); drop policy=/prio= to run the load as SCHED_OTHER",
                    driver_spec.text,
                    policy.name(),
                    policy.priority()
                )));
                return;
            }
            let _ = setup_tx.send(Ok(()));
            // Only once Ready is out: a real-time load may keep this process's other thread
            // from running for a while.
            if go_rx.recv().is_ok() {
                let _ = done_tx.send(driver_spec.run(&driver_ctx));
            }
        });
    if let Err(e) = spawned {
        return fail(&mut reporter, format!("cannot start a thread: {e}"), 4);
    }
    match setup_rx.recv() {
        Ok(Ok(())) => {
            reporter.send(&WorkerMessage::Ready);
            let _ = go_tx.send(());
        }
        Ok(Err(message)) => return fail(&mut reporter, message, 3),
        Err(_) => {
            return fail(
                &mut reporter,
                "the load's thread ended during setup".into(),
                4,
            );
        }
    }
    let start = monotonic_ns();
    let mut next_report = start + REPORT_EVERY_NS;
    let outcome = loop {
        match done_rx.recv_timeout(Duration::from_millis(10)) {
            Ok(result) => break Some(result),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                break Some(Err("the generator's thread panicked".into()));
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
        if term.load(Ordering::Relaxed) {
            break None;
        }
        let now = monotonic_ns();
        if now >= next_report {
            next_report = now + REPORT_EVERY_NS;
            reporter.send(&WorkerMessage::Counters {
                elapsed_ns: now - start,
                values: ctx.values(n),
            });
        }
    };
    ctx.stop();
    let elapsed_ns = monotonic_ns() - start;
    match outcome {
        Some(Err(message)) => fail(&mut reporter, message, 4),
        _ => {
            reporter.send(&WorkerMessage::Done {
                elapsed_ns,
                values: ctx.values(n),
            });
            if term.load(Ordering::Relaxed) {
                // Ends by the signal it caught, as a process that handles SIGTERM should: the
                // supervisor tells its own SIGTERM from someone else's, which kills the load.
                let _ =
                    signal_hook::low_level::emulate_default_handler(signal_hook::consts::SIGTERM);
            }
            // Threads still blocked in the generator end with the process.
            0
        }
    }
}

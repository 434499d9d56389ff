//! The inside of a load process: `jitterlab __load-worker SPEC --cpus LIST [--once]`, started by
//! the supervisor (`supervisor/spawn.rs`) as a child in its own process group, with a parent-death
//! signal and a pipe on fd 3.
//!
//! It parses the spec, runs the generator on a driver thread that takes `cpus=` and
//! `policy=`/`prio=` (the generator's threads and children inherit both; without a real-time
//! policy, the driver gives up every way to one, `sys::caps`) and, every 100 ms,
//! from its main thread (SCHED_OTHER, on the CPUs not measured when there are any), writes the
//! generator's counters to fd 3 as one JSON line ([`WorkerMessage`]). SIGTERM (the end of the
//! load's phase) makes it write a last line and exit; a SIGKILL after that loses at most the
//! last 100 ms of counts. Counters live in a shared anonymous mapping, so that threads and
//! forked children (hackbench in process mode, the fork load) all add to them.

use super::LoadSpec;
use super::generator::GeneratorSpec;
use super::protocol::{REPORT_FD, WorkerMessage};
use super::worker_kit::{Ctx, set_affinity};
use crate::cpulist::parse_cpu_list;
use crate::error::ExitCode;
use crate::measure::clock::monotonic_ns;
use crate::measure::sched::Policy;
use std::fs::File;
use std::io::Write;
use std::os::fd::FromRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
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

    /// Reports the failure and returns the exit code that goes with it.
    fn fail(&mut self, failure: Failure) -> i32 {
        let Failure { message, code } = failure;
        self.send(&WorkerMessage::Failed {
            message: message.clone(),
            code: code as u8,
        });
        // Also in the load's log; that log may be on a full disk, and the message has gone
        // through the report pipe already: a failed write is no reason to panic.
        let _ = writeln!(std::io::stderr(), "jitterlab load worker: {message}");
        code.status()
    }
}

/// Why the worker ends early, with the exit code that says so (`src/error.rs`).
struct Failure {
    message: String,
    code: ExitCode,
}

impl Failure {
    /// A failure during the run.
    fn during_run(message: String) -> Self {
        Failure {
            message,
            code: ExitCode::Run,
        }
    }

    /// The system refused what the load asks for (its CPUs, its policy).
    fn refused_by_system(message: String) -> Self {
        Failure {
            message,
            code: ExitCode::System,
        }
    }
}

/// The worker's main; returns the process exit code.
pub fn main(spec_text: &str, cpus_text: &str, report_cpus_text: &str, once: bool) -> i32 {
    // SAFETY: the supervisor hands fd 3 over as the report pipe; nothing else owns it.
    let mut reporter = Reporter {
        out: unsafe { File::from_raw_fd(REPORT_FD) },
    };
    match run(&mut reporter, spec_text, cpus_text, report_cpus_text, once) {
        Ok(()) => 0,
        Err(failure) => reporter.fail(failure),
    }
}

/// Sets the load up, runs it while reporting its counters, and reports the last counts.
fn run(
    reporter: &mut Reporter,
    spec_text: &str,
    cpus_text: &str,
    report_cpus_text: &str,
    once: bool,
) -> Result<(), Failure> {
    let spec: GeneratorSpec = match LoadSpec::parse(spec_text).map_err(Failure::during_run)? {
        LoadSpec::Generator(g) => g,
        _ => {
            return Err(Failure::during_run(format!(
                "'{spec_text}' is not a generator"
            )));
        }
    };
    let cpus = parse_cpu_list(cpus_text).map_err(Failure::during_run)?;
    raise_open_file_limit();
    // This reporting thread stays off the load's CPUs when it can (on the CPUs not measured),
    // so that a real-time hog of the load cannot keep it from reporting and obeying SIGTERM.
    if let Ok(report_cpus) = parse_cpu_list(report_cpus_text) {
        let _ = set_affinity(&report_cpus);
    }
    let workers = spec.workers(&cpus);
    let ctx = Ctx::map(cpus, workers, once, spec.common.loops)
        .map(Arc::new)
        .map_err(|e| Failure::during_run(format!("cannot map the counters: {e}")))?;
    let term = stop_on_sigterm(&ctx)?;
    spec.generator
        .prepare_worker()
        .map_err(Failure::during_run)?;
    let driver = Driver::start(&spec, &ctx)?;
    driver.release_when_set_up(reporter)?;
    let n = spec.counters().len();
    let start = monotonic_ns();
    let outcome = report_until_done(reporter, &driver, &ctx, &term, start, n);
    ctx.stop();
    let elapsed_ns = monotonic_ns() - start;
    if let Some(Err(message)) = outcome {
        return Err(Failure::during_run(message));
    }
    reporter.send(&WorkerMessage::Done {
        elapsed_ns,
        values: ctx.values(n),
    });
    if term.load(Ordering::Relaxed) {
        // Ends by the signal it caught, as a process that handles SIGTERM should: the
        // supervisor tells its own SIGTERM from someone else's, which kills the load.
        let _ = signal_hook::low_level::emulate_default_handler(signal_hook::consts::SIGTERM);
    }
    // Threads still blocked in the generator end with the process.
    Ok(())
}

/// Installs the SIGTERM handler; the flag returned says a SIGTERM came.
fn stop_on_sigterm(ctx: &Ctx) -> Result<Arc<AtomicBool>, Failure> {
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
    registered.map_err(|e| Failure::during_run(format!("cannot handle SIGTERM: {e}")))?;
    Ok(term)
}

/// The thread that runs the generator, and the channels to it: its setup's outcome, the go
/// signal, and the generator's result.
struct Driver {
    setup: Receiver<Result<(), String>>,
    go: Sender<()>,
    done: Receiver<Result<(), String>>,
}

impl Driver {
    /// Starts the driver thread. It takes the load's CPUs and policy (the reporting thread
    /// stays SCHED_OTHER, so that it can report and obey SIGTERM even beside a real-time hog),
    /// reports its setup, and waits for the go before running the generator.
    fn start(spec: &GeneratorSpec, ctx: &Arc<Ctx>) -> Result<Driver, Failure> {
        let (done_tx, done) = std::sync::mpsc::channel();
        let (setup_tx, setup) = std::sync::mpsc::channel();
        let (go, go_rx) = std::sync::mpsc::channel::<()>();
        let driver_ctx = Arc::clone(ctx);
        let driver_spec = spec.clone();
        // The driver forks the generator's children, and lives until the process ends, so
        // their parent-death signal fires only when this worker dies.
        let spawned = std::thread::Builder::new()
            .name("jl-load-driver".into())
            .spawn(move || {
                let set_up = take_cpus_and_policy(&driver_spec, &driver_ctx);
                let ready = set_up.is_ok();
                let _ = setup_tx.send(set_up);
                // Only once Ready is out: a real-time load may keep this process's other
                // thread from running for a while.
                if ready && go_rx.recv().is_ok() {
                    let _ = done_tx.send(driver_spec.run(&driver_ctx));
                }
            });
        spawned.map_err(|e| Failure::during_run(format!("cannot start a thread: {e}")))?;
        Ok(Driver { setup, go, done })
    }

    /// Waits for the driver's setup; once it succeeded, reports Ready and lets the generator
    /// run.
    fn release_when_set_up(&self, reporter: &mut Reporter) -> Result<(), Failure> {
        match self.setup.recv() {
            Ok(Ok(())) => {
                reporter.send(&WorkerMessage::Ready);
                let _ = self.go.send(());
                Ok(())
            }
            Ok(Err(message)) => Err(Failure::refused_by_system(message)),
            Err(_) => Err(Failure::during_run(
                "the load's thread ended during setup".into(),
            )),
        }
    }
}

/// Puts the calling (driver) thread on the load's CPUs and under its policy; the generator's
/// threads and children inherit both.
fn take_cpus_and_policy(spec: &GeneratorSpec, ctx: &Ctx) -> Result<(), String> {
    if let Err(e) = set_affinity(&ctx.cpus) {
        return Err(format!(
            "load '{}': cannot restrict it to CPUs {}: {e}",
            spec.text,
            crate::cpulist::format_cpu_list(&ctx.cpus)
        ));
    }
    let policy = spec.common.policy.to_policy();
    if let Err(e) = policy.apply_to_current_thread() {
        return Err(format!(
            "load '{}': cannot set {} {}: {e}; real-time policies need root or CAP_SYS_NICE (or RLIMIT_RTPRIO); drop policy=/prio= to run the load as SCHED_OTHER",
            spec.text,
            policy.name(),
            policy.priority()
        ));
    }
    // A load cannot take a real-time priority above the one it was given, nor one at all
    // when it asked for none: the starvation check counted what the plan says, so a program
    // that raised itself past it would run above jitterlab's own threads (issue 39: F4, an
    // `exec` program that made itself SCHED_FIFO 60 on every CPU; N2, the same from a load
    // given `policy=fifo,prio=1`). Its threads, children and programs inherit this thread's
    // capabilities and the process's limit. SCHED_DEADLINE has no priority: 0.
    let ceiling = match policy {
        Policy::Fifo(p) | Policy::RoundRobin(p) => u32::try_from(p).unwrap_or(0),
        _ => 0,
    };
    if let Err(e) = crate::sys::caps::renounce_realtime_above(ceiling) {
        return Err(format!(
            "load '{}': cannot give up the real-time priorities above {ceiling} it did not ask for (RLIMIT_RTPRIO {ceiling}, CAP_SYS_NICE and CAP_SYS_RESOURCE dropped): {e}",
            spec.text
        ));
    }
    Ok(())
}

/// Reports the counters every [`REPORT_EVERY_NS`] until the generator ends (its result) or a
/// SIGTERM comes (None).
fn report_until_done(
    reporter: &mut Reporter,
    driver: &Driver,
    ctx: &Ctx,
    term: &AtomicBool,
    start: u64,
    n: usize,
) -> Option<Result<(), String>> {
    let mut next_report = start + REPORT_EVERY_NS;
    loop {
        match driver.done.recv_timeout(Duration::from_millis(10)) {
            Ok(result) => return Some(result),
            Err(RecvTimeoutError::Disconnected) => {
                return Some(Err("the generator's thread panicked".into()));
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
        if term.load(Ordering::Relaxed) {
            return None;
        }
        let now = monotonic_ns();
        if now >= next_report {
            next_report = now + REPORT_EVERY_NS;
            reporter.send(&WorkerMessage::Counters {
                elapsed_ns: now - start,
                values: ctx.values(n),
            });
        }
    }
}

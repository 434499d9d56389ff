//! The inside of a load process: `jitterlab __load-worker SPEC --cpus LIST [--once]`, started by
//! the supervisor (`supervisor.rs`) as a child in its own process group, with a parent-death
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
use crate::cpulist::parse_cpu_list;
use crate::measure::clock::monotonic_ns;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::FromRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// The descriptor the worker reports on.
pub const REPORT_FD: i32 = 3;
/// How often counters are reported.
const REPORT_EVERY_NS: u64 = 100_000_000;
/// Set in every load process's environment (value: jitterlab's pid and the load's index), so
/// that they can be recognised in /proc; inherited by everything a load starts.
pub const MARKER_ENV: &str = "JITTERLAB_LOAD";
/// Counter slots in the shared mapping (slot 0 is the stop flag).
const SLOTS: usize = 64;

/// One line on the report pipe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum WorkerMessage {
    /// Set up (affinity, policy) and about to start working.
    Ready,
    /// The counters so far, after `elapsed_ns` of work.
    Counters { elapsed_ns: u64, values: Vec<u64> },
    /// The last counters: the generator finished (hackbench once) or was told to stop.
    Done { elapsed_ns: u64, values: Vec<u64> },
    /// The generator could not start or failed; `code` is the exit code it means (3: the
    /// system refused, 4: failure while running).
    Failed { message: String, code: u8 },
}

/// What a generator sees of its worker process.
pub struct Ctx {
    slots: &'static [AtomicU64],
    /// The CPUs the load may use (already applied as the process's affinity).
    pub cpus: Vec<usize>,
    pub workers: usize,
    /// Do the work once and return (hackbench alone, without --duration).
    pub once: bool,
}

impl Ctx {
    /// Whether the load has been told to stop.
    pub fn stopped(&self) -> bool {
        self.slots[0].load(Ordering::Relaxed) != 0
    }

    fn stop(&self) {
        self.slots[0].store(1, Ordering::Relaxed);
    }

    /// Adds to counter `index` (the generator's COUNTERS order).
    pub fn add(&self, index: usize, n: u64) {
        self.slots[1 + index].fetch_add(n, Ordering::Relaxed);
    }

    /// Sets counter `index`.
    pub fn set(&self, index: usize, n: u64) {
        self.slots[1 + index].store(n, Ordering::Relaxed);
    }

    pub fn get(&self, index: usize) -> u64 {
        self.slots[1 + index].load(Ordering::Relaxed)
    }

    fn values(&self, n: usize) -> Vec<u64> {
        (0..n).map(|i| self.get(i)).collect()
    }
}

fn shared_slots() -> io::Result<&'static [AtomicU64]> {
    shared_counters(SLOTS)
}

/// `n` counters in memory shared with every child forked later (MAP_SHARED survives fork).
/// The mapping lives as long as the process.
pub fn shared_counters(n: usize) -> io::Result<&'static [AtomicU64]> {
    let bytes = n * std::mem::size_of::<AtomicU64>();
    // SAFETY: an anonymous shared mapping, zero-filled by the kernel; it is never unmapped, so
    // the 'static slice stays valid for the life of the process and its children.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(std::slice::from_raw_parts(p as *const AtomicU64, n))
    }
}

/// Ties a freshly forked child to its parent: it gets SIGKILL when the parent (the thread that
/// forked it) dies, and exits at once if the parent died before the request took effect.
/// Async-signal-safe: fit to call between fork and exec or _exit.
pub fn die_with_parent(parent: libc::pid_t) {
    // SAFETY: plain syscalls.
    unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        if libc::getppid() != parent {
            libc::_exit(0);
        }
    }
}

/// Forks a child that runs `body` and exits with its result. The child must only make
/// async-signal-safe calls (no allocation, no locks): the worker has other threads.
pub fn fork_child(body: impl FnOnce() -> i32) -> io::Result<libc::pid_t> {
    // SAFETY: getpid/fork are plain syscalls; the child only runs `body`, which the caller
    // keeps async-signal-safe, and leaves with _exit (no destructors, no atexit handlers).
    unsafe {
        let parent = libc::getpid();
        match libc::fork() {
            -1 => Err(io::Error::last_os_error()),
            0 => {
                die_with_parent(parent);
                // The worker's SIGTERM handler is inherited; the child must die of SIGTERM.
                libc::signal(libc::SIGTERM, libc::SIG_DFL);
                let code = body();
                libc::_exit(code)
            }
            pid => Ok(pid),
        }
    }
}

/// Waits for a child; its exit status.
pub fn reap(pid: libc::pid_t) -> io::Result<i32> {
    let mut status = 0;
    loop {
        // SAFETY: plain syscall with a valid status pointer.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            return Ok(status);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Raises the soft limit of open files to the hard limit (hackbench in thread mode holds two
/// descriptors per receiver).
fn raise_open_file_limit() {
    // SAFETY: plain syscalls with a valid struct.
    unsafe {
        let mut lim: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

/// Restricts the calling thread (and so every thread and child made later) to `cpus`.
pub fn set_affinity(cpus: &[usize]) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; the CPUs were checked against the online ones.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
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
        eprintln!("jitterlab load worker: {message}");
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
    let slots = match shared_slots() {
        Ok(s) => s,
        Err(e) => return fail(&mut reporter, format!("cannot map the counters: {e}"), 4),
    };
    // SIGTERM (the end of the load's phase) sets the generator's stop flag in the handler
    // itself, so that the generator stops at its next check, not at the reporter's next poll.
    let term = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&term);
    // SAFETY: the handler only makes atomic stores, which are async-signal-safe.
    let registered = unsafe {
        signal_hook::low_level::register(signal_hook::consts::SIGTERM, move || {
            slots[0].store(1, Ordering::Relaxed);
            flag.store(true, Ordering::Relaxed);
        })
    };
    if let Err(e) = registered {
        return fail(&mut reporter, format!("cannot handle SIGTERM: {e}"), 4);
    }
    let ctx = Arc::new(Ctx {
        slots,
        workers: spec.workers(&cpus),
        cpus,
        once,
    });
    if let super::generator::Kind::Exec(_) = spec.kind
        && let Err(e) = super::exec::start_guardian()
    {
        return fail(
            &mut reporter,
            format!("cannot start the exec guardian: {e}"),
            4,
        );
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

/// Runs `body(i)` on `n` threads named `jl-<name>-<i>` and waits for them; the first error
/// wins. Used by generators whose workers are threads.
pub fn run_threads<F>(n: usize, name: &str, body: F) -> Result<(), String>
where
    F: Fn(usize) -> Result<(), String> + Sync,
{
    std::thread::scope(|s| {
        let mut handles = Vec::new();
        for i in 0..n {
            let body = &body;
            let h = std::thread::Builder::new()
                .name(format!("jl-{name}-{i}"))
                .spawn_scoped(s, move || body(i))
                .map_err(|e| format!("cannot start {name} worker {i}: {e}"))?;
            handles.push(h);
        }
        let mut first = Ok(());
        for h in handles {
            let r = h
                .join()
                .unwrap_or_else(|_| Err(format!("a {name} worker panicked")));
            if first.is_ok() {
                first = r;
            }
        }
        first
    })
}

//! The worker kit: what a generator's body (`Generator::run`) sees of its worker process and
//! the helpers generators share (threads, forked children, counters, throughput rows).
//!
//! A leaf module: generators use it, and it uses none of them.

use crate::format::run_record::Throughput;
use crate::sys::mem;
use crate::sys::process::{self, Pid};
use crate::sys::signal;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

/// Counter slots in the shared mapping (slot 0 is the stop flag).
const SLOTS: usize = 64;

/// What a generator sees of its worker process.
pub struct Ctx {
    slots: &'static [AtomicU64],
    /// The CPUs the load may use (already applied as the process's affinity).
    pub cpus: Vec<usize>,
    pub(crate) workers: usize,
    /// Do the work once and return (hackbench alone, without --duration).
    pub once: bool,
    /// `loops=N`: each worker returns after N loops of its work (the generator's `LoopUnit`).
    pub loops: Option<u64>,
}

impl Ctx {
    /// Maps the counters (shared with every child forked later) for a worker process.
    pub fn map(
        cpus: Vec<usize>,
        workers: usize,
        once: bool,
        loops: Option<u64>,
    ) -> io::Result<Self> {
        Ok(Ctx {
            slots: shared_counters(SLOTS)?,
            cpus,
            workers,
            once,
            loops,
        })
    }

    /// Whether a worker that has done `done` loops goes on: not told to stop, and short of
    /// `loops=` if given.
    pub(crate) fn keep_looping(&self, done: u64) -> bool {
        !self.stopped() && self.loops.is_none_or(|n| done < n)
    }

    /// Whether the load has been told to stop.
    pub fn stopped(&self) -> bool {
        self.slots[0].load(Ordering::Relaxed) != 0
    }

    /// The stop flag itself, for a signal handler (an atomic store is async-signal-safe).
    pub(crate) fn stop_flag(&self) -> &'static AtomicU64 {
        &self.slots[0]
    }

    /// Tells the generator to stop.
    pub fn stop(&self) {
        self.slots[0].store(1, Ordering::Relaxed);
    }

    /// Adds to counter `index` (the generator's `counters` order).
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

    /// The first `n` counters.
    pub fn values(&self, n: usize) -> Vec<u64> {
        (0..n).map(|i| self.get(i)).collect()
    }
}

/// `n` counters in memory shared with every child forked later (MAP_SHARED survives fork).
/// The mapping lives as long as the process.
pub(crate) fn shared_counters(n: usize) -> io::Result<&'static [AtomicU64]> {
    let bytes = n * std::mem::size_of::<AtomicU64>();
    let p = mem::map_anonymous(bytes, mem::Sharing::Shared)?;
    // SAFETY: an anonymous shared mapping, zero-filled by the kernel (a valid AtomicU64 is all
    // zero); it is never unmapped, so the 'static slice stays valid for the life of the
    // process and its children.
    Ok(unsafe { std::slice::from_raw_parts(p as *const AtomicU64, n) })
}

/// Ties a freshly forked child to its parent: it gets SIGKILL when the parent (the thread that
/// forked it) dies, and exits at once if the parent died before the request took effect.
/// Async-signal-safe: fit to call between fork and exec or _exit.
pub(crate) fn die_with_parent(parent: Pid) {
    process::set_parent_death_signal(signal::SIGKILL);
    if process::parent_id() != parent {
        process::exit_now(0);
    }
}

/// Forks a child that runs `body` and exits with its result. The child must only make
/// async-signal-safe calls (no allocation, no locks): the worker has other threads.
pub(crate) fn fork_child(body: impl FnOnce() -> i32) -> io::Result<Pid> {
    let parent = process::id();
    // SAFETY: the child only runs `body`, which the caller keeps async-signal-safe, and
    // leaves with _exit (no destructors, no atexit handlers).
    unsafe {
        process::fork_child(|| {
            die_with_parent(parent);
            // The worker's SIGTERM handler is inherited; the child must die of SIGTERM.
            signal::set_default_action(signal::SIGTERM);
            body()
        })
    }
}

/// Waits for a child; its exit status.
pub(crate) fn reap(pid: Pid) -> io::Result<i32> {
    let mut status = 0;
    loop {
        let r = process::wait_raw(pid, &mut status);
        if r == pid {
            return Ok(status);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Restricts the calling thread (and so every thread and child made later) to `cpus`.
pub(crate) fn set_affinity(cpus: &[usize]) -> io::Result<()> {
    crate::sys::sched::set_affinity(cpus)
}

/// Runs `body(i)` on `n` threads named `jl-<name>-<i>` and waits for them; the first error
/// wins. Used by generators whose workers are threads.
pub(crate) fn run_threads<F>(n: usize, name: &str, body: F) -> Result<(), String>
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
            let r = h.join().unwrap_or_else(|panic| {
                // The panic's message says what went wrong (e.g. a failed print).
                let why = panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| panic.downcast_ref::<&str>().copied())
                    .unwrap_or("no message");
                Err(format!("a {name} worker panicked: {why}"))
            });
            if first.is_ok() {
                first = r;
            }
        }
        first
    })
}

/// A generator's counters over its work time, to be turned into [`Throughput`] rows.
pub struct Counts<'a> {
    values: &'a [u64],
    pub seconds: f64,
}

impl<'a> Counts<'a> {
    pub fn new(values: &'a [u64], elapsed_ns: u64) -> Self {
        Counts {
            values,
            seconds: elapsed_ns as f64 / 1e9,
        }
    }

    /// Counter `index` (0 when the worker never reported it).
    pub fn get(&self, index: usize) -> u64 {
        self.values.get(index).copied().unwrap_or(0)
    }

    /// `count / seconds`, scaled by `scale` (e.g. 1/2^20 for MiB/s).
    pub fn rate(&self, name: &str, count: u64, scale: f64, unit: &str) -> Throughput {
        Throughput::new(
            name,
            if self.seconds > 0.0 {
                count as f64 * scale / self.seconds
            } else {
                0.0
            },
            unit,
        )
    }

    /// A plain count.
    pub fn total(&self, name: &str, count: u64, unit: &str) -> Throughput {
        Throughput::new(name, count as f64, unit)
    }
}

/// Bytes per MiB, for MiB/s.
pub(crate) const PER_MIB: f64 = 1.0 / (1u64 << 20) as f64;

/// `12.5 MiB`: bytes for messages.
pub(crate) fn mib(bytes: u128) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

/// `signal 9 (SIGKILL)`.
pub(crate) fn signal_text(signal: i32) -> String {
    let Some(name) = signal::name(signal) else {
        return format!("signal {signal}");
    };
    format!("signal {signal} ({name})")
}

/// What to add to the message of a load killed by `signal`.
pub(crate) fn kill_hint(signal: i32) -> &'static str {
    if signal == signal::SIGKILL {
        "; SIGKILL is what the kernel's OOM killer sends when memory runs out (see dmesg), or a user's kill -9"
    } else {
        ""
    }
}

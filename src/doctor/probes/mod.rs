//! Live probes of the POSIX real-time features and eBPF: each feature is tried, not assumed.
//!
//! All probes run on one short-lived thread, so that what is per-thread (scheduling policy,
//! signal mask) dies with it even if a restore step were missed; what is per-process (locked
//! memory, named queues and shared memory) is undone by the probe itself, and named objects
//! are unlinked right after creation so that nothing can be left behind.

//!
//! One file per area: `sched` (policies and memory locking), `signals` (timers and
//! real-time signals), `ipc` (message queues, PI futexes, shared memory), `bpf`.

mod bpf;
mod ipc;
mod sched;
mod signals;

use std::ffi::CString;
use std::sync::atomic::{AtomicU32, Ordering};

use super::verdict::{Check, Spec};

/// What the probes say of `--trace`'s back end (the `tracing.backend` check).
#[derive(Clone, Copy)]
pub(crate) enum TraceBackendCheck<'a> {
    /// `doctor`: the BPF object loaded and verified, then released, to say what `--trace
    /// --trace-backend auto` would use.
    Probe,
    /// A traced run: the back end its trace set up, from the object the trace itself loaded
    /// (loading it a second time cost a run about a quarter of a second of start-up).
    Used(&'a crate::trace::BackendChoice),
    /// A run without `--trace`: no check (it would load the whole object for nothing).
    NotTraced,
}

/// What the probes say of memory locking (the `posix.mlockall` check).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum MemoryLockCheck {
    /// `doctor`, or a run with `--no-mlock`: mlockall tried and undone.
    Probe,
    /// A run that locks its memory itself before it measures (session/permissions.rs) and is
    /// refused if it cannot, so that a run.json exists only where the lock held: trying and
    /// undoing it on the probe thread first cost the start 0.8 ms of CPU (issue 44).
    LockedByRun,
}

/// When each probe ended, on CLOCK_MONOTONIC, by the probe's check id, in order: a run's
/// start-up timeline (run.json `startup`, session/startup.rs) shows each probe's time.
pub(crate) type ProbeEnds = Vec<(&'static str, u64)>;

/// One live probe: tries a feature and says what it found.
type Probe = fn() -> Check;

/// The probes running on their own thread ([`start_all`]); [`Running::join`] waits for them.
pub(crate) struct Running(std::io::Result<std::thread::JoinHandle<(Vec<Check>, ProbeEnds)>>);

/// Starts every probe on a fresh thread and returns at once, so that the caller's own work
/// (the snapshot's file checks) runs while the probes wait on their timers and system calls
/// (issue 44: the two took 13 and 10 ms of a run's start, one after the other).
pub(crate) fn start_all(backend: TraceBackendCheck, memory: MemoryLockCheck) -> Running {
    let known_backend = match backend {
        TraceBackendCheck::Probe => None,
        TraceBackendCheck::Used(chosen) => Some(Some(bpf::backend_used(chosen))),
        TraceBackendCheck::NotTraced => Some(None),
    };
    Running(
        std::thread::Builder::new()
            .name("jitterlab-probe".into())
            .spawn(move || {
                let probes: [(&'static str, Probe); 10] = [
                    ("probe sched_fifo", sched::sched_fifo),
                    ("probe sched_rr", sched::sched_rr),
                    ("probe sched_deadline", sched::sched_deadline),
                    (
                        "probe mlockall",
                        match memory {
                            MemoryLockCheck::Probe => sched::mlockall,
                            MemoryLockCheck::LockedByRun => sched::mlockall_by_the_run,
                        },
                    ),
                    ("probe posix_timers", signals::posix_timers),
                    ("probe rt_signals", signals::rt_signals),
                    ("probe message_queues", ipc::message_queues),
                    ("probe pi_futex", ipc::pi_futex),
                    ("probe shared_memory", ipc::shared_memory),
                    ("probe bpf", bpf::bpf),
                ];
                let now = crate::measure::clock::monotonic_ns;
                let mut ends = ProbeEnds::with_capacity(probes.len() + 1);
                let mut checks: Vec<Check> = probes
                    .iter()
                    .map(|(name, probe)| {
                        let check = probe();
                        ends.push((name, now()));
                        check
                    })
                    .collect();
                if let Some(check) = known_backend.unwrap_or_else(|| Some(bpf::trace_backend())) {
                    checks.push(check);
                    ends.push(("probe trace_backend", now()));
                }
                (checks, ends)
            }),
    )
}

impl Running {
    /// The probes' checks, in display order, and when each ended.
    pub(crate) fn join(self) -> (Vec<Check>, ProbeEnds) {
        match self.0.map(|handle| handle.join()) {
            Ok(Ok(done)) => done,
            _ => (
                vec![PROBE_THREAD.unknown(
                    "the probe thread could not be started or stopped unexpectedly",
                    "report this as a jitterlab bug, with `jitterlab doctor` output",
                )],
                ProbeEnds::new(),
            ),
        }
    }
}

const PROBE_THREAD: Spec = Spec {
    id: "posix.probes",
    area: "posix",
    why: "The POSIX real-time features are checked by trying them on a probe thread.",
};

/// `EPERM (Operation not permitted)` for an errno value.
fn describe(err: i32) -> String {
    let name = crate::sys::errno::name(err).unwrap_or("");
    let text = std::io::Error::from_raw_os_error(err).to_string();
    let text = text.split(" (os error").next().unwrap_or(&text).to_string();
    if name.is_empty() {
        format!("errno {err} ({text})")
    } else {
        format!("{name} ({text})")
    }
}

/// A name for a named POSIX object that no other process or probe uses.
fn unique_name(kind: &str) -> CString {
    static SEQ: AtomicU32 = AtomicU32::new(0);
    let n = SEQ.fetch_add(1, Ordering::Relaxed);
    CString::new(format!(
        "/jitterlab-doctor-{kind}-{}-{n}",
        std::process::id()
    ))
    .expect("no NUL in name")
}

//! The time bound on loading the BPF programs. The kernel's verifier runs inside bpf(2), in
//! the loading thread: on some kernels it takes minutes for an object another kernel accepts
//! in a fraction of a second (6.1 verified an open-coded loop of the old object turn by turn
//! for 240 s and more, docs/lab.md), and `doctor`, `run --dry-run` and `--trace-backend auto`
//! would wait that long for a probe.
//!
//! The load runs on a thread of its own (`jl-bpf-load`) while the calling thread watches it.
//! Once the load has taken [`LOAD_LIMIT`] (its thread's CPU time: the verifier's work, not the
//! machine's load; or, as a last bound, the wall time), the watcher sends that thread
//! [`load_interrupt_signal`] every [`RESEND`] until the load returns. The verifier checks for
//! a pending signal at every instruction it walks (`do_check` in kernel/bpf/verifier.c:
//! `if (signal_pending(current)) return -EAGAIN;`) and the signal's handler does nothing and
//! is installed without SA_RESTART, so each bpf() call under way returns; the signal is sent
//! again because aya retries a failed load once with a verifier log (and again while the log
//! is too small), and a signal that lands between two calls interrupts neither. The load then
//! fails, and everything it had loaded (its programs, maps, BTF: file descriptors of this
//! process) is closed as it returns: nothing stays loaded.

use crate::sys::signal;
use crate::sys::time::thread_cpu_time_ns;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How long a load may take before it is given up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limit {
    /// CPU time of the loading thread (the verifier's time is spent there, in the kernel).
    pub cpu: Duration,
    /// Wall time: the bound when the loading thread gets no CPU (a machine so loaded that the
    /// probe would not end in any useful time).
    pub(crate) wall: Duration,
}

/// The bound of every load of the BPF programs (docs/tracing.md, "The BPF back end"). The
/// normal load takes 0.1-0.2 s of CPU time on this project's machines (6-13 s of wall time
/// on a 2-core VM at a load average of 10-26: waiting for a CPU).
pub(crate) const LOAD_LIMIT: Limit = Limit {
    cpu: Duration::from_secs(20),
    wall: Duration::from_secs(60),
};

/// How often the watcher looks at the load, and resends the signal once it is over its bound.
pub(crate) const RESEND: Duration = Duration::from_millis(50);

/// Which bound a load went over, and when the watcher saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exceeded {
    /// The loading thread's CPU time, at the wall time given.
    Cpu { cpu: Duration, wall: Duration },
    /// The wall time, with the CPU time used by then.
    Wall { cpu: Duration, wall: Duration },
}

impl Exceeded {
    /// The bound in words, for the refusal: `20.0 s of CPU time (23.4 s in all)`.
    pub(crate) fn describe(&self, limit: Limit) -> String {
        match *self {
            Exceeded::Cpu { wall, .. } => format!(
                "{:.1} s of CPU time ({:.1} s in all)",
                limit.cpu.as_secs_f64(),
                wall.as_secs_f64()
            ),
            Exceeded::Wall { cpu, .. } => format!(
                "{:.0} s ({:.1} s of it on a CPU)",
                limit.wall.as_secs_f64(),
                cpu.as_secs_f64()
            ),
        }
    }
}

/// Whether a load that has run `wall` and used `cpu` is over `limit`.
pub(crate) fn over(limit: Limit, wall: Duration, cpu: Duration) -> Option<Exceeded> {
    if cpu >= limit.cpu {
        Some(Exceeded::Cpu { cpu, wall })
    } else if wall >= limit.wall {
        Some(Exceeded::Wall { cpu, wall })
    } else {
        None
    }
}

/// The signal that interrupts a load over its bound: the fifth real-time signal (jitterlab's
/// others: the POSIX timer's, the measuring threads' stop, the IPC wake method's).
pub(crate) fn load_interrupt_signal() -> signal::Signal {
    signal::rt_min() + 4
}

/// Installs the do-nothing handler of [`load_interrupt_signal`] (once per process); its
/// default action would end the process.
fn install_handler() -> Result<(), String> {
    static INSTALLED: std::sync::OnceLock<Result<(), i32>> = std::sync::OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            signal::install_interrupting_handler(load_interrupt_signal())
                .map_err(|e| e.raw_os_error().unwrap_or(0))
        })
        .map_err(|e| {
            format!(
                "cannot install the handler that bounds the BPF load: {}",
                std::io::Error::from_raw_os_error(e)
            )
        })
}

/// Runs `load` on a thread of its own, interrupting it once it is over `limit` (module doc),
/// and returns what it returned with the bound it went over, if any. Returns when the load
/// has returned and its thread has ended: nothing of it runs on.
pub(crate) fn bounded<T, F>(limit: Limit, load: F) -> Result<(T, Option<Exceeded>), String>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    install_handler()?;
    let (tid_tx, tid_rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel();
    // Dropped by the watcher once it sends no more signals: the loading thread waits for that
    // before it ends, so that its id is never another thread's when a signal goes to it.
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let start = Instant::now();
    let thread = std::thread::Builder::new()
        .name("jl-bpf-load".into())
        .spawn(move || {
            // The thread inherits its creator's mask: the signal must reach it.
            signal::SignalSet::of(&[load_interrupt_signal()]).unblock_in_this_thread();
            let _ = tid_tx.send(signal::thread_id());
            let _ = done_tx.send(load());
            let _ = release_rx.recv();
        })
        .map_err(|e| format!("cannot start the thread that loads the BPF programs: {e}"))?;
    let tid = tid_rx.recv().ok();
    let mut exceeded = None;
    let outcome = loop {
        match done_rx.recv_timeout(RESEND) {
            Ok(value) => break Some(value),
            Err(RecvTimeoutError::Disconnected) => break None,
            Err(RecvTimeoutError::Timeout) => {}
        }
        let Some(tid) = tid else { continue };
        if exceeded.is_none() {
            let cpu = Duration::from_nanos(thread_cpu_time_ns(tid).unwrap_or(0));
            exceeded = over(limit, start.elapsed(), cpu);
        }
        if exceeded.is_some() {
            // Fails only once the thread is gone, which the next receive sees.
            let _ = signal::send_to_thread(tid, load_interrupt_signal());
        }
    };
    drop(release_tx);
    match (outcome, thread.join()) {
        (Some(value), _) => Ok((value, exceeded)),
        (None, Err(panic)) => std::panic::resume_unwind(panic),
        (None, Ok(())) => {
            Err("the thread that loads the BPF programs ended without a result".into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn the_cpu_bound_comes_first_and_the_wall_bound_catches_a_starved_load() {
        let limit = Limit {
            cpu: 20 * SECOND,
            wall: 60 * SECOND,
        };
        assert_eq!(over(limit, 59 * SECOND, 19 * SECOND), None);
        assert_eq!(
            over(limit, 25 * SECOND, 20 * SECOND),
            Some(Exceeded::Cpu {
                cpu: 20 * SECOND,
                wall: 25 * SECOND
            })
        );
        // A loaded machine: 60 s waited, 2 s on a CPU.
        let wall = over(limit, 60 * SECOND, 2 * SECOND).unwrap();
        assert_eq!(
            wall,
            Exceeded::Wall {
                cpu: 2 * SECOND,
                wall: 60 * SECOND
            }
        );
        assert_eq!(wall.describe(limit), "60 s (2.0 s of it on a CPU)");
        assert_eq!(
            over(limit, 25 * SECOND, 20 * SECOND)
                .unwrap()
                .describe(limit),
            "20.0 s of CPU time (25.0 s in all)"
        );
    }

    #[test]
    fn a_quick_load_is_returned_as_it_is_without_a_signal() {
        let (value, exceeded) = bounded(LOAD_LIMIT, || 42).unwrap();
        assert_eq!((value, exceeded), (42, None));
    }

    /// A stand-in for bpf() with a verifier that never ends: a wait that only a signal ends
    /// (sigwaitinfo for a signal never sent returns EINTR when a handled signal comes), as
    /// many times as aya may call it (a load, then its retry with a log). Returns how many
    /// calls it made.
    fn endless_load(calls: usize) -> usize {
        let never = signal::rt_min() + 5;
        let set = signal::SignalSet::of(&[never]);
        let old = set.block_in_this_thread_saving();
        for _ in 0..calls {
            assert_eq!(set.wait_raw(), -1, "only the bound's signal ends this wait");
        }
        old.set_as_mask_of_this_thread();
        calls
    }

    #[test]
    fn a_load_past_its_cpu_bound_is_interrupted_every_time_it_calls_the_kernel_again() {
        // A CPU bound of 0: over at the watcher's first look. The load's thread spends no CPU
        // in the wait: the bound seen is the CPU's, not the wall's.
        let limit = Limit {
            cpu: Duration::ZERO,
            wall: 60 * SECOND,
        };
        let start = Instant::now();
        let (calls, exceeded) = bounded(limit, || endless_load(3)).unwrap();
        assert_eq!(calls, 3);
        assert!(
            matches!(exceeded, Some(Exceeded::Cpu { .. })),
            "{exceeded:?}"
        );
        // Three interruptions, one per RESEND at most, far from the wall bound.
        assert!(start.elapsed() < 10 * SECOND, "{:?}", start.elapsed());
    }

    #[test]
    fn a_load_that_gets_no_cpu_is_given_up_at_the_wall_bound() {
        let limit = Limit {
            cpu: 3600 * SECOND,
            wall: Duration::from_millis(200),
        };
        let start = Instant::now();
        let (calls, exceeded) = bounded(limit, || endless_load(1)).unwrap();
        assert_eq!(calls, 1);
        let Some(Exceeded::Wall { wall, .. }) = exceeded else {
            panic!("{exceeded:?}")
        };
        assert!(wall >= Duration::from_millis(200));
        assert!(start.elapsed() >= Duration::from_millis(200));
    }

    #[test]
    fn the_calling_threads_mask_does_not_keep_the_signal_from_the_load() {
        // A caller that blocks every real-time signal (a session's threads may): the load's
        // thread unblocks the bound's own.
        std::thread::spawn(|| {
            let set = signal::SignalSet::of(&[load_interrupt_signal()]);
            let old = set.block_in_this_thread_saving();
            let limit = Limit {
                cpu: Duration::ZERO,
                wall: 60 * SECOND,
            };
            let (calls, exceeded) = bounded(limit, || endless_load(1)).unwrap();
            assert_eq!(calls, 1);
            assert!(exceeded.is_some());
            old.set_as_mask_of_this_thread();
        })
        .join()
        .unwrap();
    }
}

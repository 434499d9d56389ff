//! SIGINT and SIGTERM for the commands that change the system (run, noise, monitor, sweep,
//! load and the drop-ins cyclictest, oslat and timerlat): [`install`] is the one place their
//! handlers are set up, called by `commands::dispatch` before the command does anything else
//! (before it makes its result directory, takes a CPU lock, creates a tracing instance or
//! starts a load). A signal that comes while the command sets up is remembered, and the
//! session that starts afterwards stops at once and tears down what it set up
//! (docs/user-guide.md, "Stopping").
//!
//! The handlers are installed with both signals blocked: signal-hook puts its handler in with
//! sigaction before it publishes the action that handler runs, and a signal delivered between
//! the two found no action and was lost (issue 39 R17: a monitor ran on for 20 s, a `load` its
//! full 5 s). Blocked, such a signal stays pending until both are in place and is delivered
//! when they are unblocked, before [`install`] returns. They are unblocked even when the parent
//! started jitterlab with them blocked: a command that promises to stop on SIGINT must see it.

use crate::error::{OrFailure, Result};
use crate::sys::signal::{SIGHUP, SIGINT, SIGTERM, Signal, SignalSet};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// The stop requests: SIGINT, SIGTERM, and SIGHUP (a closed terminal, a dropped ssh session:
/// the seventh hostile re-run's H1, where it killed a tune with RT throttling off and left a
/// cpuset and a tracing instance until the next start), unless SIGHUP was ignored when the
/// process started (`nohup`: its caller asked that a hang-up not end it). Decided once.
fn stop_signals() -> &'static [Signal] {
    static SIGNALS: OnceLock<Vec<Signal>> = OnceLock::new();
    SIGNALS.get_or_init(|| {
        let mut signals = vec![SIGINT, SIGTERM];
        if !crate::sys::signal::is_ignored(SIGHUP) {
            signals.push(SIGHUP);
        }
        signals
    })
}

/// Set by the first SIGINT or SIGTERM since [`install`]; a second one exits at once (130).
static CAUGHT: OnceLock<Arc<AtomicBool>> = OnceLock::new();
/// When the first SIGINT or SIGTERM came (CLOCK_MONOTONIC, ns; 0: none yet).
static FIRST_SIGNAL_NS: AtomicU64 = AtomicU64::new(0);
/// Which signal was the first stop request (0: none yet): written by the handler that set
/// [`FIRST_SIGNAL_NS`], so that every record of the stop names it ([`stop_reason`]).
static FIRST_SIGNAL: AtomicI32 = AtomicI32::new(0);
/// Whether a session (or a command's own loop) has taken up the stop requests: set by
/// [`stop_flag`] and [`catch`]. A request that came while nothing took them up was answered
/// by no one ([`unanswered_request`]).
static TAKEN_UP: AtomicBool = AtomicBool::new(false);
/// How many [`ExitHold`]s there are: while there is one, a second request does not exit at
/// once but is deferred ([`SECOND_SIGNAL_NS`]).
static HOLDS: AtomicUsize = AtomicUsize::new(0);
/// When a second request came while an [`ExitHold`] was held (ns; 0: none): the process
/// exits 130 once the hold's owner has recorded what it must ([`exit_was_deferred`]); a third
/// request exits at once.
static SECOND_SIGNAL_NS: AtomicU64 = AtomicU64::new(0);
/// A second signal within this of the first is the same request delivered twice, not a
/// second request: `timeout` (without --foreground) sends its signal to the command and
/// then to its whole process group, and a shell's Ctrl-C may reach a pipeline twice.
const SAME_REQUEST_NS: u64 = 1_000_000_000;

/// Installs the handlers, once per process (later calls return the same flag): from then on
/// SIGINT and SIGTERM set the flag returned instead of ending the process, and a second one,
/// more than a second after the first, ends it at once with exit code 130 (within the second
/// it is the first request delivered twice, [`SAME_REQUEST_NS`]); but while an [`ExitHold`]
/// is held (the end of a run with the user's programs), the second one only cuts the waits
/// short, and the process exits 130 once their outcomes are recorded; a third one exits at
/// once. Blocks both signals in the
/// calling thread while it installs and publishes, then unblocks them: a signal that came in
/// the meantime (or was pending when the process started) has set the flag when this returns.
/// Meant for the main thread before any other thread exists (`commands::dispatch`), so that no
/// other thread can take the signal during the installation.
pub(crate) fn install() -> Result<Arc<AtomicBool>> {
    let both = SignalSet::of(stop_signals());
    both.block_in_this_thread();
    let installed = install_blocked();
    // Also after a failure: the default action (ending the process) is better than a signal
    // held for ever.
    both.unblock_in_this_thread();
    installed
}

/// The flag of [`install`], installing the handlers if no command did (library use: the
/// tests that start a session directly).
pub(crate) fn catch() -> Result<Arc<AtomicBool>> {
    TAKEN_UP.store(true, Ordering::SeqCst);
    match CAUGHT.get() {
        Some(flag) => Ok(Arc::clone(flag)),
        None => install(),
    }
}

/// [`install`]'s work, with SIGINT and SIGTERM blocked in the calling thread.
fn install_blocked() -> Result<Arc<AtomicBool>> {
    if let Some(flag) = CAUGHT.get() {
        return Ok(Arc::clone(flag));
    }
    let flag = Arc::new(AtomicBool::new(false));
    for &signal in stop_signals() {
        let flag = Arc::clone(&flag);
        // SAFETY: the handler only reads the clock (clock_gettime), touches atomics and may
        // call _exit: all async-signal-safe.
        unsafe {
            signal_hook::low_level::register(signal, move || {
                // Counted for the waits below the session (a write into a FIFO whose reader
                // does not read, results::dir) that end at any request.
                crate::sys::signal::note_stop_request();
                let now = crate::measure::clock::monotonic_ns().max(1);
                match FIRST_SIGNAL_NS.compare_exchange(0, now, Ordering::SeqCst, Ordering::SeqCst) {
                    Ok(_) => {
                        FIRST_SIGNAL.store(signal, Ordering::SeqCst);
                        flag.store(true, Ordering::SeqCst)
                    }
                    Err(first) if now.saturating_sub(first) > SAME_REQUEST_NS => {
                        if HOLDS.load(Ordering::SeqCst) == 0 {
                            signal_hook::low_level::exit(crate::error::STOPPED_AT_ONCE)
                        }
                        // Deferred: the actions registered after this one (the holder's
                        // SignalWatch) see it and cut the waits short.
                        match SECOND_SIGNAL_NS.compare_exchange(
                            0,
                            now,
                            Ordering::SeqCst,
                            Ordering::SeqCst,
                        ) {
                            Ok(_) => {}
                            Err(second) if now.saturating_sub(second) > SAME_REQUEST_NS => {
                                signal_hook::low_level::exit(crate::error::STOPPED_AT_ONCE)
                            }
                            Err(_) => {}
                        }
                    }
                    Err(_) => {}
                }
            })
        }
        .or_run(|| "cannot install the SIGINT/SIGTERM handlers".into())?;
    }
    Ok(Arc::clone(CAUGHT.get_or_init(|| flag)))
}

/// A new flag set by every later SIGINT or SIGTERM, and set already when one came since
/// [`install`] (while the command was setting up): one per session, which the session may also
/// set itself (a write error, a failed load) without stopping the sessions after it.
pub(crate) fn stop_flag() -> Result<Arc<AtomicBool>> {
    let caught = catch()?;
    let stop = Arc::new(AtomicBool::new(false));
    for &signal in stop_signals() {
        // The signal's handler is in place since `install`, so this only adds an action to
        // it: a signal meanwhile runs the actions published so far, `install`'s among them.
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .or_run(|| "cannot install the SIGINT/SIGTERM handlers".into())?;
    }
    // Checked after registering: a signal comes either before (seen here) or after (the
    // handler sets the flag), never unnoticed in between.
    if caught.load(Ordering::SeqCst) {
        stop.store(true, Ordering::SeqCst);
    }
    Ok(stop)
}

/// The signal of the first stop request since [`install`] ("SIGINT", "SIGTERM", "SIGHUP"), if
/// one came.
pub(crate) fn first_request() -> Option<&'static str> {
    match FIRST_SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        signal => Some(crate::sys::signal::name(signal).unwrap_or("a stop signal")),
    }
}

/// The end reason of a run or tune stopped by a request: "stopped by SIGTERM", naming the
/// signal that came first (tenth hostile re-run, L10-b: "SIGINT, SIGTERM or SIGHUP"). For a
/// stop with no signal recorded (a caller's flag set by hand), the signals that stop it.
pub(crate) fn stop_reason() -> String {
    format!(
        "stopped by {}",
        first_request().unwrap_or("SIGINT, SIGTERM or SIGHUP")
    )
}

/// The first stop request's signal when it came while nothing took the requests up: a
/// command that changes the system but ended without a session, a dry run (eleventh hostile
/// re-run, L11-b: a SIGINT during `run --dry-run`'s start was caught by the handler, which
/// only sets a flag, and the plan was printed with exit 0). `commands::dispatch` ends such a
/// command as interrupted; the dry runs' checks ask [`stopped_before_a_session`] before
/// printing.
pub(crate) fn unanswered_request() -> Option<&'static str> {
    match TAKEN_UP.load(Ordering::SeqCst) {
        true => None,
        false => first_request(),
    }
}

/// [`unanswered_request`] as the error a command without a session returns when a stop request
/// came before its work was done (`what`: "its checks were done"): the work is not shown,
/// since it may be incomplete, and `commands::dispatch` exits with 130.
pub(crate) fn stopped_before_a_session(what: &str) -> Result<()> {
    match unanswered_request() {
        None => Ok(()),
        Some(signal) => Err(crate::error::Failure::run(format!(
            "stopped by {signal} before {what}: nothing was started, and nothing is printed as its result; run the command again to see it"
        ))),
    }
}

/// Held while a session ends with programs of the user to record (session/finish.rs): a
/// second SIGINT/SIGTERM then cuts the waits short instead of ending the process at once, so
/// that every program started is killed and its outcome written to events.jsonl and run.json;
/// `commands::dispatch` exits 130 afterwards ([`exit_was_deferred`]). A third request still
/// ends the process at once: a hold never takes away the way out of a hung jitterlab.
pub(crate) struct ExitHold(());

impl ExitHold {
    pub(crate) fn new() -> Self {
        HOLDS.fetch_add(1, Ordering::SeqCst);
        ExitHold(())
    }
}

impl Drop for ExitHold {
    fn drop(&mut self) {
        HOLDS.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Whether a second SIGINT/SIGTERM came while an `ExitHold` was held (the end of a run with
/// the user's programs): the process is to exit 130 now that what the hold protected is
/// recorded.
pub(crate) fn exit_was_deferred() -> bool {
    SECOND_SIGNAL_NS.load(Ordering::SeqCst) != 0
}

/// Set by each SIGINT or SIGTERM from its creation until it is dropped: what ends the bounded
/// wait for the user's programs at the end of a run (session/children.rs), whatever signals came
/// before (the one that stopped the run). Registered here, the one place that installs signal
/// handlers (tests/offline/signals_setup.rs).
pub(crate) struct SignalWatch {
    flag: Arc<AtomicBool>,
    ids: Vec<signal_hook::SigId>,
}

impl SignalWatch {
    pub(crate) fn new() -> Self {
        let flag = Arc::new(AtomicBool::new(false));
        let ids = stop_signals()
            .iter()
            .filter_map(|&s| signal_hook::flag::register(s, Arc::clone(&flag)).ok())
            .collect();
        SignalWatch { flag, ids }
    }

    /// Whether a SIGINT or SIGTERM came since [`SignalWatch::new`].
    pub(crate) fn caught(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }
}

impl Drop for SignalWatch {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

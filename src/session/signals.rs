//! SIGINT and SIGTERM for the commands that change the system (run, noise, monitor, sweep).
//! The handlers go in first, before the command makes its result directory, takes a CPU lock
//! or creates a tracing instance: a signal that came while these were being set up used to
//! kill the process by the default action, leaving an empty result directory and a tracing
//! instance still tracing. Caught instead, it is remembered, and the session that starts
//! afterwards stops at once and tears down what it set up (docs/user-guide.md, "Stopping").

use crate::error::{OrFailure, Result};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// Set by the first SIGINT or SIGTERM since [`catch`]; a second one exits at once (130).
static CAUGHT: OnceLock<Arc<AtomicBool>> = OnceLock::new();
/// When the first SIGINT or SIGTERM came (CLOCK_MONOTONIC, ns; 0: none yet).
static FIRST_SIGNAL_NS: AtomicU64 = AtomicU64::new(0);
/// A second signal within this of the first is the same request delivered twice, not a
/// second request: `timeout` (without --foreground) sends its signal to the command and
/// then to its whole process group, and a shell's Ctrl-C may reach a pipeline twice.
const SAME_REQUEST_NS: u64 = 1_000_000_000;

/// Installs the handlers, once per process (later calls return the same flag): from then on
/// SIGINT and SIGTERM set the flag returned instead of ending the process, and a second one,
/// more than a second after the first, ends it at once with exit code 130 (within the second
/// it is the first request delivered twice, [`SAME_REQUEST_NS`]).
pub(crate) fn catch() -> Result<Arc<AtomicBool>> {
    if let Some(flag) = CAUGHT.get() {
        return Ok(Arc::clone(flag));
    }
    let flag = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let flag = Arc::clone(&flag);
        // SAFETY: the handler only reads the clock (clock_gettime), touches atomics and may
        // call _exit: all async-signal-safe.
        unsafe {
            signal_hook::low_level::register(signal, move || {
                let now = crate::measure::clock::monotonic_ns().max(1);
                match FIRST_SIGNAL_NS.compare_exchange(0, now, Ordering::SeqCst, Ordering::SeqCst) {
                    Ok(_) => flag.store(true, Ordering::SeqCst),
                    Err(first) if now.saturating_sub(first) > SAME_REQUEST_NS => {
                        signal_hook::low_level::exit(130)
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
/// [`catch`] (while the command was setting up): one per session, which the session may also
/// set itself (a write error, a failed load) without stopping the sessions after it.
pub(crate) fn stop_flag() -> Result<Arc<AtomicBool>> {
    let caught = catch()?;
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
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

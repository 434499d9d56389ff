//! SIGINT and SIGTERM for the commands that change the system (run, noise, monitor, sweep).
//! The handlers go in first, before the command makes its result directory, takes a CPU lock
//! or creates a tracing instance: a signal that came while these were being set up used to
//! kill the process by the default action, leaving an empty result directory and a tracing
//! instance still tracing. Caught instead, it is remembered, and the session that starts
//! afterwards stops at once and tears down what it set up (docs/user-guide.md, "Stopping").

use crate::error::{OrFailure, Result};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// Set by the first SIGINT or SIGTERM since [`catch`]; a second one exits at once (130).
static CAUGHT: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Installs the handlers, once per process (later calls return the same flag): from then on
/// SIGINT and SIGTERM set the flag returned instead of ending the process, and a second one,
/// while stopping, ends it at once with exit code 130.
pub(crate) fn catch() -> Result<Arc<AtomicBool>> {
    if let Some(flag) = CAUGHT.get() {
        return Ok(Arc::clone(flag));
    }
    let flag = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // Registered before the flag is set by the same signal: the first signal passes it.
        signal_hook::flag::register_conditional_shutdown(signal, 130, Arc::clone(&flag))
            .or_run(|| "cannot install the SIGINT/SIGTERM handlers".into())?;
        signal_hook::flag::register(signal, Arc::clone(&flag))
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

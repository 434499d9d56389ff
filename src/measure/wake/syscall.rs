//! What the wakers' sleeping syscalls share: resuming a sleep a signal interrupted unless a
//! stop was requested, and the absolute arming of a periodic timer. Below the wakers' files
//! (they call it) and above nothing of `wake/`, so that the methods' table (`mod.rs`) names the
//! wakers and no waker reaches back up to it.

use crate::measure::clock::Clock;
use crate::sys::timer::Arming;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// After a signal interrupted a sleep: resume it, unless a stop was requested.
pub(super) fn resume_unless_stopped(stop: &AtomicBool) -> io::Result<()> {
    if stop.load(Relaxed) {
        Err(io::ErrorKind::Interrupted.into())
    } else {
        Ok(())
    }
}

/// Calls a blocking syscall that returns a negative value and sets errno when it fails, until
/// it succeeds: resumed after EINTR with what `call` passes again, unless a stop was requested.
#[inline(always)]
pub(super) fn retry_interrupted(
    stop: &AtomicBool,
    mut call: impl FnMut() -> isize,
) -> io::Result<()> {
    loop {
        if call() >= 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(crate::sys::errno::EINTR) {
            return Err(e);
        }
        resume_unless_stopped(stop)?;
    }
}

/// The absolute arming of a periodic timer: first expiry at `planned_ns`, or 1 us from now if
/// that has passed (arming in the past would fire at once and count as latency).
pub(super) fn periodic_spec(clock: Clock, planned_ns: u64, interval_ns: u64) -> (u64, Arming) {
    let first = planned_ns.max(clock.now_ns() + 1_000);
    (first, absolute_spec(first, interval_ns))
}

/// First expiry at the absolute time `first_ns`, then every `interval_ns`.
pub(super) fn absolute_spec(first_ns: u64, interval_ns: u64) -> Arming {
    Arming::new(first_ns, interval_ns)
}

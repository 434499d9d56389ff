//! Probes of POSIX timers and real-time signals.

use super::describe;
use crate::doctor::checks::kernel::clock_res_ns;
use crate::doctor::verdict::{Check, Spec};
use crate::sys::signal::{self, SignalSet};
use crate::sys::time::MONOTONIC;
use crate::sys::timer::{Arming, PosixTimer, clock_sleep_for};

const TIMERS: Spec = Spec {
    id: "posix.timers",
    area: "posix",
    why: "POSIX timers (timer_create, timer_settime) drive periodic real-time work and \
          jitterlab's timer-based wake methods.",
};

pub(super) fn posix_timers() -> Check {
    let res = clock_res_ns(MONOTONIC).map_or("unknown".into(), |r| format!("{r} ns"));
    let timer = match PosixTimer::silent(MONOTONIC) {
        Ok(timer) => timer,
        Err(e) => {
            return TIMERS.fail(
                format!(
                    "timer_create(CLOCK_MONOTONIC) failed: {}",
                    describe(e.raw_os_error().unwrap_or(0))
                ),
                "use a kernel with CONFIG_POSIX_TIMERS=y",
            );
        }
    };
    // Arm a 1 ms one-shot timer, sleep past it, and check that it expired.
    let left = timer
        .set_relative(&Arming::new(1_000_000, 0))
        .and_then(|()| {
            let _ = clock_sleep_for(MONOTONIC, 2_000_000);
            timer.remaining_ns()
        });
    drop(timer);
    match left {
        Err(e) => TIMERS.fail(
            format!(
                "timer_settime/timer_gettime failed: {}",
                describe(e.raw_os_error().unwrap_or(0))
            ),
            "use a kernel with CONFIG_POSIX_TIMERS=y",
        ),
        Ok(0) => TIMERS.ok(format!(
            "a 1 ms CLOCK_MONOTONIC timer was created, expired and deleted; clock resolution {res}"
        )),
        Ok(left) => TIMERS.fail(
            format!(
                "a 1 ms timer had not expired after 2 ms ({left} ns left); clock resolution {res}"
            ),
            "check kernel.hrtimers and the clocksource",
        ),
    }
}

const RT_SIGNALS: Spec = Spec {
    id: "posix.rt_signals",
    area: "posix",
    why: "Real-time signals (SIGRTMIN..SIGRTMAX) are queued with a value and delivered in order; \
          timer and I/O notification in real-time applications rely on that.",
};

pub(super) fn rt_signals() -> Check {
    let (min, max) = (signal::rt_min(), signal::rt_max());
    let count = max - min + 1;
    let sig = max;
    let values = [11usize, 22, 33];
    // The signal is blocked on this thread before it is queued to this thread only, and every
    // queued instance is taken back before the mask is restored, so it is never delivered (the
    // default action of a real-time signal terminates the process).
    let set = SignalSet::of(&[sig]);
    let old = set.block_in_this_thread_saving();
    let outcome = if SignalSet::pending().contains(sig) {
        Err(format!(
            "signal {sig} was already pending; not probed so as not to take it"
        ))
    } else {
        let mut queued = 0;
        let mut err = 0;
        for &v in &values {
            match signal::queue_to_this_thread(sig, v) {
                Ok(()) => queued += 1,
                Err(e) => err = e.raw_os_error().unwrap_or(0),
            }
        }
        let got: Vec<usize> = std::iter::from_fn(|| set.take_with_value())
            .map(|(_, value)| value)
            .collect();
        if queued < values.len() {
            Err(format!(
                "sigqueue of signal {sig} failed: {}",
                describe(err)
            ))
        } else if got != values {
            Err(format!(
                "queued values {values:?} to signal {sig}, received {got:?}"
            ))
        } else {
            Ok(())
        }
    };
    old.set_as_mask_of_this_thread();
    let range = format!("SIGRTMIN..SIGRTMAX = {min}..{max} ({count} signals)");
    match outcome {
        // POSIX requires at least RTSIG_MAX = 8 real-time signals.
        Ok(()) if count >= 8 => RT_SIGNALS.ok(format!(
            "{range}; signal {sig} queued 3 times with values {values:?} and received in order"
        )),
        Ok(()) => RT_SIGNALS.warn(
            format!("{range}: fewer than POSIX's 8"),
            "use a standard Linux C library",
        ),
        Err(e) => RT_SIGNALS.warn(
            format!("{range}; {e}"),
            "check RLIMIT_SIGPENDING (`ulimit -i`) and seccomp filters",
        ),
    }
}

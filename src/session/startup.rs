//! The start-up timeline (issue 44): when each step from the process's start to the opening of
//! the start gate ended, on CLOCK_MONOTONIC, for run.json's `startup` (docs/result-format.md)
//! and `ci/startup.sh`, which prints each step's time from exec and its share of the
//! start-up. A mark is one clock read and a push under a lock no other thread contends; the
//! steps all lie before the measuring threads are released, so the measuring loop never
//! meets it.
//!
//! The marks are the process's: `main` marks its entry and the parsed command line
//! ([`mark`] is public for the binary), the command's start marks what killed runs left
//! undone, and a session marks its own steps. The first session of the process takes them
//! all ([`take`]); a later one (monitor's segments, tune's arms) has only its own.

use crate::format::run_record::{StartupRecord, StartupStep};
use crate::measure::clock::monotonic_ns;
use std::sync::Mutex;

/// The steps marked so far and not yet taken, in the order they ended.
static MARKS: Mutex<Vec<(&'static str, u64)>> = Mutex::new(Vec::new());

/// Marks the end of `step` now.
pub fn mark(step: &'static str) {
    mark_at(step, monotonic_ns());
}

/// Marks the end of `step` at `monotonic_ns` (a step timed elsewhere: the snapshot's probes,
/// which run on a thread of their own and below the session's layer).
pub(crate) fn mark_at(step: &'static str, monotonic_ns: u64) {
    MARKS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((step, monotonic_ns));
}

/// The time from the end of step `from` to the end of step `to` (the last of each marked since
/// the last take), if both were marked in that order: a step's own time, which the lead-in
/// scales with (session/start.rs `lead_in_ns`).
pub(super) fn between(from: &str, to: &str) -> Option<u64> {
    between_in(&MARKS.lock().unwrap_or_else(|e| e.into_inner()), from, to)
}

/// [`between`] in `marks`.
fn between_in(marks: &[(&'static str, u64)], from: &str, to: &str) -> Option<u64> {
    let end = |step: &str| marks.iter().rev().find(|(s, _)| *s == step).map(|m| m.1);
    end(to)?.checked_sub(end(from)?)
}

/// The steps marked since the last take, and the process's CPU time (user and system, every
/// thread) now: called as the gate opens, it is the CPU the start-up cost.
pub(super) fn take(first_due_monotonic_ns: u64) -> StartupRecord {
    let marks = std::mem::take(&mut *MARKS.lock().unwrap_or_else(|e| e.into_inner()));
    let (user, system) = crate::sys::time::process_cpu_time_ns();
    StartupRecord {
        steps: marks
            .into_iter()
            .map(|(step, end_monotonic_ns)| StartupStep {
                step: step.to_string(),
                end_monotonic_ns,
            })
            .collect(),
        first_due_monotonic_ns,
        process_cpu_ns: user + system,
    }
}

#[cfg(test)]
mod tests {
    use super::between_in;

    #[test]
    fn a_steps_own_time_is_from_the_last_end_of_the_step_before() {
        let marks = [
            ("placed", 100),
            ("set up", 350),
            ("placed", 400),
            ("set up", 1_000),
        ];
        // A later session's marks (the last of each) count.
        assert_eq!(between_in(&marks, "placed", "set up"), Some(600));
        assert_eq!(between_in(&marks[..2], "placed", "set up"), Some(250));
        // Out of order, or a step not marked: none.
        assert_eq!(between_in(&marks[..2], "set up", "placed"), None);
        assert_eq!(between_in(&marks, "placed", "gate"), None);
    }
}

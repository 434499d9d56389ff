//! The count of a scenario phase that ends after N wakeups (`wakeups = N`, docs/loads.md).
//!
//! The supervisor arms the count when the phase's loads are ready; the recorder, which takes
//! the first measuring thread's samples from its ring in order (never the measuring loop, which
//! is not touched), counts the samples due from then on and says where the Nth was due. The
//! supervisor then ends the phase. So the phase's window (its first counted due time to its
//! Nth) holds exactly N wakeups of thread 0, whatever the drain's delay; the loads go on for
//! that delay (up to a drain period, 100 ms) after the window and before the next phase, in no
//! phase's window.
//!
//! Times are offsets from the run's first due time, ns (the phases' own base).

use std::sync::atomic::{AtomicU64, Ordering};

/// Shared between the supervisor (which arms) and the recorder (which counts). Each arming is a
/// new generation; the recorder's answer names the generation it is for.
#[derive(Debug, Default)]
pub(crate) struct WakeupCount {
    /// Generation of the current arming (0: never armed). Written last by `arm`.
    generation: AtomicU64,
    from_ns: AtomicU64,
    target: AtomicU64,
    /// Samples counted so far for `generation`.
    counted: AtomicU64,
    /// The generation whose count is complete, and its window. `done` written last.
    done: AtomicU64,
    window_start_ns: AtomicU64,
    window_end_ns: AtomicU64,
    /// Set by the supervisor when the scenario's last phase has ended: the run ends then.
    last_phase_ended: std::sync::atomic::AtomicBool,
}

impl WakeupCount {
    /// Starts a count of `target` wakeups due at or after `from_ns`; returns its generation.
    /// Only the supervisor arms, so the generations follow one another.
    pub(crate) fn arm(&self, from_ns: u64, target: u64) -> u64 {
        let generation = self.generation.load(Ordering::Acquire) + 1;
        self.from_ns.store(from_ns, Ordering::Relaxed);
        self.target.store(target, Ordering::Relaxed);
        self.counted.store(0, Ordering::Relaxed);
        self.generation.store(generation, Ordering::Release);
        generation
    }

    /// The window [first counted due time, Nth due time] of `generation`, once its count is
    /// complete.
    pub(crate) fn done(&self, generation: u64) -> Option<(u64, u64)> {
        (self.done.load(Ordering::Acquire) == generation).then(|| {
            (
                self.window_start_ns.load(Ordering::Relaxed),
                self.window_end_ns.load(Ordering::Relaxed),
            )
        })
    }

    /// The scenario's last phase has ended (the supervisor's word).
    pub(crate) fn end_scenario(&self) {
        self.last_phase_ended.store(true, Ordering::Release);
    }

    /// Whether the scenario's last phase has ended: a run of a counted scenario ends then.
    pub(crate) fn scenario_ended(&self) -> bool {
        self.last_phase_ended.load(Ordering::Acquire)
    }

    /// Wakeups counted so far by the current arming.
    pub(crate) fn counted(&self) -> u64 {
        self.counted.load(Ordering::Relaxed)
    }
}

/// The recorder's side: sees every sample of the counted thread in due-time order.
#[derive(Debug)]
pub(crate) struct WakeupCounter {
    shared: std::sync::Arc<WakeupCount>,
    /// The generation being counted (0: none yet).
    generation: u64,
    /// Counting from here: the arming's `from_ns`, or past the last sample seen before the
    /// recorder saw the arming (a sample taken before then was not counted: so the window
    /// starts after it, and every sample in the window is counted).
    start_ns: u64,
    target: u64,
    count: u64,
    first_ns: Option<u64>,
    finished: bool,
    last_ns: Option<u64>,
}

impl WakeupCounter {
    pub(crate) fn new(shared: std::sync::Arc<WakeupCount>) -> Self {
        WakeupCounter {
            shared,
            generation: 0,
            start_ns: 0,
            target: 0,
            count: 0,
            first_ns: None,
            finished: true,
            last_ns: None,
        }
    }

    /// One sample of the counted thread, due at `due_ns` (offset from the run's first due
    /// time); samples come in due-time order.
    pub(crate) fn see(&mut self, due_ns: u64) {
        let generation = self.shared.generation.load(Ordering::Acquire);
        if generation != self.generation {
            self.generation = generation;
            let from = self.shared.from_ns.load(Ordering::Relaxed);
            self.start_ns = match self.last_ns {
                Some(last) => from.max(last + 1),
                None => from,
            };
            self.target = self.shared.target.load(Ordering::Relaxed);
            self.count = 0;
            self.first_ns = None;
            self.finished = false;
        }
        self.last_ns = Some(due_ns);
        if self.finished || due_ns < self.start_ns {
            return;
        }
        self.count += 1;
        self.first_ns.get_or_insert(due_ns);
        self.shared.counted.store(self.count, Ordering::Relaxed);
        if self.count == self.target {
            self.finished = true;
            let first = self.first_ns.unwrap_or(due_ns);
            self.shared.window_start_ns.store(first, Ordering::Relaxed);
            self.shared.window_end_ns.store(due_ns, Ordering::Relaxed);
            self.shared.done.store(self.generation, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn the_window_holds_exactly_n_of_the_samples_seen_after_the_arming() {
        let shared = Arc::new(WakeupCount::default());
        let mut c = WakeupCounter::new(Arc::clone(&shared));
        // Before any arming, nothing is counted.
        for t in [0, 1000, 2000] {
            c.see(t);
        }
        let g = shared.arm(2500, 3);
        assert_eq!(shared.done(g), None);
        for t in [3000, 4000] {
            c.see(t);
        }
        assert_eq!(shared.counted(), 2);
        c.see(5000);
        assert_eq!(shared.done(g), Some((3000, 5000)));
        // Past the count, nothing changes.
        c.see(6000);
        assert_eq!(shared.done(g), Some((3000, 5000)));
        // A second arming whose start was already passed by samples taken before the recorder
        // saw it: the window starts after the last of them, so it holds exactly the count.
        let g2 = shared.arm(6500, 2);
        c.see(7000);
        c.see(8000);
        assert_eq!(shared.done(g2), Some((7000, 8000)));
        assert_eq!(shared.done(g), None);
        let g3 = shared.arm(7500, 2);
        c.see(9000);
        c.see(10_000);
        assert_eq!(shared.done(g3), Some((9000, 10_000)));
    }

    #[test]
    fn samples_due_before_the_arming_are_not_counted() {
        let shared = Arc::new(WakeupCount::default());
        let mut c = WakeupCounter::new(Arc::clone(&shared));
        c.see(100);
        let g = shared.arm(0, 2);
        // Due before the last sample already seen: not counted (it went by uncounted).
        c.see(100);
        c.see(200);
        c.see(300);
        assert_eq!(shared.done(g), Some((200, 300)));
    }
}

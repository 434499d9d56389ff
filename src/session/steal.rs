//! Steal time over the run: the per-CPU steal counters of /proc/stat read when the start is
//! fixed and again when the measuring threads have ended, for run.json `steal` and a warning
//! per measured CPU that lost time to the hypervisor.
//!
//! Why over the run and not in the system snapshot: a snapshot window would have to wait
//! before the start (it once held the start back by 100 ms, twice the lead-in) and would say
//! only what the hypervisor did before measuring. The first reading is taken as the lead-in
//! begins, so it costs the start nothing.

use crate::format::steal::{CpuSteal, StealRecord};
use crate::measure::clock::monotonic_ns;

/// The first reading: when, and each measured CPU's steal ticks then.
#[derive(Debug)]
pub(super) struct StealWatch {
    start_mono: u64,
    start: Vec<(usize, u64)>,
}

impl StealWatch {
    /// Reads the counters of `cpus` now; None where /proc/stat cannot be read or lists none
    /// of them with a steal field (then run.json has no `steal`).
    pub(super) fn begin(cpus: &[usize]) -> Option<StealWatch> {
        let start = read(cpus)?;
        Some(StealWatch {
            start_mono: monotonic_ns(),
            start,
        })
    }

    /// The steal of each CPU since [`Self::begin`]; None if /proc/stat cannot be read now.
    pub(super) fn end(&self) -> Option<StealRecord> {
        let now = read(&self.start.iter().map(|(c, _)| *c).collect::<Vec<_>>())?;
        let window_ns = monotonic_ns().saturating_sub(self.start_mono);
        Some(since(&self.start, &now, window_ns, tick_ns()))
    }
}

/// The steal record from two readings of the same CPUs. A counter that went backwards (a
/// CPU taken offline and back resets it) counts as nothing stolen.
fn since(
    start: &[(usize, u64)],
    now: &[(usize, u64)],
    window_ns: u64,
    tick_ns: u64,
) -> StealRecord {
    let cpus = start
        .iter()
        .filter_map(|&(cpu, before)| {
            let after = now.iter().find(|(c, _)| *c == cpu)?.1;
            Some(CpuSteal {
                cpu,
                steal_ns: after.saturating_sub(before).saturating_mul(tick_ns),
            })
        })
        .collect();
    StealRecord {
        window_ns,
        tick_ns,
        cpus,
    }
}

fn read(cpus: &[usize]) -> Option<Vec<(usize, u64)>> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let all = crate::doctor::checks::virt::stat_steal_per_cpu(&text);
    let wanted: Vec<(usize, u64)> = all.into_iter().filter(|(c, _)| cpus.contains(c)).collect();
    (!wanted.is_empty()).then_some(wanted)
}

/// One tick of /proc/stat's counters (1/USER_HZ), ns.
fn tick_ns() -> u64 {
    1_000_000_000 / crate::sys::time::user_hz().max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steal_is_the_tick_difference_per_cpu() {
        let r = since(
            &[(0, 100), (2, 50), (5, 9)],
            &[(0, 103), (2, 50), (5, 3)],
            2_000_000_000,
            10_000_000,
        );
        assert_eq!(r.window_ns, 2_000_000_000);
        assert_eq!(
            r.cpus,
            vec![
                CpuSteal {
                    cpu: 0,
                    steal_ns: 30_000_000
                },
                CpuSteal {
                    cpu: 2,
                    steal_ns: 0
                },
                // Went backwards: a hot-plugged CPU; nothing is claimed.
                CpuSteal {
                    cpu: 5,
                    steal_ns: 0
                },
            ]
        );
    }

    #[test]
    fn the_live_system_gives_a_whole_number_of_ticks() {
        let Some(w) = StealWatch::begin(&[0]) else {
            return; // no /proc/stat steal field here: nothing to read
        };
        let r = w.end().expect("a second reading");
        assert_eq!(r.cpus.len(), 1);
        assert_eq!(r.cpus[0].steal_ns % r.tick_ns, 0);
        assert!(r.tick_ns >= 1_000_000, "USER_HZ above 1000? {}", r.tick_ns);
    }
}

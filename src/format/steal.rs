//! run.json's `steal`: the time the hypervisor took from each measured CPU while the run
//! measured (docs/result-format.md).

use serde::{Deserialize, Serialize};

/// Steal time of the measured CPUs over the run, from the per-CPU lines of /proc/stat read
/// when the start was fixed and again when the run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StealRecord {
    /// From the first reading (the start fixed, 50 ms before the first due time) to the
    /// second (the measuring threads ended), ns: the window each CPU's share is taken over.
    pub(crate) window_ns: u64,
    /// The unit the kernel counts steal in (1/USER_HZ), ns. Each `steal_ns` is a whole number
    /// of these, so it is exact to within one tick either way.
    pub(crate) tick_ns: u64,
    pub cpus: Vec<CpuSteal>,
}

/// One measured CPU's steal time over the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuSteal {
    pub cpu: usize,
    /// Time stolen, ns (a whole number of `tick_ns`).
    pub(crate) steal_ns: u64,
}

impl StealRecord {
    /// `steal_ns` as a share of the window, in percent; None for an empty window.
    pub(crate) fn share_percent(&self, steal_ns: u64) -> Option<f64> {
        (self.window_ns > 0).then(|| steal_ns as f64 * 100.0 / self.window_ns as f64)
    }

    /// One warning per CPU that lost time to the hypervisor, with its share and precision.
    pub fn warnings(&self) -> Vec<String> {
        self.cpus
            .iter()
            .filter(|c| c.steal_ns > 0)
            .map(|c| {
                format!(
                    "the hypervisor took {:.0} ms ({:.2}% of {:.1} s, ±{:.0} ms) of CPU {}'s \
                     time while it was measured (steal time, /proc/stat): latencies on it \
                     include those gaps",
                    c.steal_ns as f64 / 1e6,
                    self.share_percent(c.steal_ns).unwrap_or(0.0),
                    self.window_ns as f64 / 1e9,
                    self.tick_ns as f64 / 1e6,
                    c.cpu
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_and_warnings_name_only_cpus_that_lost_time() {
        let r = StealRecord {
            window_ns: 4_000_000_000,
            tick_ns: 10_000_000,
            cpus: vec![
                CpuSteal {
                    cpu: 0,
                    steal_ns: 0,
                },
                CpuSteal {
                    cpu: 3,
                    steal_ns: 20_000_000,
                },
            ],
        };
        assert_eq!(r.share_percent(20_000_000), Some(0.5));
        let w = r.warnings();
        assert_eq!(w.len(), 1);
        assert!(
            w[0].contains("20 ms (0.50% of 4.0 s, ±10 ms) of CPU 3"),
            "{}",
            w[0]
        );
        let empty = StealRecord { window_ns: 0, ..r };
        assert_eq!(empty.share_percent(1), None);
    }
}

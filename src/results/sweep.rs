//! sweep.json: the summary `jitterlab sweep` writes at the top of a sweep directory, one row per
//! load level, each pointing at the result directory of that level's run (`level-<value>/`).
//! sweep.csv holds the same rows flat. Specified in docs/result-format.md.

use super::run_record::{ThreadSummary, Throughput};
use serde::{Deserialize, Serialize};

pub const FILE_NAME: &str = "sweep.json";
pub const CSV_FILE_NAME: &str = "sweep.csv";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepRecord {
    /// The result-directory format version (same as run.json's).
    pub format: u32,
    /// The load template as given, with `{}` where each level goes.
    pub load_template: String,
    pub levels: Vec<String>,
    pub rows: Vec<SweepRow>,
}

impl SweepRecord {
    /// Every throughput figure (name, unit) that some level reported, in order of first
    /// appearance: the columns of sweep.csv and the lines of the throughput plot.
    pub fn throughput_metrics(&self) -> Vec<(String, String)> {
        let mut metrics: Vec<(String, String)> = Vec::new();
        for t in self.rows.iter().flat_map(|r| &r.throughput) {
            let key = (t.name.clone(), t.unit.clone());
            if !metrics.contains(&key) {
                metrics.push(key);
            }
        }
        metrics
    }
}

/// One level of a sweep and what its run measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepRow {
    pub level: String,
    /// The level's result directory, relative to the sweep directory.
    pub run_dir: String,
    /// The swept load's throughput in that run.
    pub throughput: Vec<Throughput>,
    pub threads: Vec<SweepThread>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepThread {
    pub cpu: usize,
    pub samples: u64,
    pub min_ns: Option<i64>,
    pub p99_ns: Option<u64>,
    pub max_ns: Option<i64>,
    pub missed_periods: u64,
}

impl From<&ThreadSummary> for SweepThread {
    /// A level's row keeps these figures of each thread of its run.
    fn from(t: &ThreadSummary) -> Self {
        SweepThread {
            cpu: t.cpu,
            samples: t.latency.samples,
            min_ns: t.latency.min_ns,
            p99_ns: t.latency.p99_ns,
            max_ns: t.latency.max_ns,
            missed_periods: t.missed_periods,
        }
    }
}

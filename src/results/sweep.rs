//! sweep.json: the summary `jitterlab sweep` writes at the top of a sweep directory, one row per
//! load level, each pointing at the result directory of that level's run (`level-<value>/`).
//! sweep.csv holds the same rows flat. Specified in docs/result-format.md.

use super::ResultDir;
use super::run_record::{RunRecord, ThreadSummary, Throughput};
use crate::error::{OrFailure, Result};
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
    /// `sweep --no-measure`: each level ran its loads alone, so rows have throughput only (no
    /// `threads`, an empty `run_dir`): the "without driver" series.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub load_only: bool,
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
    /// Timer IRQ latency (hrtimer expiry minus programmed expiry) when the level ran with
    /// `--trace`: the "IRQ handler" series of the SH7780 figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq_p99_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq_max_ns: Option<i64>,
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
            irq_p99_ns: t.irq_latency.as_ref().and_then(|l| l.p99_ns),
            irq_max_ns: t.irq_latency.as_ref().and_then(|l| l.max_ns),
        }
    }
}

impl SweepRow {
    /// The row of the level `level`, whose swept load was `spec`, from that level's run.
    pub fn new(level: &str, spec: &str, r: &RunRecord) -> SweepRow {
        SweepRow {
            level: level.to_string(),
            run_dir: format!("level-{level}"),
            throughput: r
                .loads
                .iter()
                .find(|l| l.spec == spec)
                .map(|l| l.throughput.clone())
                .unwrap_or_default(),
            threads: r.threads.iter().map(SweepThread::from).collect(),
        }
    }
}

/// Whether `dir` is a sweep directory (holds sweep.json).
pub fn is_sweep_dir(dir: &std::path::Path) -> bool {
    dir.join(FILE_NAME).is_file()
}

/// Reads the sweep.json of the sweep directory `dir`; errors are bad input (exit 2).
pub fn read(dir: &std::path::Path) -> Result<SweepRecord> {
    let file = dir.join(FILE_NAME);
    let text = crate::input::read_result_file(&file, crate::input::RESULT_RECORD_MAX_BYTES)
        .or_usage(|| file.display().to_string())?;
    serde_json::from_str(&text).map_err(|e| {
        crate::error::Failure::usage(format!(
            "{} is not a valid sweep.json: {e}; pass the directory jitterlab sweep wrote",
            file.display()
        ))
    })
}

/// Writes sweep.json and sweep.csv (after every level, so an interrupted sweep keeps its rows),
/// each replaced atomically and never through a link.
pub fn write(out: &ResultDir, record: &SweepRecord) -> Result<()> {
    let mut json = serde_json::to_vec_pretty(record).expect("sweep records serialise");
    json.push(b'\n');
    out.replace_file(FILE_NAME, &json)
        .or_run(|| format!("cannot write {}", out.file(FILE_NAME).display()))?;
    out.replace_file(CSV_FILE_NAME, csv(record).as_bytes())
        .or_run(|| format!("cannot write {}", out.file(CSV_FILE_NAME).display()))
}

/// One row per level: level, run_dir, the swept load's throughput (`name (unit)` columns, from
/// the first row), then per CPU `cpuN_samples, cpuN_min_ns, cpuN_p99_ns, cpuN_max_ns,
/// cpuN_missed_periods, cpuN_irq_p99_ns, cpuN_irq_max_ns` (the IRQ cells empty unless the level
/// was traced). Empty cells for values a level lacks.
/// The columns of sweep.csv per CPU, after `cpuN_`.
const COLUMNS_PER_CPU: [&str; 7] = [
    "samples",
    "min_ns",
    "p99_ns",
    "max_ns",
    "missed_periods",
    "irq_p99_ns",
    "irq_max_ns",
];

pub fn csv(record: &SweepRecord) -> String {
    let quote = |s: &str| {
        if s.contains([',', '"', '\n']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    let figures = record.throughput_metrics();
    let mut cpus: Vec<usize> = record
        .rows
        .iter()
        .flat_map(|r| r.threads.iter().map(|t| t.cpu))
        .collect();
    cpus.sort_unstable();
    cpus.dedup();
    let mut header = vec!["level".to_string(), "run_dir".to_string()];
    header.extend(figures.iter().map(|(n, u)| quote(&format!("{n} ({u})"))));
    for c in &cpus {
        for f in COLUMNS_PER_CPU {
            header.push(format!("cpu{c}_{f}"));
        }
    }
    let mut text = header.join(",") + "\n";
    for row in &record.rows {
        let mut cells = vec![quote(&row.level), quote(&row.run_dir)];
        for (name, unit) in &figures {
            cells.push(
                row.throughput
                    .iter()
                    .find(|t| &t.name == name && &t.unit == unit)
                    .map_or(String::new(), |t| t.value.to_string()),
            );
        }
        for c in &cpus {
            match row.threads.iter().find(|t| t.cpu == *c) {
                Some(t) => {
                    let opt = |v: Option<String>| v.unwrap_or_default();
                    cells.push(t.samples.to_string());
                    cells.push(opt(t.min_ns.map(|v| v.to_string())));
                    cells.push(opt(t.p99_ns.map(|v| v.to_string())));
                    cells.push(opt(t.max_ns.map(|v| v.to_string())));
                    cells.push(t.missed_periods.to_string());
                    cells.push(opt(t.irq_p99_ns.map(|v| v.to_string())));
                    cells.push(opt(t.irq_max_ns.map(|v| v.to_string())));
                }
                None => cells.extend(std::iter::repeat_n(String::new(), COLUMNS_PER_CPU.len())),
            }
        }
        text += &(cells.join(",") + "\n");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread(cpu: usize, irq: Option<i64>) -> SweepThread {
        SweepThread {
            cpu,
            samples: 10,
            min_ns: Some(1_000),
            p99_ns: Some(20_000),
            max_ns: Some(30_000),
            missed_periods: 1,
            irq_p99_ns: irq.map(|v| v as u64 / 2),
            irq_max_ns: irq,
        }
    }

    #[test]
    fn the_csv_holds_the_timer_irq_latency_of_traced_levels() {
        let record = SweepRecord {
            format: 1,
            load_template: "hackbench:groups={}".into(),
            load_only: false,
            levels: vec!["1".into(), "2".into()],
            rows: vec![
                SweepRow {
                    level: "1".into(),
                    run_dir: "level-1".into(),
                    throughput: Vec::new(),
                    threads: vec![thread(0, Some(8_000))],
                },
                SweepRow {
                    level: "2".into(),
                    run_dir: "level-2".into(),
                    throughput: Vec::new(),
                    threads: vec![thread(0, None)],
                },
            ],
        };
        let text = csv(&record);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "level,run_dir,cpu0_samples,cpu0_min_ns,cpu0_p99_ns,cpu0_max_ns,cpu0_missed_periods,cpu0_irq_p99_ns,cpu0_irq_max_ns",
                "1,level-1,10,1000,20000,30000,1,4000,8000",
                "2,level-2,10,1000,20000,30000,1,,",
            ]
        );
        // sweep.json keeps them, and a level without them reads back without them.
        let back: SweepRecord =
            serde_json::from_str(&serde_json::to_string(&record).unwrap()).unwrap();
        assert_eq!(back.rows[0].threads[0].irq_max_ns, Some(8_000));
        assert_eq!(back.rows[1].threads[0].irq_p99_ns, None);
        assert!(
            !serde_json::to_string(&record.rows[1])
                .unwrap()
                .contains("irq")
        );
    }
}

//! sweep.json: the summary `jitterlab sweep` writes at the top of a sweep directory, one row per
//! load level, each pointing at the result directory of that level's run (`level-<value>/`).
//! sweep.csv holds the same rows flat. Specified in docs/result-format.md.

use super::ResultDir;
use crate::error::{OrFailure, Result};
use crate::format::run_record::{RunRecord, ThreadSummary, Throughput};
use serde::{Deserialize, Serialize};

pub const FILE_NAME: &str = "sweep.json";
pub(crate) const CSV_FILE_NAME: &str = "sweep.csv";

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
    /// What the figures of some level miss ([`SweepRecord::level_warnings`]), kept up to date
    /// by [`SweepRecord::push_row`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// How the sweep ended, as tune.json's `ended`: `running` while its levels run (a sweep
    /// killed by SIGKILL leaves it so), `completed` (every level ran), `interrupted` (a
    /// SIGINT, SIGTERM or SIGHUP stopped a level: the rows are the levels run, the last of
    /// them cut short), `failed` (a level failed). Absent in files before it (tenth hostile
    /// re-run, L10-e: an interrupted sweep's sweep.json did not say so).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<String>,
    /// Why, for an interrupted or failed sweep: the signal, the level it stopped and the
    /// levels not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_reason: Option<String>,
}

impl SweepRecord {
    /// Adds a level's row, and its warnings.
    pub fn push_row(&mut self, row: SweepRow) {
        self.rows.push(row);
        self.warnings = self.level_warnings();
    }

    /// Per level, what its figures miss: samples the recorder dropped on a CPU (its latency
    /// figures are of the samples kept), and throughput figures the load gave no value for.
    /// From the rows, so that sweep.json files written before the `warnings` field get them
    /// too.
    pub(crate) fn level_warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        for row in &self.rows {
            for t in row.threads.iter().filter(|t| t.dropped_records > 0) {
                let of = t.samples + t.dropped_records;
                out.push(format!(
                    "level {}: CPU {} dropped {} of {} samples ({:.1} %) because the recorder fell behind (ring full); that level's latency figures miss them. Raise --ring-size",
                    row.level,
                    t.cpu,
                    t.dropped_records,
                    of,
                    100.0 * t.dropped_records as f64 / of as f64
                ));
            }
            for t in row.throughput.iter().filter(|t| t.value.is_none()) {
                out.push(format!(
                    "level {}: no {}: {}",
                    row.level,
                    t.name,
                    t.no_value.as_deref().unwrap_or("the load reported none")
                ));
            }
        }
        out
    }

    /// Every throughput figure (name, unit) that some level reported, in order of first
    /// appearance: the columns of sweep.csv and the lines of the throughput plot.
    pub(crate) fn throughput_metrics(&self) -> Vec<(String, String)> {
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
    /// Samples the recorder lost (ring full): the level's figures are of `samples` only.
    /// Absent (0) in sweep.json files written before this field.
    #[serde(default)]
    pub dropped_records: u64,
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
            dropped_records: t.dropped_records,
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
pub(crate) fn is_sweep_dir(dir: &std::path::Path) -> bool {
    dir.join(FILE_NAME).is_file()
}

/// Reads the sweep.json of the sweep directory `dir`; errors are bad input (exit 2).
pub fn read(dir: &std::path::Path) -> Result<SweepRecord> {
    let file = dir.join(FILE_NAME);
    let text = crate::input::read_result_file(&file, crate::input::RESULT_RECORD_MAX_BYTES)
        .or_usage(|| file.display().to_string())?;
    crate::input::check_counts(&text)
        .map_err(|why| crate::error::Failure::usage(format!("{}: {why}", file.display())))?;
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
/// cpuN_missed_periods, cpuN_dropped_records, cpuN_irq_p99_ns, cpuN_irq_max_ns` (the IRQ cells
/// empty unless the level was traced). Empty cells for values a level lacks (a throughput
/// figure without a value too).
/// The columns of sweep.csv per CPU, after `cpuN_`.
const COLUMNS_PER_CPU: [&str; 8] = [
    "samples",
    "min_ns",
    "p99_ns",
    "max_ns",
    "missed_periods",
    "dropped_records",
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
    // Named as every label is (format/throughput.rs): `exchange rate (exchanges/s)`, or the
    // unit alone where it says the name (`exchanges`, not `exchanges (exchanges)`).
    header.extend(
        figures
            .iter()
            .map(|(n, u)| quote(&crate::format::throughput::throughput_label(n, u))),
    );
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
                    .and_then(|t| t.value)
                    .map_or(String::new(), |v| v.to_string()),
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
                    cells.push(t.dropped_records.to_string());
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
            dropped_records: 0,
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
            warnings: Vec::new(),
            ended: None,
            end_reason: None,
        };
        let text = csv(&record);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "level,run_dir,cpu0_samples,cpu0_min_ns,cpu0_p99_ns,cpu0_max_ns,cpu0_missed_periods,cpu0_dropped_records,cpu0_irq_p99_ns,cpu0_irq_max_ns",
                "1,level-1,10,1000,20000,30000,1,0,4000,8000",
                "2,level-2,10,1000,20000,30000,1,0,,",
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

    /// Issue 23: a level whose recorder dropped samples (hackbench at 30 groups with --trace
    /// dropped 781 of about 2000 on CPU 0) says so in sweep.csv, sweep.json and a warning; a
    /// level whose load gave no value leaves the cell empty (never 0) and says why.
    #[test]
    fn dropped_samples_and_missing_values_are_shown_per_level() {
        let mut record = SweepRecord {
            format: 1,
            load_template: "hackbench:groups={}".into(),
            load_only: false,
            levels: vec!["20".into(), "30".into()],
            rows: Vec::new(),
            warnings: Vec::new(),
            ended: None,
            end_reason: None,
        };
        let exchange = |v: Option<f64>| match v {
            Some(v) => Throughput::new("mean exchange time", v, "s"),
            None => Throughput::none(
                "mean exchange time",
                "s",
                "no exchange finished in 1.00 s".into(),
            ),
        };
        record.push_row(SweepRow {
            level: "20".into(),
            run_dir: "level-20".into(),
            throughput: vec![exchange(Some(0.25))],
            threads: vec![thread(0, None)],
        });
        assert!(record.warnings.is_empty(), "{:?}", record.warnings);
        let mut lossy = thread(0, None);
        lossy.samples = 1_219;
        lossy.dropped_records = 781;
        record.push_row(SweepRow {
            level: "30".into(),
            run_dir: "level-30".into(),
            throughput: vec![exchange(None)],
            threads: vec![lossy, thread(1, None)],
        });
        let text = csv(&record);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("level,run_dir,mean exchange time (s),cpu0_samples,")
                && lines[0].contains(",cpu0_missed_periods,cpu0_dropped_records,"),
            "{}",
            lines[0]
        );
        assert!(lines[1].starts_with("20,level-20,0.25,10,"), "{}", lines[1]);
        assert!(
            lines[2].starts_with("30,level-30,,1219,1000,20000,30000,1,781,"),
            "no value is an empty cell, and the dropped count is there: {}",
            lines[2]
        );
        assert_eq!(
            record.warnings,
            [
                "level 30: CPU 0 dropped 781 of 2000 samples (39.0 %) because the recorder fell behind (ring full); that level's latency figures miss them. Raise --ring-size",
                "level 30: no mean exchange time: no exchange finished in 1.00 s",
            ]
        );
        let json = serde_json::to_value(&record).unwrap();
        assert_eq!(json["rows"][1]["threads"][0]["dropped_records"], 781);
        assert!(json["rows"][1]["throughput"][0]["value"].is_null());
        assert_eq!(json["warnings"].as_array().unwrap().len(), 2);
        // A sweep.json from before the fields reads with 0 dropped and its warnings derived.
        let mut old = json.clone();
        old.as_object_mut().unwrap().remove("warnings");
        let back: SweepRecord = serde_json::from_value(old).unwrap();
        assert_eq!(back.level_warnings(), record.warnings);
    }
}

//! `jitterlab sweep --load 'hackbench:groups={}' --levels 1,2,4 [run options]`: one
//! `jitterlab run` per level, each into `<sweep dir>/level-<value>/`, and a summary of all
//! levels (load throughput, per-CPU latency) as sweep.json and sweep.csv: the data behind
//! "hackbench time and max latency vs load" figures.

use crate::cli::{RunArgs, SweepArgs};
use crate::error::{ExitCode, Failure, OrFailure, Result};
use crate::results::run_record::format_throughput;
use crate::results::run_record::{Ended, FORMAT, RunRecord};
use crate::results::sweep::{CSV_FILE_NAME, FILE_NAME, SweepRecord, SweepRow, SweepThread};
use crate::results::{ResultDir, dir};
use crate::units::format_ns;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::SystemTime;

/// Where `{}` goes in the swept load.
pub const PLACEHOLDER: &str = "{}";

/// A validated sweep: the run arguments of every level, in order.
pub struct SweepPlan {
    pub template: String,
    pub levels: Vec<String>,
    /// `--out`; None: a default name, made unique when the sweep starts.
    pub out: Option<PathBuf>,
    /// The CPUs every level measures.
    pub cpus: Vec<usize>,
    pub runs: Vec<RunArgs>,
    /// The level's load text, per level.
    pub specs: Vec<String>,
}

/// Checks everything before the first run: the levels, the template, and every level's whole
/// run plan (a level that makes a bad load fails here, naming the level).
pub fn plan(args: &SweepArgs) -> Result<SweepPlan> {
    let levels: Vec<String> = args
        .levels
        .split(',')
        .map(|l| l.trim().to_string())
        .collect();
    for l in &levels {
        if l.is_empty()
            || !l
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        {
            return Err(Failure::usage(format!(
                "--levels {}: level '{l}' is empty or has characters other than letters, digits, '.', '_', '-'; give e.g. --levels 1,2,4,8",
                args.levels
            )));
        }
        if levels.iter().filter(|m| *m == l).count() > 1 {
            return Err(Failure::usage(format!(
                "--levels {}: level '{l}' is given twice; each level is one run",
                args.levels
            )));
        }
    }
    let swept: Vec<usize> = (0..args.run.load.len())
        .filter(|&i| args.run.load[i].contains(PLACEHOLDER))
        .collect();
    if swept.len() != 1 {
        return Err(Failure::usage(format!(
            "sweep: exactly one --load must hold {PLACEHOLDER} where each level goes (e.g. --load 'hackbench:groups={{}}'); {} do",
            swept.len()
        )));
    }
    if args.run.scenario.is_some() {
        return Err(Failure::usage(
            "sweep: --scenario cannot be swept; give the load to sweep with --load and its levels with --levels",
        ));
    }
    let template = args.run.load[swept[0]].clone();
    let mut runs = Vec::new();
    let mut specs = Vec::new();
    let mut cpus = Vec::new();
    for level in &levels {
        let mut run = args.run.clone();
        let spec = template.replace(PLACEHOLDER, level);
        run.load[swept[0]] = spec.clone();
        let resolved = crate::plan::resolve(&run).map_err(|f| Failure {
            code: f.code,
            message: format!("sweep level {level}: {}", f.message),
        })?;
        cpus = resolved.cpus;
        runs.push(run);
        specs.push(spec);
    }
    Ok(SweepPlan {
        template,
        levels,
        out: args.run.out.clone(),
        cpus,
        runs,
        specs,
    })
}

pub fn run(args: &SweepArgs, command_line: Vec<String>) -> Result<i32> {
    let mut plan = plan(args)?;
    // The sweep directory is made (new) before anything starts, like a run's, and removed again
    // if the first level is refused before it measures.
    let mut claim = Some(match &plan.out {
        Some(out) => ResultDir::create(out, "--out")?,
        None => {
            let mut p = dir::default_path(SystemTime::now(), &crate::system::host::hostname())
                .into_os_string();
            p.push("-sweep");
            ResultDir::create_unique(&PathBuf::from(p), "--out")?
        }
    });
    let sweep_dir = claim.as_ref().expect("made above").dir().clone();
    for (run, level) in plan.runs.iter_mut().zip(&plan.levels) {
        run.out = Some(sweep_dir.file(&format!("level-{level}")));
    }
    // Held across the levels, so that no other run takes the CPUs between two of them.
    let (_cpu_locks, lock_warnings) =
        crate::runner::cpulock::take(&plan.cpus, args.run.allow_shared_cpus)?;
    lock_warnings
        .iter()
        .for_each(|w| eprintln!("jitterlab: warning: {w}"));
    let mut record = SweepRecord {
        format: FORMAT,
        load_template: plan.template.clone(),
        levels: plan.levels.clone(),
        rows: Vec::new(),
    };
    let n = plan.levels.len();
    let started = std::time::Instant::now();
    let mut failed = false;
    for (k, level) in plan.levels.iter().enumerate() {
        let eta = if k > 0 {
            let per = started.elapsed().as_secs_f64() / k as f64;
            format!(
                ", about {} left",
                crate::units::format_elapsed(((n - k) as f64 * per * 1e9) as u64)
            )
        } else {
            String::new()
        };
        eprintln!(
            "sweep: level {level} ({}/{n}): {}{eta}",
            k + 1,
            plan.specs[k]
        );
        let outcome = crate::runner::run(&plan.runs[k], command_line.clone())?;
        // A level has measured: the sweep directory holds results and stays.
        if let Some(c) = claim.take() {
            c.keep();
        }
        let row = row(level, &plan.specs[k], &outcome.record);
        eprintln!("sweep: level {level} done: {}", row_summary(&row));
        record.rows.push(row);
        write(&sweep_dir, &record)?;
        match outcome.record.ended {
            Ended::Interrupted => {
                eprintln!(
                    "sweep: interrupted at level {level}; the levels done so far are in {}",
                    sweep_dir.path.display()
                );
                break;
            }
            Ended::Failed => failed = true,
            _ => {}
        }
    }
    if args.run.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&record).expect("sweep records serialise")
        );
    } else {
        print!("{}", table(&record));
        println!("Sweep: {}", sweep_dir.path.display());
    }
    Ok(if failed { ExitCode::Run as i32 } else { 0 })
}

fn row(level: &str, spec: &str, r: &RunRecord) -> SweepRow {
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

fn signed(v: Option<i64>) -> String {
    match v {
        Some(n) if n >= 0 => format_ns(n as u64),
        Some(n) => format!("-{}", format_ns(n.unsigned_abs())),
        None => "-".into(),
    }
}

fn row_summary(row: &SweepRow) -> String {
    let cpus: Vec<String> = row
        .threads
        .iter()
        .map(|t| {
            format!(
                "cpu{} p99 {} max {}",
                t.cpu,
                t.p99_ns.map_or("-".into(), format_ns),
                signed(t.max_ns)
            )
        })
        .collect();
    format!(
        "{}; {}",
        format_throughput(&row.throughput),
        cpus.join(", ")
    )
}

/// The summary on the terminal: one line per level.
fn table(record: &SweepRecord) -> String {
    let mut out = format!("jitterlab sweep: {}\n", record.load_template);
    for row in &record.rows {
        let _ = writeln!(out, "  level {:>6}: {}", row.level, row_summary(row));
    }
    out
}

/// Writes sweep.json and sweep.csv (after every level, so an interrupted sweep keeps its rows),
/// each replaced atomically and never through a link.
fn write(out: &ResultDir, record: &SweepRecord) -> Result<()> {
    let mut json = serde_json::to_vec_pretty(record).expect("sweep records serialise");
    json.push(b'\n');
    out.replace_file(FILE_NAME, &json)
        .or_run(|| format!("cannot write {}", out.file(FILE_NAME).display()))?;
    out.replace_file(CSV_FILE_NAME, csv(record).as_bytes())
        .or_run(|| format!("cannot write {}", out.file(CSV_FILE_NAME).display()))
}

/// One row per level: level, run_dir, the swept load's throughput (`name (unit)` columns, from
/// the first row), then per CPU `cpuN_samples, cpuN_min_ns, cpuN_p99_ns, cpuN_max_ns,
/// cpuN_missed_periods`. Empty cells for values a level lacks.
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
        for f in ["samples", "min_ns", "p99_ns", "max_ns", "missed_periods"] {
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
                }
                None => cells.extend(std::iter::repeat_n(String::new(), 5)),
            }
        }
        text += &(cells.join(",") + "\n");
    }
    text
}

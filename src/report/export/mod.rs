//! `jitterlab export`: a run in other shapes. One file per format: the sample log's formats
//! implement [`SampleExporter`] (streamed row by row), the whole-run formats (histogram data,
//! summary, CI formats, the `--summary-every` blocks) implement [`RunExporter`]. What the CI formats share: the budget judged
//! per CPU (`verdict`) and the measured system's facts (`system_facts`).
//!
//! What every exporter shares sits below the exporters, in leaf files: the two contracts and
//! what a sample exporter is told of the run (`exporter.rs`), and where an export is written
//! (`output.rs`: a file through the one writer, or standard output). This file holds the
//! [`FORMATS`] table, which names the exporters, and [`export`], which runs a row.

mod columns;
mod counters;
mod csv;
pub(crate) mod cyclictest_json;
mod exporter;
mod gnuplot;
mod json;
mod junit;
mod lava;
mod openmetrics;
mod output;
mod summaries;
pub(crate) mod system_facts;
pub mod verdict;

use exporter::{Pacing, RunExporter, SampleExporter, SampleRun};

use crate::analysis::budget::Budget;
use crate::error::{Failure, Result};
use crate::format::kind::RunKind;
use crate::format::samplelog;
use crate::results::ResultDir;
use crate::results::loaded::{self, LoadedRun};
use std::io::{self, Write};
use std::path::Path;

enum Exporter {
    Vocabulary(Box<dyn SampleExporter>),
    Run(Box<dyn RunExporter>),
}

/// What `export --budget` does with a format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetUse {
    /// The run is judged against the budget and the format writes the verdict.
    Verdict,
    /// Accepted, but the format has no place for a verdict (a histogram, cyclictest's layout).
    NoVerdict,
    /// Refused: the format writes this (samples, blocks), which no budget judges.
    Refused(&'static str),
}

/// An output format of `jitterlab export --format`: one row of [`FORMATS`]. What the command
/// accepts with it (`--budget`, `--per-phase`) is in the row, not in tests of its name.
pub struct ExportFormat {
    /// The value of `--format`.
    pub name: &'static str,
    /// What the format writes, one sentence: `export --help` lists it beside the name, and
    /// the user guide's export section names every format (`tests/offline/format_tables.rs`).
    pub help: &'static str,
    exporter: fn() -> Exporter,
    pub budget: BudgetUse,
    /// `--per-phase`: writes a scenario run's per-phase form, where the format has one.
    per_phase: Option<WriteRun>,
    /// `--latency-range`: writes the run with its plot's latency axis zoomed, where the format
    /// draws one.
    zoomed: Option<WriteZoomed>,
}

/// Writes a whole run to `-o` as given, its latency axis on the range.
type WriteZoomed = fn(&LoadedRun, Option<&Path>, &crate::report::plot::zoom::Range) -> Result<()>;

/// Writes a whole run to `-o` as given (None: the format's default).
type WriteRun = fn(&LoadedRun, Option<&Path>) -> Result<()>;

/// Every export format, in the order `--help` lists them. A new format is one file here and
/// one row.
pub const FORMATS: &[ExportFormat] = &[
    ExportFormat {
        name: "csv",
        help: "one row per sample, the units in the header, with each wakeup's sleep start and wake time (reads samples.bin: the run needs --samples)",
        exporter: || Exporter::Vocabulary(Box::new(csv::Csv::default())),
        budget: BudgetUse::Refused("samples"),
        per_phase: None,
        zoomed: None,
    },
    ExportFormat {
        name: "columns",
        help: "`time_s latency_us irq_latency_us cpu` columns of every sample (reads samples.bin)",
        exporter: || Exporter::Vocabulary(Box::new(columns::Columns)),
        budget: BudgetUse::Refused("samples"),
        per_phase: None,
        zoomed: None,
    },
    ExportFormat {
        name: "gnuplot",
        help: "histogram data (1 us bins, one column per CPU) and a ready .gp script",
        exporter: || Exporter::Run(Box::new(gnuplot::Gnuplot)),
        budget: BudgetUse::NoVerdict,
        per_phase: Some(gnuplot::write_per_phase),
        zoomed: Some(gnuplot::write_zoomed),
    },
    ExportFormat {
        name: "json",
        help: "the run's summary (per-CPU figures and budget verdict) on one line",
        exporter: || Exporter::Run(Box::new(json::Json)),
        budget: BudgetUse::Verdict,
        per_phase: None,
        zoomed: None,
    },
    ExportFormat {
        name: "junit",
        help: "JUnit XML, one test case per budget clause and CPU (without a budget: per CPU, completed without missed periods or dropped records)",
        exporter: || Exporter::Run(Box::new(junit::Junit)),
        budget: BudgetUse::Verdict,
        per_phase: None,
        zoomed: None,
    },
    ExportFormat {
        name: "lava",
        help: "`name result measurement units` lines for LAVA's test results",
        exporter: || Exporter::Run(Box::new(lava::Lava)),
        budget: BudgetUse::Verdict,
        per_phase: None,
        zoomed: None,
    },
    ExportFormat {
        name: "cyclictest-json",
        help: "the layout of `cyclictest --json`",
        exporter: || Exporter::Run(Box::new(cyclictest_json::CyclictestJson)),
        budget: BudgetUse::NoVerdict,
        per_phase: None,
        zoomed: None,
    },
    ExportFormat {
        name: "prometheus",
        help: "the metrics in the Prometheus text format 0.0.4, for node_exporter's textfile collector",
        exporter: || {
            Exporter::Run(Box::new(openmetrics::Metrics(
                crate::report::openmetrics::Syntax::Prometheus,
            )))
        },
        budget: BudgetUse::Verdict,
        per_phase: None,
        zoomed: None,
    },
    ExportFormat {
        name: "openmetrics",
        help: "the same metrics in OpenMetrics text 1.0.0",
        exporter: || {
            Exporter::Run(Box::new(openmetrics::Metrics(
                crate::report::openmetrics::Syntax::OpenMetrics,
            )))
        },
        budget: BudgetUse::Verdict,
        per_phase: None,
        zoomed: None,
    },
    ExportFormat {
        name: "counters",
        help: "counters.log as CSV, `time_s,cpu,counter,value`, one row per interval, CPU and counter",
        exporter: || Exporter::Run(Box::new(counters::Counters)),
        budget: BudgetUse::Refused("the context counters"),
        per_phase: None,
        zoomed: None,
    },
    ExportFormat {
        name: "summaries",
        help: "the min, mean and max of every block of a `run --summary-every N`, as CSV",
        exporter: || Exporter::Run(Box::new(summaries::Summaries)),
        budget: BudgetUse::Refused("the blocks of --summary-every"),
        per_phase: None,
        zoomed: None,
    },
];

impl ExportFormat {
    /// The row of [`FORMATS`] with this name.
    pub fn named(name: &str) -> Option<&'static ExportFormat> {
        FORMATS.iter().find(|f| f.name == name)
    }
}

/// The names of the formats that `keep`, as a sentence: `json, junit, lava or openmetrics`.
fn names_where(keep: impl Fn(&ExportFormat) -> bool) -> String {
    let names: Vec<&str> = FORMATS.iter().filter(|f| keep(f)).map(|f| f.name).collect();
    match names.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

impl std::fmt::Debug for ExportFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// Exports `run_dir` in `format` to `output` (stdout when None, for the formats of one file).
/// `budget` (`--budget`) replaces the run's stored budget verdict for the whole-run formats:
/// the run is judged against it as `run --budget` would have judged it.
///
/// `per_phase` (`--per-phase`, gnuplot only) writes a scenario run's per-phase distributions.
///
/// `cpus` (`--cpus`, the sample formats only) keeps the samples of these CPUs;
/// `latency_range` (`--latency-range`, gnuplot's histogram) sets the plot's latency axis.
pub fn export(
    run_dir: &Path,
    format: &ExportFormat,
    output: Option<&Path>,
    budget: Option<&str>,
    per_phase: bool,
    cpus: Option<&str>,
    latency_range: Option<&str>,
) -> Result<()> {
    // Before anything is read or written: `-o RUN/run.json` would destroy the run.
    if let Some(o) = output {
        crate::results::dir::check_output_file(o, "-o", &[run_dir])?;
    }
    if latency_range.is_some() {
        let range = crate::report::plot::zoom::Range::parse(latency_range, "--latency-range", 1.0)
            .map_err(Failure::usage)?;
        let (Some(write_zoomed), false, None) = (format.zoomed, per_phase, budget) else {
            return Err(Failure::usage(format!(
                "--latency-range zooms the histogram plot of --format {} (without --per-phase or --budget), not --format {}{}",
                names_where(|f| f.zoomed.is_some()),
                format.name,
                if per_phase { " --per-phase" } else { "" }
            )));
        };
        let mut run = loaded::load(run_dir).map_err(Failure::usage)?;
        crate::session::stale::note_owner(&mut run.record, &run.path);
        return write_zoomed(&run, output, &range);
    }
    if per_phase {
        let Some(write_per_phase) = format.per_phase else {
            return Err(Failure::usage(format!(
                "--per-phase is for --format {} (per-phase distributions), not --format {}",
                names_where(|f| f.per_phase.is_some()),
                format.name
            )));
        };
        if budget.is_some() {
            return Err(Failure::usage(
                "--budget judges a run's summary; --per-phase writes distributions, which no budget judges",
            ));
        }
        let mut run = loaded::load(run_dir).map_err(Failure::usage)?;
        crate::session::stale::note_owner(&mut run.record, &run.path);
        return write_per_phase(&run, output);
    }
    if let (BudgetUse::Refused(what), Some(_)) = (format.budget, budget) {
        return Err(Failure::usage(format!(
            "--budget judges a run's summary; --format {} writes {what}, which no budget judges. Use --budget with {}",
            format.name,
            names_where(|f| f.budget == BudgetUse::Verdict)
        )));
    }
    let budget = Budget::from_option(budget)?;
    let exporter = (format.exporter)();
    let cpus = match (cpus, &exporter) {
        (None, _) => None,
        (Some(list), Exporter::Vocabulary(_)) => Some(
            crate::cpulist::parse_cpu_list(list)
                .map_err(|e| Failure::usage(format!("--cpus {list}: {e}")))?,
        ),
        (Some(_), Exporter::Run(_)) => {
            return Err(Failure::usage(format!(
                "--cpus keeps some CPUs' samples, for --format {}; --format {} writes the whole run (every CPU)",
                names_where(|f| matches!((f.exporter)(), Exporter::Vocabulary(_))),
                format.name
            )));
        }
    };
    match exporter {
        Exporter::Vocabulary(e) => export_samples(run_dir, e, output, cpus.as_deref()),
        Exporter::Run(e) => {
            let mut run = loaded::load(run_dir).map_err(Failure::usage)?;
            crate::session::stale::note_owner(&mut run.record, &run.path);
            if let Some(b) = budget {
                run.record.budget = Some(b.evaluate(&run.record));
            }
            e.write(&run, output)
        }
    }
}

/// Streams the sample log of `run_dir` through a sample exporter; `cpus`: only these CPUs'
/// samples.
fn export_samples(
    run_dir: &Path,
    mut exporter: Box<dyn SampleExporter>,
    output: Option<&Path>,
    cpus: Option<&[usize]>,
) -> Result<()> {
    ResultDir::open(run_dir).map_err(Failure::usage)?;
    let Some(mut reader) = loaded::sample_log(run_dir).map_err(Failure::usage)? else {
        return Err(Failure::usage(format!(
            "{} has no sample log ({}): the run was made without --samples; run again with --samples to keep every sample",
            run_dir.display(),
            samplelog::FILE_NAME
        )));
    };
    // The column names and the sleep-start and wake-time columns depend on it: a run.json
    // that cannot be read is reported by the commands that need its figures, not here (those
    // columns are then empty).
    let run = loaded::open(run_dir).map_or_else(
        |_| SampleRun {
            kind: RunKind::default(),
            pacing: None,
        },
        |mut r| {
            crate::session::stale::note_owner(&mut r.record, &r.path);
            SampleRun {
                kind: r.record.kind,
                pacing: Some(Pacing::of(&r.record)),
            }
        },
    );
    // A CPU the run did not measure is a mistake in the list, said before anything is written.
    if let (Some(cpus), Some(pacing)) = (cpus, &run.pacing) {
        let measured: Vec<usize> = pacing.interval_ns.keys().map(|&c| c as usize).collect();
        if let Some(c) = cpus.iter().find(|c| !measured.contains(c)) {
            return Err(Failure::usage(format!(
                "--cpus names CPU {c}, which {} did not measure (its CPUs: {}); name some of those",
                run_dir.display(),
                crate::cpulist::format_cpu_list(&measured)
            )));
        }
    }
    // Times count from the run's start, the due time of the first wakeups.
    let start_ns = reader.header.start_ns;
    // Streamed record by record: a day-long sample log does not fit in memory.
    let mut write_all = |out: &mut dyn Write| -> io::Result<()> {
        exporter.header(out, &run)?;
        for sample in reader.by_ref() {
            let sample = sample?;
            if cpus.is_some_and(|c| !c.contains(&(sample.cpu as usize))) {
                continue;
            }
            exporter.row(out, &sample, start_ns)?;
        }
        out.flush()?;
        // A log cut by a kill or a full disk is exported up to the cut, and the cut named.
        if let Some(damage) = reader.damage() {
            eprintln!("jitterlab: warning: {damage}");
        }
        Ok(())
    };
    output::write_streamed(output, |out| write_all(out))
}

//! `jitterlab report`: one self-contained HTML file (CSS and SVG plots inline, no script, no
//! fetch of anything) for one or more result directories, and with `--plots DIR` every plot as
//! SVG and PNG. The steps: check every argument (bad input exits 2 before any work), read each
//! run in one streaming pass ([`crate::report::digest`]), prepare and draw the figures
//! ([`crate::report::plot`]), assemble the page (`page`), write the files. The page's sections
//! (`compare`, `run`, `sweep`, ...) take what they share from a leaf, `blocks` (a figure, a
//! key-value table, a run's label), so the files read top to bottom: this file -> `page` ->
//! the sections -> `blocks`.

mod blocks;
mod causes;
mod compare;
mod page;
mod run;
mod stacks;
mod sweep;
mod tails;
mod warnings;

use crate::analysis::budget::{self, Budget};
use crate::error::{ExitCode, Failure, OrFailure, Result};
use crate::format::run_record::FILE_NAME as RUN_JSON;
use crate::report::digest::{self, RunDigest};
use crate::report::plot::zoom::{self, Zoom};
use crate::report::plot::{
    Distribution, Figure, exceedance, heatmap, histogram, phase_pdf, timeline,
};
use crate::report::png::PngRenderer;
use crate::results::dir;
use crate::results::sweep::{FILE_NAME as SWEEP_JSON, SweepRecord};
use blocks::run_label;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use page::Input;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

/// What one RUN_DIR argument turned out to be.
enum Kind {
    Run,
    Sweep,
    Tune,
}

/// What `jitterlab report` is asked for: the inputs and where the report goes.
pub struct ReportRequest<'a> {
    /// Result directories of runs or of sweeps.
    pub(crate) run_dirs: &'a [PathBuf],
    /// The HTML file (overwritten).
    pub output: &'a Path,
    /// Where every plot also goes as SVG and PNG, when asked.
    pub plots: Option<&'a Path>,
    /// A budget expression, as given, judged in place of each run's stored verdict.
    pub budget: Option<&'a str>,
    /// `--latency-range` and `--time-range`: every plot's latency and time axes.
    pub zoom: Zoom,
}

/// Writes the report; returns the exit code (1 when a run fails the budget).
pub fn write(request: &ReportRequest) -> Result<i32> {
    // Every argument is checked before anything is read or written, output paths included
    // (`-o RUN/run.json` would destroy the run).
    let kinds: Vec<Kind> = request
        .run_dirs
        .iter()
        .map(|p| classify(p))
        .collect::<Result<_>>()?;
    let input_paths: Vec<&Path> = request.run_dirs.iter().map(|p| p.as_path()).collect();
    // Claimed: checked, and its directory opened now (the file is written there at the end).
    let output = dir::OutputFile::claim(request.output, "-o", &input_paths)?;
    if let Some(plots) = request.plots {
        dir::check_output_dir(plots, "--plots", &input_paths)?;
    }

    let budget = Budget::from_option(request.budget)?;
    let (inputs, budget_failed) = read_inputs(request, &kinds, budget.as_ref())?;
    let runs: Vec<&RunDigest> = inputs
        .iter()
        .filter_map(|i| match i {
            Input::Run { digest, .. } => Some(digest.as_ref()),
            _ => None,
        })
        .collect();
    let comparable = comparable(&runs);
    let overlays = if runs.len() >= 2 && comparable.is_ok() {
        overlay_figures(&runs, &request.zoom)
    } else {
        Vec::new()
    };
    let sweeps: Vec<(String, &SweepRecord)> = inputs
        .iter()
        .filter_map(|i| match i {
            Input::Sweep { path, record, .. } => Some((path, record)),
            _ => None,
        })
        .enumerate()
        .map(|(k, (path, record))| (sweep_label(k, path), record))
        .collect();
    let sweep_overlays = if sweeps.len() >= 2 {
        sweep::overlay_figures(&sweeps, &request.zoom.latency)
    } else {
        Vec::new()
    };
    let html = page::render(&inputs, &runs, &comparable, &overlays, &sweep_overlays);
    // The plot directory first: if it cannot be made, nothing has been written.
    let plots = request
        .plots
        .map(|p| dir::OutputDir::open_or_make(p, "--plots"))
        .transpose()?;
    let all: Vec<&Figure> = inputs
        .iter()
        .flat_map(|i| match i {
            Input::Run { figures, .. }
            | Input::Sweep { figures, .. }
            | Input::Tune { figures, .. } => figures.iter(),
        })
        .chain(overlays.iter())
        .chain(sweep_overlays.iter())
        .collect();
    // Each plot's name by the writer's rule, as `-o`'s (issue 39 L4-e), before anything is
    // written.
    if let Some(dir) = &plots {
        let names: Vec<String> = all
            .iter()
            .flat_map(|f| [format!("{}.svg", f.name), format!("{}.png", f.name)])
            .collect();
        dir.check_names("--plots", names.iter().map(String::as_str))?;
    }
    output
        .write(|w| w.write_all(html.as_bytes()))
        // The path was checked before: what fails now is the disk (exit 4, as the exports').
        .or_run(|| format!("cannot write the report to {}", request.output.display()))?;
    if let Some(dir) = plots {
        write_plots(&dir, &all)?;
    }
    eprintln!("jitterlab: report written to {}", request.output.display());
    Ok(if budget_failed {
        ExitCode::CheckFailed as i32
    } else {
        0
    })
}

/// Reads every run and sweep with its figures, each run judged against `budget` (its verdict
/// printed and put in place of the stored one); returns them and whether a run failed.
fn read_inputs(
    request: &ReportRequest,
    kinds: &[Kind],
    budget: Option<&Budget>,
) -> Result<(Vec<Input>, bool)> {
    let mut inputs = Vec::new();
    let mut budget_failed = false;
    let mut run_number = 0;
    let mut sweep_number = 0;
    let mut tune_number = 0;
    for (path, kind) in request.run_dirs.iter().zip(kinds) {
        match kind {
            Kind::Run => {
                run_number += 1;
                let mut digest = read_with_progress(path, run_number)?;
                if let Some(budget) = budget {
                    let verdict = budget.evaluate(&digest.record);
                    crate::stdout::line(&format!(
                        "{}: budget {}",
                        path.display(),
                        verdict.expression
                    ))?;
                    for line in budget::verdict_lines(&verdict) {
                        crate::stdout::line(&format!("  {line}"))?;
                    }
                    budget_failed |= !verdict.passed;
                    digest.record.budget = Some(verdict);
                }
                // A run without intervals over time (an imported histogram of the whole run)
                // has nothing a time range zooms: said, not refused, since the other runs of
                // the report may be zoomed (seventh hostile re-run, L7-f: nothing was said).
                if request.zoom.time.is_set() && !has_time_series(&digest) {
                    eprintln!(
                        "jitterlab: note: --time-range does not apply to {}: it has no intervals over time (an imported histogram of the whole run, or a run that completed none), so its figures are of the whole run",
                        path.display()
                    );
                }
                let figures = run_figures(&format!("run{run_number}"), &digest, &request.zoom);
                inputs.push(Input::Run {
                    digest: Box::new(digest),
                    figures,
                });
            }
            Kind::Sweep => {
                sweep_number += 1;
                let record = crate::results::sweep::read(path)?;
                let figures = sweep::figures(
                    &format!("sweep{sweep_number}"),
                    &record,
                    &request.zoom.latency,
                );
                inputs.push(Input::Sweep {
                    path: path.clone(),
                    record,
                    figures,
                });
            }
            Kind::Tune => {
                tune_number += 1;
                let record = crate::report::tune::read(path)?;
                let figures = crate::report::tune::figures(&format!("tune{tune_number}"), &record);
                inputs.push(Input::Tune {
                    path: path.clone(),
                    record: Box::new(record),
                    figures,
                });
            }
        }
    }
    Ok((inputs, budget_failed))
}

fn classify(path: &Path) -> Result<Kind> {
    if path.join(RUN_JSON).is_file() {
        Ok(Kind::Run)
    } else if path.join(SWEEP_JSON).is_file() {
        Ok(Kind::Sweep)
    } else if crate::report::tune::is_tune_dir(path) {
        Ok(Kind::Tune)
    } else if !path.exists() {
        Err(Failure::usage(format!(
            "{}: no such directory; pass result directories written by jitterlab run or jitterlab sweep",
            path.display()
        )))
    } else {
        Err(Failure::usage(format!(
            "{} is not a jitterlab result directory (no {RUN_JSON}) nor a sweep directory (no {SWEEP_JSON}); pass the directory a run or a sweep wrote, e.g. jitterlab-results/<time>-<host>",
            path.display()
        )))
    }
}

/// A progress bar on stderr, drawn only when stderr is a terminal.
fn progress_bar(len: u64, message: String) -> ProgressBar {
    let target = if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let bar = ProgressBar::with_draw_target(Some(len), target);
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:30}] {percent}% ({elapsed})")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar.set_message(message);
    bar
}

fn read_with_progress(path: &Path, number: usize) -> Result<RunDigest> {
    let bar = progress_bar(1, format!("reading run {number} ({})", path.display()));
    let result = digest::read_run(path, &|done, total| {
        bar.set_length(total.max(1));
        bar.set_position(done);
    });
    bar.finish_and_clear();
    result.map_err(Failure::usage)
}

/// The distributions of a run: each CPU's wakeup latency, then its timer IRQ latency when
/// traced. Wakeup series carry run.json's exact max.
fn distributions(run: &RunDigest) -> Vec<Distribution<'_>> {
    run.series
        .iter()
        .map(|s| Distribution {
            label: s.label.clone(),
            histogram: &s.histogram,
            exact_max_ns: if s.irq {
                None
            } else {
                run.record
                    .threads
                    .iter()
                    .find(|t| Some(t.cpu) == s.cpu)
                    .and_then(|t| t.latency.max_ns)
            },
            secondary: s.irq,
            // The timer IRQ series has the source's `irq` column's overflows (X3).
            overflow_from_ns: match (s.cpu, &run.record.imported) {
                (Some(cpu), Some(i)) => i.overflow_from(cpu, if s.irq { "irq" } else { "latency" }),
                _ => None,
            },
        })
        .collect()
}

/// Whether the run's hlog has per-interval data (an import may hold one interval only).
fn has_time_series(run: &RunDigest) -> bool {
    run.record.imported.as_ref().is_none_or(|i| i.per_interval)
        && run.series.iter().any(|s| !s.intervals.is_empty())
}

/// The figures of one run, named `<prefix>-<kind>`, on the axes of `zoom`.
fn run_figures(prefix: &str, run: &RunDigest, zoom: &Zoom) -> Vec<Figure> {
    let mut out = Vec::new();
    // What a sample is: a wakeup's latency, or a noise run's gap.
    let samples = *run.record.kind.words();
    let word = samples.title;
    let dists = distributions(run);
    // What the latency range cuts off each distribution (histogram, exceedance).
    let cut = zoom::distribution_notes(&dists, &zoom.latency, samples.plural);
    if dists.iter().any(|d| !d.histogram.is_empty()) {
        out.push(histogram::draw_zoomed(
            &format!("{prefix}-histogram"),
            &format!("{word} histogram"),
            &histogram::prepare(&dists),
            samples,
            &zoom.latency,
            &cut,
        ));
    }
    if has_time_series(run) {
        // Wakeup latency, and the timer IRQ latency when the run was traced.
        let series: Vec<_> = run.series.iter().collect();
        // The worst explanations the report keeps (events_digest): all of a run's but a
        // very long one's, whose legend then says how many of all.
        let markers = run
            .events
            .explained
            .iter()
            .map(|x| timeline::Marker {
                time_s: x.due_ns.saturating_sub(run.record.start_monotonic_ns) as f64 / 1e9,
                latency_ns: x.latency_ns.max(1) as u64,
                text: format!("CPU {}: {}", x.cpu, x.verdict),
            })
            .collect();
        let mut data = timeline::prepare(&series, run.extent_s(), run.phase_spans(), markers);
        if run.events.explained_cut() {
            data.markers_of = Some(run.events.causes.all);
        }
        out.push(timeline::draw_zoomed(
            &format!("{prefix}-timeline"),
            &format!("{word} over time: max and p99 of each interval"),
            &data,
            samples,
            zoom,
        ));
        // Beneath it, on the same time axis: the context counters that moved.
        out.extend(crate::report::counters::figures(prefix, run, &zoom.time));
    }
    // Beside it, from `--samples`: every wakeup's latency over time, per CPU.
    out.extend(sample_figures(prefix, run, zoom));
    if let Some(figure) = noise_timeline_figure(prefix, run) {
        out.push(figure);
    }
    if dists.iter().any(|d| !d.histogram.is_empty()) {
        out.push(exceedance::draw_zoomed(
            &format!("{prefix}-exceedance"),
            &format!(
                "Exceedance: share of {} {} than x",
                samples.plural, samples.exceeds
            ),
            &exceedance::prepare(&dists),
            samples,
            &zoom.latency,
            &cut,
        ));
    }
    let phases = run.phase_spans();
    if has_time_series(run) && !phases.is_empty() {
        for s in run.wakeup_series().filter(|s| !s.intervals.is_empty()) {
            let suffix = s.cpu.map_or_else(|| s.tag.clone(), |c| format!("cpu{c}"));
            out.push(phase_pdf::draw_zoomed(
                &format!("{prefix}-phases-{suffix}"),
                &format!("{word} distribution per phase, {}", s.label),
                &phase_pdf::prepare(s, &phases),
                samples,
                &zoom.latency,
            ));
        }
    }
    if has_time_series(run) {
        for s in run.wakeup_series().filter(|s| !s.intervals.is_empty()) {
            let suffix = s.cpu.map_or_else(|| s.tag.clone(), |c| format!("cpu{c}"));
            out.push(heatmap::draw_zoomed(
                &format!("{prefix}-heatmap-{suffix}"),
                &format!("Heat map of {}'s interval histograms", s.label),
                &heatmap::prepare(s, run.extent_s()),
                &phases,
                samples,
                zoom,
            ));
        }
    }
    out
}

/// Every latency over time (`runN-samples-cpuC`), one plot per CPU, from samples.bin when the
/// run kept it (`--samples`) and its samples are wakeups (a noise run's gaps are drawn by its
/// noise timeline). A sample log that cannot be read is named on stderr and drawn up to where
/// it could be read, as `export` does.
fn sample_figures(prefix: &str, run: &RunDigest, zoom: &Zoom) -> Vec<Figure> {
    use crate::report::plot::scatter;
    if !run.record.kind.spec().periodic {
        return Vec::new();
    }
    let mut reader = match crate::results::loaded::sample_log(&run.path) {
        Ok(Some(r)) => r,
        Ok(None) => return Vec::new(),
        Err(e) => {
            eprintln!(
                "jitterlab: warning: {}: the sample log cannot be read ({e}); the report has no per-sample plots",
                run.path.display()
            );
            return Vec::new();
        }
    };
    let start_ns = reader.header.start_ns;
    let scatters = scatter::prepare(reader.by_ref(), start_ns, run.extent_s(), zoom);
    if let Some(damage) = reader.damage() {
        eprintln!("jitterlab: warning: {}: {damage}", run.path.display());
    }
    let scatters = match scatters {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "jitterlab: warning: {}: reading the sample log failed ({e}); the report has no per-sample plots",
                run.path.display()
            );
            return Vec::new();
        }
    };
    let samples = *run.record.kind.words();
    let phases = run.phase_spans();
    scatters
        .iter()
        .map(|s| {
            scatter::draw(
                &format!("{prefix}-samples-cpu{}", s.cpu),
                &format!("Every {} over time, CPU {}", samples.sample_value, s.cpu),
                s,
                &phases,
                samples,
                zoom,
            )
        })
        .collect()
}

/// A noise run's share of each CPU over time, from its `noise_interval` events (runs written
/// before them, and imports, have none: no figure), reduced as they were read.
fn noise_timeline_figure(prefix: &str, run: &RunDigest) -> Option<Figure> {
    let mut data = run.events.noise.clone()?;
    data.phases = run.phase_spans();
    Some(crate::report::plot::noise_timeline::draw(
        &format!("{prefix}-noise-timeline"),
        "Noise over time: share of each CPU per interval",
        &data,
    ))
}

/// The name of sweep `k` (from 0) in overlays: its letter, as compare names runs, and its
/// directory's name (`A: with-rt`).
fn sweep_label(k: usize, path: &Path) -> String {
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    format!("{}: {name}", crate::analysis::compare::label(k))
}

/// Whether the runs can be compared and overlaid: Err with why not when they are of two
/// kinds (a noise run's gaps are not wakeup latencies; `jitterlab compare` refuses the pair
/// for the same reason). Each run is still reported on its own.
fn comparable(runs: &[&RunDigest]) -> std::result::Result<(), String> {
    let Some(first) = runs.first() else {
        return Ok(());
    };
    match runs.iter().position(|r| r.record.kind != first.record.kind) {
        None => Ok(()),
        Some(k) => Err(format!(
            "The runs are not compared or overlaid: {} is {}, {} is {}; they measure different things (as `jitterlab compare` says when it refuses them). Each run is reported on its own below; report the {} runs and the {} runs apart to compare each kind.",
            run_label(0, first),
            first.record.kind.words().run,
            run_label(k, runs[k]),
            runs[k].record.kind.words().run,
            first.record.kind.name(),
            runs[k].record.kind.name(),
        )),
    }
}

fn overlay_figures(runs: &[&RunDigest], zoom: &Zoom) -> Vec<Figure> {
    let merged: Vec<_> = runs.iter().map(|r| r.all_cpus_histogram()).collect();
    let dists: Vec<Distribution> = runs
        .iter()
        .zip(&merged)
        .enumerate()
        .map(|(i, (r, h))| Distribution {
            label: run_label(i, r),
            histogram: h,
            exact_max_ns: r
                .record
                .threads
                .iter()
                .filter_map(|t| t.latency.max_ns)
                .max(),
            secondary: false,
            overflow_from_ns: r.record.imported.as_ref().and_then(|i| {
                r.record
                    .threads
                    .iter()
                    .filter_map(|t| i.latency_overflow_from(t.cpu))
                    .min()
            }),
        })
        .collect();
    // Runs overlaid are of one kind (`comparable`); the first one's names the axes.
    let kind = runs
        .first()
        .map_or_else(Default::default, |r| r.record.kind);
    let samples = *kind.words();
    // The value's name, capitalised: "Latency", "Gap length".
    let mut value = samples.value.chars();
    let value: String = value
        .next()
        .map(|c| c.to_uppercase().chain(value).collect())
        .unwrap_or_default();
    let histograms = format!("{value} histograms of every run (all CPUs)");
    let cut = zoom::distribution_notes(&dists, &zoom.latency, samples.plural);
    let mut out = vec![
        histogram::draw_zoomed(
            "overlay-histogram",
            &histograms,
            &histogram::prepare(&dists),
            samples,
            &zoom.latency,
            &cut,
        ),
        exceedance::draw_zoomed(
            "overlay-exceedance",
            "Exceedance of every run (all CPUs)",
            &exceedance::prepare(&dists),
            samples,
            &zoom.latency,
            &cut,
        ),
    ];
    // Runs of different lengths on one graph: each bin the share of its run's wakeups.
    out.push(histogram::draw_shares(
        "overlay-histogram-share",
        &format!(
            "{value} histograms of every run, as shares of its {} (all CPUs)",
            samples.plural
        ),
        &histogram::prepare(&dists),
        samples,
        &zoom.latency,
        &cut,
    ));
    out.extend(overlay_timeline(runs, zoom, samples));
    out.extend(overlay_phases(runs, samples, zoom));
    out
}

/// Every run's latency over time on one plot, each from its own start: per run the largest
/// max and p99 over its CPUs at each point of its own timeline (`timeline::prepare`).
fn overlay_timeline(
    runs: &[&RunDigest],
    zoom: &Zoom,
    samples: crate::format::kind::Vocabulary,
) -> Option<Figure> {
    if !runs.iter().all(|r| has_time_series(r)) {
        return None;
    }
    let mut tracks = Vec::new();
    let mut extent_s = 0.0f64;
    let mut covers = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        let series: Vec<_> = run
            .wakeup_series()
            .filter(|s| !s.intervals.is_empty())
            .collect();
        let t = timeline::prepare(&series, run.extent_s(), Vec::new(), Vec::new());
        extent_s = extent_s.max(t.extent_s);
        // The CPUs' points share the run's time grid: the largest of each at each time.
        let mut at: std::collections::BTreeMap<u64, timeline::Point> = Default::default();
        for p in t.tracks.iter().flat_map(|tr| tr.points.iter()) {
            at.entry(p.time_s.to_bits())
                .and_modify(|q| {
                    q.max_ns = q.max_ns.max(p.max_ns);
                    q.p99_ns = q.p99_ns.max(p.p99_ns);
                    q.after_gap |= p.after_gap;
                })
                .or_insert(*p);
        }
        let mut points: Vec<timeline::Point> = at.into_values().collect();
        points.sort_by(|a, b| a.time_s.total_cmp(&b.time_s));
        let worst = t
            .tracks
            .iter()
            .filter_map(|tr| tr.worst)
            .max_by_key(|w| w.1);
        let label = run_label(i, run);
        covers.push(match t.column_s {
            None => format!("{label}: one point per interval"),
            Some(w) => format!(
                "{label}: each point covers {}",
                crate::units::format_elapsed((w * 1e9) as u64)
            ),
        });
        tracks.push(timeline::Track {
            label,
            irq: false,
            style_index: i,
            points,
            worst,
        });
    }
    let data = timeline::Timeline {
        extent_s,
        tracks,
        phases: Vec::new(),
        markers: Vec::new(),
        markers_of: None,
        column_s: None,
    };
    let mut f = timeline::draw_zoomed(
        "overlay-timeline",
        &format!(
            "{} over time of every run, from each run's start: the largest max and p99 over its CPUs",
            samples.title
        ),
        &data,
        samples,
        zoom,
    );
    // What a point is differs from run to run.
    f.statements[0] = format!(
        "Each run's time counts from its own start. Per run, each point is the largest max (solid) and p99 (dashed) over its CPUs: {}.",
        covers.join("; ")
    );
    Some(f)
}

/// One scenario phase across runs (the OCERA study's Fig. 7 over Fig. 8): for each phase name
/// that every run has, the distribution of that phase's wakeups in each run (all its CPUs),
/// as shares so that phases of different length compare. Named `overlay-phase-<name>`.
fn overlay_phases(
    runs: &[&RunDigest],
    samples: crate::format::kind::Vocabulary,
    zoom: &Zoom,
) -> Vec<Figure> {
    let spans: Vec<Vec<(String, f64, f64)>> = runs.iter().map(|r| r.phase_spans()).collect();
    let Some(first) = spans.first() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut named: Vec<&str> = Vec::new();
    for (label, _, _) in first {
        if named.contains(&label.as_str())
            || !spans.iter().all(|s| s.iter().any(|p| &p.0 == label))
            || !runs.iter().all(|r| has_time_series(r))
        {
            continue;
        }
        named.push(label);
        let pdfs: Vec<phase_pdf::PhasePdf> = runs
            .iter()
            .zip(&spans)
            .enumerate()
            .map(|(i, (run, spans))| {
                // A phase named twice in a run: its first span.
                let (_, from, to) = spans.iter().find(|p| &p.0 == label).expect("checked");
                let series: Vec<_> = run.wakeup_series().collect();
                phase_pdf::merged(&series, &run_label(i, run), *from, *to)
            })
            .collect();
        let slug: String = label
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .collect();
        out.push(phase_pdf::draw_zoomed(
            &format!("overlay-phase-{slug}"),
            &format!(
                "{} distribution of phase {label} in every run (all CPUs)",
                samples.title
            ),
            &pdfs,
            samples,
            &zoom.latency,
        ));
    }
    out
}

/// Writes `<name>.svg` and `<name>.png` for every figure.
fn write_plots(dir: &dir::OutputDir, figures: &[&Figure]) -> Result<()> {
    let renderer = PngRenderer::new();
    if !renderer.has_fonts {
        eprintln!(
            "jitterlab: warning: no system fonts found; the PNG plots have no text (install fonts-dejavu-core)"
        );
    }
    let bar = progress_bar(
        figures.len() as u64,
        format!("writing plots to {}", dir.path.display()),
    );
    for f in figures {
        let svg = format!("{}.svg", f.name);
        dir.write(&svg, f.svg.as_bytes())
            .or_run(|| format!("writing {}", dir.path.join(&svg).display()))?;
        let png = renderer
            .render(&f.svg)
            .map_err(|e| Failure::run(format!("cannot render {} as PNG: {e}", f.name)))?;
        let png_name = format!("{}.png", f.name);
        dir.write(&png_name, &png)
            .or_run(|| format!("writing {}", dir.path.join(&png_name).display()))?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(())
}

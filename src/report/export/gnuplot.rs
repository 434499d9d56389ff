//! `--format gnuplot`: the latency histogram of every CPU as a data file (one row per bin, one
//! column per CPU) and a ready gnuplot script that plots it the OSADL way: log count axis,
//! latency in us, one series per CPU. `-o NAME` writes NAME.dat and NAME.gp (a .dat or .gp
//! suffix on NAME is dropped); the default NAME is `<run directory name>-histogram` in the
//! current directory.
//!
//! `--per-phase` writes the distributions of a scenario run's phases instead: one data block
//! per phase, each CPU's column normalised to the share of that phase's wakeups, so phases of
//! different length compare (the OCERA study's per-phase PDFs), in bins of 1/10 decade on a
//! log latency axis (the HTML report's per-phase plot's bins).
//!
//! The worst case is visible in both: a bin holding one wakeup far out in the tail is drawn
//! (impulses from the bottom of the log count axis; points on the per-phase lines, which
//! break at empty bins instead of dropping to a log axis's undefined 0), the latency axis
//! reaches past the largest value, and the histogram marks each CPU's maximum.

use super::exporter::RunExporter;
use super::output::write_text;
use crate::analysis::phase;
use crate::error::{Failure, Result};
use crate::format::hlog::is_cpu_tag;
use crate::format::hlog_scan::add_counts;
use crate::format::stats::new_histogram;
use crate::report::digest::{row_floor_ns, row_of};
use crate::report::plot::zoom::{self, Range};
use crate::results::loaded::LoadedRun;
use crate::units::format_ns;
use hdrhistogram::Histogram;
use std::fmt::Write;
use std::path::{Path, PathBuf};

pub(crate) struct Gnuplot;

/// At most this many rows: bins widen (1, 2, 5, 10... us) for runs whose maximum is far out.
const MAX_ROWS: u64 = 100_000;

/// Okabe-Ito colours: told apart with every common colour-vision deficiency.
const PALETTE: &[&str] = &[
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000",
];

/// The bin width in ns: 1 us unless that needs more than MAX_ROWS rows.
fn bin_width_ns(max_ns: u64) -> u64 {
    let mut decade = 1_000;
    loop {
        for step in [1, 2, 5] {
            let width = decade * step;
            if max_ns / width < MAX_ROWS {
                return width;
            }
        }
        decade *= 10;
    }
}

/// Counts per bin; a histogram bucket goes to the bin of its highest value (what percentiles
/// report), so every sample is counted once.
fn bins(h: &Histogram<u64>, width: u64, rows: usize) -> Vec<u64> {
    let mut out = vec![0; rows];
    for v in h.iter_recorded() {
        let bin = ((v.value_iterated_to() / width) as usize).min(rows - 1);
        out[bin] += v.count_at_value();
    }
    out
}

/// The data file and the script for one run; `name` is the base both are named by. The
/// script's latency axis is `latency` where given (`--latency-range`): the data file keeps
/// every bin, the script shows the range and labels what it cut off per CPU, counted from the
/// histogram (each bucket at its highest value, as the bins count it).
pub(crate) fn render_zoomed(
    run: &LoadedRun,
    name: &str,
    latency: &Range,
) -> Result<(String, String)> {
    let tags: Vec<String> = run.tags().into_iter().filter(|t| is_cpu_tag(t)).collect();
    if tags.is_empty() {
        return Err(Failure::usage(format!(
            "{} has no latency histograms (no latency.hlog, or an import whose source had no histogram): nothing to plot",
            run.path.display()
        )));
    }
    let histograms: Vec<(String, Histogram<u64>)> = tags
        .iter()
        .filter_map(|t| run.merged_histogram(t).map(|h| (t.clone(), h)))
        .collect();
    let max = histograms.iter().map(|(_, h)| h.max()).max().unwrap_or(0);
    let width = bin_width_ns(max);
    let data = histogram_data(run, &histograms, width);
    let script = histogram_script(run, &histograms, width, name, latency);
    Ok((data, script))
}

/// The histogram data file: one row per bin of `width` ns, one column per CPU.
fn histogram_data(run: &LoadedRun, histograms: &[(String, Histogram<u64>)], width: u64) -> String {
    let max = histograms.iter().map(|(_, h)| h.max()).max().unwrap_or(0);
    let rows = (max / width + 1) as usize;
    let columns: Vec<Vec<u64>> = histograms
        .iter()
        .map(|(_, h)| bins(h, width, rows))
        .collect();
    let width_text = format!("{} us", width / 1000);
    // What a sample is: a wakeup and its latency, or a noise run's gap and its length.
    let words = run.record.kind.words();
    let (what, value, samples_name) = (words.sample, words.value, words.plural);

    let mut data = String::new();
    let _ = writeln!(
        data,
        "# jitterlab {what} histogram of {}",
        run.path.display()
    );
    let _ = writeln!(
        data,
        "# columns: bin_us, the lower edge of the bin in us (bins of {width_text}); then per CPU the {samples_name} whose {value} fell in the bin"
    );
    let samples: Vec<String> = histograms
        .iter()
        .map(|(t, h)| format!("{t} {}", h.len()))
        .collect();
    let _ = writeln!(data, "# samples: {}", samples.join(", "));
    let _ = writeln!(
        data,
        "# bin_us {}",
        histograms
            .iter()
            .map(|(t, _)| t.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    );
    for row in 0..rows {
        let lower_us = (row as u64 * width) as f64 / 1000.0;
        let _ = write!(data, "{lower_us}");
        for c in &columns {
            let _ = write!(data, " {}", c[row]);
        }
        data.push('\n');
    }
    data
}

/// The histogram script: impulses per CPU on a log count axis, each CPU's maximum marked.
fn histogram_script(
    run: &LoadedRun,
    histograms: &[(String, Histogram<u64>)],
    width: u64,
    name: &str,
    latency: &Range,
) -> String {
    let max = histograms.iter().map(|(_, h)| h.max()).max().unwrap_or(0);
    let width_text = format!("{} us", width / 1000);
    let words = run.record.kind.words();
    let (what, value, samples_name) = (words.sample, words.value, words.plural);
    let title = run.path.display().to_string().replace('"', "'");
    let mut gp = String::new();
    script_head(&mut gp, &format!("{what} histogram of {title}"), name);
    let _ = writeln!(
        gp,
        "set title \"{}{} histogram: {title}\" noenhanced",
        what[..1].to_uppercase(),
        &what[1..]
    );
    let _ = writeln!(gp, "set xlabel \"{value} (us)\"");
    let _ = writeln!(gp, "set ylabel \"{samples_name} per {width_text} bin\"");
    // Impulses rise from the bottom of the log axis, so a bin of one wakeup is a line a third
    // of a decade high (0.5 to 1); `steps` would join it to its empty neighbours, whose log is
    // undefined, and gnuplot would draw nothing.
    let _ = writeln!(gp, "set logscale y");
    let _ = writeln!(gp, "set yrange [0.5:*]");
    // Past the largest value, so its bin is not drawn on the border; a little left of 0, so
    // the body of the distribution is not either.
    let (x_from, x_to) = latency_range_us(max, width);
    // `--latency-range` in place of either end.
    let x_from = latency.from.map_or(x_from, |f| f / 1000.0);
    let x_to = latency.to.map_or(x_to, |t| t / 1000.0);
    // A FROM above every value: the data's end would be below it (a reversed range draws
    // nothing); the axis runs a bin past FROM instead, empty, and the labels say why.
    let x_to = match x_to > x_from {
        true => x_to,
        false => x_from + (width as f64 / 1000.0).max(x_from.abs() * 0.1),
    };
    let _ = writeln!(gp, "set xrange [{x_from}:{x_to}]");
    // No bin in the range: a fixed count axis, since gnuplot cannot autoscale one from no
    // points (it would stop with "all points y value undefined").
    let shown = |h: &Histogram<u64>| {
        h.iter_recorded().any(|v| {
            let us = v.value_iterated_to() as f64 / 1000.0;
            us >= x_from && us <= x_to
        })
    };
    if !histograms.iter().any(|(_, h)| shown(h)) {
        let _ = writeln!(gp, "set yrange [0.5:10]");
    }
    let _ = writeln!(gp, "set grid");
    let _ = writeln!(gp, "set key top right");
    mark_maxima(&mut gp, run, histograms, latency);
    // What the range cut off, on the plot (labels 101...).
    let cut: Vec<String> = histograms
        .iter()
        .filter_map(|(t, h)| {
            let label = format!("CPU {}", t.trim_start_matches("cpu"));
            zoom::cut_of(h, latency).sentence(&label, samples_name, latency, zoom::latency_end)
        })
        .collect();
    for (i, note) in cut.iter().enumerate() {
        let _ = writeln!(gp, "# {note}");
        let _ = writeln!(
            gp,
            "set label {} \"{note}\" at graph 0.98, graph {} right tc rgb \"#7a1f00\" noenhanced",
            101 + i,
            0.75 - 0.05 * i as f64
        );
    }
    let series: Vec<String> = histograms
        .iter()
        .enumerate()
        .map(|(i, (t, _))| {
            let cpu = t.trim_start_matches("cpu");
            format!(
                "{} using 1:{} with impulses lw 1.5 lc rgb \"{}\" title \"CPU {cpu}\"",
                if i == 0 { "datafile" } else { "''" },
                i + 2,
                PALETTE[i % PALETTE.len()]
            )
        })
        .collect();
    let _ = writeln!(gp, "plot {}", series.join(", \\\n     "));
    gp
}

/// Each CPU's maximum, marked: however small its bin, the worst case is seen (a maximum
/// outside `latency`, `--latency-range`, is said by the cut's label instead).
fn mark_maxima(
    gp: &mut String,
    run: &LoadedRun,
    histograms: &[(String, Histogram<u64>)],
    latency: &Range,
) {
    for (i, (t, h)) in histograms.iter().enumerate() {
        let max_ns = max_of(run, t).unwrap_or_else(|| h.max());
        if latency.place(max_ns as f64) != std::cmp::Ordering::Equal {
            continue;
        }
        let x = max_ns as f64 / 1000.0;
        let colour = PALETTE[i % PALETTE.len()];
        let _ = writeln!(
            gp,
            "set arrow {} from {x}, graph 0 to {x}, graph 1 nohead back dt 2 lc rgb \"{colour}\"",
            i + 1
        );
        let _ = writeln!(
            gp,
            "set label {} \"CPU {} max {}\" at {x}, graph {} right offset -0.5,0 tc rgb \"{colour}\" noenhanced",
            i + 1,
            t.trim_start_matches("cpu"),
            format_ns(max_ns),
            0.95 - 0.05 * i as f64
        );
    }
}

/// The latency axis in us: from a little below 0 to a little past `max_ns` (at least one bin
/// of `width_ns`), so that neither the body nor the largest value lies on the border.
fn latency_range_us(max_ns: u64, width_ns: u64) -> (f64, f64) {
    let max_us = max_ns as f64 / 1000.0;
    let margin = (max_us * 0.03).max(width_ns as f64 / 1000.0);
    (-margin, max_us + margin)
}

/// The exact maximum of a CPU tag's thread from run.json (the histogram's is within 0.1 %).
fn max_of(run: &LoadedRun, tag: &str) -> Option<u64> {
    let cpu: usize = tag.strip_prefix("cpu")?.parse().ok()?;
    let t = run.record.threads.iter().find(|t| t.cpu == cpu)?;
    t.latency.max_ns.and_then(|m| u64::try_from(m).ok())
}

impl RunExporter for Gnuplot {
    fn write(&self, run: &LoadedRun, output: Option<&Path>) -> Result<()> {
        write_zoomed(run, output, &Range::default())
    }
}

/// `--latency-range`: the histogram with its script's latency axis on `latency`.
pub(crate) fn write_zoomed(run: &LoadedRun, output: Option<&Path>, latency: &Range) -> Result<()> {
    let (base, name) = output_base(run, output, "histogram")?;
    let (data, script) = render_zoomed(run, &name, latency)?;
    write_pair(&base, &name, &data, &script)
}

/// `--per-phase`: writes the per-phase distributions of a scenario run as NAME.dat and NAME.gp
/// (default NAME: `<run directory name>-phases`).
pub(crate) fn write_per_phase(run: &LoadedRun, output: Option<&Path>) -> Result<()> {
    let (base, name) = output_base(run, output, "phases")?;
    let (data, script) = render_per_phase(run, &name)?;
    write_pair(&base, &name, &data, &script)
}

/// The base path of the two files and its file name: `-o NAME` without a .dat or .gp suffix,
/// else `<run directory name>-<suffix>` in the current directory. `-o -` is refused (exit 2):
/// `-` is standard output, which cannot hold two files (thirteenth hostile re-run, L13-b:
/// it wrote `-.dat` and `-.gp`).
fn output_base(run: &LoadedRun, output: Option<&Path>, suffix: &str) -> Result<(PathBuf, String)> {
    if output.is_some_and(crate::results::dir::means_stdout) {
        return Err(Failure::usage(
            "-o -: `-` means standard output, and the gnuplot export writes two files (NAME.dat and NAME.gp); pass -o NAME (./- for files named -.dat and -.gp)",
        ));
    }
    let base: PathBuf = match output {
        Some(o) => match o.extension().and_then(|e| e.to_str()) {
            Some("dat" | "gp") => o.with_extension(""),
            _ => o.to_path_buf(),
        },
        None => {
            let dir_name = run
                .path
                .canonicalize()
                .ok()
                .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                .unwrap_or_else(|| "run".into());
            PathBuf::from(format!("{dir_name}-{suffix}"))
        }
    };
    let name = base
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| Failure::usage(format!("-o {}: not a file name", base.display())))?;
    Ok((base, name))
}

fn write_pair(base: &Path, name: &str, data: &str, script: &str) -> Result<()> {
    let with = |ext: &str| {
        let mut p = base.to_path_buf().into_os_string();
        p.push(ext);
        PathBuf::from(p)
    };
    let (dat, gp) = (with(".dat"), with(".gp"));
    write_text(Some(&dat), data)?;
    write_text(Some(&gp), script)?;
    eprintln!(
        "wrote {} and {} (gnuplot {name}.gp draws the plot)",
        dat.display(),
        gp.display(),
    );
    Ok(())
}

/// The lines every script starts with: where the data is, where the plot goes, the terminal.
fn script_head(gp: &mut String, what: &str, name: &str) {
    let _ = writeln!(gp, "# gnuplot script written by jitterlab: {what}");
    let _ = writeln!(
        gp,
        "# gnuplot {name}.gp writes {name}.svg; choose another output with"
    );
    let _ = writeln!(
        gp,
        "#   gnuplot -e \"outfile='x.png'; term='pngcairo size 1200,700'\" {name}.gp"
    );
    let _ = writeln!(
        gp,
        "# Run it in the directory of {name}.dat (or set datafile the same way)."
    );
    let _ = writeln!(gp, "if (!exists(\"datafile\")) datafile = \"{name}.dat\"");
    let _ = writeln!(gp, "if (!exists(\"outfile\")) outfile = \"{name}.svg\"");
    let _ = writeln!(
        gp,
        "if (!exists(\"term\")) term = \"svg size 1000,600 dynamic\""
    );
    let _ = writeln!(gp, "set terminal @term");
    let _ = writeln!(gp, "set output outfile");
}

/// Dash types of gnuplot's `dt`, one per CPU in the per-phase plot (colours are the phases).
const CPU_DASHES: &[u32] = &[1, 2, 3, 4, 5];

/// A phase's label, its window (s from the run's start) and one histogram per CPU tag.
type PhaseHistograms<'a> = (&'a str, (f64, f64), Vec<Histogram<u64>>);

/// The per-phase data file (one block per phase, gnuplot `index` 0, 1...; in each block one
/// column per CPU holding the share of the phase's wakeups on that CPU per bin, so each column
/// sums to 1 and phases of different length compare) and its script.
pub(crate) fn render_per_phase(run: &LoadedRun, name: &str) -> Result<(String, String)> {
    let r = &run.record;
    if r.phases.is_empty() {
        return Err(Failure::usage(format!(
            "{} has no phases: --per-phase needs a run made with --scenario",
            run.path.display()
        )));
    }
    let tags: Vec<String> = run.tags().into_iter().filter(|t| is_cpu_tag(t)).collect();
    if tags.is_empty() {
        return Err(Failure::usage(format!(
            "{} has no latency histograms (no latency.hlog): nothing to plot",
            run.path.display()
        )));
    }
    let phases = phase_histograms(run, &tags);
    // Rows of 1/10 decade from the smallest to the largest value of any phase, so every
    // block has the same rows and the axis covers the largest.
    let (lo, hi) = phases
        .iter()
        .flat_map(|(_, _, hs)| hs.iter().filter(|h| !h.is_empty()))
        .fold((usize::MAX, 0), |(lo, hi), h| {
            (lo.min(row_of(h.min())), hi.max(row_of(h.max())))
        });
    let rows = if lo > hi { (0, 0) } else { (lo, hi) };
    let (data, smallest) = per_phase_data(run, &tags, &phases, rows);
    let script = per_phase_script(run, &tags, &phases, rows, smallest, name);
    Ok((data, script))
}

/// Per phase, per CPU tag: the histogram of the intervals wholly inside the phase.
fn phase_histograms<'a>(run: &'a LoadedRun, tags: &[String]) -> Vec<PhaseHistograms<'a>> {
    let r = &run.record;
    r.phases
        .iter()
        .map(|p| {
            let window = phase::window_s(r, p);
            let hists = tags
                .iter()
                .map(|tag| {
                    let mut h = new_histogram();
                    run.intervals_of(tag)
                        .filter(|i| phase::inside(window, i.start_s, i.length_s))
                        .for_each(|i| add_counts(&mut h, &i.counts));
                    h
                })
                .collect();
            (p.label.as_str(), window, hists)
        })
        .collect()
}

/// The per-phase data file (rows `lo..=hi` of 1/10 decade in every block) and the smallest
/// share in it (the script's y axis starts below it).
fn per_phase_data(
    run: &LoadedRun,
    tags: &[String],
    phases: &[PhaseHistograms],
    (lo, hi): (usize, usize),
) -> (String, f64) {
    let mut data = String::new();
    let _ = writeln!(
        data,
        "# jitterlab per-phase latency distributions of {}",
        run.path.display()
    );
    let _ = writeln!(
        data,
        "# one block per phase (gnuplot index 0, 1, ...), blocks separated by two blank lines"
    );
    let _ = writeln!(
        data,
        "# columns: bin_us, the lower edge of the bin in us (bins of 1/10 decade: a value v is in the bin when lower edge <= v < next lower edge, edges rounded up to whole ns); then per CPU the share of the phase's wakeups on that CPU that fell in the bin (each column sums to 1; empty CPUs are 0)"
    );
    let mut smallest = 1.0f64;
    for (k, (label, window, hists)) in phases.iter().enumerate() {
        if k > 0 {
            data.push_str("\n\n");
        }
        let samples: Vec<String> = tags
            .iter()
            .zip(hists)
            .map(|(t, h)| format!("{t} {}", h.len()))
            .collect();
        let _ = writeln!(
            data,
            "# phase {k}: {} from {:.3} s to {:.3} s; samples: {}",
            sanitize(label),
            window.0 + 0.001,
            window.1 - 0.001,
            samples.join(", ")
        );
        let _ = writeln!(data, "# bin_us {}", tags.join(" "));
        let columns: Vec<Vec<u64>> = hists.iter().map(|h| decade_bins(h, lo, hi)).collect();
        for row in lo..=hi {
            let _ = write!(data, "{}", row_floor_ns(row) / 1000.0);
            for (c, h) in columns.iter().zip(hists) {
                let share = if h.is_empty() {
                    0.0
                } else {
                    c[row - lo] as f64 / h.len() as f64
                };
                if share > 0.0 {
                    smallest = smallest.min(share);
                }
                let _ = write!(data, " {share}");
            }
            data.push('\n');
        }
    }
    (data, smallest)
}

/// The per-phase script: both axes log, one line per phase and CPU (colour the phase, dash
/// the CPU).
fn per_phase_script(
    run: &LoadedRun,
    tags: &[String],
    phases: &[PhaseHistograms],
    (lo, hi): (usize, usize),
    smallest: f64,
    name: &str,
) -> String {
    let title = run.path.display().to_string().replace('"', "'");
    let mut gp = String::new();
    script_head(
        &mut gp,
        &format!("per-phase latency distributions of {title}"),
        name,
    );
    let _ = writeln!(
        gp,
        "set title \"Latency distribution per phase: {title}\" noenhanced"
    );
    let _ = writeln!(gp, "set xlabel \"latency (us, log scale)\"");
    let _ = writeln!(
        gp,
        "set ylabel \"share of the phase's wakeups per 1/10 decade bin\""
    );
    // Both axes log: the body and a tail decades out are both seen. Points sit at their bins'
    // lower edges, none on the frame: the x axis runs from a bin below the first to the end of
    // the largest value's bin, the y axis from below the smallest share (one wakeup of the
    // longest phase) to above 1. Points mark every non-empty bin; a line breaks at an empty one.
    let _ = writeln!(gp, "set logscale xy");
    let _ = writeln!(
        gp,
        "set xrange [{}:{}]",
        // row_floor_ns(1): the ratio of one bin.
        row_floor_ns(lo) / row_floor_ns(1) / 1000.0,
        row_floor_ns(hi + 1) / 1000.0
    );
    let _ = writeln!(
        gp,
        "set yrange [{}:2]",
        10f64.powf((smallest / 2.0).log10().floor())
    );
    let _ = writeln!(gp, "set grid");
    let _ = writeln!(gp, "set key top right noenhanced");
    let mut series = Vec::new();
    for (k, (label, _, hists)) in phases.iter().enumerate() {
        for (j, (tag, h)) in tags.iter().zip(hists).enumerate() {
            if h.is_empty() {
                continue;
            }
            let cpu = tag.trim_start_matches("cpu");
            series.push(format!(
                "{} index {k} using 1:{} with linespoints pt 7 ps 0.6 lw 1.5 lc rgb \"{}\" dt {} title \"{} CPU {cpu}\"",
                if series.is_empty() { "datafile" } else { "''" },
                j + 2,
                PALETTE[k % PALETTE.len()],
                CPU_DASHES[j % CPU_DASHES.len()],
                sanitize(label).replace('"', "'")
            ));
        }
    }
    let _ = writeln!(gp, "plot {}", series.join(", \\\n     "));
    gp
}

/// Counts per 1/10-decade row from `lo` to `hi` (a histogram bucket goes to the row of its
/// highest value, as in [`bins`]).
fn decade_bins(h: &Histogram<u64>, lo: usize, hi: usize) -> Vec<u64> {
    let mut out = vec![0; hi - lo + 1];
    for v in h.iter_recorded() {
        let row = row_of(v.value_iterated_to()).clamp(lo, hi);
        out[row - lo] += v.count_at_value();
    }
    out
}

/// A phase label as it may go into a data-file comment or a gnuplot string: control
/// characters (from a scenario file) become `?`.
fn sanitize(label: &str) -> String {
    label
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_widen_only_for_far_maxima() {
        assert_eq!(bin_width_ns(4_000_000), 1_000);
        assert_eq!(bin_width_ns(99_999_999), 1_000);
        assert_eq!(bin_width_ns(150_000_000), 2_000);
        assert_eq!(bin_width_ns(3_600_000_000_000), 50_000_000);
    }
}

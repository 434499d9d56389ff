//! What every importer produces: the source's histograms per thread, with the checks that
//! refuse contradictions and counts no histogram can hold, and the size limits of imports.

use crate::format::run_record::{NoiseSummary, RunKind};
use crate::format::stats::{LatencySummary, new_histogram};
use crate::units::format_ns;
use hdrhistogram::Histogram;
use std::path::Path;
use std::time::SystemTime;

/// The largest file imported. The sources are histograms: a cyclictest --json with -h 10000 on
/// 64 threads is about 10 MiB, and a file far larger is the wrong file, or a device.
pub(crate) const MAX_FILE_BYTES: u64 = 64 << 20;

/// The most samples one histogram may hold: latency.hlog stores counts as signed 64-bit
/// numbers, and no run comes near it. A larger count, or counts whose sum is larger, is a
/// damaged file.
pub(crate) const MAX_SAMPLES: u64 = i64::MAX as u64;

/// The largest latency a source may print, in ns: run.json stores signed 64-bit ns (about 292
/// years).
pub(crate) const MAX_VALUE_NS: u64 = i64::MAX as u64;

/// Adds sample counts, refusing a sum above [`MAX_SAMPLES`].
pub(crate) fn add_counts(
    counts: impl IntoIterator<Item = u64>,
) -> std::result::Result<u64, String> {
    counts
        .into_iter()
        .try_fold(0u64, |sum, c| {
            sum.checked_add(c).filter(|&s| s <= MAX_SAMPLES)
        })
        .ok_or_else(|| {
            format!(
                "its counts add up to more than {MAX_SAMPLES} samples, more than any run can hold"
            )
        })
}

/// The largest binary file imported (jitterdebugger's samples.raw: 28 bytes a sample, so about
/// 9.6 million samples, 40 minutes of 4 CPUs at its default 250 us period). The file is read
/// whole.
pub(crate) const MAX_BINARY_FILE_BYTES: u64 = 256 << 20;

/// One source format: a row of [`super::SOURCE_FORMATS`]. `name` is both the CLI's
/// `import --format` value and run.json's `imported.source_format`.
#[derive(Debug)]
pub struct SourceFormat {
    pub name: &'static str,
    /// One line for `--help`: what to capture.
    pub help: &'static str,
    /// How the format reads its file: as text or as bytes.
    pub parse: Parser,
    /// How `import --format auto` recognises it ([`super::detect`] asks each row in turn).
    pub(crate) recognise: Recognise,
    /// How it reads output saved without its column line, when the user names the columns
    /// (`import --cpus --columns`); None where the format has no such form.
    pub(crate) no_header: Option<NoHeader>,
}

/// A format's reading of output printed without its header (rtla `--no-header`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct NoHeader {
    /// The columns it prints per CPU, as it names them and in its order (`IRQ`, `Thr`, `Usr`).
    pub columns: &'static [&'static str],
    pub parse: fn(&str, &super::NoHeaderLayout) -> std::result::Result<Imported, String>,
}

/// How a format is recognised from a file's content.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Recognise {
    /// A JSON document (a file with a line that starts with `{`): the tool its command line
    /// names (the file name of `cmdline`'s first word, if it has one), and the document; then
    /// what marks the format, for the error when no JSON format is recognised.
    Json(fn(Option<&str>, &serde_json::Value) -> bool, &'static str),
    /// A text: its lines, trimmed.
    Text(fn(&[&str]) -> Recognised),
    /// A binary file (one with NUL bytes): why it is not this format.
    Binary(fn(&[u8]) -> std::result::Result<(), String>),
}

/// What a text format's recogniser says of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Recognised {
    No,
    Yes,
    /// This tool's output, in a form that cannot be imported: why, and what to capture instead.
    Refused(&'static str),
}

/// How a format reads its file. Text formats get the file as UTF-8 text cleaned of what
/// pasting adds (`pasted.rs`); binary formats get the bytes as written, and the file's path
/// for a companion file their documentation names (jitterdebugger's results.json next to its
/// samples.raw).
#[derive(Debug, Clone, Copy)]
pub enum Parser {
    Text(fn(&str) -> std::result::Result<Imported, String>),
    Bytes(fn(&[u8], &Path) -> std::result::Result<Imported, String>),
}

impl Parser {
    /// The largest file this kind of parser is given.
    pub(crate) fn max_file_bytes(self) -> u64 {
        match self {
            Parser::Text(_) => MAX_FILE_BYTES,
            Parser::Bytes(..) => MAX_BINARY_FILE_BYTES,
        }
    }
}

impl PartialEq for SourceFormat {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl SourceFormat {
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The row named `name`.
    pub fn named(name: &str) -> Option<&'static SourceFormat> {
        super::SOURCE_FORMATS
            .iter()
            .copied()
            .find(|f| f.name == name)
    }
}

/// A histogram as the source printed it, in the source's unit.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SourceHistogram {
    /// Nanoseconds per source unit (1000 for microseconds).
    pub(crate) unit_ns: u64,
    /// (printed bucket value, count), ascending; each count is recorded at value · unit_ns.
    pub buckets: Vec<(u64, u64)>,
    /// Samples beyond the last bucket, not in `buckets`.
    pub overflow: u64,
    /// The lowest value an overflow sample can have (source unit), as far as the file says.
    pub(crate) overflow_from: u64,
    /// The source's own figures (source unit), when it printed them.
    pub count: Option<u64>,
    pub min: Option<f64>,
    pub mean: Option<f64>,
    pub max: Option<f64>,
    /// Percentiles the source printed, (quantile, value in the source unit), for sources
    /// without buckets (stress-ng); used only when `buckets` is empty.
    pub(crate) quantiles: Vec<(f64, f64)>,
    /// The standard deviation (source unit), when the source printed one (stress-ng).
    pub stddev: Option<f64>,
}

impl SourceHistogram {
    /// The samples in the buckets; an error when they add up to more than [`MAX_SAMPLES`].
    pub fn in_range(&self) -> std::result::Result<u64, String> {
        add_counts(self.buckets.iter().map(|&(_, c)| c))
    }

    /// The samples: the source's count, else what the buckets and overflow hold. Call after
    /// [`SourceHistogram::check`], which makes sure the sum fits.
    pub fn samples(&self) -> u64 {
        self.count.unwrap_or_else(|| {
            add_counts(self.buckets.iter().map(|&(_, c)| c).chain([self.overflow]))
                .unwrap_or(MAX_SAMPLES)
        })
    }

    /// Refuses a histogram that contradicts itself or cannot be stored: counts beyond
    /// [`MAX_SAMPLES`], values beyond [`MAX_VALUE_NS`], a min above the max, a mean outside
    /// them, samples above the printed max, and a max beyond the histogram's end without an
    /// overflow (or overflows with a max inside the histogram). Each format checks its own
    /// sums (rows against totals) when it parses.
    pub fn check(&self) -> std::result::Result<(), String> {
        let unit = self.unit_ns.max(1);
        let shown = |v: f64| {
            if v.abs() * unit as f64 <= MAX_VALUE_NS as f64 {
                crate::units::format_ns_signed((v * unit as f64).round() as i64)
            } else {
                format!("{v} x {unit} ns")
            }
        };
        let total = add_counts(self.buckets.iter().map(|&(_, c)| c).chain([self.overflow]))?;
        if let Some(count) = self.count.filter(|&c| c > MAX_SAMPLES) {
            return Err(format!(
                "its count of {count} samples is more than any run can hold ({MAX_SAMPLES})"
            ));
        }
        let limit = MAX_VALUE_NS / unit;
        if let Some(&(v, _)) = self.buckets.iter().find(|&&(v, _)| v > limit) {
            return Err(format!(
                "a histogram bucket at {v} x {unit} ns is beyond the largest latency jitterlab stores ({})",
                format_ns(MAX_VALUE_NS)
            ));
        }
        if self.overflow_from > limit {
            return Err(format!(
                "its histogram ends at {} x {unit} ns, beyond the largest latency jitterlab stores ({})",
                self.overflow_from,
                format_ns(MAX_VALUE_NS)
            ));
        }
        for (name, value) in [("min", self.min), ("avg", self.mean), ("max", self.max)] {
            if let Some(v) = value
                && !(v.is_finite() && v.abs() <= limit as f64)
            {
                return Err(format!(
                    "its {name} ({v}) is not a latency jitterlab can store (a finite value up to {})",
                    format_ns(MAX_VALUE_NS)
                ));
            }
        }
        if let (Some(min), Some(max)) = (self.min, self.max) {
            if min > max {
                return Err(format!(
                    "its min ({}) is above its max ({})",
                    shown(min),
                    shown(max)
                ));
            }
            if let Some(mean) = self.mean.filter(|m| !(min..=max).contains(m)) {
                return Err(format!(
                    "its avg ({}) is outside its min ({}) and max ({})",
                    shown(mean),
                    shown(min),
                    shown(max)
                ));
            }
        }
        let Some(max) = self.max.filter(|_| total > 0) else {
            return self.check_mean_floor(total);
        };
        // Buckets are printed at their lowest value, so the max is at least the highest one.
        if let Some(&(v, c)) = self.buckets.iter().rev().find(|&&(_, c)| c > 0)
            && v as f64 > max
        {
            return Err(format!(
                "its histogram has {c} sample{} at {} but its max is {}",
                if c == 1 { "" } else { "s" },
                shown(v as f64),
                shown(max)
            ));
        }
        if self.overflow == 0 && !self.buckets.is_empty() && max >= self.overflow_from as f64 {
            return Err(format!(
                "its max ({}) is beyond the end of its histogram ({}), yet no sample is counted beyond it",
                shown(max),
                shown(self.overflow_from as f64)
            ));
        }
        if self.overflow > 0 && max < self.overflow_from as f64 {
            return Err(format!(
                "{} sample{} counted beyond its histogram (at or above {}), yet its max is {}",
                self.overflow,
                if self.overflow == 1 { " is" } else { "s are" },
                shown(self.overflow_from as f64),
                shown(max)
            ));
        }
        self.check_mean_floor(total)
    }
    /// Every sample is at least its bucket's lowest value, an overflow at least the
    /// histogram's end: the mean is at least their mean. An average below it (less one unit
    /// for a source that prints it truncated) cannot be the file's own (eighth hostile re-run,
    /// L8-e: 990 of 1000 samples at or above 30 us with `Avg 5`).
    fn check_mean_floor(&self, total: u64) -> std::result::Result<(), String> {
        let Some(mean) = self.mean.filter(|_| total > 0) else {
            return Ok(());
        };
        let unit = self.unit_ns.max(1) as f64;
        let shown = |v: f64| crate::units::format_ns_signed((v * unit).round() as i64);
        let least_sum = self
            .buckets
            .iter()
            .map(|&(v, c)| v as f64 * c as f64)
            .sum::<f64>()
            + self.overflow as f64 * self.overflow_from as f64;
        let least_mean = least_sum / total as f64;
        if mean >= least_mean - 1.0 {
            return Ok(());
        }
        Err(format!(
            "its avg ({}) is below what its own histogram holds: at least {} (each sample at its bucket's lowest value{})",
            shown(mean),
            shown(least_mean),
            match self.overflow {
                0 => String::new(),
                n => format!(
                    ", the {n} beyond the histogram at its end, {}",
                    shown(self.overflow_from as f64)
                ),
            }
        ))
    }

    /// The HDR histogram for latency.hlog. Overflow samples are recorded at `overflow_from`,
    /// except one at the printed maximum (which some sample reached): the file says no more.
    pub fn histogram(&self) -> Histogram<u64> {
        let mut h = new_histogram();
        let ns = |v: u64| v.saturating_mul(self.unit_ns);
        for &(v, c) in &self.buckets {
            if c > 0 {
                h.record_n(ns(v), c).expect("auto-resizing histogram");
            }
        }
        if self.overflow > 0 {
            let mut at_threshold = self.overflow;
            if let Some(max) = self.max.filter(|&m| m >= self.overflow_from as f64) {
                h.record(ns(max as u64)).expect("auto-resizing histogram");
                at_threshold -= 1;
            }
            if at_threshold > 0 {
                h.record_n(ns(self.overflow_from), at_threshold)
                    .expect("auto-resizing histogram");
            }
        }
        h
    }

    /// run.json's latency figures: percentiles from the histogram, min/mean/max as printed.
    /// The histogram's values are bucket tops (and overflows sit at the bucket's edge), so a
    /// percentile can read above the printed max: the figures are clamped into the source's
    /// exact [min, max] where it printed them (a side it did not print stays open).
    pub fn summary(&self) -> LatencySummary {
        let h = self.histogram();
        let samples = self.samples();
        // No samples, unless the source printed figures without a count (rtla osnoise top's
        // "Max Single"): then those figures stand and the count is absent.
        if samples == 0 && (self.count.is_some() || self.max.is_none()) {
            return LatencySummary::default();
        }
        let unit = self.unit_ns as f64;
        let q = |quantile: f64| {
            if !h.is_empty() {
                return Some(h.value_at_quantile(quantile));
            }
            self.quantiles
                .iter()
                .find(|&&(q, _)| (q - quantile).abs() < 1e-9)
                .map(|&(_, v)| (v * unit).round() as u64)
        };
        let mut summary = LatencySummary {
            samples,
            min_ns: self.min.map(|v| (v * unit).round() as i64),
            mean_ns: self.mean.map(|v| v * unit),
            // Only as printed: not derived from 1 us buckets.
            stddev_ns: self.stddev.map(|v| v * unit),
            p50_ns: q(0.50),
            p90_ns: q(0.90),
            p99_ns: q(0.99),
            p999_ns: q(0.999),
            p9999_ns: q(0.9999),
            max_ns: self.max.map(|v| (v * unit).round() as i64),
        };
        if summary.min_ns.is_some() || summary.max_ns.is_some() {
            let (min, max) = (summary.min_ns, summary.max_ns);
            summary.clamp_into(min.unwrap_or(i64::MIN), max.unwrap_or(i64::MAX));
        }
        summary
    }
}

/// One CPU of the source.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceThread {
    pub cpu: usize,
    /// The latency a task saw: cyclictest's, oslat's, rtla's Usr column (or Thr without -u).
    pub latency: SourceHistogram,
    /// rtla's IRQ column.
    pub irq: Option<SourceHistogram>,
    /// rtla's Thr column when a Usr column is the latency (rtla -u).
    pub(crate) kernel_thread: Option<SourceHistogram>,
    /// This thread's period, ns, when the source states it (cyclictest's `I:`).
    pub interval_ns: Option<u64>,
    /// Noise sources (oslat, rtla osnoise): the figures besides the gap histogram.
    pub noise: Option<SourceNoise>,
}

impl SourceThread {
    /// A thread with only its latency column.
    pub fn new(cpu: usize, latency: SourceHistogram) -> Self {
        SourceThread {
            cpu,
            latency,
            irq: None,
            kernel_thread: None,
            interval_ns: None,
            noise: None,
        }
    }
}

/// A noise source's figures for one CPU, as far as the source states them (run.json's
/// `noise`, docs/noise.md): each None becomes a placeholder named in `imported.absent` as
/// `noise.FIELD`. Throttling is never stated by a source.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SourceNoise {
    pub measured_ns: Option<u64>,
    pub noise_ns: Option<u64>,
    pub(crate) noise_pct: Option<f64>,
    pub(crate) gaps_per_s: Option<f64>,
    pub(crate) iterations: Option<u64>,
    pub(crate) iteration_ns: Option<f64>,
    /// Figures the source printed that run.json has no field for, (name, value, unit): rtla
    /// osnoise top's interference counts. Kept in run.json's `imported.figures`.
    pub figures: Vec<(&'static str, u64, &'static str)>,
}

impl SourceNoise {
    /// Each figure that is None, as `imported.absent` names it.
    pub fn absent(&self) -> Vec<&'static str> {
        let mut absent = Vec::new();
        for (field, known) in [
            ("noise.measured_ns", self.measured_ns.is_some()),
            ("noise.noise_ns", self.noise_ns.is_some()),
            ("noise.noise_pct", self.noise_pct.is_some()),
            ("noise.gaps_per_s", self.gaps_per_s.is_some()),
            ("noise.iterations", self.iterations.is_some()),
            ("noise.iteration_ns", self.iteration_ns.is_some()),
        ] {
            if !known {
                absent.push(field);
            }
        }
        // No source says which of its gaps were real-time throttling.
        absent.extend(["noise.throttled_gaps", "noise.throttled_ns"]);
        absent
    }

    /// run.json's noise figures: each None a 0 placeholder (listed by [`SourceNoise::absent`]).
    pub fn summary(&self) -> NoiseSummary {
        NoiseSummary {
            measured_ns: self.measured_ns.unwrap_or(0),
            noise_ns: self.noise_ns.unwrap_or(0),
            noise_pct: self.noise_pct.unwrap_or(0.0),
            // The same share in ns/s.
            noise_ns_per_s: self.noise_pct.map(|p| p * 1e7),
            gaps_per_s: self.gaps_per_s.unwrap_or(0.0),
            iterations: self.iterations.unwrap_or(0),
            iteration_ns: self.iteration_ns.unwrap_or(0.0),
            throttled_gaps: 0,
            throttled_ns: 0,
            clock: None,
            gaps_over: Vec::new(),
        }
    }
}

impl SourceThread {
    /// [`SourceHistogram::check`] of every column, naming the CPU and the column.
    pub fn check(&self) -> std::result::Result<(), String> {
        let columns = [
            ("", Some(&self.latency)),
            (" IRQ", self.irq.as_ref()),
            (" Thr", self.kernel_thread.as_ref()),
        ];
        for (column, h) in columns {
            if let Some(h) = h {
                h.check()
                    .map_err(|e| format!("CPU {}{column}: {e}", self.cpu))?;
            }
        }
        Ok(())
    }
}

/// What a source file holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    pub format: &'static SourceFormat,
    /// A latency source (cyclictest, rtla timerlat...) or a noise source (oslat, rtla osnoise).
    pub kind: RunKind,
    pub threads: Vec<SourceThread>,
    /// The source's command line, when it recorded it.
    pub command_line: Vec<String>,
    pub started: Option<SystemTime>,
    pub duration_ns: Option<u64>,
    /// The source tool reported failure.
    pub failed: bool,
    /// Why the source stopped before the end it was asked for (e.g. rtla's "hit stop
    /// tracing"), when it says so.
    pub stopped: Option<String>,
    /// What the source's command line states about how it measured.
    pub(crate) facts: RunFacts,
    /// The source's system information, as it wrote it.
    pub system: serde_json::Value,
    pub warnings: Vec<String>,
}

impl Imported {
    /// What `format` read: `threads`, and nothing else known yet.
    pub fn new(format: &'static SourceFormat, threads: Vec<SourceThread>) -> Self {
        Imported {
            format,
            kind: RunKind::Latency,
            threads,
            command_line: Vec::new(),
            started: None,
            duration_ns: None,
            failed: false,
            stopped: None,
            facts: RunFacts::default(),
            system: serde_json::Value::Null,
            warnings: Vec::new(),
        }
    }
}

/// How the source measured, as far as its command line (or the file) states it; None where it
/// does not. run.json takes these instead of placeholders, and `imported.absent` leaves them out.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct RunFacts {
    /// jitterlab's policy name: `fifo`, `rr`, `other`, `deadline`...
    pub policy: Option<String>,
    pub priority: Option<i32>,
    /// The period between wakeups, ns.
    pub interval_ns: Option<u64>,
    /// The tool locked its memory (cyclictest `-m`).
    pub(crate) memory_locked: Option<bool>,
    /// The duration it was asked to run, ns.
    pub duration_ns: Option<u64>,
}

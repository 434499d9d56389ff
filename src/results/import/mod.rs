//! `jitterlab import`: a result directory (format 1) from another tool's output, so that
//! report, compare and export work on it. One file per source format; each parses its text into
//! [`Imported`], and this module writes run.json and latency.hlog from that.
//!
//! What the source lacks stays absent: null in run.json where the field allows it, otherwise a
//! placeholder (0, "unknown") named in `imported.absent`. The histogram becomes one whole-run
//! interval per CPU in latency.hlog, each source bucket recorded at its printed value, so that
//! counts, min and max match what the tool printed (docs/import.md).

pub mod cyclictest_hist;
pub mod cyclictest_json;
pub mod oslat_json;
pub mod rtla_timerlat;

use crate::cli::{ImportArgs, ImportFormat};
use crate::error::{Failure, OrFailure, Result, escape_controls};
use crate::record::hlog::{self, HlogWriter};
use crate::record::stats::{LatencySummary, new_histogram};
use crate::results::ResultDir;
use crate::results::run_record::Ended;
use crate::results::run_record::{
    EnvironmentRecord, ImportRecord, PlanRecord, PmQosRecord, RunRecord, ThreadSummary,
};
use crate::units::format_ns;
use hdrhistogram::Histogram;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The largest file imported. The sources are histograms: a cyclictest --json with -h 10000 on
/// 64 threads is about 10 MiB, and a file far larger is the wrong file, or a device.
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// The most samples one histogram may hold: latency.hlog stores counts as signed 64-bit
/// numbers, and no run comes near it. A larger count, or counts whose sum is larger, is a
/// damaged file.
pub const MAX_SAMPLES: u64 = i64::MAX as u64;

/// The largest latency a source may print, in ns: run.json stores signed 64-bit ns (about 292
/// years).
pub const MAX_VALUE_NS: u64 = i64::MAX as u64;

/// Adds sample counts, refusing a sum above [`MAX_SAMPLES`].
pub fn add_counts(counts: impl IntoIterator<Item = u64>) -> std::result::Result<u64, String> {
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

/// The formats, by the names run.json's `imported.source_format` uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceFormat {
    CyclictestJson,
    CyclictestHist,
    RtlaTimerlatHist,
    OslatJson,
}

impl SourceFormat {
    pub fn name(self) -> &'static str {
        match self {
            SourceFormat::CyclictestJson => "cyclictest-json",
            SourceFormat::CyclictestHist => "cyclictest-histogram",
            SourceFormat::RtlaTimerlatHist => "rtla-timerlat-hist",
            SourceFormat::OslatJson => "oslat-json",
        }
    }

    fn parse(self, text: &str) -> std::result::Result<Imported, String> {
        match self {
            SourceFormat::CyclictestJson => cyclictest_json::parse(text),
            SourceFormat::CyclictestHist => cyclictest_hist::parse(text),
            SourceFormat::RtlaTimerlatHist => rtla_timerlat::parse(text),
            SourceFormat::OslatJson => oslat_json::parse(text),
        }
    }
}

/// A histogram as the source printed it, in the source's unit.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SourceHistogram {
    /// Nanoseconds per source unit (1000 for microseconds).
    pub unit_ns: u64,
    /// (printed bucket value, count), ascending; each count is recorded at value · unit_ns.
    pub buckets: Vec<(u64, u64)>,
    /// Samples beyond the last bucket, not in `buckets`.
    pub overflow: u64,
    /// The lowest value an overflow sample can have (source unit), as far as the file says.
    pub overflow_from: u64,
    /// The source's own figures (source unit), when it printed them.
    pub count: Option<u64>,
    pub min: Option<f64>,
    pub mean: Option<f64>,
    pub max: Option<f64>,
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
            return Ok(());
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
        Ok(())
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
    pub fn summary(&self) -> LatencySummary {
        let h = self.histogram();
        let samples = self.samples();
        if samples == 0 {
            return LatencySummary::default();
        }
        let unit = self.unit_ns as f64;
        let q = |quantile: f64| (!h.is_empty()).then(|| h.value_at_quantile(quantile));
        LatencySummary {
            samples,
            min_ns: self.min.map(|v| (v * unit).round() as i64),
            mean_ns: self.mean.map(|v| v * unit),
            // Not printed by any of the sources; not derived from 1 us buckets either.
            stddev_ns: None,
            p50_ns: q(0.50),
            p90_ns: q(0.90),
            p99_ns: q(0.99),
            p999_ns: q(0.999),
            p9999_ns: q(0.9999),
            max_ns: self.max.map(|v| (v * unit).round() as i64),
        }
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
    pub kernel_thread: Option<SourceHistogram>,
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
    pub format: SourceFormat,
    pub threads: Vec<SourceThread>,
    /// The source's command line, when it recorded it.
    pub command_line: Vec<String>,
    pub started: Option<SystemTime>,
    pub duration_ns: Option<u64>,
    /// The source tool reported failure.
    pub failed: bool,
    /// The source's system information, as it wrote it.
    pub system: serde_json::Value,
    pub warnings: Vec<String>,
}

/// Opens the JSON file of an rt-tests tool (cyclictest, oslat): parses it and returns it with
/// the tool's command line, after checking that `tool` wrote it.
pub fn rt_tests_json(
    text: &str,
    tool: &str,
) -> std::result::Result<(serde_json::Value, Vec<String>), String> {
    use serde_json::Value;
    let v: Value = serde_json::from_str(text).map_err(|e| format!("it is not valid JSON ({e})"))?;
    let command_line: Vec<String> = v
        .get("cmdline:")
        .or_else(|| v.get("cmdline"))
        .and_then(Value::as_str)
        .map(|c| c.split_whitespace().map(String::from).collect())
        .unwrap_or_default();
    if let Some(first) = command_line.first()
        && first.rsplit('/').next() != Some(tool)
    {
        return Err(format!("it was written by '{first}', not {tool}"));
    }
    Ok((v, command_line))
}

/// The per-thread objects of an rt-tests JSON file (`"thread": {"0": {...}, "1": {...}}`), in
/// thread order.
pub fn rt_tests_threads(
    v: &serde_json::Value,
) -> std::result::Result<Vec<(usize, &serde_json::Value)>, String> {
    let threads = v
        .get("thread")
        .and_then(serde_json::Value::as_object)
        .ok_or("it has no \"thread\" object")?;
    let mut entries: Vec<(usize, &serde_json::Value)> = threads
        .iter()
        .map(|(k, t)| {
            k.parse::<usize>()
                .map(|i| (i, t))
                .map_err(|_| format!("thread key '{k}' is not a thread number"))
        })
        .collect::<std::result::Result<_, _>>()?;
    entries.sort_by_key(|(i, _)| *i);
    Ok(entries)
}

/// `-h400`, `-h 400`, `--histogram=400`, `--histogram 400` from a command line.
pub fn option_value(args: &[String], short: &str, long: &str) -> Option<String> {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == short || a == long {
            return it.next().cloned();
        }
        if let Some(v) = a.strip_prefix(&format!("{long}=")) {
            return Some(v.to_string());
        }
        if short.len() == 2
            && let Some(v) = a.strip_prefix(short)
            && !v.is_empty()
            && !a.starts_with("--")
        {
            return Some(v.to_string());
        }
    }
    None
}

/// The latest time run.json can hold: RFC 3339 has four-digit years (9999-12-31T23:59:59Z).
const LAST_RFC3339_SECS: u64 = 253_402_300_799;

/// `2026-11-22T13:05:23Z`, or None for a time RFC 3339 cannot write (before 1970 here, or
/// after the year 9999).
pub fn rfc3339(t: SystemTime) -> Option<String> {
    let secs = t.duration_since(SystemTime::UNIX_EPOCH).ok()?.as_secs();
    (secs <= LAST_RFC3339_SECS).then(|| humantime::format_rfc3339_seconds(t).to_string())
}

/// An rt-tests time stamp read from `key` of `v`: None when absent; a warning when present
/// but not a time jitterlab reads, so that the run says why `started_utc` is empty.
pub fn rt_tests_time(
    v: &serde_json::Value,
    key: &str,
    warnings: &mut Vec<String>,
) -> Option<SystemTime> {
    let text = v.get(key)?.as_str()?;
    let t = parse_rt_tests_time(text);
    if t.is_none() {
        warnings.push(format!(
            "{key} '{text}' is not a time jitterlab reads (rt-tests' 'Sun, 22 Nov 2026 13:05:23 +0000', years 1970 to 9999); it is left out"
        ));
    }
    t
}

/// rt-tests' JSON time stamps, e.g. `Sun, 22 Nov 2026 13:05:23 +0000`; None for anything
/// else, including dates RFC 3339 (run.json) cannot hold.
pub fn parse_rt_tests_time(text: &str) -> Option<SystemTime> {
    let parts: Vec<&str> = text.split_whitespace().collect();
    let [_, day, month, year, clock, zone] = parts.as_slice() else {
        return None;
    };
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .iter()
    .position(|m| m == month)? as i64
        + 1;
    let (day, year): (i64, i64) = (day.parse().ok()?, year.parse().ok()?);
    let hms: Vec<i64> = clock
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let [h, m, s] = hms.as_slice() else {
        return None;
    };
    // Bounded fields keep the arithmetic below far from overflow.
    let in_range = (1970..=9999).contains(&year)
        && (1..=31).contains(&day)
        && (0..24).contains(h)
        && (0..60).contains(m)
        && (0..=60).contains(s);
    if !in_range {
        return None;
    }
    let sign = if zone.starts_with('-') { -1 } else { 1 };
    let zone = zone.strip_prefix(['+', '-'])?;
    if zone.len() != 4 {
        return None;
    }
    let zone: i64 = zone.parse().ok()?;
    let offset = sign * ((zone / 100) * 3600 + (zone % 100) * 60);
    // Days since 1970-01-01 of a proleptic Gregorian date (era arithmetic, 400-year cycles).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + m * 60 + s - offset;
    let t = SystemTime::UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).ok()?);
    rfc3339(t).map(|_| t)
}

/// Recognises a file's format from its content; the error says what was recognised.
pub fn detect(text: &str) -> std::result::Result<SourceFormat, String> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') {
        let v: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| format!("it starts like JSON but is not valid JSON ({e})"))?;
        let tool = v
            .get("cmdline:")
            .or_else(|| v.get("cmdline"))
            .and_then(|c| c.as_str())
            .and_then(|c| c.split_whitespace().next())
            .map(|t| t.rsplit('/').next().unwrap_or(t).to_string());
        let first_thread = v
            .get("thread")
            .and_then(|t| t.as_object())
            .and_then(|t| t.values().next());
        return match (tool.as_deref(), first_thread) {
            (Some("cyclictest"), _) => Ok(SourceFormat::CyclictestJson),
            (Some("oslat"), _) => Ok(SourceFormat::OslatJson),
            (_, Some(t)) if t.get("cycles").is_some() => Ok(SourceFormat::CyclictestJson),
            (_, Some(t)) if t.get("freq").is_some() => Ok(SourceFormat::OslatJson),
            _ => Err(format!(
                "it is JSON{} but neither cyclictest's (thread.N.cycles) nor oslat's (thread.N.freq)",
                tool.map_or(String::new(), |t| format!(" written by '{t}'"))
            )),
        };
    }
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    if lines
        .iter()
        .any(|l| l.starts_with("# RTLA timerlat histogram"))
        || lines
            .iter()
            .any(|l| l.starts_with("Index") && (l.contains("IRQ-") || l.contains("Thr-")))
    {
        return Ok(SourceFormat::RtlaTimerlatHist);
    }
    if lines.iter().any(|l| l.starts_with("# Max Latencies:")) || lines.contains(&"# Histogram") {
        return Ok(SourceFormat::CyclictestHist);
    }
    if lines.iter().any(|l| l.starts_with("oslat V")) {
        return Err(
            "it is oslat's text output; import the file of oslat --json=FILE instead".into(),
        );
    }
    if lines.iter().any(|l| l.starts_with("# RTLA osnoise")) {
        return Err("it is rtla osnoise output; only rtla timerlat hist is imported".into());
    }
    if lines
        .iter()
        .any(|l| l.starts_with("T:") && l.contains("Max:"))
    {
        return Err(
            "it is cyclictest's per-thread status output without a histogram; run cyclictest with -h N (and -q), or with --json=FILE"
                .into(),
        );
    }
    Err("it is neither JSON nor a histogram text jitterlab knows".into())
}

/// Runs `jitterlab import`.
pub fn command(args: &ImportArgs) -> Result<PathBuf> {
    let text = crate::input::read_text(&args.file, MAX_FILE_BYTES).map_err(|e| {
        Failure::usage(format!(
            "{}: {e}; give the file of a tool listed in docs/import.md",
            args.file.display()
        ))
    })?;
    let accepted = "accepted: cyclictest --json=FILE, cyclictest -h N output, rtla timerlat hist output, oslat --json=FILE (see docs/import.md)";
    let format = match args.format {
        ImportFormat::Auto => detect(&text).map_err(|why| {
            Failure::usage(format!(
                "{}: not a format jitterlab imports: {why}; {accepted}",
                args.file.display()
            ))
        })?,
        ImportFormat::CyclictestJson => SourceFormat::CyclictestJson,
        ImportFormat::CyclictestHist => SourceFormat::CyclictestHist,
        ImportFormat::RtlaTimerlatHist => SourceFormat::RtlaTimerlatHist,
        ImportFormat::OslatJson => SourceFormat::OslatJson,
    };
    let imported = format
        .parse(&text)
        .and_then(|i| {
            i.threads
                .iter()
                .try_for_each(SourceThread::check)
                .map_err(|e| format!("{e}; the file contradicts itself and is not imported"))
                .map(|_| i)
        })
        .map_err(|why| {
            Failure::usage(format!(
                "{}: read as {}, but {why}",
                args.file.display(),
                format.name()
            ))
        })?;
    let out = match &args.out {
        Some(out) => out.clone(),
        None => {
            let stem = args
                .file
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "source".into());
            PathBuf::from("jitterlab-results").join(format!("imported-{stem}"))
        }
    };
    // Made new (an existing name is refused, exit 2); removed again if the import fails.
    let claim = ResultDir::create(&out, "import --out")?;
    let record = write_result(&imported, &args.file, claim.dir())?;
    claim.keep();
    print!("{}", summary(&record, &out));
    Ok(out)
}

/// Placeholders written where run.json has no null; listed in `imported.absent`.
const ABSENT_ALWAYS: &[&str] = &[
    "plan",
    "environment",
    "start_monotonic_ns",
    "tid",
    "interval_ns",
    "deadline_ns",
    "missed_periods",
    "dropped_records",
    "deadline_misses",
    "early_wakeups",
];

/// Writes the files of the new result directory and returns its run.json.
pub fn write_result(
    imported: &Imported,
    source: &Path,
    result_dir: &ResultDir,
) -> Result<RunRecord> {
    let out = &result_dir.path;
    let start = imported.started.unwrap_or(SystemTime::UNIX_EPOCH);
    let length = Duration::from_nanos(imported.duration_ns.unwrap_or(0));
    let with_histograms: Vec<&SourceThread> = imported
        .threads
        .iter()
        .filter(|t| !t.latency.buckets.is_empty() || t.latency.overflow > 0)
        .collect();
    if !with_histograms.is_empty() {
        let path = result_dir.file(hlog::FILE_NAME);
        let mut w = HlogWriter::new(
            result_dir
                .create_file(hlog::FILE_NAME)
                .or_run(|| format!("cannot create {}", path.display()))?,
        );
        let write = |w: &mut HlogWriter| -> std::io::Result<()> {
            w.begin(
                start,
                &format!(
                    "jitterlab {} import of {} ({}): one whole-run interval per CPU",
                    env!("CARGO_PKG_VERSION"),
                    source.display(),
                    imported.format.name()
                ),
            )?;
            for t in &with_histograms {
                let cpu = t.cpu;
                w.write_interval(
                    &format!("cpu{cpu}"),
                    Duration::ZERO,
                    length,
                    &t.latency.histogram(),
                )?;
                if let Some(irq) = &t.irq {
                    w.write_interval(
                        &format!("cpu{cpu}.irq"),
                        Duration::ZERO,
                        length,
                        &irq.histogram(),
                    )?;
                }
                if let Some(thr) = &t.kernel_thread {
                    w.write_interval(
                        &format!("cpu{cpu}.thr"),
                        Duration::ZERO,
                        length,
                        &thr.histogram(),
                    )?;
                }
            }
            Ok(())
        };
        write(&mut w).or_run(|| format!("cannot write {}", path.display()))?;
    }

    let mut absent: Vec<String> = ABSENT_ALWAYS.iter().map(|s| s.to_string()).collect();
    if imported.started.is_none() {
        absent.push("started_utc".into());
    }
    if imported.command_line.is_empty() {
        absent.push("command_line".into());
    }
    if with_histograms.len() < imported.threads.len() {
        absent.push("latency.hlog".into());
    }
    let mut warnings = imported.warnings.clone();
    for t in &imported.threads {
        let h = &t.latency;
        if h.overflow > 0 {
            let unit = h.unit_ns;
            warnings.push(format!(
                "CPU {}: {} beyond the source histogram (at or above {}); recorded at {}{}, so percentiles that fall among them are lower bounds",
                t.cpu,
                if h.overflow == 1 { "1 sample was".to_string() } else { format!("{} samples were", h.overflow) },
                format_ns(h.overflow_from * unit),
                format_ns(h.overflow_from * unit),
                match h.max {
                    Some(m) if m >= h.overflow_from as f64 => format!(
                        " except one at the printed maximum {}",
                        format_ns((m * unit as f64) as u64)
                    ),
                    _ => String::new(),
                }
            ));
        }
    }
    let cpus: Vec<usize> = imported.threads.iter().map(|t| t.cpu).collect();
    let record = RunRecord {
        ended_utc: match (imported.started, imported.duration_ns) {
            (Some(s), Some(d)) => s.checked_add(Duration::from_nanos(d)).and_then(rfc3339),
            _ => None,
        },
        duration_ns: imported.duration_ns,
        ended: if imported.failed {
            Ended::Failed
        } else {
            Ended::Completed
        },
        end_reason: imported
            .failed
            .then(|| format!("{} reported failure", imported.format.name())),
        threads: imported
            .threads
            .iter()
            .enumerate()
            .map(|(i, t)| ThreadSummary {
                cpu: t.cpu,
                thread_index: i,
                tid: 0,
                interval_ns: 0,
                deadline_ns: 0,
                latency: t.latency.summary(),
                missed_periods: 0,
                dropped_records: 0,
                deadline_misses: 0,
                early_wakeups: 0,
                end: "completed".into(),
                irq_latency: t.irq.as_ref().map(SourceHistogram::summary),
            })
            .collect(),
        warnings,
        imported: Some(ImportRecord {
            source_format: imported.format.name().into(),
            source_file: source.display().to_string(),
            per_interval: false,
            absent,
        }),
        ..RunRecord::new(
            imported.command_line.clone(),
            PlanRecord {
                cpus: cpus.clone(),
                policy: "unknown".into(),
                priority: 0,
                deadline_runtime_ns: None,
                wake: "unknown".into(),
                clock: "unknown".into(),
                interval_ns: 0,
                distance_ns: 0,
                interval_step_ns: 0,
                duration_ns: imported.duration_ns,
                loops: None,
                deadline_ns: None,
                log_interval_ns: imported.duration_ns.unwrap_or(0),
                loads: Vec::new(),
                samples: false,
                ring_size: 0,
                mlock: false,
                pm_qos_us: None,
                trace: false,
                explain_above_ns: None,
            },
            imported.system.clone(),
            // Nothing was changed: the source tool measured, not jitterlab.
            EnvironmentRecord {
                memory_locked: false,
                stack_prefaulted_bytes: 0,
                pm_qos: PmQosRecord::default(),
            },
            imported.started.and_then(rfc3339).unwrap_or_default(),
            0,
        )
    };
    result_dir
        .write_run_record(&record)
        .or_run(|| format!("cannot write run.json in {}", out.display()))?;
    Ok(record)
}

fn summary(record: &RunRecord, out: &Path) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let source = record.imported.as_ref().expect("an import");
    let _ = writeln!(
        s,
        "Imported {} ({}): {} CPU{}",
        escape_controls(&source.source_file),
        source.source_format,
        record.threads.len(),
        if record.threads.len() == 1 { "" } else { "s" }
    );
    let fmt = |v: Option<i64>| v.map_or("-".into(), |v| format_ns(v.max(0) as u64));
    let fmtu = |v: Option<u64>| v.map_or("-".into(), format_ns);
    for t in &record.threads {
        let l = &t.latency;
        let _ = writeln!(
            s,
            "  CPU {}: {} samples, min {}, p99 {}, p99.9 {}, max {}",
            t.cpu,
            l.samples,
            fmt(l.min_ns),
            fmtu(l.p99_ns),
            fmtu(l.p999_ns),
            fmt(l.max_ns)
        );
        if let Some(irq) = &t.irq_latency {
            let _ = writeln!(
                s,
                "         IRQ: {} samples, min {}, max {}",
                irq.samples,
                fmt(irq.min_ns),
                fmt(irq.max_ns)
            );
        }
    }
    // Warnings quote the file (keys, time stamps): escaped like every message.
    for w in &record.warnings {
        let _ = writeln!(s, "  ! {}", escape_controls(w));
    }
    let _ = writeln!(
        s,
        "Results: {}",
        escape_controls(&out.display().to_string())
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_rt_tests_time_stamps() {
        let t = parse_rt_tests_time("Sun, 22 Nov 2026 13:05:23 +0000").unwrap();
        assert_eq!(
            humantime::format_rfc3339_seconds(t).to_string(),
            "2026-11-22T13:05:23Z"
        );
        let t = parse_rt_tests_time("Tue, 01 Mar 2022 01:00:00 +0100").unwrap();
        assert_eq!(
            humantime::format_rfc3339_seconds(t).to_string(),
            "2022-03-01T00:00:00Z"
        );
        assert!(parse_rt_tests_time("yesterday").is_none());
    }

    #[test]
    fn time_stamps_beyond_what_run_json_holds_are_not_read() {
        for text in [
            "Sun, 22 Nov 9999999 13:05:23 +0000",
            "Sun, 22 Nov 99999999999999999 13:05:23 +0000",
            "Fri, 31 Dec 9999 23:59:59 -0100",
            "Sun, 22 Nov 1969 13:05:23 +0000",
            "Sun, 99 Nov 2026 13:05:23 +0000",
            "Sun, 22 Nov 2026 99:05:23 +0000",
            "Sun, 22 Nov 2026 13:05:23 +99999999999999999",
        ] {
            assert!(parse_rt_tests_time(text).is_none(), "{text}");
        }
        let last = parse_rt_tests_time("Fri, 31 Dec 9999 23:59:59 +0000").unwrap();
        assert_eq!(rfc3339(last).unwrap(), "9999-12-31T23:59:59Z");
        assert_eq!(rfc3339(last + Duration::from_secs(1)), None);
        let mut warnings = Vec::new();
        let v = serde_json::json!({"start_time": "Sun, 22 Nov 9999999 13:05:23 +0000"});
        assert_eq!(rt_tests_time(&v, "start_time", &mut warnings), None);
        assert!(
            warnings[0].contains("start_time 'Sun, 22 Nov 9999999"),
            "{warnings:?}"
        );
    }

    fn histogram() -> SourceHistogram {
        SourceHistogram {
            unit_ns: 1000,
            buckets: vec![(11, 2), (12, 3)],
            overflow: 0,
            overflow_from: 400,
            count: Some(5),
            min: Some(11.0),
            mean: Some(11.6),
            max: Some(12.0),
        }
    }

    #[test]
    fn contradictions_are_refused() {
        assert_eq!(histogram().check(), Ok(()));
        let refused = |change: &dyn Fn(&mut SourceHistogram), needle: &str| {
            let mut h = histogram();
            change(&mut h);
            let e = h.check().unwrap_err();
            assert!(e.contains(needle), "'{needle}' not in: {e}");
        };
        refused(
            &|h| h.min = Some(50.0),
            "its min (50.0 us) is above its max (12.0 us)",
        );
        refused(&|h| h.mean = Some(20.0), "its avg (20.0 us) is outside");
        refused(
            &|h| h.max = Some(300_000.0),
            "its max (300.00 ms) is beyond the end of its histogram (400.0 us)",
        );
        refused(
            &|h| {
                h.max = Some(11.0);
                h.mean = Some(11.0);
            },
            "3 samples at 12.0 us but its max is 11.0 us",
        );
        refused(
            &|h| {
                h.overflow = 2;
                h.count = Some(7);
            },
            "2 samples are counted beyond its histogram (at or above 400.0 us), yet its max is 12.0 us",
        );
        refused(
            &|h| h.max = Some(f64::NAN),
            "its max (NaN) is not a latency",
        );
        refused(
            &|h| h.buckets.push((u64::MAX, 1)),
            "a histogram bucket at 18446744073709551615 x 1000 ns",
        );
        refused(&|h| h.overflow_from = u64::MAX, "its histogram ends at");
    }

    #[test]
    fn counts_beyond_what_a_histogram_holds_are_refused_not_wrapped() {
        let mut h = histogram();
        h.buckets = vec![(11, u64::MAX / 2), (12, u64::MAX / 2)];
        h.count = None;
        assert!(
            h.in_range()
                .unwrap_err()
                .contains("more than 9223372036854775807 samples")
        );
        assert!(h.check().unwrap_err().contains("add up to more than"));
        h.buckets = vec![(11, 1)];
        h.count = Some(u64::MAX);
        assert!(
            h.check()
                .unwrap_err()
                .contains("count of 18446744073709551615")
        );
        assert_eq!(add_counts([MAX_SAMPLES, 0]), Ok(MAX_SAMPLES));
        assert!(add_counts([MAX_SAMPLES, 1]).is_err());
    }

    #[test]
    fn every_format_parses_and_checks_the_captured_files() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/import");
        for name in [
            "cyclictest.json",
            "cyclictest-hist.txt",
            "cyclictest-hist-overflow.txt",
            "oslat.json",
            "rtla-timerlat-hist.txt",
            "rtla-timerlat-hist-user.txt",
        ] {
            let text = std::fs::read_to_string(dir.join(name)).unwrap();
            let imported = detect(&text).and_then(|f| f.parse(&text)).unwrap();
            for t in &imported.threads {
                t.check().unwrap_or_else(|e| panic!("{name}: {e}"));
            }
            // A BOM in front changes nothing once read through crate::input.
            let path = std::env::temp_dir().join(format!("jl-bom-{}-{name}", std::process::id()));
            std::fs::write(&path, format!("\u{feff}{text}")).unwrap();
            let with_bom = crate::input::read_text(&path, MAX_FILE_BYTES).unwrap();
            std::fs::remove_file(&path).unwrap();
            assert_eq!(detect(&with_bom), detect(&text), "{name}");
        }
    }

    #[test]
    fn finds_options_in_every_spelling() {
        let args = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        for cmd in [
            "cyclictest -h400",
            "cyclictest -h 400",
            "cyclictest --histogram=400",
            "cyclictest -m --histogram 400",
        ] {
            assert_eq!(
                option_value(&args(cmd), "-h", "--histogram").as_deref(),
                Some("400"),
                "{cmd}"
            );
        }
        assert_eq!(
            option_value(&args("cyclictest -m"), "-h", "--histogram"),
            None
        );
    }

    #[test]
    fn overflow_goes_to_the_threshold_and_one_to_the_max() {
        let h = SourceHistogram {
            unit_ns: 1000,
            buckets: vec![(11, 2), (12, 3)],
            overflow: 3,
            overflow_from: 400,
            count: Some(8),
            min: Some(11.0),
            mean: Some(100.0),
            max: Some(421.0),
        };
        let hist = h.histogram();
        assert_eq!(hist.len(), 8);
        assert_eq!(hist.count_at(400_000), 2);
        assert_eq!(hist.count_at(421_000), 1);
        let s = h.summary();
        assert_eq!(
            (s.min_ns, s.max_ns, s.samples),
            (Some(11_000), Some(421_000), 8)
        );
        assert_eq!(s.p50_ns, Some(hist.highest_equivalent(12_000)));
    }
}

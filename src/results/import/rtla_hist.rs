//! The histogram table that `rtla timerlat hist` and `rtla osnoise hist` both print
//! (tools/tracing/rtla/src/{timerlat,osnoise}_hist.c): a header (`# RTLA ... histogram`,
//! `# Time unit is microseconds (us)` or nanoseconds, `# Duration: D HH:MM:SS`), the column
//! line `Index NAME-000 NAME-001 ...` (timerlat: IRQ, Thr, Usr; osnoise: CPU), one row per
//! non-empty bucket (`index` is the bucket's lowest value: bucket number x bucket size), then
//! per column `over:` (samples beyond the last bucket), `count:` (all samples, over included),
//! `min:`, `avg:`, `max:` (`-` without samples), and, in timerlat, an `ALL:` block of totals
//! that is not needed here. rtla prints `... hit stop tracing` when a threshold stopped it.
//!
//! With `--no-header` (as LAVA's rtla jobs save it) the header and the column line are left
//! out: the rows and summary lines are all there, but nothing names the columns. rtla prints
//! them per CPU in increasing order (a CPU without samples left out), and per CPU in a fixed
//! order (timerlat: IRQ, Thr, Usr; each left out by `--no-irq`, `--no-thread`, present with
//! `-u`), so the user who knows the CPUs and the kinds names them all ([`NoHeaderLayout`]).

use super::pasted::without_comment;
use super::{SourceHistogram, add_counts};

/// One named column of the table, as a histogram in the table's unit.
pub(super) struct Column {
    /// The name before the CPU number: `IRQ`, `Thr`, `Usr`, `CPU`.
    pub name: String,
    pub cpu: usize,
    pub histogram: SourceHistogram,
}

/// The columns of a table printed without its header, as the user names them (`jitterlab
/// import --cpus --columns --time-unit`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NoHeaderLayout {
    /// The CPUs, in increasing order (rtla's).
    pub cpus: Vec<usize>,
    /// The columns of each CPU as rtla names them (`IRQ`, `Thr`, `Usr`, `CPU`), in rtla's order.
    pub columns: Vec<&'static str>,
    /// What the user gave, for messages: `--cpus` and `--columns` as written.
    pub(crate) cpus_given: String,
    pub(crate) columns_given: String,
    /// The unit: 1000 (us, rtla's default) or 1 (`rtla -n`): the header that says it is gone.
    pub(crate) unit_ns: u64,
}

impl NoHeaderLayout {
    fn width(&self) -> usize {
        self.cpus.len() * self.columns.len()
    }

    /// The refusal of a row of another width, naming the numbers and what makes them.
    fn wrong_width(&self, n: usize, line: &str, values: usize) -> String {
        format!(
            "line {} ('{line}') holds {values} values where --cpus {} x --columns {} make {} columns ({} CPUs x {}); give the CPUs whose columns the file holds (rtla leaves out a CPU without samples) and the kinds it printed (no IRQ with --no-irq, no Thr with --no-thread, Usr with -u)",
            n + 1,
            self.cpus_given,
            self.columns_given,
            self.width(),
            self.cpus.len(),
            self.columns.len()
        )
    }
}

/// What an import without the header took from the user, for run.json's warnings.
pub(crate) fn no_header_warning(layout: &NoHeaderLayout) -> String {
    format!(
        "rtla --no-header output: the columns are as named on the command line (--cpus {} --columns {}) and the unit is {}, since the header that names them was not saved; the duration is unknown",
        layout.cpus_given,
        layout.columns_given,
        if layout.unit_ns == 1 {
            "ns (--time-unit ns)"
        } else {
            "us (rtla's default; --time-unit ns for rtla -n output)"
        }
    )
}

/// What the table holds.
pub(crate) struct Table {
    pub columns: Vec<Column>,
    pub duration_ns: Option<u64>,
    /// Why rtla stopped early, when it says so.
    pub stopped: Option<String>,
}

#[derive(Default)]
struct Figures {
    buckets: Vec<(u64, u64)>,
    over: Option<u64>,
    count: Option<u64>,
    min: Option<f64>,
    avg: Option<f64>,
    max: Option<f64>,
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// `0 00:10:00` → ns.
pub(crate) fn parse_duration(text: &str) -> Option<u64> {
    let (days, clock) = text.trim().split_once(' ')?;
    let days: u64 = days.trim().parse().ok()?;
    let hms: Vec<u64> = clock
        .trim()
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let [h, m, s] = hms.as_slice() else {
        return None;
    };
    // Checked: a damaged header must not overflow (None leaves the duration out).
    days.checked_mul(24)?
        .checked_add(*h)?
        .checked_mul(60)?
        .checked_add(*m)?
        .checked_mul(60)?
        .checked_add(*s)?
        .checked_mul(1_000_000_000)
}

/// Reads the table; `names` are the column names this tool prints. `Ok` with no columns
/// when there is no `Index` line (the caller says why that cannot be read).
pub(super) fn read(text: &str, names: &[&str]) -> Result<Table, String> {
    read_table(text, names, None)
}

/// Reads a table printed without its header (`rtla --no-header`), its columns as `layout`
/// names them. Refused: a text with a column line (it names its own columns), one without
/// rtla's `over:` line (not rtla hist output), and a row of another width than the layout's.
pub(crate) fn read_no_header(text: &str, layout: &NoHeaderLayout) -> Result<Table, String> {
    let table = read_table(text, &layout.columns, Some(layout))?;
    if !text.lines().any(|l| l.trim_start().starts_with("over:")) {
        return Err("it has no 'over:' line, which rtla hist prints after its rows: it is not rtla hist output (or was saved with --no-index, whose rows carry no latency)".into());
    }
    Ok(table)
}

fn read_table(
    text: &str,
    names: &[&str],
    layout: Option<&NoHeaderLayout>,
) -> Result<Table, String> {
    let mut unit_ns = layout.map_or(1000, |l| l.unit_ns);
    let mut duration_ns = None;
    let mut columns: Vec<(String, usize, Figures)> = Vec::new();
    if let Some(layout) = layout {
        for &cpu in &layout.cpus {
            for name in &layout.columns {
                columns.push((name.to_string(), cpu, Figures::default()));
            }
        }
    }
    for (n, raw) in text.lines().enumerate() {
        let line = without_comment(raw.trim());
        if let Some(rest) = line.strip_prefix("# Time unit is ") {
            unit_ns = if rest.starts_with("nanoseconds") {
                1
            } else if rest.starts_with("microseconds") {
                1000
            } else {
                return Err(format!("line {}: unknown time unit '{rest}'", n + 1));
            };
            continue;
        }
        if let Some(rest) = line.strip_prefix("# Duration:") {
            duration_ns = parse_duration(rest);
            continue;
        }
        if line.starts_with("Index") {
            if layout.is_some() {
                return Err(format!(
                    "line {} ('{line}') names the columns: the file has its column line, so import it without --cpus and --columns",
                    n + 1
                ));
            }
            columns.extend(column_names(line, n, names)?);
            continue;
        }
        if line.starts_with("ALL:") {
            // Totals over all CPUs follow; every per-CPU figure is already read.
            break;
        }
        if columns.is_empty() || line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(layout) = layout {
            let values = line.split_whitespace().count() - 1;
            if is_data_line(line) && values != layout.width() {
                return Err(layout.wrong_width(n, line, values));
            }
        }
        read_row(line, n, &mut columns)?;
    }
    Ok(Table {
        columns: into_histograms(columns, unit_ns)?,
        duration_ns,
        stopped: stop_line(text.lines().map(str::trim)).map(|line| format!(
            "rtla stopped tracing because a value crossed its stop threshold ('{line}'); the histograms end there"
        )),
    })
}

/// The line where rtla says a stop threshold ended the run (`... hit stop tracing`), which
/// the histogram and the top tables all print.
pub(crate) fn stop_line<'t>(mut lines: impl Iterator<Item = &'t str>) -> Option<&'t str> {
    lines.find(|l| l.contains("hit stop tracing"))
}

/// The columns the `Index` line (line `n`, 0-based) names: `NAME-CPU`, NAME one of `names`.
fn column_names(
    line: &str,
    n: usize,
    names: &[&str],
) -> Result<Vec<(String, usize, Figures)>, String> {
    let mut columns = Vec::new();
    for column in line.split_whitespace().skip(1) {
        let (name, cpu) = column
            .split_once('-')
            .filter(|(name, _)| names.contains(name))
            .and_then(|(name, c)| Some((name.to_string(), c.parse::<usize>().ok()?)))
            .ok_or_else(|| {
                format!(
                    "line {}: column '{column}' is not {}",
                    n + 1,
                    names
                        .iter()
                        .map(|k| format!("{k}-N"))
                        .collect::<Vec<_>>()
                        .join(" or ")
                )
            })?;
        columns.push((name, cpu, Figures::default()));
    }
    Ok(columns)
}

/// Whether a line is a bucket row or one of the summary lines (the lines with a value per
/// column).
fn is_data_line(line: &str) -> bool {
    let head = line.split_whitespace().next().unwrap_or_default();
    head.parse::<u64>().is_ok()
        || matches!(
            head.strip_suffix(':'),
            Some("over" | "count" | "min" | "avg" | "max")
        )
}

/// Adds line `n` (0-based), a bucket row or one of the `over:`, `count:`, `min:`, `avg:`,
/// `max:` lines, to the columns; other lines are rtla's messages around the table.
fn read_row(line: &str, n: usize, columns: &mut [(String, usize, Figures)]) -> Result<(), String> {
    let mut fields = line.split_whitespace();
    let head = fields.next().unwrap_or_default();
    let values: Vec<&str> = fields.collect();
    let label = head.strip_suffix(':');
    if !is_data_line(line) {
        return Ok(()); // messages rtla prints around the table
    }
    if values.len() != columns.len() {
        return Err(format!(
            "line {} ('{line}') has {} values for {} columns",
            n + 1,
            values.len(),
            columns.len()
        ));
    }
    let number = |v: &str| -> Result<Option<f64>, String> {
        // rtla prints an unset min/max as - or as the unsigned 2^64−1.
        if v == "-" || v == "18446744073709551615" {
            return Ok(None);
        }
        v.parse::<f64>()
            .map(Some)
            .map_err(|_| format!("line {} has '{v}' where a number belongs", n + 1))
    };
    let count = |v: &str| -> Result<u64, String> {
        v.parse::<u64>()
            .map_err(|_| format!("line {} has '{v}' where a count belongs", n + 1))
    };
    for (value, (_, _, col)) in values.iter().zip(columns.iter_mut()) {
        match label {
            None => {
                let c = count(value)?;
                if c > 0 {
                    col.buckets.push((head.parse().expect("checked"), c));
                }
            }
            Some("over") => col.over = Some(count(value)?),
            Some("count") => col.count = Some(count(value)?),
            Some("min") => col.min = number(value)?,
            Some("avg") => col.avg = number(value)?,
            Some("max") => col.max = number(value)?,
            _ => unreachable!(),
        }
    }
    Ok(())
}

/// Makes each column's figures a histogram, checking that its rows and `over:` add up to its
/// `count:`.
fn into_histograms(
    columns: Vec<(String, usize, Figures)>,
    unit_ns: u64,
) -> Result<Vec<Column>, String> {
    // Rows are printed at index · bucket size; the step between them tells the bucket size.
    let indices: Vec<u64> = columns
        .iter()
        .flat_map(|(_, _, c)| c.buckets.iter().map(|&(v, _)| v))
        .collect();
    let bucket = indices.iter().fold(0, |g, &v| gcd(g, v)).max(1);
    let last_row = indices.iter().copied().max().unwrap_or(0);
    columns
        .into_iter()
        .map(|(name, cpu, c)| {
            let what = format!("{name}-{cpu:03}");
            let histogram = SourceHistogram {
                unit_ns,
                overflow: c.over.unwrap_or(0),
                overflow_from: last_row + bucket,
                count: c.count,
                min: c.min,
                mean: c.avg,
                max: c.max,
                buckets: c.buckets,
                quantiles: Vec::new(),
                stddev: None,
            };
            let sum = add_counts(
                histogram
                    .buckets
                    .iter()
                    .map(|&(_, c)| c)
                    .chain([histogram.overflow]),
            )
            .map_err(|e| format!("{what}: {e}"))?;
            if let Some(count) = c.count
                && sum != count
            {
                return Err(format!(
                    "{what}: rows and over: add up to {sum} samples but count: says {count}"
                ));
            }
            Ok(Column {
                name,
                cpu,
                histogram,
            })
        })
        .collect()
}

//! What `rtla timerlat hist` prints (Documentation/tools/rtla/rtla-timerlat-hist.rst): a
//! header (`# RTLA timerlat histogram`, `# Time unit is microseconds (us)` or nanoseconds,
//! `# Duration: D HH:MM:SS`), the column line `Index IRQ-000 Thr-000 [Usr-000] IRQ-001 ...`,
//! one row per non-empty bucket (`index` is the bucket's lowest value), then per column
//! `over:` (samples beyond the last bucket), `count:` (all samples), `min:`, `avg:`, `max:`
//! (`-` without samples), and an `ALL:` block of totals that is not needed here.
//!
//! The latency a task sees is the Usr column (rtla -u, a user-space thread) or else the Thr
//! column (the timerlat kernel thread); IRQ is the timer interrupt's latency. A Usr column
//! without samples (its user thread never woke: count 0, figures `-` or 2^64−1, rtla's
//! unset value) leaves Thr as the latency, so that the CPU's histograms are kept.
//!
//! rtla stops early when a latency crosses `-i`/`-T` and prints `rtla timerlat hit stop
//! tracing`: such a run is recorded as interrupted, with that reason.

use super::{Imported, RunFacts, SourceFormat, SourceHistogram, SourceThread, add_counts};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Irq,
    Thr,
    Usr,
}

#[derive(Debug, Default)]
struct Column {
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
fn parse_duration(text: &str) -> Option<u64> {
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

/// Why output without the column line cannot be read.
pub const NO_HEADER: &str = "it is rtla timerlat hist output without its column line 'Index IRQ-000 Thr-000 ...' (rtla --no-header, as LAVA's job saves it): the columns are not named, so which CPU and which of IRQ, Thr and Usr each column is cannot be known; capture without --no-header";

pub static FORMAT: SourceFormat = SourceFormat {
    name: "rtla-timerlat-hist",
    help: "what rtla timerlat hist prints: IRQ, Thr (and Usr) columns per CPU",
    parse,
};

pub fn parse(text: &str) -> Result<Imported, String> {
    let mut unit_ns = 1000;
    let mut duration_ns = None;
    let mut columns: Vec<(Kind, usize, Column)> = Vec::new();
    // rtla prints it after the histogram (and its ALL: block).
    let stopped = text
        .lines()
        .map(str::trim)
        .find(|l| l.contains("hit stop tracing"))
        .map(|line| format!(
            "rtla stopped tracing because a latency crossed its stop threshold ('{line}'); the histograms end there"
        ));
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
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
            for name in line.split_whitespace().skip(1) {
                let (kind, cpu) = name
                    .split_once('-')
                    .and_then(|(k, c)| {
                        let kind = match k {
                            "IRQ" => Kind::Irq,
                            "Thr" => Kind::Thr,
                            "Usr" => Kind::Usr,
                            _ => return None,
                        };
                        Some((kind, c.parse::<usize>().ok()?))
                    })
                    .ok_or_else(|| {
                        format!(
                            "line {}: column '{name}' is not IRQ-N, Thr-N or Usr-N",
                            n + 1
                        )
                    })?;
                columns.push((kind, cpu, Column::default()));
            }
            continue;
        }
        if line.starts_with("ALL:") {
            // Totals over all CPUs follow; every per-CPU figure is already read.
            break;
        }
        if columns.is_empty() || line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut fields = line.split_whitespace();
        let head = fields.next().unwrap_or_default();
        let values: Vec<&str> = fields.collect();
        let label = head.strip_suffix(':');
        let is_row = head.parse::<u64>().is_ok();
        if !is_row && !matches!(label, Some("over" | "count" | "min" | "avg" | "max")) {
            continue; // messages rtla prints around the table
        }
        if values.len() != columns.len() {
            return Err(format!(
                "line {} ('{line}') has {} values for {} columns",
                n + 1,
                values.len(),
                columns.len()
            ));
        }
        for (value, (_, _, col)) in values.iter().zip(columns.iter_mut()) {
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
    }
    if columns.is_empty() {
        return Err(NO_HEADER.into());
    }
    // Rows are printed at index · bucket size; the step between them tells the bucket size.
    let indices: Vec<u64> = columns
        .iter()
        .flat_map(|(_, _, c)| c.buckets.iter().map(|&(v, _)| v))
        .collect();
    let bucket = indices.iter().fold(0, |g, &v| gcd(g, v)).max(1);
    let last_row = indices.iter().copied().max().unwrap_or(0);
    let histogram = |c: &Column, what: &str| -> Result<SourceHistogram, String> {
        let h = SourceHistogram {
            unit_ns,
            buckets: c.buckets.clone(),
            overflow: c.over.unwrap_or(0),
            overflow_from: last_row + bucket,
            count: c.count,
            min: c.min,
            mean: c.avg,
            max: c.max,
            quantiles: Vec::new(),
            stddev: None,
        };
        let sum = add_counts(h.buckets.iter().map(|&(_, c)| c).chain([h.overflow]))
            .map_err(|e| format!("{what}: {e}"))?;
        if let Some(count) = c.count
            && sum != count
        {
            return Err(format!(
                "{what}: rows and over: add up to {sum} samples but count: says {count}"
            ));
        }
        Ok(h)
    };
    let mut cpus: Vec<usize> = columns.iter().map(|(_, c, _)| *c).collect();
    cpus.sort_unstable();
    cpus.dedup();
    let mut threads = Vec::new();
    let mut empty_usr = Vec::new();
    for cpu in cpus {
        let find = |kind: Kind| {
            columns
                .iter()
                .find(|(k, c, _)| *k == kind && *c == cpu)
                .map(|(_, _, col)| col)
        };
        let name = |kind: &str| format!("{kind}-{cpu:03}");
        let irq = find(Kind::Irq)
            .map(|c| histogram(c, &name("IRQ")))
            .transpose()?;
        let thr = find(Kind::Thr)
            .map(|c| histogram(c, &name("Thr")))
            .transpose()?;
        let usr = find(Kind::Usr)
            .map(|c| histogram(c, &name("Usr")))
            .transpose()?;
        let (latency, kernel_thread) = match (usr, thr) {
            (Some(u), Some(t)) if u.samples() == 0 => {
                empty_usr.push(cpu);
                (t, None)
            }
            (Some(u), thr) => (u, thr),
            (None, Some(t)) => (t, None),
            (None, None) => {
                return Err(format!(
                    "CPU {cpu} has no Thr or Usr column (rtla --no-thread output has no task latency)"
                ));
            }
        };
        threads.push(SourceThread {
            cpu,
            latency,
            irq,
            kernel_thread,
            interval_ns: None,
        });
    }
    let mut warnings = Vec::new();
    if !empty_usr.is_empty() {
        warnings.push(format!(
            "CPU {:?}: the Usr column has no samples (rtla's user-space thread never woke); the Thr column is the latency there",
            empty_usr
        ));
    }
    if threads.iter().any(|t| t.kernel_thread.is_some()) {
        warnings.push("rtla ran with user-space threads (-u): the latency is the Usr column; the kernel-side Thr column is kept in latency.hlog as cpuN.thr".into());
    }
    warnings.push("rtla prints averages in whole units (truncated); mean_ns is that figure".into());
    Ok(Imported {
        format: &FORMAT,
        threads,
        command_line: Vec::new(),
        started: None,
        duration_ns,
        stopped,
        facts: RunFacts::default(),
        failed: false,
        system: serde_json::Value::Null,
        warnings,
    })
}

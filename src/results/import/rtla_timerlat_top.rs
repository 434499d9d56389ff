//! What `rtla timerlat top` prints at its end (tools/tracing/rtla/src/timerlat_top.c,
//! Documentation/tools/rtla/rtla-timerlat-top.rst; without `-q` the table is redrawn, and the
//! last one is the final figures):
//!
//! ```text
//!                                      Timer Latency
//!   0 00:00:12   |          IRQ Timer Latency (us)        |         Thread Timer Latency (us)      |    Ret user Timer Latency (us)
//! CPU COUNT      |      cur       min       avg       max |      cur       min       avg       max |      cur       min       avg       max
//!   0 #12322     |        0         0         1        15 |       10         3         9        31 |       11         3        10        33
//! ---------------|----------------------------------------|---------------------------------------|----------------------------------------
//! ALL #12322  e0 |                 0         1        15 |                  3         9        31 |                  3        10        33
//! ```
//!
//! The third block is there with `-u`/`-U` (rtla's user-space threads). Per CPU: the count of
//! timer IRQs, then per block the last, min, average (sum / count, truncated) and max latency
//! in us (ns with `-n`), `-` for a block without samples. A run with min/avg/max/count per CPU
//! and every percentile absent, like cyclictest's status lines; no histogram, so no
//! latency.hlog. The latency is the user block when it has samples, else the thread block, as
//! in `rtla_timerlat.rs`.

use super::rtla_hist::{parse_duration, stop_line};
use super::{Imported, Parser, RunKind, SourceFormat, SourceHistogram, SourceThread};
use super::{Recognise, Recognised};

pub(crate) static FORMAT: SourceFormat = SourceFormat {
    name: "rtla-timerlat-top",
    help: "what rtla timerlat top prints at its end: IRQ, thread (and user) min/avg/max per CPU",
    parse: Parser::Text(parse),
    recognise: Recognise::Text(recognise),
    no_header: None,
};

fn recognise(lines: &[&str]) -> Recognised {
    Recognised::from(lines.iter().any(|l| l.starts_with("CPU COUNT")))
}

/// One block (`cur min avg max`) of a CPU row; None for `-` (no samples).
fn block(text: &str, at: &dyn Fn(String) -> String) -> Result<Option<[f64; 3]>, String> {
    let values: Vec<&str> = text.split_whitespace().collect();
    if values.len() != 4 {
        return Err(at(format!(
            "a block has {} values, not cur min avg max",
            values.len()
        )));
    }
    if values.iter().all(|v| *v == "-") {
        return Ok(None);
    }
    let n = |v: &str| {
        v.parse::<u64>()
            .map(|v| v as f64)
            .map_err(|_| at(format!("'{v}' is not a whole number")))
    };
    Ok(Some([n(values[1])?, n(values[2])?, n(values[3])?]))
}

pub(crate) fn parse(text: &str) -> Result<Imported, String> {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let header = lines
        .iter()
        .rposition(|l| l.starts_with("CPU COUNT"))
        .ok_or(
            "it has no column line 'CPU COUNT | cur min avg max ...': the output was cut short",
        )?;
    let title = header
        .checked_sub(1)
        .map(|i| lines[i])
        .filter(|l| l.contains("Timer Latency ("))
        .ok_or(
            "the line above 'CPU COUNT' is not rtla's '... | IRQ Timer Latency (us) | ...' line",
        )?;
    let table = TopTable {
        unit_ns: if title.contains("Latency (ns)") {
            1
        } else {
            1000
        },
        blocks: lines[header].split('|').count() - 1,
    };
    let duration_ns = parse_duration(title.split('|').next().unwrap_or_default());
    let mut threads = Vec::new();
    let mut kernel_side = Vec::new();
    for (i, line) in lines.iter().enumerate().skip(header + 1) {
        // None at the `----|----` line before ALL, or the end of the table.
        let Some(row) = table.cpu_row(line, i)? else {
            break;
        };
        threads.push(row.thread);
        kernel_side.extend(row.kernel_side);
    }
    if threads.is_empty() {
        return Err("its table has no CPU row: the output was cut short".into());
    }
    let warnings = warnings(&lines, kernel_side);
    let stopped = stop_line(lines.iter().copied()).map(|line| {
        format!("rtla stopped tracing because a latency crossed its stop threshold ('{line}')")
    });
    Ok(Imported {
        kind: RunKind::Latency,
        duration_ns,
        stopped,
        warnings,
        ..Imported::new(&FORMAT, threads)
    })
}

/// What the column lines say of every CPU row.
struct TopTable {
    unit_ns: u64,
    /// The blocks after `CPU COUNT`: IRQ and thread, and user with `-u`/`-U`.
    blocks: usize,
}

/// One CPU of the table, and what run.json has no field for: the thread block's figures when
/// the user block is the latency.
struct CpuRow {
    thread: SourceThread,
    kernel_side: Option<String>,
}

impl TopTable {
    /// Reads line `i` (0-based) as a CPU row; None for a line that is none (the table's end).
    fn cpu_row(&self, line: &str, i: usize) -> Result<Option<CpuRow>, String> {
        let unit_ns = self.unit_ns;
        let blocks = self.blocks;
        let parts: Vec<&str> = line.split('|').collect();
        let head: Vec<&str> = parts[0].split_whitespace().collect();
        let (Some(cpu), Some(count)) = (
            head.first().and_then(|c| c.parse::<usize>().ok()),
            head.get(1).and_then(|c| c.strip_prefix('#')),
        ) else {
            return Ok(None);
        };
        let at = |e: String| format!("line {} ('{line}'): {e}", i + 1);
        if parts.len() != blocks + 1 {
            return Err(at(format!(
                "{} blocks where the column line has {blocks}",
                parts.len() - 1
            )));
        }
        let irq_count: u64 = count
            .parse()
            .map_err(|_| at(format!("'#{count}' is not a count")))?;
        let histogram = |figures: Option<[f64; 3]>| {
            let [min, mean, max] = figures.map_or([None; 3], |f| f.map(Some));
            SourceHistogram {
                unit_ns,
                // rtla prints only the IRQ count; a block with samples has as many unless
                // trace events were lost (see the warning), and `-` means none.
                count: Some(if figures.is_some() { irq_count } else { 0 }),
                min,
                mean,
                max,
                ..SourceHistogram::default()
            }
        };
        let irq = histogram(block(parts[1], &at)?);
        let thr = histogram(block(parts[2], &at)?);
        let usr = match parts.get(3) {
            Some(p) => Some(histogram(block(p, &at)?)),
            None => None,
        };
        let (latency, kernel_side) = latency_block(cpu, thr, usr, unit_ns);
        Ok(Some(CpuRow {
            thread: SourceThread {
                irq: Some(irq),
                ..SourceThread::new(cpu, latency)
            },
            kernel_side,
        }))
    }
}

/// What the table leaves out: no histogram, counts taken from the IRQ count, and the
/// `kernel_side` figures of user-thread runs.
fn warnings(lines: &[&str], kernel_side: Vec<String>) -> Vec<String> {
    let mut warnings = vec![
        "rtla timerlat top: no histogram, min, mean and max only (every percentile is absent, latency.hlog is not written); its averages are truncated to whole units".into(),
        "rtla timerlat top prints the IRQ count only: the thread (and user) latency's count is taken to be the same, as it is unless trace events were lost".into(),
    ];
    if lines
        .iter()
        .any(|l| l.to_ascii_lowercase().contains("missed"))
    {
        warnings.push("rtla reported missed trace events: the thread and user counts may be lower than the IRQ count used for them".into());
    }
    if !kernel_side.is_empty() {
        warnings.push(
            "rtla ran with user-space threads (-u/-U): the latency is the 'Ret user' block".into(),
        );
        warnings.extend(kernel_side);
    }
    warnings
}

/// The latency of a CPU row: the user block when it has samples (rtla -u/-U), else the thread
/// block; with the user block, the thread block's figures as words, since run.json has no
/// field for the kernel side without a histogram.
fn latency_block(
    cpu: usize,
    thr: SourceHistogram,
    usr: Option<SourceHistogram>,
    unit_ns: u64,
) -> (SourceHistogram, Option<String>) {
    match usr {
        Some(u) if u.samples() > 0 => {
            let shown = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v}"));
            let kernel_side = format!(
                "CPU {cpu} thread block (kernel side of the user thread): min {}, avg {}, max {} {}",
                shown(thr.min),
                shown(thr.mean),
                shown(thr.max),
                if unit_ns == 1 { "ns" } else { "us" }
            );
            (u, Some(kernel_side))
        }
        _ => (thr, None),
    }
}

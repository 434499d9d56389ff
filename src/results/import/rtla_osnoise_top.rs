//! What `rtla osnoise top` (and `rtla hwnoise`) prints at its end
//! (tools/tracing/rtla/src/osnoise_top.c; without `-q` the table is redrawn, and the last one
//! is the final figures):
//!
//! ```text
//!                                           Operating System Noise
//! duration:   0 00:00:10 | time is in us
//! CPU Period       Runtime        Noise  % CPU Aval   Max Noise   Max Single          HW          NMI          IRQ      Softirq       Thread
//!   0 #9          9000000          9001    99.89998         1002         1002           0            0         9021          117           41
//! ```
//!
//! Per CPU: the periods run, the runtime and the noise in it (us), the share of the runtime
//! left to the loop (`(runtime - noise) x 10^7 / runtime`, truncated, printed as a percentage
//! with 5 decimals), the largest noise in one period, the largest single noise, and how many
//! hardware, NMI, IRQ, softirq and thread interferences were counted (hwnoise prints HW and
//! NMI only). A noise run with its noise time and share and its largest gap; the gap count,
//! the other gap statistics and the loop figures are absent (rtla does not print them). The
//! interference counts and the largest noise in one period are kept as `imported.figures`.

use super::rtla_hist::{parse_duration, stop_line};
use super::{Imported, Parser, RunKind, SourceFormat, SourceHistogram, SourceNoise, SourceThread};
use super::{Recognise, Recognised};

pub(crate) static FORMAT: SourceFormat = SourceFormat {
    name: "rtla-osnoise-top",
    help: "what rtla osnoise top (or rtla hwnoise) prints: runtime, noise, max single noise and interference counts per CPU",
    parse: Parser::Text(parse),
    recognise: Recognise::Text(recognise),
    no_header: None,
};

fn recognise(lines: &[&str]) -> Recognised {
    Recognised::from(
        lines.iter().any(|l| l.starts_with("CPU Period"))
            || lines
                .iter()
                .any(|l| l == &"Operating System Noise" || l == &"Hardware-related Noise"),
    )
}

/// The interference columns, as `imported.figures` names them.
const COUNTS: [&str; 5] = ["hw", "nmi", "irq", "softirq", "thread"];

pub(crate) fn parse(text: &str) -> Result<Imported, String> {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let header = lines
        .iter()
        .rposition(|l| l.starts_with("CPU Period"))
        .ok_or("it has no column line 'CPU Period Runtime Noise ...': the output was cut short")?;
    let counts = if lines[header].contains("Thread") {
        5
    } else {
        2
    };
    let duration_ns = lines[..header]
        .iter()
        .rev()
        .find_map(|l| l.strip_prefix("duration:"))
        .and_then(|d| parse_duration(d.split('|').next().unwrap_or_default()));
    let mut threads = Vec::new();
    for (i, line) in lines.iter().enumerate().skip(header + 1) {
        let Some(thread) = cpu_row(line, i, counts)? else {
            break; // the end of the table
        };
        threads.push(thread);
    }
    if threads.is_empty() {
        return Err(
            "its table has no CPU row (rtla prints only CPUs that ran): the output was cut short"
                .into(),
        );
    }
    let stopped = stop_line(lines.iter().copied()).map(|line| {
        format!("rtla stopped tracing because a noise crossed its stop threshold ('{line}')")
    });
    Ok(Imported {
        kind: RunKind::Noise,
        duration_ns,
        stopped,
        warnings: vec![
            "rtla osnoise top prints the largest single noise but not the number of noise events, nor their distribution: max is the gap figure, and samples, min, mean and percentiles are absent; HW/NMI/IRQ/softirq/thread counts and the largest noise in one period are in imported.figures".into(),
        ],
        ..Imported::new(&FORMAT, threads)
    })
}

/// Reads line `i` (0-based) as a CPU row with `counts` interference columns; None for a line
/// that is none (the table's end).
fn cpu_row(line: &str, i: usize, counts: usize) -> Result<Option<SourceThread>, String> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    if fields.len() < 2 || !fields[1].starts_with('#') {
        return Ok(None);
    }
    let at = |e: String| format!("line {} ('{line}'): {e}", i + 1);
    if fields.len() != 7 + counts {
        return Err(at(format!(
            "{} values where the column line names {}",
            fields.len(),
            7 + counts
        )));
    }
    let number = |k: usize| -> Result<u64, String> {
        let v = fields[k].trim_start_matches('#');
        v.parse()
            .map_err(|_| at(format!("'{v}' is not a whole number")))
    };
    let cpu = number(0)? as usize;
    let periods = number(1)?;
    let runtime_us = number(2)?;
    let noise_us = number(3)?;
    let max_period_us = number(5)?;
    let max_single_us = number(6)?;
    if noise_us > runtime_us || runtime_us == 0 {
        return Err(at(format!(
            "its noise ({noise_us} us) is not within its runtime ({runtime_us} us)"
        )));
    }
    check_printed_share(fields[4], runtime_us, noise_us).map_err(at)?;
    let too_large = || at("a time beyond what run.json stores".into());
    let ns = |us: u64| us.checked_mul(1000).ok_or_else(too_large);
    let mut figures = vec![
        ("periods", periods, "periods"),
        ("max_period_noise_ns", ns(max_period_us)?, "ns"),
    ];
    for (k, name) in COUNTS.iter().take(counts).enumerate() {
        figures.push((name, number(7 + k)?, "events"));
    }
    Ok(Some(SourceThread {
        noise: Some(SourceNoise {
            measured_ns: Some(ns(runtime_us)?),
            noise_ns: Some(ns(noise_us)?),
            noise_pct: Some(100.0 * noise_us as f64 / runtime_us as f64),
            figures,
            ..SourceNoise::default()
        }),
        ..SourceThread::new(
            cpu,
            SourceHistogram {
                unit_ns: 1000,
                max: Some(max_single_us as f64),
                ..SourceHistogram::default()
            },
        )
    }))
}

/// rtla prints (runtime - noise) * 10^7 / runtime, truncated, as NNN.NNNNN: the printed share
/// must be what the printed times give (`runtime_us` is above 0 and not below `noise_us`).
fn check_printed_share(printed: &str, runtime_us: u64, noise_us: u64) -> Result<(), String> {
    let printed_share: u64 = printed
        .replace('.', "")
        .parse()
        .map_err(|_| format!("'{printed}' is not a percentage"))?;
    let share = (runtime_us - noise_us) as u128 * 10_000_000 / runtime_us as u128;
    if share != printed_share as u128 {
        return Err(format!(
            "'% CPU Aval' is {printed} but its runtime and noise give {}.{:05}",
            share / 100_000,
            share % 100_000
        ));
    }
    Ok(())
}

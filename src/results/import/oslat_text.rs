//! oslat's text output (rt-tests 2.x stdout): the same figures as its `--json` file, one column
//! per measured CPU:
//!
//! ```text
//! Thread priority:    SCHED_FIFO:1          (or "default": SCHED_OTHER)
//! Total runtime:      3 seconds
//!         Core:    0 1
//!     001 (us):    98792439 98207679        bucket k holds gaps in [k-1, k) us
//!     032 (us):    1001 1088 (including overflows)
//!      Minimum:    1 1 (us)
//!      Average:    1.002 1.002 (us)
//!      Maximum:    52160 51763 (us)
//!     Duration:    3.014 3.004 (sec)
//! ```
//!
//! The last row (`-b`, marked "including overflows") also holds every longer gap. There is no
//! command line and no time stamp; the priority line gives the policy.

use super::pasted::without_comment;
use super::{
    Imported, OSLAT_WARNING, OslatRelease, Parser, RunFacts, RunKind, SourceFormat, oslat_thread,
    seconds_to_ns,
};
use super::{Recognise, Recognised};

pub(crate) static FORMAT: SourceFormat = SourceFormat {
    name: "oslat-text",
    help: "oslat's text output (stdout), the same figures as its --json file",
    parse: Parser::Text(parse),
    recognise: Recognise::Text(recognise),
    no_header: None,
};

fn recognise(lines: &[&str]) -> Recognised {
    Recognised::from(
        lines.iter().any(|l| l.starts_with("oslat V"))
            || (lines.iter().any(|l| l.starts_with("Core:"))
                && lines.iter().any(|l| l.ends_with("(including overflows)"))),
    )
}

/// The numbers after `label:` on a line, up to the unit in parentheses.
fn numbers<T: std::str::FromStr>(line: &str, n: usize) -> std::result::Result<Vec<T>, String> {
    let (_, values) = line.split_once(':').ok_or("no ':'")?;
    let values: Vec<T> = values
        .split_whitespace()
        .take_while(|v| !v.starts_with('('))
        .map(|v| v.parse().map_err(|_| format!("'{v}' is not a number")))
        .collect::<std::result::Result<_, _>>()?;
    if values.len() != n {
        return Err(format!(
            "{} value{} for {n} CPU{}",
            values.len(),
            if values.len() == 1 { "" } else { "s" },
            if n == 1 { "" } else { "s" }
        ));
    }
    Ok(values)
}

pub(crate) fn parse(text: &str) -> Result<Imported, String> {
    // A note typed after a row (`Maximum: 4050 (us) # irq storm`) is not one of its values.
    let lines: Vec<&str> = text.lines().map(|l| without_comment(l.trim())).collect();
    let core_line = lines
        .iter()
        .position(|l| l.starts_with("Core:"))
        .ok_or("it has no 'Core:' line naming the measured CPUs")?;
    let cpus: Vec<usize> = lines[core_line]["Core:".len()..]
        .split_whitespace()
        .map(|c| {
            c.parse()
                .map_err(|_| format!("'Core:' names '{c}', not a CPU number"))
        })
        .collect::<std::result::Result<_, String>>()?;
    if cpus.is_empty() {
        return Err("its 'Core:' line names no CPU".into());
    }
    let n = cpus.len();
    let mut rows: Vec<Vec<(u64, u64)>> = vec![Vec::new(); n];
    let mut last_bucket = None;
    let mut figures: [Option<Vec<f64>>; 3] = [None, None, None];
    let mut durations: Option<Vec<u64>> = None;
    for (i, line) in lines.iter().enumerate().skip(core_line + 1) {
        let at = |e: String| format!("line {} ('{line}'): {e}", i + 1);
        if let Some((label, _)) = line.split_once(" (us):") {
            let k: u64 = label
                .trim()
                .parse()
                .map_err(|_| at(format!("'{label}' is not a bucket number")))?;
            let counts: Vec<u64> = numbers(line, n).map_err(at)?;
            for (column, c) in rows.iter_mut().zip(counts) {
                column.push((k, c));
            }
            if line.contains("including overflows") {
                last_bucket = Some(k);
            }
            continue;
        }
        let figure = ["Minimum:", "Average:", "Maximum:"]
            .iter()
            .position(|label| line.starts_with(label));
        if let Some(f) = figure {
            figures[f] = Some(numbers(line, n).map_err(at)?);
        } else if line.starts_with("Duration:") {
            let seconds: Vec<f64> = numbers(line, n).map_err(at)?;
            durations = Some(
                seconds
                    .iter()
                    .map(|&s| {
                        seconds_to_ns(s).ok_or_else(|| at(format!("{s} s is not a run's length")))
                    })
                    .collect::<std::result::Result<Vec<u64>, String>>()?,
            );
        }
    }
    let last_bucket = last_bucket.ok_or(
        "no histogram row is marked '(including overflows)': the output was cut short, or is not oslat's",
    )?;
    let [Some(min), Some(avg), Some(max)] = figures else {
        return Err(
            "it lacks the 'Minimum:', 'Average:' or 'Maximum:' line: the output was cut short"
                .into(),
        );
    };
    let version = lines.iter().find_map(|l| l.strip_prefix("oslat V "));
    let mhz = lines
        .iter()
        .find(|l| l.starts_with("Counter Freq:"))
        .map(|l| l.contains("(MHz)"));
    let (release, _) = OslatRelease::of(version, mhz);
    let mut note = None;
    let threads = (0..n)
        .map(|c| {
            let (figures, said) = release.figures([Some(min[c]), Some(avg[c]), Some(max[c])]);
            note = said;
            oslat_thread(
                cpus[c],
                std::mem::take(&mut rows[c]),
                last_bucket,
                figures,
                durations.as_ref().map(|d| d[c]),
            )
            .map_err(|e| format!("CPU {}: {e}", cpus[c]))
        })
        .collect::<std::result::Result<Vec<_>, String>>()?;
    Ok(Imported {
        kind: RunKind::Noise,
        duration_ns: durations.and_then(|d| d.into_iter().max()),
        facts: facts(&lines),
        warnings: [
            OSLAT_WARNING.into(),
            "oslat's text prints averages to 3 decimals; mean_ns is that figure".into(),
        ]
        .into_iter()
        .chain(note)
        .collect(),
        ..Imported::new(&FORMAT, threads)
    })
}

/// `Thread priority: SCHED_FIFO:1` (or `default`, SCHED_OTHER) and `Total runtime: N seconds`.
fn facts(lines: &[&str]) -> RunFacts {
    let value = |label: &str| {
        lines
            .iter()
            .find_map(|l| l.strip_prefix(label))
            .map(str::trim)
    };
    let (policy, priority) = match value("Thread priority:") {
        Some("default") => (Some("other".to_string()), Some(0)),
        Some(p) => match p.split_once(':') {
            Some((policy, prio)) => (
                policy.strip_prefix("SCHED_").map(str::to_ascii_lowercase),
                prio.trim().parse().ok(),
            ),
            None => (None, None),
        },
        None => (None, None),
    };
    let duration_ns = value("Total runtime:")
        .and_then(|r| r.strip_suffix("seconds"))
        .and_then(|s| s.trim().parse::<f64>().ok())
        .and_then(seconds_to_ns);
    RunFacts {
        policy,
        priority,
        interval_ns: None,
        memory_locked: None,
        duration_ns,
    }
}

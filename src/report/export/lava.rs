//! `--format lava`: one `lava-test-case`-style line per figure, `NAME RESULT [MEASUREMENT UNITS]`,
//! the result file that LAVA's test-definitions (`send-to-lava.sh`) turn into test cases.
//!
//! - `cpuN-METRIC-latency RESULT VALUE us` for min, mean, p50, p90, p99, p99.9, p99.99, max
//!   (three decimals), and `cpuN-missed RESULT N periods`, `cpuN-dropped RESULT N records`,
//!   `cpuN-deadline_misses RESULT N wakeups`. RESULT is `pass` or `fail` when budget clauses
//!   judge that figure on that CPU (fail if any of them fails), `skip` when none does: a figure
//!   without a budget is measured, not judged. A figure the run does not have (no samples, a
//!   count an imported source lacked) is `unknown` without a measurement, or `fail` when judged.
//! - With a budget, one line per clause and CPU, `budget-cpuN-CLAUSE RESULT VALUE UNITS`, and a
//!   last line `budget RESULT`. VALUE UNITS is the figure the clause judged: a share within
//!   (`under()`) in `%`, spikes in `spikes` or `spikes/h`, `firm()` in `misses`. Names hold only `[A-Za-z0-9._-]`: `<` is `lt`, `<=` `le`, `=`
//!   `eq`, `>=` `ge`, `>` `gt`, anything else `_` (`p99.9<50us` is `p99.9-lt-50us`).

use super::exporter::RunExporter;
use super::output::write_text;
use super::verdict::{self, CpuCase};
use crate::analysis::metric::{METRICS, Metric};
use crate::error::Result;
use crate::format::kind::RunKind;
use crate::results::loaded::LoadedRun;
use std::fmt::Write;
use std::path::Path;

pub(crate) struct Lava;

/// A test case name for LAVA out of free text (a clause).
fn case_name(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let op = match (c, chars.peek()) {
            ('<', Some('=')) => Some("le"),
            ('>', Some('=')) => Some("ge"),
            ('<', _) => Some("lt"),
            ('>', _) => Some("gt"),
            ('=', _) => Some("eq"),
            _ => None,
        };
        match op {
            Some(word) => {
                if matches!(word, "le" | "ge") {
                    chars.next();
                }
                out.push('-');
                out.push_str(word);
                out.push('-');
            }
            None if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') => out.push(c),
            None if c == ':' => out.push('-'),
            None => out.push('_'),
        }
    }
    out
}

/// A value in the line's unit, as `MEASUREMENT UNITS`: us with three decimals for latencies;
/// shares (`under()`, a noise run's noise) in % with four decimals, so that a share like
/// 99.407 % is never rounded into a count or up to the 100 % a limit like >=99.99% needs;
/// spike rates per hour with two decimals; counts as integers, each with what it counts.
fn measurement(metric: Metric, value: f64) -> String {
    match metric {
        _ if metric.is_latency() => format!("{:.3} us", value / 1e3),
        Metric::Under(_) | Metric::NoisePct => format!("{value:.4} %"),
        Metric::SpikeRate(_) => format!("{value:.2} spikes/h"),
        Metric::Spikes(_) => format!("{} spikes", value.round() as i64),
        Metric::Firm(_) => format!("{} misses", value.round() as i64),
        Metric::Missed => format!("{} periods", value.round() as i64),
        Metric::Dropped => format!("{} records", value.round() as i64),
        _ => format!("{} wakeups", value.round() as i64),
    }
}

/// The line name of a per-CPU figure: `cpu0-p99-latency`, or for a noise thread's gap
/// lengths `cpu0-p99-gap`.
fn figure_name(cpu: usize, metric: Metric, kind: RunKind) -> String {
    if metric.is_latency() {
        format!("cpu{cpu}-{}-{}", metric.name(), kind.words().sample)
    } else {
        format!("cpu{cpu}-{}", metric.name())
    }
}

fn result_word(passed: bool) -> &'static str {
    if passed { "pass" } else { "fail" }
}

/// The lines of a run.
pub(crate) fn render(run: &LoadedRun) -> Result<String> {
    let r = &run.record;
    let absent: &[String] = r.imported.as_ref().map_or(&[], |i| i.absent.as_slice());
    let budget = verdict::stored_budget(r)?;
    let cases: Vec<CpuCase> = budget
        .as_ref()
        .map_or_else(Vec::new, |b| verdict::cases(b, r));
    let mut out = String::new();
    for t in &r.threads {
        // The standard deviation is not a figure CI systems track for latency; budgets can
        // still judge it (its verdict is in the budget lines).
        // noise_pct only for noise runs' threads.
        let shown = |m: &Metric| *m != Metric::Stddev && (t.noise.is_some() || !m.is_percent());
        for &(_, metric) in METRICS.iter().filter(|(_, m)| shown(m)) {
            let judged: Vec<&CpuCase> = cases
                .iter()
                .filter(|c| c.cpu == t.cpu && c.metric == metric)
                .collect();
            let result = if judged.is_empty() {
                None
            } else {
                Some(result_word(judged.iter().all(|c| c.passed)))
            };
            let name = figure_name(t.cpu, metric, r.kind);
            match metric.value(t, absent) {
                Some(v) => {
                    let _ = writeln!(
                        out,
                        "{name} {} {}",
                        result.unwrap_or("skip"),
                        measurement(metric, v)
                    );
                }
                None => {
                    let _ = writeln!(out, "{name} {}", result.unwrap_or("unknown"));
                }
            }
        }
    }
    for c in &cases {
        let name = format!("budget-cpu{}-{}", c.cpu, case_name(&c.clause));
        match c.value {
            Some(v) => {
                let _ = writeln!(
                    out,
                    "{name} {} {}",
                    result_word(c.passed),
                    measurement(c.metric, v)
                );
            }
            None => {
                let _ = writeln!(out, "{name} {}", result_word(c.passed));
            }
        }
    }
    // The verdict of `Budget::evaluate`, which the cases above agree with.
    if let Some(v) = &r.budget {
        let _ = writeln!(out, "budget {}", result_word(v.passed));
    }
    Ok(out)
}

impl RunExporter for Lava {
    fn write(&self, run: &LoadedRun, output: Option<&Path>) -> Result<()> {
        write_text(output, &render(run)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clause_names_hold_only_lava_characters() {
        assert_eq!(case_name("p99.9<50us"), "p99.9-lt-50us");
        assert_eq!(case_name("cpu1:max<=100 us"), "cpu1-max-le-100_us");
        assert_eq!(case_name("missed=0"), "missed-eq-0");
        assert_eq!(case_name("min>=1us"), "min-ge-1us");
    }
}

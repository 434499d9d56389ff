//! What `jitterlab compare` shows (the command is `commands/compare.rs`): the comparison of the
//! runs (analysis::compare) with the regression check and budgets applied, rendered as a
//! terminal table, Markdown or JSON.

use crate::analysis::budget::{self, Budget};
use crate::analysis::compare::{self, Comparison, Interval, ScopeComparison, StatRow};
use crate::analysis::metric::{Metric, format_latency};
use crate::analysis::regression::{self, RegressionCheck, RegressionVerdict};
use crate::format::kind::{RunKind, Vocabulary};
use crate::format::run_record::BudgetVerdict;
use crate::report::table::{Align, Markdown, Markup, Table, Terminal};
use crate::results::loaded::LoadedRun;
use crate::units::format_ns;
use serde::Serialize;
use std::fmt::Write;

/// Everything `compare --json` prints.
#[derive(Debug, Serialize)]
pub(crate) struct CompareOutput {
    #[serde(flatten)]
    pub(crate) comparison: Comparison,
    /// The `--fail-if-worse` verdict, when asked for.
    pub(crate) regression: Option<RegressionVerdict>,
    /// The `--budget` verdict of each run, when a budget was given.
    pub(crate) budgets: Vec<RunBudget>,
    /// Shares within thresholds and spike rates against the first run (docs/tails.md).
    pub tails: crate::analysis::tails_compare::TailComparison,
    /// Context counters that differ, each later run against the first (docs/counters.md);
    /// empty when a run has no counters.log.
    pub counters: Vec<RunCounters>,
    /// False when the regression check or any budget failed (exit 1).
    pub passed: bool,
}

/// One later run's counters against the first run's.
#[derive(Debug, Serialize)]
pub(crate) struct RunCounters {
    pub run: String,
    /// Counters (per CPU) in both runs and not constant: each held to 0.01 / tested.
    pub tested: u64,
    pub(crate) differ: Vec<crate::analysis::counters::CounterDiff>,
}

/// The counters of each run after the first against the first's, where both have counters.log.
fn compare_counters(runs: &[LoadedRun]) -> Vec<RunCounters> {
    let read = |r: &LoadedRun| crate::results::loaded::counters(&r.path).ok().flatten();
    let Some(first) = runs.first().and_then(read) else {
        return Vec::new();
    };
    runs.iter()
        .enumerate()
        .skip(1)
        .filter_map(|(i, r)| {
            let other = read(r)?;
            let (tested, differ) = crate::analysis::counters::compare_runs(&first, &other);
            Some(RunCounters {
                run: compare::label(i),
                tested,
                differ,
            })
        })
        .collect()
}

/// The terminal's lines of the counters that differ (at most 10 per run; all in --json).
fn counter_lines(o: &CompareOutput) -> Vec<String> {
    let mut out = Vec::new();
    for rc in &o.counters {
        if rc.differ.is_empty() {
            continue;
        }
        let first = compare::label(0);
        out.push(format!(
            "Counters per interval, {} against {first} (Mann-Whitney, p < 0.01 / {} tested; docs/counters.md):",
            rc.run, rc.tested
        ));
        for d in rc.differ.iter().take(10) {
            out.push(format!(
                "  cpu{} {}: median {} ({}-{}) in {first}, {} ({}-{}) in {}, p {:.1e}",
                d.cpu,
                d.counter,
                d.first.median,
                d.first.min,
                d.first.max,
                d.other.median,
                d.other.min,
                d.other.max,
                rc.run,
                d.p
            ));
        }
        if rc.differ.len() > 10 {
            out.push(format!("  {} more in --json", rc.differ.len() - 10));
        }
    }
    out
}

#[derive(Debug, Serialize)]
pub(crate) struct RunBudget {
    pub run: String,
    pub verdict: BudgetVerdict,
}

/// The comparison with the checks applied: a pure function of the runs.
pub(crate) fn evaluate(
    runs: &[LoadedRun],
    budget: Option<&Budget>,
    check: Option<RegressionCheck>,
) -> CompareOutput {
    let comparison = compare::compare(runs);
    let regression = check.map(|c| regression::check(&comparison, c));
    let budgets: Vec<RunBudget> = budget
        .map(|b| {
            runs.iter()
                .enumerate()
                .map(|(i, r)| RunBudget {
                    run: compare::label(i),
                    verdict: b.evaluate(&r.record),
                })
                .collect()
        })
        .unwrap_or_default();
    let passed =
        regression.as_ref().is_none_or(|r| r.passed) && budgets.iter().all(|b| b.verdict.passed);
    CompareOutput {
        comparison,
        regression,
        budgets,
        tails: crate::analysis::tails_compare::compare_tails(runs),
        counters: compare_counters(runs),
        passed,
    }
}

fn value(row: &StatRow, v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) => row.metric().format(v),
    }
}

/// Run `i`'s value of `row`, `≥` before a lower bound (an imported histogram's overflows).
fn value_cell(row: &StatRow, i: usize) -> String {
    let text = value(row, row.values[i]);
    match row.lower_bound.get(i) == Some(&true) {
        true => format!("≥{text}"),
        false => text,
    }
}

fn signed(metric: Metric, d: f64) -> String {
    if metric.is_latency() {
        let text = format_latency(d.abs());
        if d > 0.0 && d.round() != 0.0 {
            format!("+{text}")
        } else if d < 0.0 && d.round() != 0.0 {
            format!("-{text}")
        } else {
            text
        }
    } else {
        format!("{:+}", d.round() as i64)
    }
}

/// A ratio B/A: whole numbers from 10, two decimals from 0.1, two significant digits below
/// (0.024x, not 0.02x).
fn ratio(r: Option<f64>) -> String {
    match r {
        None => "-".into(),
        Some(r) if r >= 9.995 => format!("{r:.0}x"),
        Some(r) if r >= 0.0995 || r <= 0.0 => format!("{r:.2}x"),
        Some(r) => {
            let decimals = (-r.log10()).ceil() as usize + 1;
            format!("{r:.decimals$}x")
        }
    }
}

fn interval_text(metric: Metric, i: &Interval) -> String {
    format!(
        "[{}, {}]",
        i.low_ns.map_or("-inf".into(), |l| signed(metric, l)),
        i.high_ns.map_or("+inf".into(), |h| signed(metric, h))
    )
}

/// `+1.96 ms [+1.90 ms, +2.00 ms]`: the difference and its interval, when it has one.
fn difference_cell(row: &StatRow, k: usize) -> String {
    let v = &row.versus_first[k];
    if v.bound {
        return "- (a bound)".into();
    }
    let Some(d) = v.difference else {
        return "-".into();
    };
    let m = row.metric();
    match &v.interval {
        Some(i) => format!("{} {}", signed(m, d), interval_text(m, i)),
        None => signed(m, d),
    }
}

fn scope_title(s: &ScopeComparison) -> String {
    match s.cpu {
        None => "overall (all CPUs together)".into(),
        Some(c) => format!("CPU {c}"),
    }
}

/// Which statistics of a scope used which interval method, per later run.
fn method_legend(cmp: &Comparison, s: &ScopeComparison) -> Vec<String> {
    let mut lines = Vec::new();
    // The overall row pools each run's CPUs: of different sets, it compares unlike things
    // (eighth hostile re-run, L8-d); the CPU rows compare the CPUs both measured.
    if s.cpu.is_none() && cmp.runs.iter().any(|r| r.cpus != cmp.runs[0].cpus) {
        let sets: Vec<String> = cmp
            .runs
            .iter()
            .map(|r| format!("{}: {}", r.label, crate::cpulist::format_cpu_list(&r.cpus)))
            .collect();
        lines.push(format!(
            "the runs measured different CPUs ({}): this scope pools different sets of CPUs; the CPU scopes compare like with like",
            sets.join("; ")
        ));
    }
    let bounded: Vec<&str> = s
        .rows
        .iter()
        .filter(|r| r.lower_bound.contains(&true))
        .map(|r| r.statistic)
        .collect();
    if !bounded.is_empty() {
        lines.push(format!(
            "≥ lower bounds ({}): among an imported histogram's overflows (run.json imported.overflows); no ratio or interval",
            bounded.join(", ")
        ));
    }
    for k in 0..cmp.runs.len() - 1 {
        let mut by_method: Vec<(&str, Vec<&str>)> = Vec::new();
        for row in &s.rows {
            if let Some(i) = &row.versus_first[k].interval {
                match by_method.iter_mut().find(|(m, _)| *m == i.method) {
                    Some((_, stats)) => stats.push(row.statistic),
                    None => by_method.push((i.method, vec![row.statistic])),
                }
            }
        }
        if by_method.is_empty() {
            continue;
        }
        let parts: Vec<String> = by_method
            .iter()
            .map(|(m, stats)| {
                let how = match *m {
                    "bootstrap" => "block bootstrap over intervals",
                    _ => "order statistics",
                };
                format!("{how} for {}", stats.join(", "))
            })
            .collect();
        lines.push(format!(
            "95% intervals of {}-A: {}",
            cmp.runs[k + 1].label,
            parts.join("; ")
        ));
    }
    lines
}

/// The comparison table of one scope: a row per statistic; per later run its value, its ratio
/// to A and the difference with its 95% interval. Built once for the terminal and Markdown.
fn scope_table(cmp: &Comparison, s: &ScopeComparison) -> Table {
    let words = words(cmp);
    let first = words.compared.map_or_else(
        || "statistic".into(),
        |_| format!("{} statistic", words.sample),
    );
    let mut headers = vec![first, "A".to_string()];
    for r in &cmp.runs[1..] {
        headers.push(r.label.clone());
        headers.push(format!("{}/A", r.label));
        headers.push(format!("{}-A [95% interval]", r.label));
    }
    let mut table = Table::new(headers, Align::Right);
    table.columns[0].align = Align::Left;
    for row in &s.rows {
        let mut cells = vec![row.statistic.into(), value_cell(row, 0).into()];
        for k in 0..row.versus_first.len() {
            cells.push(value_cell(row, k + 1).into());
            cells.push(ratio(row.versus_first[k].ratio).into());
            cells.push(difference_cell(row, k).into());
        }
        table.push_row(cells);
    }
    table
}

/// The words of the runs' kind (`jitterlab compare` refuses a mix).
fn words(cmp: &Comparison) -> &'static Vocabulary {
    cmp.runs
        .first()
        .map_or_else(RunKind::default, |r| r.kind)
        .words()
}

/// What a sample is called in counts: "samples" (wakeups) or "gaps".
fn samples_word(cmp: &Comparison) -> &'static str {
    words(cmp).counted
}

fn run_lines(cmp: &Comparison) -> Vec<String> {
    cmp.runs
        .iter()
        .map(|r| {
            let cpus: Vec<String> = r.cpus.iter().map(|c| c.to_string()).collect();
            let mut line = format!(
                "{}  {}  {}{}, CPUs {}, {}, {} {}, {} interval{} per CPU",
                r.label,
                r.path,
                r.kind.words().run_tag,
                r.ended,
                cpus.join(","),
                r.duration_ns.map_or("duration unknown".into(), format_ns),
                r.samples,
                samples_word(cmp),
                r.intervals_per_cpu,
                if r.intervals_per_cpu == 1 { "" } else { "s" }
            );
            if let Some(source) = &r.imported_from {
                line.push_str(&format!(" (imported from {source})"));
            }
            for w in &r.warnings {
                line.push_str(&format!("\n    warning: {w}"));
            }
            line
        })
        .collect()
}

/// "B vs A overall: p99 1.52x (52 % higher), max 0.79x (21 % lower)": the headline of each
/// later run. The ratio is B/A, as in the table's B/A column, and the words say which way.
fn headlines(cmp: &Comparison) -> Vec<String> {
    let Some(overall) = cmp.scopes.iter().find(|s| s.cpu.is_none()) else {
        return Vec::new();
    };
    (0..cmp.runs.len() - 1)
        .map(|k| {
            let parts: Vec<String> = overall
                .rows
                .iter()
                .filter(|r| matches!(r.metric(), Metric::P99 | Metric::P999 | Metric::Max))
                .filter_map(|r| {
                    let q = r.versus_first[k].ratio?;
                    let word = ratio_words(q);
                    let noise = match &r.versus_first[k].interval {
                        Some(i) if !i.above_zero() && !i.below_zero() => {
                            " (within noise: the interval includes 0)"
                        }
                        _ => "",
                    };
                    Some(format!("{} {word}{noise}", r.statistic))
                })
                .collect();
            format!(
                "{} vs A overall{}: {}",
                cmp.runs[k + 1].label,
                words(cmp)
                    .compared
                    .map_or_else(String::new, |c| format!(" ({c})")),
                if parts.is_empty() {
                    "no common figures".into()
                } else {
                    parts.join(", ")
                }
            )
        })
        .collect()
}

/// A ratio B/A as the table shows it, with the change in words: `0.79x (21 % lower)`,
/// `1.52x (52 % higher)`, `42x (4100 % higher)`, `1.00x (the same)`.
pub(crate) fn ratio_words(q: f64) -> String {
    let change = (q - 1.0).abs() * 100.0;
    let way = if q > 1.0 { "higher" } else { "lower" };
    let words = if q == 1.0 {
        "the same".to_string()
    } else if change >= 0.5 {
        format!("{change:.0} % {way}")
    } else {
        format!("{change:.1} % {way}")
    };
    format!("{} ({words})", ratio(Some(q)))
}

fn regression_lines(r: &RegressionVerdict) -> Vec<String> {
    // The statistics judged are named, and when they are the default, that --at chooses
    // others: a check at p99.9 says nothing about the max.
    let mut lines = vec![format!(
        "Regression check: worse than A by more than {}% at {}{}",
        r.margin * 100.0,
        r.statistics.join(" or "),
        if r.default_statistic {
            " (the default statistic; --at chooses others, e.g. --at max,p99.9)"
        } else {
            ""
        }
    )];
    for x in &r.regressions {
        let metric = Metric::parse(x.statistic).expect("grammar name");
        lines.push(format!(
            "  FAIL  {} {}: {} {} vs {} in A ({})",
            x.run,
            x.scope,
            x.statistic,
            metric.format(x.value),
            metric.format(x.first),
            match (x.ratio, x.at_least) {
                (None, _) => "A was 0".into(),
                (Some(q), false) => ratio(Some(q)),
                (Some(q), true) => format!(
                    "at least {}: a lower bound, among an imported histogram's overflows",
                    ratio(Some(q))
                ),
            }
        ));
    }
    for x in &r.not_judged {
        let metric = Metric::parse(x.statistic).expect("grammar name");
        let shown = |v: f64, bound: bool| match bound {
            true => format!("≥{}", metric.format(v)),
            false => metric.format(v),
        };
        let why = match (x.run_is_bound, x.first_is_bound) {
            (true, true) => "both are lower bounds, which say nothing of which is larger",
            (true, false) => {
                "its figure is a lower bound within the margin: its true value may be anywhere above"
            }
            _ => "A's figure is a lower bound: A's true value may be above it",
        };
        lines.push(format!(
            "  NOT JUDGED  {} {}: {} {} vs {} in A: {why} (among an imported histogram's overflows; import with a larger histogram, e.g. cyclictest -h, to judge the tail)",
            x.run,
            x.scope,
            x.statistic,
            shown(x.value, x.run_is_bound),
            shown(x.first, x.first_is_bound),
        ));
    }
    for x in &r.unconfirmed {
        lines.push(format!(
            "  note  {} {}: {} {} of A, but the 95% interval of the difference includes 0: not counted",
            x.run,
            x.scope,
            x.statistic,
            ratio(x.ratio)
        ));
    }
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    lines.push(if r.passed {
        format!(
            "  pass  no run is worse beyond the margin at {}",
            r.statistics.join(" or ")
        )
    } else if r.not_judged.is_empty() {
        format!(
            "  regression check FAILED ({})",
            plural(r.regressions.len(), "finding")
        )
    } else {
        format!(
            "  regression check FAILED ({}, {} not judged: a check that cannot judge a statistic does not pass)",
            plural(r.regressions.len(), "finding"),
            plural(r.not_judged.len(), "statistic")
        )
    });
    lines
}

/// The comparison as a terminal table.
pub(crate) fn terminal(o: &CompareOutput) -> String {
    let cmp = &o.comparison;
    let mut out = String::new();
    let _ = writeln!(out, "Runs:");
    for line in run_lines(cmp) {
        let _ = writeln!(out, "  {line}");
    }
    for s in &cmp.scopes {
        let samples: Vec<String> = s
            .samples
            .iter()
            .zip(&cmp.runs)
            .map(|(n, r)| format!("{} {n}", r.label))
            .collect();
        let _ = writeln!(
            out,
            "\n{}: {} {}",
            scope_title(s),
            samples_word(cmp),
            samples.join(", ")
        );
        out.push_str(&Terminal.render(&scope_table(cmp, s)));
        for line in method_legend(cmp, s) {
            let _ = writeln!(out, "  {line}");
        }
    }
    let tails = super::tails::compare_lines(&o.tails, &cmp.runs);
    if !tails.is_empty() {
        let _ = writeln!(
            out,
            "\nTails (docs/tails.md), against {}:",
            cmp.runs[0].label
        );
        for line in tails {
            let _ = writeln!(out, "  {line}");
        }
    }
    let _ = writeln!(out);
    for line in headlines(cmp) {
        let _ = writeln!(out, "{line}");
    }
    let counters = counter_lines(o);
    if !counters.is_empty() {
        let _ = writeln!(out);
        for line in counters {
            let _ = writeln!(out, "{line}");
        }
    }
    if let Some(r) = &o.regression {
        let _ = writeln!(out);
        for line in regression_lines(r) {
            let _ = writeln!(out, "{line}");
        }
    }
    for b in &o.budgets {
        let _ = writeln!(out, "\nBudget {} for {}:", b.verdict.expression, b.run);
        for line in budget::verdict_lines(&b.verdict) {
            let _ = writeln!(out, "  {line}");
        }
    }
    out
}

/// The comparison as Markdown: a table per scope, then the checks.
pub(crate) fn markdown(o: &CompareOutput) -> String {
    let cmp = &o.comparison;
    let mut out = String::from("# jitterlab compare\n\n");
    for line in run_lines(cmp) {
        let (label, rest) = line.split_once("  ").unwrap_or((&line, ""));
        let _ = writeln!(out, "- **{label}** {rest}");
    }
    let cell = |c: &str| c.replace('|', "\\|");
    for s in &cmp.scopes {
        let _ = writeln!(out, "\n## {}\n", scope_title(s));
        out.push_str(&Markdown.render(&scope_table(cmp, s)));
        let legend = method_legend(cmp, s);
        if !legend.is_empty() {
            let _ = writeln!(out);
            for line in legend {
                let _ = writeln!(out, "{line}.  ");
            }
        }
    }
    let _ = writeln!(out, "\n## Summary\n");
    for line in headlines(cmp) {
        let _ = writeln!(out, "- {line}");
    }
    if let Some(r) = &o.regression {
        let _ = writeln!(out, "\n## Regression check\n");
        for line in regression_lines(r) {
            let _ = writeln!(out, "- {}", line.trim());
        }
    }
    for b in &o.budgets {
        let _ = writeln!(
            out,
            "\n## Budget `{}` for {}\n",
            b.verdict.expression, b.run
        );
        for line in budget::verdict_lines(&b.verdict) {
            let _ = writeln!(out, "- {}", cell(&line));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 23, defect 12: the headline's ratio is the table's B/A and its words agree
    /// ("max 1.26x lower" stood beside 0.79x).
    #[test]
    fn headline_ratios_read_as_the_table_does() {
        assert_eq!(ratio_words(0.79), "0.79x (21 % lower)");
        assert_eq!(ratio_words(1.52), "1.52x (52 % higher)");
        assert_eq!(ratio_words(42.0), "42x (4100 % higher)");
        assert_eq!(ratio_words(1.0), "1.00x (the same)");
        assert_eq!(ratio_words(1.002), "1.00x (0.2 % higher)");
        assert_eq!(ratio_words(100.0 / 4200.0), "0.024x (98 % lower)");
    }
}

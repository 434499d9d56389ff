//! Latency budgets: `--budget 'max<200us,p99.9<50us,missed=0'` (grammar in docs/budget.md).
//!
//! A budget is parsed once (bad text is exit 2, pointing at the clause) and then evaluated
//! against any run record: at the end of `jitterlab run`, for every run of `jitterlab compare`,
//! and for stored runs in reports. Each clause is judged on every CPU of the run (or on the one
//! CPU it names) and passes only when every judged CPU meets it.

pub use super::metric::{METRICS, Metric};
use crate::measure::clock::monotonic_ns;
use crate::results::RunRecord;
use crate::results::events::{Event, EventLog};
use crate::results::run_record::{BudgetVerdict, ClauseVerdict, ThreadSummary};
use crate::units::parse_duration_ns;
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Lt,
    Le,
    Eq,
    Ge,
    Gt,
}

impl Op {
    pub fn symbol(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Eq => "=",
            Op::Ge => ">=",
            Op::Gt => ">",
        }
    }

    pub fn holds(self, actual: f64, limit: f64) -> bool {
        match self {
            Op::Lt => actual < limit,
            Op::Le => actual <= limit,
            Op::Eq => actual == limit,
            Op::Ge => actual >= limit,
            Op::Gt => actual > limit,
        }
    }
}

/// One `[cpuN:]METRIC OP VALUE`.
#[derive(Debug, Clone, PartialEq)]
pub struct Clause {
    /// The clause as written (trimmed), e.g. `p99.9<50us`.
    pub text: String,
    /// Only this CPU; None: every CPU of the run.
    pub cpu: Option<usize>,
    pub metric: Metric,
    pub op: Op,
    /// ns for latency metrics, a count otherwise.
    pub limit: f64,
}

/// A parsed `--budget` expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Budget {
    pub expression: String,
    pub clauses: Vec<Clause>,
}

/// A malformed budget: which clause, where in the expression, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetError {
    pub expression: String,
    /// 1-based position of the clause.
    pub clause_number: usize,
    pub clause: String,
    /// Byte offset and length of the clause in the expression (for the caret line).
    pub offset: usize,
    pub len: usize,
    pub reason: String,
}

/// What the grammar accepts, for error messages.
pub fn accepted() -> String {
    let names: Vec<&str> = METRICS.iter().map(|(n, _)| *n).collect();
    format!(
        "clauses [cpuN:]METRIC OP VALUE separated by commas; METRIC is one of {}; OP is one of <, <=, =, >=, >; \
         latency values carry a unit (ns, us, ms, s), counts (missed, dropped, deadline_misses) are plain integers; \
         e.g. 'max<200us,p99.9<50us,missed=0' or 'cpu1:max<100us'",
        names.join(", ")
    )
}

impl fmt::Display for BudgetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let caret_start = self.expression[..self.offset].chars().count();
        let caret_len = self.expression[self.offset..self.offset + self.len]
            .chars()
            .count()
            .max(1);
        write!(
            f,
            "--budget: clause {} '{}' {}\n  {}\n  {}{}\n  accepted: {}",
            self.clause_number,
            self.clause,
            self.reason,
            self.expression,
            " ".repeat(caret_start),
            "^".repeat(caret_len),
            accepted()
        )
    }
}

impl Budget {
    /// Parses an expression; the error names the first bad clause.
    pub fn parse(expression: &str) -> Result<Budget, BudgetError> {
        let mut clauses = Vec::new();
        let mut offset = 0;
        for (i, raw) in expression.split(',').enumerate() {
            let lead = raw.len() - raw.trim_start().len();
            let text = raw.trim();
            let fail = |reason: String| BudgetError {
                expression: expression.to_string(),
                clause_number: i + 1,
                clause: text.to_string(),
                offset: offset + lead,
                len: text.len(),
                reason,
            };
            clauses.push(parse_clause(text).map_err(fail)?);
            offset += raw.len() + 1;
        }
        Ok(Budget {
            expression: expression.to_string(),
            clauses,
        })
    }

    /// The CPUs the clauses name explicitly (checked against the plan before a run starts).
    /// A `--budget` option: None when absent; a malformed expression is a usage error (exit 2).
    pub fn from_option(expression: Option<&str>) -> crate::error::Result<Option<Budget>> {
        expression
            .map(Budget::parse)
            .transpose()
            .map_err(|e| crate::error::Failure::usage(e.to_string()))
    }

    pub fn named_cpus(&self) -> Vec<usize> {
        self.clauses.iter().filter_map(|c| c.cpu).collect()
    }

    /// Judges a run. Every clause is judged on each CPU in scope; a CPU without the figure (no
    /// samples, or a count the imported source lacked) fails the clause, since the budget cannot
    /// be shown to hold there.
    pub fn evaluate(&self, record: &RunRecord) -> BudgetVerdict {
        let absent: &[String] = record
            .imported
            .as_ref()
            .map_or(&[], |i| i.absent.as_slice());
        let clauses: Vec<ClauseVerdict> = self
            .clauses
            .iter()
            .map(|c| evaluate_clause(c, &record.threads, absent))
            .collect();
        BudgetVerdict {
            expression: self.expression.clone(),
            passed: clauses.iter().all(|c| c.passed),
            clauses,
        }
    }
}

fn evaluate_clause(c: &Clause, threads: &[ThreadSummary], absent: &[String]) -> ClauseVerdict {
    let in_scope: Vec<&ThreadSummary> = threads
        .iter()
        .filter(|t| c.cpu.is_none_or(|cpu| t.cpu == cpu))
        .collect();
    let verdict = |passed: bool, actual: String| ClauseVerdict {
        clause: c.text.clone(),
        passed,
        actual,
    };
    if in_scope.is_empty() {
        return verdict(
            false,
            match c.cpu {
                Some(cpu) => format!("cpu{cpu}: not measured in this run"),
                None => "no CPUs measured".into(),
            },
        );
    }
    // A CPU without the figure decides the verdict: it cannot be shown to meet the budget.
    for t in &in_scope {
        if c.metric.value(t, absent).is_none() {
            let why = if c.metric.is_count() {
                "not in the imported source"
            } else {
                "no samples"
            };
            return verdict(false, format!("cpu{}: {}: {why}", t.cpu, c.metric.name()));
        }
    }
    let values: Vec<(usize, f64)> = in_scope
        .iter()
        .map(|t| (t.cpu, c.metric.value(t, absent).expect("checked above")))
        .collect();
    // The CPU shown is the first that violates, else the one closest to the limit's side.
    let shown = values
        .iter()
        .find(|(_, v)| !c.op.holds(*v, c.limit))
        .or_else(|| match c.op {
            Op::Lt | Op::Le => values.iter().max_by(|a, b| a.1.total_cmp(&b.1)),
            Op::Gt | Op::Ge => values.iter().min_by(|a, b| a.1.total_cmp(&b.1)),
            Op::Eq => values.first(),
        })
        .expect("at least one CPU");
    let failing = values
        .iter()
        .filter(|(_, v)| !c.op.holds(*v, c.limit))
        .count();
    let mut actual = format!("cpu{}: {}", shown.0, c.metric.format(shown.1));
    if failing > 1 {
        actual.push_str(&format!(" ({failing} of {} CPUs fail)", values.len()));
    }
    verdict(failing == 0, actual)
}

fn parse_clause(text: &str) -> Result<Clause, String> {
    if text.is_empty() {
        return Err("is empty (two commas in a row, or a comma at the end?)".into());
    }
    let (cpu, body) = match text.split_once(':') {
        Some((scope, body)) => {
            let scope = scope.trim();
            let n = scope
                .strip_prefix("cpu")
                .and_then(|n| n.parse::<usize>().ok())
                .ok_or_else(|| {
                    format!("has the scope '{scope}:'; a scope is cpuN: (e.g. cpu1:max<100us)")
                })?;
            (Some(n), body.trim())
        }
        None => (None, text),
    };
    let op_at = body
        .find(['<', '>', '=', '!'])
        .ok_or_else(|| "has no operator (<, <=, =, >=, >)".to_string())?;
    let (metric_text, rest) = body.split_at(op_at);
    let metric_text = metric_text.trim();
    let metric = METRICS
        .iter()
        .find(|(n, _)| *n == metric_text)
        .map(|(_, m)| *m)
        .ok_or_else(|| {
            if metric_text.is_empty() {
                "has no metric before the operator".to_string()
            } else {
                format!("has the unknown metric '{metric_text}'")
            }
        })?;
    let (op, value_text) = [
        ("<=", Op::Le),
        (">=", Op::Ge),
        ("<", Op::Lt),
        (">", Op::Gt),
        ("=", Op::Eq),
    ]
    .iter()
    .find_map(|(sym, op)| rest.strip_prefix(sym).map(|v| (*op, v.trim())))
    .ok_or_else(|| format!("has an unknown operator in '{rest}'"))?;
    if value_text.starts_with(['<', '>', '=', '!']) {
        return Err(format!(
            "has an unknown operator '{}{}'",
            op.symbol(),
            value_text
                .chars()
                .take_while(|c| "<>=!".contains(*c))
                .collect::<String>()
        ));
    }
    if value_text.is_empty() {
        return Err(format!("has no value after '{}'", op.symbol()));
    }
    let limit = if metric.is_latency() {
        parse_duration_ns(value_text).map_err(|e| format!("has a bad latency value: {e}"))? as f64
    } else {
        value_text.parse::<u64>().map_err(|_| {
            format!(
                "has '{value_text}' where {} needs a count (a plain integer such as 0, no unit)",
                metric.name()
            )
        })? as f64
    };
    Ok(Clause {
        text: text.to_string(),
        cpu,
        metric,
        op,
        limit,
    })
}

/// One line per clause for terminals: `PASS  max<200us  (cpu1: 42.0 us)`.
pub fn verdict_lines(verdict: &BudgetVerdict) -> Vec<String> {
    let width = verdict
        .clauses
        .iter()
        .map(|c| c.clause.chars().count())
        .max()
        .unwrap_or(0);
    let mut lines: Vec<String> = verdict
        .clauses
        .iter()
        .map(|c| {
            format!(
                "{}  {:width$}  {}",
                if c.passed { "pass" } else { "FAIL" },
                c.clause,
                c.actual
            )
        })
        .collect();
    let failed = verdict.clauses.iter().filter(|c| !c.passed).count();
    lines.push(if verdict.passed {
        format!("budget met ({} clauses)", verdict.clauses.len())
    } else {
        format!(
            "budget FAILED: {failed} of {} clauses violated",
            verdict.clauses.len()
        )
    });
    lines
}

/// At the end of `jitterlab run`: judges the run, stores the verdict in the record and writes
/// one `BudgetBreach` event per violated clause.
pub fn judge_run(budget: &Budget, record: &mut RunRecord, events: &mut EventLog) {
    let verdict = budget.evaluate(record);
    for (clause, actual) in breaches(&verdict) {
        // events.jsonl is best effort, as everywhere in the runner; the verdict is in run.json.
        let _ = events.write(&Event::BudgetBreach {
            time_ns: monotonic_ns(),
            clause,
            actual,
        });
    }
    record.budget = Some(verdict);
}

/// The violated clauses as (clause, actual), for `BudgetBreach` events.
pub fn breaches(verdict: &BudgetVerdict) -> Vec<(String, String)> {
    verdict
        .clauses
        .iter()
        .filter(|c| !c.passed)
        .map(|c| (c.clause.clone(), c.actual.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::stats::LatencySummary;

    fn thread(cpu: usize, max_us: i64, p999_us: u64, missed: u64) -> ThreadSummary {
        ThreadSummary {
            cpu,
            thread_index: cpu,
            tid: 1,
            interval_ns: 1_000_000,
            deadline_ns: 1_000_000,
            latency: LatencySummary {
                samples: 1000,
                min_ns: Some(5_000),
                mean_ns: Some(12_500.5),
                stddev_ns: Some(3_000.0),
                p50_ns: Some(10_000),
                p90_ns: Some(20_000),
                p99_ns: Some(30_000),
                p999_ns: Some(p999_us * 1000),
                p9999_ns: Some(p999_us * 1000),
                max_ns: Some(max_us * 1000),
            },
            missed_periods: missed,
            dropped_records: 0,
            deadline_misses: missed,
            early_wakeups: 0,
            end: "completed".into(),
            irq_latency: None,
        }
    }

    fn record(threads: Vec<ThreadSummary>) -> RunRecord {
        let mut r: RunRecord = serde_json::from_value(serde_json::json!({
            "format": 1, "jitterlab_version": "t", "command_line": [],
            "plan": {"cpus": [0, 1], "policy": "fifo", "priority": 95, "deadline_runtime_ns": null,
                     "wake": "clock-nanosleep", "clock": "monotonic", "interval_ns": 1000000,
                     "distance_ns": 0, "interval_step_ns": 0, "duration_ns": 1, "loops": null,
                     "deadline_ns": null, "log_interval_ns": 1000000000, "loads": [],
                     "samples": false, "ring_size": 1024, "mlock": true, "pm_qos_us": null},
            "system": null,
            "environment": {"memory_locked": true, "stack_prefaulted_bytes": 0,
                            "pm_qos": {"held_us": null, "previous_us": null, "error": null}},
            "started_utc": "", "ended_utc": null, "start_monotonic_ns": 0, "duration_ns": null,
            "ended": "completed", "end_reason": null, "threads": [], "loads": [], "warnings": []
        }))
        .unwrap();
        r.threads = threads;
        r
    }

    #[test]
    fn parses_every_metric_operator_and_unit() {
        let b = Budget::parse("max<200us, p99.9<=50us,missed=0,cpu1:min>=1us,mean>1.5ms,p99.99<1s,dropped<3,deadline_misses<=2,stddev<20000ns,p50<1ms,p90<2ms,p99<3ms").unwrap();
        assert_eq!(b.clauses.len(), 12);
        assert_eq!(b.clauses[0].metric, Metric::Max);
        assert_eq!(b.clauses[0].op, Op::Lt);
        assert_eq!(b.clauses[0].limit, 200_000.0);
        assert_eq!(b.clauses[1].text, "p99.9<=50us");
        assert_eq!(b.clauses[1].op, Op::Le);
        assert_eq!(b.clauses[2].metric, Metric::Missed);
        assert_eq!(b.clauses[2].limit, 0.0);
        assert_eq!(b.clauses[3].cpu, Some(1));
        assert_eq!(b.clauses[3].op, Op::Ge);
        assert_eq!(b.clauses[4].limit, 1_500_000.0);
        assert_eq!(b.clauses[5].limit, 1e9);
        assert_eq!(b.named_cpus(), vec![1]);
    }

    #[test]
    fn errors_point_at_the_clause() {
        let e = Budget::parse("max<200us,p99.9<<50us,missed=0").unwrap_err();
        assert_eq!(e.clause_number, 2);
        assert_eq!(e.clause, "p99.9<<50us");
        assert_eq!(e.offset, 10);
        let text = e.to_string();
        assert!(text.contains("unknown operator '<<'"), "{text}");
        assert!(
            text.contains("\n  max<200us,p99.9<<50us,missed=0\n            ^^^^^^^^^^^\n"),
            "{text}"
        );
        assert!(text.contains("accepted:"), "{text}");

        for (bad, why) in [
            ("max<200", "no unit"),
            ("maxx<1ms", "unknown metric 'maxx'"),
            ("p99.9", "no operator"),
            ("max<", "no value"),
            ("<1ms", "no metric"),
            ("missed=0us", "plain integer"),
            ("missed<-1", "plain integer"),
            ("max<1ms,", "is empty"),
            ("gpu0:max<1ms", "scope"),
            ("max!=1ms", "unknown operator"),
            ("max=>1ms", "unknown operator"),
        ] {
            let e = Budget::parse(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn verdicts_judge_every_cpu_and_name_the_worst() {
        let r = record(vec![thread(0, 150, 40, 0), thread(1, 421, 60, 2)]);
        let v = Budget::parse("max<200us,p99.9<50us,missed=0,max<1ms,cpu0:max<200us,cpu5:max<1s")
            .unwrap()
            .evaluate(&r);
        assert!(!v.passed);
        let got: Vec<(bool, &str)> = v
            .clauses
            .iter()
            .map(|c| (c.passed, c.actual.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (false, "cpu1: 421.0 us"),
                (false, "cpu1: 60.0 us"),
                (false, "cpu1: 2"),
                (true, "cpu1: 421.0 us"),
                (true, "cpu0: 150.0 us"),
                (false, "cpu5: not measured in this run"),
            ]
        );
        let lines = verdict_lines(&v);
        assert!(lines[0].starts_with("FAIL  max<200us"), "{lines:?}");
        assert!(lines[3].starts_with("pass  max<1ms"), "{lines:?}");
        assert_eq!(
            lines.last().unwrap(),
            "budget FAILED: 4 of 6 clauses violated"
        );
        assert_eq!(breaches(&v).len(), 4);

        let ok = Budget::parse("max<=421us,min>1us,mean<13us")
            .unwrap()
            .evaluate(&r);
        assert!(ok.passed, "{ok:?}");
        assert_eq!(ok.clauses[2].actual, "cpu1: 12.5 us"); // equal means: the last CPU shows
    }

    #[test]
    fn boundaries_are_exact() {
        let r = record(vec![thread(0, 200, 50, 0)]);
        let v = |e: &str| Budget::parse(e).unwrap().evaluate(&r).passed;
        assert!(!v("max<200us"));
        assert!(v("max<=200us"));
        assert!(v("max=200us"));
        assert!(v("max>=200us"));
        assert!(!v("max>200us"));
        assert!(v("max<200001ns"));
    }

    #[test]
    fn absent_figures_fail_the_clause() {
        let mut r = record(vec![thread(0, 100, 10, 0)]);
        r.imported = Some(crate::results::run_record::ImportRecord {
            source_format: "cyclictest-json".into(),
            source_file: "x".into(),
            per_interval: false,
            absent: vec!["missed_periods".into()],
        });
        let v = Budget::parse("missed=0,max<1ms").unwrap().evaluate(&r);
        assert!(!v.clauses[0].passed);
        assert_eq!(
            v.clauses[0].actual,
            "cpu0: missed: not in the imported source"
        );
        assert!(v.clauses[1].passed);
        r.threads[0].latency = LatencySummary::default();
        let v = Budget::parse("max<1ms").unwrap().evaluate(&r);
        assert_eq!(v.clauses[0].actual, "cpu0: max: no samples");
    }
}

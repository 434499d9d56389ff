//! Reading a budget from its text: clause by clause, with an error that points at the bad
//! clause and says what the grammar accepts.

use super::{Budget, Clause, METRICS, Metric, Op};
use crate::units::parse_duration_ns;
use std::fmt;

/// A malformed budget: which clause, where in the expression, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetError {
    pub expression: String,
    /// 1-based position of the clause.
    pub(crate) clause_number: usize,
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
         under(THRESHOLD)>=PERCENT% judges the share of wakeups within a threshold, firm(m,k) allows at most m deadline misses in any k consecutive periods; \
         spikes(THRESHOLD)<=COUNT judges the spikes over a threshold (a run of late wakeups counted once), spikes(THRESHOLD)/h<=RATE their rate per hour; \
         noise_pct is a percentage (noise runs); \
         e.g. 'max<200us,p99.9<50us,missed=0', 'cpu1:max<100us', 'under(250us)>=99.5%,firm(2,10)', 'spikes(100us)<=3', 'spikes(1ms)/h<=0.5'",
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
        for (i, raw) in split_clauses(expression).into_iter().enumerate() {
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

    /// A `--budget` option: None when absent; a malformed expression is a usage error (exit 2).
    pub(crate) fn from_option(expression: Option<&str>) -> crate::error::Result<Option<Budget>> {
        expression
            .map(Budget::parse)
            .transpose()
            .map_err(|e| crate::error::Failure::usage(e.to_string()))
    }
}

/// The clauses of an expression: split at the commas outside parentheses (`firm(2,10)` is one
/// clause).
fn split_clauses(expression: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (i, c) in expression.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&expression[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&expression[start..]);
    parts
}

/// `firm(m,k)`: never more than m deadline misses in any k consecutive periods, read as the
/// clause `firm(k) <= m`.
fn parse_firm(text: &str, cpu: Option<usize>) -> Result<Clause, String> {
    let inner = text
        .strip_prefix("firm(")
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| "is not of the form firm(m,k), e.g. firm(2,10)".to_string())?;
    let (m, k) = inner
        .split_once(',')
        .ok_or_else(|| "needs two numbers: firm(m,k), e.g. firm(2,10)".to_string())?;
    let number = |v: &str, what: &str| {
        v.trim()
            .parse::<u64>()
            .map_err(|_| format!("has '{}' where {what} needs a plain integer", v.trim()))
    };
    let (m, k) = (number(m, "m")?, number(k, "k")?);
    if k == 0 || m > k {
        return Err(format!(
            "needs 0 <= m <= k and k >= 1 (m misses allowed in any k consecutive periods); got m={m}, k={k}"
        ));
    }
    Ok(Clause {
        text: text.to_string(),
        cpu,
        metric: Metric::Firm(k),
        op: Op::Le,
        limit: m as f64,
    })
}

/// `spikes(THRESHOLD)` (a count) or `spikes(THRESHOLD)/h` (a rate per hour); None when the
/// text is not a spikes metric at all.
fn parse_spikes(metric_text: &str) -> Option<Result<Metric, String>> {
    let rest = metric_text.strip_prefix("spikes(")?;
    let (threshold, per_hour) = match rest.strip_suffix(")/h") {
        Some(t) => (Some(t), true),
        None => (rest.strip_suffix(')'), false),
    };
    let Some(threshold) = threshold else {
        return Some(Err(
            "is not of the form spikes(THRESHOLD) or spikes(THRESHOLD)/h, e.g. spikes(100us)<=3"
                .into(),
        ));
    };
    Some(
        parse_duration_ns(threshold.trim())
            .map_err(|e| format!("has a bad threshold in spikes(...): {e}"))
            .and_then(|t| {
                if t == 0 {
                    return Err("has the threshold 0 in spikes(...); it must be above 0".into());
                }
                Ok(if per_hour {
                    Metric::SpikeRate(t)
                } else {
                    Metric::Spikes(t)
                })
            }),
    )
}

fn parse_clause(text: &str) -> Result<Clause, String> {
    if text.is_empty() {
        return Err("is empty (two commas in a row, or a comma at the end?)".into());
    }
    let (cpu, body) = split_scope(text)?;
    if body.starts_with("firm") && !body.contains(['<', '>', '=']) {
        return parse_firm(body, cpu);
    }
    let op_at = body
        .find(['<', '>', '=', '!'])
        .ok_or_else(|| "has no operator (<, <=, =, >=, >)".to_string())?;
    let (metric_text, rest) = body.split_at(op_at);
    let metric = parse_metric(metric_text.trim())?;
    let (op, value_text) = parse_operator(rest)?;
    let limit = parse_limit(metric, value_text)?;
    Ok(Clause {
        text: text.to_string(),
        cpu,
        metric,
        op,
        limit,
    })
}

/// Splits off a `cpuN:` scope: the CPU the clause is about (None: every CPU) and the rest.
fn split_scope(text: &str) -> Result<(Option<usize>, &str), String> {
    let Some((scope, body)) = text.split_once(':') else {
        return Ok((None, text));
    };
    let scope = scope.trim();
    let n = scope
        .strip_prefix("cpu")
        .and_then(|n| n.parse::<usize>().ok())
        .ok_or_else(|| {
            format!("has the scope '{scope}:'; a scope is cpuN: (e.g. cpu1:max<100us)")
        })?;
    Ok((Some(n), body.trim()))
}

/// The metric before the operator: under(THRESHOLD), spikes(THRESHOLD)[/h] or a name of
/// [`METRICS`].
fn parse_metric(metric_text: &str) -> Result<Metric, String> {
    let under = match metric_text.strip_prefix("under(") {
        Some(rest) => {
            let threshold = rest.strip_suffix(')').ok_or_else(|| {
                "has 'under(' without its ')': under(THRESHOLD), e.g. under(250us)>=99.5%"
                    .to_string()
            })?;
            Some(Metric::Under(parse_duration_ns(threshold.trim()).map_err(
                |e| format!("has a bad threshold in under(...): {e}"),
            )?))
        }
        None => None,
    };
    under
        .map(Ok)
        .or_else(|| parse_spikes(metric_text))
        .transpose()?
        .or_else(|| {
            METRICS
                .iter()
                .find(|(n, _)| *n == metric_text)
                .map(|(_, m)| *m)
        })
        .ok_or_else(|| {
            if metric_text.is_empty() {
                "has no metric before the operator".to_string()
            } else {
                format!("has the unknown metric '{metric_text}'")
            }
        })
}

/// The comparison at the start of `rest` and the value text after it; refuses a value that
/// starts with more operator characters (`<<`, `=>`, `!=`) rather than misread it.
fn parse_operator(rest: &str) -> Result<(Op, &str), String> {
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
    Ok((op, value_text))
}

/// The limit in the metric's own unit: a rate per hour, a share or percentage, a latency in ns,
/// or a count.
fn parse_limit(metric: Metric, value_text: &str) -> Result<f64, String> {
    let limit = if let Metric::SpikeRate(_) = metric {
        value_text
            .trim_end_matches("/h")
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| {
                format!("has '{value_text}' where spikes(...)/h needs a rate per hour, e.g. 0.5")
            })?
    } else if let Metric::Under(_) = metric {
        let percent = value_text.strip_suffix('%').unwrap_or(value_text).trim();
        percent
            .parse::<f64>()
            .ok()
            .filter(|p| (0.0..=100.0).contains(p))
            .ok_or_else(|| {
                format!("has '{value_text}' where under(...) needs a share in percent, e.g. 99.5%")
            })?
    } else if metric.is_percent() {
        value_text
            .trim_end_matches('%')
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| {
                format!(
                    "has '{value_text}' where {} needs a percentage (e.g. 0.1 or 0.1%)",
                    metric.name()
                )
            })?
    } else if metric.is_latency() {
        parse_duration_ns(value_text).map_err(|e| format!("has a bad latency value: {e}"))? as f64
    } else {
        value_text.parse::<u64>().map_err(|_| {
            format!(
                "has '{value_text}' where {} needs a count (a plain integer such as 0, no unit)",
                metric.name()
            )
        })? as f64
    };
    Ok(limit)
}

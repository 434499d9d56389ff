//! Judging a run record against a budget: every clause on every CPU in its scope.

use super::{Budget, Clause, Op};
use crate::format::RunRecord;
use crate::format::run_record::{BudgetVerdict, ClauseVerdict, ThreadSummary};

impl Budget {
    /// Judges a run. Every clause is judged on each CPU in scope; a CPU without the figure (no
    /// samples, or a count the imported source lacked) fails the clause, since the budget cannot
    /// be shown to hold there.
    pub fn evaluate(&self, record: &RunRecord) -> BudgetVerdict {
        let absent: &[String] = record
            .imported
            .as_ref()
            .map_or(&[], |i| i.absent.as_slice());
        self.evaluate_threads(&record.threads, absent)
    }

    /// Judges per-CPU figures that are not a stored run (a monitor's window); `absent` names
    /// the count fields the figures lack.
    pub(crate) fn evaluate_threads(
        &self,
        threads: &[ThreadSummary],
        absent: &[String],
    ) -> BudgetVerdict {
        let clauses: Vec<ClauseVerdict> = self
            .clauses
            .iter()
            .map(|c| evaluate_clause(c, threads, absent))
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
            let why = match c.metric {
                // rtla osnoise top: the largest gap only, no count or distribution.
                _ if absent.iter().any(|a| a == "samples") => "not in the imported source",
                _ if t.latency.samples == 0 => "no samples",
                crate::analysis::metric::Metric::Under(_)
                | crate::analysis::metric::Metric::Firm(_)
                | crate::analysis::metric::Metric::Spikes(_)
                | crate::analysis::metric::Metric::SpikeRate(_) => {
                    "not counted in this run (the recorder counts the thresholds and windows of the run's own --under and --budget)"
                }
                _ if c.metric.is_count() => "not in the imported source",
                // A noise run without the figure: an import whose source lacks it.
                _ if c.metric.is_percent() && t.noise.is_some() => "not in the imported source",
                _ if c.metric.is_percent() => "only noise runs (jitterlab noise) have it",
                _ => "no samples",
            };
            return verdict(false, format!("cpu{}: {}: {why}", t.cpu, c.metric.label()));
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

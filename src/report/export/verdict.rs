//! The budget a whole-run export judges, and its verdict per clause and per CPU, for the
//! formats that show each (JUnit, LAVA). `analysis::budget` judges a clause over all its CPUs at
//! once; the cases here are the same judgement on one CPU at a time, so a clause passes when
//! every one of its cases passes.

use crate::analysis::budget::{Budget, Clause};
use crate::analysis::metric::Metric;
use crate::error::{Failure, Result};
use crate::format::RunRecord;

/// The budget stored with the run (run.json `budget`, from `run --budget` or an earlier
/// `export --budget`), parsed again so that it can be judged per CPU.
pub(crate) fn stored_budget(record: &RunRecord) -> Result<Option<Budget>> {
    record
        .budget
        .as_ref()
        .map(|v| {
            Budget::parse(&v.expression).map_err(|e| {
                Failure::usage(format!(
                    "run.json's budget expression no longer parses ({e}); pass the budget again with --budget"
                ))
            })
        })
        .transpose()
}

/// One clause judged on one CPU.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuCase {
    /// The clause as written, e.g. `p99.9<50us` or `cpu1:max<100us`.
    pub clause: String,
    pub cpu: usize,
    pub metric: Metric,
    /// ns for latency metrics, a count otherwise; None when the CPU has no such figure (no
    /// samples, a count the imported source lacked, a CPU the run did not measure).
    pub value: Option<f64>,
    /// The value is only a lower bound (a percentile among an imported histogram's
    /// overflows): shown `≥`, and a clause it cannot decide fails.
    pub(crate) lower_bound: bool,
    pub passed: bool,
    /// What the value had to be, e.g. `< 50.0 us`.
    pub limit: String,
}

impl CpuCase {
    /// The measured value with its unit, or why there is none.
    pub(crate) fn value_text(&self) -> String {
        match (self.value, self.lower_bound) {
            (Some(v), true) => format!(
                "≥{} (a lower bound: among the imported histogram's overflows)",
                self.metric.format(v)
            ),
            (Some(v), false) => self.metric.format(v),
            (None, _) => "not measured".into(),
        }
    }
}

/// Every clause on every CPU it judges, in clause order, CPUs in the run's order. A clause
/// naming a CPU the run did not measure is one failing case (as `Budget::evaluate` fails it).
pub fn cases(budget: &Budget, record: &RunRecord) -> Vec<CpuCase> {
    let absent: &[String] = record
        .imported
        .as_ref()
        .map_or(&[], |i| i.absent.as_slice());
    let mut out = Vec::new();
    for c in &budget.clauses {
        let case = |cpu: usize, value: Option<f64>| {
            // A bound judged and shown as where the overflows begin (`Clause::judged`).
            let judged = value.map(|v| c.judged_in(record, cpu, v));
            let value = judged.map(|(v, _)| v);
            let lower_bound = judged.is_some_and(|(_, bound)| bound);
            CpuCase {
                clause: c.text.clone(),
                cpu,
                metric: c.metric,
                value,
                lower_bound,
                // A CPU without the figure, or with a bound that cannot decide the clause,
                // cannot be shown to meet the budget (as `Budget::evaluate` judges it).
                passed: value.is_some_and(|v| {
                    c.op.holds(v, c.limit) && !(lower_bound && c.undecided_by_bound(v))
                }),
                limit: limit_text(c),
            }
        };
        let in_scope: Vec<_> = record
            .threads
            .iter()
            .filter(|t| c.cpu.is_none_or(|cpu| t.cpu == cpu))
            .collect();
        match (in_scope.is_empty(), c.cpu) {
            (true, Some(cpu)) => out.push(case(cpu, None)),
            _ => out.extend(
                in_scope
                    .iter()
                    .map(|t| case(t.cpu, c.metric.value(t, absent))),
            ),
        }
    }
    out
}

fn limit_text(c: &Clause) -> String {
    format!("{} {}", c.op.symbol(), c.metric.format(c.limit))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// L9-a: the per-CPU cases judge and show a bound where the overflows begin, as
    /// `Budget::evaluate` does (analysis/budget/tests.rs).
    #[test]
    fn the_per_cpu_cases_judge_a_bound_where_the_overflows_begin() {
        let r = crate::analysis::budget::tests::overflowed_from_30us();
        let budget = Budget::parse("p99>30us,p99>=30us").unwrap();
        assert_eq!(
            cases(&budget, &r)
                .iter()
                .map(|c| (c.passed, c.value, c.lower_bound))
                .collect::<Vec<_>>(),
            [(false, Some(30_000.0), true), (true, Some(30_000.0), true)]
        );
    }
}

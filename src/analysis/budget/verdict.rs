//! What a verdict becomes: one line per clause for people, one `BudgetBreach` event per
//! violated clause for events.jsonl.

use super::Budget;
use crate::format::RunRecord;
use crate::format::events::Event;
use crate::format::run_record::BudgetVerdict;
use crate::measure::clock::monotonic_ns;

/// One line per clause for terminals: `PASS  max<200us  (cpu1: 42.0 us)`.
pub(crate) fn verdict_lines(verdict: &BudgetVerdict) -> Vec<String> {
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

/// At the end of `jitterlab run`: judges the run and stores the verdict in the record; returns
/// one `BudgetBreach` event per violated clause, for the run's writer of events.jsonl.
pub(crate) fn judge_run(budget: &Budget, record: &mut RunRecord) -> Vec<Event> {
    let verdict = budget.evaluate(record);
    let time_ns = monotonic_ns();
    let events = breaches(&verdict)
        .into_iter()
        .map(|(clause, actual)| Event::BudgetBreach {
            time_ns,
            clause,
            actual,
        })
        .collect();
    record.budget = Some(verdict);
    events
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

//! Judging a run record against a budget: every clause on every CPU in its scope.

use super::{Budget, Clause, Op};
use crate::format::RunRecord;
use crate::format::run_record::{BudgetVerdict, ClauseVerdict, ThreadSummary};

impl Budget {
    /// Judges a run. Every clause is judged on each CPU in scope; a CPU without the figure (no
    /// samples, or a count the imported source lacked) fails the clause, since the budget cannot
    /// be shown to hold there.
    pub fn evaluate(&self, record: &RunRecord) -> BudgetVerdict {
        let imported = record.imported.as_ref();
        let absent: &[String] = imported.map_or(&[], |i| i.absent.as_slice());
        let bound_from = |cpu| imported.and_then(|i| i.latency_overflow_from(cpu));
        self.judge(&record.threads, absent, &bound_from)
    }

    /// Judges per-CPU figures that are not a stored run (a monitor's window); `absent` names
    /// the count fields the figures lack.
    pub(crate) fn evaluate_threads(
        &self,
        threads: &[ThreadSummary],
        absent: &[String],
    ) -> BudgetVerdict {
        self.judge(threads, absent, &|_| None)
    }

    /// `bound_from(cpu)`: where that CPU's imported overflows begin (a percentile at or above
    /// it is a lower bound).
    fn judge(
        &self,
        threads: &[ThreadSummary],
        absent: &[String],
        bound_from: &dyn Fn(usize) -> Option<u64>,
    ) -> BudgetVerdict {
        let clauses: Vec<ClauseVerdict> = self
            .clauses
            .iter()
            .map(|c| evaluate_clause(c, threads, absent, bound_from))
            .collect();
        BudgetVerdict {
            expression: self.expression.clone(),
            passed: clauses.iter().all(|c| c.passed),
            clauses,
        }
    }
}

fn evaluate_clause(
    c: &Clause,
    threads: &[ThreadSummary],
    absent: &[String],
    bound_from: &dyn Fn(usize) -> Option<u64>,
) -> ClauseVerdict {
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
    // A bound is judged by where the overflows begin ([`Clause::judged`]).
    let values: Vec<(usize, f64)> = in_scope
        .iter()
        .map(|t| {
            let v = c.metric.value(t, absent).expect("checked above");
            (t.cpu, c.judged(bound_from(t.cpu), v).0)
        })
        .collect();
    // A percentile among an import's overflows is a lower bound: the true value is at least
    // it. The bound decides the clause only where every value above it gives the same answer
    // (a `<` it already breaks, a `>` it already meets); otherwise the budget cannot be shown
    // to hold, and the clause fails saying so (eighth hostile re-run, B1: `p99<50us` passed at
    // the histogram's 30 us end for a run whose mean was 50 ms).
    let is_bound = |&(cpu, v): &(usize, f64)| c.is_bound_above(bound_from(cpu), v);
    let undecided = values
        .iter()
        .find(|cv| is_bound(cv) && c.undecided_by_bound(cv.1));
    if let Some(&(cpu, v)) = undecided {
        return verdict(
            false,
            format!(
                "cpu{cpu}: ≥{}: a lower bound (it lies among the imported histogram's overflows, recorded at its end), so the budget cannot be shown to hold; import with a larger histogram (e.g. cyclictest -h)",
                c.metric.format(v)
            ),
        );
    }
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
    let mut actual = match is_bound(shown) {
        true => format!(
            "cpu{}: ≥{} (a lower bound: among the imported histogram's overflows)",
            shown.0,
            c.metric.format(shown.1)
        ),
        false => format!("cpu{}: {}", shown.0, c.metric.format(shown.1)),
    };
    if failing > 1 {
        actual.push_str(&format!(" ({failing} of {} CPUs fail)", values.len()));
    }
    verdict(failing == 0, actual)
}

impl Clause {
    /// Whether a lower bound `v` (the true value is at least it) leaves the clause undecided:
    /// a `<` it meets, a `>` it misses, or an `=` it does not already break may each go either
    /// way above it. Where it is not undecided, the bound judges as the value would.
    pub(crate) fn undecided_by_bound(&self, v: f64) -> bool {
        match self.op {
            Op::Lt | Op::Le => self.op.holds(v, self.limit),
            Op::Gt | Op::Ge => !self.op.holds(v, self.limit),
            Op::Eq => v <= self.limit,
        }
    }

    /// The value this clause judges CPU `cpu`'s `value` of its metric by, and whether it is
    /// only a lower bound ([`Clause::judged`] with the CPU's imported overflows).
    pub(crate) fn judged_in(&self, record: &RunRecord, cpu: usize, value: f64) -> (f64, bool) {
        let from = record
            .imported
            .as_ref()
            .and_then(|i| i.latency_overflow_from(cpu));
        self.judged(from, value)
    }

    /// The value this clause judges `value` of its metric by, for a CPU whose imported
    /// overflows begin at `overflow_from` ns, and whether it is only a lower bound. A percentile
    /// at or above where the overflows begin lies among them: the true value is at least
    /// `overflow_from`, and that is the bound judged and shown, not the value the histogram
    /// stores for its end (its bucket's representative, 30.015 us for a 30 us end, passed
    /// `p99>30us` where p99 may be exactly 30 us: ninth hostile re-run, L9-a).
    pub(crate) fn judged(&self, overflow_from: Option<u64>, value: f64) -> (f64, bool) {
        match overflow_from {
            Some(from) if self.is_bound_above(overflow_from, value) => (from as f64, true),
            _ => (value, false),
        }
    }

    /// Whether `value` of this clause's metric is a lower bound for a CPU whose overflows begin
    /// at `overflow_from` ns: a percentile at or above it.
    fn is_bound_above(&self, overflow_from: Option<u64>, value: f64) -> bool {
        self.metric.quantile().is_some() && overflow_from.is_some_and(|from| value >= from as f64)
    }
}

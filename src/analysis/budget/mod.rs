//! Latency budgets: `--budget 'max<200us,p99.9<50us,missed=0'` (grammar in docs/budget.md).
//!
//! A budget is parsed once (bad text is exit 2, pointing at the clause) and then evaluated
//! against any run record: at the end of `jitterlab run`, for every run of `jitterlab compare`,
//! and for stored runs in reports. Each clause is judged on every CPU of the run (or on the one
//! CPU it names) and passes only when every judged CPU meets it.
//!
//! By concern: the types of a budget (here), reading one from text (`parse.rs`), judging a run
//! record against it (`evaluate.rs`), and what a verdict becomes: lines for people, events for
//! events.jsonl (`verdict.rs`).

mod evaluate;
mod parse;
mod verdict;

pub(crate) use super::metric::METRICS;
pub use super::metric::Metric;
pub use parse::accepted;
pub use verdict::breaches;
pub(crate) use verdict::{judge_run, verdict_lines};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Lt,
    Le,
    Eq,
    Ge,
    Gt,
}

impl Op {
    pub(crate) fn symbol(self) -> &'static str {
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

impl Budget {
    /// The CPUs the clauses name explicitly (checked against the plan before a run starts).
    pub(crate) fn named_cpus(&self) -> Vec<usize> {
        self.clauses.iter().filter_map(|c| c.cpu).collect()
    }
}

#[cfg(test)]
pub(crate) mod tests;

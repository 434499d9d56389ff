//! Analysis of stored runs: budgets (pass/fail against limits), comparisons between runs with
//! confidence intervals, and the regression check built on them. Pure functions of result
//! directories (docs/architecture.md, principle 4); rendering lives in `report/`.

pub mod budget;
pub mod compare;
pub mod counters;
pub mod metric;
pub mod phase;
pub mod quantile;
pub(crate) mod regression;
pub mod tails;
pub(crate) mod tails_compare;

//! The system: snapshot of the conditions a run was measured under, and readiness checks.

pub mod host;

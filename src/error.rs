//! Errors that carry their exit code.
//!
//! Every failure that reaches `main` is a [`Failure`]: a message that says what failed, why,
//! and what to do, plus the [`ExitCode`] of DESIGN.md that a script or CI job can act on.

use std::fmt;

/// The exit codes of DESIGN.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// 1: a budget or regression check failed.
    CheckFailed = 1,
    /// 2: bad usage or input.
    Usage = 2,
    /// 3: the system cannot do what was asked (permission, missing kernel feature).
    System = 3,
    /// 4: failure during the run.
    Run = 4,
}

/// An error with its exit code and a complete, user-facing message.
#[derive(Debug)]
pub struct Failure {
    pub code: ExitCode,
    pub message: String,
}

impl Failure {
    pub fn usage(message: impl Into<String>) -> Self {
        Failure {
            code: ExitCode::Usage,
            message: message.into(),
        }
    }
    pub fn system(message: impl Into<String>) -> Self {
        Failure {
            code: ExitCode::System,
            message: message.into(),
        }
    }
    pub fn run(message: impl Into<String>) -> Self {
        Failure {
            code: ExitCode::Run,
            message: message.into(),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

/// Result type of everything that can end the program with an exit code.
pub type Result<T> = std::result::Result<T, Failure>;

/// Adds context to I/O errors in one line: `fs::write(p, s).or_run(|| format!("writing {p}"))`.
pub trait OrFailure<T> {
    /// Maps the error to a run-time failure (exit 4) prefixed with `what`.
    fn or_run(self, what: impl FnOnce() -> String) -> Result<T>;
    /// Maps the error to bad input (exit 2) prefixed with `what`.
    fn or_usage(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T, E: fmt::Display> OrFailure<T> for std::result::Result<T, E> {
    fn or_run(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| Failure::run(format!("{}: {e}", what())))
    }
    fn or_usage(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| Failure::usage(format!("{}: {e}", what())))
    }
}

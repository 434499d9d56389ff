//! The result of one readiness check.

use serde::{Deserialize, Serialize};

/// How a check came out. The order is the order of severity used for sorting and exit codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Verdict {
    /// As it should be for real-time work.
    Ok,
    /// Works, but makes latency worse or results less representative.
    Warn,
    /// Real-time work as jitterlab does it by default cannot work here.
    Fail,
    /// The check could not find out (a file missing or unreadable).
    Unknown,
}

impl Verdict {
    /// The lowercase name used in the table and in JSON.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Warn => "warn",
            Verdict::Fail => "fail",
            Verdict::Unknown => "unknown",
        }
    }
}

/// One readiness check: what it looked at, what it concluded, and what to do about it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Check {
    /// Stable identifier, `area.name`, e.g. `scheduling.rt_throttling`.
    pub id: String,
    /// The group the check is shown under: kernel, scheduling, cpu, irq, memory,
    /// virtualization, posix, tracing.
    pub area: String,
    pub verdict: Verdict,
    /// What the check saw, with the file or call it came from.
    pub(crate) evidence: String,
    /// Why it matters for latency.
    pub why: String,
    /// What to do about it; empty when the verdict is ok.
    pub(crate) fix: String,
}

/// The fixed part of a check (its id, area and why), from which each verdict is made.
/// Keeping these in one constant per check means a check's explanation cannot drift
/// between its verdicts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Spec {
    pub id: &'static str,
    pub area: &'static str,
    pub why: &'static str,
}

impl Spec {
    fn make(&self, verdict: Verdict, evidence: String, fix: String) -> Check {
        Check {
            id: self.id.to_string(),
            area: self.area.to_string(),
            verdict,
            evidence,
            why: self.why.to_string(),
            fix,
        }
    }
    pub(super) fn ok(&self, evidence: impl Into<String>) -> Check {
        self.make(Verdict::Ok, evidence.into(), String::new())
    }
    pub(crate) fn warn(&self, evidence: impl Into<String>, fix: impl Into<String>) -> Check {
        self.make(Verdict::Warn, evidence.into(), fix.into())
    }
    pub(crate) fn fail(&self, evidence: impl Into<String>, fix: impl Into<String>) -> Check {
        self.make(Verdict::Fail, evidence.into(), fix.into())
    }
    pub(super) fn unknown(&self, evidence: impl Into<String>, fix: impl Into<String>) -> Check {
        self.make(Verdict::Unknown, evidence.into(), fix.into())
    }
    /// A verdict chosen at run time; `fix` is dropped when the verdict is ok.
    pub(super) fn with(&self, verdict: Verdict, evidence: impl Into<String>, fix: &str) -> Check {
        let fix = if verdict == Verdict::Ok {
            String::new()
        } else {
            fix.to_string()
        };
        self.make(verdict, evidence.into(), fix)
    }
}

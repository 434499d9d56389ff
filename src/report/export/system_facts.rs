//! The facts about the measured system that the export formats name (host, kernel, preemption
//! model), read from run.json's `system`, which holds jitterlab's own snapshot for a run
//! (docs/doctor.md) and the source's `sysinfo` for a cyclictest or oslat import. What neither
//! says is `unknown`.

use crate::format::RunRecord;
use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SystemFacts {
    pub host: String,
    /// `uname -r`.
    pub(crate) kernel_release: String,
    /// `uname -v`.
    pub(crate) kernel_version: String,
    /// `uname -m`.
    pub machine: String,
    /// `PREEMPT_RT`, `PREEMPT_DYNAMIC (full)`, ... or `unknown`.
    pub(crate) preemption: String,
}

impl SystemFacts {
    pub(crate) fn of(record: &RunRecord) -> SystemFacts {
        let s = &record.system;
        // jitterlab's snapshot names first, then rt-tests' sysinfo names.
        let text = |keys: &[&str]| {
            keys.iter()
                .find_map(|k| s.get(*k).and_then(Value::as_str))
                .filter(|v| !v.is_empty())
                .unwrap_or("unknown")
                .to_string()
        };
        let kernel_version = text(&["kernel_version", "version"]);
        let preemption = match s.get("preemption_model").and_then(Value::as_str) {
            Some(model) => model.to_string(),
            // rt-tests write `"realtime": 1` when /sys/kernel/realtime says so.
            None if s.get("realtime").and_then(Value::as_i64) == Some(1)
                || kernel_version.contains("PREEMPT_RT") =>
            {
                "PREEMPT_RT".into()
            }
            None => "unknown".into(),
        };
        SystemFacts {
            host: text(&["hostname", "nodename"]),
            kernel_release: text(&["kernel_release", "release"]),
            kernel_version,
            machine: text(&["machine"]),
            preemption,
        }
    }

    /// What rt-tests' `realtime` field says: the kernel is PREEMPT_RT.
    pub(crate) fn is_realtime(&self) -> bool {
        self.preemption == "PREEMPT_RT"
    }
}

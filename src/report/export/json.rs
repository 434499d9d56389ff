//! `--format json`: the run's summary on one line, for scripts and dashboards: what was run,
//! how it ended, run.json's per-CPU figures, the budget verdict and where an import came from.
//! The sample log and the interval histograms are not included.

use super::exporter::RunExporter;
use super::output::write_text;
use crate::error::Result;
use crate::results::loaded::LoadedRun;
use serde_json::json;
use std::path::Path;

pub(crate) struct Json;

impl RunExporter for Json {
    fn write(&self, run: &LoadedRun, output: Option<&Path>) -> Result<()> {
        let r = &run.record;
        let summary = json!({
            "format": r.format,
            "run_dir": run.path.display().to_string(),
            "jitterlab_version": r.jitterlab_version,
            "started_utc": r.started_utc,
            "duration_ns": r.duration_ns,
            "ended": r.ended.as_str(),
            "end_reason": r.end_reason,
            "plan": {
                "cpus": r.plan.cpus,
                "policy": r.plan.policy,
                "priority": r.plan.priority,
                "wake": r.plan.wake,
                "clock": r.plan.clock,
                "interval_ns": r.plan.interval_ns,
                "loads": r.plan.loads,
            },
            "threads": r.threads,
            "budget": r.budget,
            "imported": r.imported,
            "warnings": r.warnings,
        });
        let mut text = serde_json::to_string(&summary).expect("summaries serialise");
        text.push('\n');
        write_text(output, &text)
    }
}

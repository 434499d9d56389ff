//! Recognising a source format from a file's content.

use super::model::*;
use super::{
    cyclictest_hist, cyclictest_json, cyclictest_status, jitterdebugger, jitterdebugger_samples,
    oslat_json, oslat_text, rteval, rtla_osnoise_hist, rtla_osnoise_top, rtla_timerlat,
    rtla_timerlat_top, stress_ng_cyclic,
};

/// Recognises a binary file (one with NUL bytes, `super::is_binary`) from its content.
pub fn detect_binary(bytes: &[u8]) -> std::result::Result<&'static SourceFormat, String> {
    jitterdebugger_samples::layout(bytes)
        .map(|_| &jitterdebugger_samples::FORMAT)
        .map_err(|why| {
            format!("as a binary file (it has NUL bytes) it is not jitterdebugger's samples.raw, the binary format read: {why}")
        })
}

/// Recognises a file's format from its content; the error says what was recognised.
pub fn detect(text: &str) -> std::result::Result<&'static SourceFormat, String> {
    if text.lines().any(|l| l.trim_start().starts_with('{')) {
        let v = super::parse_json(text).map_err(|e| format!("it starts like JSON but {e}"))?;
        let tool = v
            .get("cmdline:")
            .or_else(|| v.get("cmdline"))
            .and_then(|c| c.as_str())
            .and_then(|c| c.split_whitespace().next())
            .map(|t| t.rsplit('/').next().unwrap_or(t).to_string());
        let first_thread = v
            .get("thread")
            .and_then(|t| t.as_object())
            .and_then(|t| t.values().next());
        return match (tool.as_deref(), first_thread) {
            (Some("cyclictest"), _) => Ok(&cyclictest_json::FORMAT),
            (Some("oslat"), _) => Ok(&oslat_json::FORMAT),
            (_, Some(t)) if t.get("cycles").is_some() => Ok(&cyclictest_json::FORMAT),
            (_, Some(t)) if t.get("freq").is_some() => Ok(&oslat_json::FORMAT),
            (None, None) if v.get("cpu").is_some_and(|c| c.is_object()) => {
                Ok(&jitterdebugger::FORMAT)
            }
            _ => Err(format!(
                "it is JSON{} but neither cyclictest's (thread.N.cycles), oslat's (thread.N.freq) nor jitterdebugger's (cpu.N.histogram)",
                tool.map_or(String::new(), |t| format!(" written by '{t}'"))
            )),
        };
    }
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    if lines.iter().any(|l| l.starts_with("<rteval")) {
        return Ok(&rteval::FORMAT);
    }
    if lines
        .iter()
        .any(|l| l.starts_with("# RTLA osnoise histogram"))
        || lines
            .iter()
            .any(|l| l.starts_with("Index") && l.contains("CPU-"))
    {
        return Ok(&rtla_osnoise_hist::FORMAT);
    }
    if lines
        .iter()
        .any(|l| l.starts_with("# RTLA timerlat histogram"))
        || lines
            .iter()
            .any(|l| l.starts_with("Index") && (l.contains("IRQ-") || l.contains("Thr-")))
    {
        return Ok(&rtla_timerlat::FORMAT);
    }
    // rtla --no-header: the rows and the count:/over: lines, but no column line to name them.
    if ["over:", "count:", "min:", "max:"]
        .iter()
        .all(|label| lines.iter().any(|l| l.starts_with(label)))
    {
        return Err(rtla_timerlat::NO_HEADER.into());
    }
    if lines.iter().any(|l| l.starts_with("# Max Latencies:")) || lines.contains(&"# Histogram") {
        return Ok(&cyclictest_hist::FORMAT);
    }
    if lines.iter().any(|l| l.starts_with("oslat V"))
        || (lines.iter().any(|l| l.starts_with("Core:"))
            && lines.iter().any(|l| l.ends_with("(including overflows)")))
    {
        return Ok(&oslat_text::FORMAT);
    }
    if lines.iter().any(|l| l.contains("cyclic: sched ")) {
        return Ok(&stress_ng_cyclic::FORMAT);
    }
    if lines.iter().any(|l| l.starts_with("stress-ng-version:")) {
        return Err(stress_ng_cyclic::YAML_REFUSED.into());
    }
    if lines.iter().any(|l| l.starts_with("CPU Period"))
        || lines
            .iter()
            .any(|l| l == &"Operating System Noise" || l == &"Hardware-related Noise")
    {
        return Ok(&rtla_osnoise_top::FORMAT);
    }
    if lines.iter().any(|l| l.starts_with("CPU COUNT")) {
        return Ok(&rtla_timerlat_top::FORMAT);
    }
    if lines
        .iter()
        .any(|l| l.starts_with("T:") && l.contains("Max:"))
    {
        return Ok(&cyclictest_status::FORMAT);
    }
    Err("it is neither JSON nor a histogram text jitterlab knows".into())
}

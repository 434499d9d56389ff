//! The doctor's terminal table and JSON document.

use std::fmt::Write;

use serde::Serialize;

use super::snapshot::{AREAS, SystemSnapshot};
use super::verdict::Verdict;
use crate::cpulist::format_cpu_list;

/// Version of the doctor JSON document (docs/doctor.md).
pub(crate) const DOCTOR_FORMAT: u32 = 1;

/// How many checks came out each way.
#[derive(Debug, Default, Clone, Copy, Serialize, PartialEq, Eq)]
pub(crate) struct Counts {
    pub ok: usize,
    pub(crate) warn: usize,
    pub(crate) fail: usize,
    pub unknown: usize,
}

pub(crate) fn counts(s: &SystemSnapshot) -> Counts {
    let mut n = Counts::default();
    for c in &s.checks {
        *match c.verdict {
            Verdict::Ok => &mut n.ok,
            Verdict::Warn => &mut n.warn,
            Verdict::Fail => &mut n.fail,
            Verdict::Unknown => &mut n.unknown,
        } += 1;
    }
    n
}

/// The `jitterlab doctor --json` document: the snapshot's fields plus a summary.
#[derive(Serialize)]
struct DoctorJson<'a> {
    format: u32,
    summary: Counts,
    /// Whether no check failed (what the exit code 0 means).
    ready: bool,
    #[serde(flatten)]
    system: &'a SystemSnapshot,
}

pub(crate) fn json(s: &SystemSnapshot) -> String {
    let doc = DoctorJson {
        format: DOCTOR_FORMAT,
        summary: counts(s),
        ready: !s.any_fail(),
        system: s,
    };
    serde_json::to_string_pretty(&doc).expect("the snapshot serializes (plain data only)")
}

/// The table: a header with the facts, then the checks grouped by area, each with its
/// verdict, id and evidence, and for anything not ok why it matters and the fix.
pub(crate) fn table(s: &SystemSnapshot) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "jitterlab doctor: {} ({} {})",
        s.hostname, s.kernel_release, s.machine
    );
    let _ = writeln!(
        out,
        "  kernel {}; preemption {}; {} Hz; clocksource {}; {}",
        s.kernel_version,
        s.preemption_model,
        s.hz.map_or("?".into(), |h| h.to_string()),
        s.clocksource.as_deref().unwrap_or("?"),
        s.hypervisor
            .as_deref()
            .map_or("bare metal or undetected hypervisor".into(), |h| format!(
                "virtual machine ({h})"
            )),
    );
    let _ = writeln!(
        out,
        "  CPUs: {} present, online {}, measuring {}",
        s.cpu_count,
        format_cpu_list(&s.online_cpus),
        format_cpu_list(&s.measured_cpus)
    );
    let width = s.checks.iter().map(|c| c.id.len()).max().unwrap_or(0);
    let mut areas: Vec<&str> = AREAS.to_vec();
    for c in &s.checks {
        if !areas.contains(&c.area.as_str()) {
            areas.push(&c.area);
        }
    }
    for area in areas {
        let group: Vec<_> = s.checks.iter().filter(|c| c.area == area).collect();
        if group.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n{area}");
        for c in group {
            let _ = writeln!(
                out,
                "  {:<7} {:<width$}  {}",
                c.verdict.as_str(),
                c.id,
                c.evidence
            );
            if c.verdict != Verdict::Ok {
                let pad = " ".repeat(10 + width);
                let _ = writeln!(out, "{pad}why: {}", c.why);
                if !c.fix.is_empty() {
                    let _ = writeln!(out, "{pad}fix: {}", c.fix);
                }
            }
        }
    }
    let n = counts(s);
    let _ = writeln!(
        out,
        "\n{} ok, {} warn, {} fail, {} unknown: {}",
        n.ok,
        n.warn,
        n.fail,
        n.unknown,
        if n.fail > 0 {
            "NOT READY for real-time measurement; fix the failures above"
        } else if n.warn > 0 {
            "ready, with the warnings above affecting results"
        } else {
            "ready"
        }
    );
    out
}

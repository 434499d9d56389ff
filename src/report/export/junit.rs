//! `--format junit`: the run as JUnit XML (the Ant/Surefire layout of Jenkins' `junit-10.xsd`,
//! which Jenkins, GitLab and GitHub test reporters read), so latency budgets show as tests.
//!
//! With a budget (run.json's, or `export --budget`): one test case per clause and CPU,
//! `cpuN: CLAUSE`, passing or failing with the measured value and the limit. Without one: one
//! case per CPU, `cpuN: completed without missed periods or dropped records`, failing when the
//! thread did not complete or lost periods or samples, skipped when an imported source did not
//! record those counts. One `<testsuite>` holds the cases, its properties name the run.

use super::exporter::RunExporter;
use super::output::write_text;
use super::system_facts::SystemFacts;
use super::verdict::{self, CpuCase};
use crate::error::Result;
use crate::format::run_record::{RunRecord, ThreadSummary};
use crate::results::loaded::LoadedRun;
use std::fmt::Write;
use std::path::Path;

pub(crate) struct Junit;

// Text for XML 1.0 attributes and content is escaped as the report's SVG and HTML are (control
// characters XML cannot hold included): one escaping for every markup.
use crate::report::svg::escape as xml_escape;

/// One `<testcase>`: its name, and the failure or skip message when it did not pass.
struct Case {
    classname: &'static str,
    name: String,
    outcome: Outcome,
}

enum Outcome {
    Passed(String),
    Failed(String),
    Skipped(String),
}

fn budget_case(c: &CpuCase) -> Case {
    let text = format!(
        "cpu{}: {} {}, limit {}",
        c.cpu,
        c.metric.name(),
        c.value_text(),
        c.limit
    );
    Case {
        classname: "jitterlab.budget",
        name: format!("cpu{}: {}", c.cpu, c.clause),
        outcome: if c.passed {
            Outcome::Passed(text)
        } else {
            Outcome::Failed(text)
        },
    }
}

/// Without a budget: did the CPU's thread complete without losing periods or samples?
fn completion_case(t: &ThreadSummary, absent: &[String]) -> Case {
    let known = |field: &str| !absent.iter().any(|a| a == field);
    let mut problems = Vec::new();
    if t.end != "completed" {
        problems.push(format!("thread ended '{}'", t.end));
    }
    if known("missed_periods") && t.missed_periods > 0 {
        problems.push(format!("{} missed periods", t.missed_periods));
    }
    if known("dropped_records") && t.dropped_records > 0 {
        problems.push(format!("{} dropped records", t.dropped_records));
    }
    let unknown: Vec<&str> = ["missed_periods", "dropped_records"]
        .into_iter()
        .filter(|f| !known(f))
        .collect();
    let outcome = if !problems.is_empty() {
        Outcome::Failed(format!("cpu{}: {}", t.cpu, problems.join(", ")))
    } else if !unknown.is_empty() {
        Outcome::Skipped(format!(
            "cpu{}: {} not in the imported source",
            t.cpu,
            unknown.join(" and ")
        ))
    } else {
        Outcome::Passed(format!(
            "cpu{}: {} samples, 0 missed periods, 0 dropped records",
            t.cpu, t.latency.samples
        ))
    };
    Case {
        classname: "jitterlab.run",
        name: format!(
            "cpu{}: completed without missed periods or dropped records",
            t.cpu
        ),
        outcome,
    }
}

/// The XML document of a run.
pub(crate) fn render(run: &LoadedRun) -> Result<String> {
    let r: &RunRecord = &run.record;
    let absent: &[String] = r.imported.as_ref().map_or(&[], |i| i.absent.as_slice());
    let budget = verdict::stored_budget(r)?;
    let cases: Vec<Case> = match &budget {
        Some(b) => verdict::cases(b, r).iter().map(budget_case).collect(),
        None => r
            .threads
            .iter()
            .map(|t| completion_case(t, absent))
            .collect(),
    };
    let failures = cases
        .iter()
        .filter(|c| matches!(c.outcome, Outcome::Failed(_)))
        .count();
    let skipped = cases
        .iter()
        .filter(|c| matches!(c.outcome, Outcome::Skipped(_)))
        .count();
    let facts = SystemFacts::of(r);
    let suite_name = match &budget {
        Some(b) => format!("jitterlab {} budget {}", r.kind.name(), b.expression),
        None => r.kind.words().command.to_string(),
    };
    let time = r
        .duration_ns
        .map(|d| format!(" time=\"{:.3}\"", d as f64 / 1e9))
        .unwrap_or_default();

    let mut x = String::new();
    let _ = writeln!(x, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
    let _ = writeln!(
        x,
        "<testsuites name=\"jitterlab\" tests=\"{}\" failures=\"{failures}\" errors=\"0\"{time}>",
        cases.len()
    );
    let _ = writeln!(
        x,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\"{time} timestamp=\"{}\" hostname=\"{}\">",
        xml_escape(&suite_name),
        cases.len(),
        xml_escape(&r.started_utc),
        xml_escape(&facts.host)
    );
    write_properties(&mut x, run, budget.as_ref(), &facts);
    for c in &cases {
        write_case(&mut x, c);
    }
    if !r.warnings.is_empty() {
        let _ = writeln!(
            x,
            "    <system-err>{}</system-err>",
            xml_escape(&r.warnings.join("\n"))
        );
    }
    let _ = writeln!(x, "  </testsuite>");
    let _ = writeln!(x, "</testsuites>");
    Ok(x)
}

/// The suite's properties: where the run is, what made it, on which kernel, judged how.
fn write_properties(
    x: &mut String,
    run: &LoadedRun,
    budget: Option<&crate::analysis::budget::Budget>,
    facts: &SystemFacts,
) {
    let r = &run.record;
    let _ = writeln!(x, "    <properties>");
    let mut properties = vec![
        ("run_dir", run.path.display().to_string()),
        ("jitterlab_version", r.jitterlab_version.clone()),
        ("ended", r.ended.as_str().to_string()),
        ("kernel", facts.kernel_release.clone()),
        ("preemption", facts.preemption.clone()),
        ("command_line", r.command_line.join(" ")),
    ];
    if let Some(b) = budget {
        properties.push(("budget", b.expression.clone()));
    }
    if let Some(i) = &r.imported {
        properties.push((
            "imported_from",
            format!("{} {}", i.source_format, i.source_file),
        ));
    }
    for (name, value) in properties {
        let _ = writeln!(
            x,
            "      <property name=\"{name}\" value=\"{}\"/>",
            xml_escape(&value)
        );
    }
    let _ = writeln!(x, "    </properties>");
}

/// One test case, with its output, failure or reason for skipping.
fn write_case(x: &mut String, c: &Case) {
    let open = format!(
        "    <testcase classname=\"{}\" name=\"{}\"",
        c.classname,
        xml_escape(&c.name)
    );
    match &c.outcome {
        Outcome::Passed(text) => {
            let _ = writeln!(x, "{open}>");
            let _ = writeln!(x, "      <system-out>{}</system-out>", xml_escape(text));
            let _ = writeln!(x, "    </testcase>");
        }
        Outcome::Failed(text) => {
            let _ = writeln!(x, "{open}>");
            let _ = writeln!(
                x,
                "      <failure type=\"{}\" message=\"{}\">{}</failure>",
                if c.classname == "jitterlab.budget" {
                    "budget"
                } else {
                    "run"
                },
                xml_escape(text),
                xml_escape(text)
            );
            let _ = writeln!(x, "    </testcase>");
        }
        Outcome::Skipped(text) => {
            let _ = writeln!(x, "{open}>");
            let _ = writeln!(x, "      <skipped message=\"{}\"/>", xml_escape(text));
            let _ = writeln!(x, "    </testcase>");
        }
    }
}

impl RunExporter for Junit {
    fn write(&self, run: &LoadedRun, output: Option<&Path>) -> Result<()> {
        write_text(output, &render(run)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_special_and_control_characters() {
        assert_eq!(
            xml_escape("a<b & \"c\" 'd'>\u{1b}[31m\n"),
            "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;\u{FFFD}[31m\n"
        );
    }
}

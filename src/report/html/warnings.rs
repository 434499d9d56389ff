//! The warnings boxes of the report (conditions that affect the results: run.json's warnings,
//! how a run ended if it did not complete, readiness checks that came out warn or fail). With
//! one run, its box is in its section. With several, the same machine usually gives every run
//! the same warnings: one box per distinct set of warnings, at the top, names the runs it
//! applies to, and each run's section links to its box instead of repeating it.

use crate::doctor::{SystemSnapshot, Verdict};
use crate::format::run_record::RunRecord;
use crate::report::svg::escape;
use std::collections::HashMap;
use std::fmt::Write;

/// One line of a box.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Warning {
    /// The style sheet's class of the line: `fail` (a failed check, a run that did not
    /// complete), `warn`, or none.
    pub class: Option<&'static str>,
    pub text: String,
}

/// The runs that share one set of warnings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Group {
    /// The warnings, in the order the group's first run has them.
    pub warnings: Vec<Warning>,
    /// The runs (indexes into the runs given), in order.
    pub runs: Vec<usize>,
}

/// A run's warnings: how it ended if it did not complete, run.json's warnings, then the
/// readiness checks that came out warn or fail, each fact once: a check whose fact a run
/// warning states already ([`stated_by`]) is not listed again.
pub(super) fn of_run(r: &RunRecord) -> Vec<Warning> {
    let mut out = Vec::new();
    if let Some(reason) = &r.end_reason {
        out.push(Warning {
            class: Some("fail"),
            text: format!("the run ended {}: {reason}", r.ended.as_str()),
        });
    }
    out.extend(of_record(&r.warnings, &r.system));
    out
}

/// run.json's `warnings`, then the readiness checks of its `system` that came out warn or
/// fail and that no warning states already.
fn of_record(warnings: &[String], system: &serde_json::Value) -> Vec<Warning> {
    let mut out: Vec<Warning> = warnings
        .iter()
        .map(|w| Warning {
            class: None,
            text: w.clone(),
        })
        .collect();
    if let Ok(s) = serde_json::from_value::<SystemSnapshot>(system.clone()) {
        for c in s.checks {
            let class = match c.verdict {
                Verdict::Warn => "warn",
                Verdict::Fail => "fail",
                _ => continue,
            };
            if c.verdict == Verdict::Warn && stated_by(&c.id, warnings) {
                continue;
            }
            out.push(Warning {
                class: Some(class),
                text: format!("readiness check {class}: {}: {}", c.id, c.evidence),
            });
        }
    }
    out
}

/// Whether a run warning states the fact of the readiness check `id` (a run writes them from
/// its checks: `SystemSnapshot::representativeness_warnings`): the VM and its steal time since
/// boot, RT throttling, a kernel without PREEMPT_RT, a container. A failed check is always
/// listed.
fn stated_by(id: &str, warnings: &[String]) -> bool {
    let any = |f: &dyn Fn(&str) -> bool| warnings.iter().any(|w| f(w));
    match id {
        "virtualization.hypervisor" => any(&|w| w.starts_with("measured in a virtual machine")),
        "virtualization.steal" => any(&|w| {
            (w.starts_with("measured in a virtual machine")
                || w.starts_with("the hypervisor takes CPU time from this system"))
                && (w.contains("steal time so far") || w.contains("stolen by the host"))
        }),
        "scheduling.rt_throttling" => any(&|w| w.starts_with("RT throttling is on")),
        "kernel.preemption" => any(&|w| w.starts_with("the kernel is not PREEMPT_RT")),
        "virtualization.container" => any(&|w| {
            w.starts_with("measured ")
                && w.contains("the container's CPU, memory and scheduling limits")
        }),
        _ => false,
    }
}

/// Runs with the same set of warnings (whatever their order and repeats) in one group; groups
/// in the order of their first run; a run without warnings in none.
pub(super) fn group(runs: &[Vec<Warning>]) -> Vec<Group> {
    let set = |w: &[Warning]| {
        let mut s = w.to_vec();
        s.sort();
        s.dedup();
        s
    };
    let mut groups: Vec<(Vec<Warning>, Group)> = Vec::new();
    for (i, warnings) in runs.iter().enumerate() {
        if warnings.is_empty() {
            continue;
        }
        let key = set(warnings);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, g)) => g.runs.push(i),
            None => groups.push((
                key,
                Group {
                    warnings: warnings.clone(),
                    runs: vec![i],
                },
            )),
        }
    }
    groups.into_iter().map(|(_, g)| g).collect()
}

/// The most warnings of one kind a box shows; the rest are counted in one line after them.
const SHOWN_OF_A_KIND: usize = 3;

/// A warning's kind: its text with every number made `#` (two warnings that differ only in a
/// CPU, a time or a count are of one kind; identical ones are too).
fn kind(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_number = false;
    for c in text.chars() {
        if c.is_ascii_digit() {
            if !in_number {
                out.push('#');
            }
            in_number = true;
        } else {
            in_number = c == '.' && in_number;
            out.push(c);
        }
    }
    out
}

/// The lines of a box: at most [`SHOWN_OF_A_KIND`] warnings of each kind, in their order, the
/// last of them followed by `... and N more like it` when there are more (a run of thousands of
/// like warnings gives a readable box, issue 39).
pub(super) fn capped(warnings: &[Warning]) -> Vec<Warning> {
    let kinds: Vec<String> = warnings.iter().map(|w| kind(&w.text)).collect();
    let mut total: HashMap<&str, usize> = HashMap::new();
    for k in &kinds {
        *total.entry(k.as_str()).or_default() += 1;
    }
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut out = Vec::new();
    for (w, k) in warnings.iter().zip(&kinds) {
        let before = seen.entry(k.as_str()).or_default();
        *before += 1;
        if *before > SHOWN_OF_A_KIND {
            continue;
        }
        out.push(w.clone());
        if *before == SHOWN_OF_A_KIND {
            let more = total[k.as_str()] - SHOWN_OF_A_KIND;
            if more > 0 {
                out.push(Warning {
                    class: w.class,
                    text: format!(
                        "... and {more} more like it (run.json's `warnings` has them all)"
                    ),
                });
            }
        }
    }
    out
}

/// A box; `applies_to`: its anchor and the runs it applies to, when it is shared. Like
/// warnings are capped ([`capped`]).
pub(super) fn write_box(h: &mut String, warnings: &[Warning], applies_to: Option<(&str, &str)>) {
    match applies_to {
        Some((id, _)) => {
            let _ = write!(h, "<div class=\"warnings\" id=\"{}\">", escape(id));
        }
        None => h.push_str("<div class=\"warnings\">"),
    }
    h.push_str("<h3>Warnings (conditions that affect these results)</h3>");
    if let Some((_, runs)) = applies_to {
        let _ = write!(h, "<p class=\"applies\">For {}.</p>", escape(runs));
    }
    h.push_str("<ul>");
    for w in &capped(warnings) {
        match w.class {
            Some(c) => {
                let _ = write!(h, "<li class=\"{c}\">{}</li>", escape(&w.text));
            }
            None => {
                let _ = write!(h, "<li>{}</li>", escape(&w.text));
            }
        }
    }
    h.push_str("</ul></div>\n");
}

/// The anchor of group `k` (from 0).
pub(super) fn anchor(k: usize) -> String {
    format!("warnings-{}", k + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(text: &str) -> Warning {
        Warning {
            class: None,
            text: text.into(),
        }
    }

    #[test]
    fn runs_with_the_same_set_share_one_group() {
        let steal = w("steal time 3 %");
        let throttling = w("RT throttling is on");
        let ended = Warning {
            class: Some("fail"),
            text: "the run ended interrupted: SIGINT".into(),
        };
        let runs = vec![
            vec![throttling.clone(), steal.clone()],
            vec![],
            // The same set in another order, with a repeat: the same group.
            vec![steal.clone(), throttling.clone(), steal.clone()],
            vec![throttling.clone()],
            vec![ended.clone(), throttling.clone(), steal.clone()],
            vec![throttling.clone()],
        ];
        let groups = group(&runs);
        assert_eq!(
            groups,
            vec![
                Group {
                    warnings: vec![throttling.clone(), steal.clone()],
                    runs: vec![0, 2],
                },
                Group {
                    warnings: vec![throttling.clone()],
                    runs: vec![3, 5],
                },
                Group {
                    warnings: vec![ended, throttling, steal],
                    runs: vec![4],
                },
            ]
        );
        // Each run with warnings is in exactly one group; run 1 has none.
        let mut all: Vec<usize> = groups.iter().flat_map(|g| g.runs.clone()).collect();
        all.sort_unstable();
        assert_eq!(all, vec![0, 2, 3, 4, 5]);
    }

    /// Like warnings (the same text, or one that differs only in its numbers) are shown three
    /// times, then counted in one line; other warnings keep their place.
    #[test]
    fn like_warnings_are_capped_with_a_count() {
        let mut all = vec![w("RT throttling is on")];
        all.extend((0..500).map(|k| w(&format!("CPU {} was late by {k}.5 us", k % 2))));
        all.push(w("steal time 3 %"));
        all.extend((0..4).map(|_| w("the same")));
        let shown: Vec<String> = capped(&all).into_iter().map(|w| w.text).collect();
        assert_eq!(
            shown,
            [
                "RT throttling is on",
                "CPU 0 was late by 0.5 us",
                "CPU 1 was late by 1.5 us",
                "CPU 0 was late by 2.5 us",
                "... and 497 more like it (run.json's `warnings` has them all)",
                "steal time 3 %",
                "the same",
                "the same",
                "the same",
                "... and 1 more like it (run.json's `warnings` has them all)",
            ]
        );
        let mut h = String::new();
        write_box(&mut h, &all, None);
        assert_eq!(h.matches("<li>").count(), 10, "{h}");
    }

    /// Issue 42: the report lists each fact once. A run on a KVM guest in a container (this
    /// machine's run.json `system`, tests/data/report) has the run warnings its snapshot words,
    /// and the readiness checks behind them are not listed again; the others still are.
    #[test]
    fn a_fact_a_run_warning_states_is_not_listed_again_as_a_check() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/report/system-kvm-container.json"
        ))
        .unwrap();
        let system: serde_json::Value = serde_json::from_str(&text).unwrap();
        let snapshot: SystemSnapshot = serde_json::from_value(system.clone()).unwrap();
        // As a run writes them: the snapshot's words, then the run's own.
        let mut warnings = snapshot.representativeness_warnings(false);
        warnings.push("the hypervisor took 10 ms (0.33% of 3.1 s, ±10 ms) of CPU 0's time while it was measured (steal time, /proc/stat): latencies on it include those gaps".into());
        let shown: Vec<String> = of_record(&warnings, &system)
            .into_iter()
            .map(|w| w.text)
            .collect();
        let checks: Vec<&str> = shown
            .iter()
            .filter_map(|t| t.strip_prefix("readiness check warn: "))
            .map(|t| t.split(':').next().unwrap())
            .collect();
        assert_eq!(
            checks,
            [
                "kernel.isolation",
                "kernel.timer_migration",
                "kernel.watchdogs",
                "irq.affinity"
            ],
            "{shown:#?}"
        );
        // Every run warning is there, once; so is every other warned check.
        for w in &warnings {
            assert_eq!(shown.iter().filter(|s| *s == w).count(), 1, "{w}");
        }
        assert_eq!(shown.len(), warnings.len() + 4);
        // Without the run warnings (a run.json of another version), the checks are listed.
        let alone = of_record(&[], &system);
        assert_eq!(alone.len(), 9, "{alone:#?}");
    }

    #[test]
    fn no_warnings_no_group() {
        assert!(group(&[vec![], vec![]]).is_empty());
    }

    #[test]
    fn a_shared_box_names_its_runs_and_escapes() {
        let mut h = String::new();
        write_box(
            &mut h,
            &[
                w("a <b>"),
                Warning {
                    class: Some("fail"),
                    text: "x".into(),
                },
            ],
            Some(("warnings-1", "run 1: a, run 3: c")),
        );
        assert_eq!(
            h,
            "<div class=\"warnings\" id=\"warnings-1\"><h3>Warnings (conditions that affect these results)</h3>\
             <p class=\"applies\">For run 1: a, run 3: c.</p><ul><li>a &lt;b&gt;</li><li class=\"fail\">x</li></ul></div>\n"
        );
    }
}

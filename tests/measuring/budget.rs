//! `run --budget`: a short real run with injected 2 ms spikes must fail `max<500us` (exit 1,
//! verdict in run.json, a BudgetBreach event, pass/fail lines in the summary) and pass `max<1s`;
//! a malformed budget exits 2 before anything starts.

use crate::common;

use common::*;
use jitterlab::format::events::{Event, read_events};
use std::path::Path;

/// `run --duration DURATION --cpus 0 --quiet MORE --budget BUDGET --out OUT`: the run every
/// test here makes.
fn run_with_budget(
    duration: &str,
    budget: &str,
    out: &Path,
    more: &[&str],
) -> std::process::Output {
    let mut args = vec!["run", "--duration", duration, "--cpus", "0", "--quiet"];
    args.extend_from_slice(more);
    args.extend_from_slice(&["--budget", budget, "--out", out.to_str().unwrap()]);
    jitterlab(&args)
}

#[test]
fn spikes_break_a_tight_budget_and_keep_a_loose_one() {
    if !realtime_available("spikes_break_a_tight_budget_and_keep_a_loose_one") {
        return;
    }
    let _g = exclusive();
    let (_base, out) = temp_out();
    let o = run_with_budget(
        "2s",
        "max<500us,max<1s",
        &out,
        &["--load", "spike:cpu=0,every=500ms,len=2ms,prio=99"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("Budget max<500us,max<1s:"), "{stdout}");
    assert!(stdout.contains("FAIL  max<500us"), "{stdout}");
    assert!(stdout.contains("pass  max<1s"), "{stdout}");
    // With --quiet too, the failure is said on stderr, where it is (issue 39 L-a).
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("jitterlab: the budget failed: 1 of 2 clauses violated: max<500us (cpu0: ")
            && stderr.contains(&format!("the results are in {}", out.display())),
        "{stderr}"
    );
    let run = run_json(&out);
    let max_ns = thread(&run, 0)["max_ns"].as_i64().unwrap();
    // Ground truth: each injection holds CPU 0 for 2 ms, so some wakeup waited well over 1 ms.
    assert!(max_ns > 1_000_000, "max {max_ns} ns with 2 ms spikes");
    let budget = &run["budget"];
    assert_eq!(budget["expression"], "max<500us,max<1s");
    assert_eq!(budget["passed"], false);
    assert_eq!(budget["clauses"][0]["passed"], false);
    assert_eq!(budget["clauses"][1]["passed"], true);
    let shown = jitterlab::analysis::metric::Metric::Max.format(max_ns as f64);
    assert_eq!(budget["clauses"][0]["actual"], format!("cpu0: {shown}"));
    let breaches: Vec<(String, String)> = read_events(&out.join("events.jsonl"))
        .unwrap()
        .into_iter()
        .filter_map(|e| match e {
            Event::BudgetBreach { clause, actual, .. } => Some((clause, actual)),
            _ => None,
        })
        .collect();
    assert_eq!(
        breaches,
        vec![("max<500us".to_string(), format!("cpu0: {shown}"))]
    );

    let (_base, out) = temp_out();
    let o = run_with_budget("1s", "max<1s,missed<1000", &out, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains("failed"),
        "{}",
        text(&o)
    );
    assert_eq!(run_json(&out)["budget"]["passed"], true);
    assert!(String::from_utf8_lossy(&o.stdout).contains("budget met (2 clauses)"));
}

#[test]
fn malformed_budget_exits_2_before_anything_starts() {
    let (_base, out) = temp_out();
    let o = run_with_budget("1s", "max<200us,p99.9<<50us", &out, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("clause 2 'p99.9<<50us'"), "{t}");
    assert!(
        t.contains("max<200us,p99.9<<50us\n            ^^^^^^^^^^^"),
        "{t}"
    );
    assert!(!out.exists(), "nothing is created for bad input");
}

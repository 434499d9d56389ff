//! Scenario phases that end after a number of wakeups (`wakeups = N`, docs/loads.md), measured
//! for real, briefly (about 1.5 s of run): ground truth from every sample of the run
//! (`--samples`), not from the figures the run derived.

use crate::common::{exclusive, jitterlab, run_json, sample_records, stolen_periods, text, thread};

const SCENARIO: &str = r#"
[[phase]]
label = "quiet"
wakeups = 300

[[phase]]
label = "proc"
wakeups = 200
loads = ["proc"]

[[phase]]
label = "tail"
duration = "300ms"
"#;

/// A phase of N wakeups holds exactly N wakeups of thread 0 (CPU 0, the first of `--cpus`) due
/// in its window; CPU 1, at the same interval and so on the same due times, has the window's due
/// times less those it left unserved (bounded by its missed periods and dropped records); the phase's loads run over the whole window; the next
/// phase starts after they are reaped; the run ends `completed` with its last phase.
#[test]
fn a_phase_of_n_wakeups_has_n_wakeups_of_thread_0() {
    let _g = exclusive();
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("count.toml");
    std::fs::write(&file, SCENARIO).unwrap();
    let dir = tmp.path().join("run");
    let out = jitterlab(&[
        "run",
        "-q",
        "--cpus",
        "0,1",
        "-i",
        "1ms",
        "--distance",
        "0us",
        "--samples",
        "--scenario",
        file.to_str().unwrap(),
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let run = run_json(&dir);
    assert_eq!(run["ended"], "completed", "{run:#}");
    let reason = run["end_reason"].as_str().unwrap_or_default();
    assert!(reason.contains("last phase ('tail') ended"), "{reason}");
    let samples = sample_records(&dir);
    let interval = 1_000_000u64;
    let phases = run["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 3);
    let mut previous_loads_end = 0u64;
    for (k, (label, asked)) in [("quiet", Some(300u64)), ("proc", Some(200)), ("tail", None)]
        .into_iter()
        .enumerate()
    {
        let p = &phases[k];
        assert_eq!(p["label"], label);
        let from = p["window_start_ns"].as_u64().unwrap();
        let to = p["window_end_ns"].as_u64().unwrap();
        let (loads_from, loads_to) = (
            p["start_ns"].as_u64().unwrap(),
            p["end_ns"].as_u64().unwrap(),
        );
        // Each phase began after the one before had its loads reaped; a counted phase's loads
        // were ready before its window and reaped after it.
        assert!(previous_loads_end <= loads_from, "{p:#}");
        if asked.is_some() {
            assert!(loads_from <= from && to <= loads_to, "{p:#}");
        }
        previous_loads_end = loads_to;
        let due_in = |cpu: u32| {
            samples
                .iter()
                .filter(|s| s.cpu == cpu && (from..=to).contains(&s.expected_ns))
                .collect::<Vec<_>>()
        };
        let (cpu0, cpu1) = (due_in(0), due_in(1));
        let Some(n) = asked else {
            assert!(p.get("wakeups").is_none(), "{p:#}");
            // A timed phase after counted ones: its 300 ms, where the sequence put it.
            assert_eq!(to - from, 300_000_000, "{p:#}");
            continue;
        };
        assert_eq!(
            p["wakeups"],
            serde_json::json!({"cpu": 0, "asked": n, "counted": n}),
            "{p:#}"
        );
        // Ground truth: exactly N of thread 0's wakeups are due in the window, which begins
        // and ends on one of them.
        assert_eq!(cpu0.len() as u64, n, "phase {label}: {p:#}");
        assert_eq!(cpu0.first().unwrap().expected_ns, from);
        assert_eq!(cpu0.last().unwrap().expected_ns, to);
        // CPU 1 is due on the same grid (same start, same interval): its wakeups in the
        // window are the window's due times less those it left unserved, which its missed
        // periods and dropped records (run.json) bound.
        assert_eq!(
            (to - from) % interval,
            0,
            "the window is on thread 0's grid"
        );
        let grid = (to - from) / interval + 1;
        assert!(grid >= n, "{grid} due times in {label}");
        assert!(
            cpu1.iter()
                .all(|s| (s.expected_ns - from).is_multiple_of(interval))
        );
        // The hypervisor's steal is in that bound already: a period it took from the vCPU is
        // a due time served late (a sample) or passed (a missed period), never lost unsaid;
        // its count is shown for the reader of a failure.
        let t1 = thread(&run, 1);
        let unserved =
            t1["missed_periods"].as_u64().unwrap() + t1["dropped_records"].as_u64().unwrap();
        let count1 = cpu1.len() as u64;
        assert!(
            count1 <= grid && count1 + unserved >= grid,
            "CPU 1 in {label}: {count1} wakeups of {grid} due times, {unserved} unserved in the run (the hypervisor took up to {} periods)",
            stolen_periods(&run, 1, interval)
        );
    }
}

/// A counted scenario is a sequence: `start`, `end` and a top-level `duration` are refused,
/// naming the line; so is a count that is not a whole number above zero, or one given with a
/// duration; `noise` has no wakeups to count.
#[test]
fn counted_phases_are_refused_where_they_cannot_be_timed() {
    let _g = exclusive();
    let tmp = tempfile::tempdir().unwrap();
    for (body, needle) in [
        (
            "duration = \"5s\"\n[[phase]]\nlabel = \"a\"\nwakeups = 10\n",
            "count.toml:1: scenario: key 'duration' cannot be given",
        ),
        (
            "[[phase]]\nlabel = \"a\"\nwakeups = 10\n[[phase]]\nlabel = \"b\"\nstart = \"2s\"\nduration = \"1s\"\n",
            "count.toml:6: phase 1: key 'start' cannot be given",
        ),
        (
            "[[phase]]\nlabel = \"a\"\nwakeups = 0\n",
            "count.toml:3: phase 0 ('a'): key 'wakeups' is 0",
        ),
        (
            "[[phase]]\nlabel = \"a\"\nwakeups = 10\nduration = \"1s\"\n",
            "key 'wakeups' given with 'duration' or 'end'",
        ),
    ] {
        let file = tmp.path().join("count.toml");
        std::fs::write(&file, body).unwrap();
        let out = jitterlab(&["run", "--dry-run", "--scenario", file.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(text(&out).contains(needle), "{needle}: {}", text(&out));
    }
    let file = tmp.path().join("count.toml");
    std::fs::write(&file, "[[phase]]\nlabel = \"a\"\nwakeups = 10\n").unwrap();
    // `noise` has no --dry-run: the plan refuses the scenario before anything is measured or
    // any directory made.
    let dir = tmp.path().join("noise-run");
    let out = jitterlab(&[
        "noise",
        "-q",
        "--scenario",
        file.to_str().unwrap(),
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("a noise run has no wakeups"),
        "{}",
        text(&out)
    );
    assert!(!dir.exists(), "a refused run made {}", dir.display());
}

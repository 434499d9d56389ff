//! Scenarios: phases start and end at their offsets, each gets its own statistics, and a
//! phase's load shows in that phase only; bad scenario files exit 2 naming file, line and key.

use crate::common;

use common::*;
use jitterlab::format::events::{Event, read_events};

const SCENARIO: &str = r#"
description = "test: idle, a real-time hog on CPU 0, a gap, then /proc reads on CPU 1"
[[phase]]
label = "idle"
duration = "1s"
[[phase]]
label = "hog"
duration = "1s"
# SCHED_FIFO 99 above the measuring threads' 95, pinned to CPU 0: CPU 0's thread cannot run.
loads = ["cpu:workers=1,cpus=0,prio=99"]
# A gap without a phase: RT throttling may hold CPU 0's real-time tasks, the measuring
# thread among them, for up to 50 ms after the hog's second.
[[phase]]
label = "after"
start = "3s"
end = "4s"
loads = ["proc:cpus=1"]
"#;

struct Measured {
    run: serde_json::Value,
    events: Vec<Event>,
}

fn run_scenario() -> Measured {
    let (base, out) = temp_out();
    let file = base.path().join("s.toml");
    std::fs::write(&file, SCENARIO).unwrap();
    let o = jitterlab(&[
        "run",
        "--scenario",
        file.to_str().unwrap(),
        "--cpus",
        "0-1",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        out.join("scenario.toml").is_file(),
        "the scenario is kept with the run"
    );
    Measured {
        run: run_json(&out),
        events: read_events(&out.join("events.jsonl")).unwrap(),
    }
}

fn phase<'a>(m: &'a Measured, label: &str) -> &'a serde_json::Value {
    m.run["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["label"] == label)
        .unwrap_or_else(|| panic!("no phase {label}: {}", m.run["phases"]))
}

fn cpu(phase: &serde_json::Value, cpu: usize) -> &serde_json::Value {
    phase["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["cpu"] == cpu)
        .unwrap()
}

#[test]
fn phases_run_at_their_offsets_with_their_own_statistics() {
    let _g = exclusive();
    if !realtime_available("phases_run_at_their_offsets_with_their_own_statistics") {
        return;
    }
    if online_cpus().len() < 2 {
        eprintln!("SKIPPED phases test: needs CPUs 0 and 1");
        return;
    }
    // One retry: a VM stall of the whole machine can land in a phase the hog does not hold
    // (one of 24 ms in the after phase on CPU 0 in a full suite here: far below what the hog
    // does, holding CPU 0 for its whole 1 s phase but the throttle's gap).
    let mut m = run_scenario();
    let idle_max = |m: &Measured| cpu(phase(m, "idle"), 0)["max_ns"].as_i64().unwrap();
    let quiet_max = |m: &Measured| {
        let after0 = cpu(phase(m, "after"), 0)["max_ns"].as_i64().unwrap();
        let hog1 = cpu(phase(m, "hog"), 1)["max_ns"].as_i64().unwrap();
        idle_max(m).max(after0).max(hog1)
    };
    if quiet_max(&m) >= 20_000_000 {
        eprintln!(
            "a phase the hog does not hold was disturbed (max {} ns); one retry",
            quiet_max(&m)
        );
        m = run_scenario();
    }
    let start = m.run["start_monotonic_ns"].as_u64().unwrap();
    let planned = [("idle", 0u64, 1u64), ("hog", 1, 2), ("after", 3, 4)];
    for (i, (label, from_s, to_s)) in planned.iter().enumerate() {
        let started = m.events.iter().find_map(|e| match e {
            Event::PhaseStart {
                time_ns,
                index,
                label: l,
                ..
            } if *index == i => {
                assert_eq!(l, label);
                Some(*time_ns)
            }
            _ => None,
        });
        let ended = m.events.iter().find_map(|e| match e {
            Event::PhaseEnd { time_ns, index, .. } if *index == i => Some(*time_ns),
            _ => None,
        });
        let (started, ended) = (started.expect("phase_start"), ended.expect("phase_end"));
        for (what, at, want_s) in [("start", started, from_s), ("end", ended, to_s)] {
            let off = at as i64 - (start + want_s * 1_000_000_000) as i64;
            assert!(
                off.abs() <= 100_000_000,
                "phase {label} {what} {off} ns from its offset {want_s} s"
            );
        }
        let p = phase(&m, label);
        assert_eq!(p["start_ns"].as_u64().unwrap(), started);
        assert_eq!(p["end_ns"].as_u64().unwrap(), ended);
    }
    // Statistics per phase: the 1 s interval histogram inside each phase, 1000 wakeups due.
    for label in ["idle", "after"] {
        for c in [0, 1] {
            let t = cpu(phase(&m, label), c);
            let samples = t["samples"].as_u64().unwrap();
            // The periods the hypervisor took from the vCPU over the run are counted apart.
            let stolen = stolen_periods(&m.run, c, 1_000_000);
            assert!(
                samples <= 1001 && samples + stolen >= 900,
                "{label} cpu{c} (the hypervisor took up to {stolen} periods): {t}"
            );
            assert!(t["p99_ns"].as_u64().is_some() && t["p999_ns"].as_u64().is_some());
        }
    }
    // The hog held CPU 0 (for up to 950 ms per second under RT throttling): far beyond any VM
    // noise, and in its own phase only; CPU 1 was not held.
    let hog0 = cpu(phase(&m, "hog"), 0)["max_ns"].as_i64().unwrap();
    assert!(hog0 >= 20_000_000, "hog phase cpu0 max {hog0} ns");
    assert!(idle_max(&m) < 20_000_000, "idle cpu0 max {}", idle_max(&m));
    let after0 = cpu(phase(&m, "after"), 0)["max_ns"].as_i64().unwrap();
    assert!(
        after0 < 20_000_000,
        "after-phase cpu0 max {after0} ns: the hog outlived its phase"
    );
    let hog1 = cpu(phase(&m, "hog"), 1)["max_ns"].as_i64().unwrap();
    assert!(hog1 < 20_000_000, "hog phase cpu1 max {hog1} ns");
    // The phase's load reported its work.
    let loads = m.run["loads"].as_array().unwrap();
    assert!(
        loads
            .iter()
            .any(|l| l["spec"] == "cpu:workers=1,cpus=0,prio=99")
    );
    assert!(loads.iter().any(|l| l["spec"] == "proc:cpus=1"));
}

#[test]
fn bad_scenarios_exit_2_naming_file_line_and_key() {
    let base = tempfile::tempdir().unwrap();
    for (content, needles) in [
        (
            "[[phase]]\nlabel = \"a\"\nduration = \"1s\"\nlodas = [\"cpu\"]\n",
            vec![":4:", "lodas"],
        ),
        (
            "[[phase]]\nlabel = \"a\"\nduration = \"2s\"\n\n[[phase]]\nlabel = \"b\"\nstart = \"1s\"\nduration = \"1s\"\n",
            vec![":7:", "'start'", "overlap"],
        ),
        (
            "[[phase]]\nlabel = \"a\"\nduration = \"1s\"\nloads = [\"hackbench:groups=0\"]\n",
            vec![":4:", "'loads'", "groups=0"],
        ),
        (
            "[[phase]]\nlabel = \"a\"\nduration = \"forever\"\n",
            vec![":3:", "'duration'", "'forever'"],
        ),
    ] {
        let file = base.path().join("bad.toml");
        std::fs::write(&file, content).unwrap();
        let out = base.path().join("never");
        let o = jitterlab(&[
            "run",
            "--scenario",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{content}: {t}");
        assert!(t.contains(file.to_str().unwrap()), "names the file: {t}");
        for n in needles {
            assert!(t.contains(n), "{content}: lacks '{n}': {t}");
        }
        assert!(!out.exists());
    }
    let file = base.path().join("ok.toml");
    std::fs::write(&file, "[[phase]]\nlabel = \"a\"\nduration = \"1s\"\n").unwrap();
    let o = jitterlab(&[
        "run",
        "--scenario",
        file.to_str().unwrap(),
        "--duration",
        "5s",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--duration"), "{}", text(&o));
}

//! Loads that stop after a number of loops (FirmTimers `generate_load -l LOOPS`): a load with
//! `loops=N` ends by itself after exactly N loops per worker and says so; in a scenario its
//! phase ends when its looped loads are done, well before the phase's duration, and the phase's
//! statistics stop there; bad values exit 2 naming the parameter.

use crate::common;

use common::*;
use jitterlab::format::events::{Event, read_events};

/// `jitterlab load --json`: the records of the loads, which must all complete by themselves.
fn load_alone(spec: &str) -> serde_json::Value {
    let o = jitterlab(&["load", spec, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{spec}: {}", text(&o));
    let records: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    records[0].clone()
}

#[test]
fn a_load_with_loops_ends_after_exactly_its_loops() {
    for (spec, loops) in [
        ("memory:loops=3,size=4M", 3),
        ("memory:loops=4,workers=2,size=1M", 8),
        ("fork:loops=25,count=4", 25),
        ("io:loops=2,size=256K,bs=64K,dir=/tmp", 2),
    ] {
        let r = load_alone(spec);
        assert_eq!(r["ended"], "completed", "{spec}: {r}");
        let reason = r["end_reason"].as_str().unwrap();
        assert!(
            reason.starts_with(&format!("finished its loops ({loops} in all)")),
            "{spec}: {reason}"
        );
    }
    // The fork load reaps every child it forked before it ends.
    let r = load_alone("fork:loops=25,count=4");
    let reaped = r["throughput"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "reaped")
        .unwrap();
    assert_eq!(reaped["value"], 25.0, "{r}");
}

#[test]
fn a_phase_ends_when_its_loops_are_done() {
    if !realtime_available("a_phase_ends_when_its_loops_are_done") {
        return;
    }
    let (base, out) = temp_out();
    let file = base.path().join("loops.toml");
    std::fs::write(
        &file,
        "[[phase]]\nlabel = \"mem\"\nduration = \"4s\"\nloads = [\"memory:loops=5,size=64M\", \"cpu:workers=1\"]\n\n\
         [[phase]]\nlabel = \"idle\"\nduration = \"500ms\"\nloads = []\n",
    )
    .unwrap();
    let _g = exclusive();
    let o = jitterlab(&[
        "run",
        "--scenario",
        file.to_str().unwrap(),
        "--cpus",
        "0",
        "--log-interval",
        "100ms",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let run = run_json(&out);
    assert!(run["plan"]["samples_format"].is_null(), "no samples.bin");
    let events = read_events(&out.join("events.jsonl")).unwrap();
    let finished: Vec<(String, Option<usize>, u64, u64)> = events
        .iter()
        .filter_map(|e| match e {
            Event::LoadFinished {
                load,
                phase,
                loops,
                loops_per_worker,
                ..
            } => Some((load.clone(), *phase, *loops, *loops_per_worker)),
            _ => None,
        })
        .collect();
    assert_eq!(
        finished,
        vec![("memory:loops=5,size=64M".to_string(), Some(0), 5, 5)]
    );
    let at = |wanted: fn(&Event) -> Option<u64>| events.iter().find_map(wanted).unwrap();
    let started = at(|e| match e {
        Event::PhaseStart {
            time_ns, index: 0, ..
        } => Some(*time_ns),
        _ => None,
    });
    let ended = at(|e| match e {
        Event::PhaseEnd {
            time_ns, index: 0, ..
        } => Some(*time_ns),
        _ => None,
    });
    let finished_at = at(|e| match e {
        Event::LoadFinished { time_ns, .. } => Some(*time_ns),
        _ => None,
    });
    // Five maps of 64 MiB take a few hundred ms; the supervisor looks every 20 ms. Two seconds
    // are far below the planned 4 s, even on a VM that stalls.
    assert!(
        finished_at <= ended,
        "the phase ends after its load finished"
    );
    assert!(
        ended - started < 2_000_000_000,
        "phase 0 lasted {} ms of its planned 4 s",
        (ended - started) / 1_000_000
    );
    let phase0 = &run["phases"][0];
    assert_eq!(phase0["end_ns"].as_u64().unwrap(), ended);
    // Its statistics cover its real window (whole 100 ms log intervals inside it), not the
    // planned 4 s of 1 ms wakeups.
    let samples = phase0["threads"][0]["samples"].as_u64().unwrap();
    let real_ms = (ended - started) / 1_000_000;
    assert!(
        samples > 0 && samples <= real_ms + 100,
        "phase 0 holds {samples} samples in {real_ms} ms"
    );
    // The loads' records: the looped load completed, its companion was stopped with the phase.
    let loads = run["loads"].as_array().unwrap();
    let record = |spec: &str| loads.iter().find(|l| l["spec"] == spec).unwrap();
    assert_eq!(record("memory:loops=5,size=64M")["ended"], "completed");
    assert_eq!(record("cpu:workers=1")["ended"], "stopped");
    // The next phase still starts at its planned offset.
    assert_eq!(run["phases"][1]["label"], "idle");
    assert!(run["phases"][1]["start_ns"].as_u64().unwrap() >= started + 3_900_000_000);
}

#[test]
fn bad_loops_are_refused_naming_the_parameter() {
    for (spec, needle) in [
        ("memory:loops=0", "loops=0 is not valid"),
        ("memory:loops=-2", "loops=-2 is not valid"),
        ("fork:loops=many", "loops=many is not valid"),
        ("cpu:loops=3", "cpu has no loop to count"),
        ("proc:loops=3", "proc has no loop to count"),
    ] {
        let o = jitterlab(&["run", "--duration", "1s", "--load", spec]);
        assert_eq!(o.status.code(), Some(2), "{spec}: {}", text(&o));
        assert!(text(&o).contains(needle), "{spec}: {}", text(&o));
        let o = jitterlab(&["load", spec]);
        assert_eq!(o.status.code(), Some(2), "{spec}: {}", text(&o));
    }
}

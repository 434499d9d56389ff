//! `--on-threshold snapshot` with `--trace` against injected ground truth: the spike load holds
//! CPU 1 for 3 ms at known times; each injection's snapshot must hold the samples with their
//! split, the trace events of the window (among them the measuring thread's late sched_switch
//! at exactly the time its sample's split puts it), and the window's explanations as
//! events.jsonl has them. The VM's own stalls may add snapshots of their own: only the
//! injections' are checked.

use crate::common;

use common::*;
use jitterlab::format::actions::ActionEvent;
use jitterlab::format::events::{Event, SpikeExplanation, read_events};
use std::path::Path;

const SPIKE: &str = "spike:cpu=1,every=900ms,len=3ms,prio=99,offset=300.4ms";
const BEFORE_NS: u64 = 100_000_000;
const AFTER_NS: u64 = 50_000_000;

/// One event line of a trace file: time, cpu, common pid, the rest.
fn event_line(l: &str) -> Option<(u64, usize, i32, &str)> {
    let mut f = l.splitn(4, ' ');
    Some((
        f.next()?.parse().ok()?,
        f.next()?.parse().ok()?,
        f.next()?.parse().ok()?,
        f.next()?,
    ))
}

/// Checks one injection's snapshot; `explained` are events.jsonl's explanations.
fn check_snapshot(
    out: &Path,
    e: &ActionEvent,
    backend: &str,
    explained: &[SpikeExplanation],
) -> Result<(), String> {
    let files: Vec<&str> = e
        .detail
        .split_whitespace()
        .filter(|w| w.starts_with("snapshots/"))
        .map(|w| w.trim_end_matches(','))
        .collect();
    let [csv, trace, x] = files[..] else {
        return Err(format!("the detail names not three files: {}", e.detail));
    };
    assert!(
        csv.ends_with(".csv") && trace.ends_with(".trace"),
        "{}",
        e.detail
    );
    assert!(x.ends_with(".explanations.jsonl"), "{}", e.detail);
    let due = e.due_ns.unwrap();
    let (from, to) = (due - BEFORE_NS, due + AFTER_NS);

    // The samples, with their split: nearly all joined; the spike's own with all four parts.
    let csv = std::fs::read_to_string(out.join(csv)).unwrap();
    let mut lines = csv.lines().skip(1);
    assert_eq!(
        lines.next(),
        Some(
            "cpu,seq,due_ns,latency_ns,missed,irq_latency_ns,thread_latency_ns,wake_to_switch_ns,switch_to_user_ns"
        )
    );
    let rows: Vec<Vec<Option<i64>>> = lines
        .map(|l| l.split(',').map(|c| c.parse().ok()).collect())
        .collect();
    let joined = rows.iter().filter(|r| r[5].is_some()).count();
    if rows.len() < 100 || joined * 10 < rows.len() * 9 {
        return Err(format!(
            "{csv}: {joined} of {} samples joined with the trace",
            rows.len()
        ));
    }
    let Some(hit) = rows.iter().find(|r| r[2] == Some(due as i64)) else {
        return Err(format!("{csv}: no row of the spike due at {due}"));
    };
    let (latency, irq, thread, switch_to_user) = match (hit[3], hit[5], hit[6], hit[8]) {
        (Some(l), Some(i), Some(t), Some(s)) => (l, i, t, s),
        _ => return Err(format!("the spike's row is not fully split: {hit:?}")),
    };
    assert_eq!(irq + thread, latency, "{hit:?}");

    // The trace: the header, the CPU's line, the events in order inside the window, and the
    // measuring thread's switch-in at the time the split gives.
    let text = std::fs::read_to_string(out.join(trace)).unwrap();
    let mut head = text.lines().take_while(|l| l.starts_with('#'));
    let first = head.next().unwrap();
    let want = format!(
        "# jitterlab snapshot trace 1: back end {backend}; spike on CPU 1 at due time {due} ns, latency {latency} ns; window {from}..{to} ns (CLOCK_MONOTONIC, the run's clock); CPUs 1"
    );
    assert_eq!(first, want);
    let events: Vec<(u64, usize, i32, &str)> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| event_line(l).unwrap_or_else(|| panic!("{trace}: bad line {l}")))
        .collect();
    let cpu_line = head.find(|l| l.starts_with("# cpu 1: ")).unwrap();
    assert!(
        cpu_line.starts_with(&format!("# cpu 1: {} events; ", events.len())),
        "{cpu_line}"
    );
    assert!(
        events.windows(2).all(|w| w[0].0 <= w[1].0),
        "{trace}: out of order"
    );
    assert!(
        events
            .iter()
            .all(|e| e.1 == 1 && (from..=to).contains(&e.0)),
        "{trace}: an event outside the window or of another CPU"
    );
    let switch_ns = (due as i64 + latency - switch_to_user) as u64;
    let switched_in = events.iter().any(|&(ts, _, _, rest)| {
        ts == switch_ns
            && rest.contains(" sched_switch ")
            && rest.contains("next_comm=\"jl-measure-1\"")
    });
    if !switched_in {
        return Err(format!(
            "{trace}: no sched_switch to jl-measure-1 at {switch_ns} ns ({cpu_line})"
        ));
    }
    if !text.contains("\"jl-spike-1\"") {
        return Err(format!("{trace}: the spike thread is not in the window"));
    }

    // The explanations: those of events.jsonl due in the window, the spike's among them.
    let mine: Vec<SpikeExplanation> = std::fs::read_to_string(out.join(x))
        .unwrap()
        .lines()
        .map(|l| match serde_json::from_str(l).unwrap() {
            Event::SpikeExplained(x) => x,
            other => panic!("{x}: {other:?}"),
        })
        .collect();
    let theirs: Vec<&SpikeExplanation> = explained
        .iter()
        .filter(|x| (from..=to).contains(&x.due_ns))
        .collect();
    assert_eq!(mine.iter().collect::<Vec<_>>(), theirs, "{x}");
    if !mine.iter().any(|x| x.due_ns == due) {
        return Err(format!("{x}: the spike's explanation is missing"));
    }
    Ok(())
}

#[test]
fn a_traced_snapshot_keeps_the_window_trace_split_and_explanations() {
    let name = "a_traced_snapshot_keeps_the_window_trace_split_and_explanations";
    if !tracing_available(name) || !two_cpus_online(name) {
        return;
    }
    let _lock = exclusive();
    with_one_retry("traced snapshots of injected spikes", || {
        let (_base, out) = temp_out();
        let o = jitterlab(&[
            "run",
            "--duration",
            "2.5s",
            "--cpus",
            "1",
            "--interval",
            "1ms",
            "--quiet",
            "--trace",
            "--load",
            SPIKE,
            "--on-threshold",
            "snapshot:before=100ms,after=50ms",
            "--deadline",
            "1.5ms",
            "--action-gap",
            "10ms",
            "--out",
            out.to_str().unwrap(),
        ]);
        if !o.status.success() {
            return Err(format!("the run failed: {}", text(&o)));
        }
        let injections = spike_injections(&out, 1);
        if injections.len() != 3 {
            return Err(format!("3 injections expected, got {}", injections.len()));
        }
        let run = run_json(&out);
        let backend = run["trace"]["backend"].as_str().unwrap().to_string();
        let explained = spike_explanations(&out);
        let snapshots: Vec<ActionEvent> = read_events(&out.join("events.jsonl"))
            .unwrap()
            .into_iter()
            .filter_map(|e| match e {
                Event::Action(a) if a.due_ns.is_some() => Some(a),
                _ => None,
            })
            .collect();
        for (k, i) in injections.iter().enumerate() {
            let Some(e) = snapshots.iter().find(|e| {
                let due = e.due_ns.unwrap();
                due + 1_000_000 >= i.start_ns && due <= i.end_ns
            }) else {
                return Err(format!("injection {k}: no snapshot ({snapshots:?})"));
            };
            assert_eq!(e.outcome, "ok", "{e:?}");
            check_snapshot(&out, e, &backend, &explained)
                .map_err(|m| format!("injection {k}: {m}"))?;
        }
        Ok(())
    });
}

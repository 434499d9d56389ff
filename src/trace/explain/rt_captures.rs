//! The explanation on traces captured on Debian's 6.1 PREEMPT_RT kernel under qemu (the lab's
//! check 1c, ci/lab/checks/trace-methods.guest.sh): CPU 0's raw ring-buffer pages, the
//! kernel's format files, and the run's events.jsonl (tests/data/trace/rt-ktimers-*/). A
//! FIFO 50 spike of 20 ms below a FIFO 95 measuring thread woken by timerfd or a POSIX timer:
//! on PREEMPT_RT those timers expire in ktimers/0 (FIFO 1), which the spike starves. Every
//! such wakeup is a thread-side delay with the spike as the culprit and ktimers/0 named; the
//! run on the lab before this was understood said "IRQ latency 20 ms: the timer interrupt came
//! late; no trace event: hypervisor, SMI or interrupts off".

use super::{LateSample, Names, explain};
use crate::trace::decode::{Decoder, Kind, TraceEvent};
use crate::trace::split::CpuTimeline;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

fn capture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/trace")
        .join(name)
}

/// The late samples the run explained (due, wake), CPU 0, from its events.jsonl.
fn late_samples(dir: &Path) -> Vec<(u64, u64)> {
    let text = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == "spike_explained" && v["cpu"] == 0)
        .map(|v| {
            let due = v["due_ns"].as_u64().unwrap();
            (due, (due as i64 + v["latency_ns"].as_i64().unwrap()) as u64)
        })
        .collect()
}

/// One late sample re-explained: its due time, the verdict, the contributors' names and
/// durations.
type Explained = (u64, String, Vec<(String, u64)>);

/// Replays the capture `name`: every late sample of the run re-explained from the raw trace.
fn replay(name: &str) -> Vec<Explained> {
    let dir = capture(name);
    let pages = std::fs::read(dir.join("pages.bin")).unwrap();
    let (_, events) = crate::trace::read_capture(&dir, &pages).unwrap();
    let names = Names {
        vectors: Vec::new(),
        softirqs: Decoder::load(&dir).unwrap().softirq_names,
    };
    let late = late_samples(&dir);
    assert!(!late.is_empty(), "{name}: the run explained no late wakeup");
    // The measuring thread: the one that armed the timers due at the late samples' due times.
    let tid = events
        .iter()
        .find_map(|e: &TraceEvent| match e.kind {
            Kind::HrtimerStart { softexpires, .. }
                if late.iter().any(|&(due, _)| due as i64 == softexpires) =>
            {
                Some(e.common_pid)
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("{name}: no timer armed for a late sample's due time"));
    let mut timeline = CpuTimeline::default();
    let mut out = Vec::new();
    let mut events = events.into_iter().peekable();
    for (due, wake) in late {
        // Everything up to a little after the wakeup, as the joiner has it when it explains.
        while let Some(e) = events.next_if(|e| e.ts <= wake + 1_000_000) {
            timeline.push(e, &[tid]);
        }
        let split = timeline.split(tid, due, wake, 0);
        let s = LateSample {
            cpu: 0,
            tid,
            due_ns: due,
            wake_ns: wake,
            split,
        };
        let x = explain(&s, &timeline, &HashMap::new(), &names);
        let who = x.contributors.iter();
        let who = who.map(|c| (c.name.clone(), c.duration_ns)).collect();
        out.push((due, x.verdict, who));
    }
    out
}

fn assert_ktimers_delays(name: &str) {
    let explained = replay(name);
    // The wakeups the spike delayed (the others are the emulator's own stalls).
    let by_spike: Vec<_> = explained
        .iter()
        .filter(|(_, _, who)| {
            who.iter()
                .any(|(n, ns)| n == "jl-spike-0" && *ns > 5_000_000)
        })
        .collect();
    assert!(
        by_spike.len() >= 3,
        "{name}: at least 3 wakeups delayed by the spike: {explained:#?}"
    );
    for (due, verdict, who) in by_spike {
        // The spike, or jitterlab's own FIFO 1 threads when they held ktimers/0 off longer.
        assert_ne!(
            who[0].0, "no trace event",
            "{name}: the wakeup due at {due}: {who:?}"
        );
        assert!(
            verdict.starts_with("thread latency")
                && verdict.contains("ktimers/0")
                && !verdict.contains("no trace event"),
            "{name}: the wakeup due at {due}: {verdict}"
        );
    }
}

#[test]
fn a_timerfd_starved_in_ktimers_is_a_thread_delay_by_the_spike() {
    assert_ktimers_delays("rt-ktimers-timerfd");
}

#[test]
fn a_posix_timer_starved_in_ktimers_is_a_thread_delay_by_the_spike() {
    assert_ktimers_delays("rt-ktimers-posix-timer");
}

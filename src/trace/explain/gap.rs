//! Noise gaps (`jitterlab noise --trace`): what took the CPU from a loop that never sleeps
//! between two of its clock reads.
//!
//! The gap is replayed like a late wakeup's window (from the read before the gap to the read
//! after it): the IRQ handlers, interrupt vectors, softirqs and other tasks in it are its
//! traced causes, NMIs come from `nmi:nmi_handler`'s length. What is left is time with no
//! trace event: the entry into and the exit from what interrupted the loop (before the first
//! tracepoint, after the last), and stalls nothing in the kernel sees (SMIs, firmware, the
//! hypervisor). The **attribution** of a gap (which sums to its length exactly) gives that
//! untraced time to the traced causes, in proportion to their time, up to as much again as
//! their traced time (entry and exit cost, a few us in a VM); the rest, and the whole of a gap
//! without any event, is `no_event` ("no trace event: hardware, firmware or hypervisor
//! stall"). The explanation in events.jsonl keeps the traced durations as they are.

use super::contributors::{self, Names, Policies};
use super::replay;
use super::{LateSample, verdict};
use crate::format::events::{Contributor, SpikeExplanation};
use crate::trace::decode::Kind;
use crate::trace::split::CpuTimeline;
use crate::units::format_ns;

/// The kind and name of a gap's untraced remainder.
pub(crate) const NO_EVENT_KIND: &str = "no_event";
pub(crate) const NO_EVENT_NAME: &str = "no trace event";

/// One gap of a noise thread: from the read before it to the read after it, CLOCK_MONOTONIC ns.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Gap {
    pub cpu: usize,
    pub tid: i32,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// A gap explained: the explanation for events.jsonl, and the attribution of its whole length
/// to causes (longest first; the durations sum to the gap).
#[derive(Debug, Clone)]
pub(crate) struct GapExplanation {
    pub explanation: SpikeExplanation,
    pub(crate) attribution: Vec<Contributor>,
}

/// Explains `g` from `timeline`.
pub(crate) fn explain_gap(
    g: &Gap,
    timeline: &CpuTimeline,
    policies: &Policies,
    names: &Names,
) -> GapExplanation {
    let as_window = LateSample {
        cpu: g.cpu,
        tid: g.tid,
        due_ns: g.start_ns,
        wake_ns: g.end_ns,
        split: None,
    };
    let window = replay::replay(&as_window, timeline);
    let mut traced = contributors::between(&window, g.start_ns, g.end_ns, policies, names);
    let length = g.end_ns.saturating_sub(g.start_ns);
    let in_tasks_and_irqs: u64 = traced.iter().map(|c| c.duration_ns).sum();
    // NMIs show no entry: their time lies inside what the replay gave to the holder they
    // interrupted, mostly the loop itself (the untraced time).
    let nmi_ns =
        nmis_between(timeline, g.start_ns, g.end_ns).min(length.saturating_sub(in_tasks_and_irqs));
    if nmi_ns > 0 {
        traced.push(Contributor {
            kind: "nmi".into(),
            name: "NMI".into(),
            pid: None,
            policy: None,
            prio: None,
            duration_ns: nmi_ns,
            stack: None,
        });
        traced.sort_by(|a, b| b.duration_ns.cmp(&a.duration_ns).then(a.name.cmp(&b.name)));
    }
    let attribution = attribute(&traced, length);
    let verdict = gap_verdict(length, &traced, &attribution, window.lost);
    GapExplanation {
        explanation: SpikeExplanation {
            time_ns: g.end_ns,
            cpu: g.cpu,
            due_ns: g.start_ns,
            latency_ns: length as i64,
            irq_latency_ns: None,
            thread_latency_ns: None,
            verdict,
            contributors: traced,
        },
        attribution,
    }
}

/// The sum of the NMIs that ended between `from` and `to`, clipped to the window.
fn nmis_between(timeline: &CpuTimeline, from: u64, to: u64) -> u64 {
    let h = &timeline.history;
    let first = h.partition_point(|e| e.ts <= from);
    h.iter()
        .skip(first)
        .take_while(|e| e.ts <= to)
        .map(|e| match e.kind {
            Kind::Nmi { delta_ns } => delta_ns.min(e.ts - from),
            _ => 0,
        })
        .sum()
}

/// The gap's `length` to causes: the traced ones (`traced`, longest first) scaled up by the
/// untraced time, at most to twice their time; the rest to [`NO_EVENT_KIND`]. Sums to `length`.
pub(crate) fn attribute(traced: &[Contributor], length: u64) -> Vec<Contributor> {
    let sum: u64 = traced
        .iter()
        .map(|c| c.duration_ns)
        .sum::<u64>()
        .min(length);
    let folded = (length - sum).min(sum);
    let mut out: Vec<Contributor> = Vec::with_capacity(traced.len() + 1);
    let mut given = 0u64;
    for c in traced {
        // Each cause's share of the folded time, by its traced time (u128: no overflow).
        let share = (folded as u128 * c.duration_ns as u128 / sum.max(1) as u128) as u64;
        let mut c = c.clone();
        c.duration_ns += share;
        given += c.duration_ns;
        out.push(c);
    }
    // Rounding leaves a few ns of the folded time: they go to the longest cause.
    if let Some(first) = out.first_mut() {
        let rounding = (sum + folded).saturating_sub(given);
        first.duration_ns += rounding;
        given += rounding;
    }
    if length > given {
        out.push(Contributor {
            kind: NO_EVENT_KIND.into(),
            name: NO_EVENT_NAME.into(),
            pid: None,
            policy: None,
            prio: None,
            duration_ns: length - given,
            stack: None,
        });
    }
    out.sort_by(|a, b| b.duration_ns.cmp(&a.duration_ns).then(a.name.cmp(&b.name)));
    out
}

/// "gap 1.47 ms: CPU held by jl-spinner (pid 900, FIFO 99) for 1.46 ms", or "gap 12.0 us: no
/// trace event: hardware, firmware or hypervisor stall".
fn gap_verdict(
    length: u64,
    traced: &[Contributor],
    attribution: &[Contributor],
    lost: bool,
) -> String {
    let mut v = format!("gap {}", format_ns(length));
    match traced.first() {
        Some(top) => v.push_str(&format!(": {}", verdict::held(top))),
        None => v.push_str(": no trace event: hardware, firmware or hypervisor stall"),
    }
    if !traced.is_empty()
        && let Some(rest) = attribution.iter().find(|c| c.kind == NO_EVENT_KIND)
    {
        v.push_str(&format!(
            "; no trace event for {}",
            format_ns(rest.duration_ns)
        ));
    }
    if lost {
        v.push_str(" [trace incomplete: the kernel lost events in this window]");
    }
    v
}

#[cfg(test)]
mod tests {
    use super::super::tests::push;
    use super::*;
    use crate::trace::decode::task;
    use std::collections::HashMap;

    fn gap(start_ns: u64, end_ns: u64) -> Gap {
        Gap {
            cpu: 1,
            tid: 77,
            start_ns,
            end_ns,
        }
    }

    fn kinds(a: &[Contributor]) -> Vec<(&str, &str, u64)> {
        a.iter()
            .map(|c| (c.kind.as_str(), c.name.as_str(), c.duration_ns))
            .collect()
    }

    /// A FIFO 99 spinner takes the CPU for 2 ms inside a 2.01 ms gap: the gap is the
    /// spinner's, by name and pid, with the 10 us of switching folded into it.
    #[test]
    fn a_task_that_took_the_cpu_owns_the_gap() {
        let me = task(77, 120, "jl-noise-1");
        let spinner = task(900, 0, "spinner");
        let mut t = CpuTimeline::default();
        push(
            &mut t,
            77,
            10,
            Kind::Switch {
                prev: task(1, 120, "x"),
                next: me,
            },
        );
        push(
            &mut t,
            77,
            1_005_000,
            Kind::Switch {
                prev: me,
                next: spinner,
            },
        );
        push(
            &mut t,
            900,
            3_005_000,
            Kind::Switch {
                prev: spinner,
                next: me,
            },
        );
        let policies = HashMap::from([(
            (900, 0),
            crate::trace::reader::TaskPolicy {
                policy: "FIFO",
                prio: 99,
                kernel_prio: 0,
            },
        )]);
        let x = explain_gap(&gap(1_000_000, 3_010_000), &t, &policies, &Names::default());
        assert_eq!(kinds(&x.attribution), [("task", "spinner", 2_010_000)]);
        assert_eq!(x.attribution[0].pid, Some(900));
        assert_eq!(
            x.explanation.verdict,
            "gap 2.01 ms: CPU held by spinner (pid 900, FIFO 99) for 2.00 ms"
        );
        assert_eq!(x.explanation.contributors[0].duration_ns, 2_000_000);
    }

    /// A 4 us gap with a 1 us timer interrupt and a 0.5 us softirq: the 2.5 us untraced go
    /// to them up to their 1.5 us; 1 us is left as no event. A gap with nothing traced is
    /// all no event; an NMI is named.
    #[test]
    fn untraced_time_is_folded_then_left_as_no_event() {
        let me = task(77, 120, "jl-noise-1");
        let mut t = CpuTimeline::default();
        push(
            &mut t,
            77,
            10,
            Kind::Switch {
                prev: task(1, 120, "x"),
                next: me,
            },
        );
        push(&mut t, 77, 1_000_500, Kind::VectorEntry { vector: 0 });
        push(&mut t, 77, 1_001_500, Kind::VectorExit { vector: 0 });
        push(&mut t, 77, 1_001_500, Kind::SoftirqEntry { vec: 1 });
        push(&mut t, 77, 1_002_000, Kind::SoftirqExit { vec: 1 });
        push(&mut t, 77, 2_003_000, Kind::Nmi { delta_ns: 2_000 });
        let names = Names {
            vectors: vec!["local_timer".into()],
            softirqs: vec![(1, "TIMER".into())],
        };
        let none = HashMap::new();
        let x = explain_gap(&gap(1_000_000, 1_004_000), &t, &none, &names);
        assert_eq!(
            kinds(&x.attribution),
            [
                ("irq", "local_timer", 2_000),
                ("softirq", "TIMER", 1_000),
                (NO_EVENT_KIND, NO_EVENT_NAME, 1_000)
            ]
        );
        assert_eq!(
            x.explanation.verdict,
            "gap 4.0 us: CPU in IRQ handler local_timer for 1.0 us; no trace event for 1.0 us"
        );
        let x = explain_gap(&gap(1_500_000, 1_520_000), &t, &none, &names);
        assert_eq!(
            kinds(&x.attribution),
            [(NO_EVENT_KIND, NO_EVENT_NAME, 20_000)]
        );
        assert_eq!(
            x.explanation.verdict,
            "gap 20.0 us: no trace event: hardware, firmware or hypervisor stall"
        );
        let x = explain_gap(&gap(2_000_000, 2_003_100), &t, &none, &names);
        assert_eq!(
            kinds(&x.attribution),
            [("nmi", "NMI", 3_100)],
            "2 us NMI, 1.1 us of entry and exit folded in"
        );
    }

    #[test]
    fn attribution_sums_to_the_gap() {
        let c = |name: &str, d: u64| Contributor {
            kind: "irq".into(),
            name: name.into(),
            pid: None,
            policy: None,
            prio: None,
            duration_ns: d,
            stack: None,
        };
        for (traced, length) in [
            (vec![c("a", 3), c("b", 3), c("c", 3)], 10u64),
            (vec![c("a", 7)], 7),
            (vec![], 5),
            (vec![c("a", 1_000), c("b", 1)], 1_999),
        ] {
            let a = attribute(&traced, length);
            assert_eq!(a.iter().map(|c| c.duration_ns).sum::<u64>(), length);
        }
    }
}

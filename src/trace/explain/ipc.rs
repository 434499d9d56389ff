//! Explaining a late sample of an IPC wake method: which link of the chain was late (see
//! [`crate::trace::chain`]) and what held the CPU during it.
//!
//! The three links, and the CPU whose trace is replayed for each:
//!
//! - `sender late` (due time → the sender running), the sender's CPU: its timer came late, or
//!   something held its CPU. Not in the sample's latency, which starts at the sender's stamp,
//!   but the whole chain was late by it;
//! - `wake late` (the sender running → its sched_waking of the receiver), the sender's CPU:
//!   the sender was preempted before its wake call, or the mechanism's kernel path was slow;
//! - `receiver kept off the CPU` (sched_waking → the receiver switched in), the receiver's CPU.
//!
//! The verdict blames the longest link; its contributors are those of that link's window on
//! its CPU. The verdict ends with every link's length, so the whole chain can be read from it.

use super::replay::replay;
use super::verdict::{held, signed_ns};
use super::{LateSample, Names, Policies, contributors};
use crate::format::events::{Contributor, SpikeExplanation};
use crate::trace::chain::IpcChain;
use crate::trace::kallsyms::Symbols;
use crate::trace::split::CpuTimeline;
use crate::units::format_ns;

/// One IPC sample to explain.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IpcSample {
    /// The receiver (the measuring thread) and its CPU.
    pub cpu: usize,
    pub tid: i32,
    pub sender_cpu: usize,
    pub(crate) sender_tid: i32,
    pub due_ns: u64,
    /// The sample's latency: the receiver's clock read minus the sender's stamp.
    pub latency_ns: i64,
    pub chain: Option<IpcChain>,
}

/// A link of the chain, and what the trace shows of it.
struct Link {
    what: &'static str,
    from: u64,
    to: u64,
    cpu: usize,
    /// The thread whose own time in the window is not a contributor.
    own: i32,
}

/// Explains `s` from the sender's and the receiver's CPU timelines (the same one when both
/// threads share a CPU).
pub(crate) fn explain_ipc(
    s: &IpcSample,
    receiver_cpu: &CpuTimeline,
    sender_cpu: &CpuTimeline,
    policies: &Policies,
    names: &Names,
) -> SpikeExplanation {
    let latency = signed_ns(s.latency_ns);
    let mut explanation = SpikeExplanation {
        time_ns: (s.due_ns as i64 + s.latency_ns).max(0) as u64,
        cpu: s.cpu,
        due_ns: s.due_ns,
        latency_ns: s.latency_ns,
        irq_latency_ns: None,
        thread_latency_ns: None,
        verdict: format!("receiver latency {latency}: the sender's timer is not in the trace"),
        contributors: Vec::new(),
    };
    let Some(chain) = s.chain else {
        return explanation;
    };
    explanation.irq_latency_ns = Some(chain.sender_irq_latency_ns);
    explanation.time_ns = (chain.stamp_ts() as i64 + s.latency_ns).max(0) as u64;
    let links = chain_links(s, &chain);
    let longest = links
        .iter()
        .max_by_key(|l| l.to as i64 - l.from as i64)
        .expect("the sender link is always there");
    let timeline = if longest.cpu == s.cpu {
        receiver_cpu
    } else {
        sender_cpu
    };
    let link = LateSample {
        cpu: longest.cpu,
        tid: longest.own,
        due_ns: longest.from,
        wake_ns: longest.to,
        split: None,
    };
    let window = replay(&link, timeline);
    let mut found = contributors::between(&window, longest.from, longest.to, policies, names);
    super::stacks::attach(&mut found, &link, timeline, Symbols::shared);
    let length = longest.to as i64 - longest.from as i64;
    let cause = held_or_not(found.first(), length);
    explanation.verdict = format!(
        "{}; {}",
        link_verdict(s, &chain, longest, &cause),
        chain_summary(s, &chain, longest)
    );
    if window.lost {
        explanation
            .verdict
            .push_str(" [trace incomplete: the kernel lost events in this window]");
    }
    explanation.contributors = found;
    explanation
}

/// The links the trace shows: the sender's always, the wake call's once the receiver's
/// sched_waking is found, the receiver's once its switch in is too.
fn chain_links(s: &IpcSample, chain: &IpcChain) -> Vec<Link> {
    let stamp = chain.stamp_ts();
    // A due time handed over late: what held the sender's CPU counts from the arming.
    let mut links = vec![Link {
        what: "sender late",
        from: s.due_ns + chain.handed_late_ns,
        to: stamp,
        cpu: s.sender_cpu,
        own: s.sender_tid,
    }];
    if let Some(k) = chain.waking_ts {
        links.push(Link {
            what: "wake late",
            from: stamp,
            to: k,
            cpu: s.sender_cpu,
            own: s.sender_tid,
        });
    }
    if let (Some(k), Some(r)) = (chain.waking_ts, chain.receiver_running_ts) {
        links.push(Link {
            what: "receiver kept off the CPU",
            from: k,
            to: r,
            cpu: s.cpu,
            own: s.tid,
        });
    }
    links
}

/// The verdict's head: the longest link, how long it was and `cause`, what held its CPU.
fn link_verdict(s: &IpcSample, chain: &IpcChain, longest: &Link, cause: &str) -> String {
    let length = longest.to as i64 - longest.from as i64;
    match longest.what {
        "sender late" => format!(
            "sender late {} (its timer's IRQ latency {}{}; sender on CPU {}): {cause}",
            signed_ns(chain.sender_late_ns()),
            signed_ns(chain.sender_irq_latency_ns),
            match chain.handed_late_ns {
                0 => String::new(),
                h => format!(
                    "; its due time handed over {} late, by a previous wakeup that ran past it",
                    format_ns(h)
                ),
            },
            s.sender_cpu
        ),
        "wake late" => format!(
            "wake late: {} from the sender's stamp to its sched_waking of the receiver (sender on CPU {}): {cause}",
            signed_ns(length),
            s.sender_cpu
        ),
        _ => format!(
            "receiver kept off the CPU {} after its sched_waking: {cause}",
            signed_ns(length)
        ),
    }
}

/// Every link's length, so the whole chain can be read from the verdict, and which links the
/// trace lacks.
fn chain_summary(s: &IpcSample, chain: &IpcChain, longest: &Link) -> String {
    let part = |v: Option<i64>| v.map_or("-".into(), signed_ns);
    // The head names a late handover when it is about the sender; otherwise the chain does.
    let handed = match chain.handed_late_ns {
        h if h > 0 && longest.what != "sender late" => {
            format!(" (due time handed over {} late)", format_ns(h))
        }
        _ => String::new(),
    };
    let mut summary = format!(
        "chain: sender late {}{handed}, wake call {}, kept off {}, receiver latency {}",
        signed_ns(chain.sender_late_ns()),
        part(chain.wake_call_ns()),
        part(chain.kept_off_ns()),
        signed_ns(s.latency_ns),
    );
    if chain.waking_ts.is_none() {
        summary.push_str(
            " (no sched_waking of the receiver by the sender before its next sleep: the receiver had not blocked yet, or the event was lost)",
        );
    } else if chain.receiver_running_ts.is_none() {
        summary.push_str(" (the receiver's switch in is not in the trace)");
    }
    summary
}

/// "CPU held by ..." when the top contributor took at least a tenth of the link, else says
/// that nothing else held the CPU.
fn held_or_not(top: Option<&Contributor>, length_ns: i64) -> String {
    match top {
        Some(c) if c.duration_ns as i64 * 10 >= length_ns => held(c),
        _ => "no other work held the CPU".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::chain::tests::{Scene, scene, two_cpus};
    use crate::trace::chain::{follow_wake, take_sender_cycle};
    use crate::trace::decode::{Kind, task};
    use std::collections::HashMap;
    use std::sync::Arc;

    fn sample(chain: Option<IpcChain>, latency_ns: i64) -> IpcSample {
        IpcSample {
            cpu: 0,
            tid: 7,
            sender_cpu: 1,
            sender_tid: 8,
            due_ns: 1_000_000,
            latency_ns,
            chain,
        }
    }

    /// A spinner on the receiver's CPU from before the wake to 300 us after it; the sender's
    /// due time handed over `handed_late_ns` late.
    fn receiver_kept_off(handed_late_ns: u64) -> SpikeExplanation {
        receiver_kept_off_with_stack(handed_late_ns, &[])
    }

    /// As [`receiver_kept_off`], with the spinner's kernel stack `ips` (none when empty) taken
    /// at the receiver's switch-in, as the BPF back end writes it.
    fn receiver_kept_off_with_stack(handed_late_ns: u64, ips: &[u64]) -> SpikeExplanation {
        let (mut cpu0, mut cpu1) = two_cpus(task(900, 0, "jl-spike-0"));
        let mut chain = take_sender_cycle(&mut cpu1, 8, 1_000_000, 306_000).unwrap();
        follow_wake(&mut chain, &cpu1, &cpu0, 8, 7);
        chain.handed_late_ns = handed_late_ns;
        if !ips.is_empty() {
            let switch_in = chain
                .receiver_running_ts
                .expect("the scene's receiver runs");
            let stack = Kind::KernelStack {
                ips: Arc::from(ips.to_vec()),
            };
            crate::trace::explain::tests::push(&mut cpu0, 900, switch_in, stack);
        }
        explain_ipc(
            &sample(Some(chain), 306_000),
            &cpu0,
            &cpu1,
            &HashMap::new(),
            &Names::default(),
        )
    }

    #[test]
    fn names_what_kept_the_receiver_off_its_cpu() {
        let x = receiver_kept_off(0);
        assert_eq!(
            x.verdict,
            "receiver kept off the CPU 300.0 us after its sched_waking: CPU held by jl-spike-0 (pid 900, RT 99) for 300.0 us; chain: sender late 3.0 us, wake call 4.0 us, kept off 300.0 us, receiver latency 306.0 us"
        );
        assert_eq!(x.contributors[0].pid, Some(900));
        assert_eq!(x.irq_latency_ns, Some(2_000));
        // The stamp at the sender running (3 us late), plus the latency.
        assert_eq!(x.time_ns, 1_309_000);
    }

    /// A due time handed over late is named in the chain when the verdict is about another
    /// link: the sender was not asleep until its due time.
    #[test]
    fn names_a_late_handover_in_the_chain() {
        let x = receiver_kept_off(1_000);
        assert!(
            x.verdict.starts_with("receiver kept off the CPU 300.0 us")
                && x.verdict.contains(
                    "chain: sender late 3.0 us (due time handed over 1.0 us late), wake call 4.0 us"
                ),
            "{}",
            x.verdict
        );
    }

    /// The sender's CPU held from before the due time to 1.5 ms: the sender is blamed, on its
    /// CPU, and the receiver's small latency is reported as such.
    #[test]
    fn blames_a_late_sender_not_the_receiver() {
        let (cpu0, mut cpu1) = scene(Scene {
            held_by_1: task(901, 0, "jl-spike-1"),
            expire_ns: 1_001_000,
            sender_back_ns: 1_500_000,
            wake_ns: 1_504_000,
            held_by_0: task(0, 120, "swapper/0"),
            home_ns: 1_510_000,
        });
        let mut chain = take_sender_cycle(&mut cpu1, 8, 1_000_000, 12_000).unwrap();
        follow_wake(&mut chain, &cpu1, &cpu0, 8, 7);
        let x = explain_ipc(
            &sample(Some(chain), 12_000),
            &cpu0,
            &cpu1,
            &HashMap::new(),
            &Names::default(),
        );
        assert!(
            x.verdict.starts_with(
                "sender late 500.0 us (its timer's IRQ latency 1.0 us; sender on CPU 1): CPU held by jl-spike-1 (pid 901, RT 99) for 500.0 us; chain: sender late 500.0 us, wake call 4.0 us, kept off 6.0 us, receiver latency 12.0 us"
            ),
            "{}",
            x.verdict
        );
        assert_eq!(x.contributors[0].name, "jl-spike-1");
    }

    /// With the BPF back end, the stack the kernel took at the receiver's late switch-in goes
    /// to the task that kept it off: the explanation's longest link is on the receiver's CPU.
    #[test]
    fn the_culprits_stack_goes_to_the_longest_links_contributor() {
        let x = receiver_kept_off_with_stack(0, &[0xffff_ffff_8120_0010, 0xffff_ffff_8130_0044]);
        assert_eq!(x.contributors[0].pid, Some(900));
        let frames = x.contributors[0].stack.as_ref().map(|s| s.frames.len());
        assert_eq!(frames, Some(2), "{:?}", x.contributors);
    }

    #[test]
    fn says_when_the_chain_is_not_in_the_trace() {
        let x = explain_ipc(
            &sample(None, 400_000),
            &CpuTimeline::default(),
            &CpuTimeline::default(),
            &HashMap::new(),
            &Names::default(),
        );
        assert_eq!(
            x.verdict,
            "receiver latency 400.0 us: the sender's timer is not in the trace"
        );
        assert!(x.contributors.is_empty());
    }
}

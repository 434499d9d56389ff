//! The culprit's kernel stack in an explanation: the BPF back end captures the kernel stack of
//! the task that gives the CPU to a measuring thread whose wakeup is already later than the
//! explanation threshold (`Kind::KernelStack`, at that sched_switch, kept in
//! [`CpuTimeline::stacks`]). Here the stack of a late sample's window is matched to its switch
//! and attached, its frames named from /proc/kallsyms, to the contributor that is that task.
//!
//! The stack belongs to the sample when it was taken at the switch that gave the sample's
//! thread its CPU within the window (due time to wakeup): a switch in the history with the
//! stack's time and `prev` the stack's task (the kernel stamps both records at the one
//! sched_switch; [`SAME_SWITCH_NS`] allows for a second clock read). Of several (the thread was
//! switched in, preempted, switched in again), the latest with a stack: the last is the one the
//! thread ran from. A stack without its switch (a lost window), an empty one, or one of a task
//! with no time in the window is attached to nothing.

use super::LateSample;
use crate::format::events::{Contributor, KernelStack};
use crate::trace::decode::{Kind, TraceEvent};
use crate::trace::kallsyms::Symbols;
use crate::trace::split::CpuTimeline;

/// How far apart the stack's time and its switch's may be.
const SAME_SWITCH_NS: u64 = 1_000;

/// Attaches the culprit's stack of `s`'s window, if the trace has one, to its contributor.
/// `symbols` is asked for only when there is a stack to name.
pub(super) fn attach<'a>(
    contributors: &mut [Contributor],
    s: &LateSample,
    timeline: &CpuTimeline,
    symbols: impl FnOnce() -> &'a Symbols,
) {
    let Some((pid, ips)) = culprit_stack(s, timeline) else {
        return;
    };
    let Some(c) = contributors
        .iter_mut()
        .find(|c| c.kind == "task" && c.pid == Some(pid))
    else {
        return;
    };
    c.stack = Some(symbolize(ips, symbols()));
}

/// The frames named, innermost first, with the reason when no symbol could name them. The
/// innermost frames of the BPF program that took the stack and of the tracepoint's call into
/// it are left out: they are jitterlab's, not the culprit's.
pub(crate) fn symbolize(ips: &[u64], symbols: &Symbols) -> KernelStack {
    let ours = |f: &String| {
        ["bpf_prog_", "bpf_trace_run", "__bpf_trace_"]
            .iter()
            .any(|p| f.starts_with(p))
    };
    KernelStack {
        frames: ips
            .iter()
            .map(|&ip| symbols.name(ip))
            .skip_while(ours)
            .collect(),
        note: symbols
            .unavailable()
            .map(|why| format!("kernel symbols unavailable, addresses kept: {why}")),
    }
}

/// The pid and stack of the task that gave the CPU to `s`'s thread at the last switch of its
/// window that has a stack.
fn culprit_stack<'t>(s: &LateSample, timeline: &'t CpuTimeline) -> Option<(i32, &'t [u64])> {
    let in_window = |ts: u64| ts >= s.due_ns && ts <= s.wake_ns;
    let switches_in = timeline.history.iter().rev().filter_map(|e| match e.kind {
        Kind::Switch { prev, next } if next.pid == s.tid && in_window(e.ts) => Some((e.ts, prev)),
        _ => None,
    });
    for (ts, prev) in switches_in {
        let found = timeline.stacks.iter().rev().find_map(|st: &TraceEvent| {
            let same_time = st.ts.abs_diff(ts) <= SAME_SWITCH_NS;
            match &st.kind {
                Kind::KernelStack { ips }
                    if same_time && st.common_pid == prev.pid && !ips.is_empty() =>
                {
                    Some(&ips[..])
                }
                _ => None,
            }
        });
        if let Some(ips) = found {
            return Some((prev.pid, ips));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::decode::task;
    use crate::trace::explain::tests::push;
    use crate::trace::explain::{Names, explain};
    use std::collections::HashMap;
    use std::sync::Arc;

    const KALLSYMS: &str = "\
ffffffff81000000 T _stext
ffffffff81100000 T __schedule
ffffffff81200000 t spin_loop
ffffffff81300000 T do_syscall_64
";

    fn stack_kind(ips: &[u64]) -> Kind {
        Kind::KernelStack {
            ips: Arc::from(ips.to_vec()),
        }
    }

    /// The spike load holds the CPU from before the due time (1 ms) until 2.47 ms, and gives
    /// it to the measuring thread there; its stack at that switch arrives before the window
    /// (stacks are written straight to the ring), beside a stack of another sample and one
    /// of another task.
    fn timeline(with_switch_in: bool) -> CpuTimeline {
        let me = task(77, 4, "jl-measure-0");
        let spike = task(900, 0, "jl-spike-0");
        let mut t = CpuTimeline::default();
        push(
            &mut t,
            900,
            2_470_000,
            stack_kind(&[0xffff_ffff_8120_0010, 0xffff_ffff_8130_0044]),
        );
        push(&mut t, 900, 400, stack_kind(&[0xffff_ffff_8110_0000]));
        push(&mut t, 901, 2_470_000, stack_kind(&[0xffff_ffff_8110_0000]));
        push(
            &mut t,
            77,
            100,
            Kind::Switch {
                prev: me,
                next: spike,
            },
        );
        if with_switch_in {
            push(
                &mut t,
                900,
                2_470_000,
                Kind::Switch {
                    prev: spike,
                    next: me,
                },
            );
        }
        t
    }

    fn late() -> LateSample {
        LateSample {
            cpu: 0,
            tid: 77,
            due_ns: 1_000_000,
            wake_ns: 2_475_000,
            split: None,
        }
    }

    #[test]
    fn the_stack_at_the_switch_in_goes_to_the_task_that_gave_the_cpu() {
        let t = timeline(true);
        let x = explain(&late(), &t, &HashMap::new(), &Names::default());
        assert_eq!(x.contributors[0].pid, Some(900));
        let mut contributors = x.contributors.clone();
        contributors[0].stack = None;
        let symbols = Symbols::parse(KALLSYMS);
        attach(&mut contributors, &late(), &t, || &symbols);
        assert_eq!(
            contributors[0].stack,
            Some(KernelStack {
                frames: vec!["spin_loop+0x10".into(), "do_syscall_64+0x44".into()],
                note: None,
            })
        );
        // Through `explain`, named from this machine's table: the same two frames.
        assert_eq!(x.contributors[0].stack.as_ref().unwrap().frames.len(), 2);
    }

    #[test]
    fn no_stack_without_its_switch_or_outside_the_window() {
        let t = timeline(false);
        let x = explain(&late(), &t, &HashMap::new(), &Names::default());
        assert_eq!(x.contributors[0].pid, Some(900));
        assert_eq!(x.contributors[0].stack, None);
        // The window ends before the switch: not this sample's.
        let t = timeline(true);
        let mut early = late();
        early.wake_ns = 2_000_000;
        let mut contributors = x.contributors.clone();
        attach(&mut contributors, &early, &t, || {
            panic!("no stack to name: the table is not read")
        });
        assert!(contributors.iter().all(|c| c.stack.is_none()));
    }

    #[test]
    fn hidden_symbols_keep_addresses_with_the_reason() {
        let hidden = Symbols::parse("0000000000000000 T _stext\n0000000000000000 T schedule\n");
        let s = symbolize(&[0xffff_ffff_8120_0010], &hidden);
        assert_eq!(s.frames, ["0xffffffff81200010"]);
        assert!(s.note.unwrap().contains("kptr_restrict"));
    }
}

//! The culprits' kernel stacks of the listed explanations (`--trace`, BPF back end): under the
//! spikes table, one collapsed `<details>` per explanation with a stack, naming the sample and
//! the task, its frames innermost first.

use crate::format::events::SpikeExplanation;
use crate::report::svg::escape;
use crate::units::{format_elapsed, format_ns_signed};
use std::fmt::Write;

/// The stacks of `spikes` (in the order listed), if any has one; `start_ns` is the run's start
/// (CLOCK_MONOTONIC), for the sample's time into the run; `run_ns` its length, when run.json
/// says (a culprit held the CPU no longer: `report::stack_rank::damage`).
pub(super) fn section(
    h: &mut String,
    start_ns: u64,
    run_ns: Option<u64>,
    spikes: &[&SpikeExplanation],
) {
    let with_stack: Vec<_> = spikes
        .iter()
        .filter_map(|s| s.culprit_stack().map(|(c, st)| (s, c, st)))
        .collect();
    if with_stack.is_empty() {
        return;
    }
    h.push_str(
        "<h4>Kernel stacks of the culprits</h4><p class=\"note\">The kernel stack of the task \
         that gave the CPU to the late thread, taken at that context switch, innermost frame \
         first.</p>",
    );
    // The functions behind these spikes, most stacks first; damaged stacks left out, said.
    let ranking = crate::report::stack_rank::rank(spikes.iter().copied(), run_ns);
    if let Some(line) = crate::report::stack_rank::line(&ranking, 12) {
        let _ = write!(h, "<p class=\"stack-rank\">The {}.</p>", escape(&line));
    }
    if let Some(warning) = crate::report::stack_rank::damaged_warning(&ranking, run_ns) {
        let _ = write!(h, "<p class=\"note\">Warning: {}.</p>", escape(&warning));
    }
    for (s, c, st) in with_stack {
        let _ = write!(
            h,
            "<details class=\"stack\"><summary>CPU {} at {}, {}: {}{}, {} frames</summary>",
            s.cpu,
            format_elapsed(s.due_ns.saturating_sub(start_ns)),
            format_ns_signed(s.latency_ns),
            escape(&c.name),
            c.pid.map_or(String::new(), |p| format!(" (pid {p})")),
            st.frames.len()
        );
        if let Some(note) = &st.note {
            let _ = write!(h, "<p class=\"note\">{}</p>", escape(note));
        }
        h.push_str("<ol class=\"stack\">");
        for f in &st.frames {
            let _ = write!(h, "<li><code>{}</code></li>", escape(f));
        }
        h.push_str("</ol></details>");
    }
    h.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::events::{Contributor, KernelStack};

    fn spike(stack: Option<KernelStack>) -> SpikeExplanation {
        SpikeExplanation {
            time_ns: 3_002_400_000,
            cpu: 1,
            due_ns: 3_000_000_000,
            latency_ns: 2_400_000,
            irq_latency_ns: None,
            thread_latency_ns: None,
            verdict: String::new(),
            contributors: vec![Contributor {
                kind: "task".into(),
                name: "a<b".into(),
                pid: Some(900),
                policy: None,
                prio: None,
                duration_ns: 2_000_000,
                stack,
            }],
        }
    }

    #[test]
    fn lists_each_stack_collapsed_with_its_frames_escaped() {
        let mut h = String::new();
        section(&mut h, 1_000_000_000, None, &[&spike(None)]);
        assert_eq!(h, "", "no stack, no section");
        let with = spike(Some(KernelStack {
            frames: vec!["spin_loop+0x10".into(), "0xffffffff81000000".into()],
            note: Some("kernel symbols unavailable & hidden".into()),
        }));
        section(&mut h, 1_000_000_000, None, &[&spike(None), &with]);
        let details = h.split("</p><details").nth(1).unwrap();
        assert_eq!(
            details,
            format!(
                " class=\"stack\"><summary>CPU 1 at {}, {}: a&lt;b (pid 900), 2 frames</summary>\
                 <p class=\"note\">kernel symbols unavailable &amp; hidden</p><ol class=\"stack\">\
                 <li><code>spin_loop+0x10</code></li><li><code>0xffffffff81000000</code></li>\
                 </ol></details>\n",
                format_elapsed(2_000_000_000),
                format_ns_signed(2_400_000)
            )
        );
    }
}

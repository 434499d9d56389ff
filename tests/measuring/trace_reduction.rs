//! The BPF back end's in-kernel reduction (bpf/trace.bpf.c, docs/tracing.md "In-kernel
//! reduction") on the real kernel: what it keeps of a wakeup must let user space join every
//! sample with its timer, as the tracefs back end's full trace does, and split it into parts
//! that are never negative.

use crate::common;

use common::*;

/// A wakeup followed by a timer that was already due when its thread armed it. With
/// `clock-nanosleep` (absolute) a wakeup late by nearly a whole number of periods leaves the
/// next due time a few microseconds ahead; the thread arms its timer after that, the interrupt
/// comes as the arming ends and wakes the thread where it runs: it never gives up its CPU
/// between the two wakeups. The reduction decided a wakeup only at a switch-out, so the second
/// expiry took the place of the undecided first, and when the first timer's arming had gone
/// with a stage reduced away its sample had no timer in the trace ("no split"; lab checks 1f
/// and 8: 17 of 1151 and 45-58 of 1500 wakeups; 465 of 74 512 in 3 s at 40 us here, where
/// tracefs joined them all).
///
/// At 40 us this VM's 10-40 us latencies make such wakeups often (2 000 in 3 s), without the
/// events lost that 20 us costs both back ends. At most 3 samples with the defect's mark, and
/// no more than a quarter of the scene, may be left unjoined (below); the run must have had
/// such wakeups, been reduced and lost no event (a loss leaves samples unjoined of itself).
#[test]
fn a_wakeup_followed_by_an_already_due_timer_keeps_its_timer_in_the_reduced_trace() {
    let test = "reduced BPF trace, next timer already due";
    if !tracing_available(test) || !bpf_available(test) {
        return;
    }
    let cpu = online_cpus().last().copied().unwrap().to_string();
    let _g = exclusive();
    with_one_retry(test, || {
        let (_dir, out) = temp_out();
        let o = jitterlab(&[
            "run",
            "--wake",
            "clock-nanosleep",
            "--interval",
            "40us",
            "--duration",
            "3s",
            "--cpus",
            &cpu,
            "--samples",
            "--trace",
            "--trace-backend",
            "bpf",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ]);
        if !o.status.success() {
            return Err(format!("the run failed: {}", text(&o)));
        }
        let run = run_json(&out);
        let trace = &run["trace"];
        if trace["backend"] != "bpf" || trace["reduced"] != true {
            return Err(format!("not a reduced BPF trace: {trace}"));
        }
        if trace["events_lost"] != 0 {
            return Err(format!("events lost: {}", trace["events_lost"]));
        }
        let samples = sample_records(&out);
        let wake =
            |s: &jitterlab::format::samplelog::SampleRecord| s.expected_ns as i64 + s.latency_ns;
        // The next due time within 10 us of the wakeup: the thread's own work before arming
        // (recording the sample) takes about that here, so many of these arm a timer already due.
        let close = samples
            .windows(2)
            .filter(|w| (w[1].expected_ns as i64) < wake(&w[0]) + 10_000)
            .count();
        // At least 5: on a quiet host such wakeups are rare (11-13 in 2 s in a full suite here,
        // which refused the scene); before its fix the defect marked most of them.
        if close < 5 {
            return Err(format!(
                "only {close} of {} wakeups had their next due time within 10 us: the scene did not happen",
                samples.len()
            ));
        }
        // The defect's mark: an unjoined sample between two joined ones whose next due time
        // came within 10 us of its wakeup (before the fix, 330 of the 392 lone unjoined
        // samples of a 3 s run here; after it, none in three runs). Runs of unjoined samples
        // are the kernel's, not jitterlab's: wakeups from CPU 1's idle on this VM, for which
        // the BPF programs are not run at all (docs/tracing.md, "Raw BPF records"), so they
        // are counted in the message, not judged.
        let mut marked = Vec::new();
        for (i, w) in samples.windows(3).enumerate() {
            let lone = w[1].irq_latency_ns.is_none()
                && w[0].irq_latency_ns.is_some()
                && w[2].irq_latency_ns.is_some();
            let gap = w[2].expected_ns as i64 - wake(&w[1]);
            if lone && gap < 10_000 {
                marked.push(format!(
                    "sample {} (latency {} ns, next due {gap} ns after its wakeup)",
                    i + 1,
                    w[1].latency_ns
                ));
            }
        }
        let th = &trace["threads"][0];
        // A duration cannot be negative: the switch-to-user of a thread woken while it ran
        // was taken from a later switch to it (-6.5 ms and -128 ms in two of three 3 s runs
        // here before the fix; its unit test: split/tests.rs).
        let switch_to_user_min = th["switch_to_user"]["min_ns"].as_i64().unwrap_or(0);
        if switch_to_user_min < 0 {
            return Err(format!(
                "a negative switch-to-user: {switch_to_user_min} ns ({} samples with one)",
                th["switch_to_user"]["samples"]
            ));
        }
        // A few are this VM's: it drops some scheduler events without counting them as lost
        // (a `sched_switch` never recorded), which leaves a sample unjoined of itself; 1-3 such
        // samples, each about a period late, in 6 of 12 runs of a day with the host's steal at
        // 5-15 %, in the same suites where the tracefs tests passed. The defect marked most of
        // the scene's wakeups (330 of 392): more than 3, or a quarter of the scene, fails.
        if marked.len() > 3 || 4 * marked.len() > close {
            return Err(format!(
                "{} samples without their timer where the next timer was already due ({} unjoined in all, {close} wakeups with the next due time close): {:?}",
                marked.len(),
                th["samples_unmatched"],
                &marked[..marked.len().min(5)]
            ));
        }
        Ok(())
    });
}

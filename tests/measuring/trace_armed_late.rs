//! A sleep armed after its own expiry had passed, under a spike above the measuring thread
//! (lab check 1f): the spike preempts the thread after its clock read and before it arms its
//! next timer, whose expiry time has passed by the time the thread arms it; the interrupt
//! comes at once. The spike's time lies before the arming, when no interrupt was pending, so
//! it is the spike's, named as such; before the fix it was put in the IRQ part ("IRQ latency
//! 1.55 ms: the timer interrupt came late; no trace event for 1.54 ms"), the spike not among
//! the contributors, on both back ends: the join is theirs in common (src/trace/split.rs).
//!
//! In the lab (RT 6.1 under qemu) it was `select` (the call reads its clock for its end time,
//! then arms: the spike preempted it in between). This host's kernel preempts no task inside
//! the kernel (PREEMPT_DYNAMIC none), so the scene is made here with `clock-nanosleep`
//! (absolute: the due time is the thread's own), the spike landing while the thread is in
//! user space between its clock read and its call.

use crate::common;

use common::*;

/// Injections in the run (3.6 s, one every 10 ms; its first 9.515 ms in).
const INJECTIONS: usize = 360;
/// Of them, how many a stall of this VM may spoil (the timer interrupt itself late during the
/// spike, which a task cannot cause: an IRQ part of 200 us or more, the spike still shown; or
/// a wakeup later than the spike's 2 ms and 2 ms more, which it cannot make alone).
const MAY_BE_DISTURBED: usize = 6;
/// Of them, how many may have the CPU said idle or held by a task that is not real-time (the
/// spike's switch to it not recorded: one per attempt at most was seen). Kept apart and small:
/// an armed-late path that put the spike's time anywhere but the spike would show so too.
const MAY_LACK_THE_SPIKE: usize = 2;

/// `clock-nanosleep` every 500 us on the last CPU, and the spike load (FIFO 99) on it: 2 ms
/// at a time, every 10.0001 ms, so that each injection is due 100 ns later after a due time
/// than the one before: from 15 us to 51 us after it, across where the thread is between its
/// clock read and its next arming (the spike's own wakeup included: 18-22 us after the due
/// time on a calm day; 31-45 us on a slow one, when the VM's wakeups took 25-40 us and the
/// old sweep of 10-40 us left 2 of 12 test runs with the scene made in neither attempt). The
/// window is a few hundred nanoseconds of user space (this kernel preempts no task in the
/// kernel): the steps stay at 100 ns. Every injection must be found, and blamed on the spike,
/// named first and for about what it ran of its wakeup; those that preempted the thread
/// before its arming are said as a sleep armed late (before the fix, 7 of 600 injections
/// every 5 ms were instead "IRQ latency ... no trace event", the spike not named: a failure
/// of the check above, whether or not any was said as armed late).
/// Returns how many injections were said as a sleep armed late (0: the scene did not happen).
fn armed_late_scene(backend: &str) -> Result<usize, String> {
    let cpu = *online_cpus().last().unwrap();
    let cpu_text = cpu.to_string();
    let (_dir, out) = temp_out();
    let spike = format!("spike:cpu={cpu},every=10.0001ms,len=2ms,prio=99,offset=9.515ms");
    let o = jitterlab(&[
        "run",
        "--wake",
        "clock-nanosleep",
        "--interval",
        "500us",
        "--duration",
        "3.6s",
        "--cpus",
        &cpu_text,
        "--samples",
        "--trace",
        "--trace-backend",
        backend,
        "--quiet",
        "--load",
        &spike,
        "--out",
        out.to_str().unwrap(),
    ]);
    if !o.status.success() {
        return Err(format!("the run failed: {}", text(&o)));
    }
    let run = run_json(&out);
    if run["trace"]["backend"] != backend {
        return Err(format!(
            "traced by {}, not {backend}",
            run["trace"]["backend"]
        ));
    }
    if run["trace"]["events_lost"] != 0 {
        return Err(format!("events lost: {}", run["trace"]["events_lost"]));
    }
    let injections = spike_injections(&out, cpu);
    if injections.len() + 2 < INJECTIONS {
        return Err(format!(
            "{} injections logged, expected about {INJECTIONS}",
            injections.len()
        ));
    }
    let explanations = spike_explanations(&out);
    let name = format!("jl-spike-{cpu}");
    let (mut armed_late, mut disturbed, mut bad) = (0, Vec::new(), Vec::new());
    let mut spike_unseen = Vec::new();
    for (k, inj) in injections.iter().enumerate() {
        // The wakeup the end of the injection released: due before its end, woken after it.
        let Some(x) = explanations.iter().find(|x| {
            x.cpu == cpu
                && x.due_ns <= inj.end_ns
                && x.due_ns as i64 + x.latency_ns + 300_000 >= inj.end_ns as i64
        }) else {
            bad.push(format!(
                "injection {k}: no late wakeup around its end was explained"
            ));
            continue;
        };
        // What the spike ran of that wakeup: from the later of its start and the due time.
        let ran = inj.end_ns as i64 - inj.start_ns.max(x.due_ns) as i64;
        let top = x.contributors.iter().find(|c| c.kind == "task");
        let named = top.is_some_and(|c| {
            c.name == name
                && c.policy.as_deref() == Some("FIFO")
                && c.prio == Some(99)
                && (c.duration_ns as i64 - ran).abs() <= ran / 5 + 100_000
        }) && x.verdict.contains(&name);
        if x.verdict.contains("armed its timer") {
            armed_late += 1;
        }
        if named {
            continue;
        }
        let why = format!(
            "injection {k} (started {} us before the due time {}): {} (the spike ran {ran} ns of it; top task {top:?})",
            (x.due_ns as i64 - inj.start_ns as i64) / 1000,
            x.due_ns,
            x.verdict
        );
        // The timer interrupt late by a stall of this VM while the spike spun (a task cannot
        // hold an interrupt off): the stall's time is no one's, the rest still the spike's.
        // The defect's mark differs: the spike not among the contributors at all.
        let spike_shown = x.contributors.iter().any(|c| c.name == name);
        // The CPU said idle, or held by a task that is not real-time, for most of the wakeup:
        // neither can hold a CPU a FIFO 99 spinner runs on, so the trace lacks the spike's
        // switch to it (this VM never records some sched_switch events; on 2026-12-02, 1 of
        // 359 injections in about one attempt in four, on both back ends: "CPU idle (exit from
        // idle) for 1.43 ms", "CPU held by tokio-rt-worker (OTHER -10) for 1.50 ms"), or the
        // kernel's fair server lent the CPU to that task: not the spike's time either way.
        // The defect's mark is not this: the spike's time in the IRQ part, no task named.
        let held_by_other = x
            .contributors
            .iter()
            .max_by_key(|c| c.duration_ns)
            .is_some_and(|c| {
                c.kind == "idle_exit"
                    || (c.kind == "task"
                        && c.policy
                            .as_deref()
                            .is_some_and(|p| !matches!(p, "FIFO" | "RR" | "DEADLINE" | "RT")))
            });
        if (x.irq_latency_ns.is_some_and(|i| i >= 200_000) && spike_shown)
            || x.latency_ns > 4_000_000
        {
            disturbed.push(why);
        } else if held_by_other {
            spike_unseen.push(why);
        } else {
            bad.push(why);
        }
    }
    if !bad.is_empty() {
        return Err(format!(
            "{} of {} injections not blamed on {name}: {:?}",
            bad.len(),
            injections.len(),
            &bad[..bad.len().min(4)]
        ));
    }
    if disturbed.len() > MAY_BE_DISTURBED {
        return Err(format!(
            "{} injections disturbed (at most {MAY_BE_DISTURBED} may be): {:?}",
            disturbed.len(),
            &disturbed[..disturbed.len().min(4)]
        ));
    }
    if spike_unseen.len() > MAY_LACK_THE_SPIKE {
        return Err(format!(
            "{} injections with the CPU said idle or held by a task that is not real-time (at most {MAY_LACK_THE_SPIKE} may be): {:?}",
            spike_unseen.len(),
            &spike_unseen[..spike_unseen.len().min(4)]
        ));
    }
    if !disturbed.is_empty() || !spike_unseen.is_empty() {
        eprintln!(
            "armed after its expiry ({backend}): counted apart: {} disturbed, {} with the spike unseen: {:?}",
            disturbed.len(),
            spike_unseen.len(),
            disturbed
                .iter()
                .chain(&spike_unseen)
                .take(2)
                .collect::<Vec<_>>()
        );
    }
    Ok(armed_late)
}

/// The scene on `backend`, retried once when it failed or was not made. Every injection is
/// checked in each attempt, made or not: the defect this guards puts a spike in the window
/// outside the contributors, which fails the check whenever it happens. When the window was
/// hit in neither attempt (a few hundred nanoseconds wide, where the VM's own latency puts it
/// from one minute to the next: 1 invocation of 6 in a slow hour), the test passes saying so.
fn armed_late_test(test: &str, backend: &str) {
    let mut missed = 0;
    with_one_retry(test, || match armed_late_scene(backend)? {
        0 if missed == 0 => {
            missed += 1;
            Err("no injection preempted the thread before its arming (none said as a sleep armed late): the scene did not happen".into())
        }
        0 => {
            eprintln!(
                "{test}: the scene was not made in either attempt (no injection preempted the thread between its clock read and its arming); every injection was blamed on the spike, the armed-late path was not exercised"
            );
            Ok(())
        }
        _ => Ok(()),
    });
}

#[test]
fn a_spike_before_the_arming_of_an_expired_timer_is_named_bpf() {
    let test = "armed after its expiry (bpf)";
    if !tracing_available(test) || !bpf_available(test) {
        return;
    }
    let _g = exclusive();
    armed_late_test(test, "bpf");
}

#[test]
fn a_spike_before_the_arming_of_an_expired_timer_is_named_tracefs() {
    let test = "armed after its expiry (tracefs)";
    if !tracing_available(test) {
        return;
    }
    let _g = exclusive();
    armed_late_test(test, "tracefs");
}

//! The one-line verdict of a spike explanation: which side was late (the timer interrupt or
//! the thread after it), and what held the CPU during that side. Its own module because the
//! wording is what users read and what tests and docs quote.

use super::LateSample;
use super::replay::Window;
use crate::format::events::Contributor;
use crate::units::format_ns;

/// The verdict for `s`: `whole` holds the contributors of the whole window, `contributors`
/// gives those of a part of it.
pub(super) fn verdict(
    s: &LateSample,
    window: &Window,
    whole: &[Contributor],
    contributors: impl Fn(&[(u64, u64)]) -> Vec<Contributor>,
) -> String {
    let latency = s.wake_ns as i64 - s.due_ns as i64;
    let mut verdict = match s.split {
        // A relative sleep armed late (split.rs, take_late_armed_cycle): most of the latency
        // passed before the timer expired, which neither part holds: what held the thread
        // before its arming, then the timer's own wait.
        Some(sp)
            if sp
                .armed_late
                .is_some_and(|a| a.late_ns >= sp.irq_latency_ns.max(sp.thread_latency_ns)) =>
        {
            let late = sp.armed_late.map_or(0, |a| a.late_ns);
            let what = match sp.armed_late.is_some_and(|a| a.expiry_passed) {
                true => "after its expiry time had passed: its interrupt came at once",
                false => "its expiry that far after the due time",
            };
            format!(
                "latency {}: the thread armed its timer {} late ({what}; IRQ latency {}, thread latency {} after it): {}",
                signed_ns(latency),
                signed_ns(late),
                signed_ns(sp.irq_latency_ns),
                signed_ns(sp.thread_latency_ns),
                armed_late_parts(s, &contributors).unwrap_or_default()
            )
        }
        Some(sp) if sp.thread_latency_ns >= sp.irq_latency_ns => {
            // The thread part: from the expiry (or the softirq thread's wakeup for it) to the
            // wakeup, and from the due time to the exit of the timer softirq the softirq
            // thread was inside then (split.rs, `held_in_softirq`).
            let parts = match sp.held_in_softirq {
                Some(_) => vec![
                    (s.due_ns, super::replay::irq_start(s).min(sp.expiry_ts)),
                    (sp.expiry_ts, s.wake_ns),
                ],
                None => vec![(sp.expiry_ts, s.wake_ns)],
            };
            let part = contributors(&parts);
            let t = sp.thread_latency_ns;
            // A timer moved to another CPU: the thread part up to the thread's wakeup passed
            // there (the softirq thread's wait for that CPU, the rest of the expiry), where
            // only timer expiries and wakeups are traced. Said as what it is, never put on
            // this CPU's holders (which the replay leaves out: replay::elsewhere_until).
            let remote = super::replay::elsewhere_until(s)
                .zip(sp.expired_on)
                .map(|(until, cpu)| (until.saturating_sub(sp.expiry_ts), cpu))
                .filter(|&(wait, _)| wait as i64 * 10 >= t);
            // The softirq thread the timer expires in, raised above its own priority while it
            // ran (priority inheritance: a waiter on a lock it held): it ran the expiry on the
            // wakeup's behalf, so what held it off is named first, and it is said as boosted.
            let boosted = boosted_expiry_thread(sp.expired_in, &part, window, &parts);
            let top = part
                .iter()
                .find(|c| boosted.is_none_or(|(b, _)| c.pid != b.pid))
                .filter(|top| top.duration_ns as i64 * 10 >= t);
            let mut v = match (top, remote) {
                (top, Some((wait, cpu))) if top.is_none_or(|top| top.duration_ns <= wait) => {
                    format!(
                        "thread latency {}: {} of it on CPU {cpu} before the thread was woken from there, where what held the CPU is not traced (only its timer expiries and wakeups are)",
                        signed_ns(t),
                        format_ns(wait)
                    )
                }
                (Some(top), _) => format!("thread latency {}: {}", signed_ns(t), held(top)),
                _ if boosted.is_some() => format!("thread latency {}", signed_ns(t)),
                _ => format!(
                    "thread latency {}: no other work held the CPU (wake-to-switch {}, switch-to-user {})",
                    signed_ns(t),
                    sp.wake_to_switch_ns.map_or("-".into(), signed_ns),
                    sp.switch_to_user_ns.map_or("-".into(), signed_ns)
                ),
            };
            if let (Some((b, boosted_ns)), Some(x)) = (boosted, sp.expired_in) {
                let measuring = window
                    .tasks
                    .get(&s.tid)
                    .filter(|m| (0..100).contains(&m.prio))
                    .map(|m| 99 - m.prio);
                let on_behalf = match measuring {
                    Some(p) if b.prio == Some(p) => {
                        "the measuring thread's priority: it waited on a lock the softirq thread held"
                    }
                    _ => "a waiter on a lock it held",
                };
                v.push_str(&format!(
                    "{} {} (pid {}){} {} of it boosted from RT {} to RT {} by priority inheritance ({on_behalf})",
                    if top.is_some() {
                        ", ahead of the softirq thread"
                    } else {
                        ": the softirq thread"
                    },
                    b.name,
                    b.pid.unwrap_or(-1),
                    if top.is_some() { ", which ran" } else { " ran" },
                    format_ns(boosted_ns),
                    99 - x.thread.prio,
                    b.prio.unwrap_or_default(),
                ));
            }
            if let Some(held) = held_in_softirq(s) {
                v.push_str(&held);
            }
            if let Some(x) = sp.expired_in {
                v.push_str(&format!(
                    "; the timer expires in the softirq thread {} (pid {}), woken {} before it ran it",
                    x.thread.comm.as_string(),
                    x.thread.pid,
                    format_ns(x.expiry_ts.saturating_sub(x.woken_ts))
                ));
            }
            if let Some(cpu) = sp.expired_on {
                v.push_str(&format!("; {}", moved(cpu, s.cpu)));
            }
            v
        }
        Some(sp) if sp.expired_on.is_some() => {
            let cpu = sp.expired_on.unwrap_or_default();
            format!(
                "IRQ latency {}: the timer expired late on CPU {cpu}; {} (that CPU is traced for its timer expiries only)",
                signed_ns(sp.irq_latency_ns),
                moved(cpu, s.cpu)
            )
        }
        Some(sp) => {
            let part = contributors(&[(super::replay::irq_start(s), sp.expiry_ts)]);
            let i = sp.irq_latency_ns;
            let mut v = format!(
                "IRQ latency {}: the timer interrupt came late",
                signed_ns(i)
            );
            if let Some(held) = held_in_softirq(s) {
                v.push_str(&held);
            }
            let top = part.first();
            if let Some(top) = top {
                v.push_str(&format!("; {}", held(top)));
            }
            let silence_named = top.is_some_and(|t| t.kind == super::gap::NO_EVENT_KIND);
            if !silence_named && window.widest_gap_ns as i64 * 2 >= i {
                v.push_str(&format!(
                    "; no trace event for {} (interrupts off, or the CPU stalled by the hypervisor)",
                    format_ns(window.widest_gap_ns)
                ));
            }
            v
        }
        None => {
            let mut v = format!(
                "latency {} (the timer's events are not in the trace)",
                signed_ns(latency)
            );
            if let Some(top) = whole.first() {
                v.push_str(&format!(": {}", held(top)));
            }
            v
        }
    };
    if let Some(a) = s.split.and_then(|sp| sp.armed_late)
        && !verdict.contains("armed its timer")
    {
        verdict.push_str(&format!(
            "; the thread armed its timer {} late, in neither part: {}",
            signed_ns(a.late_ns),
            armed_late_parts(s, &contributors).unwrap_or_default()
        ));
    }
    if window.lost {
        verdict.push_str(" [trace incomplete: the kernel lost events in this window]");
    }
    verdict
}

/// The two stretches of a sleep armed late (split.rs, `ArmedLate`), which neither part holds:
/// from the due time to the arming, with what held the CPU then, and from the arming to the
/// soft expiry, the timer's own wait (replay.rs, `timer_wait`: no holder). Together they are
/// the lateness of the arming, so that with the IRQ and thread parts every nanosecond of the
/// latency is said once. "19.91 ms to its arming, CPU held by jl-spike-1 (pid 900, FIFO 99)
/// for 19.90 ms; then 380.0 us the timer's own wait until the late expiry it was armed for".
fn armed_late_parts(
    s: &LateSample,
    contributors: &impl Fn(&[(u64, u64)]) -> Vec<Contributor>,
) -> Option<String> {
    let a = s.split?.armed_late?;
    let expiry = a.expiry_ts(s.due_ns);
    let wait_from = a.wait_from_ts(s.due_ns);
    let wait = format!(
        "{} the timer's own wait until the late expiry it was armed for",
        format_ns(expiry - wait_from)
    );
    if a.armed_ts <= s.due_ns {
        // Armed before the due time: what held the thread between its clock read and its
        // arming lies before the due time, outside the latency.
        return Some(format!(
            "armed {} before the due time, what held it lies before that; then {wait}",
            format_ns(s.due_ns - a.armed_ts)
        ));
    }
    let before = contributors(&[(s.due_ns, wait_from)]);
    let by = match before.first() {
        Some(top) => format!(", {}", held(top)),
        None => ", no other work held the CPU (the thread's own time)".into(),
    };
    // Armed after its expiry time had passed: it expired at once, no wait of its own follows.
    if a.expiry_passed {
        return Some(format!(
            "{} to its arming{by}",
            format_ns(wait_from - s.due_ns)
        ));
    }
    Some(format!(
        "{} to its arming{by}; then {wait}",
        format_ns(wait_from - s.due_ns)
    ))
}

/// The softirq thread `x` the timer expired in, among the thread part's holders `part`, when
/// it ran there above the real-time priority it was woken with: raised by priority
/// inheritance while a higher-priority task waited on a lock it held (on PREEMPT_RT the
/// measuring thread blocks on the timer's expiry lock, or its wait queue's, which
/// `ktimers/N` holds). Its time then is the wakeup's own path, not a culprit's. With it, how
/// long it ran boosted within `parts` (the thread part's stretches): a contributor sums a task's
/// time at every priority, and the softirq thread may have run some of it at its own.
fn boosted_expiry_thread<'c>(
    x: Option<crate::trace::split::SoftirqThread>,
    part: &'c [Contributor],
    window: &Window,
    parts: &[(u64, u64)],
) -> Option<(&'c Contributor, u64)> {
    let x = x?;
    // Woken as a real-time task (ktimers/N: FIFO 1); ksoftirqd/N is SCHED_OTHER.
    let woken_prio = (0..100)
        .contains(&x.thread.prio)
        .then(|| 99 - x.thread.prio)?;
    let c = part.iter().find(|c| {
        c.kind == "task"
            && c.pid == Some(x.thread.pid)
            && matches!(c.policy.as_deref(), Some("RT" | "FIFO" | "RR"))
            && c.prio.is_some_and(|p| p > woken_prio)
    })?;
    let boosted_ns: u64 = parts
        .iter()
        .flat_map(|&(from, to)| {
            window.segments.iter().filter_map(move |g| {
                let boosted = g.holder == super::replay::Holder::Task(x.thread.pid)
                    && g.prio.is_some_and(|p| p < x.thread.prio);
                (boosted && g.to.min(to) > g.from.max(from))
                    .then(|| g.to.min(to) - g.from.max(from))
            })
        })
        .sum();
    (boosted_ns > 0).then_some((c, boosted_ns))
}

/// "; the timer came due while the softirq thread ... was inside the timer softirq ...", for
/// a soft timer that came due while the softirq thread it expires in was already running the
/// timer softirq (split.rs, `held_in_softirq`): that run does not expire it, and no interrupt
/// is programmed for it until the run ends, so the time up to its exit is thread latency.
fn held_in_softirq(s: &LateSample) -> Option<String> {
    let sp = s.split?;
    let (h, x) = sp.held_in_softirq.zip(sp.expired_in)?;
    Some(format!(
        "; the timer came due while the softirq thread {} (pid {}) was inside the timer softirq (entered {} before the due time, which expires only the timers due when it began), and no interrupt is programmed for a soft timer until that softirq ends: it ended {} after the due time (in the thread part), the IRQ part is from there",
        x.thread.comm.as_string(),
        x.thread.pid,
        format_ns(s.due_ns.saturating_sub(h.entered_ts)),
        format_ns(h.exited_ts.saturating_sub(s.due_ns)),
    ))
}

/// Why a timer expired on another CPU (split.rs, `take_moved_cycle`), and the fix.
fn moved(on: usize, from: usize) -> String {
    format!(
        "the kernel's timer migration moved the timer from CPU {from} (nohz_full) to CPU {on}, which woke the thread from there (`sysctl kernel.timer_migration=0` keeps it on CPU {from})"
    )
}

/// [`format_ns`] for a signed duration.
pub(super) fn signed_ns(ns: i64) -> String {
    if ns < 0 {
        format!("-{}", format_ns(ns.unsigned_abs()))
    } else {
        format_ns(ns as u64)
    }
}

/// "CPU held by jl-spike-0 (pid 1234, FIFO 99) for 1.47 ms", and the like.
pub(super) fn held(c: &Contributor) -> String {
    let d = format_ns(c.duration_ns);
    match c.kind.as_str() {
        "task" => {
            let policy = match (&c.policy, c.prio) {
                (Some(p), Some(prio)) => format!(", {p} {prio}"),
                (Some(p), None) => format!(", {p}"),
                _ => String::new(),
            };
            format!(
                "CPU held by {} (pid {}{policy}) for {d}",
                c.name,
                c.pid.unwrap_or(-1)
            )
        }
        "irq" => format!("CPU in IRQ handler {} for {d}", c.name),
        "softirq" => format!("CPU in softirq {} for {d}", c.name),
        "nmi" => format!("CPU in an NMI for {d}"),
        super::gap::NO_EVENT_KIND => {
            format!("no trace event for {d}: hypervisor, SMI or interrupts off")
        }
        _ => format!("CPU idle (exit from idle) for {d}"),
    }
}

//! Naming what held the CPU: the replayed window's holders summed per holder over a part of
//! the window, and each turned into a [`Contributor`] with the names the decoder knows and
//! the task's policy. The policy rule (what the kernel reported, else derived from the traced
//! priority) lives here, in one place.

use super::replay::{Holder, UNKNOWN_PRIO, Window};
use crate::format::events::Contributor;
use crate::trace::decode::TaskRef;
use crate::trace::reader::TaskPolicy;
use std::collections::HashMap;

/// Task policies the trace reader looked up, by (pid, kernel prio at the lookup): a task that
/// changes policy (the spike load drops to SCHED_OTHER before it exits) keeps both.
pub(crate) type Policies = HashMap<(i32, i32), TaskPolicy>;

/// Names the decoder knows: interrupt vectors and softirqs.
#[derive(Debug, Clone, Default)]
pub(crate) struct Names {
    pub vectors: Vec<String>,
    pub(crate) softirqs: Vec<(i64, String)>,
}

impl Names {
    fn softirq(&self, vec: u32) -> String {
        self.softirqs
            .iter()
            .find(|(v, _)| *v == vec as i64)
            .map_or_else(|| format!("softirq {vec}"), |(_, n)| n.clone())
    }
}

/// What held the CPU between `from` and `to`, longest first (ties by name). The measuring
/// thread's own time, time before the first known event, before a moved timer's expiry
/// elsewhere, and a late-armed timer's own wait are not contributors.
pub(super) fn between(
    window: &Window,
    from: u64,
    to: u64,
    policies: &Policies,
    names: &Names,
) -> Vec<Contributor> {
    between_parts(window, &[(from, to)], policies, names)
}

/// [`between`] summed over the stretches `parts` (from, to) of the window, which do not
/// overlap.
pub(super) fn between_parts(
    window: &Window,
    parts: &[(u64, u64)],
    policies: &Policies,
    names: &Names,
) -> Vec<Contributor> {
    let mut sums: HashMap<Holder, u64> = HashMap::new();
    for &(from, to) in parts {
        for seg in &window.segments {
            let (a, b) = (seg.from.max(from), seg.to.min(to));
            let held = !matches!(
                seg.holder,
                Holder::Measuring | Holder::Unknown | Holder::Elsewhere | Holder::TimerWait
            );
            if b > a && held {
                *sums.entry(seg.holder.clone()).or_default() += b - a;
            }
        }
    }
    let mut out: Vec<Contributor> = sums
        .into_iter()
        .map(|(h, d)| contributor(&h, d, &window.tasks, policies, names))
        .collect();
    out.sort_by(|a, b| b.duration_ns.cmp(&a.duration_ns).then(a.name.cmp(&b.name)));
    out
}

/// The policy and priority of a task: what the kernel reported, when it fits the priority in
/// the trace; otherwise derived from that priority (see the module documentation of
/// `trace::explain`).
fn policy_of(t: &TaskRef, policies: &Policies) -> (String, Option<i32>) {
    let class_fits = |p: &TaskPolicy| match p.policy {
        "FIFO" | "RR" => (0..100).contains(&t.prio) && p.prio == 99 - t.prio,
        "DEADLINE" => t.prio < 0,
        _ => t.prio >= 100,
    };
    match policies.get(&(t.pid, t.prio)) {
        Some(p) if class_fits(p) => (
            p.policy.to_string(),
            (p.policy != "DEADLINE").then_some(p.prio),
        ),
        _ if t.prio < 0 => ("DEADLINE".into(), None),
        _ if t.prio < 100 => ("RT".into(), Some(99 - t.prio)),
        _ => ("OTHER".into(), Some(t.prio - 120)),
    }
}

fn contributor(
    h: &Holder,
    duration_ns: u64,
    tasks: &HashMap<i32, TaskRef>,
    policies: &Policies,
    names: &Names,
) -> Contributor {
    let simple = |kind: &str, name: String| Contributor {
        kind: kind.into(),
        name,
        pid: None,
        policy: None,
        prio: None,
        duration_ns,
        stack: None,
    };
    match h {
        Holder::Task(pid) => {
            let t = tasks.get(pid).copied().filter(|t| t.prio != UNKNOWN_PRIO);
            let (policy, prio) = match t {
                Some(t) => {
                    let (p, prio) = policy_of(&t, policies);
                    (Some(p), prio)
                }
                // Known by pid only: what the kernel reported, if anything.
                None => policies
                    .iter()
                    .find(|((p, _), _)| p == pid)
                    .map_or((None, None), |(_, p)| {
                        (Some(p.policy.to_string()), Some(p.prio))
                    }),
            };
            Contributor {
                kind: "task".into(),
                name: t.map_or_else(|| format!("pid {pid}"), |t| t.comm.as_string()),
                pid: Some(*pid),
                policy,
                prio,
                duration_ns,
                stack: None,
            }
        }
        Holder::Irq(name) => simple("irq", name.to_string()),
        Holder::Vector(v) => simple(
            "irq",
            names
                .vectors
                .get(*v as usize)
                .cloned()
                .unwrap_or_else(|| format!("vector {v}")),
        ),
        Holder::Softirq(vec) => simple("softirq", names.softirq(*vec)),
        Holder::NoEvent => simple(super::gap::NO_EVENT_KIND, super::gap::NO_EVENT_NAME.into()),
        // Only idle is summed of these (between_parts leaves the others out).
        Holder::Idle
        | Holder::Measuring
        | Holder::Unknown
        | Holder::Elsewhere
        | Holder::TimerWait => simple("idle_exit", "idle".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::decode::task;

    #[test]
    fn policy_falls_back_to_the_traced_priority() {
        let t = task(5, 10, "x");
        let stale = HashMap::from([(
            (5, 10),
            TaskPolicy {
                policy: "OTHER",
                prio: 0,
                kernel_prio: 120,
            },
        )]);
        assert_eq!(policy_of(&t, &stale), ("RT".into(), Some(89)));
        assert_eq!(
            policy_of(&task(6, 125, "y"), &HashMap::new()),
            ("OTHER".into(), Some(5))
        );
        assert_eq!(
            policy_of(&task(7, -1, "z"), &HashMap::new()),
            ("DEADLINE".into(), None)
        );
    }
}

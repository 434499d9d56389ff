//! Late-wakeup causes at a glance: a traced run's spike explanations grouped by culprit (the
//! task, IRQ or softirq that held the CPU longest, or no trace event at all), with the count,
//! the share of all explained late wakeups, and the total and worst latency of those wakeups.
//! The report shows this before the list of explanations.

use crate::format::events::SpikeExplanation;
use crate::units::format_ns;
use std::collections::BTreeMap;

/// One culprit and the late wakeups it caused.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Culprit {
    /// `task`, `irq`, `softirq`, `idle_exit`, or `no_event`.
    pub kind: &'static str,
    /// The task's comm, the IRQ's or softirq's name; for `no_event`, `timer IRQ` (the timer
    /// interrupt itself came late) or `thread`.
    pub name: String,
    /// The scheduling policies the task held the CPU with (`FIFO 99`, `OTHER`), for tasks.
    pub(crate) policies: Vec<String>,
    pub count: u64,
    /// Percentage of all explained late wakeups.
    pub(crate) share_percent: f64,
    /// Sum and largest of these wakeups' latencies, ns.
    pub(crate) total_ns: u64,
    pub(crate) worst_ns: u64,
}

impl Culprit {
    /// What it is, in words: "held by jl-io-0 (FIFO 99)", "IRQ eth0", "timer IRQ late with no
    /// trace event: hypervisor, SMI or interrupts off".
    pub(crate) fn description(&self) -> String {
        let policies = if self.policies.is_empty() {
            String::new()
        } else {
            format!(" ({})", self.policies.join(", "))
        };
        match (self.kind, self.name.as_str()) {
            ("task", name) => format!("held by {name}{policies}"),
            ("irq", name) => format!("IRQ {name}"),
            ("softirq", name) => format!("softirq {name}"),
            ("idle_exit", _) => "leaving an idle state".into(),
            (_, "timer IRQ") => {
                "timer IRQ late with no trace event: hypervisor, SMI or interrupts off".into()
            }
            _ => "thread late with no trace event".into(),
        }
    }

    /// "82 % held by jl-io-0 (FIFO 99), worst 37.00 ms".
    pub(crate) fn sentence(&self) -> String {
        format!(
            "{:.0} % {}, worst {}",
            self.share_percent,
            self.description(),
            format_ns(self.worst_ns)
        )
    }

    /// Whether a task held the CPU at an ordinary (not real-time) policy.
    fn is_ordinary_task(&self) -> bool {
        self.kind == "task"
            && self
                .policies
                .iter()
                .any(|p| ["OTHER", "BATCH", "IDLE"].iter().any(|o| p.starts_with(o)))
    }
}

/// Culprits tallied at most: a run names a few dozen; a damaged or forged events.jsonl could
/// name millions. The late wakeups of culprits past it are counted apart
/// ([`Tally::finish`]), and the report says how many.
pub(crate) const MAX_CULPRITS: usize = 1000;

/// The bytes of culprit names (and their policies) tallied at most (a task's comm is 15 bytes;
/// an IRQ's name a few dozen): a new culprit past it is counted as past [`MAX_CULPRITS`], a new
/// policy is left out.
pub(crate) const MAX_CULPRIT_NAME_BYTES: usize = 1 << 20;

/// Explanations grouped by culprit as they are read, one at a time ([`aggregate`] of a stream):
/// memory bounded by [`MAX_CULPRITS`] and [`MAX_CULPRIT_NAME_BYTES`].
#[derive(Debug, Default)]
pub(crate) struct Tally {
    by: BTreeMap<(&'static str, String), Culprit>,
    name_bytes: usize,
    /// Explanations added, tallied or not.
    all: u64,
    /// Explanations whose culprit came past the caps.
    untallied: u64,
}

/// What a [`Tally`] found: the culprits, most late wakeups first (ties: the worst first).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Tallied {
    pub(crate) culprits: Vec<Culprit>,
    /// Every explanation added.
    pub all: u64,
    /// Those of culprits past [`MAX_CULPRITS`] (or [`MAX_CULPRIT_NAME_BYTES`]), in no row.
    pub(crate) untallied: u64,
}

impl Tally {
    pub(crate) fn add(&mut self, s: &SpikeExplanation) {
        self.all += 1;
        let kind = s.cause();
        let (name, policy) = match s.contributors.first() {
            Some(c) if kind != "no_event" => (
                c.name.as_str(),
                c.policy.as_ref().map(|p| match c.prio {
                    Some(prio) if p != "OTHER" => format!("{p} {prio}"),
                    _ => p.clone(),
                }),
            ),
            _ => {
                let irq_late = match (s.irq_latency_ns, s.thread_latency_ns) {
                    (Some(irq), Some(thread)) => irq > thread,
                    (Some(_), None) => true,
                    _ => false,
                };
                (if irq_late { "timer IRQ" } else { "thread" }, None)
            }
        };
        let latency = s.latency_ns.max(0) as u64;
        let key = (kind, name.to_string());
        let c = match self.by.get_mut(&key) {
            Some(c) => c,
            None => {
                if self.by.len() >= MAX_CULPRITS
                    || self.name_bytes + name.len() > MAX_CULPRIT_NAME_BYTES
                {
                    self.untallied += 1;
                    return;
                }
                self.name_bytes += name.len();
                self.by.entry(key).or_insert_with(|| Culprit {
                    kind,
                    name: name.to_string(),
                    policies: Vec::new(),
                    count: 0,
                    share_percent: 0.0,
                    total_ns: 0,
                    worst_ns: 0,
                })
            }
        };
        c.count += 1;
        c.total_ns += latency;
        c.worst_ns = c.worst_ns.max(latency);
        // A policy counts against the names' bytes: a forged file could give each line its own.
        if let Some(p) = policy
            && !c.policies.contains(&p)
            && self.name_bytes + p.len() <= MAX_CULPRIT_NAME_BYTES
        {
            self.name_bytes += p.len();
            c.policies.push(p);
        }
    }

    /// The culprits, each with its share of every explanation added.
    pub(crate) fn finish(self) -> Tallied {
        let all = self.all.max(1) as f64;
        let mut culprits: Vec<Culprit> = self
            .by
            .into_values()
            .map(|mut c| {
                c.share_percent = c.count as f64 * 100.0 / all;
                c
            })
            .collect();
        culprits.sort_by(|a, b| b.count.cmp(&a.count).then(b.worst_ns.cmp(&a.worst_ns)));
        Tallied {
            culprits,
            all: self.all,
            untallied: self.untallied,
        }
    }
}

/// Groups explanations by culprit, most late wakeups first (ties: the worst first).
#[cfg(test)]
pub(crate) fn aggregate(spikes: &[&SpikeExplanation]) -> Vec<Culprit> {
    let mut tally = Tally::default();
    spikes.iter().for_each(|s| tally.add(s));
    tally.finish().culprits
}

/// Whether a kernel of this preemption model (run.json's `system.preemption_model`, e.g.
/// `PREEMPT_DYNAMIC (voluntary)`) runs kernel code without preemption points between them.
pub(crate) fn kernel_not_preemptible(preemption_model: &str) -> bool {
    let m = preemption_model.to_ascii_lowercase();
    !m.contains("preempt_rt") && !m.contains("full") && !m.contains("lazy") && {
        m.contains("none") || m.contains("voluntary")
    }
}

/// On a kernel that does not preempt kernel code, why an ordinary task could hold the CPU
/// against a real-time one; None when no such culprit or the kernel preempts.
pub(crate) fn kernel_code_note(culprits: &[Culprit], preemption_model: &str) -> Option<String> {
    if !kernel_not_preemptible(preemption_model) {
        return None;
    }
    let names: Vec<&str> = culprits
        .iter()
        .filter(|c| c.is_ordinary_task())
        .map(|c| c.name.as_str())
        .collect();
    if names.is_empty() {
        return None;
    }
    Some(format!(
        "This kernel does not preempt kernel code (preemption model {preemption_model}): a SCHED_OTHER \
         task ({}) held the CPU in kernel code, and the real-time task waited until it left the \
         kernel or reached a preemption point. A PREEMPT_RT or preempt=full kernel preempts it.",
        names.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::events::Contributor;

    fn spike(
        latency_us: i64,
        irq_us: i64,
        held_by: Option<(&str, &str, &str, i32)>,
    ) -> SpikeExplanation {
        SpikeExplanation {
            time_ns: 0,
            cpu: 0,
            due_ns: 0,
            latency_ns: latency_us * 1000,
            irq_latency_ns: Some(irq_us * 1000),
            thread_latency_ns: Some((latency_us - irq_us) * 1000),
            verdict: String::new(),
            contributors: held_by
                .map(|(kind, name, policy, prio)| Contributor {
                    kind: kind.into(),
                    name: name.into(),
                    pid: Some(7),
                    policy: (kind == "task").then(|| policy.to_string()),
                    prio: (kind == "task").then_some(prio),
                    duration_ns: latency_us as u64 * 900,
                    stack: None,
                })
                .into_iter()
                .collect(),
        }
    }

    #[test]
    fn explanations_are_counted_by_culprit() {
        // 41 wakeups held by jl-io-0 (1 ms each but one of 37 ms), 6 with a late timer IRQ and
        // no event, 2 behind IRQ eth0, 1 thread-late with no event: 50 in all.
        let mut spikes = Vec::new();
        for k in 0..41 {
            let us = if k == 20 { 37_000 } else { 1_000 };
            spikes.push(spike(us, 5, Some(("task", "jl-io-0", "FIFO", 90))));
        }
        for _ in 0..6 {
            spikes.push(spike(400, 390, None));
        }
        for _ in 0..2 {
            spikes.push(spike(200, 5, Some(("irq", "eth0", "", 0))));
        }
        spikes.push(spike(300, 5, None));
        let refs: Vec<&SpikeExplanation> = spikes.iter().collect();
        let c = aggregate(&refs);
        assert_eq!(c.len(), 4);
        assert_eq!(
            (c[0].kind, c[0].name.as_str(), c[0].count),
            ("task", "jl-io-0", 41)
        );
        assert_eq!(c[0].share_percent, 82.0);
        assert_eq!(c[0].total_ns, (40 * 1_000 + 37_000) * 1_000);
        assert_eq!(c[0].worst_ns, 37_000_000);
        assert_eq!(
            c[0].sentence(),
            "82 % held by jl-io-0 (FIFO 90), worst 37.00 ms"
        );
        assert_eq!(
            (c[1].kind, c[1].name.as_str(), c[1].count),
            ("no_event", "timer IRQ", 6)
        );
        assert_eq!(c[1].share_percent, 12.0);
        assert!(
            c[1].sentence()
                .starts_with("12 % timer IRQ late with no trace event")
        );
        assert_eq!(
            (c[2].kind, c[2].name.as_str(), c[2].count),
            ("irq", "eth0", 2)
        );
        assert_eq!(
            (c[3].kind, c[3].name.as_str(), c[3].count),
            ("no_event", "thread", 1)
        );
        assert_eq!(c.iter().map(|c| c.count).sum::<u64>(), 50);
        assert_eq!(kernel_code_note(&c, "PREEMPT_DYNAMIC (voluntary)"), None);
    }

    #[test]
    fn an_ordinary_task_on_a_non_preemptible_kernel_is_named() {
        let spikes = [spike(2_000, 5, Some(("task", "kworker/0:1", "OTHER", 120)))];
        let refs: Vec<&SpikeExplanation> = spikes.iter().collect();
        let c = aggregate(&refs);
        assert_eq!(c[0].description(), "held by kworker/0:1 (OTHER)");
        let note = kernel_code_note(&c, "PREEMPT_DYNAMIC (voluntary)").unwrap();
        assert!(note.contains("SCHED_OTHER task (kworker/0:1) held the CPU in kernel code"));
        assert!(kernel_code_note(&c, "none").is_some());
        assert_eq!(kernel_code_note(&c, "PREEMPT_RT"), None);
        assert_eq!(kernel_code_note(&c, "PREEMPT_DYNAMIC (full)"), None);
        assert_eq!(kernel_code_note(&c, "unknown"), None);
    }
}

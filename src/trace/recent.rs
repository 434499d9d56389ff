//! The recent trace events of the measured CPUs, kept for `--on-threshold snapshot`: a ring per
//! CPU of the decoded events the back end delivered, as long as a snapshot's window before its
//! spike can need them, bounded in count too; and a window of them written as text lines
//! (`snapshots/spike-NNNN.trace`, docs/result-format.md). Kept only when a snapshot is planned:
//! the joiner ([`super::join`]) has no ring otherwise.
//!
//! What a window cannot show is said, never hidden: events no longer kept (the ring's bounds
//! reached into the window), `lost` marks of the kernel or the back end inside the window, and
//! a CPU whose trace had not arrived to the window's end.

use super::decode::{Kind, TraceEvent};
use super::explain::Names;
use crate::recorder::CpuTraceWindow;
use std::collections::{HashMap, VecDeque};
use std::fmt::Write;

/// The most events kept per CPU. A window is a few seconds and a measured CPU's trace runs at
/// about 4 to 10 events per wakeup (some 10 000 a second at 1 kHz), more under a scheduler
/// storm: 200 000 hold the default 3 s window and its margin up to about 30 000 events a
/// second. The bound is the same as the joiner's own history per CPU ([`super::split`]),
/// about 15 MB, so that snapshots at most double the trace's memory whatever the load; past
/// it the oldest events go and the window says from when it is missing.
pub(crate) const MAX_PER_CPU: usize = 200_000;

/// One CPU's ring.
#[derive(Debug, Default)]
struct CpuRing {
    events: VecDeque<TraceEvent>,
    /// The newest event time received, ns.
    newest_ns: u64,
    /// The latest time of an event dropped by either bound, ns.
    dropped_through_ns: Option<u64>,
}

/// The rings of the measured CPUs.
#[derive(Debug)]
pub(crate) struct RecentEvents {
    keep_ns: u64,
    max_per_cpu: usize,
    rings: HashMap<usize, CpuRing>,
}

impl RecentEvents {
    /// Rings for `cpus`, keeping `keep_ns` behind each CPU's newest event and at most
    /// `max_per_cpu` events.
    pub(crate) fn new(
        cpus: impl IntoIterator<Item = usize>,
        keep_ns: u64,
        max_per_cpu: usize,
    ) -> Self {
        RecentEvents {
            keep_ns,
            max_per_cpu: max_per_cpu.max(1),
            rings: cpus.into_iter().map(|c| (c, CpuRing::default())).collect(),
        }
    }

    /// Keeps one event of `cpu` (ignored for a CPU not measured). A kernel stack may arrive out
    /// of time order; the window sorts.
    pub(crate) fn push(&mut self, cpu: usize, e: &TraceEvent) {
        let Some(r) = self.rings.get_mut(&cpu) else {
            return;
        };
        r.newest_ns = r.newest_ns.max(e.ts);
        if r.events.len() >= self.max_per_cpu {
            r.drop_front();
        }
        r.events.push_back(e.clone());
        let oldest = r.newest_ns.saturating_sub(self.keep_ns);
        while r.events.front().is_some_and(|f| f.ts < oldest) {
            r.drop_front();
        }
    }

    /// Every measured CPU's kept events in [from_ns, to_ns], by CPU, each formatted as one
    /// line (see [`line`]); `complete_until` tells how far each CPU's trace had arrived.
    pub(crate) fn window(
        &self,
        from_ns: u64,
        to_ns: u64,
        names: &Names,
        complete_until: impl Fn(usize) -> u64,
    ) -> Vec<CpuTraceWindow> {
        let mut cpus: Vec<usize> = self.rings.keys().copied().collect();
        cpus.sort_unstable();
        cpus.into_iter()
            .map(|cpu| {
                let r = &self.rings[&cpu];
                let mut events: Vec<&TraceEvent> = r
                    .events
                    .iter()
                    .filter(|e| (from_ns..=to_ns).contains(&e.ts))
                    .collect();
                events.sort_by_key(|e| e.ts);
                let comms = task_names(&r.events);
                let mut w = CpuTraceWindow {
                    cpu,
                    not_kept_through_ns: r.dropped_through_ns.filter(|&d| d >= from_ns),
                    complete_until_ns: complete_until(cpu),
                    ..CpuTraceWindow::default()
                };
                for e in events {
                    if let Kind::Lost { count } = e.kind {
                        w.lost_marks += 1;
                        match count {
                            Some(n) => w.lost_events += n,
                            None => w.unknown_counts += 1,
                        }
                    }
                    w.lines.push(line(cpu, e, &comms, names));
                }
                w
            })
            .collect()
    }
}

impl CpuRing {
    fn drop_front(&mut self) {
        if let Some(old) = self.events.pop_front() {
            self.dropped_through_ns = Some(self.dropped_through_ns.unwrap_or(0).max(old.ts));
        }
    }
}

/// The name of every task the kept events show (woken or switched), by pid.
fn task_names(events: &VecDeque<TraceEvent>) -> HashMap<i32, String> {
    let mut names = HashMap::new();
    for e in events {
        match &e.kind {
            Kind::Waking { task, .. } => {
                names.insert(task.pid, task.comm.as_string());
            }
            Kind::Switch { prev, next } => {
                names.insert(prev.pid, prev.comm.as_string());
                names.insert(next.pid, next.comm.as_string());
            }
            _ => {}
        }
    }
    names
}

/// A task name as a JSON string (names may hold spaces or quotes).
fn quoted(name: &str) -> String {
    serde_json::to_string(name).unwrap_or_else(|_| "\"?\"".into())
}

/// One event as a line: `time_ns cpu common_pid comm event field=value...`, where `comm` is
/// the common pid's name as the trace showed it (a JSON string) or `?`, and names inside the
/// fields are JSON strings too.
pub(crate) fn line(
    cpu: usize,
    e: &TraceEvent,
    comms: &HashMap<i32, String>,
    names: &Names,
) -> String {
    let comm = comms.get(&e.common_pid).map_or("?".into(), |c| quoted(c));
    let mut s = format!("{} {cpu} {} {comm} ", e.ts, e.common_pid);
    // Writing to a String cannot fail.
    let _ = match &e.kind {
        Kind::HrtimerStart {
            hrtimer,
            expires,
            softexpires,
        } => write!(
            s,
            "hrtimer_start hrtimer={hrtimer:#x} expires={expires} softexpires={softexpires}"
        ),
        Kind::HrtimerExpire { hrtimer, now } => {
            write!(s, "hrtimer_expire_entry hrtimer={hrtimer:#x} now={now}")
        }
        Kind::Waking { task, target_cpu } => write!(
            s,
            "sched_waking comm={} pid={} prio={} target_cpu={target_cpu}",
            quoted(&task.comm.as_string()),
            task.pid,
            task.prio
        ),
        Kind::Switch { prev, next } => write!(
            s,
            "sched_switch prev_comm={} prev_pid={} prev_prio={} next_comm={} next_pid={} next_prio={}",
            quoted(&prev.comm.as_string()),
            prev.pid,
            prev.prio,
            quoted(&next.comm.as_string()),
            next.pid,
            next.prio
        ),
        Kind::IrqEntry { irq, name } => {
            write!(s, "irq_handler_entry irq={irq} name={}", quoted(name))
        }
        Kind::IrqExit { irq } => write!(s, "irq_handler_exit irq={irq}"),
        Kind::SoftirqEntry { vec } => write!(s, "softirq_entry vec={vec}{}", action(*vec, names)),
        Kind::SoftirqExit { vec } => write!(s, "softirq_exit vec={vec}{}", action(*vec, names)),
        Kind::VectorEntry { vector } => write!(s, "{}", vector_event(*vector, "entry", names)),
        Kind::VectorExit { vector } => write!(s, "{}", vector_event(*vector, "exit", names)),
        Kind::Nmi { delta_ns } => write!(s, "nmi_handler delta_ns={delta_ns}"),
        Kind::Lost { count: Some(n) } => write!(s, "lost count={n}"),
        Kind::Lost { count: None } => write!(s, "lost count=unknown"),
        Kind::KernelStack { ips } => {
            let frames: Vec<String> = ips.iter().map(|ip| format!("{ip:#x}")).collect();
            write!(s, "kernel_stack frames={}", frames.join(","))
        }
    };
    s
}

/// ` action=NAME` for a softirq vector whose name the back end knows.
fn action(vec: u32, names: &Names) -> String {
    names
        .softirqs
        .iter()
        .find(|(v, _)| *v == vec as i64)
        .map_or(String::new(), |(_, n)| format!(" action={n}"))
}

/// An interrupt vector's event as the kernel names it (`local_timer_entry`), or
/// `vector_entry vector=N` when its name is unknown.
fn vector_event(vector: u16, side: &str, names: &Names) -> String {
    match names.vectors.get(vector as usize) {
        Some(n) => format!("{n}_{side}"),
        None => format!("vector_{side} vector={vector}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::decode::task;
    use std::sync::Arc;

    fn ev(ts: u64, pid: i32, kind: Kind) -> TraceEvent {
        TraceEvent {
            ts,
            common_pid: pid,
            kind,
        }
    }

    fn names() -> Names {
        Names {
            vectors: vec!["local_timer".into()],
            softirqs: vec![(1, "TIMER".into())],
        }
    }

    fn waking(ts: u64) -> TraceEvent {
        ev(ts, 0, Kind::waking(7))
    }

    #[test]
    fn keeps_the_time_behind_the_newest_and_says_what_it_dropped() {
        let mut r = RecentEvents::new([1], 1_000, 100);
        for ts in (0..=5_000).step_by(100) {
            r.push(1, &waking(ts));
            // Not measured: not kept.
            r.push(0, &waking(ts));
        }
        let w = r.window(0, u64::MAX, &names(), |_| 5_000);
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].cpu, 1);
        // 1 000 ns behind 5 000: 4 000..=5 000, 11 events; 3 900 was the last dropped.
        assert_eq!(w[0].lines.len(), 11);
        assert!(w[0].lines[0].starts_with("4000 1 0 ? sched_waking"));
        assert_eq!(w[0].not_kept_through_ns, Some(3_900));
        // A window after what was dropped is complete.
        let w = r.window(4_000, 4_500, &names(), |_| 5_000);
        assert_eq!(w[0].lines.len(), 6);
        assert_eq!(w[0].not_kept_through_ns, None);
    }

    #[test]
    fn the_count_bound_drops_the_oldest_and_the_window_says_so() {
        let mut r = RecentEvents::new([2], u64::MAX, 10);
        for ts in 0..25u64 {
            r.push(2, &waking(ts * 10));
        }
        let w = r.window(100, 300, &names(), |_| 0);
        // Kept: 150..=240; 140 dropped, inside the window.
        assert_eq!(w[0].lines.len(), 10);
        assert_eq!(w[0].not_kept_through_ns, Some(140));
        assert_eq!(w[0].complete_until_ns, 0);
        let w = r.window(150, 200, &names(), |_| 0);
        assert_eq!((w[0].lines.len(), w[0].not_kept_through_ns), (6, None));
    }

    #[test]
    fn a_window_is_in_time_order_and_counts_lost_marks() {
        let mut r = RecentEvents::new([0], u64::MAX, 100);
        r.push(0, &waking(100));
        r.push(0, &ev(300, 0, Kind::Lost { count: Some(4) }));
        // A stack arriving after later events.
        r.push(
            0,
            &ev(
                200,
                9,
                Kind::KernelStack {
                    ips: Arc::from(vec![0xffff_0001u64, 0x2]),
                },
            ),
        );
        r.push(0, &ev(400, 0, Kind::Lost { count: None }));
        r.push(0, &waking(500));
        let w = r.window(150, 450, &names(), |_| 1_000);
        let times: Vec<&str> = w[0]
            .lines
            .iter()
            .map(|l| l.split(' ').next().unwrap())
            .collect();
        assert_eq!(times, ["200", "300", "400"]);
        assert_eq!(
            w[0].lines[0],
            "200 0 9 ? kernel_stack frames=0xffff0001,0x2"
        );
        assert_eq!(w[0].lines[1], "300 0 0 ? lost count=4");
        assert_eq!(w[0].lines[2], "400 0 0 ? lost count=unknown");
        assert_eq!(
            (w[0].lost_marks, w[0].lost_events, w[0].unknown_counts),
            (2, 4, 1)
        );
        assert_eq!(w[0].complete_until_ns, 1_000);
    }

    #[test]
    fn every_kind_has_its_line_with_the_names_the_trace_showed() {
        let me = task(77, 4, "jl-measure-0");
        let other = task(900, 120, "a b\"c");
        let mut comms = HashMap::new();
        comms.insert(77, "jl-measure-0".to_string());
        let n = names();
        let l = |pid, kind| line(3, &ev(10, pid, kind), &comms, &n);
        let hs = Kind::HrtimerStart {
            hrtimer: 0xab,
            expires: 5,
            softexpires: 4,
        };
        assert_eq!(
            l(77, hs),
            "10 3 77 \"jl-measure-0\" hrtimer_start hrtimer=0xab expires=5 softexpires=4"
        );
        let he = Kind::HrtimerExpire {
            hrtimer: 0xab,
            now: 6,
        };
        assert_eq!(l(0, he), "10 3 0 ? hrtimer_expire_entry hrtimer=0xab now=6");
        let wk = Kind::Waking {
            task: me,
            target_cpu: 3,
        };
        assert_eq!(
            l(0, wk),
            "10 3 0 ? sched_waking comm=\"jl-measure-0\" pid=77 prio=4 target_cpu=3"
        );
        let sw = Kind::Switch {
            prev: other,
            next: me,
        };
        assert_eq!(
            l(900, sw),
            "10 3 900 ? sched_switch prev_comm=\"a b\\\"c\" prev_pid=900 prev_prio=120 next_comm=\"jl-measure-0\" next_pid=77 next_prio=4"
        );
        let ie = Kind::IrqEntry {
            irq: 11,
            name: Arc::from("eth0"),
        };
        assert_eq!(l(0, ie), "10 3 0 ? irq_handler_entry irq=11 name=\"eth0\"");
        assert_eq!(
            l(0, Kind::IrqExit { irq: 11 }),
            "10 3 0 ? irq_handler_exit irq=11"
        );
        assert_eq!(
            l(0, Kind::SoftirqEntry { vec: 1 }),
            "10 3 0 ? softirq_entry vec=1 action=TIMER"
        );
        assert_eq!(
            l(0, Kind::SoftirqExit { vec: 9 }),
            "10 3 0 ? softirq_exit vec=9"
        );
        assert_eq!(
            l(0, Kind::VectorEntry { vector: 0 }),
            "10 3 0 ? local_timer_entry"
        );
        assert_eq!(
            l(0, Kind::VectorExit { vector: 5 }),
            "10 3 0 ? vector_exit vector=5"
        );
        assert_eq!(
            l(0, Kind::Nmi { delta_ns: 42 }),
            "10 3 0 ? nmi_handler delta_ns=42"
        );
        // The window names the common pid from the switches and wakeups it kept.
        let mut r = RecentEvents::new([3], u64::MAX, 10);
        r.push(
            3,
            &ev(
                1,
                900,
                Kind::Switch {
                    prev: other,
                    next: me,
                },
            ),
        );
        r.push(3, &ev(2, 77, Kind::Nmi { delta_ns: 1 }));
        let w = r.window(2, 2, &n, |_| 0);
        assert_eq!(
            w[0].lines,
            ["2 3 77 \"jl-measure-0\" nmi_handler delta_ns=1"]
        );
    }
}

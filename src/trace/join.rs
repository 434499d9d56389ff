//! The recorder's side of the trace: the reader's batches gathered into per-CPU timelines, and
//! each sample joined with them: split ([`super::split`]) and explained ([`super::explain`]),
//! a noise gap attributed, or an IPC sample's chain followed across the sender's and the
//! receiver's CPUs ([`super::chain`]).

use super::chain::{self, IpcChain};
use super::explain::{self, IpcSample, LateSample, Names};
use super::reader::TraceBatch;
use super::recent::{self, RecentEvents};
use super::split::CpuTimeline;
use crate::measure::Sample;
use crate::recorder::{CpuTraceWindow, SampleTrace, TraceJoin};
use std::collections::HashMap;
use std::sync::mpsc::Receiver;

/// How long after a sample's wakeup, as the recorder computes it (due time plus latency), an
/// IPC sample waits for its chain's trace: the wakeup is really that much later than the due
/// time by the sender's own lateness, which the sample does not carry. A sender later than
/// this may find the end of its chain not yet read (the explanation then says what is missing).
pub(crate) const IPC_CHAIN_WAIT_NS: u64 = 20_000_000;

/// One measuring thread, as the joiner needs it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ThreadTrace {
    pub cpu: usize,
    pub tid: i32,
    /// How far after the due time the timer's soft expiry may lie (0: exactly the due time;
    /// see [`super::split`]).
    pub(crate) tolerance_ns: u64,
    /// Samples above this latency are explained.
    pub explain_above_ns: u64,
    /// A noise thread: its samples are gaps of a loop that never sleeps (no timer to split
    /// by); each gap above `explain_above_ns` is attributed ([`explain::gap`]).
    pub gaps: bool,
    /// IPC wake methods: the thread's sender, whose timer starts each sample's chain.
    pub sender: Option<SenderTrace>,
}

/// The sender thread of an IPC receiver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SenderTrace {
    pub cpu: usize,
    /// Its kernel thread id: 0 until the sender has started (it starts with the run, after
    /// tracing), then told by [`super::Tracer::follow_senders`].
    pub tid: i32,
}

/// The recorder's side: takes the reader's batches and joins samples with them.
pub(crate) struct Joiner {
    rx: Receiver<TraceBatch>,
    /// The senders' thread ids, per thread in plan order, once they are known.
    senders_rx: Receiver<Vec<i32>>,
    timelines: HashMap<usize, CpuTimeline>,
    threads: Vec<ThreadTrace>,
    /// The threads whose timers and wakeups are followed: measuring threads and senders.
    tids: Vec<i32>,
    /// The due time of each thread's last joined sample (0: none yet).
    last_due_ns: Vec<u64>,
    policies: explain::Policies,
    names: Names,
    /// The measured CPUs' recent events, for snapshots ([`TraceJoin::keep_recent`]).
    recent: Option<RecentEvents>,
    /// The CPUs where the kernel may move the measuring threads' timers (timer migration off
    /// `nohz_full` CPUs: [`super::split::CpuTimeline::take_moved_cycle`]): those traced for
    /// these timers only, and measured housekeeping CPUs. Their history is kept for the
    /// slowest thread.
    timer_cpus: Vec<usize>,
}

impl Joiner {
    pub(crate) fn new(
        rx: Receiver<TraceBatch>,
        senders_rx: Receiver<Vec<i32>>,
        threads: Vec<ThreadTrace>,
        names: Names,
    ) -> Self {
        Joiner {
            rx,
            senders_rx,
            timelines: HashMap::new(),
            tids: threads.iter().map(|t| t.tid).collect(),
            last_due_ns: vec![0; threads.len()],
            threads,
            policies: HashMap::new(),
            names,
            recent: None,
            timer_cpus: Vec::new(),
        }
    }

    /// Also looks for the timers of the measuring threads on `cpus` (traced for them only):
    /// every sample then waits for their trace too.
    pub(crate) fn with_timer_cpus(mut self, cpus: Vec<usize>) -> Self {
        self.timer_cpus = cpus;
        self
    }

    fn learn_senders(&mut self, tids: &[i32]) {
        for (t, &tid) in self.threads.iter_mut().zip(tids) {
            if let Some(s) = &mut t.sender
                && tid > 0
            {
                s.tid = tid;
                self.tids.push(tid);
            }
        }
    }

    /// The CPUs whose trace a sample of a thread on `cpu` needs: its own, and its senders'.
    fn cpus_needed(&self, cpu: usize) -> impl Iterator<Item = usize> + '_ {
        std::iter::once(cpu)
            .chain(
                self.threads
                    .iter()
                    .filter(move |t| t.cpu == cpu)
                    .filter_map(|t| t.sender.map(|s| s.cpu)),
            )
            .chain(self.timer_cpus.iter().copied())
    }
}

impl TraceJoin for Joiner {
    fn receive(&mut self) {
        // Before the batches: a batch may hold a sender's first timer.
        while let Ok(tids) = self.senders_rx.try_recv() {
            self.learn_senders(&tids);
        }
        while let Ok(batch) = self.rx.try_recv() {
            let tl = self.timelines.entry(batch.cpu).or_default();
            for e in batch.events {
                if let Some(r) = &mut self.recent {
                    r.push(batch.cpu, &e);
                }
                tl.push(e, &self.tids);
            }
            tl.complete_until_ns = tl.complete_until_ns.max(batch.complete_until_ns);
            tl.finished |= batch.last;
            for (pid, p) in batch.policies {
                self.policies.insert((pid, p.kernel_prio), p);
            }
        }
    }

    fn complete_until_ns(&self, cpu: usize) -> u64 {
        let (mut until, mut finished) = (u64::MAX, true);
        let ipc = self
            .threads
            .iter()
            .any(|t| t.cpu == cpu && t.sender.is_some());
        for c in self.cpus_needed(cpu) {
            let tl = self.timelines.get(&c);
            until = until.min(tl.map_or(0, |t| t.complete_until_ns));
            finished &= tl.is_some_and(|t| t.finished);
        }
        match ipc && !finished {
            true => until.saturating_sub(IPC_CHAIN_WAIT_NS),
            false => until,
        }
    }

    fn join(&mut self, thread_index: usize, sample: &Sample) -> SampleTrace {
        let Some(&th) = self.threads.get(thread_index) else {
            return SampleTrace::default();
        };
        let joined = if let Some(sender) = th.sender {
            self.join_ipc(&th, sender, sample)
        } else if th.gaps {
            let tl = self.timelines.entry(th.cpu).or_default();
            join_gap(&th, sample, tl, &self.policies, &self.names)
        } else {
            self.join_timer(&th, sample)
        };
        self.trim(thread_index, sample.expected_ns);
        joined
    }

    fn keep_recent(&mut self, keep_ns: u64) {
        let cpus = self.threads.iter().map(|t| t.cpu);
        self.recent = Some(RecentEvents::new(cpus, keep_ns, recent::MAX_PER_CPU));
    }

    fn recent_window(&self, from_ns: u64, to_ns: u64) -> Vec<CpuTraceWindow> {
        let Some(r) = &self.recent else {
            return Vec::new();
        };
        r.window(from_ns, to_ns, &self.names, |cpu| {
            self.timelines.get(&cpu).map_or(0, |t| match t.finished {
                true => u64::MAX,
                false => t.complete_until_ns,
            })
        })
    }
}

impl Joiner {
    /// The times of `cpu`'s recent events, in the order the timeline keeps them.
    #[cfg(test)]
    pub(crate) fn cpu_history(&self, cpu: usize) -> Vec<u64> {
        self.timelines
            .get(&cpu)
            .map_or_else(Vec::new, |t| t.history.iter().map(|e| e.ts).collect())
    }

    /// A sample of a timer wake method: its split, and its explanation when late.
    fn join_timer(&mut self, th: &ThreadTrace, sample: &Sample) -> SampleTrace {
        // Out of the map while the other CPUs' timelines are read beside it.
        let mut own = self.timelines.remove(&th.cpu).unwrap_or_default();
        let joined = self.join_timer_on(th, sample, &mut own);
        self.timelines.insert(th.cpu, own);
        joined
    }

    fn join_timer_on(
        &self,
        th: &ThreadTrace,
        sample: &Sample,
        tl: &mut CpuTimeline,
    ) -> SampleTrace {
        let due = sample.expected_ns;
        let wake = (due as i64 + sample.latency_ns).max(0) as u64;
        let elsewhere: Vec<(usize, &CpuTimeline)> = self
            .timer_cpus
            .iter()
            .filter_map(|c| Some((*c, self.timelines.get(c)?)))
            .collect();
        let split = tl.split_elsewhere(th.tid, due, wake, th.tolerance_ns, &elsewhere);
        let explanation = (sample.latency_ns > th.explain_above_ns as i64).then(|| {
            explain::explain(
                &LateSample {
                    cpu: th.cpu,
                    tid: th.tid,
                    due_ns: due,
                    wake_ns: wake,
                    split,
                },
                tl,
                &self.policies,
                &self.names,
            )
        });
        SampleTrace {
            irq_latency_ns: split.map(|s| s.irq_latency_ns),
            thread_latency_ns: split.map(|s| s.thread_latency_ns),
            wake_to_switch_ns: split.and_then(|s| s.wake_to_switch_ns),
            switch_to_user_ns: split.and_then(|s| s.switch_to_user_ns),
            explanation,
            gap_attribution: None,
        }
    }

    /// Forgets the history no thread needs any more: each CPU's up to the earliest last due
    /// time of the threads that read it (its measuring threads, and the receivers of the
    /// senders on it), as their samples are joined at different times.
    fn trim(&mut self, thread_index: usize, due_ns: u64) {
        self.last_due_ns[thread_index] = due_ns;
        let all_joined = self.last_due_ns.iter().copied().min().unwrap_or(due_ns);
        for cpu in &self.timer_cpus {
            if let Some(tl) = self.timelines.get_mut(cpu) {
                tl.trim_before_due(all_joined);
            }
        }
        let th = self.threads[thread_index];
        for cpu in std::iter::once(th.cpu).chain(th.sender.map(|s| s.cpu)) {
            // A CPU the other threads' timers may move to keeps what the slowest needs (above).
            if self.timer_cpus.contains(&cpu) {
                continue;
            }
            let floor = self
                .threads
                .iter()
                .zip(&self.last_due_ns)
                .filter(|(t, _)| t.cpu == cpu || t.sender.is_some_and(|s| s.cpu == cpu))
                .map(|(_, &d)| d)
                .min()
                .unwrap_or(due_ns);
            if let Some(tl) = self.timelines.get_mut(&cpu) {
                tl.trim_before_due(floor);
            }
        }
    }

    /// An IPC sample: the chain from the sender's timer to the receiver running. Its IRQ
    /// latency is the sender's timer's, its wake-to-switch the receiver's scheduling delay
    /// (there is no thread latency or switch-to-user: the sample starts at the sender's stamp,
    /// which the trace does not show). Explained when the sample's latency, or the whole
    /// chain's (the sender's lateness added), is above the thread's threshold.
    fn join_ipc(&mut self, th: &ThreadTrace, sender: SenderTrace, sample: &Sample) -> SampleTrace {
        let due = sample.expected_ns;
        self.timelines.entry(th.cpu).or_default();
        let sender_tl = self.timelines.entry(sender.cpu).or_default();
        let mut found: Option<IpcChain> = match sender.tid {
            0 => None,
            tid => chain::take_sender_cycle(sender_tl, tid, due, sample.latency_ns),
        };
        let receiver_tl = &self.timelines[&th.cpu];
        let sender_tl = &self.timelines[&sender.cpu];
        if let Some(c) = &mut found {
            chain::follow_wake(c, sender_tl, receiver_tl, sender.tid, th.tid);
        }
        let chain_latency = sample.latency_ns + found.map_or(0, |c| c.sender_late_ns().max(0));
        let explanation = (chain_latency > th.explain_above_ns as i64).then(|| {
            explain::explain_ipc(
                &IpcSample {
                    cpu: th.cpu,
                    tid: th.tid,
                    sender_cpu: sender.cpu,
                    sender_tid: sender.tid,
                    due_ns: due,
                    latency_ns: sample.latency_ns,
                    chain: found,
                },
                receiver_tl,
                sender_tl,
                &self.policies,
                &self.names,
            )
        });
        SampleTrace {
            irq_latency_ns: found.map(|c| c.sender_irq_latency_ns),
            wake_to_switch_ns: found.and_then(|c| c.kept_off_ns()),
            explanation,
            ..SampleTrace::default()
        }
    }
}

/// A noise thread's gap with the trace: above the thread's explanation threshold, its
/// explanation and attribution; throttled gaps (not noise) are left alone.
fn join_gap(
    th: &ThreadTrace,
    sample: &Sample,
    tl: &mut CpuTimeline,
    policies: &explain::Policies,
    names: &Names,
) -> SampleTrace {
    let start = sample.expected_ns;
    let explained =
        (sample.missed == 0 && sample.latency_ns > th.explain_above_ns as i64).then(|| {
            explain::explain_gap(
                &explain::Gap {
                    cpu: th.cpu,
                    tid: th.tid,
                    start_ns: start,
                    end_ns: start + sample.latency_ns.max(0) as u64,
                },
                tl,
                policies,
                names,
            )
        });
    match explained {
        Some(x) => SampleTrace {
            explanation: Some(x.explanation),
            gap_attribution: Some(x.attribution),
            ..SampleTrace::default()
        },
        None => SampleTrace::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::decode::{Kind, TraceEvent, task};
    use std::sync::mpsc;

    fn ev(ts: u64, pid: i32, kind: Kind) -> TraceEvent {
        TraceEvent {
            ts,
            common_pid: pid,
            kind,
        }
    }

    fn thread(cpu: usize, tid: i32) -> ThreadTrace {
        ThreadTrace {
            cpu,
            tid,
            tolerance_ns: 0,
            explain_above_ns: 1_000_000_000,
            gaps: false,
            sender: None,
        }
    }

    fn batch(cpu: usize, events: Vec<TraceEvent>) -> TraceBatch {
        TraceBatch {
            cpu,
            events,
            complete_until_ns: u64::MAX,
            policies: Vec::new(),
            last: true,
        }
    }

    fn sample(expected_ns: u64, latency_ns: i64) -> Sample {
        Sample {
            seq: 0,
            expected_ns,
            latency_ns,
            missed: 0,
        }
    }

    /// Lab check 1a: CPUs 0 and 1 measured, CPU 1 in `nohz_full`, timer migration on. The
    /// timer thread 11 arms on CPU 1 expires on CPU 0 (measured too, so traced in full), which
    /// wakes it from there. Joined from CPU 0's trace when CPU 0 is among the joiner's timer
    /// CPUs, even after CPU 0's own thread has run 50 ms ahead (its history is kept for the
    /// slowest thread); without, "the timer's events are not in the trace".
    fn moved_to_a_measured_cpu(timer_cpus: Vec<usize>) -> SampleTrace {
        let (tx, rx) = mpsc::channel();
        let (_senders_tx, senders_rx) = mpsc::channel();
        let names = Names {
            vectors: Vec::new(),
            softirqs: Vec::new(),
        };
        let mut j = Joiner::new(rx, senders_rx, vec![thread(0, 10), thread(1, 11)], names)
            .with_timer_cpus(timer_cpus);
        let arm = |ts, pid, hrtimer, expires| {
            ev(
                ts,
                pid,
                Kind::HrtimerStart {
                    hrtimer,
                    expires,
                    softexpires: expires,
                },
            )
        };
        let expire = |ts, hrtimer| {
            ev(
                ts,
                0,
                Kind::HrtimerExpire {
                    hrtimer,
                    now: ts as i64,
                },
            )
        };
        let waking = |ts, waker, pid, comm, cpu| {
            ev(
                ts,
                waker,
                Kind::Waking {
                    task: task(pid, 4, comm),
                    target_cpu: cpu,
                },
            )
        };
        let idle = task(0, 120, "swapper/1");
        tx.send(batch(
            0,
            vec![
                arm(1_000, 10, 0xb, 50_000_000),
                // Thread 11's timer, moved here.
                expire(1_003_000, 0xa),
                waking(1_003_500, 0, 11, "jl-measure-1", 1),
                expire(50_000_200, 0xb),
                waking(50_000_300, 0, 10, "jl-measure-0", 0),
            ],
        ))
        .unwrap();
        tx.send(batch(
            1,
            vec![
                arm(1_000, 11, 0xa, 1_000_000),
                ev(
                    1_005_000,
                    0,
                    Kind::Switch {
                        prev: idle,
                        next: task(11, 4, "jl-measure-1"),
                    },
                ),
            ],
        ))
        .unwrap();
        j.receive();
        // CPU 0's thread first, 50 ms ahead of CPU 1's.
        let own = j.join(0, &sample(50_000_000, 500));
        assert_eq!(own.irq_latency_ns, Some(200));
        j.join(1, &sample(1_000_000, 6_000))
    }

    #[test]
    fn a_timer_moved_to_another_measured_cpu_is_joined_from_its_trace() {
        let moved = moved_to_a_measured_cpu(vec![0]);
        assert_eq!(moved.irq_latency_ns, Some(3_000));
        assert_eq!(moved.thread_latency_ns, Some(3_000));
        assert_eq!(moved.switch_to_user_ns, Some(1_000));
        assert_eq!(moved_to_a_measured_cpu(Vec::new()).irq_latency_ns, None);
    }
}

//! The recorder under a simulated machine, for `bench/recorder-scale.sh`: how many samples per
//! second one recorder core keeps up with, and its CPU time per sample.
//!
//! One producer thread stands in for `cpus` measuring threads woken every `interval_ns`: every
//! millisecond it pushes the samples that fell due in it into each simulated thread's real
//! ring (the measuring loop's push, its drop counting), with latencies shaped like this
//! project's VM (a body of 3-30 us, one wakeup in a thousand 100-400 us late). The calling
//! thread is the drain side: the real [`Recorder`] draining at its own pace, writing a real
//! latency.hlog. With [`TraceLoad::Compact`] the producer also emits, per wakeup, the one compact
//! trace record of the eBPF back end's design (issue: `--trace` on eBPF): its timer IRQ
//! latency, through a per-CPU queue that the recorder's trace join reads and joins, explaining
//! the late ones. The tracefs back end's reader (about eight events of 125-171 ns each per
//! wakeup, on a thread of its own) is not simulated: its cost is stated in bench/README.md.

use super::{Recorder, SampleTrace, ThreadFeed, TraceJoin};
use crate::format::events::SpikeExplanation;
use crate::format::hlog::{self, HlogWriter};
use crate::measure::clock::{monotonic_ns, thread_cpu_time_ns};
use crate::measure::{Sample, ThreadCounters};
use crate::random::SplitMix64;
use std::collections::VecDeque;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// The trace side of the simulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceLoad {
    /// No `--trace`.
    None,
    /// One compact record per wakeup, joined by the recorder (the eBPF design).
    Compact,
}

/// A simulated machine.
#[derive(Debug, Clone)]
pub struct ScaleConfig {
    /// Simulated measuring threads (one per CPU).
    pub cpus: usize,
    /// Each thread's period, ns.
    pub interval_ns: u64,
    /// How long the producer pushes, ns.
    pub duration_ns: u64,
    /// Each ring's capacity, samples.
    pub ring_size: usize,
    pub trace: TraceLoad,
    /// CPUs to pin the recorder (the calling thread) and the producer to, when given.
    pub recorder_cpu: Option<usize>,
    pub producer_cpu: Option<usize>,
}

/// What the simulation measured.
#[derive(Debug, Clone, Default)]
pub struct ScaleResult {
    /// Samples the producer made (pushed or dropped).
    pub produced: u64,
    /// Samples the recorder recorded (its threads' statistics).
    pub recorded: u64,
    /// Samples that found their ring full.
    pub dropped: u64,
    /// Samples joined with their compact trace record.
    pub joined: u64,
    /// The drain side's CPU time (the calling thread, CLOCK_THREAD_CPUTIME_ID) while the
    /// producer ran, ns: what keeping up costs.
    pub(crate) recorder_cpu_ns: u64,
    /// The recorder's CPU time after the producer ended: the last drain of what was left and
    /// the end-of-run figures (tails, spike periods), ns.
    pub finish_cpu_ns: u64,
    /// From the producer's end to the last drain's end, ns: the backlog left. A recorder that
    /// keeps up leaves at most one round's worth.
    pub backlog_ns: u64,
    /// How far the producer fell behind its schedule at worst, ns: when it is large, the
    /// producer (not the recorder) could not make the rate.
    pub producer_behind_ns: u64,
    /// Drains the recorder made.
    pub drains: u64,
}

impl ScaleResult {
    /// The rate the producer made, samples/s.
    pub fn rate_per_s(&self, duration_ns: u64) -> f64 {
        self.produced as f64 * 1e9 / duration_ns as f64
    }

    /// The drain side's CPU time per sample while the producer ran, ns (a backlog left at
    /// its end is drained after, so this is a lower bound when the backlog is large).
    pub fn cpu_per_sample_ns(&self) -> f64 {
        self.recorder_cpu_ns as f64 / self.produced.max(1) as f64
    }

    /// The share of one core the drain side used while the producer ran, over `duration_ns`.
    pub fn core_share(&self, duration_ns: u64) -> f64 {
        self.recorder_cpu_ns as f64 / duration_ns.max(1) as f64
    }

    /// Kept up: nothing dropped, a backlog of at most `round_ns` at the end, and less than
    /// 90 % of its core used.
    pub fn kept_up(&self, duration_ns: u64, round_ns: u64) -> bool {
        self.dropped == 0 && self.backlog_ns <= round_ns && self.core_share(duration_ns) < 0.9
    }
}

/// The compact trace records of one simulated CPU: (seq, wakeup time, IRQ latency), in order.
type CompactQueue = Arc<Mutex<VecDeque<(u64, u64, i64)>>>;

/// Runs the simulation, writing latency.hlog into `dir` (which must exist).
pub fn run(config: &ScaleConfig, dir: &Path) -> io::Result<ScaleResult> {
    let mut hlog = HlogWriter::create(&dir.join(hlog::FILE_NAME))?;
    hlog.begin(SystemTime::now(), "jitterlab recorder-scale simulation")?;
    let counters: Vec<Arc<ThreadCounters>> = (0..config.cpus)
        .map(|_| Arc::new(ThreadCounters::default()))
        .collect();
    let mut producers = Vec::with_capacity(config.cpus);
    let mut feeds = Vec::with_capacity(config.cpus);
    for (cpu, c) in counters.iter().enumerate() {
        let (p, consumer) = rtrb::RingBuffer::new(config.ring_size);
        producers.push(p);
        feeds.push(ThreadFeed {
            cpu,
            index: cpu,
            deadline_ns: config.interval_ns,
            counters: Arc::clone(c),
            consumer,
            tails: crate::plan::TailPlan {
                interval_ns: config.interval_ns,
                ..Default::default()
            },
            kind: Default::default(),
        });
    }
    let queues: Vec<CompactQueue> = (0..config.cpus).map(|_| CompactQueue::default()).collect();
    // The first due time: 10 ms from now, so that the producer starts on schedule.
    let start_ns = monotonic_ns() + 10_000_000;
    let mut recorder = Recorder::new(feeds, hlog, None, start_ns, 1_000_000_000);
    if config.trace == TraceLoad::Compact {
        let join = CompactJoin {
            queues: queues.clone(),
            pending: vec![VecDeque::new(); config.cpus],
            complete_ns: vec![0; config.cpus],
        };
        recorder = recorder.with_trace(Box::new(join), config.ring_size * 4);
    }
    if let Some(cpu) = config.recorder_cpu {
        crate::measure::sched::pin_current_thread(cpu)?;
    }
    let done = Arc::new(AtomicBool::new(false));
    let behind = Arc::new(AtomicU64::new(0));
    let producer = {
        let (config, done, behind) = (config.clone(), Arc::clone(&done), Arc::clone(&behind));
        let queues = (config.trace == TraceLoad::Compact).then_some(queues);
        let counters = counters.clone();
        std::thread::Builder::new()
            .name("jl-scale-producer".into())
            .spawn(move || {
                if let Some(cpu) = config.producer_cpu {
                    let _ = crate::measure::sched::pin_current_thread(cpu);
                }
                let late = produce(&config, start_ns, producers, &counters, queues.as_deref());
                behind.store(late, Ordering::Relaxed);
                done.store(true, Ordering::Release);
            })?
    };
    let cpu_before = thread_cpu_time_ns();
    let mut drains = 0;
    while !done.load(Ordering::Acquire) {
        std::thread::sleep(recorder.next_drain_in());
        recorder.drain()?;
        drains += 1;
    }
    let recorder_cpu_ns = thread_cpu_time_ns() - cpu_before;
    producer.join().expect("the producer does not panic");
    let produced_until = monotonic_ns();
    recorder.drain()?;
    let backlog_ns = monotonic_ns() - produced_until;
    let end_ns = start_ns + config.duration_ns;
    let (results, error) = recorder.finish(end_ns);
    let finish_cpu_ns = thread_cpu_time_ns() - cpu_before - recorder_cpu_ns;
    if let Some(e) = error {
        return Err(e);
    }
    let dropped: u64 = counters
        .iter()
        .map(|c| c.dropped_records.load(Ordering::Relaxed))
        .sum();
    let recorded: u64 = results.iter().map(|r| r.latency.samples).sum();
    let joined = results
        .iter()
        .filter_map(|r| r.trace.as_ref())
        .map(|t| t.joined)
        .sum();
    Ok(ScaleResult {
        produced: recorded + dropped,
        recorded,
        dropped,
        joined,
        recorder_cpu_ns,
        finish_cpu_ns,
        backlog_ns,
        producer_behind_ns: behind.load(Ordering::Relaxed),
        drains: drains + 1,
    })
}

/// The producer: every millisecond of the run, the samples due in it, for every simulated
/// CPU in turn (and their compact trace records); returns how far behind its schedule it
/// fell at worst, ns.
fn produce(
    config: &ScaleConfig,
    start_ns: u64,
    mut rings: Vec<rtrb::Producer<Sample>>,
    counters: &[Arc<ThreadCounters>],
    queues: Option<&[CompactQueue]>,
) -> u64 {
    const BATCH_NS: u64 = 1_000_000;
    let mut rng = SplitMix64::new(0x5ca1e);
    let mut next_seq = vec![0u64; config.cpus];
    let mut records: Vec<(u64, u64, i64)> = Vec::new();
    let mut worst_behind = 0;
    let mut batch_end = start_ns;
    while batch_end < start_ns + config.duration_ns {
        batch_end = (batch_end + BATCH_NS).min(start_ns + config.duration_ns);
        let now = monotonic_ns();
        if now < batch_end {
            std::thread::sleep(Duration::from_nanos(batch_end - now));
        } else {
            worst_behind = worst_behind.max(now - batch_end);
        }
        for cpu in 0..config.cpus {
            records.clear();
            loop {
                let seq = next_seq[cpu];
                let due = start_ns + seq * config.interval_ns;
                if due >= batch_end {
                    break;
                }
                next_seq[cpu] += 1;
                let latency_ns = vm_like_latency(&mut rng);
                let sample = Sample {
                    seq,
                    expected_ns: due,
                    latency_ns,
                    missed: 0,
                };
                // As the measuring loop does: a full ring drops the sample and counts it.
                if rings[cpu].push(sample).is_err() {
                    counters[cpu]
                        .dropped_records
                        .fetch_add(1, Ordering::Relaxed);
                } else if queues.is_some() {
                    records.push((seq, due + latency_ns as u64, latency_ns / 4));
                }
            }
            if let Some(q) = queues {
                q[cpu]
                    .lock()
                    .expect("not poisoned")
                    .extend(records.drain(..));
            }
        }
    }
    worst_behind
}

/// A latency like this project's VM's: 3-30 us, one in a thousand 100-400 us (late by the
/// deadline of every simulated interval, so spikes are counted and explained).
fn vm_like_latency(rng: &mut SplitMix64) -> i64 {
    let u = rng.uniform();
    if u < 0.001 {
        100_000 + (rng.uniform() * 300_000.0) as i64
    } else {
        3_000 + (rng.uniform() * 27_000.0) as i64
    }
}

/// The recorder's side of compact trace records: each sample is joined with its own record.
struct CompactJoin {
    queues: Vec<CompactQueue>,
    /// Records taken from the queues, per CPU.
    pending: Vec<VecDeque<(u64, u64, i64)>>,
    /// Per CPU: the trace is complete up to here (the last record's wakeup), ns.
    complete_ns: Vec<u64>,
}

impl TraceJoin for CompactJoin {
    fn receive(&mut self) {
        for (cpu, q) in self.queues.iter().enumerate() {
            let mut q = q.lock().expect("not poisoned");
            if let Some(&(_, wake, _)) = q.back() {
                self.complete_ns[cpu] = wake + 1;
            }
            self.pending[cpu].extend(q.drain(..));
        }
    }

    fn complete_until_ns(&self, cpu: usize) -> u64 {
        self.complete_ns[cpu]
    }

    fn join(&mut self, thread: usize, s: &Sample) -> SampleTrace {
        let pending = &mut self.pending[thread];
        while pending.front().is_some_and(|&(seq, _, _)| seq < s.seq) {
            pending.pop_front();
        }
        let Some(&(seq, _, irq)) = pending.front() else {
            return SampleTrace::default();
        };
        if seq != s.seq {
            return SampleTrace::default();
        }
        pending.pop_front();
        let thread_latency = s.latency_ns - irq;
        SampleTrace {
            irq_latency_ns: Some(irq),
            thread_latency_ns: Some(thread_latency),
            explanation: (s.latency_ns > 100_000).then(|| SpikeExplanation {
                time_ns: s.expected_ns,
                cpu: thread,
                due_ns: s.expected_ns,
                latency_ns: s.latency_ns,
                irq_latency_ns: Some(irq),
                thread_latency_ns: Some(thread_latency),
                verdict: "simulated".into(),
                contributors: Vec::new(),
            }),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(cpus: usize, interval_ns: u64, ring_size: usize, trace: TraceLoad) -> ScaleConfig {
        ScaleConfig {
            cpus,
            interval_ns,
            duration_ns: 300_000_000,
            ring_size,
            trace,
            recorder_cpu: None,
            producer_cpu: None,
        }
    }

    /// Every due sample is produced once and recorded once; with the compact trace every one
    /// is joined.
    #[test]
    fn every_sample_is_recorded_and_joined() {
        let dir = tempfile::tempdir().unwrap();
        let r = run(&config(4, 1_000_000, 4096, TraceLoad::Compact), dir.path()).unwrap();
        // 300 ms at 1 ms: 300 due times per CPU.
        assert_eq!(r.produced, 4 * 300);
        assert_eq!((r.recorded, r.dropped), (1200, 0));
        assert_eq!(r.joined, 1200);
        assert!(r.recorder_cpu_ns > 0 && r.drains >= 2);
    }

    /// A ring too small for a drain's worth of samples drops, and the drops are counted: the
    /// bench cannot report a rate kept up with that was not.
    #[test]
    fn a_ring_too_small_drops_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        // 10 us periods: 100 samples per ms per CPU, at least 500 between drains (5 ms apart).
        let r = run(&config(2, 10_000, 16, TraceLoad::None), dir.path()).unwrap();
        assert_eq!(r.produced, 2 * 30_000);
        assert!(r.dropped > 0, "{r:?}");
    }
}

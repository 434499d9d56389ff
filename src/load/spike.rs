//! The spike load: the calibration load and the ground truth of the tests. A SCHED_FIFO thread
//! pinned to one CPU busy-spins for `len` at every `every`, above the measuring threads'
//! priority, so that a measuring thread due during an injection wakes exactly when it ends.
//! Each injection's start and end are read from CLOCK_MONOTONIC and logged to events.jsonl.

use super::spec::Params;
use crate::format::events::Event;
use crate::format::run_record::{LoadEnded, LoadRecord, Throughput};
use crate::measure::Clock;
use crate::measure::clock::monotonic_ns;
use crate::measure::sched::{Policy, explain_refusal_with, pin_current_thread};
use crate::measure::wake::{AbsoluteSleep, Waker};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;

/// The load's name in a spec.
pub(crate) const NAME: &str = "spike";
pub(crate) const PARAMETERS: &[&str] = &["cpu", "every", "len", "prio", "offset"];

/// What `spike:...` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpikeSpec {
    pub cpu: usize,
    pub(crate) every_ns: u64,
    pub(crate) len_ns: u64,
    pub prio: i32,
    /// Time from the run's start to the first injection.
    pub offset_ns: u64,
}

impl SpikeSpec {
    pub fn parse(mut p: Params) -> Result<Self, String> {
        let cpu = p.int("cpu", 0..=4095, Some(0))?.unwrap() as usize;
        let every_ns = p.duration_ns("every", Some(100_000_000))?.unwrap();
        let len_ns = p.duration_ns("len", Some(500_000))?.unwrap();
        let prio = p.int("prio", 1..=99, Some(99))?.unwrap() as i32;
        let offset_ns = p.duration_ns("offset", Some(every_ns))?.unwrap();
        p.finish(PARAMETERS)?;
        if len_ns == 0 || len_ns >= every_ns {
            return Err(format!(
                "load spike: len ({len_ns} ns) must be above 0 and below every ({every_ns} ns), or the CPU is never released"
            ));
        }
        Ok(SpikeSpec {
            cpu,
            every_ns,
            len_ns,
            prio,
            offset_ns,
        })
    }
}

/// One injection as it happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Injection {
    pub index: u64,
    /// When it was scheduled to start.
    pub due_ns: u64,
    /// When the spinning started and ended (CLOCK_MONOTONIC).
    pub start_ns: u64,
    pub end_ns: u64,
}

/// A running spike thread.
pub(crate) struct SpikeLoad {
    pub spec: SpikeSpec,
    injections: rtrb::Consumer<Injection>,
    start: mpsc::Sender<(u64, u64)>,
    join: Option<JoinHandle<()>>,
    pub count: u64,
    /// The spike thread's id.
    pub tid: i32,
}

impl SpikeLoad {
    /// Starts the thread and waits until it is pinned and real-time; it then waits for
    /// [`SpikeLoad::begin`].
    pub(crate) fn start(spec: SpikeSpec, stop: Arc<AtomicBool>) -> Result<Self, String> {
        let (mut producer, consumer) = rtrb::RingBuffer::new(4096);
        let (ready_tx, ready_rx) = mpsc::channel::<Result<i32, String>>();
        let (start_tx, start_rx) = mpsc::channel::<(u64, u64)>();
        let s = spec.clone();
        let join = std::thread::Builder::new()
            .name(format!("jl-spike-{}", spec.cpu))
            .spawn(move || {
                let policy = Policy::Fifo(s.prio);
                let setup = pin_current_thread(s.cpu)
                    .map_err(|e| format!("spike load: cannot pin to CPU {}: {e}", s.cpu))
                    .and_then(|_| {
                        policy
                            .apply_to_current_thread()
                            .map_err(|e| {
                                // --policy governs the measuring threads only: the spike
                                // always spins at SCHED_FIFO, and its own prio= is what can
                                // come within RLIMIT_RTPRIO.
                                let fix = format!(
                                    "give the spike a priority within RLIMIT_RTPRIO (spike:...,prio=N; it has prio={}); --policy does not apply to the spike load",
                                    s.prio
                                );
                                format!(
                                    "spike load: {}",
                                    explain_refusal_with(&policy, s.cpu, &e, &fix)
                                )
                            })
                    });
                let ok = setup.is_ok();
                let _ = ready_tx.send(setup.map(|_| crate::sys::signal::thread_id()));
                if !ok {
                    return;
                }
                let Ok((run_start_ns, end_ns)) = start_rx.recv() else {
                    return;
                };
                inject(&s, run_start_ns, end_ns, &stop, &mut producer);
                // Thread teardown costs ~100 us of CPU; at FIFO 99 it would be one more,
                // unlogged injection.
                let _ = Policy::Other.apply_to_current_thread();
            })
            .map_err(|e| format!("spike load: cannot start its thread: {e}"))?;
        match ready_rx.recv() {
            Ok(Ok(tid)) => Ok(SpikeLoad {
                spec,
                injections: consumer,
                start: start_tx,
                join: Some(join),
                count: 0,
                tid,
            }),
            Ok(Err(message)) => {
                let _ = join.join();
                Err(message)
            }
            Err(_) => Err("spike load: its thread ended during setup".into()),
        }
    }

    /// Starts injecting relative to the run's start; no injection is due at or after `end_ns`.
    pub(crate) fn begin(&self, run_start_ns: u64, end_ns: u64) {
        let _ = self.start.send((run_start_ns, end_ns));
    }

    /// Injections completed since the last call, as events.jsonl lines.
    pub(crate) fn drain_events(&mut self) -> Vec<Event> {
        let mut out = Vec::new();
        while let Ok(i) = self.injections.pop() {
            out.push(Event::SpikeInjection {
                time_ns: i.end_ns,
                cpu: self.spec.cpu,
                index: i.index,
                due_ns: i.due_ns,
                start_ns: i.start_ns,
                end_ns: i.end_ns,
                tid: Some(self.tid),
            });
        }
        self.count += out.len() as u64;
        out
    }

    /// Its run.json record: `text` is the load as given, `duration_ns` the run's length.
    pub(crate) fn record(&self, text: &str, duration_ns: u64) -> LoadRecord {
        let seconds = duration_ns as f64 / 1e9;
        LoadRecord {
            spec: text.to_string(),
            kind: NAME.into(),
            throughput: vec![
                Throughput::new("total", self.count as f64, "injections"),
                Throughput::new(
                    "rate",
                    if seconds > 0.0 {
                        self.count as f64 / seconds
                    } else {
                        0.0
                    },
                    "injections/s",
                ),
            ],
            ended: Some(LoadEnded::Stopped),
            end_reason: None,
            log: None,
        }
    }

    /// Waits for the thread to end (it ends at the end time or the stop flag).
    pub(crate) fn join(&mut self) {
        drop(std::mem::replace(&mut self.start, mpsc::channel().0));
        if let Some(j) = self.join.take() {
            let _ = j.join();
        }
    }
}

fn inject(
    s: &SpikeSpec,
    run_start_ns: u64,
    end_ns: u64,
    stop: &AtomicBool,
    out: &mut rtrb::Producer<Injection>,
) {
    let mut sleeper = AbsoluteSleep {
        clock: Clock::Monotonic,
    };
    for index in 0.. {
        let due_ns = run_start_ns + s.offset_ns + index * s.every_ns;
        // Only whole injections: one cut short by the end would not be a known delay.
        if stop.load(Ordering::Relaxed) {
            return;
        }
        if due_ns + s.len_ns > end_ns {
            // Asleep until the end, not back to the caller at once: it drops the thread to
            // SCHED_OTHER, which on the CPU right after the last spin made the trace show the
            // whole injection at OTHER 0 (the task's priority at its switch-out), and the
            // delay of the wakeup it held not that of a FIFO task (lab check 1c, stop 59:
            // the last injection of `timerfd`, `jl-spike-1 (pid 623, OTHER 0) for 20.32 ms`).
            while monotonic_ns() < end_ns && !stop.load(Ordering::Relaxed) {
                let _ = sleeper.wait(end_ns.min(monotonic_ns() + 100_000_000), 0, stop);
            }
            return;
        }
        // Sleep in slices so that a stop request is seen within 100 ms.
        while monotonic_ns() + 100_000_000 < due_ns {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            let _ = sleeper.wait(monotonic_ns() + 100_000_000, 0, stop);
        }
        if sleeper.wait(due_ns, 0, stop).is_err() {
            return;
        }
        let start_ns = monotonic_ns();
        let mut now = start_ns;
        // A stop cuts the spin short (issue 39, N5: an 8 s spike on every CPU held a SIGINT
        // for 7.2 s, past the promise of a stop served within a second). Such an injection
        // is logged with the end it had: the delay it made is still known.
        while now < start_ns + s.len_ns && !stop.load(Ordering::Relaxed) {
            std::hint::spin_loop();
            now = monotonic_ns();
        }
        let _ = out.push(Injection {
            index,
            due_ns,
            start_ns,
            end_ns: now,
        });
    }
}

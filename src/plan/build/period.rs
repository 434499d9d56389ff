//! The shared builder of a kind measured by its period alone (`format::kind::RunSettings::
//! Period`): its plan from `run`'s options and what its kind's file declares, its loop and its
//! clock. No kind has a file here: such a kind is its file in `format/kind/` and its row of
//! `kinds!`, and this builder is the same for each.

use super::shared::{self, Records, duration_arg};
use crate::error::{Failure, Result};
use crate::format::kind::PeriodThread;
use crate::measure::{Clock, MeasuringLoop};
use crate::plan::measurement::{MeasuredKind, ThreadSlot};
use crate::plan::options::LatencyRunOptions;
use crate::plan::{Measurement, RunKind, RunPlan};

/// The settings of a kind measured by its period: the kind, `--interval`, and what its file
/// declared.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PeriodSpec {
    kind: RunKind,
    interval_ns: u64,
    clock: Clock,
    thread_loop: fn(PeriodThread) -> Box<dyn MeasuringLoop>,
}

/// A run of `kind`, declared by its file with `clock` and `thread_loop`, on `online`: `run`'s
/// shared groups and policy, threads of `--interval` (at least 1 us, as a latency run's), the
/// ring a latency run of that interval would have.
pub(super) fn resolve_period(
    options: &LatencyRunOptions,
    online: &[usize],
    kind: RunKind,
    clock: Clock,
    thread_loop: fn(PeriodThread) -> Box<dyn MeasuringLoop>,
) -> Result<RunPlan> {
    let interval = &options.latency.interval;
    let interval_ns = duration_arg("--interval", interval)?;
    if interval_ns < 1_000 {
        return Err(Failure::usage(format!(
            "--interval {interval}: below 1us; the interval must be at least 1us (e.g. 100us, 1ms)"
        )));
    }
    let shared = shared::resolve(
        &options.shared,
        kind,
        options.latency.policy,
        super::latency::default_ring_size(interval_ns),
        online,
    )?;
    let spec = PeriodSpec {
        kind,
        interval_ns,
        clock,
        thread_loop,
    };
    shared.into_plan(Measurement::of(spec), Records::default())
}

/// A kind measured by its period: each thread's loop as its file declared it, on its period.
impl MeasuredKind for PeriodSpec {
    fn kind(&self) -> RunKind {
        self.kind
    }

    fn interval_ns(&self, _index: usize) -> u64 {
        self.interval_ns
    }

    fn deadline_ns(&self) -> Option<u64> {
        None
    }

    fn clock(&self) -> Clock {
        self.clock
    }

    fn thread_loop(&self, thread: ThreadSlot) -> Box<dyn MeasuringLoop> {
        (self.thread_loop)(PeriodThread {
            interval_ns: thread.interval_ns,
            loops: thread.loops,
        })
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{Sample, ThreadCounters, ThreadEnd};
    use crate::plan::options::LengthOptions;
    use std::sync::atomic::AtomicBool;

    /// A declared loop that pushes what the plan gave it: its period as the due time, its loop
    /// count as the sequence number.
    #[derive(Debug)]
    struct Echo(PeriodThread);

    impl MeasuringLoop for Echo {
        fn run(
            self: Box<Self>,
            _start_ns: u64,
            _end_ns: u64,
            producer: &mut rtrb::Producer<Sample>,
            _counters: &ThreadCounters,
            _stop: &AtomicBool,
        ) -> ThreadEnd {
            let echo = Sample {
                seq: self.0.loops.unwrap_or(0),
                expected_ns: self.0.interval_ns,
                latency_ns: 0,
                missed: 0,
            };
            producer.push(echo).expect("room for one");
            ThreadEnd::Completed
        }
    }

    /// The shared builder makes a plan of the declared kind from `run`'s options: the kind
    /// run.json stores, `--interval` as every thread's period and deadline, the declared clock,
    /// and each thread running the declared loop with its period and `--loops`.
    #[test]
    fn a_kind_measured_by_its_period_is_planned_from_its_declaration() {
        let mut options = LatencyRunOptions::default();
        options.latency.interval = "250us".into();
        options.shared.length = Some(LengthOptions {
            duration: None,
            loops: Some(7),
            scenario: None,
        });
        let kind = RunKind::default();
        let plan = resolve_period(&options, &[0, 1], kind, Clock::Realtime, |t| {
            Box::new(Echo(t))
        })
        .expect("the plan resolves");
        assert_eq!(plan.measurement.kind(), kind);
        assert_eq!(plan.clock(), Clock::Realtime);
        assert_eq!(plan.thread_interval_ns(1), 250_000);
        assert_eq!(plan.thread_deadline_ns(1), 250_000);
        let (mut producer, mut consumer) = rtrb::RingBuffer::<Sample>::new(4);
        let end = plan.thread_loop(1).run(
            0,
            u64::MAX,
            &mut producer,
            &ThreadCounters::default(),
            &AtomicBool::new(false),
        );
        assert!(matches!(end, ThreadEnd::Completed));
        let echo = consumer.pop().expect("the declared loop ran");
        assert_eq!((echo.expected_ns, echo.seq), (250_000, 7));
        // Below 1 us, as a latency run's interval: refused, naming the option.
        options.latency.interval = "500ns".into();
        let Err(refused) = resolve_period(&options, &[0], kind, Clock::Monotonic, |t| {
            Box::new(Echo(t))
        }) else {
            panic!("--interval 500ns planned");
        };
        assert!(
            refused.message.contains("--interval 500ns"),
            "{}",
            refused.message
        );
    }
}

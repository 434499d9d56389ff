//! Starting a measuring thread: set it up (affinity, policy, stack), report readiness, wait at
//! the start gate, then run its kind's loop (the plan's `MeasuringLoop`).

use super::clock::thread_cpu_time_ns;
use super::sample::{Sample, ThreadCounters, ThreadEnd};
use super::sched::{
    Policy, explain_policy_refusal, minimise_timer_slack, pin_current_thread, prefault_stack,
};
use crate::sys::signal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::thread::JoinHandle;

/// Everything one measuring thread needs to know.
#[derive(Debug)]
pub(crate) struct ThreadPlan {
    /// Position among the measuring threads (thread k sleeps interval + k*distance).
    pub index: usize,
    pub cpu: usize,
    /// Pin to `cpu`. Off for SCHED_DEADLINE, which the kernel refuses to pin to one CPU.
    pub(crate) pin: bool,
    pub policy: Policy,
    /// Stack to touch before measuring (0: none).
    pub(crate) prefault_stack_bytes: usize,
    pub(crate) ring_capacity: usize,
    /// The loop it runs (wakeups of a wake method, a noise loop), with what that loop needs.
    pub kind: Box<dyn MeasuringLoop>,
}

/// What a measuring thread runs: one kind's loop with that loop's own settings. Each kind of
/// measuring loop is one type implementing this, in its own file (the wakeups of a wake method:
/// `wakeups.rs`; the noise loop: `noise.rs`; the loop of a kind measured by its period alone:
/// its kind's file, `format/kind/<kind>.rs`), and the plan chooses it (`plan::MeasuredKind`).
/// The thread calls [`MeasuringLoop::run`] once, through the box, before the loop starts: the
/// loop itself is monomorphised inside `run`, with no dispatch per iteration.
pub(crate) trait MeasuringLoop: Send + std::fmt::Debug {
    /// On the thread, pinned and under its policy, after a successful set-up and before it
    /// reports ready (so that the start is not delayed by it): a noise loop calibrates its
    /// counter here.
    fn prepare(&mut self) {}

    /// The loop, from the gate's `start_ns` to `end_ns` (or its own end, a loop count),
    /// pushing its samples into `producer`.
    fn run(
        self: Box<Self>,
        start_ns: u64,
        end_ns: u64,
        producer: &mut rtrb::Producer<Sample>,
        counters: &ThreadCounters,
        stop: &AtomicBool,
    ) -> ThreadEnd;
}

/// The rendezvous of all measuring threads: each finishes its setup, reports it, and waits
/// here; the runner then fixes a common start and end time (or aborts) and opens the gate.
pub(crate) struct StartGate {
    barrier: Barrier,
    start_ns: AtomicU64,
    end_ns: AtomicU64,
    abort: AtomicBool,
}

impl StartGate {
    /// A gate for `threads` measuring threads plus the runner.
    pub(crate) fn new(threads: usize) -> Arc<Self> {
        Arc::new(StartGate {
            barrier: Barrier::new(threads + 1),
            start_ns: AtomicU64::new(0),
            end_ns: AtomicU64::new(u64::MAX),
            abort: AtomicBool::new(false),
        })
    }

    /// Opens the gate: the first wakeups are due at `start_ns`; threads with no loop count
    /// stop before sleeping towards a due time at or after `end_ns`.
    pub(crate) fn open(&self, start_ns: u64, end_ns: u64) {
        self.start_ns.store(start_ns, Ordering::SeqCst);
        self.end_ns.store(end_ns, Ordering::SeqCst);
        self.barrier.wait();
    }

    /// Releases the threads without measuring.
    pub(crate) fn abort(&self) {
        self.abort.store(true, Ordering::SeqCst);
        self.barrier.wait();
    }
}

/// A setup step the kernel refused, with a message that names the cause and the fix.
#[derive(Debug, Clone)]
pub(crate) struct SetupError {
    #[expect(
        dead_code,
        reason = "dead since pub(crate) (issue 41 sweep): read by no code"
    )]
    pub cpu: usize,
    pub message: String,
}

/// A started measuring thread, as seen by the runner and the recorder.
pub(crate) struct MeasuringThread {
    pub index: usize,
    pub cpu: usize,
    pub counters: Arc<ThreadCounters>,
    pub(crate) consumer: rtrb::Consumer<Sample>,
    pub join: JoinHandle<ThreadEnd>,
}

/// Spawns a measuring thread. It sets itself up and sends `Ok(())` or the [`SetupError`] on
/// `ready`, then waits at `gate`.
pub(crate) fn spawn_measuring_thread(
    plan: ThreadPlan,
    gate: Arc<StartGate>,
    stop: Arc<AtomicBool>,
    ready: mpsc::Sender<Result<(), SetupError>>,
) -> std::io::Result<MeasuringThread> {
    install_interrupt_handler()?;
    let (producer, consumer) = rtrb::RingBuffer::new(plan.ring_capacity);
    let counters = Arc::new(ThreadCounters::default());
    let thread_counters = Arc::clone(&counters);
    let (index, cpu) = (plan.index, plan.cpu);
    let join = std::thread::Builder::new()
        .name(format!("jl-measure-{cpu}"))
        .stack_size(plan.prefault_stack_bytes.max(64 * 1024) + 256 * 1024)
        .spawn(move || {
            let end = measure(plan, gate, stop, ready, producer, &thread_counters);
            // After the loop, never in it: what the thread cost, set-up and start-up included,
            // for run.json's `cpu_time` (the joining thread reads it after the join).
            // An IPC method's sender has been joined by now: its time is the run's too.
            let sender_ns = thread_counters.sender_cpu_time_ns.load(Ordering::Relaxed);
            thread_counters
                .cpu_time_ns
                .store(thread_cpu_time_ns() + sender_ns, Ordering::Relaxed);
            end
        })?;
    Ok(MeasuringThread {
        index,
        cpu,
        counters,
        consumer,
        join,
    })
}

fn measure(
    plan: ThreadPlan,
    gate: Arc<StartGate>,
    stop: Arc<AtomicBool>,
    ready: mpsc::Sender<Result<(), SetupError>>,
    mut producer: rtrb::Producer<Sample>,
    counters: &ThreadCounters,
) -> ThreadEnd {
    counters.tid.store(signal::thread_id(), Ordering::Relaxed);
    let setup = set_up(&plan);
    let failed = setup.is_err();
    let mut kind = plan.kind;
    if !failed {
        kind.prepare();
    }
    let _ = ready.send(setup);
    gate.barrier.wait();
    if failed || gate.abort.load(Ordering::SeqCst) {
        return ThreadEnd::Stopped;
    }
    let start_ns = gate.start_ns.load(Ordering::SeqCst);
    let end_ns = gate.end_ns.load(Ordering::SeqCst);
    // The one call through the kind's loop, before it starts: which loop a thread runs is the
    // plan's choice (`plan::MeasuredKind::thread_loop`), not a question asked here.
    kind.run(start_ns, end_ns, &mut producer, counters, &stop)
}

impl MeasuringThread {
    /// Ends the thread's sleep now if the stop flag is set (see [`interrupt`]); does nothing
    /// to a thread that has not started or has ended.
    pub(crate) fn interrupt(&self) {
        if !self.join.is_finished() {
            interrupt(self.counters.tid.load(Ordering::Relaxed));
            interrupt(self.counters.sender_tid.load(Ordering::Relaxed));
            let sender_process = self.counters.sender_process.load(Ordering::Relaxed);
            if sender_process > 0 {
                // A forked sender inherited the handler; it has exited if this fails.
                let _ = crate::sys::process::kill(sender_process, interrupt_signal());
            }
        }
    }
}

/// The signal that ends a measuring thread's sleep when the run stops: the second real-time
/// signal (the first is the POSIX timer's). Its handler does nothing; what matters is that it
/// is installed without SA_RESTART, so the sleep returns EINTR, and every wake method then
/// ends its wait if the stop flag is set (`Waker::wait`). Without it, a stop would wait for
/// the next wakeup: 15 s at `--interval 15s`.
pub(crate) fn interrupt_signal() -> signal::Signal {
    signal::rt_min() + 1
}

/// Sends [`interrupt_signal`] to thread `tid` of this process (0: not started; ignored).
pub(crate) fn interrupt(tid: crate::sys::process::Pid) {
    if tid > 0 {
        // A thread that has exited makes it fail with ESRCH, harmlessly.
        let _ = signal::send_to_thread(tid, interrupt_signal());
    }
}

/// Installs the do-nothing handler of [`interrupt_signal`] (once per process). Its default
/// action would end the process.
fn install_interrupt_handler() -> std::io::Result<()> {
    static INSTALLED: std::sync::OnceLock<Result<(), i32>> = std::sync::OnceLock::new();
    let result = INSTALLED.get_or_init(|| {
        signal::install_interrupting_handler(interrupt_signal())
            .map_err(|e| e.raw_os_error().unwrap_or(0))
    });
    result.map_err(std::io::Error::from_raw_os_error)
}

/// Affinity, timer slack, signal mask, stack, and last the policy: once real-time, the thread
/// must not page-fault or wait on anything but the gate.
fn set_up(plan: &ThreadPlan) -> Result<(), SetupError> {
    let fail = |message: String| SetupError {
        cpu: plan.cpu,
        message,
    };
    if plan.pin {
        pin_current_thread(plan.cpu).map_err(|e| {
            fail(format!("cannot pin the measuring thread to CPU {}: {e}; check that the CPU is online and in this process's cpuset (taskset -p $$)", plan.cpu))
        })?;
    }
    minimise_timer_slack();
    block_termination_signals();
    if plan.prefault_stack_bytes > 0 {
        prefault_stack(plan.prefault_stack_bytes);
    }
    plan.policy
        .apply_to_current_thread()
        .map_err(|e| fail(explain_policy_refusal(&plan.policy, plan.cpu, &e)))
}

/// SIGINT and SIGTERM are handled on the runner's thread; blocking them here keeps their
/// handler from ever interrupting a measured sleep.
fn block_termination_signals() {
    signal::SignalSet::of(&[signal::SIGINT, signal::SIGTERM]).block_in_this_thread();
}

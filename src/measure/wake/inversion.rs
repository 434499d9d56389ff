//! `--wake pi-mutex`: priority inversion, with and without priority inheritance (as rt-tests'
//! pi_stress, and the Mars Pathfinder scenario).
//!
//! Three threads share one CPU and one pthread mutex, per measuring thread:
//!
//! - the **holder** (low priority) takes the mutex half a hold before each due time and keeps
//!   it for `hold_ns` of its own CPU time: a critical section of known work;
//! - the **hog** (medium priority) wakes at each due time and spins for `hog_ns` of wall time;
//! - the measuring thread (high priority) sleeps to each due time and then takes the mutex;
//!   its latency is the clock read after it got the mutex minus the due time.
//!
//! With PTHREAD_PRIO_INHERIT the holder runs at the measuring thread's priority while that
//! thread waits, the hog cannot preempt it, and the latency is bounded by the rest of the hold.
//! With a plain mutex (`--no-pi`) the hog preempts the holder, and the measuring thread waits
//! for the hog's whole run as well: an unbounded priority inversion, bounded here only because
//! the hog stops after `hog_ns`.
//!
//! A wakeup is counted as an **inversion** when its latency is above the hold plus
//! [`INVERSION_MARGIN_NS`] and the hog ran while the holder held the mutex the measuring thread
//! was waiting for (the holder reports both before it unlocks, so the measuring thread reads
//! them as soon as it has the mutex).
//!
//! The measuring thread hands each due time to the holder and the hog as the IPC senders get
//! theirs ([`super::ipc`]): one due time in flight, so the three never disagree about the grid.
//! The holder and the hog are started when the loop starts and joined when it ends, on every
//! path ([`PiMutexWaker`]'s drop); a closing word wakes them from any sleep at once.

use super::driver::{Cycles, Driver};
pub(crate) use super::plans::INVERSION_MARGIN_NS;
pub use super::plans::InversionPlan;
use super::syscall::resume_unless_stopped;
use crate::measure::clock::{Clock, thread_cpu_time_ns};
use crate::measure::sample::{ThreadCounters, ThreadEnd};
use crate::measure::sched::{Policy, minimise_timer_slack, pin_current_thread};
use crate::measure::waker::Waker;
use crate::sys::errno;
use crate::sys::ipc::{RawMutex, futex_wait, futex_wait_until, futex_wake_all};
use crate::sys::timer;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;

/// What the measuring thread and its helpers share.
struct Scenario {
    mutex: RawMutex,
    /// Bumped by the measuring thread for each due time it hands over; the helpers' futex word.
    request_seq: AtomicU32,
    request_due_ns: AtomicU64,
    /// 0 while running, 1 once the helpers are to end: the futex word their sleeps wait on.
    closing: AtomicU32,
    /// Why a helper failed, if one did; it then closes the scenario.
    failure: Mutex<Option<String>>,
    /// The hog's last run: start, and end (below the start while it runs).
    hog_start_ns: AtomicU64,
    hog_end_ns: AtomicU64,
    /// The holder's report on its last hold, written before it unlocks: the due time it held
    /// the mutex for, and how long the hog ran inside the hold, ns.
    held_for_due_ns: AtomicU64,
    hogged_in_hold_ns: AtomicU64,
}

impl Scenario {
    fn closing(&self) -> bool {
        self.closing.load(Acquire) != 0
    }

    fn close(&self, failure: Option<String>) {
        if failure.is_some() {
            *self.failure.lock().unwrap_or_else(|p| p.into_inner()) = failure;
        }
        self.closing.store(1, Release);
        futex_wake_all(&self.closing);
        // Wake helpers waiting for a due time too.
        self.request_seq.fetch_add(1, Release);
        futex_wake_all(&self.request_seq);
    }

    /// A helper's life: for each due time handed over, sleep to `lead_ns` before it, then
    /// `act`; until closed.
    fn helper_loop(&self, clock: Clock, lead_ns: u64, mut act: impl FnMut(u64) -> io::Result<()>) {
        let mut seen = 0u32;
        loop {
            let seq = self.request_seq.load(Acquire);
            if self.closing() {
                return;
            }
            if seq == seen {
                match futex_wait(&self.request_seq, seq) {
                    Ok(()) => {}
                    Err(e) if matches!(e.raw_os_error(), Some(errno::EAGAIN | errno::EINTR)) => {}
                    Err(e) => {
                        return self.close(Some(format!("a helper's futex wait failed: {e}")));
                    }
                }
                continue;
            }
            seen = seq;
            let due = self.request_due_ns.load(Acquire);
            // Sleep on the closing word, so that the end of the run wakes the helper at once.
            let target = due.saturating_sub(lead_ns);
            loop {
                if self.closing() {
                    return;
                }
                match futex_wait_until(&self.closing, 0, clock.id(), target) {
                    Ok(true) => break,
                    Ok(false) => {}
                    Err(e) if e.raw_os_error() == Some(errno::EINTR) => {}
                    Err(e) => return self.close(Some(format!("a helper's sleep failed: {e}"))),
                }
            }
            if let Err(e) = act(due) {
                return self.close(Some(e.to_string()));
            }
        }
    }

    /// The holder's turn for `due`: lock, spend `hold_ns` of CPU, report, unlock.
    fn hold(&self, clock: Clock, due: u64, hold_ns: u64) -> io::Result<()> {
        self.mutex
            .lock()
            .map_err(|e| io::Error::other(format!("the holder's lock failed: {e}")))?;
        let (start, cpu_start) = (clock.now_ns(), thread_cpu_time_ns());
        while thread_cpu_time_ns().saturating_sub(cpu_start) < hold_ns {
            std::hint::spin_loop();
        }
        let end = clock.now_ns();
        // The hog outranks the holder on this CPU: a run that began inside the hold has ended
        // by the time the holder runs again.
        let (hog_start, hog_end) = (
            self.hog_start_ns.load(Acquire),
            self.hog_end_ns.load(Acquire),
        );
        let hogged = if hog_end >= hog_start {
            hog_end.min(end).saturating_sub(hog_start.max(start))
        } else {
            0
        };
        self.hogged_in_hold_ns.store(hogged, Relaxed);
        self.held_for_due_ns.store(due, Release);
        self.mutex
            .unlock()
            .map_err(|e| io::Error::other(format!("the holder's unlock failed: {e}")))
    }

    /// The hog's turn: spin for `hog_ns` of wall time.
    fn hog(&self, clock: Clock, hog_ns: u64) {
        let start = clock.now_ns();
        self.hog_start_ns.store(start, Release);
        let mut now = start;
        while now < start + hog_ns {
            std::hint::spin_loop();
            now = clock.now_ns();
        }
        self.hog_end_ns.store(now, Release);
    }
}

/// The measuring thread's waker: sleep to the due time, then take the mutex.
pub(crate) struct PiMutexWaker<'a> {
    scenario: Arc<Scenario>,
    helpers: Vec<JoinHandle<()>>,
    clock: Clock,
    requests: u32,
    /// The measuring thread holds the mutex from its wakeup until its next wait.
    holding: bool,
    due_ns: u64,
    inversion_above_ns: u64,
    /// Where the inversions are published (None: a lent waker).
    counters: Option<&'a ThreadCounters>,
    inversions: u64,
    worst_inversion_ns: u64,
}

impl<'a> PiMutexWaker<'a> {
    /// Makes the mutex and starts the holder and the hog, set up per `plan`; the error is the
    /// measuring thread's failure message.
    pub(crate) fn start(
        clock: Clock,
        plan: InversionPlan,
        counters: Option<&'a ThreadCounters>,
    ) -> Result<Self, String> {
        let mutex = RawMutex::with_protocol(plan.inherit).map_err(|e| {
            format!("cannot make a pthread mutex with priority inheritance {}: {e}; run jitterlab doctor to check PI futexes, or pass --no-pi", if plan.inherit { "on" } else { "off" })
        })?;
        let scenario = Arc::new(Scenario {
            mutex,
            request_seq: AtomicU32::new(0),
            request_due_ns: AtomicU64::new(0),
            closing: AtomicU32::new(0),
            failure: Mutex::new(None),
            hog_start_ns: AtomicU64::new(0),
            hog_end_ns: AtomicU64::new(0),
            held_for_due_ns: AtomicU64::new(0),
            hogged_in_hold_ns: AtomicU64::new(0),
        });
        let mut waker = PiMutexWaker {
            scenario,
            helpers: Vec::with_capacity(2),
            clock,
            requests: 0,
            holding: false,
            due_ns: 0,
            inversion_above_ns: plan.inversion_above_ns(),
            counters,
            inversions: 0,
            worst_inversion_ns: 0,
        };
        let (hold_ns, hog_ns) = (plan.hold_ns, plan.hog_ns);
        // Dropping the waker on an error joins the helpers already started.
        waker.spawn("holder", plan.cpu, plan.holder, move |s| {
            s.helper_loop(clock, hold_ns / 2, |due| s.hold(clock, due, hold_ns))
        })?;
        waker.spawn("hog", plan.cpu, plan.hog, move |s| {
            s.helper_loop(clock, 0, |_| {
                s.hog(clock, hog_ns);
                Ok(())
            })
        })?;
        Ok(waker)
    }

    fn spawn(
        &mut self,
        role: &'static str,
        cpu: Option<usize>,
        policy: Policy,
        life: impl FnOnce(&Scenario) + Send + 'static,
    ) -> Result<(), String> {
        let (ready_tx, ready_rx) = mpsc::channel();
        let scenario = Arc::clone(&self.scenario);
        let name = match cpu {
            Some(cpu) => format!("jl-{role}-{cpu}"),
            None => format!("jl-{role}"),
        };
        let join = std::thread::Builder::new()
            .name(name)
            .stack_size(128 * 1024)
            .spawn(move || {
                let setup = set_up_helper(role, cpu, policy);
                let ok = setup.is_ok();
                let _ = ready_tx.send(setup);
                if ok {
                    life(&scenario);
                }
            })
            .map_err(|e| format!("cannot start the {role} thread: {e}"))?;
        self.helpers.push(join);
        match ready_rx.recv() {
            Ok(result) => result,
            Err(_) => Err(format!("the {role} thread ended during its setup")),
        }
    }

    /// Releases the mutex, ends the helpers and joins them. Idempotent.
    pub(crate) fn finish(&mut self) {
        if self.holding {
            let _ = self.scenario.mutex.unlock();
            self.holding = false;
        }
        self.scenario.close(None);
        for join in self.helpers.drain(..) {
            let _ = join.join();
        }
    }

    #[cold]
    fn helper_failure(&self) -> io::Error {
        match self
            .scenario
            .failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
        {
            Some(message) => io::Error::other(message),
            None => io::ErrorKind::Interrupted.into(),
        }
    }

    #[cold]
    fn count_inversion(&mut self, latency_ns: u64) {
        self.inversions += 1;
        self.worst_inversion_ns = self.worst_inversion_ns.max(latency_ns);
        if let Some(counters) = self.counters {
            counters.inversions.store(self.inversions, Relaxed);
            counters
                .worst_inversion_ns
                .store(self.worst_inversion_ns, Relaxed);
        }
    }
}

impl Drop for PiMutexWaker<'_> {
    fn drop(&mut self) {
        self.finish();
    }
}

impl Waker for PiMutexWaker<'_> {
    #[inline(always)]
    fn wait(&mut self, due_ns: u64, _interval_ns: u64, stop: &AtomicBool) -> io::Result<()> {
        let scenario = &*self.scenario;
        if self.holding {
            self.holding = false;
            scenario.mutex.unlock()?;
        }
        if scenario.closing() {
            return Err(self.helper_failure());
        }
        self.requests = self.requests.wrapping_add(1);
        scenario.request_due_ns.store(due_ns, Release);
        scenario.request_seq.store(self.requests, Release);
        futex_wake_all(&scenario.request_seq);
        loop {
            match timer::sleep_until(self.clock.id(), due_ns) {
                0 => break,
                errno::EINTR => resume_unless_stopped(stop)?,
                e => return Err(io::Error::from_raw_os_error(e)),
            }
        }
        // Does not return on a signal: the holder releases it within its hold (and the hog's
        // run without inheritance), and a stop is seen after.
        scenario.mutex.lock()?;
        self.holding = true;
        self.due_ns = due_ns;
        Ok(())
    }

    #[inline(always)]
    fn woke(&mut self, latency_ns: i64) {
        let scenario = &*self.scenario;
        if latency_ns > self.inversion_above_ns as i64
            && scenario.held_for_due_ns.load(Acquire) == self.due_ns
            && scenario.hogged_in_hold_ns.load(Relaxed) > 0
        {
            self.count_inversion(latency_ns as u64);
        }
    }
}

/// Pins and schedules a helper; the failure message if it cannot.
fn set_up_helper(role: &str, cpu: Option<usize>, policy: Policy) -> Result<(), String> {
    if let Some(cpu) = cpu {
        pin_current_thread(cpu).map_err(|e| {
            format!("cannot pin the {role} thread to CPU {cpu}: {e}; check that the CPU is online and in this process's cpuset")
        })?;
    }
    minimise_timer_slack();
    policy.apply_to_current_thread().map_err(|e| {
        format!(
            "cannot give the {role} thread {} priority {}: {e}; run as root or grant CAP_SYS_NICE",
            policy.name(),
            policy.priority()
        )
    })
}

/// The driver of `--wake pi-mutex`.
pub(crate) const fn pi_mutex_driver() -> Driver {
    Driver {
        run: run_scenario,
        lend: lend_scenario,
    }
}

fn run_scenario(cycles: Cycles<'_>) -> ThreadEnd {
    let Some(plan) = cycles.inversion else {
        return ThreadEnd::Failed("--wake pi-mutex needs an inversion plan".into());
    };
    let mut waker = match PiMutexWaker::start(cycles.plan.clock, plan, Some(cycles.counters)) {
        Ok(w) => w,
        Err(message) => return ThreadEnd::Failed(message),
    };
    let end = cycles.run(&mut waker);
    waker.finish();
    end
}

/// For tests that drive the loop themselves: helpers left to the scheduler, SCHED_OTHER, with
/// a short hold and no hog run worth the name.
fn lend_scenario(
    clock: Clock,
    _interval_ns: u64,
    with: &mut dyn FnMut(&mut dyn Waker) -> ThreadEnd,
) -> ThreadEnd {
    let plan = InversionPlan {
        cpu: None,
        holder: Policy::Other,
        hog: Policy::Other,
        hold_ns: 10_000,
        hog_ns: 10_000,
        inherit: true,
    };
    match PiMutexWaker::start(clock, plan, None) {
        Ok(mut waker) => with(&mut waker),
        Err(message) => ThreadEnd::Failed(message),
    }
}

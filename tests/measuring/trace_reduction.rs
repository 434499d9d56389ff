//! The BPF back end's in-kernel reduction (bpf/trace.bpf.c, docs/tracing.md "In-kernel
//! reduction") on the real kernel: what it keeps of a wakeup must let user space join every
//! sample with its timer, as the tracefs back end's full trace does, and split it into parts
//! that are never negative.

use crate::common;

use common::*;

/// A wakeup followed by a timer that was already due when its thread armed it. With
/// `clock-nanosleep` (absolute) a wakeup late by nearly a whole number of periods leaves the
/// next due time a few microseconds ahead; the thread arms its timer after that, the interrupt
/// comes as the arming ends and wakes the thread where it runs: it never gives up its CPU
/// between the two wakeups. The reduction decided a wakeup only at a switch-out, so the second
/// expiry took the place of the undecided first, and when the first timer's arming had gone
/// with a stage reduced away its sample had no timer in the trace ("no split"; lab checks 1f
/// and 8: 17 of 1151 and 45-58 of 1500 wakeups; 465 of 74 512 in 3 s at 40 us here, where
/// tracefs joined them all).
///
/// At 40 us this VM's 10-40 us latencies make such wakeups often (2 000 in 3 s), without the
/// events lost that 20 us costs both back ends. At most 3 samples with the defect's mark (or 1 %
/// of the scene, when it is larger), and no more than a quarter of it, may be left unjoined
/// (below); the run must have had such wakeups, been reduced and lost no event (a loss leaves
/// samples unjoined of itself).
#[test]
fn a_wakeup_followed_by_an_already_due_timer_keeps_its_timer_in_the_reduced_trace() {
    let test = "reduced BPF trace, next timer already due";
    if !tracing_available(test) || !bpf_available(test) {
        return;
    }
    let cpu = online_cpus().last().copied().unwrap().to_string();
    let _g = exclusive();
    with_one_retry(test, || {
        let (_dir, out) = temp_out();
        let o = jitterlab(&[
            "run",
            "--wake",
            "clock-nanosleep",
            "--interval",
            "40us",
            "--duration",
            "3s",
            "--cpus",
            &cpu,
            "--samples",
            "--trace",
            "--trace-backend",
            "bpf",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ]);
        if !o.status.success() {
            return Err(format!("the run failed: {}", text(&o)));
        }
        let run = run_json(&out);
        let trace = reduced_bpf_trace(&run)?;
        if trace["events_lost"] != 0 {
            return Err(format!("events lost: {}", trace["events_lost"]));
        }
        let samples = sample_records(&out);
        let wake =
            |s: &jitterlab::format::samplelog::SampleRecord| s.expected_ns as i64 + s.latency_ns;
        // The next due time within 10 us of the wakeup: the thread's own work before arming
        // (recording the sample) takes about that here, so many of these arm a timer already due.
        let close = samples
            .windows(2)
            .filter(|w| (w[1].expected_ns as i64) < wake(&w[0]) + 10_000)
            .count();
        // At least 5: on a quiet host such wakeups are rare (11-13 in 2 s in a full suite here,
        // which refused the scene); before its fix the defect marked most of them.
        if close < 5 {
            return Err(format!(
                "only {close} of {} wakeups had their next due time within 10 us: the scene did not happen",
                samples.len()
            ));
        }
        // The defect's mark: an unjoined sample between two joined ones whose next due time
        // came within 10 us of its wakeup (before the fix, 330 of the 392 lone unjoined
        // samples of a 3 s run here; after it, none in three runs). Runs of unjoined samples
        // are the kernel's, not jitterlab's: wakeups from CPU 1's idle on this VM, for which
        // the BPF programs are not run at all (docs/tracing.md, "Raw BPF records"), so they
        // are counted in the message, not judged.
        let mut marked = Vec::new();
        for (i, w) in samples.windows(3).enumerate() {
            let lone = w[1].irq_latency_ns.is_none()
                && w[0].irq_latency_ns.is_some()
                && w[2].irq_latency_ns.is_some();
            let gap = w[2].expected_ns as i64 - wake(&w[1]);
            if lone && gap < 10_000 {
                marked.push(format!(
                    "sample {} (latency {} ns, next due {gap} ns after its wakeup)",
                    i + 1,
                    w[1].latency_ns
                ));
            }
        }
        let th = &trace["threads"][0];
        // A duration cannot be negative: the switch-to-user of a thread woken while it ran
        // was taken from a later switch to it (-6.5 ms and -128 ms in two of three 3 s runs
        // here before the fix; its unit test: split/tests.rs).
        let switch_to_user_min = th["switch_to_user"]["min_ns"].as_i64().unwrap_or(0);
        if switch_to_user_min < 0 {
            return Err(format!(
                "a negative switch-to-user: {switch_to_user_min} ns ({} samples with one)",
                th["switch_to_user"]["samples"]
            ));
        }
        // A few are this VM's: it drops some scheduler events without counting them as lost
        // (a `sched_switch` never recorded), which leaves a sample unjoined of itself; 1-3 such
        // samples, each about a period late, in 6 of 12 runs of a day with the host's steal at
        // 5-15 %, in the same suites where the tracefs tests passed. Their number grows with
        // the scene's: on a slower day (2026-12-02, mean latency 40-50 us at 1 ms) 10 000-27 700
        // of a run's wakeups had their next due time close and 31-119 were marked (0.2-0.4 %),
        // with the build before stop 63's BPF changes as with the one after. The defect marked
        // most of the scene's wakeups (330 of 392): more than 3 and more than 1 % of the scene,
        // or a quarter of it, fails.
        if marked.len() > 3.max(close / 100) || 4 * marked.len() > close {
            return Err(format!(
                "{} samples without their timer where the next timer was already due ({} unjoined in all, {close} wakeups with the next due time close): {:?}",
                marked.len(),
                th["samples_unmatched"],
                &marked[..marked.len().min(5)]
            ));
        }
        Ok(())
    });
}

/// A late wakeup during which its CPU sees more events than a stage holds (1024): the stage
/// goes to the ring buffer when it is nearly full and its wakeup already late, so nothing is
/// lost and the explanation has its first events (the timer's expiry, whence the IRQ/thread
/// split). Before, the newest records overwrote the oldest: lab check 7 (16 vCPUs under TCG,
/// wakeups 100 ms and more late) lost 3729 events so.
///
/// The scene, with its ground truth: a thread of this test at FIFO 99 on the measured CPU
/// spins 30 ms every 257.3 ms (not a multiple of the 1 ms interval), while another on a second
/// CPU sends it SIGUSR2 without pause: each signal it handles came by an interrupt (the
/// kernel's kick of a running task: a reschedule IPI, two traced events). The measuring thread
/// (FIFO 95) is late by the rest of each spin from its due time, known late 1 ms after it
/// (`--explain-above 1ms`: the records of that first millisecond must fit the stage; at 5 ms
/// the storm's 2 000-3 800 signals a spin filled it before the wakeup was known late, and 242
/// were lost in a 10 s run: docs/tracing.md says so). A spin whose handler ran at
/// least 600 times (1200 events, more than a stage) is judged: the wakeup its end released
/// is explained, with its IRQ latency (its expiry was the stage's first record) and the
/// spinner named as the task that held the CPU for most of the delay; and no event may be
/// lost in the run.
#[test]
fn a_late_wakeup_with_more_events_than_a_stage_holds_loses_none() {
    let test = "reduced BPF trace, a late wakeup with over 1024 events";
    if !tracing_available(test) || !bpf_available(test) || !two_cpus_online(test) {
        return;
    }
    let cpus = online_cpus();
    let (measured, sender) = (*cpus.last().unwrap(), cpus[0]);
    let _g = exclusive();
    with_one_retry(test, || {
        let (_dir, out) = temp_out();
        let storm = storm::Storm::start(measured, sender, 30_000_000, 257_300_000);
        let o = jitterlab(&[
            "run",
            "--wake",
            "clock-nanosleep",
            "--interval",
            "1ms",
            "--duration",
            "3s",
            "--cpus",
            &measured.to_string(),
            "--trace",
            "--trace-backend",
            "bpf",
            "--explain-above",
            "1ms",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ]);
        let spins = storm.stop();
        if !o.status.success() {
            return Err(format!("the run failed: {}", text(&o)));
        }
        let run = run_json(&out);
        let trace = reduced_bpf_trace(&run)?;
        let vectors = trace["events"].as_array().is_some_and(|e| {
            e.iter()
                .any(|e| e.as_str() == Some("irq_vectors:reschedule_entry"))
        });
        if !vectors {
            eprintln!(
                "SKIPPED {test}: the kernel has no irq_vectors:reschedule_entry to trace (the scene's events)"
            );
            return Ok(());
        }
        if trace["events_lost"] != 0 || trace["events_lost_in_stage"] != 0 {
            return Err(format!(
                "events lost: {} (in a stage: {})",
                trace["events_lost"], trace["events_lost_in_stage"]
            ));
        }
        let explained = spike_explanations(&out);
        let (start, end) = run_span(&run);
        let mut judged = 0;
        let mut faults = Vec::new();
        for s in spins
            .iter()
            .filter(|s| s.start_ns > start && s.end_ns < end)
        {
            if s.signals < 600 {
                continue;
            }
            judged += 1;
            // The wakeup the spin's end released: due within the spin (or within the period
            // before it: the thread preempted before its clock read), woken after its end.
            let Some(x) = explained.iter().find(|x| {
                x.cpu == measured
                    && x.due_ns + 1_000_000 > s.start_ns
                    && x.due_ns < s.end_ns
                    && x.due_ns as i64 + x.latency_ns + 2_000_000 >= s.end_ns as i64
            }) else {
                faults.push(format!(
                    "spin {s:?}: no explained wakeup released by its end"
                ));
                continue;
            };
            if x.irq_latency_ns.is_none() {
                faults.push(format!(
                    "spin {s:?}: the wakeup due at {} has no IRQ latency (its expiry was lost)",
                    x.due_ns
                ));
            }
            let held = x
                .contributors
                .iter()
                .filter(|c| c.kind == "task" && c.name == storm::NAME)
                .map(|c| c.duration_ns)
                .sum::<u64>();
            let delay = s.end_ns - x.due_ns.max(s.start_ns);
            if held * 10 < delay * 8 {
                faults.push(format!(
                    "spin {s:?}: {} named for {held} ns of the {delay} ns from the due time to its end: {:?}",
                    storm::NAME,
                    x.contributors
                ));
            }
        }
        if judged < 5 {
            return Err(format!(
                "only {judged} spins within the run had their 600 signals handled (the scene did not happen): {spins:?}"
            ));
        }
        if !faults.is_empty() {
            return Err(format!("{} of {judged} spins: {faults:#?}", faults.len()));
        }
        Ok(())
    });
}

/// run.json's `trace`, when the run was traced by BPF with the in-kernel reduction.
fn reduced_bpf_trace(run: &serde_json::Value) -> Result<&serde_json::Value, String> {
    let trace = &run["trace"];
    match trace["backend"] == "bpf" && trace["reduced"] == true {
        true => Ok(trace),
        false => Err(format!("not a reduced BPF trace: {trace}")),
    }
}

/// run.json's first and last sample times, ns on CLOCK_MONOTONIC.
fn run_span(run: &serde_json::Value) -> (u64, u64) {
    let start = run["start_monotonic_ns"].as_u64().unwrap_or(0);
    let end = start + run["duration_ns"].as_u64().unwrap_or(0);
    (start, end)
}

/// The test's own load: a FIFO 99 spinner on one CPU, and a sender of signals to it on another.
mod storm {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
    use std::thread::JoinHandle;

    pub const NAME: &str = "jl-test-storm";
    static HANDLED: AtomicU64 = AtomicU64::new(0);

    extern "C" fn on_signal(_: libc::c_int) {
        HANDLED.fetch_add(1, Ordering::Relaxed);
    }

    /// One spin: its first and last clock reads (CLOCK_MONOTONIC, ns) and the signals its
    /// thread handled meanwhile.
    #[derive(Debug, Clone, Copy)]
    pub struct Spin {
        pub start_ns: u64,
        pub end_ns: u64,
        pub signals: u64,
    }

    pub struct Storm {
        stop: Arc<AtomicBool>,
        spinner: Option<JoinHandle<Vec<Spin>>>,
        sender: Option<JoinHandle<()>>,
    }

    use crate::common::monotonic_ns as now_ns;

    fn pin(cpu: usize) {
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            assert_eq!(
                libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set),
                0
            );
        }
    }

    impl Storm {
        /// Spins `len_ns` every `every_ns` on `cpu` at SCHED_FIFO 99, signalled from `sender_cpu`.
        pub fn start(cpu: usize, sender_cpu: usize, len_ns: u64, every_ns: u64) -> Storm {
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_signal as *const () as usize;
                sa.sa_flags = libc::SA_RESTART;
                assert_eq!(libc::sigaction(libc::SIGUSR2, &sa, std::ptr::null_mut()), 0);
            }
            let stop = Arc::new(AtomicBool::new(false));
            let spinning = Arc::new(AtomicBool::new(false));
            let tid = Arc::new(AtomicI32::new(0));
            let spinner = {
                let (stop, spinning, tid) = (stop.clone(), spinning.clone(), tid.clone());
                std::thread::spawn(move || {
                    pin(cpu);
                    let name = std::ffi::CString::new(NAME).unwrap();
                    unsafe {
                        libc::prctl(libc::PR_SET_NAME, name.as_ptr());
                        let p = libc::sched_param { sched_priority: 99 };
                        assert_eq!(libc::sched_setscheduler(0, libc::SCHED_FIFO, &p), 0);
                    }
                    tid.store(unsafe { libc::gettid() }, Ordering::SeqCst);
                    let mut spins = Vec::new();
                    let mut next = now_ns() + every_ns;
                    while !stop.load(Ordering::SeqCst) {
                        let now = now_ns();
                        if now < next {
                            std::thread::sleep(std::time::Duration::from_nanos(
                                (next - now).min(20_000_000),
                            ));
                            continue;
                        }
                        let before = HANDLED.load(Ordering::Relaxed);
                        spinning.store(true, Ordering::SeqCst);
                        let start_ns = now_ns();
                        let mut end_ns = start_ns;
                        while end_ns < start_ns + len_ns {
                            end_ns = now_ns();
                        }
                        spinning.store(false, Ordering::SeqCst);
                        let signals = HANDLED.load(Ordering::Relaxed) - before;
                        spins.push(Spin {
                            start_ns,
                            end_ns,
                            signals,
                        });
                        next += every_ns;
                    }
                    spins
                })
            };
            let sender = {
                let (stop, spinning) = (stop.clone(), spinning.clone());
                std::thread::spawn(move || {
                    pin(sender_cpu);
                    let pid = std::process::id() as libc::pid_t;
                    while !stop.load(Ordering::SeqCst) {
                        let t = tid.load(Ordering::SeqCst);
                        if t != 0 && spinning.load(Ordering::SeqCst) {
                            unsafe { libc::syscall(libc::SYS_tgkill, pid, t, libc::SIGUSR2) };
                        } else {
                            std::thread::sleep(std::time::Duration::from_micros(200));
                        }
                    }
                })
            };
            Storm {
                stop,
                spinner: Some(spinner),
                sender: Some(sender),
            }
        }

        /// Stops both threads; the spins done.
        pub fn stop(mut self) -> Vec<Spin> {
            self.stop.store(true, Ordering::SeqCst);
            if let Some(s) = self.sender.take() {
                let _ = s.join();
            }
            self.spinner
                .take()
                .map(|s| s.join().unwrap())
                .unwrap_or_default()
        }
    }

    impl Drop for Storm {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::SeqCst);
            if let Some(s) = self.sender.take() {
                let _ = s.join();
            }
            if let Some(s) = self.spinner.take() {
                let _ = s.join();
            }
        }
    }
}

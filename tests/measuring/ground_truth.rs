//! Ground truth: the spike load injects delays of known size at known times, and the
//! measurement must find each of them where and as large as it was.

use crate::common;

use common::*;
use jitterlab::format::samplelog::{SampleLogReader, SampleRecord};

/// Period of both injectors: not a multiple of the 1 ms interval (211.7 ms = 211 periods and
/// 0.7 of one), so the injections land at ten different phases of the grid in 3 s.
const EVERY: &str = "211.7ms";

/// Keeps both CPUs busy at SCHED_IDLE, below everything the run times: on a VM whose idle CPU
/// halts (no haltpoll cpuidle driver), the host can take milliseconds to run a halted vCPU
/// again while the other vCPU spins. Seen here in a trace: CPU 1 halted, CPU 0 in a 1.5 ms
/// injection, CPU 1's next timer interrupt (an IPC sender's) came 1.5 ms late, 0.2 ms after the
/// injection's end; the sender then stamps late, and up to 9 of a run's 28 injections came out
/// short (0-2 in 9 runs with the CPUs kept busy). A busy vCPU takes its interrupts at once, and
/// a SCHED_IDLE thread in user space yields to a woken real-time thread at that interrupt's
/// return, so the spinners add nothing to what is measured, and remove a disturbance that is
/// the host's, not the kernel's.
const KEEP_CPUS_AWAKE: &str = "cpu:cpus=0-1,policy=idle,workers=2";

/// One run of `wake` with two injectors on CPU 0: 1.5 ms (one period passes unserved) and
/// 2.6 ms (two pass), 105.3 ms apart so they never overlap; `extra` options added.
fn run_method(method: &jitterlab::measure::WakeMethod, extra: &[&str]) -> Result<(), String> {
    let (_base, out) = temp_out();
    let (wake, cpus) = (method.name, wake_cpus(method, "0-1"));
    // An IPC method's sender stamps each wake: on the receiver's CPU it would be held by the
    // injection too and stamp after it (the number is the wake's latency, not the sender's);
    // on the other CPU it stamps on time and the injection shows on the receiver.
    let sender: &[&str] = match method.schedule {
        jitterlab::measure::wake::Schedule::Sender => &["--sender-cpu", "other"],
        _ => &[],
    };
    let run_args = [
        "run",
        "--duration",
        "3s",
        "--cpus",
        cpus,
        "--wake",
        wake,
        "--samples",
        "--quiet",
        "--load",
        &format!("spike:cpu=0,every={EVERY},len=1.5ms,prio=99,offset=211.7ms"),
        "--load",
        &format!("spike:cpu=0,every={EVERY},len=2.6ms,prio=99,offset=106.4ms"),
        "--load",
        KEEP_CPUS_AWAKE,
        "--out",
        out.to_str().unwrap(),
    ];
    let o = jitterlab(&[&run_args[..], sender, extra].concat());
    if !o.status.success() {
        return Err(format!("--wake {wake}: the run failed: {}", text(&o)));
    }
    let wall_after = wall_clock_offsets();
    let injections = spike_injections(&out, 0);
    let log = SampleLogReader::open(&out.join("samples.bin")).unwrap();
    let run = run_json(&out);
    // Injections are timed on CLOCK_MONOTONIC; a method's own clock (e.g. CLOCK_TAI) is moved
    // onto it by the offset between the two starts, which the run took together.
    let start_mono = run["start_monotonic_ns"].as_u64().unwrap() as i64;
    let offset = log.header.start_ns as i64 - start_mono;
    // That offset holds while the wall clock, which TAI and REALTIME follow, is not stepped.
    // When it was (a VM's host agent gained it 5 ms a second here once, in steps; an NTP step
    // on a user's machine), no one offset places these samples: the method is not judged.
    if offset != 0 {
        let moved = wall_after
            .iter()
            .map(|now| now - offset)
            .min_by_key(|d| d.abs())
            .unwrap();
        if moved.abs() > WALL_CLOCK_STEADY_NS {
            eprintln!(
                "SKIPPED ground truth --wake {wake}: the wall clock moved {moved} ns against \
                 CLOCK_MONOTONIC during the run, so its samples cannot be placed on the \
                 injections' clock"
            );
            return Ok(());
        }
    }
    let samples: Vec<SampleRecord> = log
        .map(|s| {
            let mut s = s.unwrap();
            s.expected_ns = (s.expected_ns as i64 - offset) as u64;
            s
        })
        .collect();
    let sender = method.schedule == jitterlab::measure::wake::Schedule::Sender;
    check_every_phase(wake, sender, &injections, &samples, &run)
}

/// How far a wall clock may drift from CLOCK_MONOTONIC over a run before its samples cannot be
/// placed on the injections (a tenth of the size tolerance of `check_every_phase`).
const WALL_CLOCK_STEADY_NS: i64 = 10_000;

/// CLOCK_TAI and CLOCK_REALTIME less CLOCK_MONOTONIC, read now.
fn wall_clock_offsets() -> [i64; 2] {
    let read = |clock| {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes the timespec it is given.
        unsafe { libc::clock_gettime(clock, &mut ts) };
        ts.tv_sec * 1_000_000_000 + ts.tv_nsec
    };
    let mono = read(libc::CLOCK_MONOTONIC);
    let tai = read(libc::CLOCK_TAI) - mono;
    let real = read(libc::CLOCK_REALTIME) - mono;
    [tai, real]
}

/// How many of a run's 28 injections may be over-sized by the machine's noise (see below).
const MAX_NOISY: usize = 3;

/// What every wake method must show: each injection found with its size, the periods it
/// forced counted as missed, no wakeup before its due time, and nothing on the other CPU.
/// `sender`: an IPC method, whose latency runs from its sender's stamp on CPU 1.
fn check_every_phase(
    wake: &str,
    sender: bool,
    injections: &[Injection],
    samples: &[SampleRecord],
    run: &serde_json::Value,
) -> Result<(), String> {
    const INTERVAL: u64 = 1_000_000;
    const TOLERANCE: i64 = 100_000;
    // 14 of 1.5 ms (at 0.2117 s + k * 0.2117 s) and 14 of 2.6 ms (at 0.1064 s + ...) in 3 s.
    if injections.len() != 28 {
        return Err(format!(
            "--wake {wake}: expected 28 whole injections in 3 s, logged {}",
            injections.len()
        ));
    }
    if let Some(early) = samples.iter().find(|s| s.latency_ns < 0) {
        return Err(format!(
            "--wake {wake}: CPU {} woke {} ns before its due time (seq {}): the loop lost the grid",
            early.cpu, -early.latency_ns, early.seq
        ));
    }
    // This machine is a VM with a non-preemptible kernel (preempt=none): a stall of the
    // virtual CPU, or kernel work of another task on CPU 0, between the injection's end and
    // the measuring thread's clock read adds 0.1-0.3 ms to a wakeup now and then (seen on up
    // to 2 of the 28 in a run); with the relative methods a spike that starts between a clock
    // read and the arming of the next sleep adds up to an interval. A stall of both CPUs can
    // also make a CPU 1 wakeup look like the injection by chance. Up to MAX_NOISY such
    // wakeups per run are allowed: a measurement error that over-sizes injections would show
    // on most of them. (Noise only ever adds latency: a wakeup measured shorter than its
    // injection fails at once, as does any error of the other kinds. Except for an IPC
    // method: its latency runs from the sender's stamp, and CPU 1's own noise (a kernel
    // section of another task, a vCPU stall) can hold the sender past the due time, so that
    // the receiver's latency is shorter than the injection by that much; such a wakeup is
    // one of the MAX_NOISY.)
    let mut noise: Vec<String> = Vec::new();
    let mut forced_missed = 0;
    for (k, inj) in injections.iter().enumerate() {
        let len = inj.end_ns - inj.start_ns;
        // The wakeup the injection held: the first CPU 0 sample due before it ended that had
        // not run when it started. One due shortly before the start whose thread had not yet
        // run is held for the whole spin too: that is correct.
        let Some(hit) = samples.iter().find(|s| {
            s.cpu == 0
                && s.expected_ns < inj.end_ns
                && s.expected_ns as i64 + s.latency_ns >= inj.start_ns as i64
        }) else {
            let missing =
                format!("--wake {wake}: injection {k} ({len} ns): no CPU 0 wakeup was held by it");
            if !sender {
                return Err(missing);
            }
            // An IPC receiver's latency runs from its sender's stamp, and the search above
            // takes the stamp to be the due time: a sender on CPU 1 held for longer than the
            // injection (a stall of CPU 1, the host's steal: seen on 1-2 of 28 in runs of a
            // day when the host took 5-15 % of each CPU) stamps so late that no wakeup seems
            // to span the injection. One of the MAX_NOISY; a method that does not see the
            // injections at all misses every one of them.
            noise.push(format!(
                "{missing} (a sender late by more than the injection?)"
            ));
            continue;
        };
        let want = (inj.end_ns - hit.expected_ns) as i64;
        let sized = format!(
            "--wake {wake}: injection {k} ({len} ns): latency {} ns, but it ended {want} ns after the due time",
            hit.latency_ns
        );
        let late_sender = hit.latency_ns < want - TOLERANCE;
        if late_sender {
            if !sender {
                return Err(sized);
            }
            noise.push(format!("{sized} (a late sender?)"));
        }
        if hit.latency_ns > want + TOLERANCE {
            noise.push(sized);
        }
        // The missed periods of an IPC wakeup count from its sender's stamp: a late sender's
        // are not all the injection's.
        let forced = match late_sender {
            true => 0,
            false => (want - TOLERANCE).max(0) as u64 / INTERVAL,
        };
        if (hit.missed as u64) < forced {
            return Err(format!(
                "--wake {wake}: injection {k} ({len} ns): a wakeup {} ns late counted {} missed periods, at least {forced} passed",
                hit.latency_ns, hit.missed
            ));
        }
        forced_missed += forced;
        // CPU 1 does not see it: its samples due inside the injection are not held to its end.
        for s in samples
            .iter()
            .filter(|s| s.cpu == 1 && (inj.start_ns..inj.end_ns).contains(&s.expected_ns))
        {
            let would_be = (inj.end_ns - s.expected_ns) as i64;
            if would_be > 300_000 && (s.latency_ns - would_be).abs() <= TOLERANCE {
                noise.push(format!(
                    "--wake {wake}: injection {k} on CPU 0 showed on CPU 1 (latency {} ns)",
                    s.latency_ns
                ));
            }
        }
    }
    if noise.len() > MAX_NOISY {
        return Err(noise.join("; "));
    }
    let missed0 = thread(run, 0)["missed_periods"].as_u64().unwrap();
    if missed0 < forced_missed {
        return Err(format!(
            "--wake {wake}: CPU 0 counted {missed0} missed periods; the injections forced {forced_missed}"
        ));
    }
    Ok(())
}

/// Every wake method against injections of one and two periods at every phase of the grid.
/// (It replaces a run of one 1.5 ms injector at a single phase with clock-nanosleep only.)
#[test]
fn every_wake_method_finds_injections_at_every_phase() {
    if !realtime_on_two_cpus("ground truth per wake method") {
        return;
    }
    let _g = exclusive();
    for method in wake_methods_here("ground truth", 1_000_000) {
        with_one_retry(&format!("ground truth --wake {}", method.name), || {
            run_method(method, &[])
        });
    }
}

/// The IPC methods with each sender in a process of its own (`--ipc-between processes`): the
/// same injections, found at their size on the receiver.
#[test]
fn ipc_methods_with_sender_processes_find_injections_at_every_phase() {
    if !realtime_on_two_cpus("ground truth of sender processes") {
        return;
    }
    let _g = exclusive();
    for method in wake_methods_here("ground truth", 1_000_000)
        .into_iter()
        .filter(|m| m.schedule == jitterlab::measure::wake::Schedule::Sender)
    {
        with_one_retry(
            &format!(
                "ground truth --wake {} --ipc-between processes",
                method.name
            ),
            || run_method(method, &["--ipc-between", "processes"]),
        );
    }
}

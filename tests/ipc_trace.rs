//! `run --trace` with an IPC wake method: the explanation follows the chain from the sender's
//! timer to the receiver running, against the spike load's ground truth. A spike on the
//! receiver's CPU keeps the woken receiver off it (and is named); a spike on the sender's CPU
//! makes the sender late (and is named as such, not blamed on the receiver, whose latency from
//! the sender's stamp stays small).

mod common;

use common::*;
use jitterlab::record::samplelog::{SampleLogReader, SampleRecord};
use jitterlab::results::events::{Event, SpikeExplanation, read_events};

/// The receiver on CPU 0, its sender on CPU 1.
const RECEIVER_CPU: usize = 0;
const SENDER_CPU: usize = 1;

struct Injection {
    start_ns: u64,
    end_ns: u64,
}

struct IpcRun {
    injections: Vec<Injection>,
    samples: Vec<SampleRecord>,
    explanations: Vec<SpikeExplanation>,
    run: serde_json::Value,
    _dir: tempfile::TempDir,
}

/// 3 s of `--wake mq` on CPU 0 with the sender on CPU 1, traced, with 1.5 ms FIFO 99
/// injections of the spike load on `spike_cpu` every 200 ms, each starting 300 us before a due
/// time.
fn ipc_run_with_spikes(spike_cpu: usize) -> IpcRun {
    let (dir, out) = temp_out();
    let spike = format!("spike:cpu={spike_cpu},every=200ms,len=1.5ms,prio=99,offset=199.7ms");
    let o = jitterlab(&[
        "run",
        "--wake",
        "mq",
        "--duration",
        "3s",
        "--cpus",
        &RECEIVER_CPU.to_string(),
        "--sender-cpu",
        "other",
        "--samples",
        "--trace",
        "--explain-above",
        "300us",
        "--quiet",
        "--load",
        &spike,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let events = read_events(&out.join("events.jsonl")).unwrap();
    let injections = events
        .iter()
        .filter_map(|e| match e {
            Event::SpikeInjection {
                cpu,
                start_ns,
                end_ns,
                ..
            } if *cpu == spike_cpu => Some(Injection {
                start_ns: *start_ns,
                end_ns: *end_ns,
            }),
            _ => None,
        })
        .collect();
    let explanations = events
        .into_iter()
        .filter_map(|e| match e {
            Event::SpikeExplained(x) => Some(x),
            _ => None,
        })
        .collect();
    let samples = SampleLogReader::open(&out.join("samples.bin"))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    IpcRun {
        injections,
        samples,
        explanations,
        run: run_json(&out),
        _dir: dir,
    }
}

/// The sample due inside injection `inj`, and its explanation.
fn hit<'a>(
    r: &'a IpcRun,
    k: usize,
    inj: &Injection,
) -> Result<(&'a SampleRecord, &'a SpikeExplanation), String> {
    let sample = r
        .samples
        .iter()
        .find(|s| (inj.start_ns..inj.end_ns).contains(&s.expected_ns))
        .ok_or_else(|| format!("injection {k}: no sample due inside it"))?;
    let x = r
        .explanations
        .iter()
        .find(|x| x.due_ns == sample.expected_ns)
        .ok_or_else(|| format!("injection {k}: the sample due inside it was not explained"))?;
    Ok((sample, x))
}

/// What run.json says of the pair and the trace: the sender's tid, the sender's CPU traced,
/// and (nearly) every sample joined with its sender's timer.
fn check_run_json(r: &IpcRun) -> Result<(), String> {
    let ipc = &r.run["plan"]["ipc"];
    let tids = ipc["sender_tids"].as_array().cloned().unwrap_or_default();
    if tids.len() != 1 || tids[0].as_i64().unwrap_or(0) <= 0 {
        return Err(format!("run.json plan.ipc.sender_tids: {ipc}"));
    }
    let t = &r.run["trace"]["threads"][0];
    let joined = t["samples_joined"].as_u64().unwrap_or(0);
    let total = joined
        + t["samples_unmatched"].as_u64().unwrap_or(0)
        + t["samples_trace_late"].as_u64().unwrap_or(0);
    if total == 0 || joined * 100 < total * 99 {
        return Err(format!(
            "only {joined} of {total} samples joined with their sender's timer: {t}"
        ));
    }
    Ok(())
}

fn check_receiver_kept_off(r: &IpcRun) -> Result<(), String> {
    if r.injections.len() != 14 {
        return Err(format!(
            "expected 14 injections, got {}",
            r.injections.len()
        ));
    }
    for (k, inj) in r.injections.iter().enumerate() {
        let (sample, x) = hit(r, k, inj)?;
        // The sender stamps and wakes on time; the receiver waits for the rest of the spike.
        let remaining = (inj.end_ns - sample.expected_ns) as i64;
        if (sample.latency_ns - remaining).abs() > 100_000 {
            return Err(format!(
                "injection {k}: latency {} ns, but the spike ended {remaining} ns after the due time",
                sample.latency_ns
            ));
        }
        if !x.verdict.starts_with("receiver kept off the CPU") {
            return Err(format!("injection {k}: verdict '{}'", x.verdict));
        }
        let top = &x.contributors[0];
        if top.name != "jl-spike-0"
            || top.policy.as_deref() != Some("FIFO")
            || top.prio != Some(99)
            || (top.duration_ns as i64 - remaining).abs() > 100_000
        {
            return Err(format!(
                "injection {k}: expected jl-spike-0 (FIFO 99) keeping CPU 0 ~{remaining} ns, got {top:?}"
            ));
        }
    }
    check_run_json(r)
}

fn check_sender_late(r: &IpcRun) -> Result<(), String> {
    if r.injections.len() != 14 {
        return Err(format!(
            "expected 14 injections, got {}",
            r.injections.len()
        ));
    }
    for (k, inj) in r.injections.iter().enumerate() {
        let (sample, x) = hit(r, k, inj)?;
        let remaining = (inj.end_ns - sample.expected_ns) as i64;
        // The receiver's latency starts at the sender's stamp, after the spike: small.
        if sample.latency_ns > 200_000 {
            return Err(format!(
                "injection {k}: receiver latency {} ns; the sender's delay is not in it",
                sample.latency_ns
            ));
        }
        if !x.verdict.starts_with("sender late") || !x.verdict.contains("sender on CPU 1") {
            return Err(format!("injection {k}: verdict '{}'", x.verdict));
        }
        let top = &x.contributors[0];
        if top.name != "jl-spike-1"
            || top.policy.as_deref() != Some("FIFO")
            || top.prio != Some(99)
            || (top.duration_ns as i64 - remaining).abs() > 100_000
        {
            return Err(format!(
                "injection {k}: expected jl-spike-1 (FIFO 99) delaying the sender ~{remaining} ns, got {top:?}"
            ));
        }
        // The sender's timer itself came on time: the spike did not block the interrupt.
        if !x.irq_latency_ns.is_some_and(|i| (0..200_000).contains(&i)) {
            return Err(format!(
                "injection {k}: the sender's timer IRQ latency {:?}",
                x.irq_latency_ns
            ));
        }
    }
    check_run_json(r)
}

fn two_cpus(test: &str) -> bool {
    if !tracing_available(test) {
        return false;
    }
    if !online_cpus().contains(&SENDER_CPU) {
        eprintln!("SKIPPED {test}: needs CPUs 0 and 1");
        return false;
    }
    true
}

#[test]
fn a_spike_on_the_receivers_cpu_keeps_it_off_the_cpu() {
    let test = "ipc trace: receiver kept off";
    if !two_cpus(test) {
        return;
    }
    let _g = exclusive();
    with_one_retry(test, || {
        check_receiver_kept_off(&ipc_run_with_spikes(RECEIVER_CPU))
    });
}

#[test]
fn a_spike_on_the_senders_cpu_makes_the_sender_late() {
    let test = "ipc trace: sender late";
    if !two_cpus(test) {
        return;
    }
    let _g = exclusive();
    with_one_retry(test, || check_sender_late(&ipc_run_with_spikes(SENDER_CPU)));
}

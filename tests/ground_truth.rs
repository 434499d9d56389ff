//! Ground truth: the spike load injects delays of known size at known times, and the
//! measurement must find each of them where and as large as it was.

mod common;

use common::*;
use jitterlab::record::samplelog::{SampleLogReader, SampleRecord};
use jitterlab::results::events::{Event, read_events};

struct Injection {
    start_ns: u64,
    end_ns: u64,
}

/// One run with 1.5 ms injections every 200 ms on CPU 0 at a 1 ms interval. The first
/// injection starts 300 us before a due time (offset 199.7 ms), so each one holds a due time
/// and keeps its thread from the CPU for about 1.2 ms: more than a period.
fn run_with_spikes() -> (
    Vec<Injection>,
    Vec<SampleRecord>,
    serde_json::Value,
    tempfile::TempDir,
) {
    let (base, out) = temp_out();
    let o = jitterlab(&[
        "run",
        "--duration",
        "3s",
        "--cpus",
        "0-1",
        "--samples",
        "--quiet",
        "--load",
        "spike:cpu=0,every=200ms,len=1.5ms,prio=99,offset=199.7ms",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let injections = read_events(&out.join("events.jsonl"))
        .unwrap()
        .into_iter()
        .filter_map(|e| match e {
            Event::SpikeInjection {
                cpu: 0,
                start_ns,
                end_ns,
                ..
            } => Some(Injection { start_ns, end_ns }),
            _ => None,
        })
        .collect();
    let samples = SampleLogReader::open(&out.join("samples.bin"))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    (injections, samples, run_json(&out), base)
}

/// Checks one run; returns the first violation, if any.
fn check(
    injections: &[Injection],
    samples: &[SampleRecord],
    run: &serde_json::Value,
) -> Result<(), String> {
    if injections.len() != 14 {
        return Err(format!(
            "expected 14 whole injections in 3 s (at 0.1997 s + k * 0.2 s, k < 14), logged {}",
            injections.len()
        ));
    }
    for (k, inj) in injections.iter().enumerate() {
        let len = inj.end_ns - inj.start_ns;
        if !(1_500_000..1_600_000).contains(&len) {
            return Err(format!("injection {k} lasted {len} ns, not 1.5 ms"));
        }
        let inside: Vec<&SampleRecord> = samples
            .iter()
            .filter(|s| s.cpu == 0 && (inj.start_ns..inj.end_ns).contains(&s.expected_ns))
            .collect();
        let Some(hit) = inside.first() else {
            return Err(format!("injection {k}: no CPU 0 sample is due inside it"));
        };
        let want = (inj.end_ns - hit.expected_ns) as i64;
        if (hit.latency_ns - want).abs() > 100_000 {
            return Err(format!(
                "injection {k}: latency {} ns, but the injection ended {want} ns after the due time",
                hit.latency_ns
            ));
        }
        if hit.missed < 1 {
            return Err(format!(
                "injection {k}: a {} ns late wakeup at 1 ms counted no missed period",
                hit.latency_ns
            ));
        }
        // CPU 1 does not see it: its samples due inside the injection are not held to its end.
        for s in samples
            .iter()
            .filter(|s| s.cpu == 1 && (inj.start_ns..inj.end_ns).contains(&s.expected_ns))
        {
            let would_be = (inj.end_ns - s.expected_ns) as i64;
            if would_be > 300_000 && (s.latency_ns - would_be).abs() <= 100_000 {
                return Err(format!(
                    "injection {k} on CPU 0 showed on CPU 1 (latency {} ns)",
                    s.latency_ns
                ));
            }
        }
    }
    let missed0 = thread(run, 0)["missed_periods"].as_u64().unwrap();
    if missed0 < injections.len() as u64 {
        return Err(format!(
            "CPU 0 counted {missed0} missed periods for {} injections",
            injections.len()
        ));
    }
    Ok(())
}

#[test]
fn every_spike_injection_is_found_with_its_size() {
    if !realtime_available("ground truth") {
        return;
    }
    if online_cpus().len() < 2 {
        eprintln!("SKIPPED ground truth: needs two CPUs");
        return;
    }
    let _g = exclusive();
    with_one_retry("ground truth", || {
        let (injections, samples, run, _dir) = run_with_spikes();
        check(&injections, &samples, &run)
    });
}

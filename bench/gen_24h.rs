//! Writes a synthetic long result directory for bench/report-speed.sh: 2 CPUs woken every 1 ms
//! for 24 h (or LENGTH: whole hours, or a duration such as `7d`), one interval histogram per
//! CPU per second (86 400 per CPU per day), with a distribution shaped like this VM's: a
//! log-normal body around 13 us, interrupt-sized tails, rare long preemptions, and a 4 ms stall
//! of both vCPUs every 4.7 s. Four scenario phases, a quarter of the run each, change the tail,
//! as a load would. SEED (default 24) changes every sample, for two runs to compare.
//!
//! cargo run --release --example gen-24h -- OUT_DIR [LENGTH] [SEED]

use jitterlab::format::run_record::{LoadRecord, Throughput};
use jitterlab::random::SplitMix64;
use jitterlab::results::synthetic::{SyntheticPhase, SyntheticRun, write_run};
use std::path::PathBuf;

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

fn main() {
    let mut args = std::env::args().skip(1);
    let out = PathBuf::from(args.next().expect("usage: gen-24h OUT_DIR [LENGTH] [SEED]"));
    // Whole hours (the first form of this argument), or a duration with its unit.
    let duration_ns = args
        .next()
        .map_or(24 * 3600 * S, |l| match l.parse::<u64>() {
            Ok(hours) => hours * 3600 * S,
            Err(_) => jitterlab::units::parse_duration_ns(&l)
                .expect("LENGTH is whole hours or a duration such as 7d"),
        });
    let seed: u64 = args
        .next()
        .map_or(24, |s| s.parse().expect("SEED is a whole number"));
    let quarter = duration_ns / 4;
    let phase = |i: u64, label: &str, loads: &[&str]| SyntheticPhase {
        label: label.into(),
        start_offset_ns: i * quarter,
        end_offset_ns: (i + 1) * quarter,
        loads: loads.iter().map(|l| l.to_string()).collect(),
    };
    let run = SyntheticRun {
        cpus: vec![0, 1],
        interval_ns: MS,
        log_interval_ns: S,
        duration_ns,
        phases: vec![
            phase(0, "idle", &[]),
            phase(1, "cpu load", &["stress:cpu=2"]),
            phase(2, "io load", &["stress:io=2"]),
            phase(3, "idle again", &[]),
        ],
        loads: vec![LoadRecord {
            spec: "stress:cpu=2".into(),
            kind: "stress".into(),
            throughput: vec![Throughput::new("rate", 1234.5, "bogo-ops/s")],
            ended: None,
            end_reason: None,
            log: None,
        }],
        warnings: vec!["synthetic run made by bench/gen_24h.rs, not a measurement".into()],
        seed,
    };
    // Tail probabilities per phase: idle, cpu load, io load, idle again.
    let irq_tail = [2e-4, 2e-3, 6e-4, 2e-4];
    let long_tail = [5e-7, 5e-6, 2e-6, 5e-7];
    let started = std::time::Instant::now();
    let record = write_run(&out, &run, |cpu, t, rng: &mut SplitMix64| {
        let p = (t / quarter).min(3) as usize;
        let mut ns = 5_000.0 + (8_000f64.ln() + 0.35 * rng.normal()).exp();
        if cpu == 1 {
            ns += 1_500.0;
        }
        let u = rng.uniform();
        if u < long_tail[p] {
            ns += 200_000.0 + rng.uniform() * 1_800_000.0;
        } else if u < irq_tail[p] {
            ns += 20_000.0 + rng.uniform() * 100_000.0;
        }
        // Both vCPUs stall for 4 ms every 4.7 s: the due times inside wake at its end.
        let stall_at = t / (4_700 * MS) * (4_700 * MS) + 1_234 * MS;
        if (stall_at..stall_at + 4 * MS).contains(&t) {
            ns += (stall_at + 4 * MS - t) as f64;
        }
        ns as i64
    })
    .expect("the result directory can be written");
    let samples: u64 = record.threads.iter().map(|t| t.latency.samples).sum();
    eprintln!(
        "wrote {} ({} samples, {} intervals per CPU) in {:.1} s",
        out.display(),
        samples,
        duration_ns / S,
        started.elapsed().as_secs_f64()
    );
}

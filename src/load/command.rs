//! `jitterlab load SPEC... [--duration D]`: the generators alone, without measuring (FirmTimers
//! `generate_load`). Without --duration, hackbench does one exchange and prints `Time:` like
//! rt-tests' hackbench; the other generators run until Ctrl-C.

use super::LoadSpec;
use super::generator::{GeneratorSpec, Kind};
use super::hackbench::HackbenchSpec;
use super::memory::{self, Scheduled};
use super::supervisor::{PlannedLoad, Setup, Supervisor};
use crate::cli::LoadArgs;
use crate::cpulist::online_cpus;
use crate::error::{Failure, Result};
use crate::measure::clock::monotonic_ns;
use crate::results::run_record::{LoadRecord, load_line};
use crate::units::parse_duration_ns;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Checks a parsed load against this system: `cpus=` resolvable (with the measured CPUs for
/// `housekeeping`), disk, program. Errors are bad input. Memory is checked for all the loads
/// that run at the same time together ([`memory::check_together`]).
pub fn check_on_system(
    load: &LoadSpec,
    measured: &[usize],
    online: &[usize],
) -> std::result::Result<(), String> {
    match load {
        LoadSpec::Spike(_) => Ok(()),
        LoadSpec::Generator(g) => check_generator(g, measured, online),
    }
}

/// [`check_on_system`] for a generator.
pub fn check_generator(
    g: &GeneratorSpec,
    measured: &[usize],
    online: &[usize],
) -> std::result::Result<(), String> {
    g.common
        .cpus
        .resolve(online, measured)
        .map_err(|e| format!("load '{}': {e}", g.text))?;
    g.check_system()
}

pub fn run(args: &LoadArgs) -> Result<i32> {
    let online = online_cpus().map_err(Failure::system)?;
    let mut loads = Vec::new();
    for text in &args.specs {
        let g = match LoadSpec::parse(text).map_err(Failure::usage)? {
            LoadSpec::Generator(g) => g,
            LoadSpec::Spike(_) => {
                return Err(Failure::usage(format!(
                    "'{text}': the spike load is a calibration load for measuring threads; use it with jitterlab run --load"
                )));
            }
        };
        if let Some(c) = g.listed_cpus().iter().find(|c| !online.contains(c)) {
            return Err(Failure::usage(format!(
                "load '{text}': CPU {c} is not online; this system's online CPUs are {}",
                crate::cpulist::format_cpu_list(&online)
            )));
        }
        check_generator(&g, &[], &online).map_err(Failure::usage)?;
        loads.push(g);
    }
    // They all run at the same time.
    let scheduled: Vec<Scheduled> = loads
        .iter()
        .map(|g| Scheduled {
            spec: g,
            origin: String::new(),
            window: None,
        })
        .collect();
    memory::check_together(&scheduled).map_err(Failure::usage)?;
    let duration_ns = args
        .duration
        .as_deref()
        .map(|d| {
            parse_duration_ns(d).ok().filter(|n| *n > 0).ok_or_else(|| {
                Failure::usage(format!(
                    "--duration {d}: expected a duration above zero with a unit (e.g. 30s, 10m)"
                ))
            })
        })
        .transpose()?;

    let stop = Arc::new(AtomicBool::new(false));
    let interrupted = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ =
            signal_hook::flag::register_conditional_shutdown(signal, 130, Arc::clone(&interrupted));
        let _ = signal_hook::flag::register(signal, Arc::clone(&interrupted));
    }
    let once = duration_ns.is_none();
    for g in loads.iter().filter(|_| once && !args.json) {
        if let Kind::Hackbench(h) = &g.kind {
            let cpus = g.common.cpus.resolve(&online, &[]).unwrap_or_default();
            println!("{}", h.banner(g.workers(&cpus)));
        }
    }
    let setup = Setup {
        loads: loads
            .iter()
            .map(|g| PlannedLoad {
                spec: g.clone(),
                phase: None,
            })
            .collect(),
        online,
        once,
        ..Setup::default()
    };
    let supervisor = Supervisor::start(setup, Arc::clone(&stop))?;
    let start = monotonic_ns();
    supervisor.begin(start);
    if once && loads.iter().any(|g| !matches!(g.kind, Kind::Hackbench(_))) {
        eprintln!("jitterlab load: running until Ctrl-C (give --duration to stop by itself)");
    }
    loop {
        std::thread::sleep(Duration::from_millis(10));
        let elapsed = monotonic_ns() - start;
        if interrupted.load(Ordering::SeqCst)
            || stop.load(Ordering::SeqCst)
            || supervisor.all_ended()
            || duration_ns.is_some_and(|d| elapsed >= d)
        {
            break;
        }
    }
    let outcome = supervisor.finish();
    for w in &outcome.warnings {
        eprintln!("jitterlab load: warning: {w}");
    }
    let records: Vec<LoadRecord> = outcome.loads.iter().map(|l| l.record()).collect();
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&records).expect("load records serialise")
        );
    } else {
        for l in &outcome.loads {
            if once && let Kind::Hackbench(_) = l.spec.kind {
                match HackbenchSpec::last_time_s(&l.values) {
                    Some(t) => println!("Time: {t:.3}"),
                    None => println!("Time: - (the exchange did not complete)"),
                }
            }
            println!("{}", load_line(&l.record()));
        }
    }
    if let Some(f) = outcome.failure {
        return Err(Failure::run(f));
    }
    Ok(0)
}

//! `jitterlab load SPEC... [--duration D]`: the generators alone, without measuring (FirmTimers
//! `generate_load`). Without --duration, hackbench does one exchange and prints `Time:` like
//! rt-tests' hackbench; the other generators run until Ctrl-C.

use crate::cli::LoadArgs;
use crate::cpulist::online_cpus;
use crate::error::{Failure, Result};
use crate::format::run_record::{LoadRecord, load_line, no_value_warnings};
use crate::load::LoadSpec;
use crate::load::generator::GeneratorSpec;
use crate::load::memory_guard::{self, Scheduled};
use crate::load::supervisor::Outcome;
use crate::load::supervisor::{PlannedLoad, Setup, Supervisor};
use crate::measure::clock::monotonic_ns;
use crate::measure::sched::DrainPriority;
use crate::plan::drain::{self, Contention};
use crate::units::parse_duration_ns;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

pub fn run(args: &LoadArgs) -> Result<i32> {
    let online = online_cpus().map_err(Failure::system)?;
    let loads = parse_alone(&args.specs, &online)?;
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
    // Set by SIGINT/SIGTERM since `commands::dispatch` installed the handlers, so also by
    // one that came while the loads were being parsed; a second one exits (130).
    let interrupted = crate::session::signals::catch()?;
    let once = duration_ns.is_none();
    for g in loads.iter().filter(|_| once && !args.json) {
        let cpus = g
            .common
            .cpus
            .resolve(&online, &[], None)
            .unwrap_or_default();
        if let Some(banner) = g.generator.once_banner(g.workers(&cpus)) {
            crate::stdout::line(&banner)?;
        }
    }
    let outcome = run_alone(&loads, online, duration_ns, once, &interrupted, &stop)?;
    let records: Vec<LoadRecord> = outcome.loads.iter().map(|l| l.record()).collect();
    for w in outcome
        .warnings
        .iter()
        .cloned()
        .chain(records.iter().flat_map(no_value_warnings))
    {
        eprintln!("jitterlab load: warning: {w}");
    }
    if args.json {
        crate::stdout::line(
            &serde_json::to_string_pretty(&records).expect("load records serialise"),
        )?;
    } else {
        for l in &outcome.loads {
            if once && let Some(result) = l.spec.generator.once_result(&l.values) {
                crate::stdout::line(&result)?;
            }
            crate::stdout::line(&load_line(&l.record()))?;
        }
    }
    if let Some(f) = outcome.failure {
        return Err(Failure::run(f));
    }
    Ok(0)
}

/// Runs `loads` together, alone (no measuring, no result directory), until `duration_ns` has
/// passed, they have all ended, or `interrupted` or `stop` is set. Shared by `jitterlab load`
/// and `jitterlab sweep --no-measure`, whose caller owns the signal handling.
pub(crate) fn run_alone(
    loads: &[GeneratorSpec],
    online: Vec<usize>,
    duration_ns: Option<u64>,
    once: bool,
    interrupted: &AtomicBool,
    stop: &Arc<AtomicBool>,
) -> Result<Outcome> {
    // jitterlab's own threads (this one, which sees the stop request, and the supervisor,
    // which stops the loads) run ahead of every real-time load beside them (plan/drain.rs).
    let priority = own_priority(loads, &online)?;
    let (_priority, refused) = DrainPriority::enter(priority);
    if let Some(message) = refused {
        eprintln!("jitterlab load: warning: {message}");
    }
    let setup = Setup {
        priority,
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
    let supervisor = Supervisor::start(setup, Arc::clone(stop))?;
    let start = monotonic_ns();
    supervisor.begin(start);
    if once
        && loads
            .iter()
            .any(|g| !g.generator.ends_when_run_once() && g.common.loops.is_none())
    {
        eprintln!("jitterlab load: running until Ctrl-C (give --duration to stop by itself)");
    }
    loop {
        std::thread::sleep(Duration::from_millis(10));
        // Standalone loads have no result directory, so no events.jsonl: the supervisor's
        // events are let go (its warnings come back in the outcome).
        drop(supervisor.drain_events());
        let elapsed = monotonic_ns() - start;
        if interrupted.load(Ordering::SeqCst)
            || stop.load(Ordering::SeqCst)
            || supervisor.all_ended()
            || duration_ns.is_some_and(|d| elapsed >= d)
        {
            break;
        }
    }
    Ok(supervisor.finish().0)
}

/// The loads of `texts`, to run alone: built-in generators only (the spike load needs
/// measuring threads), on online CPUs, checked against this system (exit 2).
pub(crate) fn parse_alone(texts: &[String], online: &[usize]) -> Result<Vec<GeneratorSpec>> {
    let mut loads = Vec::new();
    for text in texts {
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
                crate::cpulist::format_cpu_list(online)
            )));
        }
        g.check_on_system(&[], online, None)
            .map_err(Failure::usage)?;
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
    memory_guard::check_together(&scheduled).map_err(Failure::usage)?;
    crate::load::task_guard::check_together(&scheduled, online).map_err(Failure::usage)?;
    own_priority(&loads, online)?;
    Ok(loads)
}

/// The SCHED_FIFO priority of jitterlab's own threads beside `loads` (None: normal); exit 2
/// when the loads would leave them no CPU (plan/drain.rs).
fn own_priority(loads: &[GeneratorSpec], online: &[usize]) -> Result<Option<i32>> {
    let own = crate::plan::build::own_cpus(None, online);
    drain::alone(&Contention::of_loads_alone(loads, &own, online))
}

//! `jitterlab timerlat [hist] [rtla timerlat hist's options]`: rtla's command line (`options.rs`),
//! printed as `rtla timerlat hist` prints it (`hist.rs`), measured by one of two engines
//! (`--jitterlab-engine`, else chosen by what tracefs lists; stderr says which and why):
//! - the kernel's timerlat tracer where there is one (`kernel.rs`, trace/timerlat), as rtla
//!   measures: its IRQ and Thr samples;
//! - elsewhere jitterlab's own engine, as a `jitterlab run` (one pinned thread per CPU waking
//!   every `-p` us with clock_nanosleep, at rtla's default SCHED_FIFO 95): the Thr column is the
//!   wakeup latency each thread measures, the IRQ column the timer IRQ latency of jitterlab's
//!   trace (`--jitterlab-trace`), printed as rtla prints a column that is off without it.
//!
//! The run's result directory is named on stderr. docs/timerlat.md is the user's page.

pub mod hist;
pub(crate) mod kernel;
pub mod options;

use crate::error::{Failure, Result};
use crate::plan::options::{LatencyRunOptions, LengthOptions};
use hist::{Column, CpuHist, Layout};
use options::TimerlatOptions;

const HELP: &str = "\
jitterlab timerlat: `rtla timerlat hist`'s command line and output, measured by jitterlab
Usage: jitterlab timerlat [hist] [options]

  -c/--cpus LIST          measure these CPUs (default: every online CPU)
  -H/--house-keeping LIST jitterlab's recorder and trace reader on these CPUs
  -d/--duration TIME      seconds, or with s, m, h, d (default: until Ctrl-C)
  -p/--period US          timer period in us (default 1000)
  -P/--priority o:0|r:N|f:N  policy and priority (default f:95)
  -b/--bucket-size N      histogram bucket size (default 1)
  -E/--entries N          histogram entries (default 256)
  -n/--nano               figures in ns
  --no-irq --no-thread --no-header --no-summary --no-index --with-zeros   as rtla
  --dma-latency US        hold /dev/cpu_dma_latency at US
  -u -k -D --no-aa        accepted, no effect (the kernel's threads, or jitterlab's own)
  --jitterlab-engine kernel|own   the kernel's timerlat tracer, or jitterlab's own threads
                          (default: the kernel's where tracefs lists it; stderr says which)
  --jitterlab-trace       own threads: fill the IRQ columns from jitterlab's trace (the default
                          wherever tracefs is usable; without it the table is as with --no-irq)
  --jitterlab-no-trace    own threads: no trace, no IRQ columns (as --no-irq)
  --jitterlab-out DIR     the jitterlab result directory (default: a new one, named on stderr)

Refused with the reason (exit 2): -a -i -T -s -t -e --filter --trigger -C -U --dump-tasks
--warm-up --trace-buffer-size --deepest-idle-state --on-threshold --on-end, -P d:..., top.
See docs/timerlat.md for what each column holds.
";

/// Runs rtla timerlat's command line `args`; returns the exit code.
pub fn run(args: &[String]) -> Result<i32> {
    let o = options::parse(args)?;
    if o.help {
        crate::stdout::write(HELP)?;
        return Ok(0);
    }
    use crate::trace::timerlat::{Choice, choose};
    let layout = layout(&o);
    let asked = o.engine;
    let found = match asked {
        Some(crate::trace::timerlat::Engine::Own) => Err(String::new()),
        _ => crate::trace::tracefs::find(),
    };
    match choose(asked, found).map_err(Failure::system)? {
        Choice::Kernel(root) => {
            if o.jitterlab_trace {
                eprintln!(
                    "jitterlab: --jitterlab-trace has no effect with the kernel's timerlat tracer: its IRQ column is the tracer's own"
                );
            }
            return kernel::run(&o, &root, &layout);
        }
        Choice::Own(Some(why)) => {
            eprintln!("jitterlab: measuring with jitterlab's own threads: {why}")
        }
        Choice::Own(None) => {
            eprintln!("jitterlab: measuring with jitterlab's own threads (--jitterlab-engine own)")
        }
    }
    let o = with_own_trace(o, crate::trace::tracefs::find().map(|_| ()));
    let plan = plan(&o)?;
    let outcome = crate::session::run(&plan, true, std::env::args().collect())?;
    let layout = Layout {
        no_irq: o.no_irq || !o.jitterlab_trace,
        ..layout
    };
    let cpus: Vec<usize> = outcome.record.threads.iter().map(|t| t.cpu).collect();
    let hists = histograms(&outcome.dir.path, &cpus, &layout)
        .map_err(|e| Failure::run(format!("cannot read the run's samples: {e}")))?;
    let seconds = outcome.record.duration_ns.unwrap_or(0) / 1_000_000_000;
    crate::stdout::write(&hist::render(&hists, &layout, seconds))?;
    for t in outcome
        .record
        .threads
        .iter()
        .filter(|t| t.dropped_records > 0)
    {
        eprintln!(
            "jitterlab: warning: CPU {}: {} samples dropped (the recorder fell behind); the table leaves them out",
            t.cpu, t.dropped_records
        );
    }
    Ok(super::dropin::finish(&outcome))
}

/// The table as the options ask: IRQ and Thr columns unless `--no-irq` or `--no-thread` (the
/// kernel's tracer has both; the own engine's IRQ columns need its trace, `with_own_trace`).
fn layout(o: &options::TimerlatOptions) -> Layout {
    Layout {
        no_irq: o.no_irq,
        no_thread: o.no_thread,
        no_header: o.no_header,
        no_summary: o.no_summary,
        no_index: o.no_index,
        with_zeros: o.with_zeros,
        nano: o.nano,
        bucket_size: o.bucket_size,
        entries: o.entries,
    }
}

/// Whether jitterlab's own engine traces its threads, which fills rtla's IRQ columns: asked
/// with `--jitterlab-trace`; by default wherever tracefs is usable (`tracefs`: Ok, or why
/// not), so that a parser written for rtla finds `IRQ-000`; not with `--no-irq` (nothing to
/// fill) or `--jitterlab-no-trace`. Stderr says which, and why when the IRQ columns are left
/// out.
fn with_own_trace(
    mut o: options::TimerlatOptions,
    tracefs: std::result::Result<(), String>,
) -> options::TimerlatOptions {
    if o.jitterlab_trace || o.no_irq {
        return o;
    }
    if o.jitterlab_no_trace {
        eprintln!(
            "jitterlab timerlat: --jitterlab-no-trace: no IRQ columns (they come from jitterlab's trace); the table is printed as rtla prints it with --no-irq"
        );
        return o;
    }
    match tracefs {
        Ok(()) => {
            o.jitterlab_trace = true;
            eprintln!(
                "jitterlab timerlat: the IRQ columns are the timer IRQ latency from jitterlab's trace (on wherever tracefs is usable; --jitterlab-no-trace turns it off)"
            );
        }
        Err(why) => eprintln!(
            "jitterlab timerlat: the IRQ columns need jitterlab's trace, and tracefs is not usable here ({why}); the table is printed as rtla prints it with --no-irq"
        ),
    }
    o
}

/// The `jitterlab run` plan of the same measurement: its option groups set here and built by
/// `plan::build` as `run`'s are.
pub fn plan(o: &TimerlatOptions) -> Result<crate::plan::RunPlan> {
    let online = crate::cpulist::online_cpus().map_err(Failure::system)?;
    let policy = crate::measure::PolicyKind::named(o.policy.0)
        .ok_or_else(|| Failure::usage(format!("timerlat: -P: no policy {}", o.policy.0)))?;
    let mut r = LatencyRunOptions::default();
    r.records.samples = true;
    r.shared.cpus.cpus = Some(
        o.cpus
            .clone()
            .unwrap_or_else(|| crate::cpulist::format_cpu_list(&online)),
    );
    r.shared.cpus.priority = Some(o.policy.1);
    r.shared.cpus.pm_qos = o.dma_latency_us.map_or("off".into(), |us| us.to_string());
    r.shared.cpus.housekeeping = o.housekeeping.clone();
    r.shared.length = Some(LengthOptions {
        duration: Some(o.duration_s.map_or("3650d".into(), |s| format!("{s}s"))),
        ..LengthOptions::default()
    });
    r.shared.output.out = o.jitterlab_out.clone();
    r.shared.trace.trace = o.jitterlab_trace;
    r.latency.policy = policy;
    r.latency.interval = format!("{}us", o.period_us);
    r.latency.distance = "0us".into();
    crate::plan::build::latency(&r, &online)
        .map_err(|f| Failure {
            code: f.code,
            message: format!("timerlat: {}", f.message),
        })
        .map(crate::commands::dropin::as_dropin)
}

/// Every CPU's columns from the samples of the run in `run_dir`: Thr the wakeup latency, IRQ the timer IRQ
/// latency where the trace has it; each in the output's unit (truncated, as rtla divides), a
/// latency below zero (a clock step) counted as 0.
pub(crate) fn histograms(
    run_dir: &std::path::Path,
    cpus: &[usize],
    l: &Layout,
) -> std::result::Result<Vec<CpuHist>, String> {
    let unit = if l.nano { 1 } else { 1000 };
    let mut hists: Vec<CpuHist> = cpus
        .iter()
        .map(|&cpu| CpuHist {
            cpu,
            irq: Column::new(l.entries),
            thread: Column::new(l.entries),
        })
        .collect();
    let mut reader = super::dropin::sample_log(run_dir)?;
    for record in reader.by_ref() {
        let r = record.map_err(|e| e.to_string())?;
        let Some(h) = hists.iter_mut().find(|h| h.cpu == r.cpu as usize) else {
            continue;
        };
        h.thread
            .add(r.latency_ns.max(0) as u64 / unit, l.bucket_size);
        if let Some(irq) = r.irq_latency_ns {
            h.irq.add(irq.max(0) as u64 / unit, l.bucket_size);
        }
    }
    if let Some(d) = reader.damage() {
        eprintln!("jitterlab: warning: {d}");
    }
    Ok(hists)
}

#[cfg(test)]
mod tests {
    use super::options::{TimerlatOptions, parse};
    use super::*;

    fn parsed(line: &str) -> TimerlatOptions {
        let args: Vec<String> = line.split_whitespace().map(String::from).collect();
        parse(&args).unwrap()
    }

    /// Issue 42: the own engine prints rtla's IRQ columns by default wherever it can trace;
    /// where it cannot, or when told not to, the table is as rtla's with --no-irq.
    #[test]
    fn the_own_engine_traces_by_default_wherever_tracefs_is_usable() {
        let usable = || Ok(());
        let unusable = || Err("tracefs is not mounted".to_string());
        assert!(with_own_trace(parsed("hist"), usable()).jitterlab_trace);
        assert!(!with_own_trace(parsed("hist"), unusable()).jitterlab_trace);
        assert!(!with_own_trace(parsed("hist --jitterlab-no-trace"), usable()).jitterlab_trace);
        assert!(!with_own_trace(parsed("hist --no-irq"), usable()).jitterlab_trace);
        // Asked: traced, whatever tracefs said (the run refuses then, naming why).
        assert!(with_own_trace(parsed("hist --jitterlab-trace"), unusable()).jitterlab_trace);
        let both: Vec<String> = ["--jitterlab-trace", "--jitterlab-no-trace"]
            .map(String::from)
            .to_vec();
        assert!(parse(&both).unwrap_err().message.contains("give one"));
        // The table then has both columns of each CPU, as rtla's default.
        let o = with_own_trace(parsed("hist"), usable());
        assert!(!layout(&o).no_irq && o.jitterlab_trace);
        // The plan follows: the run is traced.
        let o = with_own_trace(parsed("hist -c 0 -d 1"), usable());
        assert!(plan(&o).unwrap().trace);
    }

    /// Issue 42: where the kernel's timerlat tracer is (the lab's RT guest, captured in
    /// tests/data/timerlat), the default command line prints rtla's IRQ columns beside Thr:
    /// a parser written for rtla finds `IRQ-000` and `IRQ-001`, with the tracer's counts.
    #[test]
    fn the_kernel_engine_prints_the_irq_columns_by_default() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/timerlat/rt-6.1-capture.trace"
        );
        let text = std::fs::read_to_string(path).unwrap();
        let l = layout(&parsed("hist"));
        let t = kernel::Tally::of_text(&text, &[0, 1], &l);
        let out = hist::render(&t.hists, &l, 1);
        let header = out
            .lines()
            .find(|l| l.starts_with("Index"))
            .unwrap_or_else(|| panic!("{out}"));
        assert_eq!(
            header.split_whitespace().collect::<Vec<_>>(),
            ["Index", "IRQ-000", "Thr-000", "IRQ-001", "Thr-001"],
            "{out}"
        );
        let irq_samples = text
            .lines()
            .filter(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                !l.starts_with('#') && w.len() >= 4 && w[w.len() - 4] == "irq"
            })
            .count() as u64;
        let count: u64 = out
            .lines()
            .find(|l| l.starts_with("count:"))
            .unwrap()
            .split_whitespace()
            .skip(1)
            .step_by(2)
            .map(|v| v.parse::<u64>().unwrap())
            .sum();
        assert_eq!(count, irq_samples, "{out}");
    }
}

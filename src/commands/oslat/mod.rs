//! `jitterlab oslat [oslat's options]`, also run when the binary is called through a link
//! named `oslat`: rt-tests 2.40 oslat's command line (`options.rs`, with the refused options and
//! why), measured as a `jitterlab noise` run (the same plan resolution, session and result
//! directory), and printed as oslat prints it (`text.rs`; `json.rs`: the `--json` file), from
//! figures computed by oslat's rules from the loop's exact counts and every gap of 1 us or
//! more (`figures.rs`), so that the parsers written for oslat read it unchanged. The run's
//! jitterlab result directory is named on stderr. docs/oslat.md is the user's page.

pub mod figures;
mod help;
pub mod json;
pub mod options;
pub mod text;

use crate::error::{Failure, Result};
use crate::format::run_record::RunRecord;
use crate::plan::RunPlan;
use crate::plan::options::{LengthOptions, NoiseRunOptions};
use figures::{LoopCounts, OslatFigures};
use options::OslatOptions;
use std::path::Path;
use std::time::SystemTime;

/// The noise threshold of an oslat run: every pass of 1 us or more (oslat's buckets 2 and up)
/// must be a recorded gap, so the threshold is under 1 us; a gap the loop records under 1 us
/// is placed in bucket 1 by its length, like the passes it does not record.
pub(crate) const THRESHOLD_NS: u64 = 999;

/// Runs oslat's command line `args` (the words after `oslat`); returns the exit code.
pub fn run(args: &[String]) -> Result<i32> {
    let o = options::parse(args)?;
    if o.help {
        crate::stdout::write(&format!("{}{}", text::version_line(), help::TEXT))?;
        return Ok(0);
    }
    if o.version {
        crate::stdout::write(&text::version_line())?;
        return Ok(0);
    }
    // Before anything is measured or made (issue 39 R13), and before any text: with
    // `--json=-` the text goes to standard error (L6-g).
    let json_out = o
        .json
        .as_deref()
        .map(|p| super::dropin::claim_output("oslat", "--json", p, super::dropin::Dash::Stdout))
        .transpose()?;
    crate::stdout::write(&text::version_line())?;
    let online = crate::cpulist::online_cpus().map_err(Failure::system)?;
    let cpus = measured_cpus(&o, &online)?;
    let throttling = super::noise::read_rt_throttling();
    let plan = plan(&o, &cpus, throttling)?;
    super::noise::warn_of_throttling(&plan, throttling);
    set_main_cpu(o.main_cpu)?;
    if o.rtprio.is_some() && cpus.contains(&0) {
        crate::stdout::write(text::FIFO_ON_CPU0)?;
    }
    if !o.quiet {
        crate::stdout::write(&text::settings(&text::Settings {
            duration_s: o.duration_s,
            rtprio: o.rtprio,
            cpu_list: o.cpu_list.clone().unwrap_or_else(|| "all".into()),
            main_cpu: o.main_cpu,
        }))?;
        crate::stdout::line("Test starts...")?;
    }
    let start = SystemTime::now();
    let outcome = crate::session::run(&plan, true, std::env::args().collect())?;
    let end = SystemTime::now();
    if !o.quiet {
        crate::stdout::line("Test completed.\n")?;
    }
    let threads = read_figures(&outcome.dir.path, &outcome.record, &o)
        .map_err(|e| Failure::run(format!("cannot read the run's gaps: {e}")))?;
    crate::stdout::write(&text::summary(&threads, o.zero_omit))?;
    if let Some(out) = &json_out {
        let header = crate::commands::rt_json::Header::of_this_run("oslat", args, (start, end));
        out.write_bytes(json::render(&header, &threads).as_bytes())?;
    }
    for t in threads.iter().filter(|t| t.missing > 0) {
        eprintln!(
            "jitterlab: warning: CPU {}: {} gaps of 1 us or more dropped (the recorder fell behind); they are in no bucket above",
            t.cpu, t.missing
        );
    }
    Ok(super::dropin::finish(&outcome))
}

/// `-c` (every online CPU without it, as oslat's "all"), each online.
pub(crate) fn measured_cpus(o: &OslatOptions, online: &[usize]) -> Result<Vec<usize>> {
    use crate::cpulist::{format_cpu_list, parse_cpu_list};
    let Some(text) = &o.cpu_list else {
        return Ok(online.to_vec());
    };
    let cpus = parse_cpu_list(text).map_err(|e| Failure::usage(format!("oslat: -c: {e}")))?;
    if let Some(c) = cpus.iter().find(|c| !online.contains(c)) {
        return Err(Failure::usage(format!(
            "oslat: -c {text}: CPU {c} is not online; this system's online CPUs are {}",
            format_cpu_list(online)
        )));
    }
    Ok(cpus)
}

/// The `jitterlab noise` plan of the same measurement, its option groups set here and built
/// by `plan::build` as `noise`'s are: the CPUs, SCHED_FIFO at `-f` or SCHED_OTHER, `-D`, every gap kept, PM QoS left
/// alone (oslat does not touch it).
pub(crate) fn plan(
    o: &OslatOptions,
    cpus: &[usize],
    throttling: Option<super::noise::RtThrottling>,
) -> Result<RunPlan> {
    let mut r = NoiseRunOptions::default();
    r.shared.cpus.pm_qos = "off".into();
    r.samples = true;
    r.shared.cpus.cpus = Some(crate::cpulist::format_cpu_list(cpus));
    r.shared.length = Some(LengthOptions {
        duration: Some(format!("{}s", o.duration_s)),
        ..LengthOptions::default()
    });
    r.shared.output.out = o.jitterlab_out.clone();
    r.noise.threshold = format!("{THRESHOLD_NS}ns");
    if let Some(p) = o.rtprio {
        r.noise.policy = crate::measure::PolicyKind::Fifo;
        r.shared.cpus.priority = Some(p);
    }
    let online = crate::plan::build::online()?;
    crate::plan::build::noise(&r, throttling, &online)
        .map_err(|f| Failure {
            code: f.code,
            message: format!("oslat: {}", f.message),
        })
        .map(super::dropin::as_dropin)
}

/// `-C`: the main thread (and so the recorder and drain it starts) on that CPU, as oslat
/// places its main thread (CPU 0 by default).
fn set_main_cpu(cpu: usize) -> Result<()> {
    crate::sys::sched::set_affinity(&[cpu]).map_err(|e| {
        Failure::usage(format!(
            "oslat: -C {cpu}: cannot run the main thread on CPU {cpu}: {e}"
        ))
    })
}

/// Each measured CPU's figures, in the order of run.json's threads.
fn read_figures(
    run_dir: &Path,
    record: &RunRecord,
    o: &OslatOptions,
) -> std::result::Result<Vec<OslatFigures>, String> {
    let counts: Vec<LoopCounts> = record
        .threads
        .iter()
        .map(|t| {
            let noise = t.noise.as_ref();
            LoopCounts {
                cpu: t.cpu,
                passes: noise.map_or(0, |n| n.iterations),
                measured_ns: noise.map_or(0, |n| n.measured_ns),
                ticks_per_s: noise
                    .and_then(|n| n.clock)
                    .map_or(0, |c| c.ticks_per_s.round() as u64),
                dropped: t.dropped_records,
            }
        })
        .collect();
    let (threads, damage) = figures::from_sample_log(run_dir, &counts, o.buckets)?;
    if let Some(d) = damage {
        eprintln!("jitterlab: warning: {d}");
    }
    Ok(threads)
}

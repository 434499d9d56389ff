//! `jitterlab cyclictest [cyclictest's options]`, also run when the binary is called through a
//! link named `cyclictest`: rt-tests 2.x cyclictest's command line (`options.rs`, with the
//! refused options and why in `refused.rs`), measured by jitterlab's engine in a session like
//! `jitterlab run`'s (`plan.rs`), and printed as cyclictest prints it (`text.rs`: the status
//! lines and the `-h` histogram; `json.rs`: the `--json` file), from figures computed by
//! cyclictest's rules from every sample (`figures.rs`), so that the parsers written for
//! cyclictest read it unchanged. The run's jitterlab result directory is named on stderr.
//! docs/cyclictest.md is the user's page.

pub(crate) mod breaktrace;
pub mod figures;
mod help;
pub mod json;
pub mod options;
pub mod plan;
pub mod refused;
pub mod text;

use super::dropin::{Dash, claim_output};
use crate::error::{Failure, Result};
use crate::results::dir::OutputFile;
use crate::session::{Progress, Session, SessionOptions};
use figures::ThreadFigures;
use options::CyclictestOptions;
use plan::Layout;
use std::io::IsTerminal;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};
use text::ThreadId;

/// Runs cyclictest's command line `args` (the words after `cyclictest`); returns the exit code.
pub fn run(args: &[String]) -> Result<i32> {
    let o = options::parse(args)?;
    if o.help {
        crate::stdout::write(help::TEXT)?;
        return Ok(0);
    }
    let online = crate::cpulist::online_cpus().map_err(Failure::system)?;
    let (layout, plan) = plan::plan(&o, &online)?;
    // Every check before anything is measured or made (issue 39 R13, R14).
    let outputs = Outputs::claim(&o)?;
    let main_cpus = o
        .main_affinity
        .as_deref()
        .map(|list| main_affinity(list, &online))
        .transpose()?;
    for note in &layout.notes {
        eprintln!("cyclictest: {note}");
    }
    if let (Some(list), Some(cpus)) = (&o.main_affinity, &main_cpus) {
        set_main_affinity(list, cpus)?;
    }
    // Said only where it will be so: a user who may not write the device is refused by the
    // permission listing next, and the line said what did not happen (eighth hostile re-run,
    // L8-b).
    if plan.pm_qos_us.is_some()
        && crate::sys::fs::can_write(Path::new(crate::session::pmqos::DEVICE)).is_ok()
    {
        crate::stdout::line(&format!(
            "# /dev/cpu_dma_latency set to {}us",
            plan.pm_qos_us.unwrap_or(0)
        ))?;
    }
    let start = SystemTime::now();
    let command_line: Vec<String> = std::env::args().collect();
    let limit = o.break_value.map(|b| breaktrace::limit_ns(b, o.nsecs));
    let outcome = measure(&plan, &o, &layout, command_line, limit)?;
    let end = SystemTime::now();
    let (threads, broke) = read_figures(&outcome.dir.path, &o, &layout, limit)
        .map_err(|e| Failure::run(format!("cannot read the run's samples: {e}")))?;
    let ids = thread_ids(&outcome.record, &layout);
    print_results(&o, &outputs, &layout, &ids, &threads, (start, end), args)?;
    if o.break_value.is_some() {
        let tids: Vec<i32> = ids.iter().map(|id| id.tid).collect();
        let thread = |b: &breaktrace::Break| layout.threads.iter().position(|t| t.0 == b.cpu);
        let broke = broke.and_then(|b| {
            let tid = ids[thread(&b)?].tid;
            Some((tid, figures::in_unit(b.latency_ns, o.nsecs)))
        });
        crate::stdout::write(&breaktrace::lines(&tids, broke))?;
    }
    for t in outcome
        .record
        .threads
        .iter()
        .filter(|t| t.dropped_records > 0)
    {
        eprintln!(
            "jitterlab: warning: CPU {}: {} samples dropped (the recorder fell behind); the figures above leave them out",
            t.cpu, t.dropped_records
        );
    }
    Ok(super::dropin::finish(&outcome))
}

/// The figures from the run's samples (with `-b`, of the wakeups due up to the break), and the
/// break; a damaged end of the samples is a warning.
fn read_figures(
    run_dir: &Path,
    o: &CyclictestOptions,
    layout: &Layout,
    break_limit: Option<i64>,
) -> std::result::Result<(Vec<ThreadFigures>, Option<breaktrace::Break>), String> {
    let cpus: Vec<usize> = layout.threads.iter().map(|t| t.0).collect();
    let broke = match break_limit {
        Some(limit) => breaktrace::find_in(run_dir, &cpus, limit)?,
        None => None,
    };
    let (threads, damage) = figures::from_sample_log(
        run_dir,
        &cpus,
        o.histogram_us,
        o.nsecs,
        broke.map(|b| b.due_ns),
    )?;
    if let Some(d) = damage {
        eprintln!("jitterlab: warning: {d}");
    }
    Ok((threads, broke))
}

/// The files cyclictest's options name, claimed before the run (`dropin::claim_output`).
struct Outputs {
    json: Option<OutputFile>,
    histfile: Option<OutputFile>,
}

impl Outputs {
    fn claim(o: &CyclictestOptions) -> Result<Outputs> {
        let claim = |path: &Option<std::path::PathBuf>, option: &str, dash: Dash| {
            path.as_deref()
                .map(|p| claim_output("cyclictest", option, p, dash))
                .transpose()
        };
        Ok(Outputs {
            json: claim(&o.json, "--json", Dash::Stdout)?,
            histfile: claim(&o.histfile, "--histfile", Dash::AFile)?,
        })
    }
}

/// `--mainaffinity`'s CPUs, each online: checked as `-a`'s are (exit 2 naming the CPU).
fn main_affinity(list: &str, online: &[usize]) -> Result<Vec<usize>> {
    plan::online_cpu_list(list, "--mainaffinity", online)
}

/// `--mainaffinity`: this thread (the drain side) on those CPUs.
fn set_main_affinity(list: &str, cpus: &[usize]) -> Result<()> {
    crate::sys::sched::set_affinity(cpus).map_err(|e| {
        Failure::system(format!(
            "cyclictest: --mainaffinity {list}: cannot pin the main thread: {e}"
        ))
    })
}

/// The session, polled to its end; without `-q` on a terminal, the status lines are redrawn
/// about once a second as cyclictest redraws them (see [`live_lines`]). With `-b`, stopped at
/// the first poll that sees a latency at or over `break_limit` (ns).
fn measure(
    plan: &crate::plan::RunPlan,
    o: &CyclictestOptions,
    layout: &Layout,
    command_line: Vec<String>,
    break_limit: Option<i64>,
) -> Result<crate::session::RunOutcome> {
    let live = !o.quiet && std::io::stdout().is_terminal();
    let mut session = Session::start(
        plan,
        SessionOptions {
            quiet: true,
            command_line,
        },
    )?;
    let mut last_draw = Instant::now();
    let mut drawn = false;
    let loops = plan.length.loops();
    let duration_ns = o
        .duration_s
        .filter(|&s| s > 0)
        .map(|s| s.saturating_mul(1_000_000_000));
    let mut loops_done = false;
    loop {
        std::thread::sleep(session.next_poll_in());
        let progress = session.poll();
        // `-l N`: every thread stops when one (thread 0, of the shortest interval) has done its
        // N loops, as rt-tests' cyclictest's main loop stops them all (plan.rs `length`).
        let first_done = loops
            .filter(|_| !loops_done)
            .and_then(|n| Some((n, session.cpu_states().position(|c| c.row.samples >= n)?)));
        if let Some((n, k)) = first_done {
            loops_done = true;
            session.end_as_completed(format!(
                "cyclictest -l {n}: thread {k} did its {n} loops, and every thread stops then, as rt-tests' cyclictest stops them"
            ));
        }
        // `-D` with `-l`: whichever comes first, as rt-tests' `-D` is an alarm. Loops are
        // wakeups, and a late wakeup's missed periods are none, so N loops at the interval can
        // take longer than N intervals (eighth hostile re-run, L8-a: `-l 990 -i 1000 -D 1`
        // ran 1.11 s). Served at the next poll (within 100 ms).
        if let (Some(n), Some(d)) = (loops, duration_ns)
            && !loops_done
            && session.elapsed_ns() >= d
        {
            loops_done = true;
            session.end_as_completed(format!(
                "cyclictest -D {}: its duration ended before a thread did its {n} loops, and every thread stops then, as rt-tests' cyclictest's -D ends it",
                d / 1_000_000_000
            ));
        }
        if let Some(limit) = break_limit
            && session
                .cpu_states()
                .any(|c| c.row.max_ns.is_some_and(|m| m >= limit))
        {
            session.stop();
        }
        if live && last_draw.elapsed() >= Duration::from_secs(1) {
            if drawn {
                crate::stdout::write_live(&format!("\x1b[{}A", layout.threads.len() + 2));
            }
            crate::stdout::write_live(&live_lines(&session, o, layout));
            drawn = true;
            last_draw = Instant::now();
        }
        if progress == Progress::Ended {
            break;
        }
    }
    if drawn {
        // The final lines overwrite the last live ones, as cyclictest's last redraw stays.
        crate::stdout::write_live(&format!("\x1b[{}A", layout.threads.len() + 2));
    }
    Ok(session.finish())
}

/// The live status lines: the count, min, average and max so far from the recorder's
/// cumulative histograms, and as `Act` the largest latency of the last completed log interval
/// (the recorder keeps no last sample while measuring; the final lines have the true one).
fn live_lines(session: &Session, o: &CyclictestOptions, layout: &Layout) -> String {
    let mut out = text::policy_header(text::policy_name(layout.policy), &loadavg());
    for (k, state) in session.cpu_states().enumerate() {
        let h = state.cumulative;
        let unit = |ns: f64| figures::in_unit(ns as i64, o.nsecs);
        let f = ThreadFigures {
            cycles: state.row.samples,
            min: unit(h.min() as f64),
            act: unit(state.row.last_interval.max_ns.unwrap_or(0) as f64),
            sum: (unit(h.mean()) as i128) * state.row.samples.max(1) as i128,
            max: unit(state.row.max_ns.unwrap_or(0) as f64),
            ..Default::default()
        };
        let id = ThreadId {
            tid: 0,
            priority: layout.priority,
            interval_us: layout.threads.get(k).map_or(0, |t| t.1),
        };
        out += &text::status_line(k, &id, &f, o.nsecs);
        out.push('\n');
    }
    out
}

/// /proc/loadavg without its newline, as cyclictest's header shows it.
fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.trim_end().to_string())
        .unwrap_or_default()
}

/// Each thread's tid (from run.json), priority and interval.
fn thread_ids(record: &crate::format::run_record::RunRecord, layout: &Layout) -> Vec<ThreadId> {
    layout
        .threads
        .iter()
        .map(|&(cpu, interval_us)| ThreadId {
            tid: record
                .threads
                .iter()
                .find(|t| t.cpu == cpu)
                .map_or(0, |t| t.tid),
            priority: layout.priority,
            interval_us,
        })
        .collect()
}

/// What cyclictest prints at its end, in its order: the JSON file, the status lines (with
/// `-q` only without a histogram; without `-q` as its last redraw), then the histogram.
fn print_results(
    o: &CyclictestOptions,
    outputs: &Outputs,
    layout: &Layout,
    ids: &[ThreadId],
    threads: &[ThreadFigures],
    (start, end): (SystemTime, SystemTime),
    args: &[String],
) -> Result<()> {
    if let Some(out) = &outputs.json {
        write_json(out, layout, threads, (start, end), args, o.nsecs)?;
    }
    let lines: String = ids
        .iter()
        .zip(threads)
        .enumerate()
        .map(|(k, (id, f))| text::status_line(k, id, f, o.nsecs) + "\n")
        .collect();
    if !o.quiet {
        crate::stdout::write(&format!(
            "{}{lines}",
            text::policy_header(text::policy_name(layout.policy), &loadavg())
        ))?;
    } else if o.histogram_us == 0 {
        crate::stdout::write(&lines)?;
    }
    if o.histogram_us > 0 {
        let hist = text::histogram(threads, o.histofall);
        match &outputs.histfile {
            Some(out) => out.write_bytes(hist.as_bytes())?,
            None => crate::stdout::write(&hist)?,
        }
    }
    Ok(())
}

fn write_json(
    out: &OutputFile,
    layout: &Layout,
    threads: &[ThreadFigures],
    (start, end): (SystemTime, SystemTime),
    args: &[String],
    nsecs: bool,
) -> Result<()> {
    let header = json::Header::of_this_run("cyclictest", args, (start, end));
    let entries: Vec<json::ThreadEntry> = threads
        .iter()
        .zip(&layout.threads)
        .map(|(figures, &(cpu, _))| json::ThreadEntry {
            figures,
            cpu,
            node: numa_node(cpu),
        })
        .collect();
    out.write_bytes(json::render(&header, &entries, nsecs).as_bytes())
}

/// The NUMA node of `cpu` from sysfs (its `nodeN` link); 0 where the kernel shows none.
fn numa_node(cpu: usize) -> i64 {
    std::fs::read_dir(format!("/sys/devices/system/cpu/cpu{cpu}"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_prefix("node")?.parse().ok())
        .next()
        .unwrap_or(0)
}

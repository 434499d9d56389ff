//! `jitterlab timerlat` measured by the kernel's timerlat tracer (trace/timerlat), as rtla
//! measures: the tracer's threads (`timerlat/N`, FIFO 95 unless `-P`), its IRQ and Thr samples
//! read from jitterlab's tracing instance, the table printed by `hist.rs` as for jitterlab's
//! own threads.
//!
//! The result directory (docs/timerlat.md, "The kernel engine's result directory"): every entry
//! the tracer gave, in the text the kernel prints (`timerlat.trace`), the table of every sample in rtla's full
//! layout (`timerlat-hist.txt`, whatever the printed layout), and the run.json and latency.hlog
//! that `jitterlab import` makes of that table. Every figure printed is re-derived from
//! `timerlat.trace` by the same parser and histogram.

use super::hist::{self, Column, CpuHist, Layout};
use super::options::TimerlatOptions;
use crate::error::{Failure, Result};
use crate::results::ResultDir;
use crate::trace::timerlat::sample::{Context, Line, parse_line};
use crate::trace::timerlat::{Config, KernelTimerlat};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

/// Every entry the tracer gave, in the kernel's text (trace/timerlat/raw.rs), in the result
/// directory.
pub(crate) const TRACE_FILE: &str = "timerlat.trace";
/// The table of every sample in rtla's full layout, in the result directory.
pub(crate) const HIST_FILE: &str = "timerlat-hist.txt";
/// How often the buffers are read: a 1 ms period fills about 64 bytes per CPU per ms (two
/// entries), and an instance's buffer holds over a MB per CPU.
const READ_EVERY: Duration = Duration::from_millis(100);

/// What the lines of a run add up to.
pub(crate) struct Tally {
    pub(crate) hists: Vec<CpuHist>,
    /// Entries the kernel lost (`[LOST N EVENTS]`), per CPU: (CPU, entries counted, losses
    /// whose count the kernel did not store).
    pub lost: Vec<(usize, u64, u64)>,
    /// Lines that are no sample of a measured CPU.
    pub other: u64,
    unit: u64,
    bucket_size: u64,
}

impl Tally {
    pub(crate) fn new(cpus: &[usize], l: &Layout) -> Tally {
        Tally {
            hists: cpus
                .iter()
                .map(|&cpu| CpuHist {
                    cpu,
                    irq: Column::new(l.entries),
                    thread: Column::new(l.entries),
                })
                .collect(),
            lost: Vec::new(),
            other: 0,
            unit: if l.nano { 1 } else { 1000 },
            bucket_size: l.bucket_size,
        }
    }

    /// Adds one line of the tracer: a sample goes to its CPU's column, in the output's unit
    /// (truncated, as rtla divides).
    pub(crate) fn add(&mut self, line: &str) {
        match parse_line(line) {
            Line::Sample(s) => match self.hists.iter_mut().find(|h| h.cpu == s.cpu) {
                Some(h) => {
                    let column = match s.context {
                        Context::Irq => &mut h.irq,
                        Context::Thread => &mut h.thread,
                    };
                    column.add(s.latency_ns / self.unit, self.bucket_size);
                }
                None => self.other += 1,
            },
            Line::Lost { cpu, events } => {
                let at = match self.lost.iter().position(|l| l.0 == cpu) {
                    Some(at) => at,
                    None => {
                        self.lost.push((cpu, 0, 0));
                        self.lost.len() - 1
                    }
                };
                match events {
                    Some(n) => self.lost[at].1 += n,
                    None => self.lost[at].2 += 1,
                }
            }
            Line::Other => self.other += !line.trim().is_empty() as u64,
        }
    }

    /// The tally of a whole `timerlat.trace` text.
    #[cfg(test)]
    pub(crate) fn of_text(text: &str, cpus: &[usize], l: &Layout) -> Tally {
        let mut t = Tally::new(cpus, l);
        text.lines().for_each(|line| t.add(line));
        t
    }
}

fn cpu_list(text: &str, option: &str, online: &[usize]) -> Result<Vec<usize>> {
    let cpus = crate::cpulist::parse_cpu_list(text)
        .map_err(|e| Failure::usage(format!("timerlat: {option} {text}: {e}")))?;
    if let Some(c) = cpus.iter().find(|c| !online.contains(c)) {
        return Err(Failure::usage(format!(
            "timerlat: {option} {text}: CPU {c} is not online (online: {})",
            crate::cpulist::format_cpu_list(online)
        )));
    }
    Ok(cpus)
}

/// The scheduling policy of `-P` for the tracer's threads.
fn policy_number(name: &str) -> i32 {
    use crate::sys::sched::{SCHED_FIFO, SCHED_OTHER, SCHED_RR};
    match name {
        "fifo" => SCHED_FIFO,
        "rr" => SCHED_RR,
        _ => SCHED_OTHER,
    }
}

/// Runs `o` with the kernel's tracer under the tracefs `root`; returns the exit code.
pub(crate) fn run(o: &TimerlatOptions, root: &Path, layout: &Layout) -> Result<i32> {
    let stop = crate::session::signals::stop_flag()?;
    let online = crate::cpulist::online_cpus().map_err(Failure::system)?;
    let cpus = match &o.cpus {
        Some(list) => cpu_list(list, "-c", &online)?,
        None => online.clone(),
    };
    let housekeeping = match &o.housekeeping {
        Some(list) => Some(cpu_list(list, "-H", &online)?),
        None => None,
    };
    // What killed runs left (the journals of this engine's instance and osnoise options among
    // them) was undone by commands::dispatch before this command began (stale.rs).
    crate::session::stale::undo_at_start();
    let (_locks, lock_warnings) = crate::session::cpulock::take(&cpus, false)?;
    for w in lock_warnings {
        eprintln!("jitterlab: warning: {w}");
    }
    let claim = match &o.jitterlab_out {
        Some(dir) => ResultDir::create(dir, "--jitterlab-out")?,
        // Not in the working directory: the drop-ins' state directory (commands/dropin.rs).
        None => ResultDir::create_unique(
            &crate::commands::dropin::default_out(SystemTime::now()),
            "--jitterlab-out",
        )?,
    };
    let dir = claim.dir().clone();
    let written = |e: std::io::Error, name: &str| {
        Failure::run(format!("cannot write {}: {e}", dir.file(name).display()))
    };
    let mut trace_file = std::io::BufWriter::new(
        dir.create_file(TRACE_FILE)
            .map_err(|e| written(e, TRACE_FILE))?,
    );
    if let Some(h) = &housekeeping {
        crate::sys::sched::set_affinity(h).map_err(|e| {
            Failure::system(format!(
                "timerlat: -H: cannot move jitterlab to CPUs {h:?}: {e}"
            ))
        })?;
    }
    let pmqos = crate::session::pmqos::hold(o.dma_latency_us);
    if let Some(e) = &pmqos.record.error {
        eprintln!("jitterlab: warning: --dma-latency: {e}");
    }
    let config = Config {
        cpus: cpus.clone(),
        period_us: o.period_us,
    };
    let mut tracer = KernelTimerlat::start(root, &config).map_err(|e| {
        Failure::system(format!(
            "timerlat: cannot start the kernel's timerlat tracer: {}",
            e.trim_start_matches("--trace: ")
        ))
    })?;
    let started = Instant::now();
    // Measuring: from here on the directory stays, whatever fails.
    claim.keep();
    eprintln!(
        "jitterlab: measuring with the kernel's timerlat tracer (instance {})",
        tracer
            .instance_path()
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    );
    if o.policy != ("fifo", 95) {
        for (tid, comm) in KernelTimerlat::thread_ids() {
            crate::sys::sched::set_scheduler(tid, policy_number(o.policy.0), o.policy.1)
                .map_err(|e| {
                    Failure::system(format!(
                        "timerlat: -P: cannot set the policy of the tracer's thread {comm} (pid {tid}): {e}"
                    ))
                })?;
        }
    }
    // The tally of the printed layout; the file's table is rtla's full layout of the same
    // buckets, so one tally serves both.
    let mut tally = Tally::new(&cpus, layout);
    let mut write_error = None;
    let mut each = |line: &str| {
        tally.add(line);
        if write_error.is_none()
            && let Err(e) = writeln!(trace_file, "{line}")
        {
            write_error = Some(e);
        }
    };
    let deadline = o.duration_s.map(|s| started + Duration::from_secs(s));
    let read_error = loop {
        if let Err(e) = tracer.read(&mut each) {
            break Some(format!("cannot read the timerlat tracer's buffers: {e}"));
        }
        let now = Instant::now();
        if stop.load(Ordering::SeqCst) || deadline.is_some_and(|d| now >= d) {
            break None;
        }
        let wait = deadline.map_or(READ_EVERY, |d| (d - now).min(READ_EVERY));
        std::thread::sleep(wait);
    };
    let elapsed = started.elapsed();
    let stopped = tracer.stop(&mut each);
    drop(tracer);
    drop(pmqos);
    let warnings = stopped.map_err(|e| Failure::run(format!("timerlat: {e}")))?;
    if let Some(e) = read_error {
        return Err(Failure::run(format!("timerlat: {e}")));
    }
    if let Some(e) = write_error {
        return Err(written(e, TRACE_FILE));
    }
    trace_file.flush().map_err(|e| written(e, TRACE_FILE))?;
    for w in warnings {
        eprintln!("jitterlab: warning: {w}");
    }
    for (cpu, n, uncounted) in &tally.lost {
        let more = match uncounted {
            0 => String::new(),
            u => format!(", and more {u} time(s) without a count"),
        };
        eprintln!(
            "jitterlab: warning: CPU {cpu}: the kernel lost {n} timerlat entries{more} (its ring buffer overflowed); the table leaves them out ({TRACE_FILE} keeps the kernel's [LOST] line)"
        );
    }
    let seconds = elapsed.as_secs();
    crate::stdout::write(&hist::render(&tally.hists, layout, seconds))?;
    // The kept table: every column, header, index and summary, whatever was printed.
    let full = Layout {
        no_irq: false,
        no_thread: false,
        no_header: false,
        no_summary: false,
        no_index: false,
        ..*layout
    };
    let table = hist::render(&tally.hists, &full, seconds);
    dir.create_file(HIST_FILE)
        .and_then(|mut f| f.write_all(table.as_bytes()))
        .map_err(|e| written(e, HIST_FILE))?;
    if tally
        .hists
        .iter()
        .any(|h| h.thread.count > 0 || h.irq.count > 0)
    {
        let imported = crate::results::import::rtla_timerlat::parse(&table).map_err(|e| {
            Failure::run(format!(
                "timerlat: cannot read back its own table {HIST_FILE}: {e}"
            ))
        })?;
        crate::results::import::write_result(&imported, &dir.file(HIST_FILE), &dir)?;
    } else {
        eprintln!(
            "jitterlab: warning: the tracer gave no sample: the result directory holds {TRACE_FILE} and {HIST_FILE} only (no run.json)"
        );
    }
    eprintln!(
        "jitterlab: result directory {} ({TRACE_FILE}: every entry of the tracer; run.json from {HIST_FILE})",
        dir.path.display()
    );
    Ok(0)
}

#[cfg(test)]
mod tests;

//! The kernel's timerlat tracer (kernel/trace/trace_osnoise.c, Documentation/trace/
//! timerlat-tracer.rst), as `rtla timerlat` uses it: a per-CPU kernel thread (`timerlat/N`,
//! SCHED_FIFO 95) armed by a periodic timer, and two samples per activation: the timer
//! interrupt's latency (IRQ) and the thread's (Thr). `jitterlab timerlat` measures with it
//! where tracefs lists it (commands/timerlat), and with its own threads elsewhere.
//!
//! - [`choose`]: which engine, from what tracefs says;
//! - [`KernelTimerlat`]: the run: a tracing instance of jitterlab's own (tracefs.rs, journaled
//!   and removed after a SIGKILL at the next start) whose `current_tracer` is `timerlat`, the
//!   global `osnoise/` options it needs (osnoise.rs, journaled the same way), and the
//!   instance's per-CPU `trace_pipe_raw`, read without blocking;
//! - [`raw`]: its entries, read from the instance's per-CPU `trace_pipe_raw` pages as rtla
//!   reads them, and written in the text the kernel prints;
//! - [`sample`]: that text, parsed.

pub(crate) mod osnoise;
pub mod raw;
pub mod sample;

use super::format::Formats;
use super::tracefs::{Instance, instance_name};
use crate::journal::TrustedDir;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// The tracer's name in `available_tracers` and `current_tracer`.
pub(crate) const TRACER: &str = "timerlat";
/// The tracers whose options (`osnoise/`) are global: one in use elsewhere is another tool's.
const OSNOISE_TRACERS: &[&str] = &["timerlat", "osnoise"];
/// The journal kind of the osnoise options (session/stale.rs undoes it).
pub(crate) use osnoise::KIND;

/// Which engine the user asked for (`--jitterlab-engine`); None: the kernel's where it has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Engine {
    Kernel,
    Own,
}

/// What [`choose`] decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Choice {
    /// The kernel's tracer, under this tracefs mount.
    Kernel(PathBuf),
    /// jitterlab's own threads, and why (for stderr) when it was not asked for.
    Own(Option<String>),
}

/// Whether the tracefs at `root` lists the timerlat tracer; Err: why that cannot be known.
pub(crate) fn has_tracer(root: &Path) -> Result<bool, String> {
    let path = root.join("available_tracers");
    let text = super::format::read_tracefs_file(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Ok(text.split_whitespace().any(|t| t == TRACER))
}

/// The engine for `asked` given `root` (the tracefs mount found, or why there is none):
/// the kernel's tracer where asked or, unasked, where it is listed; jitterlab's own threads
/// where asked or where the kernel has no tracer. Err: the kernel's was asked and cannot be
/// had, with why and what to do (the caller exits 3).
pub(crate) fn choose(
    asked: Option<Engine>,
    root: Result<PathBuf, String>,
) -> Result<Choice, String> {
    if asked == Some(Engine::Own) {
        return Ok(Choice::Own(None));
    }
    let why_not = match root {
        Ok(root) => match has_tracer(&root) {
            Ok(true) => return Ok(Choice::Kernel(root)),
            Ok(false) => format!(
                "this kernel has no timerlat tracer ({} does not list it; it needs CONFIG_TIMERLAT_TRACER=y)",
                root.join("available_tracers").display()
            ),
            Err(e) => e,
        },
        Err(e) => e.trim_start_matches("--trace: ").to_string(),
    };
    match asked {
        Some(Engine::Kernel) => Err(format!(
            "timerlat: --jitterlab-engine kernel: {why_not}; leave the option out (or give `own`) to measure with jitterlab's own threads"
        )),
        _ => Ok(Choice::Own(Some(why_not))),
    }
}

/// The options of a kernel timerlat run.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub cpus: Vec<usize>,
    pub(crate) period_us: u64,
}

/// A running timerlat tracer in jitterlab's instance. Dropped, it stops: the pipes closed, the
/// instance removed (which stops the tracer and its threads), the osnoise options set back.
pub(crate) struct KernelTimerlat {
    /// Each measured CPU's `trace_pipe_raw`, opened without blocking.
    pipes: Vec<(usize, File)>,
    /// The page layout and the tracer's entry layout, from tracefs.
    formats: Formats,
    entry: raw::EntryFormat,
    /// One page, as a read of `trace_pipe_raw` returns it.
    page: Vec<u8>,
    instance: Option<Instance>,
    settings: Option<osnoise::Settings>,
}

/// Another tracer of the osnoise family in use under `root` (its top level or an instance):
/// the options are global, so a run would change that tool's. Its `current_tracer` path.
fn osnoise_tracer_in_use(root: &Path) -> Option<PathBuf> {
    let mut places = vec![root.join("current_tracer")];
    if let Ok(entries) = std::fs::read_dir(root.join("instances")) {
        places.extend(entries.flatten().map(|e| e.path().join("current_tracer")));
    }
    places.into_iter().find(|p| {
        std::fs::read_to_string(p)
            .map(|t| OSNOISE_TRACERS.contains(&t.trim()))
            .unwrap_or(false)
    })
}

impl KernelTimerlat {
    /// Sets the tracer up under the tracefs `root` and starts it.
    pub(crate) fn start(root: &Path, config: &Config) -> Result<KernelTimerlat, String> {
        if let Some(p) = osnoise_tracer_in_use(root) {
            return Err(format!(
                "another tool is using the kernel's osnoise or timerlat tracer ({} says so; rtla?), and their options (osnoise/) are global: stop it first, or measure with jitterlab's own threads (--jitterlab-engine own)",
                p.display()
            ));
        }
        let journal_dir = TrustedDir::for_this_user(true).map_err(|e| {
            format!(
                "cannot keep the journals that let the next start undo what a killed run changed (the tracing instance, the osnoise options): {}; the journals live under /run (`mount -t tmpfs run /run` where it is missing), or measure with --jitterlab-engine own",
                e.unwrap_or_default()
            )
        })?;
        // The layouts first: a kernel whose files jitterlab cannot read changes nothing.
        let formats = Formats::load(root)?;
        let entry = raw::EntryFormat::load(root)?;
        let instance = Instance::create_in(root, &instance_name(std::process::id()), &journal_dir)?;
        let mut run = KernelTimerlat {
            pipes: Vec::new(),
            page: vec![0; formats.header_page.page_size()],
            formats,
            entry,
            instance: None,
            settings: None,
        };
        let i = run.instance.insert(instance);
        i.write("tracing_on", "0").map_err(|e| e.to_string())?;
        let cpus = crate::cpulist::format_cpu_list(&config.cpus);
        // As rtla: the CPUs, the period, and no stop on a threshold (a value left by another
        // tool would end the run early), no stack capture.
        let mut wanted = vec![
            ("cpus", cpus),
            ("timerlat_period_us", config.period_us.to_string()),
            ("stop_tracing_us", "0".to_string()),
            ("stop_tracing_total_us", "0".to_string()),
        ];
        if root.join("osnoise/print_stack").exists() {
            wanted.push(("print_stack", "0".to_string()));
        }
        run.settings = Some(osnoise::Settings::apply(
            &root.join("osnoise"),
            &journal_dir,
            &wanted,
        )?);
        let i = run.instance.as_ref().expect("made above");
        i.write("current_tracer", TRACER).map_err(|e| {
            let busy = e.error.raw_os_error() == Some(crate::sys::errno::EBUSY);
            match busy {
                true => format!(
                    "{e}: the kernel refuses timerlat while another osnoise-family tracer runs; stop it, or measure with --jitterlab-engine own"
                ),
                false => e.to_string(),
            }
        })?;
        use std::os::unix::fs::OpenOptionsExt;
        for &cpu in &config.cpus {
            let path = i.path.join(format!("per_cpu/cpu{cpu}/trace_pipe_raw"));
            let pipe = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(crate::sys::file::O_NONBLOCK)
                .open(&path)
                .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
            run.pipes.push((cpu, pipe));
        }
        i.write("tracing_on", "1").map_err(|e| e.to_string())?;
        Ok(run)
    }

    /// The instance's directory (for the messages).
    pub(crate) fn instance_path(&self) -> Option<&Path> {
        self.instance.as_ref().map(|i| i.path.as_path())
    }

    /// Reads what the CPUs' buffers hold now, without waiting; `line` gets each entry in the
    /// kernel's text (raw.rs), the CPUs merged in time order.
    pub(crate) fn read(&mut self, mut line: impl FnMut(&str)) -> io::Result<()> {
        let mut lines = Vec::new();
        for (cpu, pipe) in &mut self.pipes {
            loop {
                let n = match pipe.read(&mut self.page) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                };
                raw::page_lines(
                    &self.formats,
                    &self.entry,
                    *cpu,
                    &self.page[..n],
                    &mut lines,
                )
                .map_err(|e| {
                    io::Error::new(io::ErrorKind::InvalidData, format!("CPU {cpu}: {e}"))
                })?;
            }
        }
        // Stable: a CPU's own lines keep their order (a loss line before its page's entries).
        lines.sort_by_key(|(ts, _)| *ts);
        lines.iter().for_each(|(_, l)| line(l));
        Ok(())
    }

    /// Stops tracing, reads what the buffers still hold, and undoes everything. Returns the
    /// warnings (what could not be undone).
    pub(crate) fn stop(&mut self, mut line: impl FnMut(&str)) -> Result<Vec<String>, String> {
        let mut warnings = Vec::new();
        if let Some(i) = &self.instance {
            i.write("tracing_on", "0").map_err(|e| e.to_string())?;
        }
        let read = self.read(&mut line);
        warnings.extend(self.undo());
        read.map_err(|e| format!("cannot read the timerlat tracer's buffers: {e}"))?;
        Ok(warnings)
    }

    /// Closes the pipes, removes the instance (the tracer's threads stop with it), then sets
    /// the options back.
    fn undo(&mut self) -> Vec<String> {
        let mut warnings = Vec::new();
        self.pipes.clear();
        if let Some(mut i) = self.instance.take() {
            let _ = i.write("current_tracer", "nop");
            if let Err(e) = i.remove() {
                warnings.push(e);
            }
        }
        if let Some(mut s) = self.settings.take() {
            warnings.extend(s.restore());
        }
        warnings
    }

    /// The ids of the tracer's threads (`timerlat/N`), for their scheduling policy.
    pub(crate) fn thread_ids() -> Vec<(i32, String)> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|e| {
                let pid: i32 = e.file_name().to_str()?.parse().ok()?;
                let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
                let comm = comm.trim();
                comm.starts_with("timerlat/")
                    .then(|| (pid, comm.to_string()))
            })
            .collect()
    }
}

impl Drop for KernelTimerlat {
    fn drop(&mut self) {
        for w in self.undo() {
            eprintln!("jitterlab: {w}");
        }
    }
}

#[cfg(test)]
mod tests;

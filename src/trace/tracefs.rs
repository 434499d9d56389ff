//! tracefs: where it is mounted, jitterlab's own instance in it, the removal of the instance
//! of a jitterlab that was killed, and the tracefs back end's setup and start.
//!
//! Every setting jitterlab makes lives inside its instance (`instances/jitterlab-<pid>`): the
//! clock, buffer sizes, CPU mask, enabled events and filters. Removing the instance directory
//! removes all of them; the global buffer and other instances are never touched.
//!
//! A killed run's instance is recognised by its journal (journal.rs), never by its name: a
//! `jitterlab-<pid>` there may be a live run of another pid namespace sharing tracefs, or
//! another tool's. Before the `mkdir` the run journals the instance's path, after it the
//! directory's inode; the next start (session/stale.rs) removes an instance only when its
//! journal has no writer left, was written during this boot and names it with that inode.

use crate::journal::{Journal, Stale, TrustedDir};
use std::fmt;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The prefix of jitterlab's instance names; the rest is the owning process id.
pub(crate) const INSTANCE_PREFIX: &str = "jitterlab-";
/// The journals' kind (their names: `tracefs-instance-<pid>`).
pub(crate) const KIND: &str = "tracefs-instance";
/// The usual mount point, named in the fix when tracefs is not mounted.
pub(crate) const DEFAULT_MOUNT: &str = "/sys/kernel/tracing";

/// The tracefs mount point in a /proc/mounts text: a tracefs mount, or `tracing` inside a
/// debugfs mount (older systems). `exists` tells whether a path exists (tests pass a fake).
pub(crate) fn mount_from_mounts(mounts: &str, exists: impl Fn(&str) -> bool) -> Option<String> {
    let mut debugfs = None;
    for line in mounts.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.get(2) {
            Some(&"tracefs") => return Some(f[1].to_string()),
            Some(&"debugfs") if debugfs.is_none() && exists(&format!("{}/tracing/trace", f[1])) => {
                debugfs = Some(format!("{}/tracing", f[1]))
            }
            _ => {}
        }
    }
    debugfs
}

/// Why tracing cannot be used, with the fix (the caller exits 3 with it).
fn unavailable(reason: String) -> String {
    format!("--trace: {reason}")
}

/// Finds the mounted tracefs and checks that this process may create instances in it.
pub fn find() -> Result<PathBuf, String> {
    let mounts = fs::read_to_string("/proc/mounts").map_err(|e| {
        unavailable(format!(
            "cannot read /proc/mounts ({e}) to find tracefs; mount /proc"
        ))
    })?;
    let Some(dir) = mount_from_mounts(&mounts, |p| Path::new(p).exists()) else {
        let supported = fs::read_to_string("/proc/filesystems")
            .map(|t| {
                t.lines()
                    .any(|l| l.split_whitespace().last() == Some("tracefs"))
            })
            .unwrap_or(true);
        return Err(unavailable(if supported {
            format!(
                "tracefs is not mounted; mount it as root with `mount -t tracefs nodev {DEFAULT_MOUNT}` and run again"
            )
        } else {
            "this kernel has no tracefs (not in /proc/filesystems); use a kernel built with CONFIG_FTRACE=y and CONFIG_TRACING=y".into()
        }));
    };
    let root = PathBuf::from(dir);
    let instances = root.join("instances");
    if let Err(e) = fs::read_dir(&instances) {
        return Err(unavailable(format!(
            "cannot open {} ({e}); run as root (tracefs is readable by root only by default), or give this user access to {}",
            instances.display(),
            root.display()
        )));
    }
    if let Err(e) = access_writable(&instances) {
        return Err(unavailable(format!(
            "cannot create a tracing instance in {} ({e}); run as root",
            instances.display()
        )));
    }
    Ok(root)
}

fn access_writable(dir: &Path) -> io::Result<()> {
    crate::sys::fs::can_write(dir)
}

/// The instance name of process `pid`.
pub(crate) fn instance_name(pid: u32) -> String {
    format!("{INSTANCE_PREFIX}{pid}")
}

/// A control file of the instance refused a value. The kernel's reason is kept because callers
/// decide on it: a value the kernel does not understand (EINVAL, e.g. a filter form newer than
/// the kernel) is a missing feature to work around, anything else a failure.
#[derive(Debug)]
pub(crate) struct WriteError {
    pub path: PathBuf,
    pub value: String,
    pub error: io::Error,
}

impl WriteError {
    /// The kernel parsed the value and refused it (EINVAL), as opposed to refusing the write.
    pub(crate) fn is_value_refused(&self) -> bool {
        self.error.raw_os_error() == Some(crate::sys::errno::EINVAL)
    }
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot write '{}' to {}: {}",
            self.value,
            self.path.display(),
            self.error
        )
    }
}

impl std::error::Error for WriteError {}

/// jitterlab's tracing instance. Dropping it turns tracing off and removes the directory,
/// and with it every setting made in it.
#[derive(Debug)]
pub(crate) struct Instance {
    pub name: String,
    pub path: PathBuf,
    removed: bool,
    /// Removed once the instance is: an instance that cannot be removed keeps it (then
    /// without a writer), for the next start to retry.
    journal: Option<Journal>,
}

impl Instance {
    /// Creates `instances/<name>` under the tracefs `root`, journaled in this user's trusted
    /// directory.
    pub(crate) fn create(root: &Path, name: &str) -> Result<Self, String> {
        let journal_dir = TrustedDir::for_this_user(true).map_err(|e| {
            unavailable(format!(
                "cannot keep the journal that lets the next start remove the tracing instance of a killed run: {}; the journals live under /run (every init system mounts it: `mount -t tmpfs run /run` where it is missing), or trace with --trace-backend bpf, which makes no instance",
                e.unwrap_or_default()
            ))
        })?;
        Instance::create_in(root, name, &journal_dir)
    }

    /// [`Instance::create`] with its journal in `journal_dir`.
    pub(crate) fn create_in(
        root: &Path,
        name: &str,
        journal_dir: &TrustedDir,
    ) -> Result<Self, String> {
        let path = root.join("instances").join(name);
        // Journaled before the directory exists: a kill right after the mkdir still leaves
        // the journal.
        let mut journal =
            Journal::create(journal_dir, KIND, &[format!("instance {}", path.display())])
                .map_err(|e| {
                    unavailable(format!(
                        "cannot write the journal {KIND}-{} in {} ({e}): without it a killed run's tracing instance could not be removed",
                        std::process::id(),
                        journal_dir.path().display()
                    ))
                })?;
        if let Err(e) = fs::create_dir(&path) {
            let _ = journal.remove();
            return Err(unavailable(match e.kind() {
                io::ErrorKind::AlreadyExists => format!(
                    "the tracing instance {} already exists, and this run did not make it (a jitterlab with the same pid in another pid namespace, or another tool); jitterlab never takes over or removes an instance it did not journal: run again (another pid is another name), or remove it with `rmdir {}` if nothing uses it",
                    path.display(),
                    path.display()
                ),
                _ => format!(
                    "cannot create the tracing instance {} ({e}); run as root",
                    path.display()
                ),
            }));
        }
        // From here on a failure drops the instance, which removes the directory.
        let mut instance = Instance {
            name: name.to_string(),
            path,
            removed: false,
            journal: None,
        };
        let inode = fs::symlink_metadata(&instance.path).map(|m| m.ino());
        let recorded = inode.and_then(|ino| journal.append(&format!("inode {ino}")));
        instance.journal = Some(journal);
        recorded.map_err(|e| {
            unavailable(format!(
                "cannot journal the inode of the tracing instance {}: {e}",
                instance.path.display()
            ))
        })?;
        Ok(instance)
    }

    /// Writes `value` to a control file of the instance (relative path), with an error that
    /// names the file, the value and the kernel's reason. A file that is not there is an
    /// error, never made.
    pub(crate) fn write(&self, file: &str, value: &str) -> Result<(), WriteError> {
        use std::io::Write;
        let path = self.path.join(file);
        fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|mut f| f.write_all(value.as_bytes()))
            .map_err(|error| WriteError {
                path,
                value: value.trim_end().to_string(),
                error,
            })
    }

    pub(crate) fn read(&self, file: &str) -> Result<String, String> {
        let path = self.path.join(file);
        super::format::read_tracefs_file(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))
    }

    /// Turns tracing off and removes the instance. The kernel refuses (EBUSY) while a file
    /// of the instance is open, so readers must be closed first; a few retries cover a reader
    /// thread that is closing its files at the same moment.
    pub(crate) fn remove(&mut self) -> Result<(), String> {
        if self.removed {
            return Ok(());
        }
        let _ = self.write("tracing_on", "0");
        match remove_instance_dir(&self.path) {
            Ok(()) => {
                self.removed = true;
                if let Some(journal) = self.journal.take() {
                    let _ = journal.remove();
                }
                Ok(())
            }
            Err(e) => Err(format!(
                "cannot remove the tracing instance {} ({e}); remove it as root with `rmdir {}` (the next jitterlab run also removes it, by its journal)",
                self.path.display(),
                self.path.display()
            )),
        }
    }
}

/// rmdir of an instance, gone already counting as done. The kernel refuses (EBUSY) while a
/// file of the instance is open: a few retries over a second cover a reader that is closing
/// its files at the same moment.
fn remove_instance_dir(path: &Path) -> io::Result<()> {
    let mut tries = 0;
    loop {
        match fs::remove_dir(path) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) if tries >= 50 => return Err(e),
            Err(_) => tries += 1,
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Undoes the journal of a killed run (session/stale.rs): removes the tracing instance it
/// names, when it is the very directory the run made (its inode) during this boot. Returns
/// what to say, if anything, and whether the journal is done with (kept when the removal
/// failed, for the next start to retry).
pub(crate) fn undo(stale: &Stale) -> (Option<String>, bool) {
    let inode = stale.parsed::<u64>("inode");
    // Only an instance named as jitterlab names them, directly in an `instances` directory.
    let Some(path) = stale.field("instance").map(PathBuf::from).filter(|p| {
        p.is_absolute()
            && p.parent().and_then(Path::file_name) == Some("instances".as_ref())
            && p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(INSTANCE_PREFIX))
    }) else {
        return stale.not_in_format("a tracing instance");
    };
    if !stale.this_boot {
        // An instance does not survive a reboot: the one this journal names is gone.
        return (None, true);
    }
    let shown = path.display();
    let pid = stale.pid;
    let hint = format!("if nothing uses it, remove it with `rmdir {shown}`");
    if let Err(undone) = stale.made_dir(&path, inode, "the tracing instance", &hint) {
        return undone;
    }
    match remove_instance_dir(&path) {
        Ok(()) => (
            Some(format!(
                "removed the tracing instance {shown} left by a jitterlab (pid {pid}) that was killed"
            )),
            true,
        ),
        Err(e) => (
            Some(format!(
                "cannot remove the tracing instance {shown} left by a jitterlab (pid {pid}) that was killed ({e}); remove it as root with `rmdir {shown}`"
            )),
            false,
        ),
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        if let Err(e) = self.remove() {
            eprintln!("jitterlab: {e}");
        }
    }
}

// The tracefs back end's setup and start (TraceSetup in mod.rs calls these).
use super::decode::{self, Decoder};
use super::format::{self, Formats};
use super::reader::{self, Reader};
use super::{BUFFER_KB, Collector, IDLE_BUFFER_KB, POLL_EVERY, TraceConfig, cpumask_hex};
use std::sync::mpsc::Sender;

pub(super) fn prepare_tracefs(cpus: &[usize]) -> Result<Collector, String> {
    let root = find()?;
    let clocks = format::read_tracefs_file(&root.join("trace_clock")).unwrap_or_default();
    if !clocks
        .split_whitespace()
        .any(|c| c.trim_matches(|ch| ch == '[' || ch == ']') == "mono")
    {
        return Err(format!(
            "--trace: this kernel's tracing has no 'mono' clock (available: {}); trace timestamps could not be compared with CLOCK_MONOTONIC. Use a kernel from 3.10 or later",
            clocks.trim()
        ));
    }
    let missing: Vec<String> = decode::REQUIRED_EVENTS
        .iter()
        .filter(|(s, e)| !root.join("events").join(s).join(e).join("format").exists())
        .map(|(s, e)| format!("{s}:{e}"))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "--trace: this kernel lacks the tracepoints {}; use a kernel with CONFIG_FTRACE and the timer, sched and irq events",
            missing.join(", ")
        ));
    }
    let formats = Formats::load(&root).map_err(|e| format!("--trace: {e}"))?;
    let decoder = Decoder::load(&root).map_err(|e| format!("--trace: {e}"))?;
    let instance = Instance::create(&root, &instance_name(std::process::id()))?;
    let setup = |i: &Instance| -> Result<(), WriteError> {
        i.write("tracing_on", "0")?;
        i.write("trace_clock", "mono")?;
        i.write("buffer_size_kb", &IDLE_BUFFER_KB.to_string())?;
        for &c in cpus {
            i.write(
                &format!("per_cpu/cpu{c}/buffer_size_kb"),
                &BUFFER_KB.to_string(),
            )?;
        }
        i.write("tracing_cpumask", &cpumask_hex(cpus))
    };
    setup(&instance).map_err(|e| format!("--trace: cannot set up the tracing instance: {e}"))?;
    Ok(Collector::Tracefs {
        instance,
        formats,
        decoder,
    })
}

/// The tracefs back end's start: filters, events enabled, reader, tracing on. `timer_cpus`:
/// the CPUs the measuring threads' timers may be moved to ([`super::migration`]), traced too
/// where the kernel can filter events by CPU. Returns the reader and those of `timer_cpus`
/// traced.
#[allow(clippy::too_many_arguments)]
pub(super) fn start_tracefs(
    i: &Instance,
    cpus: &[usize],
    timer_cpus: &[usize],
    formats: Formats,
    decoder: Decoder,
    tids: &[i32],
    ipc: bool,
    timer_functions: &[&str],
    config: &mut TraceConfig,
    tx: Sender<reader::TraceBatch>,
    drain_priority: Option<i32>,
) -> Result<(Reader, Vec<usize>), String> {
    config.instance = i.name.clone();
    config.buffer_kb = BUFFER_KB;
    if !ipc {
        write_thread_filters(i, tids, config)?;
    }
    if !timer_functions.is_empty() {
        let filter = timer_functions
            .iter()
            .map(|f| format!("function.function == {f}"))
            .collect::<Vec<_>>()
            .join(" || ");
        let event = "timer/hrtimer_expire_entry";
        // A kernel before 6.2 does not know the `.function` form (EINVAL): the expiries then
        // stay unfiltered. Any other refusal is a failure, as for the filters above.
        match i.write(&format!("events/{event}/filter"), &filter) {
            Ok(()) => config.filters.push(format!("{event}: {filter}")),
            Err(e) if e.is_value_refused() => {}
            Err(e) => return Err(format!("--trace: cannot filter the events: {e}")),
        }
    }
    let timer_cpus = trace_timer_cpus(i, cpus, timer_cpus, &decoder, config)
        .map_err(|e| format!("--trace: cannot trace the CPUs timers move to: {e}"))?;
    for (system, event) in &decoder.events {
        i.write(&format!("events/{system}/{event}/enable"), "1")
            .map_err(|e| format!("--trace: cannot enable the event: {e}"))?;
        config.events.push(format!("{system}:{event}"));
    }
    let read: Vec<usize> = cpus.iter().chain(&timer_cpus).copied().collect();
    let reader = reader::spawn(
        &i.path,
        &read,
        formats,
        decoder,
        tx,
        POLL_EVERY,
        drain_priority,
    )?;
    i.write("tracing_on", "1")
        .map_err(|e| format!("--trace: cannot start tracing: {e}"))?;
    Ok((reader, timer_cpus))
}

/// Per-CPU buffer of a CPU traced for moved timers only, KiB: its timer expiries (all of them
/// on kernels before 6.2, which cannot filter them by callback) and real-time wakeups.
const TIMER_CPU_BUFFER_KB: u64 = 512;

/// Adds `timer_cpus` to the traced CPUs for the measuring threads' timers that the kernel
/// moves there ([`super::migration`]): every event but the timer expiries, the timer starts
/// (the measuring threads' only) and the wakeups (the measuring threads' and real-time tasks')
/// is filtered to the measured `cpus` by the filters' `CPU` field. A kernel that refuses that
/// field (EINVAL) traces the measured CPUs alone, as before: returns the CPUs added.
fn trace_timer_cpus(
    i: &Instance,
    cpus: &[usize],
    timer_cpus: &[usize],
    decoder: &Decoder,
    config: &mut TraceConfig,
) -> Result<Vec<usize>, WriteError> {
    if timer_cpus.is_empty() {
        return Ok(Vec::new());
    }
    let on_measured = cpus
        .iter()
        .map(|c| format!("CPU == {c}"))
        .collect::<Vec<_>>()
        .join(" || ");
    let mut first = true;
    for (system, event) in &decoder.events {
        let kept_everywhere = matches!(
            (system.as_str(), event.as_str()),
            ("timer", "hrtimer_start" | "hrtimer_expire_entry") | ("sched", "sched_waking")
        );
        if kept_everywhere {
            continue;
        }
        match i.write(&format!("events/{system}/{event}/filter"), &on_measured) {
            Ok(()) => config
                .filters
                .push(format!("{system}/{event}: {on_measured}")),
            Err(e) if first && e.is_value_refused() => return Ok(Vec::new()),
            Err(e) => return Err(e),
        }
        first = false;
    }
    for c in timer_cpus {
        i.write(
            &format!("per_cpu/cpu{c}/buffer_size_kb"),
            &TIMER_CPU_BUFFER_KB.to_string(),
        )?;
    }
    let all: Vec<usize> = cpus.iter().chain(timer_cpus).copied().collect();
    i.write("tracing_cpumask", &cpumask_hex(&all))?;
    Ok(timer_cpus.to_vec())
}

/// Filters the timer starts to `tids`, and the wakeups to `tids` and every real-time or
/// deadline task (and records the filters in `config`). The followed threads' timers and
/// wakeups give the split; a real-time task's wakeup gives its priority when the kernel leaves
/// its switch in out of the trace (some kernels never trace a switch out of idle on some CPUs;
/// docs/tracing.md), so that attribution can still say "FIFO 99". Every other event stays
/// unfiltered (the CPU mask limits them to the traced CPUs), because attribution must see the
/// other tasks, interrupts and softirqs on those CPUs.
pub(super) fn write_thread_filters(
    i: &Instance,
    tids: &[i32],
    config: &mut TraceConfig,
) -> Result<(), String> {
    let any = |field: &str| {
        tids.iter()
            .map(|t| format!("{field} == {t}"))
            .collect::<Vec<_>>()
            .join(" || ")
    };
    for (event, filter) in [
        ("timer/hrtimer_start", any("common_pid")),
        (
            "sched/sched_waking",
            format!("{} || prio < 100", any("pid")),
        ),
    ] {
        i.write(&format!("events/{event}/filter"), &filter)
            .map_err(|e| format!("--trace: cannot filter the events: {e}"))?;
        config.filters.push(format!("{event}: {filter}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests;

//! tracefs: where it is mounted, jitterlab's own instance in it, the removal of instances
//! left behind by a jitterlab that was killed, and the tracefs back end's setup and start.
//!
//! Every setting jitterlab makes lives inside its instance (`instances/jitterlab-<pid>`): the
//! clock, buffer sizes, CPU mask, enabled events and filters. Removing the instance directory
//! removes all of them; the global buffer and other instances are never touched.

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The prefix of jitterlab's instance names; the rest is the owning process id.
pub(crate) const INSTANCE_PREFIX: &str = "jitterlab-";
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

/// The process id in a jitterlab instance name, or None for other names.
pub(crate) fn instance_owner(name: &str) -> Option<u32> {
    let pid = name.strip_prefix(INSTANCE_PREFIX)?;
    (!pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
        .then(|| pid.parse().ok())
        .flatten()
}

/// Whether the owner of an instance is gone: no such process, or a process that is not this
/// program (the pid was reused), judged by its `comm` against ours.
pub(crate) fn owner_is_gone(proc_root: &Path, pid: u32, our_comm: &str) -> bool {
    match fs::read_to_string(proc_root.join(pid.to_string()).join("comm")) {
        Err(_) => true,
        Ok(comm) => comm.trim() != our_comm,
    }
}

/// Removes the jitterlab instances under `instances_dir` whose owner is gone (see
/// [`owner_is_gone`]). Returns the names removed and, for each that could not be removed, a
/// message with the reason.
pub(crate) fn remove_stale_in(
    instances_dir: &Path,
    proc_root: &Path,
    our_comm: &str,
) -> (Vec<String>, Vec<String>) {
    let (mut removed, mut failed) = (Vec::new(), Vec::new());
    let Ok(entries) = fs::read_dir(instances_dir) else {
        return (removed, failed);
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = instance_owner(&name) else {
            continue;
        };
        if pid == std::process::id() || !owner_is_gone(proc_root, pid, our_comm) {
            continue;
        }
        match fs::remove_dir(entry.path()) {
            Ok(()) => removed.push(name),
            Err(e) => failed.push(format!(
                "cannot remove the stale tracing instance {} left by a jitterlab that ended without cleaning up ({e}); remove it as root with `rmdir {}`",
                entry.path().display(),
                entry.path().display()
            )),
        }
    }
    (removed, failed)
}

/// Removes instances left by jitterlab processes that no longer exist (a SIGKILL, a crash).
/// Called at every `jitterlab run`; silent when tracefs is not mounted or not accessible.
/// Returns warnings for instances that could not be removed.
pub(crate) fn remove_stale_instances() -> Vec<String> {
    let Ok(mounts) = fs::read_to_string("/proc/mounts") else {
        return Vec::new();
    };
    let Some(root) = mount_from_mounts(&mounts, |p| Path::new(p).exists()) else {
        return Vec::new();
    };
    let our_comm = fs::read_to_string("/proc/self/comm").unwrap_or_default();
    let (_, failed) = remove_stale_in(
        &Path::new(&root).join("instances"),
        Path::new("/proc"),
        our_comm.trim(),
    );
    failed
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
}

impl Instance {
    /// Creates `instances/<name>` under the tracefs `root`.
    pub fn create(root: &Path, name: &str) -> Result<Self, String> {
        let path = root.join("instances").join(name);
        fs::create_dir(&path).map_err(|e| {
            unavailable(format!(
                "cannot create the tracing instance {} ({e}); run as root",
                path.display()
            ))
        })?;
        Ok(Instance {
            name: name.to_string(),
            path,
            removed: false,
        })
    }

    /// Writes `value` to a control file of the instance (relative path), with an error that
    /// names the file, the value and the kernel's reason.
    pub fn write(&self, file: &str, value: &str) -> Result<(), WriteError> {
        let path = self.path.join(file);
        fs::write(&path, value).map_err(|error| WriteError {
            path,
            value: value.trim_end().to_string(),
            error,
        })
    }

    pub fn read(&self, file: &str) -> Result<String, String> {
        let path = self.path.join(file);
        super::format::read_tracefs_file(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))
    }

    /// Turns tracing off and removes the instance. The kernel refuses (EBUSY) while a file
    /// of the instance is open, so readers must be closed first; a few retries cover a reader
    /// thread that is closing its files at the same moment.
    pub fn remove(&mut self) -> Result<(), String> {
        if self.removed {
            return Ok(());
        }
        let _ = self.write("tracing_on", "0");
        let mut last = None;
        for _ in 0..50 {
            match fs::remove_dir(&self.path) {
                Ok(()) => {
                    self.removed = true;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    self.removed = true;
                    return Ok(());
                }
                Err(e) => last = Some(e),
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Err(format!(
            "cannot remove the tracing instance {} ({}); remove it as root with `rmdir {}` (the next jitterlab run also removes it)",
            self.path.display(),
            last.map(|e| e.to_string()).unwrap_or_default(),
            self.path.display()
        ))
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

/// The tracefs back end's start: filters, events enabled, reader, tracing on.
#[allow(clippy::too_many_arguments)]
pub(super) fn start_tracefs(
    i: &Instance,
    cpus: &[usize],
    formats: Formats,
    decoder: Decoder,
    tids: &[i32],
    ipc: bool,
    timer_functions: &[&str],
    config: &mut TraceConfig,
    tx: Sender<reader::TraceBatch>,
    drain_priority: Option<i32>,
) -> Result<Reader, String> {
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
    for (system, event) in &decoder.events {
        i.write(&format!("events/{system}/{event}/enable"), "1")
            .map_err(|e| format!("--trace: cannot enable the event: {e}"))?;
        config.events.push(format!("{system}:{event}"));
    }
    let reader = reader::spawn(
        &i.path,
        cpus,
        formats,
        decoder,
        tx,
        POLL_EVERY,
        drain_priority,
    )?;
    i.write("tracing_on", "1")
        .map_err(|e| format!("--trace: cannot start tracing: {e}"))?;
    Ok(reader)
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
mod tests {
    use super::*;

    #[test]
    fn finds_tracefs_or_tracing_under_debugfs() {
        let m = "proc /proc proc rw 0 0\ntracefs /sys/kernel/tracing tracefs rw 0 0\n";
        assert_eq!(
            mount_from_mounts(m, |_| false).as_deref(),
            Some("/sys/kernel/tracing")
        );
        let m = "debugfs /sys/kernel/debug debugfs rw 0 0\n";
        assert_eq!(
            mount_from_mounts(m, |p| p == "/sys/kernel/debug/tracing/trace").as_deref(),
            Some("/sys/kernel/debug/tracing")
        );
        assert_eq!(mount_from_mounts(m, |_| false), None);
    }

    #[test]
    fn instance_names_carry_the_owner() {
        assert_eq!(instance_owner(&instance_name(4321)), Some(4321));
        assert_eq!(instance_owner("jitterlab-"), None);
        assert_eq!(instance_owner("jitterlab-12x"), None);
        assert_eq!(instance_owner("other-12"), None);
    }

    /// Ground truth from this kernel: a filter it cannot parse is EINVAL (the refusal
    /// `TraceSetup::start` works around for the `.function` form on kernels before 6.2), while
    /// a write to a control file that does not exist is another error, which is not ignored.
    #[test]
    fn the_kernel_refuses_a_filter_it_cannot_parse_with_einval() {
        let Some(root) = find().ok() else {
            if std::env::var_os("JITTERLAB_REQUIRE_RT").is_some() {
                panic!("tracefs is required: {}", find().unwrap_err());
            }
            eprintln!(
                "SKIPPED the_kernel_refuses_a_filter: {}",
                find().unwrap_err()
            );
            return;
        };
        let instance = Instance::create(&root, &instance_name(std::process::id())).unwrap();
        let refused = instance
            .write("events/sched/sched_waking/filter", "no_such_field == 1")
            .unwrap_err();
        assert!(refused.is_value_refused(), "{refused}");
        assert!(
            refused.to_string().contains("no_such_field == 1"),
            "{refused}"
        );
        let absent = instance.write("no_such_control_file", "1").unwrap_err();
        assert!(!absent.is_value_refused(), "{absent}");
        instance
            .write("events/sched/sched_waking/filter", "pid == 1")
            .unwrap();
    }

    /// A fake tracefs and /proc: instances of dead owners and of reused pids go; the live
    /// owner's and other tools' instances stay.
    #[test]
    fn removes_only_stale_jitterlab_instances() {
        let t = tempfile::tempdir().unwrap();
        let inst = t.path().join("instances");
        let proc_root = t.path().join("proc");
        for name in [
            "jitterlab-100",
            "jitterlab-200",
            "jitterlab-300",
            "rtla-100",
        ] {
            fs::create_dir_all(inst.join(name)).unwrap();
        }
        fs::create_dir_all(proc_root.join("200")).unwrap();
        fs::write(proc_root.join("200/comm"), "jitterlab\n").unwrap();
        fs::create_dir_all(proc_root.join("300")).unwrap();
        fs::write(proc_root.join("300/comm"), "bash\n").unwrap();
        let (mut removed, failed) = remove_stale_in(&inst, &proc_root, "jitterlab");
        removed.sort();
        assert_eq!(removed, vec!["jitterlab-100", "jitterlab-300"]);
        assert!(failed.is_empty());
        assert!(inst.join("jitterlab-200").exists());
        assert!(inst.join("rtla-100").exists());
    }
}

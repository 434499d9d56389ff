//! `--idle-state-max N` (rtla's `--deepest-idle-state`): the cpuidle states deeper than N are
//! disabled on the measured CPUs for the run, through each state's
//! `/sys/devices/system/cpu/cpuK/cpuidle/stateS/disable`, and enabled again when it ends.
//!
//! Unlike PM QoS (session/pmqos.rs), which the kernel drops with the file descriptor, a
//! `disable` file keeps its value after jitterlab dies. So before changing anything the run
//! writes a journal, `/run/jitterlab/idle-states-<pid>`, of the states it is about to disable
//! (only states that were enabled: one already disabled is left alone and never enabled by
//! us). The run's end enables them and removes the journal; the next start after a SIGKILL
//! finds the journal of a pid that is gone and does the same.
//!
//! /run/jitterlab is world-writable (session/cpulock.rs), so a journal is trusted only when it
//! is a regular file owned by the user restoring it, and it holds numbers only: a restore
//! writes `0` to `cpu<N>/cpuidle/state<S>/disable` of the CPU root and nowhere else.

use crate::format::run_record::{IdleStateRecord, IdleStatesRecord};
use crate::sys::fs;
use std::ffi::CString;
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

/// Where the kernel lists the CPUs (and, per CPU, its cpuidle states).
pub(crate) const CPU_ROOT: &str = "/sys/devices/system/cpu";
/// A journal's name: this prefix and the pid of the jitterlab that wrote it.
const PREFIX: &str = "idle-states-";
/// A journal's first line.
const MAGIC: &str = "#jitterlab-idle-states 1";

/// The states disabled for this run; enabled again by [`IdleStateLimit::restore`] or on drop.
#[derive(Debug)]
pub(crate) struct IdleStateLimit {
    cpu_root: PathBuf,
    journal_dir: OwnedFd,
    journal: CString,
    pub(crate) record: IdleStatesRecord,
    restored: bool,
}

/// One state as read from sysfs.
struct State {
    index: u32,
    name: String,
    latency_us: u64,
    disabled: bool,
}

/// Reads the cpuidle states of `cpu` under `cpu_root`, in index order.
fn states_of(cpu_root: &Path, cpu: usize) -> Result<Vec<State>, String> {
    let dir = cpu_root.join(format!("cpu{cpu}/cpuidle"));
    let entries = std::fs::read_dir(&dir).map_err(|e| {
        let driver = std::fs::read_to_string(cpu_root.join("cpuidle/current_driver"))
            .map(|d| format!("the cpuidle driver is '{}'", d.trim()))
            .unwrap_or_else(|_| "no cpuidle driver is loaded".into());
        format!(
            "--idle-state-max: CPU {cpu} has no cpuidle states ({}: {e}; {driver}): there is nothing to limit; leave the option out (--pm-qos 0, the default, keeps CPUs out of deep idle states where a driver has them)",
            dir.display()
        )
    })?;
    let mut states = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(index) = name.strip_prefix("state").and_then(|n| n.parse().ok()) else {
            continue;
        };
        let read = |file: &str| {
            std::fs::read_to_string(entry.path().join(file))
                .map(|s| s.trim().to_string())
                .map_err(|e| {
                    format!(
                        "--idle-state-max: cannot read {}: {e}",
                        entry.path().join(file).display()
                    )
                })
        };
        states.push(State {
            index,
            name: read("name")?,
            latency_us: read("latency")?.parse().unwrap_or(0),
            disabled: read("disable")? != "0",
        });
    }
    states.sort_by_key(|s| s.index);
    Ok(states)
}

fn disable_file(cpu_root: &Path, cpu: usize, state: u32) -> PathBuf {
    cpu_root.join(format!("cpu{cpu}/cpuidle/state{state}/disable"))
}

/// Writes `value` to a state's `disable` file (an existing sysfs file: never created).
fn set_disabled(cpu_root: &Path, cpu: usize, state: u32, value: bool) -> Result<(), String> {
    let path = disable_file(cpu_root, cpu, state);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .and_then(|mut f| f.write_all(if value { b"1" } else { b"0" }))
        .map_err(|e| {
            format!(
                "--idle-state-max: cannot write {} to {}: {e}; run as root",
                u8::from(value),
                path.display()
            )
        })
}

/// The states deeper than `max` that are enabled on `cpus`: those the run disables.
fn plan(cpu_root: &Path, cpus: &[usize], max: u32) -> Result<Vec<IdleStateRecord>, String> {
    let mut disabled = Vec::new();
    for &cpu in cpus {
        for s in states_of(cpu_root, cpu)? {
            if s.index > max && !s.disabled {
                disabled.push(IdleStateRecord {
                    cpu,
                    state: s.index,
                    name: s.name,
                    latency_us: s.latency_us,
                });
            }
        }
    }
    Ok(disabled)
}

/// What `--dry-run` checks: the states a run would disable on `cpus`, read as the run reads
/// them, nothing written; refused as the run would be.
pub(crate) fn check(cpus: &[usize], max: u32) -> Result<Vec<IdleStateRecord>, String> {
    plan(Path::new(CPU_ROOT), cpus, max)
}

impl IdleStateLimit {
    /// Disables the enabled states deeper than `max` on `cpus`, journaled in `journal_dir`
    /// first. Refused (nothing changed, no journal left) when a CPU has no cpuidle states or
    /// a write fails.
    pub(crate) fn apply(
        cpu_root: &Path,
        journal_dir: OwnedFd,
        cpus: &[usize],
        max: u32,
    ) -> Result<IdleStateLimit, String> {
        let planned = plan(cpu_root, cpus, max)?;
        IdleStateLimit::enact(cpu_root, journal_dir, max, planned)
    }

    /// Journals `planned`, then disables each state; a failure enables again what was done.
    fn enact(
        cpu_root: &Path,
        journal_dir: OwnedFd,
        max: u32,
        disabled: Vec<IdleStateRecord>,
    ) -> Result<IdleStateLimit, String> {
        let journal =
            CString::new(format!("{PREFIX}{}", std::process::id())).expect("no NUL in the name");
        let mut text = format!("{MAGIC}\n");
        for d in &disabled {
            text.push_str(&format!("{} {}\n", d.cpu, d.state));
        }
        let mut file = fs::create_new_at(journal_dir.as_fd(), &journal).map_err(|e| {
            format!(
                "--idle-state-max: cannot write the journal {PREFIX}{} in /run/jitterlab ({e}): without it a killed run could not restore the states",
                std::process::id()
            )
        })?;
        file.write_all(text.as_bytes())
            .and_then(|_| file.sync_all())
            .map_err(|e| format!("--idle-state-max: cannot write the journal: {e}"))?;
        // From here on a failure drops the limit, which enables what was disabled and removes
        // the journal.
        let mut limit = IdleStateLimit {
            cpu_root: cpu_root.to_path_buf(),
            journal_dir,
            journal,
            record: IdleStatesRecord {
                max,
                disabled: Vec::new(),
            },
            restored: false,
        };
        for d in disabled {
            set_disabled(cpu_root, d.cpu, d.state, true)?;
            limit.record.disabled.push(d);
        }
        Ok(limit)
    }

    /// Enables the states again and removes the journal; the failures, as warnings (the
    /// journal then stays, for the next start to retry).
    pub(crate) fn restore(&mut self) -> Vec<String> {
        if std::mem::replace(&mut self.restored, true) {
            return Vec::new();
        }
        let failed: Vec<String> = self
            .record
            .disabled
            .iter()
            .filter_map(|d| set_disabled(&self.cpu_root, d.cpu, d.state, false).err())
            .collect();
        if failed.is_empty() {
            let _ = fs::unlink_at(self.journal_dir.as_fd(), &self.journal, fs::Entry::File);
        }
        failed
    }
}

impl Drop for IdleStateLimit {
    fn drop(&mut self) {
        self.restore();
    }
}

/// The (cpu, state) pairs of a journal's text; None when it is not one of ours.
fn parse_journal(text: &str) -> Option<Vec<(usize, u32)>> {
    let mut lines = text.lines();
    if lines.next()? != MAGIC {
        return None;
    }
    lines
        .map(|l| {
            let (cpu, state) = l.split_once(' ')?;
            Some((cpu.parse().ok()?, state.parse().ok()?))
        })
        .collect()
}

/// Restores the states journaled by jitterlab processes that no longer exist (a SIGKILL)
/// under `cpu_root`, and removes their journals. Journals of live processes stay; one not
/// owned by this user, not a regular file or not in the journal's format is left alone with
/// a warning. Returns the warnings.
pub(crate) fn restore_stale_in(
    cpu_root: &Path,
    journal_dir: &Path,
    proc_root: &Path,
) -> Vec<String> {
    let Ok(dir) = fs::open_dir_nofollow(journal_dir) else {
        return Vec::new();
    };
    let me = crate::sys::process::effective_user_id();
    let mut warnings = Vec::new();
    for (name, path) in super::stale::left_by_gone_runs(journal_dir, PREFIX, proc_root) {
        let c_name = CString::new(name).expect("a directory entry has no NUL");
        // Opened without following a link or blocking on a FIFO, then checked as opened.
        let pairs = fs::open_read_at(dir.as_fd(), &c_name, false)
            .ok()
            .filter(|f| f.metadata().is_ok_and(|m| m.is_file()))
            .filter(|f| fs::owner(f.as_fd()).is_ok_and(|uid| uid == me))
            .and_then(|mut f| {
                let mut text = String::new();
                (&mut f).take(1 << 20).read_to_string(&mut text).ok()?;
                parse_journal(&text)
            });
        let Some(pairs) = pairs else {
            warnings.push(format!(
                "{} is not an idle-state journal this user wrote (not a regular file, another owner, or not in its format); left alone",
                path.display()
            ));
            continue;
        };
        let failed: Vec<String> = pairs
            .iter()
            .filter_map(|&(cpu, state)| set_disabled(cpu_root, cpu, state, false).err())
            .collect();
        if failed.is_empty() {
            let _ = fs::unlink_at(dir.as_fd(), &c_name, fs::Entry::File);
            warnings.push(format!(
                "enabled again {} cpuidle state(s) that a jitterlab killed during --idle-state-max had disabled (journal {})",
                pairs.len(),
                path.display()
            ));
        } else {
            warnings.push(format!(
                "cannot enable the cpuidle states a killed jitterlab disabled (journal {}): {}",
                path.display(),
                failed.join("; ")
            ));
        }
    }
    warnings
}

#[cfg(test)]
mod tests;

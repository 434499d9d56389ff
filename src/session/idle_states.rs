//! `--idle-state-max N` (rtla's `--deepest-idle-state`): the cpuidle states deeper than N are
//! disabled on the measured CPUs for the run, through each state's
//! `/sys/devices/system/cpu/cpuK/cpuidle/stateS/disable`, and enabled again when it ends.
//!
//! Unlike PM QoS (session/pmqos.rs), which the kernel drops with the file descriptor, a
//! `disable` file keeps its value after jitterlab dies. So before changing anything the run
//! writes a journal (journal.rs: in the user's trusted directory, root's
//! `/run/jitterlab-root/idle-states-<pid>`, locked while the run lives) of the states it is
//! about to disable (only states that were enabled: one already disabled is left alone and
//! never enabled by us). The run's end enables them and removes the journal; the next start
//! after a SIGKILL finds the journal without its writer (its lock free) and does the same.
//! A journal holds numbers only: a restore writes `0` to `cpu<N>/cpuidle/state<S>/disable` of
//! the CPU root and nowhere else.

use super::journal::{Journal, Stale, TrustedDir};
use crate::format::run_record::{IdleStateRecord, IdleStatesRecord};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where the kernel lists the CPUs (and, per CPU, its cpuidle states).
pub(crate) const CPU_ROOT: &str = "/sys/devices/system/cpu";
/// The journals' kind (their names: `idle-states-<pid>`).
pub(crate) const KIND: &str = "idle-states";

/// The states disabled for this run; enabled again by [`IdleStateLimit::restore`] or on drop.
#[derive(Debug)]
pub(crate) struct IdleStateLimit {
    cpu_root: PathBuf,
    journal: Option<Journal>,
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
        journal_dir: &TrustedDir,
        cpus: &[usize],
        max: u32,
    ) -> Result<IdleStateLimit, String> {
        let planned = plan(cpu_root, cpus, max)?;
        IdleStateLimit::enact(cpu_root, journal_dir, max, planned)
    }

    /// Journals `planned`, then disables each state; a failure enables again what was done.
    fn enact(
        cpu_root: &Path,
        journal_dir: &TrustedDir,
        max: u32,
        disabled: Vec<IdleStateRecord>,
    ) -> Result<IdleStateLimit, String> {
        let lines: Vec<String> = disabled
            .iter()
            .map(|d| format!("{} {}", d.cpu, d.state))
            .collect();
        let journal = Journal::create(journal_dir, KIND, &lines).map_err(|e| {
            format!(
                "--idle-state-max: cannot write the journal {KIND}-{} in {} ({e}): without it a killed run could not restore the states",
                std::process::id(),
                journal_dir.path().display()
            )
        })?;
        // From here on a failure drops the limit, which enables what was disabled and removes
        // the journal.
        let mut limit = IdleStateLimit {
            cpu_root: cpu_root.to_path_buf(),
            journal: Some(journal),
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
        if failed.is_empty()
            && let Some(journal) = self.journal.take()
        {
            let _ = journal.remove();
        }
        failed
    }
}

impl Drop for IdleStateLimit {
    fn drop(&mut self) {
        self.restore();
    }
}

/// The (cpu, state) pairs of a journal's lines; None when one is not a pair of numbers.
fn parse_journal(lines: &[String]) -> Option<Vec<(usize, u32)>> {
    lines
        .iter()
        .map(|l| {
            let (cpu, state) = l.split_once(' ')?;
            Some((cpu.parse().ok()?, state.parse().ok()?))
        })
        .collect()
}

/// Undoes the journal of a killed run (session/stale.rs): enables again the states it names
/// under `cpu_root`. Returns what to say, and whether the journal is done with (kept when a
/// write failed, for the next start to retry).
pub(crate) fn undo(stale: &Stale, cpu_root: &Path) -> (String, bool) {
    let Some(pairs) = parse_journal(&stale.lines) else {
        return (
            format!(
                "{} is not an idle-state journal in its format; left alone",
                stale.path.display()
            ),
            false,
        );
    };
    let failed: Vec<String> = pairs
        .iter()
        .filter_map(|&(cpu, state)| set_disabled(cpu_root, cpu, state, false).err())
        .collect();
    match failed.is_empty() {
        true => (
            format!(
                "enabled again {} cpuidle state(s) that a jitterlab (pid {}) killed during --idle-state-max had disabled (journal {})",
                pairs.len(),
                stale.pid,
                stale.path.display()
            ),
            true,
        ),
        false => (
            format!(
                "cannot enable the cpuidle states a killed jitterlab (pid {}) disabled (journal {}): {}",
                stale.pid,
                stale.path.display(),
                failed.join("; ")
            ),
            false,
        ),
    }
}

#[cfg(test)]
mod tests;

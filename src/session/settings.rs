//! Kernel settings changed for a while and written back: the sysctl and sysfs files that
//! `jitterlab tune`'s fixes change for one arm (timer migration, RT throttling, the
//! watchdogs, an interrupt's affinity, the workqueues' CPU mask...).
//!
//! Such a file keeps its value after jitterlab dies, so, as for the cpuidle states of
//! `--idle-state-max` (session/idle_states.rs), the value each file had is journalled
//! (journal.rs: `settings-<pid>` in the user's trusted directory, locked while its writer
//! lives) before anything is written; the end of the change writes every file back and
//! removes the journal; the next start after a SIGKILL finds the journal without its writer
//! and writes the files back from it (session/stale.rs).
//!
//! One changer at a time: [`ChangedSettings::apply`] takes a [`SettingsLock`], the machine's
//! one right to change these settings. Two tunes at once each journalled what the other had
//! written as the value "before" and set the machine back to the other's change (the hostile
//! re-run left the workqueues' CPU mask changed that way), and an arm of one measured the
//! other's change as its own baseline.
//!
//! A journal names files, so a restore is confined: every file is relative to the kernel's
//! roots and lies under one of [`ALLOWED`] (no `..`, no absolute path); a journal naming
//! anything else is left alone, whoever wrote it.

use super::journal::{Journal, Stale, TrustedDir};
use crate::format::tune::SettingRecord;
use crate::sys::fs;
use serde::Serialize;
use std::ffi::CString;
use std::fs::File;
use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The journals' kind (their names: `settings-<pid>`).
pub(crate) const KIND: &str = "settings";
/// The root the files are relative to on a real system (a fixture tree in the tests).
pub(crate) const SYSTEM_ROOT: &str = "/";

/// The only places a setting may name: the kernel's tunables that the fixes of
/// `jitterlab tune` change (tune/fixes.rs), and nothing else.
pub(crate) const ALLOWED: &[&str] = &[
    "proc/sys/kernel/",
    "proc/sys/vm/",
    "proc/irq/",
    "sys/kernel/mm/transparent_hugepage/",
    "sys/kernel/mm/ksm/",
    "sys/devices/virtual/workqueue/",
];

/// One file to set: its path below the root (`proc/sys/kernel/timer_migration`) and the value
/// to write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Setting {
    pub file: String,
    pub value: String,
    /// The kernel may refuse it without the change being wrong (an interrupt whose affinity
    /// cannot be set: a per-CPU or managed one): a refusal is recorded, not an error.
    pub(crate) may_refuse: bool,
}

impl Setting {
    pub(crate) fn new(file: impl Into<String>, value: impl Into<String>) -> Setting {
        Setting {
            file: file.into(),
            value: value.into(),
            may_refuse: false,
        }
    }
}

/// Why `file` may not be named by a setting; None when it may.
pub(crate) fn refuse_file(file: &str) -> Option<String> {
    let inside = ALLOWED.iter().any(|a| file.starts_with(a));
    let clean = !file.starts_with('/')
        && file
            .split('/')
            .all(|c| !c.is_empty() && c != ".." && c != ".");
    match inside && clean {
        true => None,
        false => Some(format!(
            "{file} is not a kernel setting jitterlab changes (only files below /{} may be)",
            ALLOWED.join(", /")
        )),
    }
}

/// A value fit for a journal line and a kernel file: one line, no tab.
fn refuse_value(value: &str) -> Option<String> {
    (value.contains(['\n', '\t', '\0']) || value.is_empty())
        .then(|| format!("the value {value:?} is not one line of text"))
}

/// The value of a kernel file as it is written back: trimmed; for a choice file
/// (`always [madvise] never`), the selected word.
pub(crate) fn read_value(root: &Path, file: &str) -> Result<String, String> {
    let path = root.join(file);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let text = text.trim();
    let selected = text
        .split_whitespace()
        .find_map(|w| w.strip_prefix('[')?.strip_suffix(']'));
    Ok(selected.unwrap_or(text).to_string())
}

/// Writes `value` to an existing kernel file (never made: a missing one is an error), as
/// `echo V > FILE` writes it (the kernel ignores the truncation; a fixture file needs it).
fn write_value(root: &Path, file: &str, value: &str) -> Result<(), String> {
    let path = root.join(file);
    std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&path)
        .and_then(|mut f| f.write_all(value.as_bytes()))
        .map_err(|e| format!("cannot write {value} to {}: {e}", path.display()))
}

/// The lock file's name in the journals' directory.
pub(crate) const LOCK_NAME: &str = "settings.lock";

/// The right to change kernel settings on this machine, held by one process at a time: an
/// exclusive flock on [`LOCK_NAME`] in the journals' directory (root's is root's alone), which
/// the kernel releases when its holder dies, SIGKILL included. A `tune` holds it from its
/// start to its end, across its arms, so that no other changes a setting between two arms.
///
/// The settings are the whole machine's (RT throttling, the workqueues' CPU mask, timer
/// migration, interrupts' affinity), so the lock also holds every online CPU's lock
/// (`cpulock.rs`), as a run holds its CPUs': a tune beside another jitterlab's measurement of
/// any CPU is refused at once (exit 3, naming it), and a run, noise, monitor or drop-in started
/// during a tune is refused by the lock of its CPU, naming the tune (seventh hostile re-run,
/// S1: a tune on CPU 1 turned RT throttling off and moved every workqueue onto CPU 0 under a
/// run measuring CPU 0, whose record said the settings it began with).
#[derive(Debug)]
pub(crate) struct SettingsLock {
    _file: File,
    _cpus: Option<super::cpulock::CpuLocks>,
}

impl SettingsLock {
    /// Takes the lock and every online CPU's, or says who holds one and what to do. Never
    /// waits: a second tune started beside a first one is refused at once rather than
    /// measuring the first's arms.
    pub(crate) fn take(dir: &TrustedDir) -> Result<SettingsLock, String> {
        let online = crate::cpulist::online_cpus()?;
        Self::take_with_cpus(dir, &online)
    }

    /// [`SettingsLock::take`] with the locks of `cpus` (none: the tests of the lock alone).
    pub(crate) fn take_with_cpus(dir: &TrustedDir, cpus: &[usize]) -> Result<SettingsLock, String> {
        let mut lock = Self::take_settings(dir)?;
        if !cpus.is_empty() {
            let locks = super::cpulock::take_for_settings(cpus).map_err(|f| {
                format!(
                    "kernel settings are the whole machine's (RT throttling, the workqueues' CPUs, timer migration, interrupts' affinity), so they are changed only while no other jitterlab measures any CPU: {}",
                    f.message
                )
            })?;
            lock._cpus = Some(locks);
        }
        Ok(lock)
    }

    fn take_settings(dir: &TrustedDir) -> Result<SettingsLock, String> {
        let name = CString::new(LOCK_NAME).expect("no NUL in the name");
        let path = dir.path().join(LOCK_NAME);
        let file = match fs::open_read_at(dir.fd(), &name, true) {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                fs::open_read_at(dir.fd(), &name, false)
            }
            other => other,
        }
        .map_err(|e| match e.raw_os_error() {
            // Opened without following a link: one planted there is said as the other
            // planted kinds are (seventh hostile re-run, L7-b).
            Some(crate::sys::errno::ELOOP) => format!(
                "{} is not a lock file of this user (a symbolic link): remove it",
                path.display()
            ),
            _ => format!("cannot open the settings lock {}: {e}", path.display()),
        })?;
        let meta = file
            .metadata()
            .map_err(|e| format!("cannot read the settings lock {}: {e}", path.display()))?;
        if !meta.is_file() || meta.uid() != crate::sys::process::effective_user_id() {
            return Err(format!(
                "{} is not a lock file of this user: remove it",
                path.display()
            ));
        }
        match fs::try_lock_exclusive(file.as_fd()) {
            Ok(true) => Ok(SettingsLock {
                _file: file,
                _cpus: None,
            }),
            Ok(false) => Err(format!(
                "another jitterlab is changing kernel settings on this machine (a `tune`; it holds {}): two at once would each set the other's changes back wrongly; wait for it to end (`fuser {}` names it)",
                path.display(),
                path.display()
            )),
            Err(e) => Err(format!("cannot lock {}: {e}", path.display())),
        }
    }
}

/// Settings in force; written back by [`ChangedSettings::restore`] or on drop.
#[derive(Debug)]
pub(crate) struct ChangedSettings {
    root: PathBuf,
    journal: Option<Journal>,
    pub(crate) record: Vec<SettingRecord>,
    restored: bool,
}

impl ChangedSettings {
    /// Journals the present value of every file of `settings` that would change, then writes
    /// them in order. Refused (nothing left changed, no journal left) when a file may not be
    /// named, cannot be read, or a write fails that may not be refused. Nothing to change
    /// writes no journal. `_lock`: only its holder changes settings.
    pub(crate) fn apply(
        _lock: &SettingsLock,
        root: &Path,
        journal_dir: &TrustedDir,
        settings: &[Setting],
    ) -> Result<ChangedSettings, String> {
        let mut planned = Vec::new();
        for s in settings {
            if let Some(why) = refuse_file(&s.file).or_else(|| refuse_value(&s.value)) {
                return Err(why);
            }
            let before = read_value(root, &s.file)?;
            if let Some(why) = refuse_value(&before) {
                return Err(format!("{}: {why}", root.join(&s.file).display()));
            }
            if before != s.value {
                planned.push((s, before));
            }
        }
        if planned.is_empty() {
            return Ok(ChangedSettings {
                root: root.to_path_buf(),
                journal: None,
                record: Vec::new(),
                restored: false,
            });
        }
        let lines: Vec<String> = planned
            .iter()
            .map(|(s, before)| format!("{}\t{before}", s.file))
            .collect();
        let journal = Journal::create(journal_dir, KIND, &lines).map_err(|e| {
            format!(
                "cannot write the journal {KIND}-{} in {} ({e}): without it a killed run could not set the kernel's settings back",
                std::process::id(),
                journal_dir.path().display()
            )
        })?;
        // From here on a failure drops `changed`, which writes back what was written and
        // removes the journal.
        let mut changed = ChangedSettings {
            root: root.to_path_buf(),
            journal: Some(journal),
            record: Vec::new(),
            restored: false,
        };
        for (s, before) in planned {
            let file = root.join(&s.file).display().to_string();
            match write_value(root, &s.file, &s.value) {
                Ok(()) => changed.record.push(SettingRecord {
                    file,
                    before,
                    during: Some(s.value.clone()),
                    refused: None,
                    restored: false,
                }),
                Err(why) if s.may_refuse => changed.record.push(SettingRecord {
                    file,
                    before,
                    during: None,
                    refused: Some(why),
                    restored: true,
                }),
                Err(why) => return Err(why),
            }
        }
        Ok(changed)
    }

    /// Writes every changed file back and removes the journal; the failures, as warnings
    /// (the journal then stays, for the next start to retry).
    pub(crate) fn restore(&mut self) -> Vec<String> {
        if std::mem::replace(&mut self.restored, true) {
            return Vec::new();
        }
        let mut failed = Vec::new();
        for r in self.record.iter_mut().filter(|r| r.during.is_some()) {
            let file = Path::new(&r.file)
                .strip_prefix(&self.root)
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_else(|_| r.file.clone());
            match write_value(&self.root, &file, &r.before) {
                Ok(()) => r.restored = true,
                Err(e) => failed.push(e),
            }
        }
        if failed.is_empty()
            && let Some(journal) = self.journal.take()
        {
            let _ = journal.remove();
        }
        failed
    }
}

impl Drop for ChangedSettings {
    fn drop(&mut self) {
        self.restore();
    }
}

/// The (file, value before) pairs of a journal's lines; None when one is not such a pair or
/// names a file no setting may name.
fn parse_journal(lines: &[String]) -> Option<Vec<(String, String)>> {
    lines
        .iter()
        .map(|l| {
            let (file, before) = l.split_once('\t')?;
            (refuse_file(file).is_none() && refuse_value(before).is_none())
                .then(|| (file.to_string(), before.to_string()))
        })
        .collect()
}

/// Undoes the journal of a killed run (session/stale.rs): writes back the values it names
/// below `root`. Returns what to say, and whether the journal is done with (kept when a
/// write failed, for the next start to retry).
pub(crate) fn undo(stale: &Stale, root: &Path) -> (String, bool) {
    let Some(pairs) = parse_journal(&stale.lines) else {
        return (
            format!(
                "{} is not a settings journal in its format, or names a file outside the kernel settings jitterlab changes; left alone",
                stale.path.display()
            ),
            false,
        );
    };
    // A file that already reads as it did is set back, whether its write was refused (a
    // managed interrupt's affinity, which the kernel keeps) or the run died before it: its
    // write would fail for ever and hold the journal, and every later start would say so.
    let failed: Vec<String> = pairs
        .iter()
        .filter(|(file, before)| read_value(root, file).as_ref() != Ok(before))
        .filter_map(|(file, before)| write_value(root, file, before).err())
        .collect();
    let files: Vec<String> = pairs.iter().map(|(f, v)| format!("/{f} = {v}")).collect();
    match failed.is_empty() {
        true => (
            format!(
                "set back {} kernel setting(s) that a jitterlab (pid {}) killed during `tune` had changed: {} (journal {})",
                pairs.len(),
                stale.pid,
                files.join(", "),
                stale.path.display()
            ),
            true,
        ),
        false => (
            format!(
                "cannot set back the kernel settings a killed jitterlab (pid {}) changed (journal {}): {}",
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

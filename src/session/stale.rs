//! What a killed jitterlab leaves behind, undone at the next start: the kernel state named by
//! journals without a writer (journal.rs) in this user's trusted directory, each
//! undone by its kind's module. Nothing is recognised by its name alone, and nothing is read
//! from a place another user can write: entries there are ignored and counted in one warning,
//! never one warning each.

use super::journal::{self, TrustedDir};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// Where the kernel state the journals name lives (fixture trees in the tests).
pub(crate) struct Roots {
    /// The CPUs' sysfs directory (idle states).
    pub(crate) cpu: PathBuf,
    /// The cgroup v1 cpuset hierarchy.
    pub(crate) cpuset: PathBuf,
    /// The root below which the kernel settings of `tune` lie (`/`).
    pub(crate) settings: PathBuf,
}

impl Roots {
    fn system() -> Roots {
        Roots {
            cpu: PathBuf::from(super::idle_states::CPU_ROOT),
            cpuset: PathBuf::from(super::cpuset::CPUSET_V1),
            settings: PathBuf::from(super::settings::SYSTEM_ROOT),
        }
    }
}

/// The kinds of journal, each with what it names (for the messages) and what undoes it: what
/// to say (if anything) and whether the journal is done with.
type Undo = fn(&journal::Stale, &Roots) -> (Option<String>, bool);
const KINDS: &[(&str, &str, Undo)] = &[
    (super::idle_states::KIND, "cpuidle states", |s, roots| {
        let (said, done) = super::idle_states::undo(s, &roots.cpu);
        (Some(said), done)
    }),
    (super::settings::KIND, "kernel settings", |s, roots| {
        let (said, done) = super::settings::undo(s, &roots.settings);
        (Some(said), done)
    }),
    (super::cpuset::KIND, "a cpuset", |s, roots| {
        super::cpuset::undo(s, &roots.cpuset)
    }),
    (super::cpuset::v2::KIND, "a cgroup2 cpuset", |s, _| {
        super::cpuset::v2::undo_on_system(s)
    }),
    // The journals of these name absolute paths, or process groups.
    (crate::trace::tracefs::KIND, "a tracing instance", |s, _| {
        crate::trace::tracefs::undo(s)
    }),
    (crate::load::contain::KIND, "a load cgroup", |s, _| {
        crate::load::contain::undo(s)
    }),
    (
        super::children::KIND,
        "an --on-threshold/--on-end program's process group",
        |s, _| super::children::undo(s),
    ),
    (crate::trace::timerlat::KIND, "osnoise options", |s, _| {
        crate::trace::timerlat::osnoise::undo(s)
    }),
    // Last: what the kernel state's journals said of the same killed run comes first.
    (RUN_DIR_KIND, "a result directory", |s, _| undo_run_dir(s)),
];

/// The journal of a run's result directory (`result-dir-<pid>`): written once the directory
/// holds its first run.json, removed once the last is written. Found without a writer, its
/// run was killed before it could write its end: the next command that changes the system
/// (the next `run`) says so, naming the directory, as `report` and `export` of it do
/// ([`owner_notice`]; issue 42: only those two said it).
pub(crate) const RUN_DIR_KIND: &str = "result-dir";

/// Journals the result directory `path` of the run starting now; None (nothing said: the
/// notice is a courtesy, the run's own files say `running` all the same) when there is no
/// trusted directory or the path cannot be one line.
pub(crate) fn journal_run_dir(path: &Path) -> Option<journal::Journal> {
    let absolute = std::path::absolute(path).ok()?;
    let line = format!("dir {}", absolute.to_str()?);
    if line.contains('\n') {
        return None;
    }
    let dir = TrustedDir::for_this_user(true).ok()?;
    journal::Journal::create(&dir, RUN_DIR_KIND, &[line]).ok()
}

/// A killed run's result directory: said when its run.json still says `running` (its process
/// is gone: the journal has no writer), with what `report` and `export` say of it; nothing to
/// say when it is gone or ended. The directory is not touched. (`report` and `export` tell a
/// killed run by its CPU locks, [`owner_notice`]; here the journal's missing writer tells.)
fn undo_run_dir(s: &journal::Stale) -> (Option<String>, bool) {
    let Some(path) = s.field("dir").map(PathBuf::from) else {
        return s.not_in_format("a result directory");
    };
    let Ok(record) = crate::results::loaded::open(&path).map(|run| run.record) else {
        return (None, true);
    };
    if record.ended != crate::format::run_record::Ended::Running {
        return (None, true);
    }
    // The journal without a writer is the proof: its process ended without removing it.
    let said = format!(
        "a jitterlab (pid {}) was killed during this boot: its result directory {} says `ended: running`, and its process is gone (killed by SIGKILL, a crash, or a power loss before it could write its end); what it flushed before is read as it is, and `report` and `export` of it say it was killed",
        s.pid,
        crate::error::display_path(&path)
    );
    (Some(said), true)
}

/// What [`undo_at_start`] undid, kept for the first session of the process to record in its
/// run.json; set once per process.
static AT_START: OnceLock<Mutex<Vec<String>>> = OnceLock::new();

/// Undoes what killed jitterlabs of this user left, once per process, before the command
/// changes anything: called by `commands::dispatch` for every command that changes the system
/// (tests/offline/kernel_state.rs checks it), so that a killed `load`, `sweep` or `monitor` is
/// cleaned up by whatever command comes next, not only by a `run`. Says each warning on stderr
/// at once; the first session (if the command has one) also records them in its run.json
/// (`take_start_warnings`).
pub(crate) fn undo_at_start() {
    AT_START.get_or_init(|| {
        let warnings = undo_now();
        for w in &warnings {
            eprintln!("jitterlab: warning: {}", crate::error::escape_controls(w));
        }
        Mutex::new(warnings)
    });
    super::startup::mark("journals of killed runs undone");
}

/// The warnings of [`undo_at_start`] (undoing now, unsaid, when no command did: library use,
/// the tests that start a session directly), for the first session's run.json; later calls
/// get none, as what was undone before the command started is said once.
pub(crate) fn take_start_warnings() -> Vec<String> {
    let slot = AT_START.get_or_init(|| Mutex::new(undo_now()));
    std::mem::take(&mut *slot.lock().unwrap_or_else(|e| e.into_inner()))
}

/// The journals of killed runs undone (the cpusets of --cpuset-partition, the cpuidle states
/// of --idle-state-max, the tracing instances of --trace, the loads' cgroups, what is left of
/// the actions' process groups), then the loads of a jitterlab killed with its reaper (found
/// by their marker); the warnings.
fn undo_now() -> Vec<String> {
    let mut warnings = undo_killed_runs();
    warnings.extend(crate::load::contain::kill_orphaned_loads());
    journal::start_undone();
    warnings
}

/// Undoes what killed runs of this user left (their journals in its trusted directory, if
/// there is one). Returns the warnings.
fn undo_killed_runs() -> Vec<String> {
    let dir = TrustedDir::for_this_user(false);
    undo_in(dir, Path::new(super::cpulock::LOCK_DIR), &Roots::system())
}

/// [`undo_killed_runs`] with the trusted directory `dir` (or why there is none), the shared
/// directory `shared` and the state under `roots`.
pub(crate) fn undo_in(
    dir: Result<TrustedDir, Option<String>>,
    shared: &Path,
    roots: &Roots,
) -> Vec<String> {
    let mut warnings = Vec::new();
    if let Some(w) = journal_names_in_shared(shared) {
        warnings.push(w);
    }
    let dir = match dir {
        Ok(dir) => dir,
        Err(None) => return warnings,
        Err(Some(why)) => {
            warnings.push(format!(
                "the journals of killed runs cannot be read: {why}; what a killed jitterlab left (a cpuset, cpuidle states, a tracing instance, a load cgroup, an action's processes) is not undone, and what needs a journal is refused until then (exit 3: exec: actions, --cpuset-partition, --idle-state-max, --trace with tracefs)"
            ));
            return warnings;
        }
    };
    let mut foreign = Vec::new();
    // Killed runs whose journals' state was gone already: (pid, what they named), said once
    // per run, so that every killed run is said, whatever was left of it (L8).
    let mut gone: Vec<(u32, Vec<&str>)> = Vec::new();
    for (kind, what, undo) in KINDS {
        let scan = journal::scan(&dir, kind);
        foreign.extend(scan.foreign);
        for stale in scan.stale {
            if !stale.this_boot {
                // What it names did not survive the reboot.
                stale.remove(&dir);
                continue;
            }
            let (said, done) = undo(&stale, roots);
            if said.is_none() && done {
                match gone.iter_mut().find(|(pid, _)| *pid == stale.pid) {
                    Some((_, whats)) if !whats.contains(what) => whats.push(what),
                    Some(_) => {}
                    None => gone.push((stale.pid, vec![what])),
                }
            }
            warnings.extend(said);
            if done {
                stale.remove(&dir);
            }
        }
    }
    for (pid, whats) in gone {
        warnings.push(format!(
            "a jitterlab (pid {pid}) was killed during this boot: its journals in {} named {}, which were gone already (removed by its helper, or made anew by someone else since): nothing left to undo; its result directory, if it made one, says `ended: running`, and `report` and `export` say it was killed",
            dir.path().display(),
            whats.join(", ")
        ));
    }
    if !foreign.is_empty() {
        warnings.push(format!(
            "ignored {} entr{} in {} named as journals that this user's jitterlab did not write (not a regular file of this user, writable by others, or not in the format; e.g. {}): never obeyed or removed",
            foreign.len(),
            if foreign.len() == 1 { "y" } else { "ies" },
            dir.path().display(),
            examples(&foreign)
        ));
    }
    warnings
}

/// One warning counting the entries of the shared directory named as journals (journals
/// never live there: anyone can write it), or None.
fn journal_names_in_shared(shared: &Path) -> Option<String> {
    let Ok(entries) = std::fs::read_dir(shared) else {
        return None;
    };
    let mut names: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| KINDS.iter().any(|(k, ..)| journal::is_journal_name(n, k)))
        .collect();
    if names.is_empty() {
        return None;
    }
    names.sort();
    Some(format!(
        "ignored {} entr{} in {} named as journals (e.g. {}): journals are read only from the user's own directory ({} for root), since any user can write {}; an older jitterlab killed during --idle-state-max may have left cpuidle states disabled: `jitterlab doctor` lists them",
        names.len(),
        if names.len() == 1 { "y" } else { "ies" },
        shared.display(),
        examples(&names),
        journal::ROOT_DIR,
        shared.display()
    ))
}

/// What `report` and `export` say of a run whose run.json says `ended: running` (written at
/// its start and at each update, rewritten at its end): whether its owner is gone. A running
/// run holds the locks of its CPUs (cpulock.rs) until its process ends, however it ends; so on
/// the machine that made it, no holder of any of them means that its process is gone: killed
/// (SIGKILL, a crash, a power loss) before it could write its end. A lock held may be this
/// run's or another's: it may still run. Made on another host: it cannot be told here. None
/// for a run that ended. The run's files are left as they are (results are never rewritten).
/// A root run (its run.json root's, at `dir`) held root's own locks too, unless it said it
/// could not take them: those alone tell ([`super::cpulock::holders_of_run`]).
pub(crate) fn owner_notice(
    record: &crate::format::run_record::RunRecord,
    dir: &Path,
) -> Option<String> {
    use crate::format::run_record::Ended;
    use std::os::unix::fs::MetadataExt;
    if record.ended != Ended::Running || record.imported.is_some() {
        return None;
    }
    let cpus = &record.plan.cpus;
    let host = crate::doctor::host::hostname();
    let made_on = record.system.get("hostname").and_then(|h| h.as_str());
    let root_run = std::fs::symlink_metadata(dir.join("run.json")).is_ok_and(|m| m.uid() == 0)
        && !record
            .warnings
            .iter()
            .any(|w| w.contains("root's own lock could not be taken"));
    owner_notice_on(
        cpus,
        made_on.filter(|h| *h != host),
        super::cpulock::holders_of_run(cpus, root_run),
    )
}

/// Says [`owner_notice`] of a run read for a view (`report`, `export`) from `dir`: on stderr
/// now, and among the run's warnings, which the views show; the files are not touched.
pub(crate) fn note_owner(record: &mut crate::format::run_record::RunRecord, dir: &Path) {
    if let Some(notice) = owner_notice(record, dir) {
        eprintln!(
            "jitterlab: warning: {}",
            crate::error::escape_controls(&notice)
        );
        record.warnings.push(notice);
    }
}

/// [`owner_notice`] of a run of `cpus`, made on `other_host` (None: this host), with the
/// holders of their locks.
fn owner_notice_on(
    cpus: &[usize],
    other_host: Option<&str>,
    holders: Result<Vec<(usize, String)>, String>,
) -> Option<String> {
    let list = crate::cpulist::format_cpu_list(cpus);
    if let Some(host) = other_host {
        return Some(format!(
            "run.json says `ended: running`: the run was made on host {host}, not this one, so whether its process still runs cannot be told here; if it no longer runs, it was killed (SIGKILL, a crash, a power loss) before it could write its end"
        ));
    }
    match holders {
        Ok(held) if held.is_empty() => Some(format!(
            "killed: run.json says `ended: running`, but no process holds the locks of its CPUs ({list}), which a run holds until its process ends: its process is gone, killed (SIGKILL, a crash, a power loss) before it could write its end; what it flushed before is read as it is"
        )),
        Ok(held) => Some(format!(
            "run.json says `ended: running`, and CPU {} is locked by {}: the run may still be running (or was killed, and another run measures that CPU now)",
            held[0].0, held[0].1
        )),
        Err(why) => Some(format!(
            "run.json says `ended: running`: whether its process still runs cannot be told ({why})"
        )),
    }
}

/// The first three names, quoted and with control characters escaped.
fn examples(names: &[String]) -> String {
    let shown: Vec<String> = names
        .iter()
        .take(3)
        .map(|n| format!("'{}'", crate::error::escape_controls(n)))
        .collect();
    match names.len() > 3 {
        true => format!("{}, ...", shown.join(", ")),
        false => shown.join(", "),
    }
}

#[cfg(test)]
mod tests;

//! What every rt-tests drop-in (`cyclictest`, `oslat`, `timerlat`) does before it measures:
//! claim the files its tool's options name (`--json=FILE`, `--histfile=FILE`), so that a path
//! that cannot be written is refused before the measurement, not after it; and once its tool's
//! output is printed: name the result directory on stderr (stdout belongs to the tool's own
//! format, which scripts parse) and turn the run's end into the tool's exit code.

use crate::error::{ExitCode, Failure, Result};
use crate::format::run_record::Ended;
use crate::format::samplelog::SampleLogReader;
use crate::plan::RunPlan;
use crate::results::dir::OutputFile;
use crate::session::RunOutcome;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The drop-ins' option for the result directory (`--out` is not theirs: their tools' options
/// come first).
pub(crate) const OUT_OPTION: &str = "--jitterlab-out";

/// The plan of a drop-in's measurement, made by `run`'s or `noise`'s resolution from the
/// option groups it fills, with the result directory named as the drop-in's user names it
/// ([`OUT_OPTION`]) in every message about it.
pub(crate) fn as_dropin(mut plan: RunPlan) -> RunPlan {
    plan.out_option = OUT_OPTION;
    // Never in the working directory unless asked: a CI checkout stays clean (issue 42).
    if plan.out.is_none() {
        plan.out = Some(default_out(SystemTime::now()));
        // A name the user did not choose, in a directory the user did not choose: made with
        // a default name's checks (every directory above it this user's or root's, none
        // writable by others without a sticky bit), as `run`'s default is (eighth hostile
        // re-run, D1: another user's 0777 `/tmp/jitterlab-<uid>/results` held the results,
        // which she then replaced).
        plan.out_is_default = true;
    }
    // `--no-mlock` is not theirs: oslat and timerlat lock as their tools do, and a refused
    // lock's fixes are root, CAP_IPC_LOCK or the limit; cyclictest names its own (`-m`).
    plan.mlock_fix = None;
    plan
}

/// The state directory that holds the drop-ins' result directories when `--jitterlab-out` names
/// none (docs/cyclictest.md "Result directory"): `$XDG_STATE_HOME/jitterlab/results`, else
/// `$HOME/.local/state/jitterlab/results` (the XDG base directory default), else, with neither
/// set to an absolute path, `<temp dir>/jitterlab-<uid>/results`. Never the working directory:
/// an rt-tests tool writes nothing there, and a CI checkout must stay clean (issue 42).
///
/// Root never makes its directories inside another user's: where the directory that would
/// receive root's new entries (the nearest existing one of that path) is not root's (`sudo -E`
/// keeps the user's HOME), root's own state directory (`<root's home>/.local/state`) is used
/// (eighth hostile re-run, D2: root-owned `~/.local` and `~/.local/state` in the user's home,
/// which the user could no longer write, nor remove the results from).
pub(crate) fn state_results_dir() -> PathBuf {
    let chosen =
        state_results_dir_from(std::env::var_os("XDG_STATE_HOME"), std::env::var_os("HOME"));
    if crate::sys::process::effective_user_id() != 0 {
        return chosen;
    }
    roots_own(chosen, nearest_owner, crate::sys::process::user_home(0))
}

/// `chosen` for root, or root's own state directory (in `root_home`) when the nearest
/// existing directory of `chosen` (`owner` of it) is another user's.
fn roots_own(
    chosen: PathBuf,
    owner: impl Fn(&Path) -> Option<u32>,
    root_home: Option<String>,
) -> PathBuf {
    if owner(&chosen).is_none_or(|uid| uid == 0) {
        return chosen;
    }
    match root_home.map(PathBuf::from).filter(|h| h.is_absolute()) {
        Some(home) => home.join(".local/state/jitterlab/results"),
        None => std::env::temp_dir().join("jitterlab-0/results"),
    }
}

/// The owner of the nearest existing directory of `path` (itself or an ancestor); None when
/// none can be read.
fn nearest_owner(path: &Path) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    path.ancestors()
        .find_map(|p| std::fs::symlink_metadata(p).ok())
        .map(|m| m.uid())
}

fn state_results_dir_from(xdg_state: Option<OsString>, home: Option<OsString>) -> PathBuf {
    let absolute = |v: Option<OsString>| v.map(PathBuf::from).filter(|p| p.is_absolute());
    if let Some(state) = absolute(xdg_state) {
        return state.join("jitterlab/results");
    }
    if let Some(home) = absolute(home) {
        return home.join(".local/state/jitterlab/results");
    }
    std::env::temp_dir().join(format!(
        "jitterlab-{}/results",
        crate::sys::process::effective_user_id()
    ))
}

/// A drop-in's default result directory: `run`'s default name (`<UTC time>-<host>-<pid>`) in
/// [`state_results_dir`].
pub(crate) fn default_out(start: SystemTime) -> PathBuf {
    let name = crate::results::dir::default_path(start, &crate::doctor::host::hostname());
    let name = name.file_name().map_or_else(|| name.clone(), PathBuf::from);
    state_results_dir().join(name)
}

/// Where a drop-in's output file goes: `-` is standard output (`--json=-`), as for every
/// output file jitterlab writes, but where the tool takes it as a file name
/// (`cyclictest --histfile=-`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dash {
    Stdout,
    AFile,
}

/// Claims the file `path` of `tool`'s `option` (see [`OutputFile::claim`]): exit 2 (3 without
/// permission), the tool named, before anything is measured or any result directory made.
pub(crate) fn claim_output(
    tool: &str,
    option: &str,
    path: &Path,
    dash: Dash,
) -> Result<OutputFile> {
    match dash {
        Dash::Stdout => OutputFile::claim(path, option, &[]),
        Dash::AFile => OutputFile::claim_dash_as_a_file(path, option),
    }
    .map_err(|f| Failure {
        code: f.code,
        message: format!("{tool}: {}", f.message),
    })
}

/// The sample log of the run a drop-in just measured in `run_dir`, read through
/// `results::loaded` (the one reader of a result directory). Every drop-in keeps its samples
/// (their figures are computed from them), so a run without samples.bin is an error.
pub(crate) fn sample_log(run_dir: &Path) -> std::result::Result<SampleLogReader, String> {
    crate::results::loaded::sample_log(run_dir)?.ok_or_else(|| {
        format!(
            "{}: the run kept no {}",
            run_dir.display(),
            crate::format::samplelog::FILE_NAME
        )
    })
}

/// Prints where the results are and returns the exit code: 4 for a failed run (its reason on
/// stderr), else 0, as the tools exit 0 after a completed or interrupted run.
pub(crate) fn finish(outcome: &RunOutcome) -> i32 {
    eprintln!(
        "jitterlab: result directory {} (jitterlab report, compare and export read it)",
        outcome.dir.path.display()
    );
    match outcome.record.ended {
        Ended::Failed => {
            let why = outcome.record.end_reason.as_deref().unwrap_or("a failure");
            eprintln!("jitterlab: the run failed: {why}");
            ExitCode::Run as i32
        }
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_directory_is_xdg_state_home_then_home_never_the_working_directory() {
        let os = |s: &str| Some(OsString::from(s));
        assert_eq!(
            state_results_dir_from(os("/s"), os("/h")),
            PathBuf::from("/s/jitterlab/results")
        );
        // A relative value is ignored, as the XDG specification says.
        assert_eq!(
            state_results_dir_from(os("rel"), os("/h")),
            PathBuf::from("/h/.local/state/jitterlab/results")
        );
        let fallback = state_results_dir_from(None, os("rel"));
        assert!(fallback.is_absolute(), "{}", fallback.display());
        assert!(fallback.ends_with("results"));
        // Root keeps a directory of another user's (sudo -E's HOME) for its own (D2).
        let owners = |bob: u32| {
            move |p: &Path| match p.starts_with("/home/bob") {
                true => Some(bob),
                false => Some(0),
            }
        };
        let bobs = PathBuf::from("/home/bob/.local/state/jitterlab/results");
        assert_eq!(
            roots_own(bobs.clone(), owners(1002), Some("/root".into())),
            PathBuf::from("/root/.local/state/jitterlab/results")
        );
        assert_eq!(
            roots_own(bobs.clone(), owners(0), Some("/root".into())),
            bobs
        );
        assert_eq!(
            roots_own(bobs.clone(), owners(1002), None),
            std::env::temp_dir().join("jitterlab-0/results")
        );
        let out = default_out(SystemTime::UNIX_EPOCH);
        assert!(out.is_absolute(), "{}", out.display());
        assert!(
            out.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("19700101T000000Z-")
        );
    }
}

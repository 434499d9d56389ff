//! The kernel's `osnoise/` options (`cpus`, `timerlat_period_us`, `stop_tracing_us`, ...):
//! global kernel state, shared by every instance of the osnoise and timerlat tracers, which
//! keeps its value after jitterlab dies. So, as for every other state a run changes
//! (journal.rs), the values found are journaled before anything is written, written back at
//! the end, and written back by the next start after a SIGKILL (session/stale.rs, [`undo`]).
//!
//! A journal (`osnoise-options-<pid>`) holds `dir <the osnoise directory>` and one `file NAME
//! VALUE` per option: the value found before the run. An undo writes only the files of
//! [`FILES`] in a directory named `osnoise` of a tracefs mount.

use crate::journal::{Journal, Stale, TrustedDir};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The journals' kind.
pub(crate) const KIND: &str = "osnoise-options";

/// The options jitterlab may set, and an undo may write back.
pub(crate) const FILES: &[&str] = &[
    "cpus",
    "timerlat_period_us",
    "stop_tracing_us",
    "stop_tracing_total_us",
    "print_stack",
];

/// Writes `value` to the file `name` of `dir` (an existing tracefs file: never created),
/// truncated as a shell's `echo V > FILE` does (tracefs takes the whole write as the value; a
/// plain file, as in the tests, then holds it alone).
fn write(dir: &Path, name: &str, value: &str) -> Result<(), String> {
    let path = dir.join(name);
    std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&path)
        .and_then(|mut f| f.write_all(value.as_bytes()))
        .map_err(|e| format!("cannot write '{value}' to {}: {e}", path.display()))
}

fn read(dir: &Path, name: &str) -> Result<String, String> {
    let path = dir.join(name);
    super::super::format::read_tracefs_file(&path)
        .map(|s| s.trim().to_string())
        .map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// The options set for a run; written back by [`Settings::restore`] or on drop.
#[derive(Debug)]
pub(crate) struct Settings {
    dir: PathBuf,
    /// (file, value found), for each file written.
    saved: Vec<(String, String)>,
    journal: Option<Journal>,
    restored: bool,
}

impl Settings {
    /// Journals the values of `wanted`'s files in `dir` (the tracefs `osnoise` directory), then
    /// writes `wanted`. A failure writes back what was written and removes the journal.
    pub(crate) fn apply(
        dir: &Path,
        journal_dir: &TrustedDir,
        wanted: &[(&str, String)],
    ) -> Result<Settings, String> {
        let mut saved = Vec::new();
        for (name, _) in wanted {
            debug_assert!(FILES.contains(name), "{name} is not in FILES");
            saved.push((name.to_string(), read(dir, name)?));
        }
        let mut lines = vec![format!("dir {}", dir.display())];
        lines.extend(saved.iter().map(|(n, v)| format!("file {n} {v}")));
        let journal = Journal::create(journal_dir, KIND, &lines).map_err(|e| {
            format!(
                "cannot write the journal {KIND}-{} in {} ({e}): without it a killed run could not set back the kernel's osnoise options",
                std::process::id(),
                journal_dir.path().display()
            )
        })?;
        // From here on a failure drops the settings, which writes back what was found.
        let mut settings = Settings {
            dir: dir.to_path_buf(),
            saved: Vec::new(),
            journal: Some(journal),
            restored: false,
        };
        for ((name, value), found) in wanted.iter().zip(saved) {
            settings.saved.push(found);
            write(dir, name, value)?;
        }
        Ok(settings)
    }

    /// Writes back the values found and removes the journal; the failures, as warnings (the
    /// journal then stays, for the next start to retry).
    pub(crate) fn restore(&mut self) -> Vec<String> {
        if std::mem::replace(&mut self.restored, true) {
            return Vec::new();
        }
        let failed = write_back(&self.dir, &self.saved);
        if failed.is_empty()
            && let Some(journal) = self.journal.take()
        {
            let _ = journal.remove();
        }
        failed
    }
}

impl Drop for Settings {
    fn drop(&mut self) {
        for e in self.restore() {
            eprintln!("jitterlab: {e}");
        }
    }
}

/// Writes the values back, last written first; the failures. An empty value (the kernel
/// printed nothing) is not written: nothing would take it.
fn write_back(dir: &Path, saved: &[(String, String)]) -> Vec<String> {
    saved
        .iter()
        .rev()
        .filter(|(_, v)| !v.is_empty())
        .filter_map(|(n, v)| write(dir, n, v).err())
        .collect()
}

/// The directory and the (file, value) pairs of a journal; None when it is not in the format
/// or names a file or a directory an undo must not write.
fn parse_journal(lines: &[String]) -> Option<(PathBuf, Vec<(String, String)>)> {
    let mut dir = None;
    let mut saved = Vec::new();
    for l in lines {
        match l.split_once(' ')? {
            ("dir", d) => dir = Some(PathBuf::from(d)),
            ("file", rest) => {
                let (name, value) = rest.split_once(' ').unwrap_or((rest, ""));
                if !FILES.contains(&name) {
                    return None;
                }
                saved.push((name.to_string(), value.to_string()));
            }
            _ => return None,
        }
    }
    let dir = dir.filter(|d| d.is_absolute() && d.file_name() == Some("osnoise".as_ref()))?;
    Some((dir, saved))
}

/// Undoes the journal of a killed run (session/stale.rs): writes back the options it names.
/// Returns what to say, and whether the journal is done with (kept when a write failed).
pub(crate) fn undo(stale: &Stale) -> (Option<String>, bool) {
    let Some((dir, saved)) = parse_journal(&stale.lines) else {
        let said = format!(
            "{} is not an osnoise options journal in its format; left alone",
            stale.path.display()
        );
        return (Some(said), false);
    };
    let failed = write_back(&dir, &saved);
    if failed.is_empty() {
        let said = format!(
            "set back {} osnoise option(s) in {} that a jitterlab (pid {}) killed during `timerlat` had changed (journal {})",
            saved.len(),
            dir.display(),
            stale.pid,
            stale.path.display()
        );
        (Some(said), true)
    } else {
        let said = format!(
            "cannot set back the osnoise options a killed jitterlab (pid {}) changed (journal {}): {}",
            stale.pid,
            stale.path.display(),
            failed.join("; ")
        );
        (Some(said), false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fixture osnoise directory, and a journal directory beside it.
    fn fixture() -> (tempfile::TempDir, PathBuf, TrustedDir) {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("osnoise");
        std::fs::create_dir(&dir).unwrap();
        for (f, v) in [
            ("cpus", "0-7\n"),
            ("timerlat_period_us", "1000\n"),
            ("stop_tracing_us", "40\n"),
        ] {
            std::fs::write(dir.join(f), v).unwrap();
        }
        let uid = crate::sys::process::effective_user_id();
        let jdir = TrustedDir::open_in(t.path(), "journals", uid, true).unwrap();
        (t, dir, jdir)
    }

    fn value(dir: &Path, f: &str) -> String {
        std::fs::read_to_string(dir.join(f)).unwrap()
    }

    #[test]
    fn applied_journaled_and_written_back() {
        let (_t, dir, jdir) = fixture();
        let wanted = [
            ("cpus", "1".to_string()),
            ("timerlat_period_us", "500".to_string()),
            ("stop_tracing_us", "0".to_string()),
        ];
        let mut s = Settings::apply(&dir, &jdir, &wanted).unwrap();
        assert_eq!(value(&dir, "cpus"), "1");
        assert_eq!(value(&dir, "timerlat_period_us"), "500");
        let journal = std::fs::read_to_string(jdir.path().join(jdir.names()[0].clone())).unwrap();
        assert!(
            journal.contains(&format!("dir {}\n", dir.display())),
            "{journal}"
        );
        assert!(
            journal
                .contains("file cpus 0-7\nfile timerlat_period_us 1000\nfile stop_tracing_us 40\n")
        );
        assert!(s.restore().is_empty());
        assert_eq!(value(&dir, "cpus"), "0-7");
        assert_eq!(value(&dir, "timerlat_period_us"), "1000");
        assert_eq!(value(&dir, "stop_tracing_us"), "40");
        assert!(jdir.names().is_empty(), "the journal is removed");
    }

    #[test]
    fn a_missing_file_refuses_and_leaves_nothing_changed() {
        let (_t, dir, jdir) = fixture();
        let wanted = [
            ("cpus", "1".to_string()),
            ("stop_tracing_total_us", "0".to_string()),
        ];
        let e = Settings::apply(&dir, &jdir, &wanted).unwrap_err();
        assert!(e.contains("stop_tracing_total_us"), "{e}");
        assert_eq!(value(&dir, "cpus"), "0-7\n");
        assert!(jdir.names().is_empty());
    }

    #[test]
    fn a_killed_runs_options_are_written_back() {
        let (_t, dir, _) = fixture();
        std::fs::write(dir.join("cpus"), "1").unwrap();
        let stale = Stale::fake(vec![
            format!("dir {}", dir.display()),
            "file cpus 0-7".into(),
            "file timerlat_period_us 1000".into(),
        ]);
        let (said, done) = undo(&stale);
        assert!(done, "{said:?}");
        assert_eq!(value(&dir, "cpus"), "0-7");
        assert_eq!(value(&dir, "timerlat_period_us"), "1000");
        // Never a file outside the list, nor a directory not named osnoise.
        for lines in [
            vec![format!("dir {}", dir.display()), "file trace 1".into()],
            vec!["dir /etc".into(), "file cpus 1".into()],
            vec!["dir osnoise".into(), "file cpus 1".into()],
        ] {
            let (said, done) = undo(&Stale::fake(lines));
            assert!(!done && said.unwrap().contains("not an osnoise"));
        }
    }
}

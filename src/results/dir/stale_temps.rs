//! The temporary files of writers killed mid-write (issue 39 L4-c). The one writer of a
//! user-named file ([`super::outputs`]) writes it whole into `.NAME.PID-N.tmp` beside it and
//! renames that over `NAME`; a writer killed before the rename (kill -9, a power cut) leaves
//! its temporary file. Each later write into the same directory removes those it can tell are
//! such leftovers: a regular file (never a link, never anything else) of this user's, named by
//! the scheme, whose writer's process no longer exists and that no one has written for
//! [`STALE_AFTER`] (a writer in another PID namespace, whose pid means nothing here, is
//! writing its file). Another user's file is never removed. docs/result-format.md ("Output
//! files") says the name and its fate.

use super::*;
use crate::sys::path::{Kind, open_entry, stat};
use std::time::Duration;

/// How long a leftover must have gone unwritten before it is removed.
pub(super) const STALE_AFTER: Duration = Duration::from_secs(60);

/// The temporary file's name for the output `short` (its name, at most 200 bytes) written by
/// the process `pid`, its `n`-th: `.NAME.PID-N.tmp`.
pub(super) fn temp_name(short: &str, pid: u32, n: u32) -> String {
    format!(".{short}.{pid}-{n}.tmp")
}

/// The pid of the writer whose temporary file `name` is, or None for any other name.
fn writer_of(name: &OsStr) -> Option<u32> {
    let inner = name.to_str()?.strip_prefix('.')?.strip_suffix(".tmp")?;
    let (short, tail) = inner.rsplit_once('.')?;
    let (pid, n) = tail.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if short.is_empty() || !digits(pid) || !digits(n) {
        return None;
    }
    pid.parse().ok()
}

/// Whether the process `pid` is gone: kill(pid, 0) says there is no such process.
fn gone(pid: u32) -> bool {
    // kill(0) and kill(-1) mean groups; pid 1 never ends.
    let Ok(pid) = crate::sys::process::Pid::try_from(pid) else {
        return false;
    };
    pid > 1
        && matches!(
            crate::sys::process::probe_signal(pid),
            crate::sys::process::SignalProbe::Missing
        )
}

/// Removes from the directory `dir` the leftovers of killed writers (see the module's
/// comment); returns how many. A failure to list or remove leaves them: the write goes on.
pub(super) fn remove_stale_temps(dir: BorrowedFd) -> usize {
    let Ok(entries) = fs::read_dir(fd_path(dir)) else {
        return 0;
    };
    let (me, uid) = (std::process::id(), crate::sys::process::effective_user_id());
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = writer_of(&name).filter(|&pid| pid != me) else {
            continue;
        };
        // The entry itself (O_PATH, O_NOFOLLOW): a link is seen as a link, never followed.
        let Ok(fd) = open_entry(dir, &name) else {
            continue;
        };
        let Ok(st) = stat(fd.as_fd()) else {
            continue;
        };
        if st.kind != Kind::File || st.uid != uid {
            continue;
        }
        let quiet = File::from(fd)
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age >= STALE_AFTER);
        if quiet
            && gone(pid)
            && let Ok(c) = cstr(&name)
            && unlink_at(dir, &c, Entry::File).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    #[test]
    fn names_by_the_scheme_only() {
        assert_eq!(
            writer_of(OsStr::new(&temp_name("s.out", 29551, 0))),
            Some(29551)
        );
        assert_eq!(writer_of(OsStr::new(".a.b.c.12-3.tmp")), Some(12));
        for other in [
            ".s.out.tmp",
            "s.out.1-0.tmp",
            "..1-0.tmp",
            ".s.x-0.tmp",
            ".s.1-.tmp",
        ] {
            assert_eq!(writer_of(OsStr::new(other)), None, "{other}");
        }
    }

    /// A pid no process has: a child's, after it was reaped.
    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    /// L4-c (issue 39): `export -o s.out` killed mid-write left `.s.out.29551-0.tmp` for
    /// ever; the next write into that directory removes it, and only what is surely such a
    /// leftover of this user's.
    #[test]
    fn a_killed_writers_temporary_file_is_removed_by_the_next_write() {
        let base = tempfile::tempdir().unwrap();
        let old = SystemTime::now() - STALE_AFTER * 2;
        let plant = |name: &str, pid: u32, modified: SystemTime| {
            let path = base.path().join(temp_name(name, pid, 0));
            let f = fs::File::create(&path).unwrap();
            f.set_modified(modified).unwrap();
            path
        };
        let dead = dead_pid();
        let leftover = plant("s.out", dead, old);
        // Another output's leftover in the same directory goes too.
        let other = plant("r.html", dead, old);
        // Kept: a live writer's (the parent of this test), one written a moment ago, one not
        // of the scheme, a link by the scheme's name (never followed nor removed).
        let live = plant("s.out", std::os::unix::process::parent_id(), old);
        let recent = plant("s.csv", dead, SystemTime::now());
        let not_ours = base.path().join(".s.out.tmp");
        fs::write(&not_ours, "x").unwrap();
        let victim = base.path().join("victim");
        fs::write(&victim, "precious").unwrap();
        let link = base.path().join(temp_name("l", dead, 0));
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        write_output(&base.path().join("s.out"), |w| w.write_all(b"summaries")).unwrap();
        assert!(
            !leftover.exists() && !other.exists(),
            "the leftovers removed"
        );
        for kept in [&live, &recent, &not_ours, &victim] {
            assert!(kept.exists(), "{} kept", kept.display());
        }
        assert!(fs::symlink_metadata(&link).unwrap().is_symlink());
        assert_eq!(
            fs::read_to_string(base.path().join("s.out")).unwrap(),
            "summaries"
        );
        // Another user's leftover is never removed.
        let theirs = plant("s.out", dead, old);
        if std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).is_err() {
            eprintln!("skipped: giving a file to another user needs root");
            return;
        }
        fs::File::options()
            .append(true)
            .open(&theirs)
            .unwrap()
            .set_modified(old)
            .unwrap();
        write_output(&base.path().join("s.out"), |w| w.write_all(b"again")).unwrap();
        assert!(theirs.exists(), "another user's file stays");
    }
}

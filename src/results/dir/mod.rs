//! Where a run's files live, and how they are made so that nothing is overwritten and nothing is
//! written through a link.
//!
//! A result directory is always new: it is made with a plain `mkdir`, and an existing name
//! (directory, file, symbolic link, even a dangling one) is refused, never adopted. Every file in
//! it is made through the directory's descriptor with `O_CREAT|O_EXCL|O_NOFOLLOW`, and run.json
//! is replaced by a rename within that descriptor: a link planted by another user (say
//! `.run.json.tmp -> /etc/shadow`) makes the write fail instead of redirecting it; the directory's
//! mode is 0755, so no other user adds entries to it meanwhile. The checks of
//! output *files* (`report -o`, `export -o`, `--plots`) are here too, because what they must not
//! touch is a result directory: nothing is written into one afterwards, at any depth, and no
//! result directory is made in another but a sweep's own levels (`outputs.rs`, the one writer
//! of every file a user names; its checks `output_checks.rs`; making the directory is
//! `create.rs`; reaching the
//! directories of a path, component by component, following no other user's link, is
//! `resolve.rs`; the descriptor-relative calls are `sys::fs`'s and `sys::path`'s).
//!
//! One concern (issue 41's near-limit files): the result directory itself, made, claimed and
//! written; its parts that are concerns of their own are files here (`create`, `resolve`,
//! `in_place`, `outputs`, `output_checks`, `stale_temps`); about 130 lines are tests.

use crate::error::Failure;
use crate::format::run_record::{Ended, FILE_NAME as RUN_JSON, FORMAT, RunRecord};
use std::ffi::{CString, OsStr};
use std::fs::{self, File};
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

#[cfg(test)]
mod budget_tests;
mod create;
mod in_place;
mod output_checks;
mod outputs;
#[cfg(test)]
mod read_race_tests;
mod resolve;
mod stale_temps;

// Everything inside a result directory is opened or removed relative to its descriptor, never
// through a path that a link could redirect.
use crate::sys::fs::{
    Entry, create_new_at, cstr, make_dir_at, open_write_at, openat_dir, owner, rename_at, unlink_at,
};
use create::*;
use output_checks::*;
pub(crate) use output_checks::{check_output_dir, check_output_file};
pub(crate) use outputs::{OutputDir, OutputFile, means_stdout, write_output};
use resolve::*;

/// Space kept allocated after the first run.json (beyond its end, the file's size unchanged) so
/// that the final record can still be written over it when the disk has filled up during the
/// run: a few KiB per measured CPU, with a wide margin.
pub(crate) const FINAL_RECORD_RESERVE_BYTES: i64 = 256 * 1024;

/// How many names `create_unique` tries (`base`, `base-2`, ... ) before giving up.
const UNIQUE_NAME_ATTEMPTS: usize = 100;

/// A result directory on disk, and a descriptor of it through which its files are made.
#[derive(Debug, Clone)]
pub struct ResultDir {
    pub path: PathBuf,
    fd: Arc<OwnedFd>,
}

/// The default result directory: `./jitterlab-results/<UTC time>-<host>-<pid>`, e.g.
/// `jitterlab-results/20261122T134501Z-vm-4242`. The pid keeps two runs started in the same
/// second apart; [`ResultDir::create_unique`] still moves on to another name if it is taken.
pub(crate) fn default_path(start: SystemTime, host: &str) -> PathBuf {
    let stamp = humantime::format_rfc3339_seconds(start)
        .to_string()
        .replace(['-', ':'], "");
    let host: String = host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    PathBuf::from("jitterlab-results").join(format!("{stamp}-{host}-{}", std::process::id()))
}

/// A result directory this process has just made. Dropped before [`Claim::keep`], it is removed
/// with everything in it (and the parents made for it): a run refused before it measured leaves
/// nothing behind.
#[derive(Debug)]
pub struct Claim {
    dir: ResultDir,
    /// The directory holding it, and its name there: removal goes through them.
    parent: OwnedFd,
    name: CString,
    /// Parents that did not exist and were made for it, outermost first.
    made_parents: Vec<Made>,
    kept: bool,
}

impl Claim {
    pub fn dir(&self) -> &ResultDir {
        &self.dir
    }

    /// The directory now holds results: it stays.
    pub fn keep(mut self) -> ResultDir {
        self.kept = true;
        self.dir.clone()
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if self.kept {
            return;
        }
        // Best effort: the run is ending with the refusal that dropped the claim, which is what
        // the user must see; a leftover is only untidy.
        let _ = remove_contents(self.dir.fd.as_fd());
        let _ = unlink_at(self.parent.as_fd(), &self.name, Entry::Dir);
        unmake(&self.made_parents);
    }
}

impl ResultDir {
    /// Makes the new result directory `path` (and its missing parents) for `option` (e.g.
    /// `--out`, named in the messages). Any existing entry at `path` is refused: results are never
    /// written into a directory this process did not make. Errors are exit 2, or exit 3 when
    /// this user is not allowed to make a directory there (EACCES, EPERM).
    pub fn create(path: &Path, option: &str) -> Result<Claim, Failure> {
        make(path, Parent::AsGiven).map_err(|e| e.failure(option, path))
    }

    /// Makes the new result directory `path` of a default name that is not to move on when
    /// taken (`import` without `--out`: `jitterlab-results/imported-<file>`): as
    /// [`ResultDir::create`], and the directory holding it must be safe from other users, as
    /// for [`ResultDir::create_unique`]: never a link, nor another user's (issue 39 R02).
    pub(crate) fn create_default(path: &Path, option: &str) -> Result<Claim, Failure> {
        make(path, Parent::Shared).map_err(|e| e.default_failure(option, path))
    }

    /// The checks [`ResultDir::create`] makes of `path` before making anything: `--dry-run`
    /// runs exactly these, so that it passes only what a real run accepts (exit 2 for a path
    /// that cannot hold results, 3 when this user may not make a directory there).
    pub(crate) fn check_new(path: &Path, option: &str) -> Result<(), Failure> {
        check_new(path, Parent::AsGiven).map_err(|e| e.failure(option, path))
    }

    /// The same checks for a default name (see [`ResultDir::create_unique`]).
    pub(crate) fn check_new_default(path: &Path, option: &str) -> Result<(), Failure> {
        check_new(path, Parent::Shared).map_err(|e| e.default_failure(option, path))
    }

    /// Makes a new result directory named `base`, or `base-2`, `base-3`... when the name is
    /// taken (a default name that another process got first).
    pub(crate) fn create_unique(base: &Path, option: &str) -> Result<Claim, Failure> {
        for k in 1..=UNIQUE_NAME_ATTEMPTS {
            let path = match k {
                1 => base.to_path_buf(),
                _ => {
                    let mut p = base.as_os_str().to_owned();
                    p.push(format!("-{k}"));
                    PathBuf::from(p)
                }
            };
            // A default name: the directory holding it must be safe from other users.
            match make(&path, Parent::Shared) {
                Err(MakeError::Exists(_)) => continue,
                r => return r.map_err(|e| e.default_failure(option, &path)),
            }
        }
        Err(Failure::usage(format!(
            "the default result directory {}: this name and {} others like it are taken; pass {option} DIR to choose another result directory",
            base.display(),
            UNIQUE_NAME_ATTEMPTS - 1
        )))
    }

    /// An existing result directory, checked to hold a run.json. It is opened once, as a
    /// descriptor (`input::open_result_dir`: looked up one component at a time,
    /// following no other user's link, looking names up in no directory another user may
    /// rename entries of), and every file of it is then read relative to that descriptor, never
    /// following a link (ninth hostile re-run, I1-dir: checked by path, then read by path, the
    /// run read was another user's swap 339 times in 800).
    pub fn open(path: &Path) -> Result<Self, String> {
        use crate::input::ReadError;
        let not_a_run = || {
            format!(
                "{} is not a jitterlab result directory (no {RUN_JSON}); pass the directory a run wrote, e.g. jitterlab-results/<time>-<host>",
                path.display()
            )
        };
        let fd = match crate::input::open_result_dir(path) {
            Ok(fd) => fd,
            Err(ReadError::Io(e))
                if matches!(
                    e.raw_os_error(),
                    Some(crate::sys::errno::ENOENT) | Some(crate::sys::errno::ENOTDIR)
                ) =>
            {
                return Err(not_a_run());
            }
            Err(e @ (ReadError::ForeignLink(_) | ReadError::ForeignDir(_))) => {
                return Err(format!("cannot read {}: {e}", path.display()));
            }
            Err(e) => return Err(format!("cannot open {}: {e}", path.display())),
        };
        let dir = ResultDir {
            path: path.to_path_buf(),
            fd,
        };
        if !crate::input::result_entry_exists(&dir.file(RUN_JSON)) {
            return Err(not_a_run());
        }
        Ok(dir)
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Makes the new file `name` in the directory, for appending (events.jsonl has two
    /// writers, the run and the load supervisor). An existing entry of that name, a symbolic link
    /// included, is an error (EEXIST): nothing is ever written through a link.
    pub(crate) fn create_file(&self, name: &str) -> io::Result<File> {
        let c = cstr(OsStr::new(name))?;
        create_new_at(self.fd.as_fd(), &c)
    }

    /// The subdirectory `name` (`loads/`), made (mode 0755) if missing and opened through this
    /// directory's descriptor, refusing a link and a directory another user made: its files are
    /// then made through it as through this one.
    pub(crate) fn subdir(&self, name: &str) -> io::Result<ResultDir> {
        let c = cstr(OsStr::new(name))?;
        match make_dir_at(self.fd.as_fd(), &c, 0o755) {
            Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
            _ => {}
        }
        let fd = openat_dir(self.fd.as_fd(), &c)?;
        if owner(fd.as_fd())? != crate::sys::process::effective_user_id() {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "made by another user",
            ));
        }
        Ok(ResultDir {
            path: self.path.join(name),
            fd: Arc::new(fd),
        })
    }

    /// A descriptor of the directory of its own (a thread that makes files in it after this
    /// value is gone: a capped load log's copier).
    pub(crate) fn duplicate_fd(&self) -> io::Result<OwnedFd> {
        self.fd.try_clone()
    }

    /// Removes the file `name` from the directory (retention deleting a segment): through the
    /// directory's descriptor, never following a link. A file already gone is not an error.
    pub fn remove_file(&self, name: &str) -> io::Result<()> {
        match unlink_at(self.fd.as_fd(), &cstr(OsStr::new(name))?, Entry::File) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            r => r,
        }
    }

    /// The total size of the regular files directly in the directory and in its
    /// subdirectories one level down (the loads' logs), in bytes: what retention by size bounds.
    pub(crate) fn files_bytes(&self) -> io::Result<u64> {
        fn sum(path: &Path, depth: u32) -> io::Result<u64> {
            let mut total = 0;
            for entry in fs::read_dir(path)? {
                let entry = entry?;
                // Entries may vanish meanwhile (a temporary file renamed): skip them.
                let Ok(meta) = entry.metadata() else { continue };
                if meta.is_file() {
                    total += meta.len();
                } else if meta.is_dir() && depth > 0 {
                    total += sum(&entry.path(), depth - 1)?;
                }
            }
            Ok(total)
        }
        sum(&self.path, 1)
    }

    /// Replaces the file `name` with `bytes` atomically: `.<name>.tmp` is made new and renamed
    /// over it (a reader sees the old or the new version). On failure the temporary file is
    /// removed and `name` is left as it was.
    pub(crate) fn replace_file(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        let tmp = cstr(OsStr::new(&format!(".{name}.tmp")))?;
        let target = cstr(OsStr::new(name))?;
        // One left by this process's own earlier write that died half-way; unlinking never
        // follows a link.
        match unlink_at(self.fd.as_fd(), &tmp, Entry::File) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let written = self
            .create_file(&tmp.to_string_lossy())
            .and_then(|mut f| f.write_all(bytes))
            .and_then(|_| rename_at(self.fd.as_fd(), &tmp, &target));
        if written.is_err() {
            let _ = unlink_at(self.fd.as_fd(), &tmp, Entry::File);
        } else if crate::results::CONTAINER_RECORDS.contains(&name) {
            // This process's sweep or tune: its levels or arms are made in it
            // (output_checks.rs).
            note_own_sweep_dir(&self.fd);
        }
        written
    }

    /// Writes run.json atomically (see [`ResultDir::replace_file`]).
    pub fn write_run_record(&self, record: &RunRecord) -> io::Result<()> {
        self.replace_file(RUN_JSON, &record_bytes(record)?)
    }

    /// The first run.json of a run, and each one written while it runs (a segmented run's at
    /// every segment boundary): written, then space reserved after it for
    /// [`ResultDir::write_final_run_record`]. A file system that cannot reserve space
    /// (`fallocate` unsupported) only loses that fallback.
    pub fn write_first_run_record(&self, record: &RunRecord) -> io::Result<()> {
        self.write_run_record(record)?;
        if let Ok(f) = self.open_existing(RUN_JSON) {
            let len = f.metadata().map_or(0, |m| m.len());
            let _ =
                crate::sys::file::reserve(f.as_fd(), 0, len + FINAL_RECORD_RESERVE_BYTES as u64);
        }
        Ok(())
    }

    /// The last run.json of a run. When it cannot be written (a full disk), the record is
    /// marked `failed` with the reason (unless it had failed already) and written over the first
    /// run.json in place, into the space reserved after it, so that run.json does not keep saying
    /// `running`. Returns what went wrong, for the caller to report (exit 4).
    pub(crate) fn write_final_run_record(&self, record: &mut RunRecord) -> Result<(), String> {
        let Err(e) = self.write_run_record(record) else {
            return Ok(());
        };
        let what = format!("cannot write {}: {e}", self.file(RUN_JSON).display());
        if record.ended != Ended::Failed {
            record.ended = Ended::Failed;
            record.end_reason = Some(what.clone());
        }
        match self.overwrite_in_reserved_space(RUN_JSON, record) {
            Ok(()) => Err(format!(
                "{what}; written in place instead, with \"ended\": \"failed\""
            )),
            Err(e2) => Err(format!(
                "{what}; nor in place ({e2}): it still says \"running\" (the summary above is all there is of this run's statistics)"
            )),
        }
    }

    /// Writes `record` over the file `name` from its start, only if the space already allocated
    /// to the file holds it (so that a full disk cannot leave it half written).
    fn overwrite_in_reserved_space(&self, name: &str, record: &RunRecord) -> io::Result<()> {
        use std::os::unix::fs::{FileExt, MetadataExt};
        let bytes = record_bytes(record)?;
        let f = self.open_existing(name)?;
        let allocated = f.metadata()?.blocks() * 512;
        if (bytes.len() as u64) > allocated {
            return Err(io::Error::other(format!(
                "{} bytes needed, {allocated} allocated",
                bytes.len()
            )));
        }
        f.write_all_at(&bytes, 0)?;
        f.set_len(bytes.len() as u64)
    }

    /// Opens the existing regular file `name` for writing, without following a link.
    fn open_existing(&self, name: &str) -> io::Result<File> {
        let c = cstr(OsStr::new(name))?;
        open_write_at(self.fd.as_fd(), &c)
    }

    pub fn read_run_record(&self) -> Result<RunRecord, String> {
        let path = self.path.join(RUN_JSON);
        let text = crate::input::read_result_file(&path, crate::input::RESULT_RECORD_MAX_BYTES)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        // What parsing it may cost, bounded before it is parsed (issue 39 F3).
        crate::input::check_counts(&text).map_err(|why| {
            format!(
                "{}: {why}; it was edited or damaged (restore it from a copy, or measure again)",
                path.display()
            )
        })?;
        // A newer format may have changed what a field means, or made the record unreadable
        // to this version: either way the user needs a newer jitterlab, not a parse error.
        let newer = |format: u32| {
            format!(
                "{} is in result format {format}, newer than format {FORMAT}, the newest this jitterlab ({}) reads; use a newer jitterlab to read it",
                path.display(),
                env!("CARGO_PKG_VERSION")
            )
        };
        match serde_json::from_str::<RunRecord>(&text) {
            Ok(record) if record.format > FORMAT => Err(newer(record.format)),
            Ok(record) => {
                crate::format::figures_check::check_figures(&record).map_err(|e| {
                    format!(
                        "{} has figures that cannot be a run's: {e}; it was edited or damaged (restore it from a copy, or measure again)",
                        path.display()
                    )
                })?;
                Ok(record)
            }
            Err(e) => match serde_json::from_str::<FormatOnly>(&text) {
                Ok(FormatOnly { format }) if format > FORMAT => Err(newer(format)),
                _ => Err(format!(
                    "{} is not a valid format-{FORMAT} run.json: {e}",
                    path.display()
                )),
            },
        }
    }
}

/// The one field of run.json that every format has, read alone to tell a newer format from a
/// damaged file.
#[derive(serde::Deserialize)]
struct FormatOnly {
    format: u32,
}

/// run.json's text: the record within its value budget (`format::record_budget`), so that
/// its own reader never refuses it.
fn record_bytes(record: &RunRecord) -> io::Result<Vec<u8>> {
    use crate::format::record_budget;
    let mut text = serde_json::to_vec_pretty(record).map_err(io::Error::other)?;
    let values = crate::input::json_values::count_values(&text);
    if record_budget::needs_fit(record, values) {
        let mut fitted = record.clone();
        let mut values = values;
        // The cap is computed from a count of the values around the spike times, which the
        // cut itself can move by a few (a list's other fields): fitted again from the new
        // count until it holds (twice at most in practice).
        for _ in 0..4 {
            record_budget::fit(&mut fitted, values);
            text = serde_json::to_vec_pretty(&fitted).map_err(io::Error::other)?;
            values = crate::input::json_values::count_values(&text);
            if values <= record_budget::RUN_RECORD_WRITTEN_MAX_VALUES {
                break;
            }
        }
    }
    text.push(b'\n');
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;
    use std::time::Duration;

    #[test]
    fn default_path_is_utc_time_host_and_pid() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000);
        assert_eq!(
            default_path(t, "my host"),
            PathBuf::from(format!(
                "jitterlab-results/20261118T110640Z-my_host-{}",
                std::process::id()
            ))
        );
    }

    #[test]
    fn refuses_every_existing_entry_and_makes_missing_parents() {
        let base = tempfile::tempdir().unwrap();
        let at = |n: &str| base.path().join(n);
        fs::create_dir(at("empty")).unwrap();
        fs::write(at("file"), "x").unwrap();
        symlink(at("empty"), at("link")).unwrap();
        symlink(at("nowhere"), at("dangling")).unwrap();
        for (name, what) in [
            ("empty", "a directory"),
            ("file", "a file"),
            ("link", "a symbolic link"),
            ("dangling", "a dangling symbolic link"),
        ] {
            let e = ResultDir::create(&at(name), "--out").unwrap_err();
            assert_eq!(e.code, crate::error::ExitCode::Usage);
            assert!(e.message.contains(what), "{name}: {}", e.message);
        }
        assert!(!at("nowhere").exists(), "a dangling link is not followed");
        let e = ResultDir::create(&at("file/sub"), "--out").unwrap_err();
        assert!(e.message.contains("its parent"), "{}", e.message);
        let long = "x".repeat(300);
        let e = ResultDir::create(&at(&long), "--out").unwrap_err();
        assert!(e.message.contains("longer than 255 bytes"), "{}", e.message);

        let claim = ResultDir::create(&at("new/deeper"), "--out").unwrap();
        assert!(at("new/deeper").is_dir());
        claim.keep();
        assert!(at("new/deeper").is_dir());
    }

    #[test]
    fn an_unkept_claim_leaves_nothing_behind() {
        let base = tempfile::tempdir().unwrap();
        let victim = base.path().join("victim");
        fs::write(&victim, "precious").unwrap();
        let claim = ResultDir::create(&base.path().join("a/b/run"), "--out").unwrap();
        let dir = claim.dir().clone();
        dir.create_file("latency.hlog").unwrap();
        fs::create_dir(dir.file("loads")).unwrap();
        fs::write(dir.file("loads/1-cpu.log"), "x").unwrap();
        symlink(&victim, dir.file("loads/link")).unwrap();
        drop(claim);
        assert_eq!(
            fs::read_dir(base.path()).unwrap().count(),
            1,
            "only the victim is left"
        );
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
    }

    #[test]
    fn unique_names_move_on_when_taken() {
        let base = tempfile::tempdir().unwrap();
        let name = base.path().join("run");
        fs::create_dir(&name).unwrap();
        let claim = ResultDir::create_unique(&name, "--out").unwrap();
        assert_eq!(claim.dir().path, base.path().join("run-2"));
    }

    #[test]
    fn files_are_never_written_through_a_planted_link() {
        let base = tempfile::tempdir().unwrap();
        let victim = base.path().join("victim");
        fs::write(&victim, "precious").unwrap();
        let dir = ResultDir::create(&base.path().join("run"), "--out")
            .unwrap()
            .keep();
        symlink(&victim, dir.file(".run.json.tmp")).unwrap();
        symlink(&victim, dir.file("latency.hlog")).unwrap();
        let e = dir.create_file("latency.hlog").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        dir.replace_file(RUN_JSON, b"{}\n").unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
        let run_json = fs::symlink_metadata(dir.file(RUN_JSON)).unwrap();
        assert!(run_json.is_file(), "run.json is a file of its own");
        assert!(!dir.file(".run.json.tmp").exists());
        // loads/ as a link: refused, not followed.
        let elsewhere = base.path().join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        symlink(&elsewhere, dir.file("loads")).unwrap();
        assert!(dir.subdir("loads").is_err());
        assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 0);
        let sub = dir.subdir("logs").unwrap();
        sub.create_file("0-cpu.log").unwrap();
        assert!(
            dir.subdir("logs").is_ok(),
            "an existing subdirectory of ours is used"
        );
    }

    #[test]
    fn the_dry_runs_check_refuses_what_making_refuses() {
        let base = tempfile::tempdir().unwrap();
        let file = base.path().join("file");
        fs::write(&file, "x").unwrap();
        for (path, code) in [
            (PathBuf::from("/proc/jl"), 2),
            (PathBuf::from("/sys/jl"), 2),
            (PathBuf::from("/dev/null/x"), 2),
            (file.join("x"), 2),
            (base.path().join("n".repeat(300)), 2),
            (file.clone(), 2),
        ] {
            let checked = ResultDir::check_new(&path, "--out").unwrap_err();
            let made = ResultDir::create(&path, "--out").unwrap_err();
            assert_eq!(checked.code as i32, code, "{}", checked.message);
            assert_eq!(made.code as i32, code, "{}", made.message);
        }
        ResultDir::check_new(&base.path().join("a/b"), "--out").unwrap();
    }
}

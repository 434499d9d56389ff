//! A load's log with a bound: the load writes into a pipe and a thread of jitterlab's copies
//! what comes into `loads/<k>-<name>.log`, renaming the log `<k>-<name>.log.1` (replacing the
//! older one) and beginning it anew when a write would take it past the bound. Its output is
//! thus kept whole up to twice the bound, the latest part last: a load that prints without end
//! cannot fill the result directory (a file the load wrote itself could only be cut by
//! truncating it under the load's feet). Every log begun anew starts with a line saying where
//! in the load's output it begins, so that a log whose older part was dropped says so; the
//! bytes dropped are counted for run.json (`loads[].log`). The bound: a segmented run's
//! (`SegmentPlan::load_log_cap`, `jitterlab monitor`), else [`RUN_LOG_BYTES`] (issue 39, F6:
//! `run --load exec:yes` wrote 1 GB in 2 s).
//!
//! Every name is made and renamed through the descriptor of `loads/`, without following a link:
//! an entry planted there makes the copy stop with a warning, never a write elsewhere.

use crate::sys::file::pipe;
use crate::sys::fs::{create_new_at, cstr, rename_at};
use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The bound of each load's log in a run that is not segmented (`run`, each level of a
/// `sweep`): 16 MiB, so a load keeps at most the last 32 MiB of its output.
pub(crate) const RUN_LOG_BYTES: u64 = 16 * 1024 * 1024;

/// How much is copied at once.
const CHUNK_BYTES: usize = 64 * 1024;

/// How long the end of a load waits for its copying thread to take the last of its output.
const FINISH_WAIT: Duration = Duration::from_secs(1);

/// What a bounded log has done, shared by the copying thread and the supervisor.
#[derive(Debug, Default)]
pub(crate) struct LogTally {
    /// Bytes the load wrote (read from the pipe).
    output: AtomicU64,
    /// Bytes of it no longer in the log: older parts replaced by a rotation, and what came
    /// after a failed write.
    dropped: AtomicU64,
    /// The pipe was closed by every process of the load and everything read is accounted.
    done: AtomicBool,
}

/// A load's bounded log, as its supervisor holds it.
#[derive(Debug, Clone)]
pub(crate) struct BoundedLog {
    tally: Arc<LogTally>,
    cap: u64,
}

impl BoundedLog {
    /// Once the load's processes are gone: waits (at most [`FINISH_WAIT`]: a process that
    /// escaped the load may hold the pipe) for the copy to take the last of the output, and
    /// returns what the log kept, for run.json.
    pub(crate) fn record(&self) -> crate::format::run_record::LoadLogRecord {
        let until = Instant::now() + FINISH_WAIT;
        while !self.tally.done.load(Ordering::SeqCst) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(2));
        }
        crate::format::run_record::LoadLogRecord {
            output_bytes: self.tally.output.load(Ordering::SeqCst),
            dropped_bytes: self.tally.dropped.load(Ordering::SeqCst),
            bound_bytes: self.cap,
        }
    }
}

/// Starts copying into `log` (just made, empty, named `name` in the directory `dir`) what the
/// load writes into the returned pipe end, which is to be its stdout and stderr.
pub(super) fn capped(
    log: File,
    dir: OwnedFd,
    name: &str,
    cap: u64,
) -> io::Result<(File, BoundedLog)> {
    let (read_fd, write_fd) = pipe()?;
    // SAFETY: fresh descriptors from pipe2 (close-on-exec), owned here.
    let (reader, writer) = unsafe { (File::from_raw_fd(read_fd), File::from_raw_fd(write_fd)) };
    let tally = Arc::new(LogTally::default());
    let mut copy = Copy {
        dir,
        name: cstr(OsStr::new(name))?,
        older: cstr(OsStr::new(&format!("{name}.1")))?,
        shown: name.to_string(),
        cap: cap.max(1),
        log,
        len: 0,
        fresh_len: 0,
        older_len: None,
        offset: 0,
        copied: 0,
        tally: Arc::clone(&tally),
    };
    std::thread::Builder::new()
        .name("jl-load-log".into())
        .spawn(move || {
            copy.run(reader);
            copy.tally.done.store(true, Ordering::SeqCst);
        })?;
    let cap = cap.max(1);
    Ok((writer, BoundedLog { tally, cap }))
}

/// The copying thread's state.
struct Copy {
    dir: OwnedFd,
    name: CString,
    older: CString,
    /// `name`, for messages.
    shown: String,
    cap: u64,
    log: File,
    /// Bytes in `log`.
    len: u64,
    /// Bytes in `log` before any output: its header.
    fresh_len: u64,
    /// Bytes of the load's output in `.1`, once there is one.
    older_len: Option<u64>,
    /// Where in the load's output `log` begins.
    offset: u64,
    /// Bytes of output written to the logs so far.
    copied: u64,
    tally: Arc<LogTally>,
}

impl Copy {
    /// Copies until every process of the load has closed the pipe. A failed write (a full
    /// disk, a name taken meanwhile) is reported once; what the load writes after it is read
    /// and dropped, so that the load never blocks on a full pipe.
    fn run(&mut self, mut reader: File) {
        let mut buf = vec![0u8; CHUNK_BYTES];
        let mut failed = false;
        loop {
            let n = match reader.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return,
            };
            self.tally.output.fetch_add(n as u64, Ordering::SeqCst);
            if failed {
                self.tally.dropped.fetch_add(n as u64, Ordering::SeqCst);
                continue;
            }
            let before = self.copied;
            if let Err(e) = self.write(&buf[..n]) {
                let kept = self.copied - before;
                self.tally
                    .dropped
                    .fetch_add(n as u64 - kept, Ordering::SeqCst);
                eprintln!(
                    "jitterlab: warning: cannot write the load log loads/{}: {e}; the load's further output is dropped",
                    self.shown
                );
                failed = true;
            }
        }
    }

    /// Appends `bytes`, rotating so that no log passes the bound. A line that does not fit
    /// begins the next log (cut only when it is longer than the room a new log has).
    fn write(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            let room = self.cap.saturating_sub(self.len) as usize;
            let fit = if bytes.len() <= room {
                bytes.len()
            } else {
                match bytes[..room].iter().rposition(|&b| b == b'\n') {
                    Some(i) => i + 1,
                    None if self.is_fresh() => room,
                    None => 0,
                }
            };
            if fit == 0 {
                self.rotate()?;
                continue;
            }
            self.log.write_all(&bytes[..fit])?;
            self.len += fit as u64;
            self.copied += fit as u64;
            bytes = &bytes[fit..];
        }
        Ok(())
    }

    /// Whether the log holds no output yet (at most its header).
    fn is_fresh(&self) -> bool {
        self.len == self.fresh_len
    }

    /// The first line of a log begun at `offset`, past the start of the load's output: where
    /// it begins, and what the log keeps (true for as long as the file lasts, also once it has
    /// become `.1`).
    fn header(&self) -> String {
        format!(
            "[jitterlab: this file continues the load's output from byte {} on; the log keeps the latest part of it, {}.1 then {}, at most {} bytes each, and drops what came before (run.json loads[].log)]\n",
            self.offset, self.shown, self.shown, self.cap,
        )
    }

    /// The log becomes `.1` (the older `.1`, if any, is dropped) and a new log is begun, with
    /// its header.
    fn rotate(&mut self) -> io::Result<()> {
        let output_in_log = self.len - self.fresh_len;
        rename_at(self.dir.as_fd(), &self.name, &self.older)?;
        if let Some(dropped) = self.older_len.replace(output_in_log) {
            self.tally.dropped.fetch_add(dropped, Ordering::SeqCst);
        }
        self.offset += output_in_log;
        self.log = create_new_at(self.dir.as_fd(), &self.name)?;
        self.len = 0;
        self.fresh_len = 0;
        // Under a bound too small for it, no header (the counts are in run.json).
        let header = self.header();
        if (header.len() as u64) < self.cap / 2 {
            self.log.write_all(header.as_bytes())?;
            self.len = header.len() as u64;
            self.fresh_len = self.len;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::fs::open_dir_nofollow;

    /// A copy into `0-exec.log` of a new directory, with bound `cap`.
    fn copy_in(dir: &tempfile::TempDir, cap: u64) -> Copy {
        let fd = open_dir_nofollow(dir.path()).unwrap();
        let log = create_new_at(fd.as_fd(), &cstr(OsStr::new("0-exec.log")).unwrap()).unwrap();
        Copy {
            name: cstr(OsStr::new("0-exec.log")).unwrap(),
            older: cstr(OsStr::new("0-exec.log.1")).unwrap(),
            shown: "0-exec.log".into(),
            dir: fd,
            cap,
            log,
            len: 0,
            fresh_len: 0,
            older_len: None,
            offset: 0,
            copied: 0,
            tally: Arc::default(),
        }
    }

    /// Written in pieces of lines, the log never passes its bound, its `.1` holds the part
    /// before it, and the two together end with the latest lines, whole.
    #[test]
    fn the_log_rotates_within_its_bound() {
        let dir = tempfile::tempdir().unwrap();
        let mut copy = copy_in(&dir, 100);
        let lines: Vec<String> = (0..200).map(|i| format!("line {i}\n")).collect();
        for piece in lines.chunks(7) {
            copy.write(piece.concat().as_bytes()).unwrap();
            let len = std::fs::metadata(dir.path().join("0-exec.log"))
                .unwrap()
                .len();
            assert!(len <= 100, "{len}");
        }
        let read = |n: &str| std::fs::read_to_string(dir.path().join(n)).unwrap();
        let (older, latest) = (read("0-exec.log.1"), read("0-exec.log"));
        assert!(older.len() <= 100 && older.ends_with('\n'), "{older}");
        let kept = format!("{older}{latest}");
        assert!(kept.ends_with("line 199\n"), "{kept}");
        assert!(
            lines.concat().ends_with(&kept),
            "not the latest lines whole: {kept}"
        );
        // A line longer than the bound is cut at it.
        copy.write(&[b'x'; 250]).unwrap();
        assert_eq!(read("0-exec.log"), "x".repeat(50));
    }

    /// Issue 39, F6: a load that prints without end. Each log begun anew says where in the
    /// output it begins, and the bytes dropped are counted: what the two files keep is exactly
    /// the output from `.1`'s start on, and the output less it is what was dropped.
    #[test]
    fn a_rotated_log_says_where_it_begins_and_the_dropped_bytes_are_counted() {
        let dir = tempfile::tempdir().unwrap();
        let cap = 1000;
        let mut copy = copy_in(&dir, cap);
        let output: String = (0..5000).map(|i| format!("y {i}\n")).collect();
        for piece in output.as_bytes().chunks(333) {
            copy.tally
                .output
                .fetch_add(piece.len() as u64, Ordering::SeqCst);
            copy.write(piece).unwrap();
        }
        let read = |n: &str| std::fs::read_to_string(dir.path().join(n)).unwrap();
        let (older, latest) = (read("0-exec.log.1"), read("0-exec.log"));
        let body = |text: &str| -> (u64, String) {
            let (header, rest) = text.split_once('\n').unwrap();
            assert!(
                header.starts_with("[jitterlab: this file continues the load's output from byte "),
                "{header}"
            );
            let from = header.split("from byte ").nth(1).unwrap();
            let from: u64 = from.split(' ').next().unwrap().parse().unwrap();
            (from, rest.to_string())
        };
        let (older_from, older_body) = body(&older);
        let (latest_from, latest_body) = body(&latest);
        assert!(older.len() as u64 <= cap && latest.len() as u64 <= cap);
        assert_eq!(latest_from, older_from + older_body.len() as u64);
        assert_eq!(
            format!("{older_body}{latest_body}"),
            output[older_from as usize..]
        );
        let tally = &copy.tally;
        assert_eq!(tally.output.load(Ordering::SeqCst), output.len() as u64);
        assert_eq!(tally.dropped.load(Ordering::SeqCst), older_from);
    }
}

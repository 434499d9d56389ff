//! A load's log with a bound (`Setup::log_cap`, a segmented run's): the load writes into a pipe
//! and a thread of jitterlab's copies what comes into `loads/<k>-<name>.log`, renaming the log
//! `<k>-<name>.log.1` (replacing the older one) and beginning it anew when a write would take
//! it past the bound. Its output is thus kept whole up to twice the bound, the latest part
//! last: a load that prints without end cannot fill the result directory (a file the load
//! wrote itself could only be cut by truncating it under the load's feet).
//!
//! Every name is made and renamed through the descriptor of `loads/`, without following a link:
//! an entry planted there makes the copy stop with a warning, never a write elsewhere.

use crate::sys::file::pipe;
use crate::sys::fs::{create_new_at, cstr, rename_at};
use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, FromRawFd, OwnedFd};

/// How much is copied at once.
const CHUNK_BYTES: usize = 64 * 1024;

/// Starts copying into `log` (just made, empty, named `name` in the directory `dir`) what the
/// load writes into the returned pipe end, which is to be its stdout and stderr.
pub(super) fn capped(log: File, dir: OwnedFd, name: &str, cap: u64) -> io::Result<File> {
    let (read_fd, write_fd) = pipe()?;
    // SAFETY: fresh descriptors from pipe2 (close-on-exec), owned here.
    let (reader, writer) = unsafe { (File::from_raw_fd(read_fd), File::from_raw_fd(write_fd)) };
    let mut copy = Copy {
        dir,
        name: cstr(OsStr::new(name))?,
        older: cstr(OsStr::new(&format!("{name}.1")))?,
        cap: cap.max(1),
        log,
        len: 0,
    };
    let shown = name.to_string();
    std::thread::Builder::new()
        .name("jl-load-log".into())
        .spawn(move || copy.run(reader, &shown))?;
    Ok(writer)
}

/// The copying thread's state.
struct Copy {
    dir: OwnedFd,
    name: CString,
    older: CString,
    cap: u64,
    log: File,
    /// Bytes in `log`.
    len: u64,
}

impl Copy {
    /// Copies until every process of the load has closed the pipe. A failed write (a full
    /// disk, a name taken meanwhile) is reported once; what the load writes after it is read
    /// and dropped, so that the load never blocks on a full pipe.
    fn run(&mut self, mut reader: File, shown: &str) {
        let mut buf = vec![0u8; CHUNK_BYTES];
        let mut failed = false;
        loop {
            let n = match reader.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return,
            };
            if failed {
                continue;
            }
            if let Err(e) = self.write(&buf[..n]) {
                eprintln!(
                    "jitterlab: warning: cannot write the load log loads/{shown}: {e}; the load's further output is dropped"
                );
                failed = true;
            }
        }
    }

    /// Appends `bytes`, rotating so that no log passes the bound. A line that does not fit
    /// begins the next log (cut only when it is longer than the bound itself).
    fn write(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            let room = self.cap.saturating_sub(self.len) as usize;
            let fit = if bytes.len() <= room {
                bytes.len()
            } else {
                match bytes[..room].iter().rposition(|&b| b == b'\n') {
                    Some(i) => i + 1,
                    None if self.len == 0 => room,
                    None => 0,
                }
            };
            if fit == 0 {
                self.rotate()?;
                continue;
            }
            self.log.write_all(&bytes[..fit])?;
            self.len += fit as u64;
            bytes = &bytes[fit..];
        }
        Ok(())
    }

    /// The log becomes `.1` (the older `.1` is replaced) and a new, empty log is begun.
    fn rotate(&mut self) -> io::Result<()> {
        rename_at(self.dir.as_fd(), &self.name, &self.older)?;
        self.log = create_new_at(self.dir.as_fd(), &self.name)?;
        self.len = 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::fs::open_dir_nofollow;

    /// Written in pieces of lines, the log never passes its bound, its `.1` holds the part
    /// before it, and the two together end with the latest lines, whole.
    #[test]
    fn the_log_rotates_within_its_bound() {
        let dir = tempfile::tempdir().unwrap();
        let fd = open_dir_nofollow(dir.path()).unwrap();
        let log = create_new_at(fd.as_fd(), &cstr(OsStr::new("0-exec.log")).unwrap()).unwrap();
        let mut copy = Copy {
            name: cstr(OsStr::new("0-exec.log")).unwrap(),
            older: cstr(OsStr::new("0-exec.log.1")).unwrap(),
            dir: fd,
            cap: 100,
            log,
            len: 0,
        };
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
}

//! A writer that waits for room in a pipe only until a stop request (SIGINT, SIGTERM): the
//! one way jitterlab writes to what is not a file it made (a FIFO, a device, a descriptor
//! handed over, standard output), so that a reader that holds a pipe open without reading
//! cannot hold a command past the signal that should end it (issue 39, N7 and N16).

use super::path::Kind;
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

/// The write end of an output that is not a file made new (a pipe, a device, a descriptor
/// handed over): writes that wait for room in a pipe only while no SIGINT or SIGTERM comes
/// (issue 39 N7: a reader that holds the FIFO open and does not read held a drop-in past both).
/// The wait is poll(2) with a bound, the stop requests checked between; each write is at most
/// PIPE_BUF bytes once poll said there is room, so that even a descriptor opened blocking by
/// the caller does not block in it.
pub(crate) struct StopAware {
    fd: OwnedFd,
    /// A file, where writes never wait for a reader: written as given.
    file: bool,
    /// The stop requests counted when the write began: one more ends the wait.
    asked: u64,
}

/// How long a wait for room lasts before the stop requests are looked at again.
const ROOM_POLL_MS: i32 = 100;

/// The bytes a write into a pipe with room takes without waiting (POSIX's PIPE_BUF on Linux).
const PIPE_BUF: usize = 4096;

impl StopAware {
    pub(crate) fn new(fd: OwnedFd) -> StopAware {
        let file = super::path::stat(fd.as_fd()).is_ok_and(|s| s.kind == Kind::File);
        StopAware {
            fd,
            file,
            asked: super::signal::stop_requests(),
        }
    }
}

impl Write for StopAware {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        loop {
            if !self.file
                && !super::file::poll_output(self.fd.as_fd(), ROOM_POLL_MS).or_else(|e| match e
                    .kind()
                {
                    io::ErrorKind::Interrupted => Ok(false),
                    _ => Err(e),
                })?
            {
                if super::signal::stop_requests() != self.asked {
                    return Err(io::Error::other(
                        "stopped by a SIGINT or SIGTERM while waiting for its reader to read (the output is incomplete)",
                    ));
                }
                continue;
            }
            let chunk = match self.file {
                true => buf,
                false => &buf[..buf.len().min(PIPE_BUF)],
            };
            let n = super::file::write_raw(self.fd.as_raw_fd(), chunk);
            if n >= 0 {
                return Ok(n as usize);
            }
            let e = io::Error::last_os_error();
            match e.kind() {
                // Room taken by another writer since the poll, or a signal: wait again.
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => continue,
                _ => return Err(e),
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// What [`write_unless_stopped`] did with a text.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Written {
    /// Written whole.
    Whole,
    /// Given up, in part or whole, because a stop was requested and the reader had no room:
    /// the caller counts it.
    Dropped,
    /// The descriptor failed (closed pipe, full disk): nothing more can be said there.
    Failed,
}

/// Writes `text` to `fd` (standard error) without ever holding a stop request (issue 39,
/// fifth hostile re-run N20: a `2>&1 | stalled` reader held the first SIGINT in a blocking
/// write of the run's last message). Until a stop is requested a full pipe is waited for, the
/// stop requests looked at every [`ROOM_POLL_MS`]; once one is, the rest of the text waits for
/// room at most [`ROOM_POLL_MS`] (the "interrupted: results in ..." line still reaches a reader
/// that is only slow), and once a text has been given up after a stop, later texts wait not at
/// all: every text after the stop then costs one poll, not a wait, and the exit is not held.
/// `fd` is borrowed, never duplicated, so that a process out of descriptors can still write.
pub(crate) fn write_unless_stopped(fd: BorrowedFd, text: &[u8]) -> Written {
    use std::sync::atomic::{AtomicBool, Ordering};
    /// Set once a text was given up after a stop: the reader is taken to be stalled for good.
    static GAVE_UP: AtomicBool = AtomicBool::new(false);
    let file = super::path::stat(fd).is_ok_and(|s| s.kind == Kind::File);
    let mut rest = text;
    // The bounded wait after a stop, counted from the first poll that saw the stop.
    let mut stopped_since: Option<std::time::Instant> = None;
    while !rest.is_empty() {
        if !file {
            let stopped = super::signal::stop_requests() > 0;
            let gave_up = GAVE_UP.load(Ordering::Relaxed);
            let wait = match stopped {
                false => ROOM_POLL_MS,
                true if gave_up => 0,
                true => {
                    let since = stopped_since.get_or_insert_with(std::time::Instant::now);
                    let waited = since.elapsed().as_millis().min(ROOM_POLL_MS as u128) as i32;
                    ROOM_POLL_MS - waited
                }
            };
            let room = match super::file::poll_output(fd, wait) {
                Ok(room) => room,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => false,
                Err(_) => return Written::Failed,
            };
            if !room {
                let waited_enough = gave_up
                    || stopped_since
                        .is_some_and(|s| s.elapsed().as_millis() >= ROOM_POLL_MS as u128);
                if stopped && waited_enough {
                    GAVE_UP.store(true, Ordering::Relaxed);
                    return Written::Dropped;
                }
                continue;
            }
        }
        let chunk = match file {
            true => rest,
            false => &rest[..rest.len().min(PIPE_BUF)],
        };
        let n = super::file::write_raw(fd.as_raw_fd(), chunk);
        if n > 0 {
            rest = &rest[n as usize..];
            continue;
        }
        if n == 0 {
            return Written::Failed;
        }
        match io::Error::last_os_error().kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => continue,
            _ => return Written::Failed,
        }
    }
    Written::Whole
}

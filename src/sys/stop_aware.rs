//! A writer that waits for room in a pipe only until a stop request (SIGINT, SIGTERM): the
//! one way jitterlab writes to what is not a file it made (a FIFO, a device, a descriptor
//! handed over, standard output), so that a reader that holds a pipe open without reading
//! cannot hold a command past the signal that should end it (issue 39, N7 and N16).

use super::path::Kind;
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};

/// The write end of an output that is not a file made new (a pipe, a device, a descriptor
/// handed over): writes that wait for room in a pipe only while no SIGINT or SIGTERM comes
/// (issue 39 N7: a reader that holds the FIFO open and does not read held a drop-in past both).
/// The wait is poll(2) with a bound, the stop requests checked between; each write is at most
/// PIPE_BUF bytes once poll said there is room, so that even a descriptor opened blocking by
/// the caller does not block in it.
pub struct StopAware {
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
    pub fn new(fd: OwnedFd) -> StopAware {
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

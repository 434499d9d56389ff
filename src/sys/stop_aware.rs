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

/// After a stop request that came before a write began (the stop that ended the measurement),
/// how long a reader may leave no room before [`StopAware`] gives the write up (sixth hostile
/// re-run, N16-rest: one SIGTERM, then a `| stalled` reader held the process for ever). A
/// reader that reads, however slowly, is waited for: this counts from the last room it made.
pub(crate) const STALLED_AFTER_STOP: std::time::Duration = std::time::Duration::from_secs(1);

/// The heartbeat of jitterlab's own threads, which the measuring loop's starvation guard
/// (`measure::guard`) looks at: moved by the runner once per round, and here by every wait
/// for a reader's room (sixth hostile re-run, G1). A thread that waits in poll(2) for a reader
/// that does not read (a stderr paused with Ctrl-S, a `2>&1 | ssh` whose link stalls) is not
/// starved of CPU: a measuring thread giving its CPU up cannot help it, and only cut ~100 ms
/// out of the measurement, blamed on "a higher-priority task".
pub(crate) static OWN_THREADS_BEAT: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(0);

/// A wait for room ended without room: the waiting thread is alive ([`OWN_THREADS_BEAT`]).
fn waited_for_room() {
    OWN_THREADS_BEAT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

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
    /// Waits for room until a stop request comes, or, when one came before the write began,
    /// until the reader has made no room for [`STALLED_AFTER_STOP`].
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut stalled_since: Option<std::time::Instant> = None;
        // The bytes queued in the pipe at the last wait: fewer now means that its reader read,
        // though it freed no whole page yet (poll(2) says a pipe has room only then: a reader
        // of 64 bytes at a time took 64 reads to make it; seventh hostile re-run, O1).
        let mut queued = None;
        loop {
            if !self.file
                && !super::file::poll_output(self.fd.as_fd(), ROOM_POLL_MS).or_else(|e| match e
                    .kind()
                {
                    io::ErrorKind::Interrupted => Ok(false),
                    _ => Err(e),
                })?
            {
                waited_for_room();
                let stops = super::signal::stop_requests();
                if stops != self.asked {
                    return Err(io::Error::other(
                        "stopped by a SIGINT or SIGTERM while waiting for its reader to read (the output is incomplete)",
                    ));
                }
                let now_queued = queued_bytes(self.fd.as_fd());
                if now_queued.is_some_and(|n| queued.is_some_and(|q| n < q)) {
                    stalled_since = None;
                }
                queued = now_queued;
                let stalled = stalled_since.get_or_insert_with(std::time::Instant::now);
                if stops > 0 && stalled.elapsed() >= STALLED_AFTER_STOP {
                    return Err(io::Error::other(format!(
                        "stopped by a SIGINT or SIGTERM, and its reader then read nothing for {} s (the output is incomplete)",
                        STALLED_AFTER_STOP.as_secs()
                    )));
                }
                continue;
            }
            stalled_since = None;
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

/// The bytes queued in the pipe `fd` (FIONREAD, which a pipe answers on either end), or None
/// where it cannot be told (not a pipe).
fn queued_bytes(fd: BorrowedFd) -> Option<usize> {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int through the pointer, to a local of that type.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), libc::FIONREAD, &mut n) };
    (r == 0).then_some(n.max(0) as usize)
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
                waited_for_room();
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering::Relaxed;
    use std::sync::mpsc;
    use std::time::Duration;

    /// A pipe whose reader never reads, filled: its reader (kept open) and its writer.
    fn full_pipe() -> (std::io::PipeReader, OwnedFd) {
        let (reader, writer) = std::io::pipe().unwrap();
        let writer = OwnedFd::from(writer);
        let fd = writer.as_raw_fd();
        let chunk = [b'x'; PIPE_BUF];
        // SAFETY: fcntl and write on a descriptor this function owns, from a buffer of ours.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
            while libc::write(fd, chunk.as_ptr().cast(), chunk.len()) > 0 {}
            libc::fcntl(fd, libc::F_SETFL, flags);
        }
        (reader, writer)
    }

    /// N16-rest: a stop that ended the measurement came before the write (one SIGTERM), and
    /// the reader holds the pipe open without reading: the write gives up after
    /// [`STALLED_AFTER_STOP`] without room, where it waited for a second stop, for ever.
    #[test]
    fn a_write_after_a_stop_gives_up_once_its_reader_makes_no_room_for_a_second() {
        let (reader, writer) = full_pipe();
        // What the SIGINT/SIGTERM handlers do (session::signals), before the write begins.
        crate::sys::signal::note_stop_request();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(StopAware::new(writer).write_all(&[b'y'; 2 * PIPE_BUF]));
        });
        let ended = rx
            .recv_timeout(Duration::from_secs(5))
            .expect("the write still waits 5 s after the stop");
        let e = ended.unwrap_err();
        assert!(
            e.to_string().contains("stopped by a SIGINT or SIGTERM"),
            "{e}"
        );
        drop(reader);
    }

    /// O1: after a stop, a reader that reads less than a page a second (512 bytes every 0.2
    /// s) makes no room poll(2) sees for 1.6 s, yet reads: the write is waited for, not given
    /// up after [`STALLED_AFTER_STOP`] as "read nothing".
    #[test]
    fn a_slow_reader_that_reads_is_waited_for_after_a_stop() {
        use std::io::Read;
        let (mut reader, writer) = full_pipe();
        crate::sys::signal::note_stop_request();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(StopAware::new(writer).write_all(b"y"));
        });
        let mut read = 0;
        let mut buf = [0u8; 512];
        let ended = loop {
            if let Ok(r) = rx.recv_timeout(Duration::from_millis(200)) {
                break Some(r);
            }
            read += reader.read(&mut buf).unwrap();
            if read >= 2 * PIPE_BUF {
                break None;
            }
        };
        // The write ends once a page is free (1.6 s); two pages read would be 3.2 s.
        match ended {
            Some(r) => {
                assert!(r.is_ok(), "given up while its reader read: {r:?}");
                assert!(read >= PIPE_BUF, "ended before a page was read: {read}");
            }
            None => panic!("the write never ended"),
        }
    }

    /// G1: a thread waiting for a reader's room (stderr not read) moves the own threads'
    /// heartbeat, so that the measuring threads' starvation guard does not give CPUs up for a
    /// thread that is blocked, not starved.
    #[test]
    fn a_wait_for_a_readers_room_moves_the_own_threads_heartbeat() {
        let (reader, writer) = full_pipe();
        let before = OWN_THREADS_BEAT.load(Relaxed);
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(write_unless_stopped(writer.as_fd(), b"z"));
        });
        std::thread::sleep(Duration::from_millis(350));
        let moved = OWN_THREADS_BEAT.load(Relaxed) - before;
        assert!(
            moved >= 1,
            "the heartbeat stood still while the writer waited"
        );
        // Without a stop request the wait goes on (about 3 beats by now); with one (another
        // test's) it ended after a wait, having moved the beat all the same.
        drop(reader);
        let _ = rx.recv_timeout(Duration::from_secs(5));
    }
}

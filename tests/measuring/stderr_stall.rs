//! Standard error into a pipe no one reads (fifth hostile re-run, N20): stderr was a plain
//! blocking write, so a stalled `2>&1 | ssh`, a stuck journald stream or a `| tee` to a hung
//! NFS held the first SIGINT or SIGTERM in the write of the run's last message. Now a stop
//! request is served within a second whatever stderr does: what stderr has no room for after
//! it is dropped, and the results are whole.

use crate::common::{exclusive, text};
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// A pipe of 4 KiB (the smallest a pipe is: one page), `full` already when asked.
fn small_pipe(full: bool) -> (OwnedFd, OwnedFd) {
    let (reader, writer) = std::io::pipe().unwrap();
    let (reader, writer): (OwnedFd, OwnedFd) = (reader.into(), writer.into());
    // SAFETY: fcntl on descriptors this function owns.
    unsafe {
        assert!(libc::fcntl(writer.as_raw_fd(), libc::F_SETPIPE_SZ, 4096) > 0);
        if full {
            let flags = libc::fcntl(writer.as_raw_fd(), libc::F_GETFL);
            libc::fcntl(writer.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
            let chunk = [b'x'; 512];
            while libc::write(writer.as_raw_fd(), chunk.as_ptr().cast(), chunk.len()) > 0 {}
            libc::fcntl(writer.as_raw_fd(), libc::F_SETFL, flags);
        }
    }
    (reader, writer)
}

/// Starts `args` with stdout `stdout` and stderr the pipe's `writer`, waits `wait`, checks
/// that it still runs (waiting for room, as nothing reads), sends `signal`: it must end
/// within 1.5 s with results that are whole. Returns its exit code.
fn stops_with_stderr_stalled(
    args: &[&str],
    out: &std::path::Path,
    stdout: std::process::Stdio,
    writer: OwnedFd,
    wait: Duration,
    signal: libc::c_int,
) -> Option<i32> {
    let mut child = std::process::Command::new(crate::common::bin())
        .args(args)
        .arg("--out")
        .arg(out)
        .stdout(stdout)
        .stderr(writer)
        .spawn()
        .unwrap();
    std::thread::sleep(wait);
    assert!(
        child.try_wait().unwrap().is_none(),
        "{args:?} ended before the signal with nothing reading its stderr"
    );
    // SAFETY: a plain syscall on our own child, not reaped yet.
    unsafe { libc::kill(child.id() as i32, signal) };
    let signalled = Instant::now();
    while child.try_wait().unwrap().is_none() && signalled.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let took = signalled.elapsed();
    if child.try_wait().unwrap().is_none() {
        let _ = child.kill();
    }
    let status = child.wait().unwrap();
    assert!(
        took < Duration::from_millis(1500),
        "{args:?}: ended {took:?} after signal {signal} ({status})"
    );
    let record = std::fs::read_to_string(out.join("run.json")).unwrap();
    assert!(
        record.contains(r#""ended": "completed""#) || record.contains(r#""ended": "interrupted""#),
        "{record}"
    );
    status.code()
}

#[test]
fn a_stop_is_served_when_stderr_is_a_full_pipe_no_one_reads() {
    // stderr-held.py: `run --budget` (a verdict on stderr at the end) with stderr a full pipe
    // held open, SIGTERM after the measurement: held for ever in the write before.
    let tmp = tempfile::tempdir().unwrap();
    let (_reader, writer) = small_pipe(true);
    let _g = exclusive();
    let code = stops_with_stderr_stalled(
        &["run", "-D", "1s", "--budget", "max < 1us"],
        &tmp.path().join("run"),
        std::process::Stdio::null(),
        writer,
        Duration::from_secs(4),
        libc::SIGTERM,
    );
    // The budget's verdict (failed: 1), its message dropped; never 101 or a signal's death.
    assert_eq!(code, Some(1));
}

#[test]
fn a_stop_is_served_when_stdout_and_stderr_are_one_stalled_pipe() {
    // both-held.py: `run --json 2>&1 | stalled`: the SIGINT ended the wait on stdout, then the
    // process blocked writing its message to stderr, alive until a second SIGINT.
    let tmp = tempfile::tempdir().unwrap();
    let (_reader, writer) = small_pipe(false);
    let stdout = writer.try_clone().unwrap();
    let _g = exclusive();
    let code = stops_with_stderr_stalled(
        &["run", "-D", "1s", "--json"],
        &tmp.path().join("run"),
        stdout.into(),
        writer,
        Duration::from_secs(4),
        libc::SIGINT,
    );
    // stdout's output incomplete: a failure while running, said on stderr (dropped there).
    assert_eq!(code, Some(4));
}

#[test]
fn stderr_lines_are_whole_through_a_pipe_that_is_read() {
    // The stop-aware writer waits for a slow reader and writes every byte before a stop: a
    // reader that reads late gets the whole of `--help`'s neighbour, a usage error's text.
    let (reader, writer) = small_pipe(true);
    let child = std::process::Command::new(crate::common::bin())
        .args(["run", "--no-such-option"])
        .stdout(std::process::Stdio::null())
        .stderr(writer)
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let mut all = Vec::new();
    let mut reader = std::fs::File::from(reader);
    std::io::Read::read_to_end(&mut reader, &mut all).unwrap();
    let out = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&all);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(said.contains("--no-such-option"), "{said}");
}

//! Starting jitterlab with a signal already there (issue 39 R17).

use super::bin;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Starts jitterlab with `args` and SIGINT already pending and blocked, as a SIGINT that came
/// while the handlers were being installed (with it blocked) is. Returns how long it took to
/// end and its output; kills it (and fails) after `limit`.
pub fn with_sigint_pending(args: &[&str], limit: Duration) -> (Duration, std::process::Output) {
    let mut command = Command::new(bin());
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: sigprocmask and raise are async-signal-safe; nothing else runs between fork
    // and exec. The blocked mask and the pending signal both survive execve.
    unsafe {
        command.pre_exec(|| {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGINT);
            libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            libc::raise(libc::SIGINT);
            Ok(())
        });
    }
    let started = Instant::now();
    let child = command.spawn().expect("jitterlab starts");
    let pid = child.id() as libc::pid_t;
    // A hard bound: a regression must fail, never hang the suite.
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if done_rx.recv_timeout(limit).is_err() {
            // SAFETY: plain syscall; the child is not reaped until wait_with_output returns.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    });
    let output = child.wait_with_output().unwrap();
    let took = started.elapsed();
    let _ = done_tx.send(());
    watchdog.join().unwrap();
    (took, output)
}

//! Processes: ids, fork, exit, kill, wait statuses and reaping, parent-death signals, sessions.
//! A pid is `pid_t`, 32 bits on every Linux target; [`Pid`] names it outside this module.

use super::signal::Signal;
use std::io;

/// A process or thread id.
pub(crate) type Pid = libc::pid_t;

/// This process's id.
pub fn id() -> Pid {
    // SAFETY: no arguments; cannot fail.
    unsafe { libc::getpid() }
}

/// The inode of the initial pid namespace's file in nsfs (`PROC_PID_INIT_INO` of the
/// kernel's include/linux/proc_ns.h, fixed since Linux 3.8).
const INITIAL_PID_NAMESPACE_INODE: u64 = 0xEFFF_FFFC;

/// Whether this process is in the kernel's initial pid namespace, where its ids are the ones
/// the kernel's trace events carry; None when `/proc/self/ns/pid` cannot be read. In another
/// pid namespace (a container without the host's pid namespace) every id this process sees is
/// that namespace's, and the trace names the same tasks by other numbers.
pub(crate) fn in_initial_pid_namespace() -> Option<bool> {
    use std::os::unix::fs::MetadataExt;
    let ns = std::fs::metadata("/proc/self/ns/pid").ok()?;
    Some(ns.ino() == INITIAL_PID_NAMESPACE_INODE)
}

/// The parent's id (async-signal-safe).
pub(crate) fn parent_id() -> Pid {
    // SAFETY: no arguments; cannot fail.
    unsafe { libc::getppid() }
}

/// The real user id of this process.
pub(crate) fn user_id() -> u32 {
    // SAFETY: no arguments; cannot fail.
    unsafe { libc::getuid() }
}

/// The effective user id of this process.
pub fn effective_user_id() -> u32 {
    // SAFETY: no arguments; cannot fail.
    unsafe { libc::geteuid() }
}

/// The user ids of process `pid`: real, effective, saved set and filesystem (the `Uid:` line
/// of /proc/PID/status); None when it is gone or its status unreadable.
pub(crate) fn user_ids(pid: Pid) -> Option<[u32; 4]> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("Uid:"))?;
    let mut ids = line.split_whitespace().map(|v| v.parse::<u32>().ok());
    Some([ids.next()??, ids.next()??, ids.next()??, ids.next()??])
}

/// Sets this process's real, effective and saved user ids (setresuid(2)); async-signal-safe,
/// so a child may call it between fork and exec. Used by tests to give a process the user ids
/// of another user's setuid program.
#[cfg(test)]
pub(crate) fn set_user_ids(real: u32, effective: u32, saved: u32) -> std::io::Result<()> {
    // SAFETY: plain integers; the call touches no memory of ours.
    match unsafe { libc::setresuid(real, effective, saved) } {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

/// The name of the user `uid` in /etc/passwd.
pub(crate) fn user_name(uid: u32) -> Option<String> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() > 2 && f[2].parse() == Ok(uid)).then(|| f[0].to_string())
    })
}

/// The home directory of the user `uid` in /etc/passwd.
pub(crate) fn user_home(uid: u32) -> Option<String> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() > 5 && f[2].parse() == Ok(uid)).then(|| f[5].to_string())
    })
}

/// The user `uid` in words for a message: `user mallory (uid 1001)`, or `user 1001`.
pub(crate) fn user_in_words(uid: u32) -> String {
    match user_name(uid) {
        Some(name) => format!("user {name} (uid {uid})"),
        None => format!("user {uid}"),
    }
}

/// Forks a child that runs `body` and leaves with `_exit(body())` (no destructors, no atexit
/// handlers); the parent gets the child's pid.
///
/// # Safety
/// The calling process may have other threads: `body` must make only async-signal-safe calls
/// (no allocation, no locks), as between fork and exec.
pub(crate) unsafe fn fork_child(body: impl FnOnce() -> i32) -> io::Result<Pid> {
    // SAFETY: the caller keeps the child's work async-signal-safe.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => exit_now(body()),
        pid => Ok(pid),
    }
}

/// Ends the process at once with `code` (`_exit`: async-signal-safe, no destructors).
pub(crate) fn exit_now(code: i32) -> ! {
    // SAFETY: _exit never returns and is async-signal-safe.
    unsafe { libc::_exit(code) }
}

/// kill(2): `signal` to `pid`, with kill's meaning of the target: a negative pid is a
/// process group, 0 the caller's own group; signal 0 only checks that the target exists.
/// Async-signal-safe.
pub fn kill(pid: Pid, signal: Signal) -> io::Result<()> {
    // SAFETY: plain syscall with integer arguments.
    super::check(unsafe { libc::kill(pid, signal) }).map(drop)
}

/// pidfd_open(2): a descriptor that names process `pid` for as long as it is open, even after
/// the process has exited and its pid was handed to another (Linux 5.3). ENOSYS on older
/// kernels.
pub(crate) fn pidfd_open(pid: Pid) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: plain syscall with integer arguments; flags 0.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new descriptor the kernel just gave us, owned by nobody else.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as libc::c_int) })
}

/// The process (thread group) that thread `tid` belongs to: the `Tgid:` of
/// `/proc/<tid>/status` (a thread id is a pid too, in /proc and to kill(2), but pidfd_open(2)
/// takes only a thread group's leader). None when it cannot be read.
pub(crate) fn thread_group_of(tid: Pid) -> Option<Pid> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// pidfd_send_signal(2): `signal` to the process `pidfd` names. ESRCH once that process has
/// exited: never to another that took its pid.
pub(crate) fn pidfd_send_signal(
    pidfd: std::os::fd::BorrowedFd<'_>,
    signal: Signal,
) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: plain syscall; a null siginfo makes it behave as kill(2); flags 0.
    let r = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            signal,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    };
    super::check(r as libc::c_int).map(drop)
}

/// Whether this process may signal `pid`, as kill(pid, 0) answers.
#[derive(Debug)]
pub(crate) enum SignalProbe {
    Allowed,
    /// No such process (ESRCH).
    Missing,
    /// It exists but belongs to another user (EPERM).
    NotOurs,
    Failed(io::Error),
}

/// kill(pid, 0): may this process signal `pid`?
pub(crate) fn probe_signal(pid: Pid) -> SignalProbe {
    match kill(pid, 0) {
        Ok(()) => SignalProbe::Allowed,
        Err(e) => match e.raw_os_error() {
            Some(libc::ESRCH) => SignalProbe::Missing,
            Some(libc::EPERM) => SignalProbe::NotOurs,
            _ => SignalProbe::Failed(e),
        },
    }
}

/// Asks the kernel to send `signal` to the calling thread's process when the thread that
/// forked it dies (PR_SET_PDEATHSIG). Async-signal-safe.
pub(crate) fn set_parent_death_signal(signal: Signal) {
    // SAFETY: plain prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, signal as libc::c_ulong, 0, 0, 0) };
}

/// Names the calling thread (its `comm`, as `ps` and /proc show it): up to 15 bytes of
/// `name`, NUL-terminated in the array. Async-signal-safe.
pub(crate) fn set_thread_name(name: &[u8; 16]) {
    // SAFETY: a NUL-terminated buffer of 16 bytes, the most PR_SET_NAME reads.
    unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr() as libc::c_ulong, 0, 0, 0) };
}

/// Makes this process a child subreaper: orphans below it come back to it to be reaped.
pub(crate) fn become_child_subreaper() {
    // SAFETY: plain prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
}

/// Starts a new session with the calling process as its leader (async-signal-safe).
pub(crate) fn new_session() {
    // SAFETY: plain syscall; failure (already a group leader) leaves things as they were.
    unsafe { libc::setsid() };
}

/// A child's exit: who and how (the raw wait status) and its CPU time (user + system, ns, of
/// it and its reaped descendants).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reaped {
    pub pid: Pid,
    pub status: i32,
    pub(crate) cpu_ns: u64,
}

/// wait4(2) for `pid` (kill's meaning: negative is a process group); `block` waits for it,
/// otherwise Ok(None) when none has exited yet.
pub fn wait_for(pid: Pid, block: bool) -> io::Result<Option<Reaped>> {
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid out-buffer.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let flags = if block { 0 } else { libc::WNOHANG };
    // SAFETY: valid out-pointers.
    let r = unsafe { libc::wait4(pid, &mut status, flags, &mut ru) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((r > 0).then(|| Reaped {
        pid: r,
        status,
        cpu_ns: super::time::timeval_to_ns(&ru.ru_utime) + super::time::timeval_to_ns(&ru.ru_stime),
    }))
}

/// waitid(2) for child `pid` without reaping it (WNOWAIT, WNOHANG): whether it has ended. An
/// ended child left unreaped is a zombie that keeps its pid, and so its process group's id,
/// from being handed to another process: a later `kill(-pid, ...)` reaches its group or none.
pub(crate) fn has_exited(pid: Pid) -> io::Result<bool> {
    // SAFETY: an all-zero siginfo_t is a valid out-buffer.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid out-pointer; integer arguments.
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: waitid filled it in (si_pid stays 0 when no child has ended, WNOHANG).
    Ok(unsafe { info.si_pid() } != 0)
}

/// waitpid(2) for child `pid`, blocking: its raw wait status (-1 with errno on failure).
pub(crate) fn wait_raw(pid: Pid, status: &mut i32) -> Pid {
    // SAFETY: valid status pointer.
    unsafe { libc::waitpid(pid, status, 0) }
}

/// The signal that ended a child, from its wait status; None when it exited.
pub(crate) fn killed_by(status: i32) -> Option<Signal> {
    libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status))
}

/// The exit code in a wait status (meaningful when [`killed_by`] is None).
pub(crate) fn exit_code(status: i32) -> i32 {
    libc::WEXITSTATUS(status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::signal::SIGKILL;

    #[test]
    fn a_forked_childs_exit_code_and_killing_signal_are_read_back() {
        // SAFETY: the child only returns a constant.
        let pid = unsafe { fork_child(|| 7) }.unwrap();
        let mut status = 0;
        assert_eq!(wait_raw(pid, &mut status), pid);
        assert_eq!((killed_by(status), exit_code(status)), (None, 7));

        // SAFETY: the child only sleeps (a syscall) until killed.
        let pid = unsafe {
            fork_child(|| {
                loop {
                    libc::pause();
                }
            })
        }
        .unwrap();
        kill(pid, SIGKILL).unwrap();
        let reaped = wait_for(pid, true).unwrap().expect("blocking wait reaps");
        assert_eq!((reaped.pid, killed_by(reaped.status)), (pid, Some(SIGKILL)));
        assert!(kill(pid, 0).is_err(), "reaped: gone");
        assert!(
            wait_for(pid, false).is_err(),
            "not our child any more: ECHILD"
        );
    }

    #[test]
    fn a_pidfd_signals_its_process_and_never_another_after_it_exited() {
        // SAFETY: the child only sleeps (a syscall) until killed.
        let pid = unsafe {
            fork_child(|| {
                loop {
                    libc::pause();
                }
            })
        }
        .unwrap();
        let fd = match pidfd_open(pid) {
            Ok(fd) => fd,
            Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {
                kill(pid, SIGKILL).unwrap();
                wait_for(pid, true).unwrap();
                eprintln!("SKIPPED: no pidfd_open on this kernel");
                return;
            }
            Err(e) => panic!("pidfd_open: {e}"),
        };
        use std::os::fd::AsFd;
        pidfd_send_signal(fd.as_fd(), 0).unwrap();
        pidfd_send_signal(fd.as_fd(), SIGKILL).unwrap();
        let reaped = wait_for(pid, true).unwrap().unwrap();
        assert_eq!(killed_by(reaped.status), Some(SIGKILL));
        let e = pidfd_send_signal(fd.as_fd(), 0).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ESRCH), "{e}");
    }
}

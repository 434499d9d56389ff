//! Who `signal:SIG,pid=N` and `signal:SIG,parent` send to: each process resolved once, before
//! the run, to a pidfd, so that a signal reaches that process or none (never one that took its
//! pid, nor the subreaper jitterlab is handed to); plan/actions.rs checks the actions with them.

/// jitterlab's parent, as it was when the first action naming it was checked (before the
/// run): after that parent exits, `signal:SIG,parent` fails ("has exited") instead of reaching
/// whichever process inherited jitterlab (a subreaper, pid 1) or took the parent's pid.
#[derive(Debug)]
pub struct Parent {
    pub pid: i32,
    /// A pidfd naming it (Linux 5.3): signals through it reach that process or none. None
    /// where the kernel has no pidfd_open: then a signal is sent only while jitterlab's
    /// parent is still that pid (once it exits, jitterlab is reparented).
    pidfd: Option<std::os::fd::OwnedFd>,
}

impl Parent {
    /// Sends `signal` (0: only checks) to the parent; the error says why not.
    pub fn send(&self, signal: i32) -> Result<(), String> {
        use crate::sys::errno;
        use crate::sys::process;
        let gone = || {
            format!(
                "jitterlab's parent (pid {}) has exited: not signalled (its pid may belong to another process now)",
                self.pid
            )
        };
        let result = match &self.pidfd {
            Some(fd) => {
                use std::os::fd::AsFd;
                process::pidfd_send_signal(fd.as_fd(), signal)
            }
            None if process::parent_id() != self.pid => return Err(gone()),
            None => process::kill(self.pid, signal),
        };
        result.map_err(|e| match e.raw_os_error() {
            Some(errno::ESRCH) => gone(),
            Some(errno::EPERM) => format!(
                "jitterlab's parent (pid {}) is not ours to signal (it belongs to another user)",
                self.pid
            ),
            _ => format!("cannot signal jitterlab's parent (pid {}): {e}", self.pid),
        })
    }
}

/// A process named by `signal:SIG,pid=N`, as it was when the action was checked (before the
/// run): a pidfd of it, so that once it exits the action fails ("has exited") instead of
/// signalling whichever process gets its pid next (issue 39 F5), as for [`Parent`].
#[derive(Debug)]
pub(crate) struct PidTarget {
    pub pid: i32,
    /// None where the kernel has no pidfd_open (before Linux 5.3): then the pid is signalled
    /// by number, as the docs say.
    pidfd: Option<std::os::fd::OwnedFd>,
}

impl PidTarget {
    /// Sends `signal` to the process; the error says why not.
    pub(crate) fn send(&self, signal: i32) -> Result<(), String> {
        use crate::sys::{errno, process};
        let result = match &self.pidfd {
            Some(fd) => process::pidfd_send_signal(std::os::fd::AsFd::as_fd(fd), signal),
            None => process::kill(self.pid, signal),
        };
        result.map_err(|e| match e.raw_os_error() {
            Some(errno::ESRCH) => format!(
                "process {} has exited: not signalled (its pid may belong to another process now)",
                self.pid
            ),
            Some(errno::EPERM) => format!(
                "process {} is not ours to signal (it belongs to another user)",
                self.pid
            ),
            _ => format!("cannot signal process {}: {e}", self.pid),
        })
    }
}

/// The processes `pid=N` named, each resolved once per process (the first call).
static PID_TARGETS: std::sync::Mutex<
    std::collections::BTreeMap<i32, Result<std::sync::Arc<PidTarget>, String>>,
> = std::sync::Mutex::new(std::collections::BTreeMap::new());

/// The process `pid`, resolved to a pidfd at the first call (the actions' check, before the
/// run) and the same one at every later call.
pub(crate) fn pid_target(pid: i32) -> Result<std::sync::Arc<PidTarget>, String> {
    let mut targets = PID_TARGETS.lock().unwrap_or_else(|e| e.into_inner());
    targets
        .entry(pid)
        .or_insert_with(|| {
            let pidfd = match crate::sys::process::pidfd_open(pid) {
                Ok(fd) => Some(fd),
                Err(e) if e.raw_os_error() == Some(crate::sys::errno::ENOSYS) => None,
                Err(e) if e.raw_os_error() == Some(crate::sys::errno::ESRCH) => {
                    return Err(format!("signal: no process {pid}"));
                }
                Err(e) => {
                    return Err(not_a_process(pid).unwrap_or_else(|| {
                        format!("signal:...,pid={pid}: cannot open a pidfd for process {pid}: {e}")
                    }));
                }
            };
            Ok(std::sync::Arc::new(PidTarget { pid, pidfd }))
        })
        .clone()
}

/// Why `pid` names no process it can take (issue 39 L-e): a thread of another process (its
/// `Tgid`), whose id kill(2) takes but pidfd_open(2) refuses; None when it is not a thread.
fn not_a_process(pid: i32) -> Option<String> {
    let leader = crate::sys::process::thread_group_of(pid).filter(|&l| l != pid)?;
    Some(if u32::try_from(leader) == Ok(std::process::id()) {
        format!(
            "signal:...,pid={pid}: {pid} is a thread of this jitterlab itself (pid {leader}); name another process"
        )
    } else {
        format!(
            "signal:...,pid={pid}: {pid} is a thread of process {leader} (the Tgid in /proc/{pid}/status), not a process; signals go to a process: name it, pid={leader}"
        )
    })
}

static PARENT: std::sync::OnceLock<Result<Parent, String>> = std::sync::OnceLock::new();

/// jitterlab's parent, resolved once per process (the first call): pid 1 is refused (the
/// process that started jitterlab has exited already, or init started it: there is no parent
/// to signal).
pub fn parent() -> Result<&'static Parent, String> {
    PARENT
        .get_or_init(resolve_parent)
        .as_ref()
        .map_err(Clone::clone)
}

fn resolve_parent() -> Result<Parent, String> {
    use crate::sys::process;
    let pid = process::parent_id();
    if pid <= 1 {
        return Err(format!(
            "signal:...,parent: jitterlab's parent is pid {pid} (init): the process that started it has exited, and pid 1 is never signalled; name a process with pid=N"
        ));
    }
    let pidfd = match process::pidfd_open(pid) {
        Ok(fd) => Some(fd),
        Err(e) if e.raw_os_error() == Some(crate::sys::errno::ENOSYS) => None,
        Err(e) => {
            return Err(format!(
                "signal:...,parent: cannot open a pidfd for jitterlab's parent (pid {pid}): {e}"
            ));
        }
    };
    // Opened after reading the pid: had the parent exited in between (and its pid been
    // reused), jitterlab would have been reparented by now.
    if process::parent_id() != pid {
        return Err(format!(
            "signal:...,parent: jitterlab's parent (pid {pid}) exited as jitterlab started; name a process with pid=N"
        ));
    }
    Ok(Parent { pid, pidfd })
}

//! The process groups of the actions' programs, journaled (journal.rs) so that what a program
//! left running outlives no SIGKILL of jitterlab. The program itself dies with jitterlab (its
//! parent-death signal), but a process it started in its group (a shell's background job) is
//! only reparented. So each program's group is journaled: its session before the start (the
//! group's id, the program's pid, is not known yet), its group after; the journal goes when
//! the program is reaped, after its group was killed. At the next start (session/stale.rs) a
//! journal whose writer died during this boot has what is left of that group SIGKILLed.
//!
//! Which processes: those whose process group AND session are the journal's. A group's id is
//! the pid of the process that made it, and the kernel hands that pid to no one while any
//! member of the group lives: so while something of the program's group is left, its number
//! names that group and nothing else. Once all of it has ended, the number may be given out
//! again (pids cycle), and a new group with it could be anyone's; the session check limits
//! that to a group made in the killed jitterlab's own session (its terminal's shell), and the
//! group of the process doing the undo is never touched. A process whose group or session
//! changed (setsid, setpgid) has left the program's group: beyond this owner, as it is while
//! jitterlab lives.

use crate::journal::{Journal, Stale, TrustedDir};
use crate::sys::process::{self, Pid};
use crate::sys::signal;
use std::os::fd::AsFd;
use std::path::Path;
use std::time::{Duration, Instant};

/// The journals' kind (their names: `action-group-<pid>-<n>`).
pub(crate) const KIND: &str = "action-group";
/// How long killing what is left of a group may take: a member may fork while it is killed.
const KILL_WAIT: Duration = Duration::from_secs(2);

/// The (process group, session) of process `pid` (a number, or "self") under `proc_root`,
/// and whether it is a zombie (nothing to kill: it waits for its parent).
fn ids(proc_root: &Path, pid: &str) -> Option<(Pid, Pid, bool)> {
    let stat = std::fs::read_to_string(proc_root.join(pid).join("stat")).ok()?;
    // After the command's name, which may hold spaces and parentheses: state, ppid, pgrp,
    // session.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut f = rest.split_whitespace();
    let state = f.next()?;
    let _ppid = f.next()?;
    let pgid = f.next()?.parse().ok()?;
    let sid = f.next()?.parse().ok()?;
    Some((pgid, sid, state == "Z" || state == "X"))
}

/// The journal of a program about to be started: the session its group will be in (this
/// process's), in `dir` (or why there is none). None when it cannot be written: the program
/// then runs unjournaled, said once ([`unjournaled`]).
pub(super) fn journal_before_start(dir: Result<&TrustedDir, &String>) -> Option<Journal> {
    let dir = match dir {
        Ok(dir) => dir,
        Err(why) => {
            unjournaled(why);
            return None;
        }
    };
    let Some((_, sid, _)) = ids(Path::new("/proc"), "self") else {
        unjournaled("cannot read this process's session in /proc/self/stat");
        return None;
    };
    Journal::create(dir, KIND, &[format!("session {sid}")])
        .map_err(|e| {
            unjournaled(&format!(
                "cannot write a journal in {}: {e}",
                dir.path().display()
            ))
        })
        .ok()
}

/// Says (once per process) that the programs' groups go unjournaled, because `why`.
fn unjournaled(why: &str) {
    crate::journal::say_unjournaled(
        "the process groups of the --on-threshold/--on-end programs",
        why,
        "the programs run unjournaled",
        "what a program leaves running in its group (a shell's background job) is not killed at the next start; find it with `ps -eo pid,pgid,args`",
    );
}

/// Records the group of the program just started (its pid); the journal is dropped (removed)
/// when that cannot be written, as it would name no group.
pub(super) fn journal_started(journal: Option<Journal>, pid: Pid) -> Option<Journal> {
    let mut journal = journal?;
    match journal.append(&format!("group {pid}")) {
        Ok(()) => Some(journal),
        Err(e) => {
            let _ = journal.remove();
            unjournaled(&format!("cannot add the group to its journal: {e}"));
            None
        }
    }
}

/// The live (not zombie) processes under `proc_root` in process group `pgid` of session `sid`,
/// this process's own group excepted.
fn members(proc_root: &Path, pgid: Pid, sid: Pid, own_pgid: Option<Pid>) -> Vec<Pid> {
    if own_pgid == Some(pgid) {
        return Vec::new();
    }
    let Ok(entries) = std::fs::read_dir(proc_root) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<Pid>().ok())
        .filter(|p| {
            ids(proc_root, &p.to_string())
                .is_some_and(|(g, s, zombie)| g == pgid && s == sid && !zombie)
        })
        .collect()
}

/// SIGKILLs the members of group `pgid` of session `sid` until none is left or
/// [`KILL_WAIT`] has passed: the pids killed, and those still there. Each is signalled
/// through a pidfd opened before its group and session are read again, so that a pid handed
/// to another process in between is never signalled.
fn kill_group(pgid: Pid, sid: Pid) -> (Vec<Pid>, Vec<Pid>) {
    let proc_root = Path::new("/proc");
    let own = ids(proc_root, "self").map(|(g, _, _)| g);
    let deadline = Instant::now() + KILL_WAIT;
    let mut killed = Vec::new();
    loop {
        let now = members(proc_root, pgid, sid, own);
        if now.is_empty() || Instant::now() > deadline {
            return (killed, now);
        }
        for pid in now {
            let Ok(fd) = process::pidfd_open(pid) else {
                continue;
            };
            let still = ids(proc_root, &pid.to_string())
                .is_some_and(|(g, s, zombie)| g == pgid && s == sid && !zombie);
            if still
                && process::pidfd_send_signal(fd.as_fd(), signal::SIGKILL).is_ok()
                && !killed.contains(&pid)
            {
                killed.push(pid);
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn pids(list: &[Pid]) -> String {
    list.iter()
        .map(|p| p.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Undoes the journal of a killed run (session/stale.rs): SIGKILLs what is left of the
/// program's process group, during this boot. Returns what to say, if anything, and whether
/// the journal is done with (always, once read: a survivor of SIGKILL is named, not retried).
pub(crate) fn undo(stale: &Stale) -> (Option<String>, bool) {
    // Session 0: a session whose leader is outside this pid namespace (a container's shell,
    // a CI runner's); /proc shows it as 0 to every process in it.
    let sid = stale.parsed::<Pid>("session").filter(|&s| s >= 0);
    let pgid = stale.parsed::<Pid>("group").filter(|&g| g > 1);
    let Some(sid) = sid else {
        return stale.not_in_format("an action group");
    };
    if !stale.this_boot {
        // No process survives a reboot.
        return (None, true);
    }
    let writer = stale.pid;
    let Some(pgid) = pgid else {
        // Killed between the journal and the start: the program, if it started, died with
        // jitterlab before it could be journaled; what it started in that moment is unknown.
        return (None, true);
    };
    let (killed, left) = kill_group(pgid, sid);
    let said = match (killed.is_empty(), left.is_empty()) {
        (true, true) => None,
        (false, true) => Some(format!(
            "killed {} process{} left running by an --on-threshold/--on-end program of a jitterlab (pid {writer}) that was killed (its process group {pgid}, session {sid}; pids {})",
            killed.len(),
            if killed.len() == 1 { "" } else { "es" },
            pids(&killed)
        )),
        (_, false) => Some(format!(
            "cannot end the process{} {} left by an --on-threshold/--on-end program of a jitterlab (pid {writer}) that was killed (process group {pgid}, session {sid}): still there {} s after SIGKILL{}; end {} as its owner or root",
            if left.len() == 1 { "" } else { "es" },
            pids(&left),
            KILL_WAIT.as_secs(),
            match killed.is_empty() {
                true => String::new(),
                false => format!(" (killed: {})", pids(&killed)),
            },
            if left.len() == 1 { "it" } else { "them" },
        )),
    };
    (said, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(root: &Path, pid: Pid, state: &str, pgid: Pid, sid: Pid) {
        let dir = root.join(pid.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("stat"),
            format!("{pid} (a (b) c) {state} 1 {pgid} {sid} 0 -1 4194560 0 0\n"),
        )
        .unwrap();
    }

    /// A fixture /proc: only live members of the group in its session are listed; another
    /// session's group of that number (a reused number), a zombie, and this process's own
    /// group never are.
    #[test]
    fn members_are_the_group_in_its_session_and_alive() {
        let t = tempfile::tempdir().unwrap();
        stat(t.path(), 100, "S", 100, 50);
        stat(t.path(), 101, "R", 100, 50);
        stat(t.path(), 102, "S", 100, 51);
        stat(t.path(), 103, "Z", 100, 50);
        stat(t.path(), 104, "S", 104, 50);
        let mut found = members(t.path(), 100, 50, Some(7));
        found.sort();
        assert_eq!(found, [100, 101]);
        assert!(members(t.path(), 100, 50, Some(100)).is_empty());
        assert_eq!(ids(t.path(), "101"), Some((100, 50, false)));
    }

    /// Journals that name no group, of another boot, or not in the format kill nothing.
    #[test]
    fn a_journal_without_a_group_kills_nothing() {
        assert_eq!(undo(&Stale::fake(vec!["session 1".into()])), (None, true));
        // Session 0: its leader is outside this pid namespace (a container's, a CI runner's).
        assert_eq!(undo(&Stale::fake(vec!["session 0".into()])), (None, true));
        let mut other_boot = Stale::fake(vec!["session 1".into(), "group 2".into()]);
        other_boot.this_boot = false;
        assert_eq!(undo(&other_boot), (None, true));
        let (said, done) = undo(&Stale::fake(vec!["group 2".into()]));
        assert!(said.unwrap().contains("not an action group journal"));
        assert!(!done);
    }
}

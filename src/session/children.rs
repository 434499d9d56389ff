//! The one owner of the processes jitterlab starts for the user: the `exec:` programs of
//! `--on-threshold` and `--on-end` (session/actions.rs decides when; the loads have their own
//! owner, load/supervisor). Every such program is started here and nowhere else
//! (`tests/offline/spawners.rs` fails on a process started anywhere else), and this owner
//! promises (docs/user-guide.md, "Actions"):
//!
//! - **bounded concurrency**: at most `max` programs at once; a start beyond is refused
//!   ([`Start::Full`]) for the caller to count;
//! - **contained**: each program leads a process group of its own, with a parent-death signal
//!   (SIGKILL) tied to the session's thread, which lives until jitterlab exits, so a SIGKILL of
//!   jitterlab ends it too; when it exits, what it left running in its group is killed with it,
//!   so that it cannot hold on beyond the bound; and what is left of its group after a SIGKILL
//!   of jitterlab is killed at the next start, by the group's journal ([`groups`]);
//! - **a bounded wait**: [`Children::wait`] waits until a deadline or a SIGINT/SIGTERM
//!   ([`SignalWatch`](super::signals::SignalWatch)), then kills what is left (SIGKILL to each group);
//! - **every end recorded**: each program started ends in exactly one [`Outcome`] (exited,
//!   signalled, killed by us, or abandoned when even SIGKILL did not end it in time).
//!
//! A program's exit is seen without reaping it (WNOWAIT): until it is reaped its pid, which is
//! its group's id, cannot be handed to another process, so the group kill after it reaches its
//! group or nothing. What a program moved out of its group (setsid) is beyond this owner.

mod groups;

pub(super) use groups::{KIND, undo};

use crate::journal::{Journal, TrustedDir};
use crate::load::worker_kit::die_with_parent;
use crate::sys::process::{self, Pid};
use crate::sys::signal;
use std::os::fd::AsFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How often a wait looks at the programs and the signals: a SIGINT ends a wait within this.
const POLL: Duration = Duration::from_millis(10);
/// How long a killed program has to end before it is given up on (abandoned).
const KILL_WAIT: Duration = Duration::from_secs(2);

/// The programs started and not yet ended, each with the caller's tag.
pub(super) struct Children<T: Copy> {
    max: usize,
    programs: Vec<Program<T>>,
    /// Where the programs' groups are journaled (this user's trusted directory), or why there
    /// is none (a user other than root where /run/jitterlab is missing, a read-only /run):
    /// the programs then run unjournaled, which the first start says (journal.rs
    /// `say_unjournaled`).
    journals: Result<TrustedDir, String>,
}

struct Program<T> {
    tag: T,
    child: Child,
    pid: Pid,
    /// Sent SIGKILL by us: its end is `Killed`, unless it had exited already.
    killed: bool,
    /// Its group's journal, removed once it is reaped.
    journal: Option<Journal>,
}

/// What [`Children::start`] did.
#[derive(Debug)]
pub(super) enum Start {
    Started(u32),
    /// `max` programs run already: not started.
    Full,
    /// It could not be started (the error).
    Failed(String),
}

/// How a program ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum End {
    /// By itself, with this exit code.
    Exited(i32),
    /// By a signal that we did not send.
    Signalled(i32),
    /// By our SIGKILL (the wait was over or cut short).
    Killed,
    /// Still running [`KILL_WAIT`] after our SIGKILL: given up on, not reaped.
    Abandoned,
    /// Waiting for it failed (the error): it is no longer ours to wait for.
    Lost(String),
}

/// One program's end.
#[derive(Debug)]
pub(super) struct Outcome<T> {
    pub tag: T,
    pub pid: u32,
    pub end: End,
}

/// Refuses `exec:` actions (the reason, for exit 3) when this user's journal directory is
/// there and not its own (`untrusted`: journal.rs [`TrustedDir::untrusted_for_this_user`]):
/// another user who made `/run/jitterlab/uid-<uid>` first would otherwise switch off the
/// journals of this user's programs' process groups, so that what a program leaves running
/// outlives a SIGKILL of jitterlab. Checked before anything starts (session/start.rs
/// `preflight`); where no directory can be had at all (no `/run/jitterlab`) the programs run
/// unjournaled, said ([`groups`]).
pub(super) fn refuse_untrusted_journals(
    actions: &crate::plan::actions::ActionPlan,
    untrusted: impl FnOnce() -> Option<String>,
) -> Result<(), String> {
    let execs: Vec<String> = (actions.on_threshold.iter().map(|a| ("--on-threshold", a)))
        .chain(actions.on_end.iter().map(|a| ("--on-end", a)))
        .filter(|(_, a)| matches!(a, crate::plan::actions::Action::Exec { .. }))
        .map(|(option, a)| format!("{option} {}", a.describe()))
        .collect();
    if execs.is_empty() {
        return Ok(());
    }
    match untrusted() {
        None => Ok(()),
        Some(why) => Err(format!(
            "{}: an exec: program's process group is journaled, so that what it leaves running is killed after a SIGKILL of jitterlab, and this user's journal directory cannot be used: {why}",
            execs.join(", ")
        )),
    }
}

impl<T: Copy> Children<T> {
    /// An owner that runs at most `max` programs at once.
    pub(super) fn new(max: usize) -> Self {
        let journals = TrustedDir::for_this_user(true)
            .map_err(|e| e.unwrap_or_else(|| "this user has no trusted directory".to_string()));
        Children::journaled_in(max, journals)
    }

    /// [`Children::new`] with the journals in `journals` (or why there are none).
    fn journaled_in(max: usize, journals: Result<TrustedDir, String>) -> Self {
        Children {
            max,
            programs: Vec::new(),
            journals,
        }
    }

    /// Programs started and not yet ended (or not yet seen to end).
    pub(super) fn running(&self) -> usize {
        self.programs.len()
    }

    /// The pids of the programs still running (not reaped: an ended one is left for
    /// [`Children::reap`] to record), for a message.
    pub(super) fn running_pids(&self) -> Vec<Pid> {
        self.programs
            .iter()
            .map(|p| p.pid)
            .filter(|&pid| matches!(process::has_exited(pid), Ok(false)))
            .collect()
    }

    /// Starts `argv` (no shell; `argv[0]` looked up in $PATH) with `env` added to jitterlab's
    /// environment, stdin from /dev/null, stdout and stderr to jitterlab's stderr (its stdout is
    /// the run's summary), in a process group of its own that dies with jitterlab. Unless
    /// `may_take_realtime`, the program and what it starts can never take a real-time policy
    /// (`sys::caps::renounce_realtime`, as a load that did not ask for one): a program that
    /// made itself real-time on every CPU would starve jitterlab's own threads, which run at
    /// the lowest real-time priority, and hang the run (the hostile re-run's F4).
    pub(super) fn start(
        &mut self,
        argv: &[String],
        env: &[(&str, String)],
        tag: T,
        may_take_realtime: bool,
    ) -> Start {
        if self.programs.len() >= self.max {
            return Start::Full;
        }
        let stderr = match std::io::stderr().as_fd().try_clone_to_owned() {
            Ok(fd) => fd,
            Err(e) => return Start::Failed(format!("cannot start {}: {e}", argv[0])),
        };
        let mut command = Command::new(&argv[0]);
        command
            .args(&argv[1..])
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::from(stderr))
            .process_group(0);
        let parent = process::id();
        let journal = groups::journal_before_start(self.journals.as_ref());
        // SAFETY: prctl, getppid, setrlimit, capset and _exit between fork and exec:
        // async-signal-safe (raw system calls).
        unsafe {
            command.pre_exec(move || {
                die_with_parent(parent);
                if !may_take_realtime {
                    crate::sys::caps::renounce_realtime()?;
                }
                Ok(())
            });
        }
        match command.spawn() {
            Ok(child) => {
                let pid = child.id();
                self.programs.push(Program {
                    tag,
                    child,
                    pid: pid as Pid,
                    killed: false,
                    journal: groups::journal_started(journal, pid as Pid),
                });
                Start::Started(pid)
            }
            Err(e) => {
                if let Some(journal) = journal {
                    let _ = journal.remove();
                }
                Start::Failed(format!("cannot start {}: {e}", argv[0]))
            }
        }
    }

    /// The programs that have ended since the last call, each reaped after what it left in
    /// its process group was killed. Never blocks.
    pub(super) fn reap(&mut self) -> Vec<Outcome<T>> {
        let mut ended = Vec::new();
        let mut kept = Vec::new();
        for p in std::mem::take(&mut self.programs) {
            match process::has_exited(p.pid) {
                Ok(false) => kept.push(p),
                Ok(true) => ended.push(p.finish()),
                Err(e) => ended.push(p.lost(e)),
            }
        }
        self.programs = kept;
        ended
    }

    /// Waits until every program has ended, `deadline` has passed or `stop()` is true, and
    /// kills what is left then; every program's outcome, and whether `stop()` cut it short.
    pub(super) fn wait(
        &mut self,
        deadline: Instant,
        stop: &dyn Fn() -> bool,
    ) -> (Vec<Outcome<T>>, bool) {
        let mut outcomes = Vec::new();
        loop {
            outcomes.extend(self.reap());
            if self.programs.is_empty() {
                return (outcomes, false);
            }
            let stopped = stop();
            let now = Instant::now();
            if stopped || now >= deadline {
                outcomes.extend(self.kill_all());
                return (outcomes, stopped);
            }
            std::thread::sleep(POLL.min(deadline - now));
        }
    }

    /// SIGKILLs every program's process group (and the program itself, should it have left
    /// its group) and reaps them; a program still there after [`KILL_WAIT`] is abandoned.
    pub(super) fn kill_all(&mut self) -> Vec<Outcome<T>> {
        for p in &mut self.programs {
            p.kill();
        }
        let deadline = Instant::now() + KILL_WAIT;
        let mut outcomes = Vec::new();
        loop {
            outcomes.extend(self.reap());
            if self.programs.is_empty() || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        // Left unreaped: a zombie to be, or a process in an uninterruptible sleep.
        outcomes.extend(self.programs.drain(..).map(|p| Outcome {
            tag: p.tag,
            pid: p.pid as u32,
            end: End::Abandoned,
        }));
        outcomes
    }
}

impl<T> Program<T> {
    fn kill(&mut self) {
        self.killed = true;
        // Unreaped, its pid is still its group's id and no one else's (module header).
        let _ = process::kill(-self.pid, signal::SIGKILL);
        let _ = process::kill(self.pid, signal::SIGKILL);
    }

    /// It has ended (not reaped yet): its group killed, then reaped, and its journal removed.
    fn finish(mut self) -> Outcome<T> {
        let _ = process::kill(-self.pid, signal::SIGKILL);
        let end = match self.child.wait() {
            Ok(status) => {
                if let Some(journal) = self.journal.take() {
                    let _ = journal.remove();
                }
                self.end_of(status)
            }
            Err(e) => End::Lost(format!("cannot wait for pid {}: {e}", self.pid)),
        };
        Outcome {
            tag: self.tag,
            pid: self.pid as u32,
            end,
        }
    }

    fn lost(self, e: std::io::Error) -> Outcome<T> {
        Outcome {
            tag: self.tag,
            pid: self.pid as u32,
            end: End::Lost(format!("cannot wait for pid {}: {e}", self.pid)),
        }
    }

    fn end_of(&self, status: ExitStatus) -> End {
        match (status.code(), status.signal()) {
            (Some(code), _) => End::Exited(code),
            (None, Some(signal::SIGKILL)) if self.killed => End::Killed,
            (None, Some(s)) => End::Signalled(s),
            (None, None) => End::Lost(format!("pid {} ended: {status}", self.pid)),
        }
    }
}

impl<T: Copy> Drop for Children<T> {
    /// An owner dropped with programs running (an error, a panic): they are killed, not left.
    fn drop(&mut self) {
        if !self.programs.is_empty() {
            self.kill_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    /// Whether a process with exactly this command line exists.
    fn running(cmdline: &str) -> bool {
        let wanted = format!("{}\0", cmdline.replace(' ', "\0"));
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .any(|e| std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c == wanted.as_bytes()))
    }

    #[test]
    fn exits_are_recorded_and_the_bound_refuses_one_more() {
        let mut c = Children::new(2);
        assert!(matches!(
            c.start(&argv(&["sh", "-c", "exit 3"]), &[], 1, false),
            Start::Started(_)
        ));
        assert!(matches!(
            c.start(&argv(&["sleep", "3001.1"]), &[], 2, false),
            Start::Started(_)
        ));
        assert!(matches!(
            c.start(&argv(&["true"]), &[], 3, false),
            Start::Full
        ));
        assert!(matches!(
            c.start(&argv(&["no-such-program-jl"]), &[], 4, false),
            Start::Full
        ));
        let (outcomes, stopped) = c.wait(Instant::now() + Duration::from_millis(300), &|| false);
        assert!(!stopped);
        let ends: Vec<(i32, End)> = outcomes.into_iter().map(|o| (o.tag, o.end)).collect();
        assert_eq!(ends, [(1, End::Exited(3)), (2, End::Killed)]);
        assert_eq!(c.running(), 0);
        assert!(!running("sleep 3001.1"));
        match c.start(&argv(&["no-such-program-jl"]), &[], 5, false) {
            Start::Failed(e) => assert!(e.starts_with("cannot start no-such-program-jl"), "{e}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn what_a_program_leaves_in_its_group_dies_with_it_and_a_stop_cuts_the_wait() {
        let mut c = Children::new(4);
        // The shell exits at once, leaving its background sleep in its group.
        c.start(&argv(&["sh", "-c", "sleep 3001.2 & exit 0"]), &[], 1, false);
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut outcomes = Vec::new();
        while outcomes.is_empty() && Instant::now() < deadline {
            outcomes = c.reap();
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(outcomes[0].end, End::Exited(0));
        let gone = Instant::now() + Duration::from_secs(2);
        while running("sleep 3001.2") {
            assert!(
                Instant::now() < gone,
                "the background sleep outlived its program"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        c.start(
            &argv(&["sleep", "3001.3"]),
            &[("JITTERLAB_X", "1".into())],
            2,
            false,
        );
        let t = Instant::now();
        let (outcomes, stopped) = c.wait(t + Duration::from_secs(60), &|| true);
        assert!(stopped);
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
        assert_eq!(outcomes[0].end, End::Killed);
    }

    /// Issue 39, no silent lack of a journal: without a trusted directory (here a fixture's,
    /// made by another user: not trusted) the programs still run, and the first start says
    /// once, for stderr and run.json, that their groups are not journaled, what that means
    /// after a SIGKILL, and the fix. Before, they ran unjournaled without a word.
    #[test]
    fn programs_without_a_journal_say_so_once() {
        let base = tempfile::tempdir().unwrap();
        let uid = process::effective_user_id();
        let why = TrustedDir::open_in(base.path(), "trusted", uid + 1, true).unwrap_err();
        let why = why.expect("made by this user, so not trusted for another");
        // What `start` does before each program (not started here: a child of this test,
        // between its fork and its exec, would hold the journals of the tests beside it).
        let c: Children<i32> = Children::journaled_in(2, Err(why.clone()));
        for _ in 0..2 {
            assert!(groups::journal_before_start(c.journals.as_ref()).is_none());
        }
        let said: Vec<String> = crate::journal::unjournaled()
            .into_iter()
            .filter(|w| w.contains("--on-threshold/--on-end programs"))
            .collect();
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(
            said[0].starts_with(
                "no journal for the process groups of the --on-threshold/--on-end programs ("
            ),
            "{}",
            said[0]
        );
        assert!(said[0].contains(&why), "{}", said[0]);
        assert!(
            said[0].contains("after a SIGKILL of this jitterlab, what a program leaves running"),
            "{}",
            said[0]
        );
        assert!(said[0].contains("to keep journals"), "{}", said[0]);
    }

    /// A program started without `may_take_realtime` (a threshold program) cannot make
    /// itself real-time: `chrt` is refused; one started with it (an `--on-end` program) can,
    /// where this process may.
    #[test]
    fn a_threshold_program_cannot_take_a_realtime_policy() {
        let chrt = "chrt -f 10 true 2>/dev/null";
        let mut c = Children::new(2);
        c.start(&argv(&["sh", "-c", chrt]), &[], 1, false);
        c.start(&argv(&["sh", "-c", chrt]), &[], 2, true);
        let (mut outcomes, _) = c.wait(Instant::now() + Duration::from_secs(10), &|| false);
        outcomes.sort_by_key(|o| o.tag);
        assert_eq!(outcomes.len(), 2);
        assert_ne!(
            outcomes[0].end,
            End::Exited(0),
            "chrt succeeded: {outcomes:?}"
        );
        let may = std::thread::spawn(|| {
            crate::sys::sched::set_scheduler(0, crate::sys::sched::SCHED_FIFO, 1).is_ok()
        })
        .join()
        .unwrap();
        if may && std::path::Path::new("/usr/bin/chrt").exists() {
            assert_eq!(outcomes[1].end, End::Exited(0), "{outcomes:?}");
        }
    }

    /// As a SIGKILL of jitterlab leaves a program's group (its journal without a writer, the
    /// program's background job still running): the next start kills what is left of the
    /// group, and says so once; a program reaped normally leaves no journal.
    #[test]
    fn a_killed_owners_group_is_killed_by_its_journal() {
        let base = tempfile::tempdir().unwrap();
        let uid = process::effective_user_id();
        let journals = TrustedDir::open_in(base.path(), "trusted", uid, true).unwrap();
        let mut c = Children::journaled_in(
            2,
            Ok(TrustedDir::open_in(base.path(), "trusted", uid, false).unwrap()),
        );
        c.start(&argv(&["sh", "-c", "exit 0"]), &[], 1, false);
        c.start(
            &argv(&["sh", "-c", "sleep 3001.4 & sleep 3001.5"]),
            &[],
            2,
            false,
        );
        let deadline = Instant::now() + Duration::from_secs(5);
        while !(running("sleep 3001.4") && running("sleep 3001.5")) || c.running() > 1 {
            c.reap();
            assert!(Instant::now() < deadline, "the program did not start");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(journals.names().len(), 1, "{:?}", journals.names());
        // The owner is gone: its journal unlocked, its program not killed.
        let mut p = c.programs.pop().unwrap();
        drop(p.journal.take());
        // A child of a test beside this one, between its fork and its exec, holds a copy of
        // the journal's descriptor, and so its lock, for a moment (longer on a loaded machine).
        let mut stale = Vec::new();
        let unlocked = Instant::now() + Duration::from_secs(5);
        while stale.is_empty() && Instant::now() < unlocked {
            stale = crate::journal::scan(&journals, KIND).stale;
            std::thread::sleep(Duration::from_millis(5));
        }
        let mut said = Vec::new();
        for stale in stale {
            let (s, done) = undo(&stale);
            said.extend(s);
            assert!(done);
            stale.remove(&journals);
        }
        if said.is_empty() {
            p.kill();
        }
        let _ = p.child.wait();
        let gone = Instant::now() + Duration::from_secs(2);
        while running("sleep 3001.4") || running("sleep 3001.5") {
            assert!(Instant::now() < gone, "the group outlived the undo");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(said.len(), 1, "{said:?}");
        // The shell and its two sleeps (or two, where the shell execs its last command).
        assert!(said[0].starts_with("killed "), "{said:?}");
        assert!(
            said[0].contains(&format!("process group {}", p.pid)),
            "{said:?}"
        );
        assert!(journals.names().is_empty(), "{:?}", journals.names());
    }
}

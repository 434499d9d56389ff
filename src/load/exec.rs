//! `exec`: any outside program as a load (stress-ng, lmbench, a real application).
//!
//! Syntax: `exec:PROGRAM ARGS...`, or with options `exec[restart=true,workers=2,cpus=1]:PROGRAM
//! ARGS...`. Everything after the first `:` (after the `]` when there are options) is the
//! command line, split like a POSIX shell splits words (quotes and backslashes work) but never
//! run through a shell: no globbing, no variables, no pipes. Commas and `=` in the command are
//! therefore plain text. Options go in the brackets because the command may contain anything.
//!
//! A program killed by a signal (the OOM killer's SIGKILL, a crash, a user's kill) fails the load,
//! with `restart=true` too: it did not exit.
//!
//! The program runs in the load's process group with a parent-death signal. It may start
//! children of its own that know nothing of that signal; so the worker also forks a guardian
//! that kills the whole process group when the worker dies, even by SIGKILL.

use super::generator::Rates;
use super::spec::Params;
use super::supervisor::{kill_hint, signal_text};
use super::worker::{Ctx, die_with_parent, run_threads};
use crate::measure::clock::monotonic_ns;
use crate::results::run_record::Throughput;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;

pub const PARAMETERS: &[&str] = &["restart"];
pub const COUNTERS: &[&str] = &["starts", "early_exits"];
const STARTS: usize = 0;
const EARLY_EXITS: usize = 1;
/// At most one restart per worker in this time, so a program that fails at once does not
/// become a fork bomb.
const RESTART_SPACING_NS: u64 = 500_000_000;
/// How long a worker whose program was killed by a signal waits for its own stop flag before it
/// calls the program killed (see `run`).
const STOP_SETTLE: std::time::Duration = std::time::Duration::from_millis(100);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecSpec {
    pub argv: Vec<String>,
    /// Start the program again when it exits before the load's end.
    pub restart: bool,
}

/// Splits `exec[OPTIONS]:COMMAND` or `exec:COMMAND` into (OPTIONS, COMMAND).
pub fn split_spec(text: &str) -> Result<(&str, &str), String> {
    let usage =
        "write exec:PROGRAM ARGS... or exec[restart=true,workers=N,cpus=LIST]:PROGRAM ARGS...";
    let rest = text
        .strip_prefix("exec")
        .ok_or_else(|| format!("load '{text}': not an exec load; {usage}"))?;
    let (options, command) = if let Some(r) = rest.strip_prefix('[') {
        let close = r.find("]:").ok_or_else(|| {
            format!("load '{text}': the options bracket is not closed by ']:'; {usage}")
        })?;
        (&r[..close], &r[close + 2..])
    } else if let Some(c) = rest.strip_prefix(':') {
        ("", c)
    } else {
        return Err(format!("load '{text}': {usage}"));
    };
    if command.trim().is_empty() {
        return Err(format!("load '{text}': no command after the ':'; {usage}"));
    }
    Ok((options, command))
}

impl ExecSpec {
    pub fn parse(p: &mut Params, command: &str, text: &str) -> Result<Self, String> {
        let argv = shell_words::split(command)
            .map_err(|e| format!("load '{text}': cannot split the command '{command}' into words: {e}; check its quotes"))?;
        if argv.is_empty() {
            return Err(format!("load '{text}': the command is empty"));
        }
        let restart = p
            .boolean("restart", false)
            .map_err(|e| e.replace("load 'exec:", &format!("load '{text}' (options: ")))?;
        Ok(ExecSpec { argv, restart })
    }

    /// The program must exist and be executable (through $PATH when it has no `/`).
    pub fn check_system(&self, text: &str) -> Result<(), String> {
        let program = &self.argv[0];
        let found = if program.contains('/') {
            is_executable(Path::new(program))
        } else {
            std::env::var_os("PATH")
                .map(|p| std::env::split_paths(&p).any(|d| is_executable(&d.join(program))))
                .unwrap_or(false)
        };
        if !found {
            return Err(format!(
                "load '{text}': program '{program}' not found or not executable{}; install it or give its full path",
                if program.contains('/') {
                    ""
                } else {
                    " in $PATH"
                }
            ));
        }
        Ok(())
    }

    pub fn run(&self, ctx: &Ctx) -> Result<(), String> {
        run_threads(ctx.workers, "exec", |i| {
            let mut last_start = 0u64;
            loop {
                let since = monotonic_ns().saturating_sub(last_start);
                if last_start > 0 && since < RESTART_SPACING_NS {
                    std::thread::sleep(std::time::Duration::from_nanos(RESTART_SPACING_NS - since));
                }
                if ctx.stopped() {
                    return Ok(());
                }
                last_start = monotonic_ns();
                // SAFETY: getpid is a plain syscall.
                let parent = unsafe { libc::getpid() };
                let mut command = std::process::Command::new(&self.argv[0]);
                command.args(&self.argv[1..]);
                // SAFETY: die_with_parent is async-signal-safe.
                unsafe {
                    command.pre_exec(move || {
                        die_with_parent(parent);
                        Ok(())
                    });
                }
                let mut child = command.spawn().map_err(|e| {
                    format!("exec worker {i}: cannot start '{}': {e}", self.argv[0])
                })?;
                ctx.add(STARTS, 1);
                let status = child
                    .wait()
                    .map_err(|e| format!("exec worker {i}: wait failed: {e}"))?;
                if let Some(signal) = status.signal() {
                    // The group's SIGTERM at the load's end reaches the program and this
                    // worker's handler at once; the handler may run a moment later.
                    std::thread::sleep(STOP_SETTLE);
                    if ctx.stopped() {
                        return Ok(());
                    }
                    return Err(format!(
                        "'{}' was killed by {} after {:.3} s{}",
                        self.argv[0],
                        signal_text(signal),
                        (monotonic_ns() - last_start) as f64 / 1e9,
                        kill_hint(signal)
                    ));
                }
                if ctx.stopped() {
                    return Ok(());
                }
                ctx.add(EARLY_EXITS, 1);
                let ran = (monotonic_ns() - last_start) as f64 / 1e9;
                eprintln!(
                    "jitterlab exec worker {i}: '{}' exited ({status}) after {ran:.3} s, before the load's end{}",
                    self.argv[0],
                    if self.restart { "; restarting" } else { "" }
                );
                if !self.restart {
                    return Ok(());
                }
            }
        })
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// Forks a process that waits for the worker's death (SIGHUP as its parent-death signal) and
/// then SIGKILLs the whole process group, taking with it whatever the program started. At a
/// normal end it dies with the group's SIGTERM.
/// Called from the worker's main thread, which lives as long as the worker: a parent-death
/// signal follows the thread that forked.
pub fn start_guardian() -> std::io::Result<()> {
    // SAFETY: the child makes only async-signal-safe calls (sigprocmask, prctl, getppid,
    // sigwaitinfo, kill, _exit) on stack data.
    unsafe {
        let parent = libc::getpid();
        match libc::fork() {
            -1 => Err(std::io::Error::last_os_error()),
            0 => {
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigaddset(&mut set, libc::SIGHUP);
                libc::sigaddset(&mut set, libc::SIGTERM);
                libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
                libc::prctl(
                    libc::PR_SET_PDEATHSIG,
                    libc::SIGHUP as libc::c_ulong,
                    0,
                    0,
                    0,
                );
                if libc::getppid() != parent {
                    libc::kill(0, libc::SIGKILL);
                    libc::_exit(0);
                }
                loop {
                    let sig = libc::sigwaitinfo(&set, std::ptr::null_mut());
                    if sig == libc::SIGHUP {
                        // The worker died: no one else will stop the program's children.
                        libc::kill(0, libc::SIGKILL);
                        libc::_exit(0);
                    }
                    if sig == libc::SIGTERM {
                        libc::_exit(0);
                    }
                }
            }
            _ => Ok(()),
        }
    }
}

pub fn throughput(v: &dyn Fn(usize) -> u64, r: &Rates) -> Vec<Throughput> {
    vec![
        r.total("starts", v(STARTS), "starts"),
        r.total("early exits", v(EARLY_EXITS), "exits"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_options_and_command() {
        assert_eq!(
            split_spec("exec:stress-ng --cpu 1"),
            Ok(("", "stress-ng --cpu 1"))
        );
        assert_eq!(
            split_spec("exec[restart=true,workers=2]:sh -c 'a,b=c'"),
            Ok(("restart=true,workers=2", "sh -c 'a,b=c'"))
        );
        assert!(
            split_spec("exec[restart=true:x")
                .unwrap_err()
                .contains("not closed")
        );
        assert!(split_spec("exec:").unwrap_err().contains("no command"));
        assert!(split_spec("execute:x").is_err());
    }
}

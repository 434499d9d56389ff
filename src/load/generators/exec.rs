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

use crate::format::run_record::Throughput;
use crate::load::generator::{Generator, GeneratorInfo, Parameter, Syntax};
use crate::load::spec::Params;
use crate::load::worker_kit::{Counts, Ctx, die_with_parent, kill_hint, run_threads, signal_text};
use crate::measure::clock::monotonic_ns;
use crate::sys::process;
use crate::sys::signal::{self, SignalSet};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;

pub(crate) static INFO: GeneratorInfo = GeneratorInfo {
    name: "exec",
    about: "any outside program as a load (stress-ng, lmbench, a real application)",
    syntax: Syntax::Command {
        usage: "write exec:PROGRAM ARGS... or exec[restart=true,workers=N,cpus=LIST]:PROGRAM ARGS...",
    },
    parameters: &[Parameter {
        name: "restart",
        default: "false",
        help: "start the program again when it exits before the load's end",
    }],
    counters: &["starts", "early_exits", "failed_exits", "last_exit"],
    loop_unit: None,
    parse: |p| Ok(Box::new(ExecLoad::parse(p)?)),
};
const STARTS: usize = 0;
const EARLY_EXITS: usize = 1;
/// Early exits with a status other than 0.
const FAILED_EXITS: usize = 2;
/// How the latest program to end ended: 0 none yet, 1 + its exit status, or
/// [`KILLED_BY`] + the signal that killed it.
const LAST_EXIT: usize = 3;
const KILLED_BY: u64 = 1_000;
/// At most one restart per worker in this time, so a program that fails at once does not
/// become a fork bomb.
const RESTART_SPACING_NS: u64 = 500_000_000;
/// How long a worker whose program was killed by a signal waits for its own stop flag before it
/// calls the program killed (see `run`).
const STOP_SETTLE: std::time::Duration = std::time::Duration::from_millis(100);

#[derive(Debug)]
struct ExecLoad {
    argv: Vec<String>,
    /// Start the program again when it exits before the load's end.
    restart: bool,
}

impl ExecLoad {
    fn parse(p: &mut Params) -> Result<Self, String> {
        let text = p.spec_text().to_string();
        let command = p.command().unwrap_or_default().to_string();
        let argv = shell_words::split(&command)
            .map_err(|e| format!("load '{text}': cannot split the command '{command}' into words: {e}; check its quotes"))?;
        if argv.is_empty() {
            return Err(format!("load '{text}': the command is empty"));
        }
        let restart = p.boolean("restart", false)?;
        Ok(ExecLoad { argv, restart })
    }
}

impl Generator for ExecLoad {
    fn info(&self) -> &'static GeneratorInfo {
        &INFO
    }

    /// Its thread and the program (what the program starts is not known beforehand).
    fn tasks_per_worker(&self) -> u64 {
        2
    }

    /// The program must exist and be executable (through $PATH when it has no `/`).
    fn check_system(&self, text: &str, _workers: u64) -> Result<(), String> {
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

    /// The guardian (see [`start_guardian`]).
    fn prepare_worker(&self) -> Result<(), String> {
        start_guardian().map_err(|e| format!("cannot start the exec guardian: {e}"))
    }

    fn run(&self, ctx: &Ctx) -> Result<(), String> {
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
                let parent = process::id();
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
                    ctx.set(LAST_EXIT, KILLED_BY + signal as u64);
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
                let code = status.code().unwrap_or(0);
                ctx.add(FAILED_EXITS, u64::from(code != 0));
                ctx.set(LAST_EXIT, 1 + code.clamp(0, 255) as u64);
                let ran = (monotonic_ns() - last_start) as f64 / 1e9;
                early_exit_note(
                    &mut std::io::stderr(),
                    i,
                    &self.argv[0],
                    &status.to_string(),
                    ran,
                    self.restart,
                )?;
                if !self.restart {
                    return Ok(());
                }
            }
        })
    }

    fn throughput(&self, c: &Counts) -> Vec<Throughput> {
        vec![
            c.total("starts", c.get(STARTS), "starts"),
            c.total("early exits", c.get(EARLY_EXITS), "exits"),
            c.total("failed exits", c.get(FAILED_EXITS), "exits"),
        ]
    }

    /// The programs' exits, not the worker's: the worker exits 0 once every program it ran
    /// has ended, whatever they exited with (issue 39 L-i: "exit status 0" for two programs
    /// that exited 1).
    fn ended_text(&self, values: &[u64]) -> Option<String> {
        programs_ended(&self.argv[0], values)
    }
}

/// "'chrt': 2 exits, 2 with a non-zero status; the last exit status 1", from the counters;
/// None before any program exited.
fn programs_ended(program: &str, values: &[u64]) -> Option<String> {
    let get = |i: usize| values.get(i).copied().unwrap_or(0);
    let last = match get(LAST_EXIT) {
        0 => return None,
        n if n >= KILLED_BY => format!(
            "killed by {}",
            signal_text(i32::try_from(n - KILLED_BY).unwrap_or(0))
        ),
        n => format!("exit status {}", n - 1),
    };
    let exits = get(EARLY_EXITS);
    Some(format!(
        "'{program}': {exits} {}, {} with a non-zero status; the last {last}",
        if exits == 1 { "exit" } else { "exits" },
        get(FAILED_EXITS)
    ))
}

/// Notes in the load's log (the worker's stderr) that the program exited before the load's
/// end. The log is a file in the result directory: when it cannot be written (a full disk,
/// ENOSPC) the load fails naming why, as the program's own output is failing too.
fn early_exit_note(
    log: &mut dyn std::io::Write,
    i: usize,
    program: &str,
    status: &str,
    ran_s: f64,
    restart: bool,
) -> Result<(), String> {
    writeln!(
        log,
        "jitterlab exec worker {i}: '{program}' exited ({status}) after {ran_s:.3} s, before the load's end{}",
        if restart { "; restarting" } else { "" }
    )
    .map_err(|e| {
        format!(
            "exec worker {i}: '{program}' exited ({status}) after {ran_s:.3} s, and the load's log cannot be written: {e}{}",
            match e.raw_os_error() {
                Some(crate::sys::errno::ENOSPC) => " (the disk holding the result directory is full)",
                _ => "",
            }
        )
    })
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
fn start_guardian() -> std::io::Result<()> {
    let parent = process::id();
    // SAFETY: the child makes only async-signal-safe calls (sigprocmask, prctl, getppid,
    // sigwaitinfo, kill, _exit) on stack data.
    unsafe {
        process::fork_child(|| {
            let set = SignalSet::of(&[signal::SIGHUP, signal::SIGTERM]);
            set.block_in_this_process();
            process::set_parent_death_signal(signal::SIGHUP);
            if process::parent_id() != parent {
                let _ = process::kill(0, signal::SIGKILL);
                process::exit_now(0);
            }
            loop {
                let sig = set.wait_raw();
                if sig == signal::SIGHUP {
                    // The worker died: no one else will stop the program's children.
                    let _ = process::kill(0, signal::SIGKILL);
                    process::exit_now(0);
                }
                if sig == signal::SIGTERM {
                    process::exit_now(0);
                }
            }
        })
    }
    .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A printing program on a full disk: the worker's note to the log fails with ENOSPC, and
    /// the load fails naming the full disk (it used to panic in `eprintln!`, reported as "a
    /// exec worker panicked"). /dev/full answers every write with ENOSPC.
    #[test]
    fn a_log_on_a_full_disk_fails_the_load_naming_it() {
        let mut full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let e = early_exit_note(&mut full, 0, "yes", "exit status: 1", 0.5, true).unwrap_err();
        assert!(e.contains("No space left on device"), "{e}");
        assert!(
            e.contains("the disk holding the result directory is full"),
            "{e}"
        );
        let mut log = Vec::new();
        early_exit_note(&mut log, 0, "yes", "exit status: 1", 0.5, true).unwrap();
        assert!(
            String::from_utf8(log)
                .unwrap()
                .contains("'yes' exited (exit status: 1)")
        );
    }

    /// Issue 39 L-i: the load's end says how its programs ended, not the worker's status.
    #[test]
    fn the_programs_exits_are_said_not_the_workers() {
        // starts, early exits, failed exits, last exit (1 + status).
        assert_eq!(programs_ended("chrt", &[2, 0, 0, 0]), None);
        assert_eq!(
            programs_ended("chrt", &[2, 2, 2, 2]).unwrap(),
            "'chrt': 2 exits, 2 with a non-zero status; the last exit status 1"
        );
        assert_eq!(
            programs_ended("true", &[1, 1, 0, 1]).unwrap(),
            "'true': 1 exit, 0 with a non-zero status; the last exit status 0"
        );
        assert_eq!(
            programs_ended("x", &[3, 2, 1, KILLED_BY + 9]).unwrap(),
            "'x': 2 exits, 1 with a non-zero status; the last killed by signal 9 (SIGKILL)"
        );
    }
}

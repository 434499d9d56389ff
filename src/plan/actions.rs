//! `--on-threshold ACTION` and `--on-end ACTION`: what a run does when a spike starts (a run
//! of wakeups later than the deadline, counted once, as docs/tails.md counts spikes) and when
//! it ends. The spellings, their checks before the run (a program that is not there, a pid
//! that is not ours to signal: exit 2) and the rate limit; firing them is the session's
//! (session/actions.rs).

pub use super::targets::parent;
pub(crate) use super::targets::pid_target;
use crate::units::parse_duration_ns;

/// The most one action fires by default: once per second; spikes inside that gap are counted
/// as suppressed, and the count is recorded with the next firing and in run.json.
pub(crate) const DEFAULT_ACTION_GAP_NS: u64 = 1_000_000_000;
/// `--action-gap`'s range: 1 ms to 24 h (exit 2 outside). Below a millisecond a spike storm
/// would start programs and snapshots as fast as the drain runs; above a day an action fires
/// once in most runs, which a gap cannot make clearer.
pub(crate) const MIN_ACTION_GAP_NS: u64 = 1_000_000;
pub(crate) const MAX_ACTION_GAP_NS: u64 = 86_400_000_000_000;
/// `--action-wait` by default: at the end, jitterlab waits at most 10 s for the `exec:`
/// programs still running, and at most that for each `--on-end` program, then kills them.
pub(crate) const DEFAULT_ACTION_WAIT_NS: u64 = 10_000_000_000;
/// `--action-wait`'s largest value: one hour.
pub(crate) const MAX_ACTION_WAIT_NS: u64 = 3_600_000_000_000;
/// The most `exec:` programs of one run running at once; a spike that would start one more
/// is refused (counted as `refused`).
pub(crate) const MAX_PROGRAMS: usize = 4;
/// The most snapshots of one run waiting for their window at once; a spike that would start
/// one more is refused (counted as `refused`).
pub(crate) const MAX_PENDING_SNAPSHOTS: usize = 4;
/// The most bytes the snapshots of one run write in all, by default (`--snapshot-limit`):
/// a snapshot of the default window on 4 CPUs at 1 ms is about 300 KB, so some 800 of them;
/// without a bound a spike storm at the smallest gap filled about 20 MB/s (issue 39 L-j: 70 GB
/// an hour). A snapshot whose files would pass it is not written, and none after it.
pub(crate) const DEFAULT_SNAPSHOT_LIMIT_BYTES: u64 = 256 << 20;
/// `--snapshot-limit`'s range: 1 MiB to 1 TiB (exit 2 outside).
pub(crate) const MIN_SNAPSHOT_LIMIT_BYTES: u64 = 1 << 20;
pub(crate) const MAX_SNAPSHOT_LIMIT_BYTES: u64 = 1 << 40;
/// The most snapshots of one run, whatever their size: small windows at the smallest gap
/// would otherwise make millions of files an hour.
pub(crate) const MAX_SNAPSHOTS: u64 = 10_000;
/// A snapshot's window around its spike by default: 2 s before and 1 s after.
pub(crate) const DEFAULT_SNAPSHOT_BEFORE_NS: u64 = 2_000_000_000;
pub(crate) const DEFAULT_SNAPSHOT_AFTER_NS: u64 = 1_000_000_000;
/// The longest snapshot window on either side: the recorder keeps this much of every
/// thread's samples in memory.
pub(crate) const MAX_SNAPSHOT_SIDE_NS: u64 = 10_000_000_000;

/// How much longer than its window a snapshot's samples are kept: the time from the end of
/// the window to the drain that writes it (at most 100 ms between drains, more when the
/// recorder is starved).
pub(crate) const SNAPSHOT_SLACK_NS: u64 = 1_000_000_000;

/// Who `signal:` sends to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignalTarget {
    Pid(i32),
    /// jitterlab's parent process (a script that started it).
    Parent,
}

/// One action, as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Go on measuring (the default; naming it records each spike as an event).
    Continue,
    /// End the run, marked `stopped` with the spike as the reason (rtla's habit).
    Stop,
    /// Send a signal.
    Signal { signal: i32, target: SignalTarget },
    /// Run a program (no shell) with the event in its environment; not waited for.
    Exec { argv: Vec<String> },
    /// Keep every measured CPU's samples of a window around the spike in
    /// `snapshots/spike-NNNN.csv`.
    Snapshot { before_ns: u64, after_ns: u64 },
}

/// The actions of a run: none by default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ActionPlan {
    pub(crate) on_threshold: Vec<Action>,
    pub(crate) on_end: Vec<Action>,
    /// The least time between two firings of one threshold action, ns.
    pub(crate) gap_ns: u64,
    /// `--action-wait`: the most the end waits for the programs still running, and for each
    /// `--on-end` program, ns.
    pub(crate) wait_ns: u64,
    /// `--snapshot-limit`: the most bytes the run's snapshots write in all.
    pub(crate) snapshot_limit_bytes: u64,
}

impl ActionPlan {
    /// Whether anything happens on a spike (the recorder watches for spike starts then).
    pub(crate) fn watches_spikes(&self) -> bool {
        !self.on_threshold.is_empty()
    }

    /// How much of each thread's samples the recorder keeps for snapshots, ns (0: none): the
    /// widest window and [`SNAPSHOT_SLACK_NS`] more, as a snapshot is written at a drain after
    /// its window has been recorded, by when the recorder has moved on.
    pub(crate) fn history_ns(&self) -> u64 {
        let widest = self
            .on_threshold
            .iter()
            .map(|a| match a {
                Action::Snapshot {
                    before_ns,
                    after_ns,
                } => before_ns + after_ns,
                _ => 0,
            })
            .max()
            .unwrap_or(0);
        if widest == 0 {
            0
        } else {
            widest + SNAPSHOT_SLACK_NS
        }
    }
}

impl Action {
    /// Parses one `--on-threshold` (`on_end` false) or `--on-end` value.
    pub fn parse(text: &str, on_end: bool) -> Result<Action, String> {
        let (name, rest) = match text.split_once(':') {
            Some((n, r)) => (n, Some(r)),
            None => (text, None),
        };
        let action = match (name, rest) {
            ("continue", None) => Action::Continue,
            ("stop", None) => Action::Stop,
            ("signal", Some(r)) => parse_signal(r)?,
            ("exec", Some(r)) => {
                let argv = shell_words::split(r)
                    .map_err(|e| format!("cannot split '{r}' into words: {e}; check its quotes"))?;
                if argv.is_empty() {
                    return Err("exec: no program given".into());
                }
                Action::Exec { argv }
            }
            ("snapshot", r) => parse_snapshot(r.unwrap_or(""))?,
            _ => return Err(format!("unknown action '{text}'; {}", Self::SPELLINGS)),
        };
        if on_end && matches!(action, Action::Stop | Action::Snapshot { .. }) {
            return Err(format!(
                "'{name}' acts on a spike, not on the end of the run; --on-end takes continue, signal:... or exec:..."
            ));
        }
        Ok(action)
    }

    const SPELLINGS: &'static str = "actions: continue, stop, signal:SIG,pid=N, signal:SIG,parent, exec:PROGRAM ARGS, snapshot[:before=2s,after=1s]";

    /// How the action is written back (run.json, events.jsonl).
    pub(crate) fn describe(&self) -> String {
        match self {
            Action::Continue => "continue".into(),
            Action::Stop => "stop".into(),
            Action::Signal { signal, target } => format!(
                "signal:{},{}",
                crate::sys::signal::name(*signal)
                    .map(|n| n.trim_start_matches("SIG").to_string())
                    .unwrap_or_else(|| signal.to_string()),
                match target {
                    SignalTarget::Pid(p) => format!("pid={p}"),
                    SignalTarget::Parent => "parent".into(),
                }
            ),
            Action::Exec { argv } => format!("exec:{}", shell_words::join(argv)),
            Action::Snapshot {
                before_ns,
                after_ns,
            } => format!(
                "snapshot:before={},after={}",
                spell_ns(*before_ns),
                spell_ns(*after_ns)
            ),
        }
    }

    /// What the system must offer, checked before the run: the program exists and is
    /// executable; the process to signal exists and is ours to signal (kill with signal 0).
    pub fn check_system(&self) -> Result<(), String> {
        match self {
            Action::Exec { argv } => {
                let program = &argv[0];
                if find_program(program).is_none() {
                    return Err(format!(
                        "exec: program '{program}' not found or not executable{}; install it or give its full path",
                        if program.contains('/') {
                            ""
                        } else {
                            " in $PATH"
                        }
                    ));
                }
                Ok(())
            }
            Action::Signal {
                target: SignalTarget::Parent,
                ..
            } => {
                let parent = parent()?;
                match parent.send(0) {
                    Ok(_) => Ok(()),
                    Err(e) => Err(format!("signal: {e}")),
                }
            }
            Action::Signal {
                target: SignalTarget::Pid(pid),
                ..
            } => {
                let pid = *pid;
                if pid <= 1 {
                    return Err(format!(
                        "signal: will not signal pid {pid} (init or a process group); name one process"
                    ));
                }
                // A signal to itself would reach jitterlab's own handlers, or, with STOP,
                // stop the measurement for good (issue 39, L-d: only a SIGKILL ended it).
                if u32::try_from(pid) == Ok(std::process::id()) {
                    return Err(format!(
                        "signal: pid {pid} is this jitterlab itself; name another process (--on-threshold stop ends the run at a spike)"
                    ));
                }
                use crate::sys::process::SignalProbe;
                match crate::sys::process::probe_signal(pid) {
                    // Resolved now, before the run, once (issue 39 F5).
                    SignalProbe::Allowed => pid_target(pid).map(drop),
                    SignalProbe::Missing => Err(format!("signal: no process {pid}")),
                    SignalProbe::NotOurs => Err(format!(
                        "signal: process {pid} is not ours to signal (it belongs to another user); name a process this user owns"
                    )),
                    SignalProbe::Failed(e) => {
                        Err(format!("signal: cannot signal process {pid}: {e}"))
                    }
                }
            }
            _ => Ok(()),
        }
    }
}

/// `--action-gap DURATION`, in its range ([`MIN_ACTION_GAP_NS`]..=[`MAX_ACTION_GAP_NS`]).
pub(crate) fn parse_gap(text: &str) -> Result<u64, String> {
    let negative = crate::units::is_negative_duration(text);
    let ns = match negative {
        true => 0,
        false => parse_duration_ns(text).map_err(|e| format!("--action-gap: {e}"))?,
    };
    if negative || !(MIN_ACTION_GAP_NS..=MAX_ACTION_GAP_NS).contains(&ns) {
        return Err(format!(
            "--action-gap {text}: out of range: give 1ms to 24h (the default is 1s): at least 1ms, as below it a storm of spikes would start programs and snapshots as fast as they can be started; at most 24h, which already holds an action to one firing a day (longer gaps are refused: the largest wrapped the gap's clock and let every spike fire)"
        ));
    }
    Ok(ns)
}

/// `--action-wait DURATION`, 0 (kill at once) to [`MAX_ACTION_WAIT_NS`].
pub(crate) fn parse_wait(text: &str) -> Result<u64, String> {
    let negative = crate::units::is_negative_duration(text);
    let ns = match negative {
        true => 0,
        false => parse_duration_ns(text).map_err(|e| format!("--action-wait: {e}"))?,
    };
    if negative || ns > MAX_ACTION_WAIT_NS {
        return Err(format!(
            "--action-wait {text}: out of range: give 0s (kill the programs at once) to 1h; the default is 10s"
        ));
    }
    Ok(ns)
}

/// `--snapshot-limit SIZE`, in its range ([`MIN_SNAPSHOT_LIMIT_BYTES`] to
/// [`MAX_SNAPSHOT_LIMIT_BYTES`]).
pub(crate) fn parse_snapshot_limit(text: &str) -> Result<u64, String> {
    let bytes =
        crate::units::parse_size_bytes(text).map_err(|e| format!("--snapshot-limit: {e}"))?;
    if !(MIN_SNAPSHOT_LIMIT_BYTES..=MAX_SNAPSHOT_LIMIT_BYTES).contains(&bytes) {
        return Err(format!(
            "--snapshot-limit {text}: out of range: give 1MiB to 1TiB; the default is 256MiB"
        ));
    }
    Ok(bytes)
}

/// A duration as the options take it, exactly: in the largest unit that divides it.
fn spell_ns(ns: u64) -> String {
    [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")]
        .iter()
        .find(|(unit, _)| ns > 0 && ns.is_multiple_of(*unit))
        .map_or(format!("{ns}ns"), |(unit, name)| {
            format!("{}{name}", ns / unit)
        })
}

/// `SIG,pid=N` or `SIG,parent`; SIG as `USR1`, `SIGUSR1` or a number.
fn parse_signal(text: &str) -> Result<Action, String> {
    let (sig, target) = text.split_once(',').ok_or_else(|| {
        format!("signal:{text}: name the target: signal:SIG,pid=N or signal:SIG,parent")
    })?;
    let signal = signal_number(sig)
        .ok_or_else(|| format!("signal:{text}: unknown signal '{sig}' (e.g. USR1, TERM, 10)"))?;
    let target = match target {
        "parent" => SignalTarget::Parent,
        t => match t.strip_prefix("pid=").map(str::parse::<i32>) {
            Some(Ok(p)) => SignalTarget::Pid(p),
            _ => {
                return Err(format!(
                    "signal:{text}: the target is pid=N or parent, not '{t}'"
                ));
            }
        },
    };
    Ok(Action::Signal { signal, target })
}

fn signal_number(text: &str) -> Option<i32> {
    if let Ok(n) = text.parse::<i32>() {
        return (1..=crate::sys::signal::rt_max()).contains(&n).then_some(n);
    }
    let name = text.to_ascii_uppercase();
    let name = name.strip_prefix("SIG").unwrap_or(&name);
    (1..32).find(|&n| crate::sys::signal::name(n) == Some(&format!("SIG{name}")))
}

/// `before=D,after=D`, either or both.
fn parse_snapshot(text: &str) -> Result<Action, String> {
    let mut before_ns = DEFAULT_SNAPSHOT_BEFORE_NS;
    let mut after_ns = DEFAULT_SNAPSHOT_AFTER_NS;
    for part in text.split(',').filter(|p| !p.is_empty()) {
        let (key, value) = part
            .split_once('=')
            .ok_or_else(|| format!("snapshot:{text}: '{part}' is not key=duration"))?;
        let ns = parse_duration_ns(value).map_err(|e| format!("snapshot:{text}: {key}: {e}"))?;
        if ns > MAX_SNAPSHOT_SIDE_NS {
            return Err(format!(
                "snapshot:{text}: {key} is at most 10s (the recorder keeps that much of every thread's samples)"
            ));
        }
        match key {
            "before" => before_ns = ns,
            "after" => after_ns = ns,
            _ => {
                return Err(format!(
                    "snapshot:{text}: unknown key '{key}' (before, after)"
                ));
            }
        }
    }
    Ok(Action::Snapshot {
        before_ns,
        after_ns,
    })
}

/// The program's path: as given when it has a `/`, else the first executable of that name
/// in $PATH.
pub(crate) fn find_program(program: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let p = std::path::PathBuf::from(program);
        return executable(&p).then_some(p);
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(program))
        .find(|p| executable(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_parse_and_describe_back() {
        for (text, back) in [
            ("continue", "continue"),
            ("stop", "stop"),
            ("signal:USR1,parent", "signal:USR1,parent"),
            ("signal:sigterm,pid=1234", "signal:TERM,pid=1234"),
            ("signal:10,pid=7", "signal:USR1,pid=7"),
            (
                "exec:logger -t jl 'spike seen'",
                "exec:logger -t jl 'spike seen'",
            ),
            ("snapshot", "snapshot:before=2s,after=1s"),
            ("snapshot:after=500ms", "snapshot:before=2s,after=500ms"),
        ] {
            let a = Action::parse(text, false).unwrap();
            assert_eq!(a.describe(), back, "{text}");
            assert_eq!(Action::parse(&a.describe(), false).unwrap(), a);
        }
    }

    #[test]
    fn bad_spellings_say_what_is_wrong() {
        let err = |t: &str, end: bool| Action::parse(t, end).unwrap_err();
        assert!(err("reboot", false).contains("unknown action 'reboot'"));
        assert!(err("signal:USR1", false).contains("name the target"));
        assert!(err("signal:FOO,parent", false).contains("unknown signal 'FOO'"));
        assert!(err("signal:USR1,pid=x", false).contains("pid=N or parent"));
        assert!(err("exec:", false).contains("no program"));
        assert!(err("exec:'open", false).contains("quotes"));
        assert!(err("snapshot:before=11s", false).contains("at most 10s"));
        assert!(err("snapshot:during=1s", false).contains("unknown key"));
        assert!(err("stop", true).contains("not on the end"));
        assert!(err("snapshot", true).contains("not on the end"));
    }

    #[test]
    fn the_system_check_refuses_what_cannot_work() {
        let exec = |p: &str| Action::Exec {
            argv: vec![p.into()],
        };
        assert!(exec("sh").check_system().is_ok());
        assert!(exec("/bin/sh").check_system().is_ok());
        assert!(
            exec("no-such-program-jl")
                .check_system()
                .unwrap_err()
                .contains("not found")
        );
        let signal = |pid| Action::Signal {
            signal: crate::sys::signal::SIGUSR1,
            target: SignalTarget::Pid(pid),
        };
        assert!(
            signal(1)
                .check_system()
                .unwrap_err()
                .contains("will not signal")
        );
        assert!(
            signal(std::process::id() as i32)
                .check_system()
                .unwrap_err()
                .contains("this jitterlab itself")
        );

        // A thread of this process: named as such (issue 39 L-e), not a failed pidfd_open.
        let (tx, rx) = std::sync::mpsc::channel();
        let (done, wait) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            tx.send(crate::sys::signal::thread_id()).unwrap();
            let _ = wait.recv();
        });
        let tid = rx.recv().unwrap();
        let e = signal(tid).check_system().unwrap_err();
        assert!(
            e.contains(&format!("{tid} is a thread of this jitterlab")),
            "{e}"
        );
        drop(done);
        thread.join().unwrap();

        // pid_max is at most 2^22: this one cannot exist.
        assert!(
            signal(i32::MAX)
                .check_system()
                .unwrap_err()
                .contains("no process")
        );
    }

    #[test]
    fn the_snapshot_limit_is_bounded() {
        assert_eq!(parse_snapshot_limit("1MiB"), Ok(1 << 20));
        assert_eq!(parse_snapshot_limit("1TiB"), Ok(MAX_SNAPSHOT_LIMIT_BYTES));
        for bad in ["1023KiB", "2TiB", "0B"] {
            let e = parse_snapshot_limit(bad).unwrap_err();
            assert!(e.contains("out of range: give 1MiB to 1TiB"), "{bad}: {e}");
        }
        assert!(parse_snapshot_limit("100").unwrap_err().contains("no unit"));
    }

    #[test]
    fn the_gap_and_the_wait_are_bounded() {
        assert_eq!(parse_gap("1ms"), Ok(1_000_000));
        assert_eq!(parse_gap("24h"), Ok(MAX_ACTION_GAP_NS));
        for bad in [
            "1ns",
            "999us",
            "0s",
            "25h",
            "18446744073709551615ns",
            "-1ms",
            "-2h",
        ] {
            let e = parse_gap(bad).unwrap_err();
            assert!(e.contains("out of range: give 1ms to 24h"), "{bad}: {e}");
            // Both bounds explained, whichever was passed (issue 39 L7).
            assert!(
                e.contains("at least 1ms, as below it a storm"),
                "{bad}: {e}"
            );
            assert!(e.contains("at most 24h, which already holds"), "{bad}: {e}");
        }
        assert!(parse_gap("soon").unwrap_err().starts_with("--action-gap: "));
        assert_eq!(parse_wait("0s"), Ok(0));
        assert_eq!(parse_wait("1h"), Ok(MAX_ACTION_WAIT_NS));
        for bad in ["61m", "-1s"] {
            assert!(
                parse_wait(bad)
                    .unwrap_err()
                    .contains("out of range: give 0s (kill the programs at once) to 1h"),
                "{bad}"
            );
        }
        // Every other duration: negative is out of range, not "not a duration" (L6-a).
        let e = crate::units::parse_duration_ns("-5ms").unwrap_err();
        assert!(e.contains("is negative: out of range"), "{e}");
        assert!(crate::units::parse_duration_ns("--5ms").is_err());
    }

    #[test]
    fn history_covers_the_widest_snapshot() {
        let plan = ActionPlan {
            on_threshold: vec![
                Action::Stop,
                Action::parse("snapshot:before=3s,after=2s", false).unwrap(),
            ],
            ..ActionPlan::default()
        };
        assert!(plan.watches_spikes());
        assert_eq!(plan.history_ns(), 5_000_000_000 + SNAPSHOT_SLACK_NS);
        assert!(!ActionPlan::default().watches_spikes());
    }
}

//! Why the BPF back end cannot run here, in one line, with the fix that applies to this
//! process on this kernel.
//!
//! A verifier rejection is named by the verifier's last error line (the cause: the first
//! lines of its log are often harmless notes), the instruction and the C source line it
//! rejected; the whole log, hundreds of lines, goes to a file whose path the message gives.
//! Root or CAP_BPF/CAP_PERFMON is advised only to a process that lacks them, and a kernel
//! with BTF only where BTF is missing.

use aya::programs::ProgramError;
use std::collections::hash_map::DefaultHasher;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The BPF back end refused: what happened and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// What failed and why, one line.
    pub reason: String,
    /// What to do about it, one line.
    pub(crate) fix: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}; {}", self.reason, self.fix)
    }
}

const EPERM: i32 = 1;
const EACCES: i32 = 13;

// Capability numbers (linux/capability.h).
const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;
const CAP_BPF: u32 = 39;

/// What the kernel needs from a process to load tracing programs: CAP_SYS_ADMIN, or CAP_BPF
/// with CAP_PERFMON (5.8 and later). `cap_eff`: the CapEff mask of /proc/self/status.
fn privileged(cap_eff: u64) -> bool {
    let has = |c: u32| cap_eff & (1u64 << c) != 0;
    has(CAP_SYS_ADMIN) || (has(CAP_BPF) && has(CAP_PERFMON))
}

/// This process's effective capabilities (CapEff of /proc/self/status); None: unreadable.
fn effective_caps() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let hex = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
    u64::from_str_radix(hex.trim(), 16).ok()
}

/// The refusal for a kernel without BTF.
pub(super) fn no_btf(path: &str) -> Refusal {
    Refusal {
        reason: format!("this kernel has no BTF ({path} is missing)"),
        fix: "use a kernel built with CONFIG_DEBUG_INFO_BTF=y, or --trace-backend tracefs".into(),
    }
}

/// The refusal for a permission error (EPERM, or EACCES without a verifier log) from the
/// kernel while `doing` (one line). `cap_eff`: this process's effective capabilities.
fn permission(doing: &str, cap_eff: Option<u64>) -> Refusal {
    match cap_eff {
        Some(c) if privileged(c) => Refusal {
            reason: format!(
                "the kernel refused bpf() ({doing}) although this process has CAP_BPF and CAP_PERFMON or CAP_SYS_ADMIN"
            ),
            fix: "a policy forbids BPF here: see the kernel lockdown (/sys/kernel/security/lockdown), the security module (SELinux, AppArmor) or the container's seccomp profile; or use --trace-backend tracefs".into(),
        },
        _ => Refusal {
            reason: format!("the kernel refused bpf() ({doing})"),
            fix: "run as root, or give jitterlab CAP_BPF and CAP_PERFMON (setcap cap_bpf,cap_perfmon+ep); or use --trace-backend tracefs".into(),
        },
    }
}

/// A failure to load the object (its maps, its BTF relocations), from aya's error chain.
pub(super) fn object(message: &str) -> Refusal {
    let first = message.lines().next().unwrap_or("").trim();
    if first.contains("Operation not permitted") || first.contains("Permission denied") {
        return permission(first, effective_caps());
    }
    Refusal {
        reason: format!("cannot load the BPF object: {first}"),
        fix: "use --trace-backend tracefs".into(),
    }
}

/// Another failure before any program loads (the kernel's BTF unreadable).
pub(super) fn other(reason: String) -> Refusal {
    Refusal {
        reason,
        fix: "use --trace-backend tracefs".into(),
    }
}

/// The refusal for a load given up at its time bound (`bound`: `20.0 s of CPU time (23.4 s in
/// all)`): the verifier was interrupted and nothing stays loaded.
pub(super) fn timed_out(bound: &str) -> Refusal {
    Refusal {
        reason: format!(
            "the kernel had not finished verifying the BPF programs after {bound}: gave up, nothing loaded (this kernel's verifier is too slow for them)"
        ),
        fix: "use --trace-backend tracefs".into(),
    }
}

/// A program's load failed: the verifier's rejection (its log written to a file), or the
/// kernel's refusal of the system call.
pub(super) fn program(event: &str, error: &ProgramError, chain: &str) -> Refusal {
    let ProgramError::LoadError {
        io_error,
        verifier_log,
    } = error
    else {
        return Refusal {
            reason: format!("cannot load the program for {event}: {}", first_line(chain)),
            fix: "use --trace-backend tracefs".into(),
        };
    };
    let log = verifier_log.to_string();
    if let Some(rejection) = Rejection::from_log(&log) {
        let program = event.rsplit(':').next().unwrap_or(event);
        let written = write_log(program, &rejection, &log);
        return rejected(
            event,
            &rejection,
            written.as_deref().map_err(String::as_str),
            &kernel_release(),
        );
    }
    match io_error.raw_os_error() {
        Some(EPERM) | Some(EACCES) => permission(
            &format!("loading the program for {event}: {io_error}"),
            effective_caps(),
        ),
        _ => Refusal {
            reason: format!("the kernel refused the program for {event}: {io_error}"),
            fix: "use --trace-backend tracefs".into(),
        },
    }
}

/// The refusal for a verifier rejection of the program for `event`, its log written to
/// `log_file` (Err: why it could not be).
fn rejected(event: &str, r: &Rejection, log_file: Result<&Path, &str>, release: &str) -> Refusal {
    let mut reason = format!(
        "the kernel's BPF verifier rejected the program for {event}: {}",
        r.error
    );
    if let Some(insn) = &r.instruction {
        reason.push_str(&format!(" (instruction {insn}"));
        if let Some(src) = &r.source {
            reason.push_str(&format!(", source `{src}`"));
        }
        reason.push(')');
    }
    match log_file {
        Ok(path) => reason.push_str(&format!(
            "; its full log ({} lines) is in {}",
            r.lines,
            path.display()
        )),
        Err(e) => reason.push_str(&format!(
            "; its full log ({} lines) could not be written: {e}",
            r.lines
        )),
    }
    Refusal {
        reason,
        fix: format!(
            "this build's BPF programs do not pass the verifier of this kernel ({release}): use --trace-backend tracefs, and report the log"
        ),
    }
}

/// What a verifier log says made it reject a program.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Rejection {
    /// The last line of the log that is not a statistic: the verifier's verdict.
    pub error: String,
    /// The instruction it was checking then (`226: (85) call bpf_ringbuf_output#130`),
    /// without the register states.
    pub(crate) instruction: Option<String>,
    /// The C source line of that instruction (the log's `; ...` annotations, from the
    /// object's BTF line info).
    pub source: Option<String>,
    /// Lines in the whole log.
    pub lines: usize,
}

impl Rejection {
    /// The rejection a verifier log records; None when the log has no error line (empty, or
    /// only statistics).
    pub(super) fn from_log(log: &str) -> Option<Rejection> {
        let lines: Vec<&str> = log.lines().map(str::trim_end).collect();
        let at = lines.iter().rposition(|l| !is_statistic(l))?;
        let before = &lines[..at];
        let instruction = before
            .iter()
            .rev()
            .find(|l| is_instruction(l))
            .map(|l| l.split(" ; ").next().unwrap_or(l).trim().to_string());
        let source = before
            .iter()
            .rev()
            .find_map(|l| l.strip_prefix("; "))
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty());
        Some(Rejection {
            error: lines[at].trim().to_string(),
            instruction,
            source,
            lines: lines.len(),
        })
    }
}

/// Lines the verifier adds after its verdict (statistics, the end marker) and blank lines.
fn is_statistic(line: &str) -> bool {
    let l = line.trim();
    l.is_empty()
        || l.starts_with("verification time")
        || l.starts_with("stack depth")
        || (l.starts_with("processed ") && l.contains(" insns"))
        || l.starts_with("-- END PROG LOAD LOG --")
}

/// `226: (85) call ...`: an instruction as the verifier prints it.
fn is_instruction(line: &str) -> bool {
    let Some((n, rest)) = line.split_once(": (") else {
        return false;
    };
    !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && rest.contains(')')
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("").trim()
}

fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "release unknown".into())
}

/// The logs written by this process, by program and rejection, so that a second refusal of
/// the same program for the same reason (the probe, then the run's own load) names the same
/// file. Not the whole log: it holds the maps' addresses, new at every load.
static WRITTEN: Mutex<Vec<(String, u64, PathBuf)>> = Mutex::new(Vec::new());

/// Writes a verifier log for `program` into the temporary directory
/// (`jitterlab-bpf-verifier-<pid>-<program>[-n].log`), as a new file: never through a link,
/// never over an existing file.
fn write_log(program: &str, rejection: &Rejection, log: &str) -> Result<PathBuf, String> {
    let mut hasher = DefaultHasher::new();
    (&rejection.error, &rejection.instruction, &rejection.source).hash(&mut hasher);
    let hash = hasher.finish();
    let mut written = WRITTEN.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, _, path)) = written.iter().find(|(p, h, _)| p == program && *h == hash) {
        return Ok(path.clone());
    }
    let path = write_new_in(&std::env::temp_dir(), program, log)?;
    written.push((program.to_string(), hash, path.clone()));
    Ok(path)
}

/// Writes `log` into a new file of `dir` named for this process and `program`.
fn write_new_in(dir: &Path, program: &str, log: &str) -> Result<PathBuf, String> {
    let pid = std::process::id();
    let mut last = String::new();
    for n in 1..=100 {
        let name = match n {
            1 => format!("jitterlab-bpf-verifier-{pid}-{program}.log"),
            n => format!("jitterlab-bpf-verifier-{pid}-{program}-{n}.log"),
        };
        let path = dir.join(name);
        // create_new is O_CREAT|O_EXCL: it fails on any existing name, a link included.
        match std::fs::File::options()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut f) => {
                f.write_all(log.as_bytes())
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                return Ok(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                last = format!("{} exists", path.display());
            }
            Err(e) => return Err(format!("{}: {e}", path.display())),
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Debian's 6.1 RT kernel rejecting `sched_switch` (tests/data/trace/verifier/README.md).
    fn captured() -> String {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/trace/verifier/6.1-rt-flush-ringbuf-output.log"
        );
        std::fs::read_to_string(path).unwrap()
    }

    #[test]
    fn names_the_last_error_of_a_captured_log_not_its_first_line() {
        let log = captured();
        let r = Rejection::from_log(&log).unwrap();
        assert_eq!(
            r.error,
            "R3 unbounded memory access, use 'var &= const' or 'if (var < const)'"
        );
        assert_eq!(
            r.instruction.as_deref(),
            Some("226: (85) call bpf_ringbuf_output#130")
        );
        assert_eq!(
            r.source.as_deref(),
            Some("bpf_ringbuf_output(&events, data, len, BPF_RB_NO_WAKEUP))")
        );
        assert_eq!(r.lines, log.lines().count());
        assert!(log.starts_with("reg type unsupported for arg#0 function sched_switch#70"));
    }

    #[test]
    fn a_rejection_is_one_line_with_the_cause_and_where_the_log_is() {
        let r = Rejection::from_log(&captured()).unwrap();
        let path = Path::new("/tmp/jitterlab-bpf-verifier-7-sched_switch.log");
        let refusal = rejected("sched:sched_switch", &r, Ok(path), "6.1.0-56-rt-amd64");
        let text = refusal.to_string();
        assert!(!text.contains('\n'), "{text}");
        assert!(
            text.contains("sched:sched_switch: R3 unbounded memory access"),
            "{text}"
        );
        assert!(
            text.contains("instruction 226: (85) call bpf_ringbuf_output#130"),
            "{text}"
        );
        assert!(
            text.contains(&format!("{} lines) is in {}", r.lines, path.display())),
            "{text}"
        );
        assert!(text.contains("6.1.0-56-rt-amd64") && text.contains("--trace-backend tracefs"));
        // Not the harmless first line, and no advice about what this process already has.
        for wrong in ["reg type unsupported", "root", "CAP_BPF", "BTF"] {
            assert!(!text.contains(wrong), "'{wrong}' in {text}");
        }
        let unwritten = rejected("sched:sched_switch", &r, Err("/tmp: read-only"), "6.1");
        assert!(
            unwritten
                .reason
                .contains("could not be written: /tmp: read-only")
        );
    }

    #[test]
    fn a_log_of_statistics_only_is_no_rejection() {
        assert_eq!(Rejection::from_log(""), None);
        let stats = "verification time 12 usec\nstack depth 0\nprocessed 3 insns (limit 1000000) max_states_per_insn 0\n";
        assert_eq!(Rejection::from_log(stats), None);
    }

    #[test]
    fn advises_privileges_only_to_a_process_without_them() {
        let root = (1u64 << CAP_SYS_ADMIN) | (1 << CAP_BPF) | (1 << CAP_PERFMON);
        let bpf_only = (1u64 << CAP_BPF) | (1 << CAP_PERFMON);
        for caps in [root, bpf_only] {
            let r = permission("EPERM", Some(caps));
            assert!(
                !r.fix.contains("run as root") && !r.fix.contains("CAP_BPF"),
                "{r}"
            );
            assert!(r.reason.contains("although this process has"), "{r}");
        }
        for caps in [Some(0), Some(1u64 << CAP_BPF), None] {
            let r = permission("EPERM", caps);
            assert!(
                r.fix.contains("run as root") && r.fix.contains("CAP_BPF"),
                "{r}"
            );
        }
    }

    #[test]
    fn a_refusal_without_a_log_is_the_kernels_error() {
        let e = ProgramError::LoadError {
            io_error: std::io::Error::from_raw_os_error(EINVAL_FOR_TEST),
            verifier_log: aya_obj::VerifierLog::new(String::new()),
        };
        let r = program("sched:sched_switch", &e, &e.to_string());
        assert!(
            r.reason.starts_with(
                "the kernel refused the program for sched:sched_switch: Invalid argument"
            ),
            "{r}"
        );
        assert!(!r.to_string().contains("root"), "{r}");
    }
    const EINVAL_FOR_TEST: i32 = 22;

    #[test]
    fn the_same_rejection_again_names_the_same_file() {
        // A second load makes new maps: the log differs in their addresses only.
        let log = captured();
        let r = Rejection::from_log(&log).unwrap();
        let first = write_log("lab_test_program", &r, &log).unwrap();
        let reloaded = log.replace("0xff42eb6f41969c00", "0xff00000000000000");
        assert_ne!(reloaded, log);
        let second = write_log("lab_test_program", &r, &reloaded).unwrap();
        std::fs::remove_file(&first).unwrap();
        assert_eq!(first, second);
    }

    #[test]
    fn writes_the_log_to_a_new_file_never_over_another_or_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let first = write_new_in(dir.path(), "p", "log one").unwrap();
        assert_eq!(std::fs::read_to_string(&first).unwrap(), "log one");
        // The next name for the same program, the first file untouched.
        let second = write_new_in(dir.path(), "p", "log two").unwrap();
        assert_ne!(first, second);
        assert_eq!(std::fs::read_to_string(&first).unwrap(), "log one");
        // A link planted at the name is not followed.
        let target = dir.path().join("target");
        std::fs::write(&target, "precious").unwrap();
        let pid = std::process::id();
        std::os::unix::fs::symlink(
            &target,
            dir.path()
                .join(format!("jitterlab-bpf-verifier-{pid}-q.log")),
        )
        .unwrap();
        let third = write_new_in(dir.path(), "q", "log three").unwrap();
        assert!(third.ends_with(format!("jitterlab-bpf-verifier-{pid}-q-2.log")));
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
    }
}

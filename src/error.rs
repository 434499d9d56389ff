//! Errors that carry their exit code.
//!
//! Every failure that reaches `main` is a [`Failure`]: a message that says what failed, why,
//! and what to do, plus the [`ExitCode`] of docs/architecture.md that a script or CI job can act on.

use std::borrow::Cow;
use std::fmt;
use std::io;

/// The exit codes of docs/architecture.md ("Exit codes").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// 1: a budget or regression check failed.
    CheckFailed = 1,
    /// 2: bad usage or input.
    Usage = 2,
    /// 3: the system cannot do what was asked (permission, missing kernel feature).
    System = 3,
    /// 4: failure during the run.
    Run = 4,
}

/// 130: a second SIGINT or SIGTERM while stopping ends the process at once (`_exit`), or once
/// the programs it ended are recorded, with the status a shell gives a program ended by SIGINT
/// (128 + 2); and a command that changes the system ends so when a stop request came before any
/// run took it up (a dry run: nothing is printed as its result; `commands::dispatch`).
/// docs/user-guide.md.
pub(crate) const STOPPED_AT_ONCE: i32 = 130;

impl ExitCode {
    /// The code a process exits with.
    pub fn status(self) -> i32 {
        self as i32
    }

    /// The exit code `status` stands for, if any (0 and other numbers stand for none): a load
    /// worker's failure, read back from its report pipe.
    pub(crate) fn of_status(status: i32) -> Option<ExitCode> {
        [
            ExitCode::CheckFailed,
            ExitCode::Usage,
            ExitCode::System,
            ExitCode::Run,
        ]
        .into_iter()
        .find(|c| c.status() == status)
    }

    /// The exit code of an I/O error on something the user asked for (a path, a device, a
    /// kernel interface): a permission the system refuses (EACCES, EPERM) is exit 3, whatever
    /// the caller's default, because the fix is a privilege, not other input; any other error
    /// (no such file, exists, a read-only file system, too long) keeps `otherwise`. The one
    /// place that tells "not allowed" from "wrong input" by the error's kind.
    pub(crate) fn of_io(e: &io::Error, otherwise: ExitCode) -> ExitCode {
        match e.kind() {
            io::ErrorKind::PermissionDenied => ExitCode::System,
            _ => otherwise,
        }
    }
}

/// An error with its exit code and a complete, user-facing message.
#[derive(Debug)]
pub struct Failure {
    pub code: ExitCode,
    pub message: String,
}

impl Failure {
    pub fn new(code: ExitCode, message: impl Into<String>) -> Self {
        Failure {
            code,
            message: message.into(),
        }
    }
    pub fn usage(message: impl Into<String>) -> Self {
        Failure {
            code: ExitCode::Usage,
            message: message.into(),
        }
    }
    pub fn system(message: impl Into<String>) -> Self {
        Failure {
            code: ExitCode::System,
            message: message.into(),
        }
    }
    pub fn run(message: impl Into<String>) -> Self {
        Failure {
            code: ExitCode::Run,
            message: message.into(),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

/// Makes text from outside (file contents, file names, option values) safe to print on a
/// terminal: control characters (ESC, OSC sequences, NUL, CR, ...) and the bidirectional
/// overrides that reorder text are written as escapes (`\u{1b}`, `\r`, `\u{0}`), so that a crafted
/// input can neither drive the terminal nor disguise the message. Newlines are kept: messages
/// may have several lines. `main` passes every message through this; code that prints input
/// text itself (not through a [`Failure`]) calls it where the text is quoted.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    let unsafe_char = |c: char| {
        (c.is_control() && c != '\n')
            || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    if !text.contains(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if unsafe_char(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// How a file name is shown in every message and output: [`escape_controls`], a newline
/// escaped too (a name holding one would otherwise read as two lines, or forge a line of the
/// message), bytes that are not UTF-8 replaced. The one way jitterlab displays a path it was
/// given or found; messages that [`escape_controls`] later passes through are then unchanged.
pub(crate) fn display_path(path: &std::path::Path) -> String {
    let text = path.to_string_lossy();
    escape_controls(&text).replace('\n', "\\n")
}

/// Result type of everything that can end the program with an exit code.
pub type Result<T> = std::result::Result<T, Failure>;

/// Adds context to I/O errors in one line: `fs::write(p, s).or_run(|| format!("writing {p}"))`.
pub(crate) trait OrFailure<T> {
    /// Maps the error to a run-time failure (exit 4) prefixed with `what`.
    fn or_run(self, what: impl FnOnce() -> String) -> Result<T>;
    /// Maps the error to bad input (exit 2) prefixed with `what`.
    fn or_usage(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T, E: fmt::Display> OrFailure<T> for std::result::Result<T, E> {
    fn or_run(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| Failure::run(format!("{}: {e}", what())))
    }
    fn or_usage(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| Failure::usage(format!("{}: {e}", what())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The codes of docs/architecture.md, and back.
    #[test]
    fn each_exit_code_is_its_documented_status_and_back() {
        let table = [
            (ExitCode::CheckFailed, 1),
            (ExitCode::Usage, 2),
            (ExitCode::System, 3),
            (ExitCode::Run, 4),
        ];
        for (code, status) in table {
            assert_eq!(code.status(), status);
            assert_eq!(ExitCode::of_status(status), Some(code));
        }
        assert_eq!(ExitCode::of_status(0), None);
        assert_eq!(ExitCode::of_status(STOPPED_AT_ONCE), None);
    }

    /// Ground truth: the errno values the kernel returns for "not allowed" are exit 3 whatever
    /// the caller's default; "no such file", "exists", "read-only" and "too long" keep it.
    #[test]
    fn permission_errors_are_system_errors_and_others_keep_the_default() {
        use crate::sys::errno;
        let os = io::Error::from_raw_os_error;
        for errno in [errno::EACCES, errno::EPERM] {
            assert_eq!(
                ExitCode::of_io(&os(errno), ExitCode::Usage),
                ExitCode::System,
                "{}",
                os(errno)
            );
        }
        for errno in [
            errno::ENOENT,
            errno::EEXIST,
            errno::EROFS,
            errno::ENAMETOOLONG,
            errno::ENOSPC,
        ] {
            assert_eq!(
                ExitCode::of_io(&os(errno), ExitCode::Usage),
                ExitCode::Usage,
                "{}",
                os(errno)
            );
            assert_eq!(ExitCode::of_io(&os(errno), ExitCode::Run), ExitCode::Run);
        }
    }

    #[test]
    fn control_characters_are_escaped_and_lines_kept() {
        assert_eq!(
            escape_controls("a\u{1b}]0;title\u{7}b\0c\rd\te\nf"),
            "a\\u{1b}]0;title\\u{7}b\\u{0}c\\rd\\te\nf"
        );
        assert_eq!(escape_controls("x\u{202e}y\u{9b}z"), "x\\u{202e}y\\u{9b}z");
        assert_eq!(
            display_path(std::path::Path::new("a\nb\u{7}/c")),
            "a\\nb\\u{7}/c"
        );
        assert!(matches!(
            escape_controls("plain 'text'\n"),
            Cow::Borrowed(_)
        ));
    }
}

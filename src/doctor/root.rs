//! Reading /proc and /sys below a root directory.
//!
//! On the live machine the root is `/`; tests point it at a fixture tree. Paths in messages
//! are shown as the kernel's (`/proc/cmdline`), not the fixture's, because that is what a
//! user would look at.

use std::fmt;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// `root` joined with a path relative to `/` (`"proc/cmdline"`).
pub(crate) fn path(root: &Path, rel: &str) -> PathBuf {
    root.join(rel.trim_start_matches('/'))
}

/// Why a file or directory under the root could not be read. Checks decide on it: a file
/// that does not exist often means a feature is off (no `cpu.rt_runtime_us` without RT group
/// scheduling), while one that exists but cannot be read or parsed means the answer is unknown.
/// The message names the kernel's path.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// Opening, reading or listing failed.
    Io {
        /// `"read"` or `"list"`.
        action: &'static str,
        /// The path relative to `/`, without the leading slash.
        rel: String,
        error: io::Error,
    },
    /// The file does not hold the integer it should.
    NotANumber { rel: String, text: String },
}

impl ReadError {
    /// The file or directory does not exist (ENOENT).
    pub(crate) fn is_missing(&self) -> bool {
        matches!(self, ReadError::Io { error, .. } if error.kind() == io::ErrorKind::NotFound)
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Io { action, rel, error } => {
                write!(f, "cannot {action} /{rel}: {}", describe(error))
            }
            ReadError::NotANumber { rel, text } => write!(f, "/{rel} holds '{text}', not a number"),
        }
    }
}

impl std::error::Error for ReadError {}

/// Checks that only show the reason keep their `Result<_, String>` and use `?`.
impl From<ReadError> for String {
    fn from(e: ReadError) -> String {
        e.to_string()
    }
}

/// The file's contents, or why the file could not be read.
pub(crate) fn read(root: &Path, rel: &str) -> Result<String, ReadError> {
    let rel = rel.trim_start_matches('/');
    // Read through a handle rather than fs::read_to_string so that /proc files whose size is
    // reported as 0 are read fully, and so one error message covers open and read.
    let mut text = String::new();
    fs::File::open(path(root, rel))
        .and_then(|mut f| f.read_to_string(&mut text))
        .map_err(|error| ReadError::Io {
            action: "read",
            rel: rel.to_string(),
            error,
        })?;
    Ok(text)
}

/// The file's contents with surrounding whitespace removed.
pub(crate) fn read_trim(root: &Path, rel: &str) -> Result<String, ReadError> {
    read(root, rel).map(|s| s.trim().to_string())
}

/// The file's contents parsed as an integer.
pub(crate) fn read_i64(root: &Path, rel: &str) -> Result<i64, ReadError> {
    let text = read_trim(root, rel)?;
    text.parse().map_err(|_| ReadError::NotANumber {
        rel: rel.trim_start_matches('/').to_string(),
        text,
    })
}

/// Whether the path exists (without following it further).
pub(crate) fn exists(root: &Path, rel: &str) -> bool {
    path(root, rel).exists()
}

/// The names in a directory, sorted, or why it could not be listed.
pub(crate) fn list(root: &Path, rel: &str) -> Result<Vec<String>, ReadError> {
    let rel = rel.trim_start_matches('/');
    let entries = fs::read_dir(path(root, rel)).map_err(|error| ReadError::Io {
        action: "list",
        rel: rel.to_string(),
        error,
    })?;
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    Ok(names)
}

/// Directory entries that are numbers (CPUs, IRQs, PIDs), sorted numerically.
pub(crate) fn numbered(names: &[String], prefix: &str) -> Vec<usize> {
    let mut out: Vec<usize> = names
        .iter()
        .filter_map(|n| n.strip_prefix(prefix)?.parse().ok())
        .collect();
    out.sort_unstable();
    out
}

/// An I/O error in words, without Rust's "(os error 2)" suffix.
fn describe(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => "no such file".into(),
        io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => {
            let s = e.to_string();
            s.split(" (os error").next().unwrap_or(&s).to_string()
        }
    }
}

//! Reading /proc and /sys below a root directory.
//!
//! On the live machine the root is `/`; tests point it at a fixture tree. Paths in messages
//! are shown as the kernel's (`/proc/cmdline`), not the fixture's, because that is what a
//! user would look at.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

/// `root` joined with a path relative to `/` (`"proc/cmdline"`).
pub fn path(root: &Path, rel: &str) -> PathBuf {
    root.join(rel.trim_start_matches('/'))
}

/// The file's contents, or a message saying which file could not be read and why.
pub fn read(root: &Path, rel: &str) -> Result<String, String> {
    let rel = rel.trim_start_matches('/');
    // Read through a handle rather than fs::read_to_string so that /proc files whose size is
    // reported as 0 are read fully, and so one error message covers open and read.
    let mut text = String::new();
    fs::File::open(path(root, rel))
        .and_then(|mut f| f.read_to_string(&mut text))
        .map_err(|e| format!("cannot read /{rel}: {}", describe(&e)))?;
    Ok(text)
}

/// The file's contents with surrounding whitespace removed.
pub fn read_trim(root: &Path, rel: &str) -> Result<String, String> {
    read(root, rel).map(|s| s.trim().to_string())
}

/// The file's contents parsed as an integer.
pub fn read_i64(root: &Path, rel: &str) -> Result<i64, String> {
    let text = read_trim(root, rel)?;
    text.parse().map_err(|_| {
        format!(
            "/{} holds '{text}', not a number",
            rel.trim_start_matches('/')
        )
    })
}

/// Whether the path exists (without following it further).
pub fn exists(root: &Path, rel: &str) -> bool {
    path(root, rel).exists()
}

/// The names in a directory, sorted, or why it could not be listed.
pub fn list(root: &Path, rel: &str) -> Result<Vec<String>, String> {
    let rel = rel.trim_start_matches('/');
    let entries = fs::read_dir(path(root, rel))
        .map_err(|e| format!("cannot list /{rel}: {}", describe(&e)))?;
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    Ok(names)
}

/// Directory entries that are numbers (CPUs, IRQs, PIDs), sorted numerically.
pub fn numbered(names: &[String], prefix: &str) -> Vec<usize> {
    let mut out: Vec<usize> = names
        .iter()
        .filter_map(|n| n.strip_prefix(prefix)?.parse().ok())
        .collect();
    out.sort_unstable();
    out
}

/// An I/O error in words, without Rust's "(os error 2)" suffix.
fn describe(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => {
            let s = e.to_string();
            s.split(" (os error").next().unwrap_or(&s).to_string()
        }
    }
}

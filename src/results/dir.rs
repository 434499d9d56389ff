//! Where a run's files live, and the checks that make a bad --out fail before anything starts.

use super::run_record::{FILE_NAME as RUN_JSON, RunRecord};
use std::ffi::CString;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// A result directory on disk.
#[derive(Debug, Clone)]
pub struct ResultDir {
    pub path: PathBuf,
}

/// The default result directory: `./jitterlab-results/<UTC time>-<host>`, e.g.
/// `jitterlab-results/20261122T134501Z-vm`.
pub fn default_path(start: SystemTime, host: &str) -> PathBuf {
    let stamp = humantime::format_rfc3339_seconds(start)
        .to_string()
        .replace(['-', ':'], "");
    let host: String = host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    PathBuf::from("jitterlab-results").join(format!("{stamp}-{host}"))
}

/// Checks, without creating anything, that `path` can become a new result directory: it does
/// not exist yet (or is an empty directory), and its nearest existing ancestor is a writable
/// directory. Results are never overwritten.
pub fn check_usable(path: &Path) -> Result<(), String> {
    let fix = "pass --out with a new directory in a writable place";
    if let Ok(meta) = fs::metadata(path) {
        if !meta.is_dir() {
            return Err(format!(
                "--out {}: exists and is not a directory; {fix}",
                path.display()
            ));
        }
        let empty = fs::read_dir(path)
            .map(|mut d| d.next().is_none())
            .unwrap_or(false);
        if !empty {
            return Err(format!(
                "--out {}: already exists and is not empty; jitterlab never overwrites results; {fix}",
                path.display()
            ));
        }
        return writable(path)
            .map_err(|e| format!("--out {}: not writable ({e}); {fix}", path.display()));
    }
    let mut ancestor = path.parent();
    while let Some(dir) = ancestor {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        match fs::metadata(dir) {
            Ok(meta) if meta.is_dir() => {
                return writable(dir).map_err(|e| {
                    format!(
                        "--out {}: cannot create it in {} ({e}); {fix}",
                        path.display(),
                        dir.display()
                    )
                });
            }
            Ok(_) => {
                return Err(format!(
                    "--out {}: {} is not a directory; {fix}",
                    path.display(),
                    dir.display()
                ));
            }
            Err(_) => ancestor = dir.parent(),
        }
    }
    Err(format!(
        "--out {}: no existing parent directory; {fix}",
        path.display()
    ))
}

/// access(W_OK|X_OK): whether this process may create entries in `dir`.
fn writable(dir: &Path) -> io::Result<()> {
    let c = CString::new(dir.as_os_str().as_bytes()).map_err(io::Error::other)?;
    // SAFETY: valid C string.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

impl ResultDir {
    /// Creates the directory (and its parents).
    pub fn create(path: &Path) -> io::Result<Self> {
        fs::create_dir_all(path)?;
        Ok(ResultDir {
            path: path.to_path_buf(),
        })
    }

    /// An existing result directory, checked to hold a run.json.
    pub fn open(path: &Path) -> Result<Self, String> {
        if !path.join(RUN_JSON).is_file() {
            return Err(format!(
                "{} is not a jitterlab result directory (no {RUN_JSON}); pass the directory a run wrote, e.g. jitterlab-results/<time>-<host>",
                path.display()
            ));
        }
        Ok(ResultDir {
            path: path.to_path_buf(),
        })
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Writes run.json atomically (a temporary file renamed over it), so that a crash leaves
    /// either the previous version or the new one, never half a file.
    pub fn write_run_record(&self, record: &RunRecord) -> io::Result<()> {
        let tmp = self.path.join(format!(".{RUN_JSON}.tmp"));
        let mut text = serde_json::to_vec_pretty(record).map_err(io::Error::other)?;
        text.push(b'\n');
        fs::write(&tmp, text)?;
        fs::rename(&tmp, self.path.join(RUN_JSON))
    }

    pub fn read_run_record(&self) -> Result<RunRecord, String> {
        let path = self.path.join(RUN_JSON);
        let text = crate::input::read_result_file(&path, crate::input::RESULT_RECORD_MAX_BYTES)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        serde_json::from_str(&text)
            .map_err(|e| format!("{} is not a valid format-1 run.json: {e}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn default_path_is_utc_time_and_host() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000);
        assert_eq!(
            default_path(t, "my host"),
            PathBuf::from("jitterlab-results/20261118T110640Z-my_host")
        );
    }

    #[test]
    fn refuses_non_empty_and_file_targets() {
        let dir = tempfile::tempdir().unwrap();
        assert!(check_usable(&dir.path().join("new/deeper")).is_ok());
        assert!(
            check_usable(dir.path()).is_ok(),
            "an empty directory is fine"
        );
        fs::write(dir.path().join("f"), "x").unwrap();
        assert!(check_usable(dir.path()).unwrap_err().contains("not empty"));
        assert!(
            check_usable(&dir.path().join("f"))
                .unwrap_err()
                .contains("not a directory")
        );
        assert!(
            check_usable(&dir.path().join("f/sub"))
                .unwrap_err()
                .contains("not a directory")
        );
    }
}

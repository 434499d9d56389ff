//! What a killed jitterlab leaves behind: entries named `<prefix><pid>` (a cpuset, an
//! idle-state journal) whose process no longer exists, for the next start to undo.

use std::path::{Path, PathBuf};

/// The entries of `dir` named `prefix` and a pid that is not this process's and has no
/// `proc_root/<pid>`: (name, path). A directory that cannot be read has none.
pub(crate) fn left_by_gone_runs(
    dir: &Path,
    prefix: &str,
    proc_root: &Path,
) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let pid: u32 = name.strip_prefix(prefix)?.parse().ok()?;
            let gone = pid != std::process::id() && !proc_root.join(pid.to_string()).exists();
            gone.then(|| (name, entry.path()))
        })
        .collect()
}

//! The cgroup v2 partition of a killed run, undone at the next start from its journal
//! (session/stale.rs): the cgroup when it is the very one the run made and empty, then the
//! parent's `+cpuset` the run enabled.

use super::super::super::journal::Stale;
use super::super::PREFIX;
use super::{Cgroupfs, Kernel, Place, disable_cpuset, remove_partition};
use std::io;
use std::path::{Component, Path, PathBuf};

/// Undoes the journal of a killed run (session/stale.rs) on this system's cgroup2 mount.
pub(crate) fn undo_on_system(stale: &Stale) -> (Option<String>, bool) {
    let mount = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| e.to_string())
        .and_then(|m| Place::from(&m, "0::/\n"));
    match mount {
        Ok(place) => undo(stale, &Kernel, &place.mount),
        Err(why) => (
            Some(format!(
                "cannot undo {}, the cgroup of a killed jitterlab (pid {}): {why}; left for the next start",
                stale.path.display(),
                stale.pid
            )),
            false,
        ),
    }
}

/// Undoes the journal of a killed run under the cgroup2 mount `mount`: removes the cgroup it
/// names when it is the very directory the run made (its inode), during this boot, and has no
/// thread in it; then takes back the parent's `+cpuset` if the run enabled it and no other
/// child cgroup is there. Returns what to say, if anything, and whether the journal is done
/// with (kept when something could not be undone, for the next start to retry).
pub(crate) fn undo(stale: &Stale, fs: &dyn Cgroupfs, mount: &Path) -> (Option<String>, bool) {
    let cgroup = stale.field("cgroup").map(PathBuf::from);
    let enabled_in = stale.field("subtree_control").map(PathBuf::from);
    let inode = stale.parsed::<u64>("inode");
    // Only a `jitterlab-<pid>` below the mount, and `+cpuset` only in its own parent.
    let named = |c: &PathBuf| {
        c.components().all(|c| matches!(c, Component::Normal(_)))
            && c.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(PREFIX))
    };
    let Some(rel) = cgroup.filter(named) else {
        return stale.not_in_format("a cgroup2 cpuset");
    };
    let parent_rel = rel.parent().unwrap_or(Path::new("")).to_path_buf();
    if enabled_in.as_ref().is_some_and(|p| *p != parent_rel) {
        return stale.not_in_format("a cgroup2 cpuset");
    }
    if !stale.this_boot {
        // A cgroup does not survive a reboot.
        return (None, true);
    }
    let dir = mount.join(&rel);
    let pid = stale.pid;
    // Said whenever it was removed now (L8: a killed run is never cleaned up in silence).
    let removed = match remove_stale_cgroup(stale, fs, &dir, inode) {
        Ok(true) => Some(format!(
            "removed the cgroup {} left by a jitterlab (pid {pid}) that was killed",
            dir.display()
        )),
        Ok(false) => None,
        Err(stop) => return stop,
    };
    let Some(_) = enabled_in else {
        return (removed, true);
    };
    let parent = mount.join(&parent_rel);
    let control = parent.join("cgroup.subtree_control");
    match disable_cpuset(fs, &parent) {
        Ok(true) => (
            Some(format!(
                "{}took back +cpuset in {}, which a killed jitterlab (pid {pid}) enabled",
                removed.map_or(String::new(), |r| format!("{r}, and ")),
                control.display()
            )),
            true,
        ),
        Ok(false) => (
            Some(format!(
                "left +cpuset in {}, which a killed jitterlab (pid {pid}) enabled: other cgroups are in {} now, and taking the controller would take their cpusets; `echo -cpuset > {}` once they are gone",
                control.display(),
                parent.display(),
                control.display()
            )),
            true,
        ),
        Err(e) => (
            Some(format!(
                "cannot take back +cpuset from {}, which a killed jitterlab (pid {pid}) enabled ({e}); as root: `echo -cpuset > {}`",
                control.display(),
                control.display()
            )),
            false,
        ),
    }
}

/// Removes a killed run's cgroup `dir` if it is the run's (`inode`) and empty. Ok: it is gone
/// (true: removed now; false: gone before, or made again by someone else); Err: what undo
/// returns, the parent's `+cpuset` left as it is (a cgroup is still there).
fn remove_stale_cgroup(
    stale: &Stale,
    fs: &dyn Cgroupfs,
    dir: &Path,
    inode: Option<u64>,
) -> Result<bool, (Option<String>, bool)> {
    let shown = dir.display();
    let pid = stale.pid;
    let hint = format!("if `cat {shown}/cgroup.threads` is empty, remove it with `rmdir {shown}`");
    match stale.made_dir(dir, inode, "the cgroup", &hint) {
        Ok(()) => {}
        Err((None, true)) => return Ok(false),
        Err(undone) => return Err(undone),
    }
    let threads = threads_after_exits(fs, dir);
    if !threads.is_empty() {
        return Err((
            Some(format!(
                "the cgroup {shown} that a killed jitterlab (pid {pid}) made has {} thread(s) in it that jitterlab did not put there (e.g. {}): left alone, no thread moved; remove it with `rmdir {shown}` once they have left",
                threads.len(),
                threads
                    .iter()
                    .take(3)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            true,
        ));
    }
    match remove_partition(fs, dir) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err((
            Some(format!(
                "cannot remove the cgroup {shown} left by a jitterlab (pid {pid}) that was killed ({e}); remove it as root with `rmdir {shown}`"
            )),
            false,
        )),
    }
}

/// The threads in the cgroup `dir`, waiting up to 200 ms for those of a process that just
/// died to leave (the kernel detaches exiting tasks asynchronously). A cgroup whose
/// `cgroup.threads` cannot be read counts as not empty: it is left alone.
fn threads_after_exits(fs: &dyn Cgroupfs, dir: &Path) -> Vec<String> {
    let read = || -> Vec<String> {
        match fs.read(&dir.join("cgroup.threads")) {
            Ok(t) => t.lines().map(str::to_string).collect(),
            Err(e) => vec![format!("(cgroup.threads unreadable: {e})")],
        }
    };
    for _ in 0..20 {
        let threads = read();
        if threads.is_empty() {
            return threads;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    read()
}

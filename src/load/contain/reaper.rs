//! The reaper's side of the containment (`jitterlab __load-reaper`, started by
//! [`Containment`](super::Containment)): what it does once jitterlab has exited.

use super::{kill_and_remove_cgroup, kill_until_none, marked, owner_prefix};
use crate::sys::signal;
use std::io::Read;
use std::path::Path;

/// The reaper's main (`jitterlab __load-reaper`): waits for end-of-file on stdin, then kills
/// every process of `owner`'s loads and removes `cgroup` and `cpuset` (their v1 cpuset) and
/// the cgroups below them; the exit code.
pub(crate) fn reaper_main(owner: u32, cgroup: Option<&Path>, cpuset: Option<&Path>) -> i32 {
    for s in [signal::SIGINT, signal::SIGTERM, signal::SIGHUP] {
        signal::ignore(s);
    }
    let mut stdin = std::io::stdin().lock();
    let mut buf = [0u8; 64];
    loop {
        match stdin.read(&mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    sweep(owner, cgroup);
    if let Some(dir) = cpuset {
        kill_and_remove_cgroup(dir);
    }
    0
}

/// Kills every process of `owner`'s loads and removes their cgroups.
pub(super) fn sweep(owner: u32, cgroup: Option<&Path>) {
    if let Some(dir) = cgroup {
        kill_and_remove_cgroup(dir);
    }
    let prefix = owner_prefix(owner);
    kill_until_none(&|| marked(&|e| e.starts_with(&prefix)));
}

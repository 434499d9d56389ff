//! Starting jitterlab in the background, killing it and looking at what it left: the
//! scaffolding of the tests of a run's lifecycle (actions_end.rs, killed_leftovers.rs).

use super::{bin, text};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Starts jitterlab with `args`, its output collected.
pub fn start(args: &[&str]) -> Child {
    Command::new(bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the jitterlab binary runs")
}

/// Starts jitterlab with `args`, its output discarded (one that is killed says nothing).
pub fn start_quiet(args: &[&str]) -> Child {
    Command::new(bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the jitterlab binary runs")
}

/// Waits for `child` at most `limit`: its output and how long it took; a child still running
/// then is killed and the test fails.
pub fn finish_within(mut child: Child, limit: Duration, what: &str) -> (Output, Duration) {
    let t = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return (child.wait_with_output().unwrap(), t.elapsed());
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!("{what}: jitterlab still ran after {limit:?}: {}", text(&o));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits up to `limit` for `done`; false if it never was.
pub fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while !done() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

/// The pids of the processes whose command line is exactly `words`.
pub fn processes(words: &[&str]) -> Vec<u32> {
    let wanted: Vec<u8> = words
        .iter()
        .flat_map(|w| [w.as_bytes(), b"\0"].concat())
        .collect();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| std::fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|c| c == wanted))
        .collect()
}

/// Waits up to 5 s for `words` to be running; its pids.
pub fn wait_for_process(words: &[&str]) -> Vec<u32> {
    let mut found = Vec::new();
    wait_until(Duration::from_secs(5), || {
        found = processes(words);
        !found.is_empty()
    });
    found
}

pub fn send(pid: u32, signal: i32) {
    // SAFETY: plain syscall.
    unsafe { libc::kill(pid as i32, signal) };
}

pub fn sigkill(pid: u32) {
    send(pid, libc::SIGKILL);
}

/// A pid no process has now (a child's, reaped).
pub fn dead_pid() -> u32 {
    let mut c = Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

/// This process's cgroup v2 directory (where its child jitterlab makes the loads' cgroups),
/// when the system has one.
pub fn own_cgroup_dir() -> Option<PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mount = mountinfo.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        (right.split(' ').next() == Some("cgroup2")).then(|| left.split(' ').nth(4).unwrap())
    })?;
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = own.lines().find_map(|l| l.strip_prefix("0::"))?;
    Some(Path::new(mount).join(path.trim_start_matches('/')))
}

/// The `__load-reaper` processes of jitterlab `owner` whose load cgroup is `cgroup`.
pub fn reapers(owner: u32, cgroup: &Path) -> Vec<u32> {
    processes(&[
        "/proc/self/exe",
        "__load-reaper",
        "--owner",
        &owner.to_string(),
        "--cgroup",
        cgroup.to_str().unwrap(),
    ])
}

/// Removes what a failed test left of load cgroup `dir` (its loads killed first).
pub fn remove_load_cgroup(dir: &Path) {
    if dir.exists() {
        let _ = std::fs::write(dir.join("cgroup.kill"), "1");
        std::thread::sleep(Duration::from_millis(200));
        let _ = std::fs::remove_dir(dir.join("load-0"));
        let _ = std::fs::remove_dir(dir);
    }
}

//! The task guard: loads are refused before anything starts (exit 2, `--dry-run` too) when the
//! tasks (processes and threads) that all of them running at the same time start would not fit
//! in what this system lets start: `kernel.pid_max` and `kernel.threads-max` less the tasks
//! there are now, the pids controller's `pids.max` of jitterlab's cgroup and its ancestors
//! less their `pids.current`, and, for a user other than root (without CAP_SYS_RESOURCE or
//! CAP_SYS_ADMIN), `RLIMIT_NPROC` less the tasks that user runs now. Without it such
//! a load exhausts the machine's pids while it starts (every fork of every process on it
//! failing until the load is stopped), or fails midway with "fork failed" (issue 39 L6).
//!
//! The count is each load's own ([`Generator::tasks_per_worker`]): its worker process's two
//! threads and, per worker, what the generator starts (`hackbench` its `groups x fds x 2`
//! tasks, `fork` up to `count` children, ...). A program an `exec:` load starts may start more,
//! which no one can count beforehand.
//!
//! [`Generator::tasks_per_worker`]: super::generator::Generator::tasks_per_worker

use super::generator::GeneratorSpec;
use super::memory_guard::{Scheduled, most_at_once};
use std::path::Path;

/// The tasks of a load's worker process besides its workers': the reporting (main) thread and
/// the driver thread (worker.rs).
const WORKER_PROCESS_TASKS: u64 = 2;

/// The tasks one load starts: its worker process's and its workers'. `online` gives the CPU
/// count the generators that default to one worker per CPU (`cpu`) take.
pub(crate) fn tasks_of(spec: &GeneratorSpec, online: &[usize]) -> u128 {
    WORKER_PROCESS_TASKS as u128
        + spec.workers(online) as u128 * spec.generator.tasks_per_worker() as u128
}

/// What this system lets start now: (the most tasks, what says so), the smallest of its limits;
/// None when no limit could be read.
fn room() -> Option<(u64, String)> {
    let read = |p: &str| -> Option<u64> { std::fs::read_to_string(p).ok()?.trim().parse().ok() };
    // The fourth field of /proc/loadavg: running/total scheduling entities (tasks) now.
    let now = std::fs::read_to_string("/proc/loadavg").ok().and_then(|t| {
        t.split_whitespace()
            .nth(3)?
            .split('/')
            .nth(1)?
            .parse::<u64>()
            .ok()
    });
    let mut limits: Vec<(u64, String)> = Vec::new();
    for (file, name) in [
        ("/proc/sys/kernel/pid_max", "kernel.pid_max"),
        ("/proc/sys/kernel/threads-max", "kernel.threads-max"),
    ] {
        if let Some(max) = read(file) {
            let used = now.unwrap_or(0);
            limits.push((
                max.saturating_sub(used),
                format!("{name} {max} with {used} tasks on the system now"),
            ));
        }
    }
    limits.extend(cgroup_pids_room(Path::new("/sys/fs/cgroup")));
    use crate::sys::caps::{CAP_SYS_ADMIN, CAP_SYS_RESOURCE, has_effective};
    let uid = crate::sys::process::user_id();
    // The kernel's exemptions (kernel/fork.c): the real root user, CAP_SYS_RESOURCE,
    // CAP_SYS_ADMIN.
    if uid != 0
        && !has_effective(CAP_SYS_RESOURCE)
        && !has_effective(CAP_SYS_ADMIN)
        && let Ok(l) = crate::sys::rlimit::get(crate::sys::rlimit::Resource::Nproc)
        && l.soft != u64::MAX
    {
        limits.push(nproc_room(Path::new("/proc"), uid, l.soft));
    }
    limits.into_iter().min_by_key(|(room, _)| *room)
}

/// The room RLIMIT_NPROC (`soft`) leaves the real user `uid`: the kernel counts against it
/// every task (process or thread) of that real uid, those it runs now included, so a user with
/// `ulimit -u 300` and 150 tasks running has room for 150 (the hostile re-run's L3-c: a load of
/// 203 tasks passed the guard, then failed with "fork failed"). The tasks are counted in
/// `proc` (each process's `Threads:` where its real `Uid:` is `uid`): those this pid namespace
/// shows, so in a container the count may be short of the kernel's.
fn nproc_room(proc: &Path, uid: u32, soft: u64) -> (u64, String) {
    let running = tasks_of_user(proc, uid);
    (
        soft.saturating_sub(running),
        format!(
            "RLIMIT_NPROC {soft} (ulimit -u, the tasks of this user) with {running} tasks of this user running now"
        ),
    )
}

/// The tasks (threads of every process) whose real user id is `uid`, as `proc` shows them; a
/// process that ends while it is read is not counted.
fn tasks_of_user(proc: &Path, uid: u32) -> u64 {
    let Ok(entries) = std::fs::read_dir(proc) else {
        return 0;
    };
    let mut tasks = 0u64;
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name
            .to_str()
            .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        {
            continue;
        }
        let Ok(status) = std::fs::read_to_string(entry.path().join("status")) else {
            continue;
        };
        let field = |key: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|v| v.parse::<u64>().ok())
        };
        // `Uid:` is real, effective, saved, filesystem: the first is the one counted.
        if field("Uid:") == Some(uid as u64) {
            tasks += field("Threads:").unwrap_or(1);
        }
    }
    tasks
}

/// What a load says when a fork failed (`what`: who forked): with EAGAIN, the kernel's
/// answer to a task limit reached, the limits that can be, since tasks started after the guard
/// (by the user, or a count this pid namespace does not show) may still exhaust one.
pub(crate) fn fork_failed(what: &str, e: &std::io::Error) -> String {
    if e.raw_os_error() == Some(crate::sys::errno::EAGAIN) {
        format!(
            "{what}: fork failed: {e} (a limit of tasks was reached: RLIMIT_NPROC, `ulimit -u`, for a user other than root; the cgroup's pids.max; kernel.pid_max or kernel.threads-max); give the load fewer tasks, end other tasks of this user, or raise the limit"
        )
    } else {
        format!("{what}: fork failed: {e}")
    }
}

/// The room the pids controller leaves jitterlab's cgroup (v2) and each ancestor: `pids.max`
/// less `pids.current`, where a limit is set.
fn cgroup_pids_room(root: &Path) -> Vec<(u64, String)> {
    let Some(own) = std::fs::read_to_string("/proc/self/cgroup")
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| {
                l.strip_prefix("0::")
                    .map(|p| p.trim_start_matches('/').to_string())
            })
        })
    else {
        return Vec::new();
    };
    let mut dir = root.join(own);
    let mut out = Vec::new();
    loop {
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
        if let (Some(max), Some(current)) = (
            read("pids.max").and_then(|m| m.trim().parse::<u64>().ok()),
            read("pids.current").and_then(|c| c.trim().parse::<u64>().ok()),
        ) {
            out.push((
                max.saturating_sub(current),
                format!(
                    "pids.max {max} of the cgroup {} with {current} tasks in it now",
                    dir.display()
                ),
            ));
        }
        if dir == root || !dir.pop() || !dir.starts_with(root) {
            break;
        }
    }
    out
}

/// Refuses the loads that, at some moment, would together start more tasks than this system
/// lets start ([`room`]), naming the loads, their tasks, the limit and its figures.
pub(crate) fn check_together(loads: &[Scheduled], online: &[usize]) -> Result<(), String> {
    if loads.is_empty() {
        return Ok(());
    }
    match room() {
        Some((room, why)) => check_against(loads, online, room, &why),
        None => Ok(()),
    }
}

/// [`check_together`] against `room` tasks (`why`: the limit and its figures).
fn check_against(
    loads: &[Scheduled],
    online: &[usize],
    room: u64,
    why: &str,
) -> Result<(), String> {
    let items: Vec<(Option<(u64, u64)>, u128)> = loads
        .iter()
        .map(|l| (l.window, tasks_of(l.spec, online)))
        .collect();
    let (total, peak_at) = most_at_once(&items);
    if total <= room as u128 {
        return Ok(());
    }
    // Each load once, with how many times it was given (300 x `--load cpu:workers=4096` is
    // one item, not 300).
    let mut counted: Vec<(String, u128, usize)> = Vec::new();
    for l in loads.iter().filter(|l| match (l.window, peak_at) {
        (None, _) => true,
        (Some((from, to)), Some(t)) => from <= t && t < to,
        (Some(_), None) => false,
    }) {
        let mut name = format!("'{}'", l.spec.text);
        if !l.origin.is_empty() {
            name.push_str(&format!(" ({})", l.origin));
        }
        match counted.iter_mut().find(|(n, ..)| *n == name) {
            Some((.., times)) => *times += 1,
            None => counted.push((name, tasks_of(l.spec, online), 1)),
        }
    }
    let together: Vec<String> = counted
        .into_iter()
        .map(|(name, tasks, times)| match times {
            1 => format!("{name}: {tasks}"),
            n => format!("{n} x {name}: {tasks} each"),
        })
        .collect();
    Err(format!(
        "the loads that run at the same time would start {total} tasks (processes and threads: {}), more than this system lets start: {room}, by {why}; give fewer workers=, groups=, fds=, count= or conns=, or raise the limit",
        together.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::LoadSpec;

    fn spec(text: &str) -> GeneratorSpec {
        match LoadSpec::parse(text).unwrap() {
            LoadSpec::Generator(g) => g,
            other => panic!("{other:?}"),
        }
    }

    /// The hostile re-run's L3-c: with `ulimit -u 300` and 150 tasks of the user running, a
    /// load of 203 tasks (`hackbench:groups=5`) passed the guard (room 300) and failed with
    /// "fork failed". The room is the limit less the user's tasks, counted from /proc (here a
    /// fixture: another user's tasks and a process without its status are not counted), and
    /// the refusal names RLIMIT_NPROC with both figures.
    #[test]
    fn rlimit_nproc_leaves_room_only_for_what_the_user_does_not_run_already() {
        let proc = tempfile::tempdir().unwrap();
        let process = |pid: u32, uid: u32, threads: u32| {
            let dir = proc.path().join(pid.to_string());
            std::fs::create_dir(&dir).unwrap();
            std::fs::write(
                dir.join("status"),
                format!(
                    "Name:\tsleep\nUid:\t{uid}\t0\t{uid}\t{uid}\nGid:\t{uid}\t{uid}\t{uid}\t{uid}\nThreads:\t{threads}\n"
                ),
            )
            .unwrap();
        };
        for pid in 100..248 {
            process(pid, 1000, 1);
        }
        process(300, 1000, 2);
        process(301, 1001, 500);
        std::fs::create_dir(proc.path().join("302")).unwrap();
        std::fs::create_dir(proc.path().join("self")).unwrap();
        assert_eq!(tasks_of_user(proc.path(), 1000), 150);
        let (room, why) = nproc_room(proc.path(), 1000, 300);
        assert_eq!(room, 150);
        let load = spec("hackbench:groups=5");
        let whole = Scheduled {
            spec: &load,
            origin: "--load".into(),
            window: None,
        };
        assert_eq!(tasks_of(&load, &[0, 1]), 203);
        let e = check_against(std::slice::from_ref(&whole), &[0, 1], room, &why).unwrap_err();
        assert!(
            e.contains(
                "this system lets start: 150, by RLIMIT_NPROC 300 (ulimit -u, the tasks of this user) with 150 tasks of this user running now"
            ),
            "{e}"
        );
        // The limit alone would have let it start.
        assert!(check_against(&[whole], &[0, 1], 300, &why).is_ok());
        // This process is one of its user's tasks, with all its threads.
        assert!(tasks_of_user(Path::new("/proc"), crate::sys::process::user_id()) >= 1);
    }

    /// L3-c's other half: a fork refused with EAGAIN names the limits that refuse it.
    #[test]
    fn a_fork_refused_by_a_task_limit_names_the_limits() {
        let e = std::io::Error::from_raw_os_error(crate::sys::errno::EAGAIN);
        let said = fork_failed("hackbench", &e);
        assert!(said.starts_with("hackbench: fork failed: "), "{said}");
        assert!(said.contains("RLIMIT_NPROC, `ulimit -u`"), "{said}");
        let other = std::io::Error::from_raw_os_error(crate::sys::errno::EINVAL);
        assert!(!fork_failed("hackbench", &other).contains("RLIMIT_NPROC"));
    }

    #[test]
    fn each_load_counts_what_it_starts() {
        // hackbench: 2 + groups x fds (20 by default) x 2 per worker.
        assert_eq!(
            tasks_of(&spec("hackbench:groups=1000"), &[0, 1]),
            2 + 1 + 40_000
        );
        // cpu: one thread per worker, one worker per online CPU by default.
        assert_eq!(tasks_of(&spec("cpu"), &[0, 1, 2, 3]), 2 + 4);
        assert_eq!(tasks_of(&spec("cpu:workers=4096"), &[0]), 2 + 4096);
        // fork: a thread and up to count children per worker.
        assert_eq!(
            tasks_of(&spec("fork:count=100,workers=2"), &[0]),
            2 + 2 * 101
        );
    }

    /// The hostile re-run's L6: 40,000 hackbench tasks against a pid_max of 32,768, and 300
    /// cpu loads of 4096 workers, are refused with the figures; what fits passes; phases
    /// that do not overlap are not added up.
    #[test]
    fn loads_beyond_the_room_are_refused_with_the_figures() {
        let why = "kernel.pid_max 32768 with 400 tasks on the system now";
        let big = spec("hackbench:groups=1000");
        let whole = |s| Scheduled {
            spec: s,
            origin: "--load".into(),
            window: None,
        };
        let e = check_against(&[whole(&big)], &[0, 1], 32_368, why).unwrap_err();
        assert!(e.contains("would start 40003 tasks"), "{e}");
        assert!(e.contains("'hackbench:groups=1000' (--load): 40003"), "{e}");
        assert!(
            e.contains("this system lets start: 32368, by kernel.pid_max 32768"),
            "{e}"
        );
        let cpu = spec("cpu:workers=4096");
        let many: Vec<Scheduled> = (0..300).map(|_| whole(&cpu)).collect();
        let e = check_against(&many, &[0, 1], 32_368, why).unwrap_err();
        assert!(e.contains("would start 1229400 tasks"), "{e}");
        assert!(
            e.contains("(processes and threads: 300 x 'cpu:workers=4096' (--load): 4098 each)"),
            "{e}"
        );
        let small = spec("hackbench:groups=10");
        assert!(check_against(&[whole(&small)], &[0, 1], 32_368, why).is_ok());
        let phase = |from, to| Scheduled {
            spec: &cpu,
            origin: String::new(),
            window: Some((from, to)),
        };
        let apart = [phase(0, 10), phase(10, 20), phase(20, 30)];
        assert!(check_against(&apart, &[0], 5_000, why).is_ok());
        let overlapping = [phase(0, 10), phase(5, 20)];
        assert!(check_against(&overlapping, &[0], 5_000, why).is_err());
    }
}

//! Scheduling checks: RT throttling, RT group scheduling, and whether this process may use
//! real-time priority and lock its memory (rlimits and capabilities).

use super::Ctx;
use crate::doctor::root;
use crate::doctor::verdict::{Check, Spec};

/// The priority `jitterlab run` asks for by default (docs/architecture.md, principle 3).
pub(crate) const RUN_PRIORITY: u64 = 95;

const CAP_IPC_LOCK: u32 = 14;
const CAP_SYS_NICE: u32 = 23;

const RT_THROTTLING: Spec = Spec {
    id: "scheduling.rt_throttling",
    area: "scheduling",
    why: "With RT throttling, real-time tasks are stopped for the rest of each period once they \
          have used sched_rt_runtime_us of it; under real-time load that shows up as latency of \
          tens of milliseconds.",
};

/// sched_rt_runtime_us and sched_rt_period_us; runtime -1 means no throttling.
pub(crate) fn rt_runtime(ctx: &Ctx) -> Result<(i64, i64), String> {
    Ok((
        root::read_i64(ctx.root, "proc/sys/kernel/sched_rt_runtime_us")?,
        root::read_i64(ctx.root, "proc/sys/kernel/sched_rt_period_us")?,
    ))
}

pub(crate) fn rt_throttling(ctx: &Ctx) -> Check {
    match rt_runtime(ctx) {
        Ok((-1, period)) => RT_THROTTLING.ok(format!("sched_rt_runtime_us = -1 (no throttling), period {period} us")),
        Ok((runtime, period)) => RT_THROTTLING.warn(
            format!(
                "sched_rt_runtime_us = {runtime} of sched_rt_period_us = {period}: real-time tasks are throttled after {:.0}% of each period",
                runtime as f64 * 100.0 / period.max(1) as f64
            ),
            "`sysctl kernel.sched_rt_runtime_us=-1` for the measurement (a runaway real-time task can then \
             starve the system; keep a console at higher priority or a housekeeping CPU)",
        ),
        Err(e) => RT_THROTTLING.unknown(e, "check that /proc/sys is mounted"),
    }
}

/// The cgroup this process is in for the v1 `cpu` controller, and the file holding its RT
/// runtime. None when there is no v1 cpu controller (cgroup v2 has no RT runtime).
fn cpu_cgroup(ctx: &Ctx) -> Result<Option<(String, String)>, String> {
    let groups = root::read(ctx.root, "proc/self/cgroup")?;
    let Some(path) = groups.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (_, controllers, path) = (f.next()?, f.next()?, f.next()?);
        controllers
            .split(',')
            .any(|c| c == "cpu")
            .then(|| path.to_string())
    }) else {
        return Ok(None);
    };
    let mounts = root::read(ctx.root, "proc/mounts")?;
    let Some(mount) = mounts.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() > 3 && f[2] == "cgroup" && f[3].split(',').any(|o| o == "cpu"))
            .then(|| f[1].to_string())
    }) else {
        return Ok(None);
    };
    // Inside a container without a cgroup namespace, /proc/self/cgroup shows the host's path
    // while the mount shows only the container's own group: then the mount root is ours.
    let nested = format!(
        "{}/{}/cpu.rt_runtime_us",
        mount.trim_end_matches('/'),
        path.trim_matches('/')
    );
    let file = if root::exists(ctx.root, &nested) {
        nested
    } else {
        format!("{}/cpu.rt_runtime_us", mount.trim_end_matches('/'))
    };
    Ok(Some((path, file.replace("//", "/"))))
}

const RT_GROUP: Spec = Spec {
    id: "scheduling.rt_group",
    area: "scheduling",
    why: "With RT group scheduling, a task may only use a real-time policy if its cgroup has RT \
          runtime; container runtimes give new cgroups none, so SCHED_FIFO fails with EPERM.",
};

pub(crate) fn rt_group(ctx: &Ctx) -> Check {
    let configured = ctx
        .config
        .as_ref()
        .ok()
        .map(|c| c.enabled("RT_GROUP_SCHED"));
    let cgroup = match cpu_cgroup(ctx) {
        Ok(c) => c,
        Err(e) => return RT_GROUP.unknown(e, "check that /proc is mounted"),
    };
    let Some((path, file)) = cgroup else {
        return RT_GROUP.ok(format!(
            "no cgroup-v1 cpu controller{}: real-time tasks are not limited per cgroup",
            if configured == Some(true) {
                " (CONFIG_RT_GROUP_SCHED=y)"
            } else {
                ""
            }
        ));
    };
    match root::read_i64(ctx.root, &file) {
        Ok(runtime) => {
            let evidence = format!("cgroup {path}: {file} = {runtime}");
            if runtime > 0 || runtime == -1 {
                RT_GROUP.ok(evidence)
            } else {
                RT_GROUP.fail(
                    evidence,
                    format!(
                        "give the cgroup RT runtime (its parents first): `echo 950000 > {file}`; with \
                         Docker: --cpu-rt-runtime=950000 --ulimit rtprio=99 --cap-add SYS_NICE (the daemon \
                         needs --cpu-rt-runtime too); or run jitterlab in the root cgroup"
                    ),
                )
            }
        }
        // Without RT group scheduling the file does not exist and nothing is limited. A file
        // that exists but cannot be read or holds no number says nothing of the kind.
        Err(e) if e.is_missing() && (configured != Some(true) || path == "/") => RT_GROUP.ok(
            format!("cgroup {path}: no {file}: RT group scheduling is not enabled"),
        ),
        Err(e) => RT_GROUP.unknown(
            format!("cgroup {path}: {e}"),
            "check the cgroup mounts in /proc/mounts",
        ),
    }
}

/// One resource limit from /proc/self/limits: soft and hard, None meaning unlimited.
fn limit(ctx: &Ctx, name: &str) -> Result<(Option<u64>, Option<u64>), String> {
    let text = root::read(ctx.root, "proc/self/limits")?;
    let line = text
        .lines()
        .find(|l| l.starts_with(name))
        .ok_or(format!("no '{name}' in /proc/self/limits"))?;
    let mut values = line[name.len()..]
        .split_whitespace()
        .map(|v| v.parse::<u64>().ok());
    match (values.next(), values.next()) {
        (Some(soft), Some(hard)) => Ok((soft, hard)),
        _ => Err(format!(
            "cannot parse '{}' in /proc/self/limits",
            line.trim()
        )),
    }
}

/// Whether the effective capability set (CapEff in /proc/self/status) holds `cap`.
fn has_cap(ctx: &Ctx, cap: u32) -> Result<bool, String> {
    let status = root::read(ctx.root, "proc/self/status")?;
    let hex = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .ok_or("no CapEff in /proc/self/status")?
        .trim();
    let bits =
        u64::from_str_radix(hex, 16).map_err(|_| format!("CapEff '{hex}' is not hexadecimal"))?;
    Ok(bits & (1 << cap) != 0)
}

fn show(v: Option<u64>) -> String {
    v.map_or("unlimited".into(), |v| v.to_string())
}

const RLIMIT_RTPRIO: Spec = Spec {
    id: "scheduling.rlimit_rtprio",
    area: "scheduling",
    why: "Without CAP_SYS_NICE, RLIMIT_RTPRIO is the highest real-time priority this process may \
          take; jitterlab runs at SCHED_FIFO 95 by default.",
};

const RTPRIO_FIX: &str = "run as root, or grant CAP_SYS_NICE (`setcap cap_sys_nice,cap_ipc_lock+ep $(which jitterlab)`), \
     or raise the limit (`@realtime - rtprio 99` in /etc/security/limits.conf, `ulimit -r 99`); \
     or measure with --policy other";

pub(crate) fn rlimit_rtprio(ctx: &Ctx) -> Check {
    let (soft, hard) = match limit(ctx, "Max realtime priority") {
        Ok(l) => l,
        Err(e) => return RLIMIT_RTPRIO.unknown(e, "check that /proc is mounted"),
    };
    let cap = has_cap(ctx, CAP_SYS_NICE);
    let evidence = format!("RLIMIT_RTPRIO soft {}, hard {}", show(soft), show(hard));
    match soft {
        None => RLIMIT_RTPRIO.ok(evidence),
        Some(p) if p >= RUN_PRIORITY => RLIMIT_RTPRIO.ok(evidence),
        _ if cap == Ok(true) => RLIMIT_RTPRIO.ok(format!("{evidence}; CAP_SYS_NICE overrides it")),
        Some(0) => RLIMIT_RTPRIO.fail(
            format!("{evidence}, no CAP_SYS_NICE: no real-time priority at all"),
            RTPRIO_FIX,
        ),
        Some(p) => RLIMIT_RTPRIO.warn(
            format!("{evidence}, no CAP_SYS_NICE: priorities up to {p} only"),
            RTPRIO_FIX,
        ),
    }
}

const CAP_NICE: Spec = Spec {
    id: "scheduling.cap_sys_nice",
    area: "scheduling",
    why: "CAP_SYS_NICE lets a process take any real-time priority and SCHED_DEADLINE regardless \
          of RLIMIT_RTPRIO.",
};

pub(crate) fn cap_sys_nice(ctx: &Ctx) -> Check {
    match has_cap(ctx, CAP_SYS_NICE) {
        Ok(true) => CAP_NICE.ok("CAP_SYS_NICE in CapEff of /proc/self/status"),
        // Without the capability, a sufficient RLIMIT_RTPRIO still allows SCHED_FIFO (but not
        // SCHED_DEADLINE); the rlimit check carries the failure so it is not reported twice.
        Ok(false) => CAP_NICE.warn(
            "CAP_SYS_NICE not in CapEff: real-time priority only up to RLIMIT_RTPRIO, no SCHED_DEADLINE",
            "run as root or `setcap cap_sys_nice,cap_ipc_lock+ep $(which jitterlab)`",
        ),
        Err(e) => CAP_NICE.unknown(e, "check that /proc is mounted"),
    }
}

const RLIMIT_MEMLOCK: Spec = Spec {
    id: "scheduling.rlimit_memlock",
    area: "scheduling",
    why: "jitterlab locks its memory (mlockall) so that no page fault delays the measuring \
          thread; without CAP_IPC_LOCK, RLIMIT_MEMLOCK caps how much can be locked.",
};

/// Below this, mlockall of jitterlab with its histograms and rings is likely to fail.
const MEMLOCK_NEEDED: u64 = 256 << 20;

pub(crate) fn rlimit_memlock(ctx: &Ctx) -> Check {
    let (soft, hard) = match limit(ctx, "Max locked memory") {
        Ok(l) => l,
        Err(e) => return RLIMIT_MEMLOCK.unknown(e, "check that /proc is mounted"),
    };
    let kib = |v: Option<u64>| v.map_or("unlimited".into(), |b| format!("{} KiB", b >> 10));
    let evidence = format!("RLIMIT_MEMLOCK soft {}, hard {}", kib(soft), kib(hard));
    match soft {
        None => RLIMIT_MEMLOCK.ok(evidence),
        Some(b) if b >= MEMLOCK_NEEDED => RLIMIT_MEMLOCK.ok(evidence),
        _ if has_cap(ctx, CAP_IPC_LOCK) == Ok(true) => RLIMIT_MEMLOCK.ok(format!("{evidence}; CAP_IPC_LOCK overrides it")),
        Some(_) => RLIMIT_MEMLOCK.warn(
            format!("{evidence}, no CAP_IPC_LOCK: mlockall fails once jitterlab maps more than that"),
            "run as root, grant CAP_IPC_LOCK, or raise the limit (`ulimit -l unlimited`, `memlock` in \
             /etc/security/limits.conf, LimitMEMLOCK= in a systemd unit)",
        ),
    }
}

const CAP_LOCK: Spec = Spec {
    id: "scheduling.cap_ipc_lock",
    area: "scheduling",
    why: "CAP_IPC_LOCK lets a process lock any amount of memory regardless of RLIMIT_MEMLOCK.",
};

pub(crate) fn cap_ipc_lock(ctx: &Ctx) -> Check {
    match has_cap(ctx, CAP_IPC_LOCK) {
        Ok(true) => CAP_LOCK.ok("CAP_IPC_LOCK in CapEff of /proc/self/status"),
        Ok(false) => CAP_LOCK.warn(
            "CAP_IPC_LOCK not in CapEff: locked memory limited to RLIMIT_MEMLOCK",
            "run as root or `setcap cap_sys_nice,cap_ipc_lock+ep $(which jitterlab)`",
        ),
        Err(e) => CAP_LOCK.unknown(e, "check that /proc is mounted"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::verdict::Verdict;
    use std::fs;

    /// A root with this process in the v1 cpu cgroup `/docker/abc` and no kernel config, whose
    /// `cpu.rt_runtime_us` is set up by `file`.
    fn rt_group_with(file: impl Fn(&std::path::Path)) -> Check {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        fs::create_dir_all(r.join("proc/self")).unwrap();
        fs::write(r.join("proc/self/cgroup"), "4:cpu,cpuacct:/docker/abc\n").unwrap();
        fs::write(
            r.join("proc/mounts"),
            "cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,cpu,cpuacct 0 0\n",
        )
        .unwrap();
        let group = r.join("sys/fs/cgroup/cpu,cpuacct");
        fs::create_dir_all(&group).unwrap();
        file(&group.join("cpu.rt_runtime_us"));
        rt_group(&Ctx::new(r, &[], false))
    }

    /// Only a missing file means "RT group scheduling is off"; a file that cannot be read or
    /// holds no number leaves the answer unknown (it used to read as "not enabled").
    #[test]
    fn only_a_missing_rt_runtime_file_means_rt_group_scheduling_is_off() {
        let missing = rt_group_with(|_| {});
        assert_eq!(missing.verdict, Verdict::Ok, "{}", missing.evidence);
        assert!(
            missing
                .evidence
                .contains("RT group scheduling is not enabled")
        );

        let garbage = rt_group_with(|f| fs::write(f, "garbage\n").unwrap());
        assert_eq!(garbage.verdict, Verdict::Unknown, "{}", garbage.evidence);
        assert!(
            garbage.evidence.contains("holds 'garbage', not a number"),
            "{}",
            garbage.evidence
        );

        // A directory in its place: the read fails with EISDIR, not ENOENT.
        let unreadable = rt_group_with(|f| fs::create_dir(f).unwrap());
        assert_eq!(
            unreadable.verdict,
            Verdict::Unknown,
            "{}",
            unreadable.evidence
        );
        assert!(
            unreadable.evidence.contains("cannot read"),
            "{}",
            unreadable.evidence
        );

        let set = rt_group_with(|f| fs::write(f, "950000\n").unwrap());
        assert_eq!(set.verdict, Verdict::Ok, "{}", set.evidence);
        assert!(set.evidence.contains("= 950000"), "{}", set.evidence);
    }
}

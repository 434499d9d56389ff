//! Where the measurement runs: inside a container (and which runtime), and under which cgroup
//! hierarchy (v1, v2, or both) in which group. A container limits what a real-time measurement
//! may do (capabilities, rtprio and memlock limits, RT runtime, CPUs) and its results describe
//! the container's share of the machine; the cgroup layout says what `--cpuset-partition` can
//! build.

use super::Ctx;
use crate::doctor::root;
use crate::doctor::verdict::{Check, Spec};

/// A container runtime and what gave it away.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Container {
    /// `docker`, `podman`, `kubernetes`, `lxc`, `systemd-nspawn`, `containerd`, ...
    pub(crate) runtime: String,
    pub(crate) evidence: String,
}

/// Group paths of /proc/self/cgroup that name a container runtime, in the order tried.
const CGROUP_MARKS: &[(&str, &str)] = &[
    ("kubepods", "kubernetes"),
    ("libpod", "podman"),
    ("docker", "docker"),
    ("containerd", "containerd"),
    ("crio", "cri-o"),
    ("/lxc/", "lxc"),
    ("lxc.payload", "lxc"),
    ("machine.slice/systemd-nspawn", "systemd-nspawn"),
];

/// The container this process runs in, if any: `/.dockerenv` (Docker), `/run/.containerenv`
/// (Podman, whose `engine=` names it), `container=` in PID 1's environment (systemd's
/// convention: lxc, systemd-nspawn, podman, oci), or a runtime's name in the process's cgroup
/// paths (Kubernetes pods, containerd, CRI-O).
pub(crate) fn detect(ctx: &Ctx) -> Option<Container> {
    let found = |runtime: &str, evidence: String| {
        Some(Container {
            runtime: runtime.into(),
            evidence,
        })
    };
    if root::exists(ctx.root, ".dockerenv") {
        return found("docker", "/.dockerenv exists".into());
    }
    if let Ok(text) = root::read(ctx.root, "run/.containerenv") {
        let engine = text
            .lines()
            .find_map(|l| l.strip_prefix("engine=\""))
            .map(|e| {
                e.trim_end_matches('"')
                    .split('-')
                    .next()
                    .unwrap_or(e)
                    .to_string()
            })
            .unwrap_or_else(|| "podman".into());
        return found(&engine, "/run/.containerenv exists".into());
    }
    if let Ok(env) = std::fs::read(root::path(ctx.root, "proc/1/environ"))
        && let Some(name) = env
            .split(|&b| b == 0)
            .find_map(|v| v.strip_prefix(b"container="))
            .filter(|v| !v.is_empty())
    {
        let name = String::from_utf8_lossy(name).to_string();
        return found(&name, format!("container={name} in PID 1's environment"));
    }
    let groups = root::read(ctx.root, "proc/self/cgroup").ok()?;
    for line in groups.lines() {
        let path = line.splitn(3, ':').nth(2).unwrap_or_default();
        if let Some((_, runtime)) = CGROUP_MARKS.iter().find(|(mark, _)| path.contains(mark)) {
            return found(runtime, format!("cgroup {path} (/proc/self/cgroup)"));
        }
    }
    None
}

/// What a container needs for a real-time measurement, for its runtime.
pub(crate) fn container_fix(runtime: &str) -> String {
    match runtime {
        "kubernetes" => "run the pod in the Guaranteed QoS class with whole CPUs (the kubelet's static CPU manager \
             policy), securityContext.capabilities.add [SYS_NICE, IPC_LOCK], and rtprio/memlock limits from the \
             runtime; or measure on the node itself"
            .into(),
        _ => format!(
            "start it with real-time rights and its own CPUs: `{runtime} run --cap-add SYS_NICE --cap-add IPC_LOCK \
             --ulimit rtprio=99 --ulimit memlock=-1 --cpuset-cpus=CPUS` (with RT group scheduling also \
             --cpu-rt-runtime=950000); or measure on the host"
        ),
    }
}

const CONTAINER: Spec = Spec {
    id: "virtualization.container",
    area: "virtualization",
    why: "A container limits a real-time measurement: without CAP_SYS_NICE, an rtprio limit and RT \
          runtime, SCHED_FIFO fails with EPERM; its CPU and memory limits decide what it may \
          measure; and its results describe the container's share of the machine.",
};

pub(crate) fn container(ctx: &Ctx) -> Check {
    match detect(ctx) {
        None => CONTAINER.ok(
            "no container: no /.dockerenv or /run/.containerenv, no container= for PID 1, no runtime in /proc/self/cgroup",
        ),
        Some(c) => CONTAINER.warn(
            format!("inside a container ({}): {}", c.runtime, c.evidence),
            container_fix(&c.runtime),
        ),
    }
}

const CGROUP: Spec = Spec {
    id: "scheduling.cgroup",
    area: "scheduling",
    why: "The cgroup hierarchy decides how CPUs can be set apart for the measurement: an isolated \
          cgroup v2 cpuset partition, or an exclusive cgroup v1 cpuset without load balancing \
          (--cpuset-partition builds either: v1 where the v1 cpuset hierarchy is mounted, else v2).",
};

/// The hierarchy from /proc/mounts: `v2`, `v1`, or `hybrid` (v1 controllers with a v2
/// hierarchy beside them), and where the cpuset controller is.
pub(crate) fn cgroup(ctx: &Ctx) -> Check {
    let mounts = match root::read(ctx.root, "proc/mounts") {
        Ok(m) => m,
        Err(e) => return CGROUP.unknown(e, "check that /proc is mounted"),
    };
    let mut v2_at = None;
    let mut v1 = false;
    let mut cpuset_v1 = None;
    for l in mounts.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        match f.get(2) {
            Some(&"cgroup2") => v2_at = v2_at.or(f.get(1).map(|s| s.to_string())),
            Some(&"cgroup") => {
                v1 = true;
                if f.get(3)
                    .is_some_and(|o| o.split(',').any(|o| o == "cpuset"))
                {
                    cpuset_v1 = f.get(1).map(|s| s.to_string());
                }
            }
            _ => {}
        }
    }
    let version = match (v1, &v2_at) {
        (false, Some(at)) => format!("cgroup v2 at {at}"),
        (true, Some(at)) => format!("cgroup v1 with a v2 hierarchy at {at} (hybrid)"),
        (true, None) => "cgroup v1".into(),
        (false, None) => {
            return CGROUP.unknown(
                "no cgroup filesystem in /proc/mounts",
                "mount cgroup2 at /sys/fs/cgroup",
            );
        }
    };
    let cpuset = match (&cpuset_v1, &v2_at) {
        (Some(at), _) => format!("cpuset controller on v1 at {at} (--cpuset-partition works here)"),
        (None, Some(at)) => {
            let controllers = root::read(
                ctx.root,
                &format!("{}/cgroup.controllers", at.trim_start_matches('/')),
            )
            .unwrap_or_default();
            if controllers.split_whitespace().any(|c| c == "cpuset") {
                format!(
                    "cpuset controller on v2 at {at} (--cpuset-partition makes a v2 partition here)"
                )
            } else {
                format!("no cpuset controller on v1, none enabled on v2 at {at}")
            }
        }
        (None, None) => "no cpuset controller".into(),
    };
    // The group that places the process on CPUs: the v1 cpuset (or cpu) line, else v2's.
    let group = root::read(ctx.root, "proc/self/cgroup")
        .ok()
        .and_then(|t| {
            let of = |controller: &str| {
                t.lines().find_map(|l| {
                    let mut f = l.splitn(3, ':');
                    let (_, controllers, path) = (f.next()?, f.next()?, f.next()?);
                    controllers
                        .split(',')
                        .any(|c| c == controller)
                        .then(|| path.to_string())
                })
            };
            of("cpuset").or_else(|| of("cpu")).or_else(|| {
                t.lines()
                    .find_map(|l| l.strip_prefix("0::"))
                    .map(str::to_string)
            })
        })
        .unwrap_or_else(|| "unknown".into());
    CGROUP.ok(format!("{version}; {cpuset}; this process in {group}"))
}

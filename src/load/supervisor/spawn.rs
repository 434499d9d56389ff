//! Starting a load: its worker process (`/proc/self/exe __load-worker SPEC`) in a process group
//! and cgroup of its own, with the report pipe on fd 3, the marker in its environment, a
//! parent-death signal and its output in `loads/<k>-<name>.log`.

use super::link::Running;
use super::setup::Setup;
use crate::cpulist::format_cpu_list;
use crate::error::Failure;
use crate::format::LOAD_LOG_DIR as LOG_DIR;
use crate::load::contain::{self, Containment};
use crate::load::protocol::{MARKER_ENV, REPORT_FD};
use crate::load::worker_kit::die_with_parent;
use crate::sys::file::{self, pipe};
use crate::sys::process;
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

/// Starts the worker of load `index` of `setup`, in a cgroup of `containment`; it reports on
/// the returned [`Running`] once set up. With it, what to warn of: an `exec` load whose
/// `cpus=` could not be made a bound (no cpuset here).
pub(super) fn spawn(
    setup: &Setup,
    containment: &Containment,
    index: usize,
) -> Result<(Running, Option<String>), Failure> {
    let load = &setup.loads[index];
    let text = load.spec.text.clone();
    let cpus = load
        .spec
        .common
        .cpus
        .resolve(
            &setup.online,
            &setup.measured,
            setup.housekeeping.as_deref(),
        )
        .map_err(|e| Failure::usage(format!("load '{text}': {e}")))?;
    let record_index = setup.record_index_base + index;
    let (read_fd, write_fd) = pipe()
        .map_err(|e| Failure::system(format!("cannot create a pipe for load '{text}': {e}")))?;
    // SAFETY: fresh descriptors from pipe2, owned here.
    let reader = unsafe { File::from_raw_fd(read_fd) };
    let writer = unsafe { File::from_raw_fd(write_fd) };
    let mut cmd = Command::new("/proc/self/exe");
    cmd.arg("__load-worker")
        .arg(&text)
        .arg("--cpus")
        .arg(format_cpu_list(&cpus))
        .arg("--report-cpus")
        .arg(format_cpu_list(&report_cpus(setup)));
    if setup.once {
        cmd.arg("--once");
    }
    cmd.env(
        MARKER_ENV,
        contain::marker(std::process::id(), record_index),
    )
    .stdin(Stdio::null())
    .process_group(0);
    // An `exec` load runs programs that may change their own affinity: its CPUs, unless they
    // are all, are bounded by a cpuset (contain/cpuset.rs). The built-in generators keep the
    // CPUs they are given.
    let everywhere = setup.online.iter().all(|c| cpus.contains(c));
    let bound_to = (bounded(&load.spec) && !everywhere).then_some(&cpus[..]);
    let container = containment.for_load(record_index, bound_to);
    let realtime = load.spec.common.policy.realtime().is_some();
    let warning = unbounded(&text, realtime, &cpus, &container)?;
    // Kept open until the child has moved itself in (before exec, so that nothing it starts
    // is born outside); closed on exec.
    let cgroup_procs = container.procs_files();
    let procs_fds: Vec<(i32, bool)> = cgroup_procs
        .iter()
        .map(|p| (p.file.as_raw_fd(), p.bounds_cpus))
        .collect();
    let mut bounded = None;
    if let Some(dir) = &setup.result_dir {
        let name = format!("{record_index}-{}.log", load.spec.name());
        let path = dir.file(LOG_DIR).join(&name);
        wait_for_test_hook();
        // Through the result directory's descriptor, made new, never through a link: the
        // directory may have been renamed and replaced by another user meanwhile (issue 24 D01).
        let logs = dir
            .subdir(LOG_DIR)
            .map_err(|e| Failure::run(format!("cannot open {}: {e}", path.display())))?;
        let log = logs
            .create_file(&name)
            .map_err(|e| Failure::run(format!("cannot create {}: {e}", path.display())))?;
        // Bounded: through a pipe and a copying thread that rotates it.
        let log = match setup.log_cap {
            None => log,
            Some(cap) => {
                let (pipe, log) = logs
                    .duplicate_fd()
                    .and_then(|dir| super::log::capped(log, dir, &name, cap))
                    .map_err(|e| Failure::run(format!("cannot log {}: {e}", path.display())))?;
                bounded = Some(log);
                pipe
            }
        };
        let err = log
            .try_clone()
            .map_err(|e| Failure::run(format!("cannot open {}: {e}", path.display())))?;
        cmd.stdout(log).stderr(err);
    }
    let parent = process::id();
    let w = writer.as_raw_fd();
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if w == REPORT_FD {
                file::inherit_on_exec(w);
            } else {
                file::duplicate_to(w, REPORT_FD)?;
            }
            for &(fd, bounds_cpus) in &procs_fds {
                // Outside its cpuset, its CPUs would be an affinity it can undo.
                if !contain::join_own_cgroup(fd) && bounds_cpus {
                    return Err(std::io::Error::last_os_error());
                }
            }
            die_with_parent(parent);
            Ok(())
        });
    }
    let child = cmd.spawn().map_err(|e| {
        Failure::system(format!(
            "cannot start load '{text}' (in its cgroup and cpuset, when it has them): {e}"
        ))
    })?;
    drop(writer);
    drop(cgroup_procs);
    // Our own descriptor; a failure leaves it blocking, as before.
    let _ = file::set_nonblocking(read_fd);
    let running = Running::new(
        index,
        child.id() as process::Pid,
        reader,
        container,
        bounded,
    );
    Ok((running, warning))
}

/// Whether load `spec`'s CPUs are bounded by a cpuset: it runs the user's programs (`exec`),
/// which may change their own affinity.
pub(super) fn bounded(spec: &crate::load::generator::GeneratorSpec) -> bool {
    spec.name() == "exec"
}

/// What an `exec` load's CPUs (some, not all) being no bound means: nothing when its cpuset
/// was made; a refusal (exit 3) for a `realtime` one where cpusets can be made here, as the
/// starvation rule (plan/drain) then counted it on its CPUs alone; else a warning (the rule
/// counted a real-time one on every CPU).
fn unbounded(
    text: &str,
    realtime: bool,
    cpus: &[usize],
    container: &contain::LoadContainer,
) -> Result<Option<String>, Failure> {
    let Some(Err(why)) = container.cpus_bound() else {
        return Ok(None);
    };
    let list = format_cpu_list(cpus);
    if realtime && contain::cpuset::enforceable().is_ok() {
        return Err(Failure::system(format!(
            "load '{text}': cannot confine it to CPUs {list} with a cpuset ({why}); a real-time exec load is started only in its cpuset, as jitterlab's own threads were placed counting it on those CPUs alone and its programs may move themselves anywhere else; give it cpus=all (its CPUs then need no bound), or run where the cpuset can be made"
        )));
    }
    Ok(Some(format!(
        "load '{text}': its cpus={list} cannot be enforced here ({why}): its programs start on CPUs {list} but may move themselves to any CPU (changing one's own affinity needs no privilege)"
    )))
}

/// Where the workers' reporting threads run: the housekeeping CPUs, else the CPUs not
/// measured, or all.
fn report_cpus(setup: &Setup) -> Vec<usize> {
    if let Some(h) = &setup.housekeeping {
        return h.clone();
    }
    let rest: Vec<usize> = setup
        .online
        .iter()
        .copied()
        .filter(|c| !setup.measured.contains(c))
        .collect();
    if rest.is_empty() {
        setup.online.clone()
    } else {
        rest
    }
}

/// The environment variable of [`wait_for_test_hook`].
#[cfg(debug_assertions)]
pub(crate) const TEST_HOOK_ENV: &str = "JITTERLAB_TEST_WAIT_BEFORE_LOAD_LOG";

/// Test builds only: with `JITTERLAB_TEST_WAIT_BEFORE_LOAD_LOG=FILE`, waits (at most 30 s) until
/// FILE exists before making a load's log, so that tests/measuring/hostile_files.rs can replace the
/// result directory in that window as another user would, every time instead of by chance.
/// Release builds have no such variable.
fn wait_for_test_hook() {
    #[cfg(debug_assertions)]
    if let Some(go) = std::env::var_os(TEST_HOOK_ENV) {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !std::path::Path::new(&go).exists() && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}

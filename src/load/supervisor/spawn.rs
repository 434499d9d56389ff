//! Starting a load: its worker process (`/proc/self/exe __load-worker SPEC`) in a process group
//! and cgroup of its own, with the report pipe on fd 3, the marker in its environment, a
//! parent-death signal and its output in `loads/<k>-<name>.log`; then waiting until it is ready.

use super::link::Running;
use super::timeline::State;
use super::{LOG_DIR, READY_TIMEOUT};
use crate::cpulist::format_cpu_list;
use crate::error::{ExitCode, Failure};
use crate::load::contain;
use crate::load::kit::die_with_parent;
use crate::load::protocol::{MARKER_ENV, REPORT_FD};
use crate::measure::clock::monotonic_ns;
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

impl State {
    /// Spawns the loads and waits until each is ready; on any failure, stops those started.
    pub(super) fn start_loads(&mut self, indices: &[usize]) -> Result<(), Failure> {
        let mut started = Vec::new();
        for &i in indices {
            match self.spawn(i) {
                Ok(r) => {
                    started.push(i);
                    self.running.push(r);
                }
                Err(f) => {
                    self.stop_loads(&started);
                    return Err(f);
                }
            }
        }
        let deadline = std::time::Instant::now() + READY_TIMEOUT;
        loop {
            let mut waiting = false;
            let mut error = None;
            for r in self
                .running
                .iter_mut()
                .filter(|r| started.contains(&r.index))
            {
                r.drain();
                if let Some((message, code)) = &r.failed {
                    error = Some(Failure {
                        code: if *code == 3 {
                            ExitCode::System
                        } else {
                            ExitCode::Run
                        },
                        message: message.clone(),
                    });
                } else if !r.ready {
                    if r.try_reap(false) {
                        error = Some(Failure::run(format!(
                            "load '{}' ended during setup ({}); see its log",
                            self.setup.loads[r.index].spec.text,
                            r.exit_text()
                        )));
                    }
                    waiting = true;
                }
            }
            if let Some(e) = error {
                self.stop_loads(&started);
                return Err(e);
            }
            if !waiting {
                return Ok(());
            }
            if std::time::Instant::now() > deadline {
                self.stop_loads(&started);
                return Err(Failure::run(format!(
                    "a load did not get ready within {} s",
                    READY_TIMEOUT.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn spawn(&mut self, index: usize) -> Result<Running, Failure> {
        let load = &self.setup.loads[index];
        let text = load.spec.text.clone();
        let cpus = load
            .spec
            .common
            .cpus
            .resolve(&self.setup.online, &self.setup.measured)
            .map_err(|e| Failure::usage(format!("load '{text}': {e}")))?;
        let record_index = self.setup.record_index_base + index;
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
            .arg(format_cpu_list(&self.report_cpus()));
        if self.setup.once {
            cmd.arg("--once");
        }
        cmd.env(
            MARKER_ENV,
            contain::marker(std::process::id(), record_index),
        )
        .stdin(Stdio::null())
        .process_group(0);
        let container = self
            .containment
            .as_ref()
            .expect("the containment is made before any load")
            .for_load(record_index);
        // Kept open until the child has moved itself in (before exec, so that nothing it starts
        // is born outside); closed on exec.
        let cgroup_procs = container.procs_file();
        let procs_fd = cgroup_procs.as_ref().map(|f| f.as_raw_fd());
        if let Some(dir) = &self.setup.result_dir {
            let logs = dir.join(LOG_DIR);
            let path = logs.join(format!("{record_index}-{}.log", load.spec.name()));
            let log = std::fs::create_dir_all(&logs)
                .and_then(|_| File::create(&path))
                .map_err(|e| Failure::run(format!("cannot create {}: {e}", path.display())))?;
            let err = log
                .try_clone()
                .map_err(|e| Failure::run(format!("cannot open {}: {e}", path.display())))?;
            cmd.stdout(log).stderr(err);
        }
        // SAFETY: getpid is a plain syscall.
        let parent = unsafe { libc::getpid() };
        let w = writer.as_raw_fd();
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                if w == REPORT_FD {
                    libc::fcntl(w, libc::F_SETFD, 0);
                } else if libc::dup2(w, REPORT_FD) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if let Some(fd) = procs_fd {
                    contain::join_own_cgroup(fd);
                }
                die_with_parent(parent);
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .map_err(|e| Failure::system(format!("cannot start load '{text}': {e}")))?;
        drop(writer);
        drop(cgroup_procs);
        // SAFETY: our own descriptor.
        unsafe {
            let flags = libc::fcntl(read_fd, libc::F_GETFL);
            libc::fcntl(read_fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
        Ok(Running {
            index,
            pid: child.id() as libc::pid_t,
            reader,
            pending: Vec::new(),
            values: Vec::new(),
            elapsed_ns: 0,
            failed: None,
            ready: false,
            status: None,
            cpu_time_ns: 0,
            started_ns: monotonic_ns(),
            ended_ns: 0,
            stopping: false,
            container,
            end: None,
        })
    }

    /// Where the workers' reporting threads run: the CPUs not measured, or all.
    fn report_cpus(&self) -> Vec<usize> {
        let rest: Vec<usize> = self
            .setup
            .online
            .iter()
            .copied()
            .filter(|c| !self.setup.measured.contains(c))
            .collect();
        if rest.is_empty() {
            self.setup.online.clone()
        } else {
            rest
        }
    }
}

fn pipe() -> std::io::Result<(RawFd, RawFd)> {
    let mut fds = [0; 2];
    // SAFETY: valid array of two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((fds[0], fds[1]))
}

//! What the monitor tests share: a running `jitterlab monitor` that is stopped on every path,
//! plain HTTP GETs, and free loopback ports.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A loopback port nobody listens on now (the OS's choice; released for the caller to bind).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// GET `path` from 127.0.0.1:`port` over HTTP/1.0 (so no chunked answer): (status, body).
pub fn get(port: u16, path: &str) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
    let mut raw = String::new();
    s.read_to_string(&mut raw)?;
    let status = raw
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = raw
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    Ok((status, body))
}

/// The value of the one sample `name{labels}` in an exposition (labels exactly as rendered).
pub fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// A `jitterlab monitor` child process, killed (SIGKILL) and reaped if the test ends without
/// stopping it.
pub struct Monitor {
    pub child: Option<Child>,
    pub port: u16,
}

impl Monitor {
    /// Starts `jitterlab monitor ARGS --listen 127.0.0.1:<free port> --out OUT -q`.
    pub fn start(bin: &str, out: &Path, args: &[&str]) -> Monitor {
        let port = free_port();
        let child = Command::new(bin)
            .arg("monitor")
            .args(args)
            .args(["--listen", &format!("127.0.0.1:{port}"), "-q", "--out"])
            .arg(out)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("jitterlab monitor starts");
        Monitor {
            child: Some(child),
            port,
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().expect("running").id() as i32
    }

    /// Waits until /metrics answers with samples of every CPU in `cpus`, at most `within`.
    pub fn wait_for_samples(&mut self, cpus: &[usize], within: Duration) -> Result<String, String> {
        let t0 = Instant::now();
        loop {
            if let Ok((200, body)) = get(self.port, "/metrics")
                && cpus.iter().all(|c| {
                    sample(&body, &format!("jitterlab_samples_total{{cpu=\"{c}\"}}"))
                        .is_some_and(|n| n > 0.0)
                })
            {
                return Ok(body);
            }
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                let out = self.child.take().unwrap().wait_with_output().unwrap();
                return Err(format!(
                    "the monitor ended ({status}) before serving samples: {}",
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
            if t0.elapsed() > within {
                return Err(format!("no samples at /metrics within {within:?}"));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Sends SIGTERM and waits for the exit: (code, stdout + stderr).
    pub fn terminate(&mut self) -> (Option<i32>, String) {
        let child = self.child.take().expect("running");
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let out = child.wait_with_output().unwrap();
        (
            out.status.code(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    }

    /// Sends SIGKILL and reaps the process.
    pub fn kill_hard(&mut self) {
        let mut child = self.child.take().expect("running");
        unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
        let _ = child.wait();
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// VmRSS of a process, KiB.
pub fn rss_kib(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/PID/status")
}

/// Whether a tracing instance can be made here (tracefs at /sys/kernel/tracing, root). Skips
/// with a reason, unless JITTERLAB_REQUIRE_RT=1, where it fails.
pub fn tracefs_writable(test: &str) -> bool {
    let probe = format!(
        "/sys/kernel/tracing/instances/jltest-monitor-{}",
        std::process::id()
    );
    let ok = std::fs::create_dir(&probe).is_ok();
    let _ = std::fs::remove_dir(&probe);
    if !ok {
        assert!(
            std::env::var("JITTERLAB_REQUIRE_RT").as_deref() != Ok("1"),
            "{test}: cannot create a tracing instance and JITTERLAB_REQUIRE_RT=1 demands it"
        );
        eprintln!("SKIPPED {test}: no writable tracefs at /sys/kernel/tracing (run as root)");
    }
    ok
}

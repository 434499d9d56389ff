//! `proc`: reads /proc and /sys files in a loop, like `top` or `ps` do (the OCERA "/proc read"
//! load): each round reads a fixed set of system-wide files and the `stat` of every process.

use super::generator::{PER_MIB, Rates};
use super::spec::Params;
use super::worker::{Ctx, run_threads};
use crate::results::run_record::Throughput;
use std::io::Read;

pub const PARAMETERS: &[&str] = &[];
pub const COUNTERS: &[&str] = &["files", "bytes"];
const FILES: usize = 0;
const BYTES: usize = 1;

/// Read every round, besides /proc/<pid>/stat of each process.
const SYSTEM_FILES: &[&str] = &[
    "/proc/stat",
    "/proc/interrupts",
    "/proc/meminfo",
    "/proc/loadavg",
    "/proc/softirqs",
    "/proc/vmstat",
    "/sys/devices/system/cpu/online",
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcSpec;

impl ProcSpec {
    pub fn parse(_p: &mut Params) -> Result<Self, String> {
        Ok(ProcSpec)
    }

    pub fn run(&self, ctx: &Ctx) -> Result<(), String> {
        run_threads(ctx.workers, "proc", |_| {
            let mut buf = Vec::with_capacity(64 * 1024);
            let mut read = |path: &std::path::Path| {
                buf.clear();
                // Processes come and go between listing and reading: a failed read is skipped.
                if let Ok(mut f) = std::fs::File::open(path)
                    && let Ok(n) = f.read_to_end(&mut buf)
                {
                    ctx.add(FILES, 1);
                    ctx.add(BYTES, n as u64);
                }
            };
            while !ctx.stopped() {
                for f in SYSTEM_FILES {
                    read(std::path::Path::new(f));
                }
                let Ok(dir) = std::fs::read_dir("/proc") else {
                    return Err("cannot list /proc".into());
                };
                for entry in dir.flatten() {
                    if ctx.stopped() {
                        break;
                    }
                    let name = entry.file_name();
                    if name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
                        read(&entry.path().join("stat"));
                    }
                }
            }
            Ok(())
        })
    }
}

pub fn throughput(v: &dyn Fn(usize) -> u64, r: &Rates) -> Vec<Throughput> {
    vec![
        r.rate("files", v(FILES), 1.0, "files/s"),
        r.rate("read", v(BYTES), PER_MIB, "MiB/s"),
    ]
}

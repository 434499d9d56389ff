//! `proc`: reads /proc and /sys files in a loop, like `top` or `ps` do (the OCERA "/proc read"
//! load): each round reads a fixed set of system-wide files and the `stat` of every process.

use crate::format::run_record::Throughput;
use crate::load::generator::{Generator, GeneratorInfo, Syntax};
use crate::load::worker_kit::{Counts, Ctx, PER_MIB, run_threads};
use std::io::Read;

pub(crate) static INFO: GeneratorInfo = GeneratorInfo {
    name: "proc",
    about: "reads /proc and /sys files in a loop, like top or ps",
    syntax: Syntax::Parameters,
    parameters: &[],
    counters: &["files", "bytes"],
    loop_unit: None,
    parse: |_| Ok(Box::new(ProcLoad)),
};
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

#[derive(Debug)]
struct ProcLoad;

impl Generator for ProcLoad {
    fn info(&self) -> &'static GeneratorInfo {
        &INFO
    }

    fn run(&self, ctx: &Ctx) -> Result<(), String> {
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

    fn throughput(&self, c: &Counts) -> Vec<Throughput> {
        vec![
            c.rate("files", c.get(FILES), 1.0, "files/s"),
            c.rate("read", c.get(BYTES), PER_MIB, "MiB/s"),
        ]
    }
}

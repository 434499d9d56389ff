//! `io`: workers that write a file of `size` in blocks of `bs` under `dir`, fsync it, drop it
//! from the page cache and read it back, over and over (FirmTimers `generate_load -f/-z`).
//!
//! Each worker's file is anonymous: opened with O_TMPFILE (or created and unlinked at once
//! where the file system lacks O_TMPFILE), so it has no name and the kernel frees it when the
//! worker exits, however it exits; nothing is left in `dir`, not even after a SIGKILL.

use crate::format::run_record::Throughput;
use crate::load::generator::{Generator, GeneratorInfo, LoopUnit, Parameter, Syntax};
use crate::load::spec::Params;
use crate::load::worker_kit::{Counts, Ctx, PER_MIB, run_threads};
use crate::sys::fs;
use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

pub(crate) static INFO: GeneratorInfo = GeneratorInfo {
    name: "io",
    about: "writes, fsyncs, drops from the page cache and reads back a file per worker",
    syntax: Syntax::Parameters,
    parameters: &[
        Parameter {
            name: "size",
            default: "64M",
            help: "bytes of each worker's file (4 KiB - 16 TiB)",
        },
        Parameter {
            name: "bs",
            default: "64K",
            help: "bytes per write and read (512 B - 64 MiB, at most size)",
        },
        Parameter {
            name: "dir",
            default: DEFAULT_DIR,
            help: "the writable directory the files are made in, on the disk to load",
        },
    ],
    counters: &["written", "read", "fsyncs"],
    loop_unit: Some(LoopUnit {
        counter: FSYNCS,
        what: "one write of size to the worker's file, its fsync, and the read back of size",
    }),
    parse: |p| Ok(Box::new(IoLoad::parse(p)?)),
};
const WRITTEN: usize = 0;
const READ: usize = 1;
const FSYNCS: usize = 2;
pub(crate) const DEFAULT_DIR: &str = "/var/tmp";

#[derive(Debug)]
struct IoLoad {
    pub size: u64,
    pub(crate) bs: u64,
    pub dir: PathBuf,
}

impl IoLoad {
    fn parse(p: &mut Params) -> Result<Self, String> {
        let size = p.bytes("size", 4096..=(1 << 44), 64 << 20)?;
        let bs = p.bytes("bs", 512..=(64 << 20), 64 << 10)?;
        let dir = PathBuf::from(p.text("dir", Some(DEFAULT_DIR)).unwrap_or_default());
        if bs > size {
            return Err(format!(
                "load '{}': bs ({bs} bytes) is larger than size ({size} bytes); bs must not exceed size",
                p.spec_text()
            ));
        }
        Ok(IoLoad { size, bs, dir })
    }
}

impl Generator for IoLoad {
    fn info(&self) -> &'static GeneratorInfo {
        &INFO
    }

    /// `dir` must be a writable directory with room for every worker's file.
    fn check_system(&self, text: &str, workers: u64) -> Result<(), String> {
        let d = self.dir.display();
        if !self.dir.is_dir() {
            return Err(format!(
                "load '{text}': dir={d} is not a directory; give dir= an existing directory on the disk to load"
            ));
        }
        if let Err(e) = fs::can_write_dir(&self.dir) {
            return Err(format!(
                "load '{text}': dir={d} is not writable ({e}); give dir= a writable directory"
            ));
        }
        if let Ok(free) = fs::free_bytes(&self.dir) {
            let need = self.size.saturating_mul(workers);
            if need > free {
                return Err(format!(
                    "load '{text}': {workers} file(s) of {} bytes need {need} bytes and {d} has {free} bytes free; use a smaller size= or another dir=",
                    self.size
                ));
            }
        }
        Ok(())
    }

    fn run(&self, ctx: &Ctx) -> Result<(), String> {
        run_threads(ctx.workers, "io", |i| {
            let file = anonymous_file(&self.dir, i).map_err(|e| {
                format!(
                    "io worker {i}: cannot create a file in {}: {e}",
                    self.dir.display()
                )
            })?;
            let block = vec![0xA5u8 ^ i as u8; self.bs as usize];
            let mut back = vec![0u8; self.bs as usize];
            let mut done = 0;
            while ctx.keep_looping(done) {
                let mut offset = 0;
                while offset < self.size && !ctx.stopped() {
                    let n = (self.size - offset).min(self.bs) as usize;
                    file.write_all_at(&block[..n], offset)
                        .map_err(|e| format!("io worker {i}: write failed: {e}"))?;
                    ctx.add(WRITTEN, n as u64);
                    offset += n as u64;
                }
                file.sync_all()
                    .map_err(|e| format!("io worker {i}: fsync failed: {e}"))?;
                ctx.add(FSYNCS, 1);
                // Written back by the fsync, so the pages are clean and can be dropped: the
                // reads then come from the disk, not from the page cache.
                crate::sys::file::drop_cache(file.as_fd());
                let mut offset = 0;
                while offset < self.size && !ctx.stopped() {
                    let n = (self.size - offset).min(self.bs) as usize;
                    file.read_exact_at(&mut back[..n], offset)
                        .map_err(|e| format!("io worker {i}: read failed: {e}"))?;
                    ctx.add(READ, n as u64);
                    offset += n as u64;
                }
                done += 1;
            }
            Ok(())
        })
    }

    fn throughput(&self, c: &Counts) -> Vec<Throughput> {
        vec![
            c.rate("write", c.get(WRITTEN), PER_MIB, "MiB/s"),
            c.rate("read", c.get(READ), PER_MIB, "MiB/s"),
            c.rate("fsync", c.get(FSYNCS), 1.0, "fsyncs/s"),
            c.total("written", c.get(WRITTEN), "bytes"),
            c.total("read back", c.get(READ), "bytes"),
        ]
    }
}

/// A read-write file in `dir` with no name.
fn anonymous_file(dir: &Path, index: usize) -> io::Result<File> {
    if let Ok(f) = fs::anonymous_file_in(dir) {
        return Ok(f);
    }
    // No O_TMPFILE on this file system: a named file, unlinked as soon as it is open.
    let path = dir.join(format!(".jitterlab-io-{}-{index}", std::process::id()));
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)?;
    std::fs::remove_file(&path)?;
    Ok(f)
}

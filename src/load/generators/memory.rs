//! `memory`: workers that map a buffer of `size`, write to every page of it (one page fault per
//! page), and unmap it, over and over (FirmTimers `generate_load -m`). The repeated
//! mmap/munmap keeps the page-fault and page-zeroing path of the kernel busy, which a buffer
//! touched once would not.

use crate::format::run_record::Throughput;
use crate::load::generator::{Generator, GeneratorInfo, LoopUnit, Parameter, Syntax};
use crate::load::spec::Params;
use crate::load::worker_kit::{Counts, Ctx, PER_MIB, mib, run_threads};
use crate::sys::mem;

pub(crate) static INFO: GeneratorInfo = GeneratorInfo {
    name: "memory",
    about: "maps a buffer, writes every page of it and unmaps it, over and over",
    syntax: Syntax::Parameters,
    parameters: &[Parameter {
        name: "size",
        default: "64M",
        help: "bytes mapped by each worker (4 KiB - 16 TiB)",
    }],
    counters: &["bytes", "pages", "maps"],
    loop_unit: Some(LoopUnit {
        counter: MAPS,
        what: "one mmap of size, a write to each of its pages, and its munmap",
    }),
    parse: |p| Ok(Box::new(MemoryLoad::parse(p)?)),
};
const BYTES: usize = 0;
const PAGES: usize = 1;
const MAPS: usize = 2;
const DEFAULT_SIZE: u64 = 64 << 20;

#[derive(Debug)]
struct MemoryLoad {
    /// Bytes mapped by each worker.
    size: u64,
}

impl MemoryLoad {
    fn parse(p: &mut Params) -> Result<Self, String> {
        Ok(MemoryLoad {
            size: p.bytes("size", 4096..=(1 << 44), DEFAULT_SIZE)?,
        })
    }
}

impl Generator for MemoryLoad {
    fn info(&self) -> &'static GeneratorInfo {
        &INFO
    }

    fn memory_bytes_per_worker(&self) -> u64 {
        self.size
    }

    fn run(&self, ctx: &Ctx) -> Result<(), String> {
        let size = self.size as usize;
        let page = mem::page_size();
        run_threads(ctx.workers, "memory", |i| {
            let mut done = 0;
            while ctx.keep_looping(done) {
                let base = mem::map_anonymous(size, mem::Sharing::Private).map_err(|e| {
                    format!(
                        "memory worker {i}: mmap of {} failed: {e}",
                        mib(self.size as u128)
                    )
                })?;
                // SAFETY: a private anonymous mapping of `size` bytes, written only within its
                // bounds and unmapped before the next.
                unsafe {
                    let mut offset = 0;
                    let mut pages = 0;
                    while offset < size {
                        std::ptr::write_volatile(base.add(offset), offset as u8 | 1);
                        offset += page;
                        pages += 1;
                        if pages % 256 == 0 {
                            ctx.add(PAGES, 256);
                            ctx.add(BYTES, 256 * page as u64);
                            if ctx.stopped() {
                                break;
                            }
                        }
                    }
                    ctx.add(PAGES, pages % 256);
                    ctx.add(BYTES, (pages % 256) * page as u64);
                    mem::unmap(base, size);
                }
                ctx.add(MAPS, 1);
                done += 1;
            }
            Ok(())
        })
    }

    fn throughput(&self, c: &Counts) -> Vec<Throughput> {
        vec![
            c.rate("touched", c.get(BYTES), PER_MIB, "MiB/s"),
            c.rate("page faults", c.get(PAGES), 1.0, "faults/s"),
            c.rate("maps", c.get(MAPS), 1.0, "mmap+munmap/s"),
        ]
    }
}

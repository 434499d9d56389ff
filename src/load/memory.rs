//! `memory`: workers that map a buffer of `size`, write to every page of it (one page fault per
//! page), and unmap it, over and over (FirmTimers `generate_load -m`). The repeated
//! mmap/munmap keeps the page-fault and page-zeroing path of the kernel busy, which a buffer
//! touched once would not.

use super::generator::{PER_MIB, Rates};
use super::spec::Params;
use super::worker::{Ctx, run_threads};
use crate::results::run_record::Throughput;

pub const PARAMETERS: &[&str] = &["size"];
pub const COUNTERS: &[&str] = &["bytes", "pages", "maps"];
const BYTES: usize = 0;
const PAGES: usize = 1;
const MAPS: usize = 2;
const DEFAULT_SIZE: u64 = 64 << 20;
/// The share of MemAvailable the load may take, all workers together.
pub const SAFE_SHARE: f64 = 0.5;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemorySpec {
    /// Bytes mapped by each worker.
    pub size: u64,
}

impl MemorySpec {
    pub fn parse(p: &mut Params) -> Result<Self, String> {
        Ok(MemorySpec {
            size: p.bytes("size", 4096..=(1 << 44), DEFAULT_SIZE)?,
        })
    }

    /// Refuses more than [`SAFE_SHARE`] of MemAvailable: the kernel's OOM killer would pick a
    /// process, possibly not ours.
    pub fn check_system(&self, text: &str, workers: u64) -> Result<(), String> {
        let available = mem_available_bytes()
            .ok_or("cannot read MemAvailable from /proc/meminfo to check the memory load's size")?;
        let total = self.size.saturating_mul(workers);
        let limit = (available as f64 * SAFE_SHARE) as u64;
        if total > limit {
            return Err(format!(
                "load '{text}': {} ({} per worker x {workers}) is more than {:.0}% of MemAvailable ({}), i.e. above {}; a smaller size= or fewer workers= keeps the OOM killer away",
                mib(total),
                mib(self.size),
                SAFE_SHARE * 100.0,
                mib(available),
                mib(limit)
            ));
        }
        Ok(())
    }

    pub fn run(&self, ctx: &Ctx) -> Result<(), String> {
        let size = self.size as usize;
        // SAFETY: sysconf has no failure mode for _SC_PAGESIZE on Linux.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        run_threads(ctx.workers, "memory", |i| {
            while !ctx.stopped() {
                // SAFETY: a private anonymous mapping of `size` bytes, written only within its
                // bounds and unmapped before the next.
                unsafe {
                    let p = libc::mmap(
                        std::ptr::null_mut(),
                        size,
                        libc::PROT_READ | libc::PROT_WRITE,
                        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                        -1,
                        0,
                    );
                    if p == libc::MAP_FAILED {
                        return Err(format!(
                            "memory worker {i}: mmap of {} failed: {}",
                            mib(self.size),
                            std::io::Error::last_os_error()
                        ));
                    }
                    let base = p as *mut u8;
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
                    libc::munmap(p, size);
                }
                ctx.add(MAPS, 1);
            }
            Ok(())
        })
    }
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

/// MemAvailable from /proc/meminfo, in bytes.
pub fn mem_available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

pub fn throughput(v: &dyn Fn(usize) -> u64, r: &Rates) -> Vec<Throughput> {
    vec![
        r.rate("touched", v(BYTES), PER_MIB, "MiB/s"),
        r.rate("page faults", v(PAGES), 1.0, "faults/s"),
        r.rate("maps", v(MAPS), 1.0, "mmap+munmap/s"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_more_than_half_of_available_memory_naming_both() {
        let available = mem_available_bytes().unwrap();
        let m = MemorySpec { size: available };
        let e = m.check_system("memory:size=huge", 1).unwrap_err();
        assert!(e.contains("MemAvailable") && e.contains("50%"), "{e}");
        assert!(e.contains(&mib(available)), "{e}");
        MemorySpec { size: 1 << 20 }
            .check_system("memory", 1)
            .unwrap();
    }
}
